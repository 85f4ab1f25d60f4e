"""Serialization of compiled grammars and tokenizer tables (xg2_plugin/serialization.py).

A grammar read back gives bit-identical masks to the one compiled, stepped token by token
through corpus instances and random walks (JSON Schemas of the corpus sample, a Harmony
structural tag that names special tokens and has every state classified at compile time); a
blob that must not be read back is tests/compiler/test_serialization_corrupt.py's subject.
"""

from __future__ import annotations

import json
import random
import warnings

import numpy as np
import pytest

import xg2_plugin as xg
from xg2_plugin.presets import get_model_structural_tag
from xg2_plugin.serialization import tokenizer_fingerprint

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
