"""Member names in every JSON spelling (compile_json_schema(any_key_spelling=True)): a
declared name written with escapes is the same name, an undeclared name may be any JSON
string, and no spelling of a declared name ever passes as undeclared (jsonschema on
json.loads of the text as the oracle). By default names take their canonical spelling only."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest

import xg2_plugin as xg
from xg2_corpus import make_validator, random_walk
from xg2_test_support import hf_tokenizer_info

TOKENIZER = "llama3.1"

SCHEMA = {
    "type": "object",
    "properties": {name: {"type": "integer"} for name in ["a", "a/b", "é", "\n", "😀", 'q"', "ab"]},
    "required": ["a"],
    "additionalProperties": {"type": "string"},
}


@pytest.fixture(scope="module")
def grammar() -> xg.CompiledGrammar:
    compiler = xg.GrammarCompiler(hf_tokenizer_info(TOKENIZER), cache_enabled=False)
    return compiler.compile_json_schema(SCHEMA, any_key_spelling=True)


def accepts(grammar: xg.CompiledGrammar, text: str) -> bool:
    matcher = xg.GrammarMatcher(grammar)
    return matcher.accept_string(text) and matcher.is_completed()


def spellings(name: str, rng: random.Random) -> str:
    """One random JSON spelling of `name`'s body: raw, short escape, \\u in either case."""
    short = {'"': '\\"', "\\": "\\\\", "/": "\\/", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}
    out = []
    for ch in name:
        cp = ord(ch)
        units = [cp] if cp < 0x10000 else [0xD800 + ((cp - 0x10000) >> 10), 0xDC00 + ((cp - 0x10000) & 0x3FF)]
        ways = ["".join(f"\\u{u:04x}" for u in units), "".join(f"\\u{u:04X}" for u in units)]
        if ch in short:
            ways.append(short[ch])
        if cp >= 0x20 and ch not in '"\\':
            ways.append(ch)
        out.append(rng.choice(ways))
    return "".join(out)


@pytest.mark.parametrize("text, valid", [
    ('{"\\u0061": 1}', True),
    ('{"\\u0061": "x"}', False),       # the declared "a", not an undeclared name
    ('{"a": 1, "\\u00e9": "x"}', False),
    ('{"a": 1, "\\u00E9": 2}', True),
    ('{"a": 1, "a\\/b": 2}', True),
    ('{"a": 1, "a\\/b": "x"}', False),
    ('{"a": 1, "\\ud83d\\ude00": 3}', True),
    ('{"a": 1, "\\uD83D\\uDE00": "x"}', False),
    ('{"a": 1, "\\u000a": "x"}', False),
    ('{"a": 1, "\\u00e8": "x"}', True),  # undeclared, escaped
    ('{"a": 1, "\\u00e8\\u0041": "x"}', True),
    ('{"a": 1, "\\ud83d\\ude01": "x"}', True),
    ('{"a": 1, "q\\u0022": 5}', True),
])
def test_escaped_names(grammar: xg.CompiledGrammar, text: str, valid: bool) -> None:
    assert make_validator(SCHEMA).is_valid(json.loads(text)) == valid
    assert accepts(grammar, text) == valid


def test_default_is_the_canonical_spelling() -> None:
    compiler = xg.GrammarCompiler(hf_tokenizer_info(TOKENIZER), cache_enabled=False)
    canonical = compiler.compile_json_schema(SCHEMA)
    assert accepts(canonical, '{"a": 1, "\\n": 2, "q\\"": 3, "b": "x", "\u00e8": "y"}')
    for text in ['{"\\u0061": 1}', '{"a": 1, "\\u00e8": "x"}', '{"a": 1, "a\\/b": 2}']:
        assert make_validator(SCHEMA).is_valid(json.loads(text))
        assert not accepts(canonical, text), text  # a sound subset: escaped spellings left out


def test_random_spellings_against_the_oracle(grammar: xg.CompiledGrammar) -> None:
    rng = random.Random(3)
    validator = make_validator(SCHEMA)
    names = list(SCHEMA["properties"]) + ["b", "aa", "é!", "😀x", "/"]
    for _ in range(300):
        chosen = {"a"} | {rng.choice(names) for _ in range(rng.randrange(4))}
        # Declared members in declaration order, then undeclared ones (the grammar's order).
        order = list(SCHEMA["properties"])
        keys = sorted(chosen, key=lambda k: (order.index(k) if k in order else len(order), k))
        members = [(k, "1" if k == "a" else rng.choice(['7', '"s"'])) for k in keys]
        text = "{" + ", ".join(f'"{spellings(k, rng)}": {v}' for k, v in members) + "}"
        assert accepts(grammar, text) == validator.is_valid(json.loads(text)), text


def test_random_walks_stay_valid(grammar: xg.CompiledGrammar) -> None:
    rng = random.Random(11)
    info = grammar.tokenizer_info
    bitmask = np.full(xg.get_bitmask_shape(1, info.vocab_size), -1, dtype=np.int32)
    validator = make_validator(SCHEMA)
    for _ in range(2):
        out = random_walk(grammar, rng, bitmask, 40)
        if out is not None:
            assert validator.is_valid(json.loads(out.decode("utf-8"))), out
