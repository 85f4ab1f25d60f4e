"""The persistent compile cache (xg2_plugin/disk_cache.py): a restarted compiler reuses what an
earlier one wrote, keys separate every compile option, a damaged file is recompiled, the
directory stays within its byte bound, and several processes compiling the same schemas into
one directory at once all get bit-identical grammars."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import textwrap

import numpy as np

import xg2_plugin as xg

from xg2_test_support import child_env, hf_tokenizer_info

SCHEMAS = [
    {"type": "object", "properties": {"name": {"type": "string", "maxLength": 20}, "age": {"type": "integer"}},
     "required": ["name"]},
    {"type": "array", "items": {"enum": ["red", "green", "blue"]}, "minItems": 1, "maxItems": 4},
    {"type": "object", "properties": {"id": {"type": "string", "format": "uuid"},
                                      "tags": {"type": "array", "items": {"type": "string"}}}},
    {"anyOf": [{"type": "number", "minimum": 0}, {"type": "boolean"}, {"type": "null"}]},
]
# Each schema's walk: its text, one byte-level token at a time (single-byte tokens exist in
# every byte-level vocabulary), so the masks at every position are compared.
TEXTS = ['{"name": "Ann", "age": 7}', '["red", "blue"]',
         '{"id": "123e4567-e89b-12d3-a456-426614174000", "tags": ["x"]}', "12.5"]


def mask_digest(grammar: xg.CompiledGrammar, text: str) -> str:
    """SHA-256 of the masks along `text` (token by token, each token one byte)."""
    info = grammar.tokenizer_info
    by_bytes = {token: i for i, token in enumerate(info.decoded_vocab) if len(token) == 1}
    matcher = xg.GrammarMatcher(grammar)
    bitmask = np.zeros(xg.get_bitmask_shape(1, info.vocab_size), dtype=np.int32)
    digest = hashlib.sha256()
    for byte in text.encode():
        matcher.fill_next_token_bitmask(bitmask)
        digest.update(bitmask.tobytes())
        assert matcher.accept_token(by_bytes[bytes([byte])])
    matcher.fill_next_token_bitmask(bitmask)
    digest.update(bitmask.tobytes())
    return digest.hexdigest()


def grammar_files(directory) -> list:
    return sorted(p for p in directory.iterdir() if p.suffix == ".xg2")


def test_restarted_compiler_reads_back_what_an_earlier_one_wrote(tmp_path) -> None:
    info = hf_tokenizer_info("llama3.1")
    first = xg.GrammarCompiler(info, cache_dir=tmp_path)
    compiled = first.compile_json_schema(SCHEMAS[0])
    assert first.disk_cache.stats["misses"] == 1 and len(grammar_files(tmp_path)) == 1
    second = xg.GrammarCompiler(info, cache_dir=tmp_path)
    reused = second.compile_json_schema(SCHEMAS[0])
    assert second.disk_cache.stats["hits"] == 1 and second.disk_cache.stats["misses"] == 0
    assert reused.ebnf == compiled.ebnf
    assert mask_digest(reused, TEXTS[0]) == mask_digest(compiled, TEXTS[0])
    # Each option is part of the key: another whitespace or limit is another grammar.
    second.compile_json_schema(SCHEMAS[0], any_whitespace=False)
    xg.GrammarCompiler(info, cache_dir=tmp_path, limits=xg.CompileLimits(max_fsm_nodes=1 << 21)).compile_json_schema(
        SCHEMAS[0])
    assert len(grammar_files(tmp_path)) == 3


def test_environment_variable_turns_the_cache_on(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("XG2_CACHE_DIR", str(tmp_path / "env"))
    monkeypatch.setenv("XG2_CACHE_DIR_LIMIT_BYTES", "123456789")
    compiler = xg.GrammarCompiler(hf_tokenizer_info("llama3.1"))
    assert compiler.disk_cache.limit_bytes == 123456789
    compiler.compile_regex("[0-9]{2,3}")
    assert len(grammar_files(tmp_path / "env")) == 1
    monkeypatch.delenv("XG2_CACHE_DIR")
    assert xg.GrammarCompiler(hf_tokenizer_info("llama3.1")).disk_cache is None


def test_damaged_file_is_refused_and_compiled_again(tmp_path) -> None:
    info = hf_tokenizer_info("llama3.1")
    expected = mask_digest(xg.GrammarCompiler(info).compile_json_schema(SCHEMAS[1]), TEXTS[1])
    xg.GrammarCompiler(info, cache_dir=tmp_path).compile_json_schema(SCHEMAS[1])
    (path,) = grammar_files(tmp_path)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    compiler = xg.GrammarCompiler(info, cache_dir=tmp_path)
    grammar = compiler.compile_json_schema(SCHEMAS[1])
    assert compiler.disk_cache.stats["refused"] == 1 and compiler.disk_cache.stats["misses"] == 1
    assert mask_digest(grammar, TEXTS[1]) == expected
    assert path.read_bytes() != data[: len(data) // 2]  # rewritten whole


def test_directory_stays_within_its_bound_oldest_first(tmp_path) -> None:
    info = hf_tokenizer_info("llama3.1")
    sizes = []
    for k, pattern in enumerate(["a{1,5}", "b[0-9]+", "c(d|e)*", "f{3}"]):
        xg.GrammarCompiler(info, cache_dir=tmp_path, cache_dir_limit_bytes=-1).compile_regex(pattern)
        newest = max(grammar_files(tmp_path), key=lambda p: p.stat().st_mtime_ns)
        os.utime(newest, (1_000_000 + k, 1_000_000 + k))  # distinct ages, oldest first
        sizes.append(newest.stat().st_size)
    bound = sizes[2] + sizes[3] + 1
    compiler = xg.GrammarCompiler(info, cache_dir=tmp_path, cache_dir_limit_bytes=bound)
    compiler.disk_cache.evict()
    assert sum(p.stat().st_size for p in grammar_files(tmp_path)) <= bound
    assert sorted(p.stat().st_size for p in grammar_files(tmp_path)) == sorted(sizes[2:])
    assert compiler.disk_cache.stats["evictions"] == 2


CHILD = textwrap.dedent("""
    import json, sys
    import xg2_plugin as xg
    from test_disk_cache import SCHEMAS, TEXTS, mask_digest
    directory, tokenizer_file, rotation = sys.argv[1], sys.argv[2], int(sys.argv[3])
    info = xg.TokenizerInfo.deserialize_bytes(open(tokenizer_file, "rb").read())
    order = [(i + rotation) % len(SCHEMAS) for i in range(len(SCHEMAS))]
    digests = {}
    for round in range(2):  # the second round's compilers find every file written
        compiler = xg.GrammarCompiler(info, cache_dir=directory)
        for i in order:
            digests.setdefault(i, set()).add(mask_digest(compiler.compile_json_schema(SCHEMAS[i]), TEXTS[i]))
    print(json.dumps({i: sorted(d) for i, d in digests.items()}))
""")


def test_processes_compiling_into_one_directory_get_identical_grammars(tmp_path) -> None:
    info = hf_tokenizer_info("llama3.1")
    expected = {str(i): [mask_digest(xg.GrammarCompiler(info).compile_json_schema(s), TEXTS[i])]
                for i, s in enumerate(SCHEMAS)}
    tokenizer_file = tmp_path / "tokenizer.bin"
    tokenizer_file.write_bytes(info.serialize_bytes())
    cache = tmp_path / "cache"
    children = [subprocess.Popen([sys.executable, "-c", CHILD, str(cache), str(tokenizer_file), str(k)],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=child_env())
                for k in range(2)]
    for child in children:
        out, err = child.communicate(timeout=180)
        assert child.returncode == 0, err[-2000:]
        assert json.loads(out) == expected
    assert len(grammar_files(cache)) == len(SCHEMAS)
    assert not [p for p in cache.iterdir() if p.name.startswith(".tmp-")]
