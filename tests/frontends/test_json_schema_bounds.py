"""JSON Schema counts up to 2^31-1 (minLength/maxLength, minItems/maxItems,
minProperties/maxProperties) are exact counted loops: the bound costs no FSM states, the
language is stepped exactly at the bound, and a count no int32 counter holds is refused."""

from __future__ import annotations

import json

import numpy as np
import pytest

import xg2_plugin as xg
from xg2_test_support import hf_tokenizer_info

TOKENIZER = "llama3.1"
INT32_MAX = 2**31 - 1
# Far fewer nodes than any unrolled bound here would need: the compile must fit in it.
SMALL_FSM_NODES = 20000


@pytest.fixture(scope="module")
def compiler() -> xg.GrammarCompiler:
    return xg.GrammarCompiler(hf_tokenizer_info(TOKENIZER), cache_enabled=False,
                              limits=xg.CompileLimits(max_fsm_nodes=SMALL_FSM_NODES))


def accepts(grammar: xg.CompiledGrammar, text: str) -> bool:
    matcher = xg.GrammarMatcher(grammar)
    return matcher.accept_string(text) and matcher.is_completed()


@pytest.mark.parametrize("schema", [
    {"type": "string", "maxLength": INT32_MAX},
    {"type": "string", "maxLength": 1000000},
    {"type": "string", "minLength": INT32_MAX},
    {"type": "string", "pattern": "^[a-z]+$", "maxLength": INT32_MAX},
    {"type": "array", "items": {"type": "integer"}, "maxItems": INT32_MAX},
    {"type": "array", "items": {"type": "string", "maxLength": INT32_MAX}, "minItems": 1000000, "maxItems": INT32_MAX},
    {"type": "object", "maxProperties": INT32_MAX},
    {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "string"}}, "required": ["a"],
     "additionalProperties": {"type": "integer"}, "maxProperties": INT32_MAX},
])
def test_large_bounds_compile_without_expansion(compiler: xg.GrammarCompiler, schema: dict) -> None:
    grammar = compiler.compile_json_schema(schema)
    assert grammar._handle.num_nodes < SMALL_FSM_NODES


def test_string_length_stepped_exactly_at_a_large_bound(compiler: xg.GrammarCompiler) -> None:
    grammar = compiler.compile_json_schema({"type": "string", "minLength": 70000, "maxLength": 70005})
    verdicts = {n: accepts(grammar, '"' + "a" * n + '"') for n in (69999, 70000, 70003, 70005, 70006)}
    assert verdicts == {69999: False, 70000: True, 70003: True, 70005: True, 70006: False}
    # An escape is one character too.
    assert accepts(grammar, '"' + "\\n" * 70005 + '"')
    assert not accepts(grammar, '"' + "\\n" * 70006 + '"')


def test_mask_at_a_large_bound_matches_the_reference(compiler: xg.GrammarCompiler) -> None:
    grammar = compiler.compile_json_schema({"type": "string", "minLength": 70000, "maxLength": 70005})
    info = grammar.tokenizer_info
    cached = np.zeros(xg.get_bitmask_shape(1, info.vocab_size), dtype=np.int32)
    reference = np.zeros_like(cached)
    quote = info.decoded_vocab.index(b'"')
    letter = info.decoded_vocab.index(b"a")
    for prefix, (quote_allowed, letter_allowed) in {69999: (False, True), 70004: (True, True),
                                                    70005: (True, False)}.items():
        matcher = xg.GrammarMatcher(grammar)
        assert matcher.accept_string('"' + "a" * prefix)
        matcher.fill_next_token_bitmask(cached)
        matcher._fill_next_token_bitmask_reference(reference)
        assert np.array_equal(cached, reference)
        bits = np.unpackbits(cached[0].view(np.uint8), bitorder="little")
        assert (bool(bits[quote]), bool(bits[letter])) == (quote_allowed, letter_allowed), prefix


def test_item_and_property_counts_stepped_exactly(compiler: xg.GrammarCompiler) -> None:
    arrays = compiler.compile_json_schema({"type": "array", "items": {"type": "integer"},
                                           "minItems": 70000, "maxItems": 70002})
    for n, ok in ((69999, False), (70000, True), (70002, True), (70003, False)):
        assert accepts(arrays, json.dumps([7] * n)) == ok, n
    objects = compiler.compile_json_schema({"type": "object", "additionalProperties": {"type": "integer"},
                                            "maxProperties": 2})
    assert accepts(objects, '{"x": 1, "y": 2}')
    assert not accepts(objects, '{"x": 1, "y": 2, "z": 3}')


@pytest.mark.parametrize("keyword", ["minLength", "maxLength", "minItems", "maxItems", "maxProperties"])
def test_counts_above_int32_are_refused_with_keyword_and_pointer(compiler: xg.GrammarCompiler,
                                                                 keyword: str) -> None:
    kind = {"minLength": "string", "maxLength": "string", "minItems": "array", "maxItems": "array",
            "maxProperties": "object"}[keyword]
    schema = {"type": "object", "properties": {"p": {"type": kind, keyword: INT32_MAX + 1}}}
    with pytest.raises(xg.UnsupportedSchemaError, match=f"'{keyword}' at /properties/p: bound 2147483648"):
        compiler.compile_json_schema(schema)


def test_user_ebnf_keeps_its_repetition_limit() -> None:
    compiler = xg.GrammarCompiler(hf_tokenizer_info(TOKENIZER), cache_enabled=False)
    with pytest.raises(xg.ResourceLimitError, match="repetition bound exceeds the limit"):
        compiler.compile_grammar('root ::= "a"{0,2000000}')


def test_large_bound_without_compression_is_a_resource_limit() -> None:
    compiler = xg.GrammarCompiler(hf_tokenizer_info(TOKENIZER), cache_enabled=False,
                                  repetition_compression_threshold=0,
                                  limits=xg.CompileLimits(max_fsm_nodes=SMALL_FSM_NODES))
    with pytest.raises(xg.ResourceLimitError):
        compiler.compile_json_schema({"type": "string", "maxLength": INT32_MAX})
