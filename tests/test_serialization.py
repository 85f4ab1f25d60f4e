"""Serialization of compiled grammars and tokenizer tables (xg2_plugin/serialization.py).

A grammar read back gives bit-identical masks to the one compiled, stepped token by token
through corpus instances and random walks (JSON Schemas of the corpus sample, a Harmony
structural tag that names special tokens and has every state classified at compile time); a
blob that is truncated, corrupt, of another engine version or made for another tokenizer
raises DeserializationError naming what mismatched, and never crashes.
"""

from __future__ import annotations

import json
import random
import warnings

import numpy as np
import pytest

import xg2_plugin as xg
from xg2_plugin import _native
from xg2_plugin.presets import get_model_structural_tag
from xg2_plugin.serialization import engine_version, tokenizer_fingerprint

from xg2_corpus import stratified_sample
from xg2_test_support import (data_dir, dumps, encode_continuation, hf_compiler, hf_tokenizer, hf_tokenizer_info,
                              ordered_like_schema, sampled_walk)

_CORPUS = data_dir() / "jsonschemabench"
SAMPLE = stratified_sample(_CORPUS, 1, seed=40) if _CORPUS.is_dir() else []
TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}}, "required": ["city"]}}}]
CALL_TEXT = '<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{"city": "Paris"}<|call|>'


def assert_same_masks(original: xg.CompiledGrammar, restored: xg.CompiledGrammar, ids: list[int]) -> int:
    """Steps a matcher of each grammar through `ids`, comparing masks before every token and
    after the last, and the accept verdicts; returns the masks compared."""
    vocab_size = original.tokenizer_info.vocab_size
    a, b = xg.GrammarMatcher(original), xg.GrammarMatcher(restored)
    mask_a = np.zeros(xg.get_bitmask_shape(1, vocab_size), dtype=np.int32)
    mask_b = np.zeros_like(mask_a)
    compared = 0
    for step, token in enumerate(ids + [None]):
        a.fill_next_token_bitmask(mask_a)
        b.fill_next_token_bitmask(mask_b)
        assert np.array_equal(mask_a, mask_b), f"masks differ at step {step}"
        compared += 1
        if token is None:
            break
        accepted = a.accept_token(token)
        assert b.accept_token(token) == accepted, f"accept verdicts differ at step {step}"
        if not accepted:
            break
    assert a.is_terminated() == b.is_terminated()
    return compared


@pytest.mark.parametrize("path", SAMPLE, ids=[p.name for p in SAMPLE])
def test_corpus_grammar_round_trip_gives_identical_masks(path) -> None:
    data = json.loads(path.read_text())
    compiler = hf_compiler("llama3.1")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            grammar = compiler.compile_json_schema(data["schema"], strict_mode=False)
    except (xg.SchemaError, xg.ResourceLimitError):
        pytest.skip("schema refused by the compiler")
    info = compiler.tokenizer_info
    restored = xg.CompiledGrammar.deserialize_bytes(grammar.serialize_bytes(), info)
    from_json = xg.CompiledGrammar.deserialize_json(grammar.serialize_json(), info)
    assert restored.ebnf == grammar.ebnf == from_json.ebnf
    valid = [t["data"] for t in data.get("tests", []) if t.get("valid")][:1]
    walks = [encode_continuation("llama3.1", dumps(ordered_like_schema(v, data["schema"]))) for v in valid]
    walks.append(sampled_walk(grammar, random.Random(0), 12))
    for ids in walks:
        assert_same_masks(grammar, restored, ids) >= 1
        assert_same_masks(grammar, from_json, ids) >= 1


def harmony_grammar(compiler: xg.GrammarCompiler) -> xg.CompiledGrammar:
    return compiler.compile_structural_tag(get_model_structural_tag("harmony", TOOLS, "auto", reasoning="auto"))


def test_structural_tag_round_trip_keeps_its_classifications_and_masks() -> None:
    info = hf_tokenizer_info("gpt-oss")
    grammar = harmony_grammar(hf_compiler("gpt-oss"))
    built = grammar._handle.cached_nodes
    assert built > 0  # a structural tag classifies every state at compile time
    # A compiler without background precompute: what the restored grammar holds was read back.
    quiet = xg.GrammarCompiler(info, precompute_nodes=0)
    restored = xg.serialization.grammar_from_bytes(grammar.serialize_bytes(), info, compiler=quiet)
    assert restored._handle.cached_nodes == built
    bare = xg.serialization.grammar_from_bytes(
        xg.serialization.grammar_to_bytes(grammar, with_classifications=False), info, compiler=quiet)
    assert bare._handle.cached_nodes == 0
    ids = hf_tokenizer("gpt-oss").encode(CALL_TEXT, add_special_tokens=False).ids
    for other in (restored, bare):
        assert assert_same_masks(grammar, other, ids) == len(ids) + 1
        assert assert_same_masks(grammar, other, sampled_walk(grammar, random.Random(1), 16)) >= 1


def test_tokenizer_info_round_trip() -> None:
    info = hf_tokenizer_info("llama3.1")
    for restored in (xg.TokenizerInfo.deserialize_json(info.serialize_json()),
                     xg.TokenizerInfo.deserialize_bytes(info.serialize_bytes())):
        assert restored.decoded_vocab == info.decoded_vocab
        assert (restored.vocab_size, restored.vocab_type, restored.add_prefix_space) == (
            info.vocab_size, info.vocab_type, info.add_prefix_space)
        assert restored.stop_token_ids == info.stop_token_ids
        assert restored.special_token_ids == info.special_token_ids
        assert tokenizer_fingerprint(restored) == tokenizer_fingerprint(info)
        # A grammar made with the original reads back with the restored table.
        grammar = hf_compiler("llama3.1").compile_regex("[a-c]{3}")
        assert xg.CompiledGrammar.deserialize_bytes(grammar.serialize_bytes(), restored).ebnf == grammar.ebnf


def small_info(**overrides) -> xg.TokenizerInfo:
    arguments = dict(vocab_size=8, stop_token_ids=[7], special_token_ids=[6])
    arguments.update(overrides)
    return xg.TokenizerInfo([b"a", b"b", b"ab", b"{", b"}", b" ", b"<s>", b"</s>"], **arguments)


@pytest.mark.parametrize("other", [
    dict(), dict(stop_token_ids=[6], special_token_ids=[7]), dict(vocab_size=16), dict(special_token_ids=[]),
], ids=["vocabulary", "stop ids", "vocab size", "special ids"])
def test_grammar_for_another_tokenizer_is_refused(other) -> None:
    grammar = xg.GrammarCompiler(small_info()).compile_grammar('root ::= "a" "b"*')
    target = small_info(**other) if other else xg.TokenizerInfo([b"a", b"b", b"ab", b"{", b"}", b"  ", b"<s>", b"</s>"],
                                                                vocab_size=8, stop_token_ids=[7], special_token_ids=[6])
    with pytest.raises(xg.DeserializationError, match="another tokenizer"):
        xg.CompiledGrammar.deserialize_bytes(grammar.serialize_bytes(), target)
    with pytest.raises(xg.DeserializationError, match="another tokenizer"):
        xg.CompiledGrammar.deserialize_json(grammar.serialize_json(), target)


def test_other_engine_or_format_version_is_refused() -> None:
    info = small_info()
    grammar = xg.GrammarCompiler(info).compile_grammar('root ::= "a"')
    blob = _native._serialize_compiled_grammar(grammar._handle, info._handle, "0.0.0-other", True)
    with pytest.raises(xg.DeserializationError, match="engine version '0.0.0-other'"):
        xg.CompiledGrammar.deserialize_bytes(blob, info)
    document = json.loads(grammar.serialize_json())
    for field, value, message in [("engine_version", "9.9", "engine version"), ("format_version", 99, "format version"),
                                  ("format", "xg2.tokenizer_info", "not a xg2.compiled_grammar"),
                                  ("data", "***", "not base64")]:
        with pytest.raises(xg.DeserializationError, match=message):
            xg.CompiledGrammar.deserialize_json(json.dumps(dict(document, **{field: value})), info)
    with pytest.raises(xg.DeserializationError, match="not valid JSON"):
        xg.CompiledGrammar.deserialize_json(grammar.serialize_json()[:-3], info)
    with pytest.raises(xg.DeserializationError, match="other kind"):
        xg.CompiledGrammar.deserialize_bytes(info.serialize_bytes(), info)
    with pytest.raises(TypeError):
        xg.CompiledGrammar.deserialize_bytes("text", info)


def corrupt_variants(blob: bytes) -> list[bytes]:
    """The blob cut at every 1/16th of its length, and with single bytes flipped across it."""
    cuts = [blob[: len(blob) * k // 16] for k in range(16)]
    rng = random.Random(7)
    flips = []
    for position in sorted({0, 5, len(blob) - 1, *rng.sample(range(len(blob)), 24)}):
        flipped = bytearray(blob)
        flipped[position] ^= 1 << rng.randrange(8)
        flips.append(bytes(flipped))
    return cuts + flips + [blob + b"\0"]


def token_grammar_blob() -> tuple[xg.TokenizerInfo, bytes]:
    info = small_info()
    grammar = xg.GrammarCompiler(info).compile_grammar(
        'root ::= "{" item{0,70} "}" Token(7)\nitem ::= ("a" | "b")+ " "?', "root")
    matcher = xg.GrammarMatcher(grammar)
    matcher.fill_next_token_bitmask(np.zeros(xg.get_bitmask_shape(1, info.vocab_size), dtype=np.int32))
    return info, grammar.serialize_bytes()


def test_truncated_or_flipped_blobs_raise_the_typed_error() -> None:
    info, blob = token_grammar_blob()
    for bad in corrupt_variants(blob):
        with pytest.raises(xg.DeserializationError):
            xg.CompiledGrammar.deserialize_bytes(bad, info)
    tokenizer_blob = info.serialize_bytes()
    for bad in corrupt_variants(tokenizer_blob):
        with pytest.raises(xg.DeserializationError):
            xg.TokenizerInfo.deserialize_bytes(bad)


def test_structural_checks_stop_corrupt_blobs_that_pass_the_checksum() -> None:
    # Checksum off: every corrupt variant must reach the length and FSM checks, and what
    # passes them must be a grammar a matcher can run without going out of bounds.
    info, blob = token_grammar_blob()
    rng = random.Random(11)
    loaded = refused = 0
    variants = corrupt_variants(blob)
    for _ in range(150):
        flipped = bytearray(blob)
        for _ in range(rng.randrange(1, 4)):
            flipped[rng.randrange(len(blob))] = rng.randrange(256)
        variants.append(bytes(flipped))
    for bad in variants:
        try:
            handle = _native._deserialize_compiled_grammar(info._handle, bad, engine_version(), verify_checksum=False)
        except xg.DeserializationError:
            refused += 1
            continue
        loaded += 1
        grammar = xg.CompiledGrammar(handle, info, "corrupt")
        matcher = xg.GrammarMatcher(grammar)
        bitmask = np.zeros(xg.get_bitmask_shape(1, info.vocab_size), dtype=np.int32)
        for token in (3, 0, 1, 5, 4, 7):
            try:
                matcher.fill_next_token_bitmask(bitmask)
                matcher.accept_token(token)
            except xg.XG2Error:
                break
    assert refused > 0 and refused + loaded == len(variants)
