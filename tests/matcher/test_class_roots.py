"""Class roots: pattern and format positions decided by the tokenizer's class tables.

A node whose characters run along a chain of one character class (a UUID's hex digits, a
fixed-length string, the length-bounded product of a pattern) or loop on it (`\\d+`,
`[a-z0-9-]*`) is classified from the class's ClassPrefixes table: the class's tokens that
fit are accepted, and the tokens with a class prefix are decided by their tails
(matcher/token_mask_cache.cc, DenseStepper::ClassRoot). Tables are built on the background
thread the first time a class is met, so each case is walked twice: before its tables exist
(the plain walk) and after (the class path), both against the reference walk."""

from __future__ import annotations

import random

import pytest

import xg2_plugin as xg
from xg2_plugin import _native
from xg2_test_support import (compare_masks_along, compare_masks_on_sampled_walks, encode_continuation, hf_tokenizer,
                              hf_tokenizer_info)

TOKENIZERS = ("llama3.1", "qwen3")

UUID = "^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$"
SCHEMA_CASES = [
    ({"type": "object", "properties": {"id": {"type": "string", "pattern": UUID}, "n": {"type": "integer"}},
      "required": ["id", "n"], "additionalProperties": False},
     ['{"id": "123e4567-e89b-12d3-a456-426614174000", "n": 3}',
      '{"id": "ABCDEF01-2345-6789-abcd-EF0123456789", "n": 12}']),
    ({"type": "string", "pattern": "^iglu:([a-zA-Z0-9-_.]+)/([a-zA-Z0-9-_]+)/([a-zA-Z0-9-_]+)/([0-9]+-[0-9]+-[0-9]+)$"},
     ['"iglu:com.snowplowanalytics.snowplow/link_click/jsonschema/1-0-1"', '"iglu:a/b/c/10-200-3"']),
    ({"type": "string", "pattern": "^[0-9]+\\.[0-9]+\\.[0-9]+.*$", "maxLength": 24},
     ['"1.2.3"', '"10.20.30-beta+build.7"', '"2024.11.26 café ✓"']),
    ({"type": "array", "items": {"type": "string", "minLength": 3, "maxLength": 3}},
     ['["USA", "FRA", "中文字", "a\\"b", "é🙂x"]']),
    ({"type": "string", "pattern": "^[a-z]{2}[a-z0-9-]*$"}, ['"ab"', '"abc-12-x9"', '"zz0"']),
]

# A narrow class with every multi-byte character: tokens break off inside characters.
SYMBOLS_EBNF = r"""
root ::= "<" [^a-zA-Z0-9<> ]{0,20} ">" | "[" [^a-zA-Z0-9<>\[\] ]* "]"
"""
SYMBOLS_TEXTS = ["<é中🙂!?>", "<>", "[#$%^&*()_+=-~`|\\\\:;'\"/.,é🙂中文]", "[]"]


def _walk_all(tokenizer: str, info: xg.TokenizerInfo) -> int:
    compiler = xg.GrammarCompiler(info, precompute_nodes=0, cache_enabled=False)
    compared = 0
    for schema, texts in SCHEMA_CASES:
        grammar = compiler.compile_json_schema(schema)
        for text in texts:
            compared += compare_masks_along(grammar, encode_continuation(tokenizer, text), require_accept=True)
    grammar = compiler.compile_grammar(SYMBOLS_EBNF)
    for text in SYMBOLS_TEXTS:
        compared += compare_masks_along(grammar, encode_continuation(tokenizer, text), require_accept=True)
    return compared


@pytest.mark.parametrize("tokenizer", TOKENIZERS)
def test_class_roots_match_reference_before_and_after_their_tables(tokenizer: str) -> None:
    info = hf_tokenizer_info(tokenizer)
    before = _walk_all(tokenizer, info)
    _native._wait_for_background_work()
    # A fresh compiler classifies every node again, now from the tables.
    after = _walk_all(tokenizer, info)
    assert before == after > 200


@pytest.mark.parametrize("tokenizer", TOKENIZERS)
def test_class_roots_match_reference_on_sampled_walks(tokenizer: str) -> None:
    info = hf_tokenizer_info(tokenizer)
    rng = random.Random(11)
    for round_ in range(2):
        compiler = xg.GrammarCompiler(info, precompute_nodes=0, cache_enabled=False)
        grammars = [compiler.compile_json_schema(schema) for schema, _ in SCHEMA_CASES]
        grammars.append(compiler.compile_grammar(SYMBOLS_EBNF))
        for grammar in grammars:
            compare_masks_on_sampled_walks(grammar, rng, walks=2, steps=24)
        _native._wait_for_background_work()


# `word` keeps its own rule (it is recursive), and its class loop is accepting: the parser can
# leave after any character, so `abc)` must stay uncertain at the loop, not be rejected by
# its tail `)` walked from the loop. Such a loop is no class root.
LEAVING_EBNF = r"""
root ::= "(" word ")"
word ::= [a-z0-9_]+ ("(" word ")" [a-z0-9_]*)?
"""


@pytest.mark.parametrize("tokenizer", TOKENIZERS)
def test_class_loop_that_can_leave_its_rule_keeps_exact_masks(tokenizer: str) -> None:
    info = hf_tokenizer_info(tokenizer)
    for _ in range(2):
        compiler = xg.GrammarCompiler(info, precompute_nodes=0, cache_enabled=False)
        grammar = compiler.compile_grammar(LEAVING_EBNF)
        for text in ["(abc)", "(snake_case_name)", "(f(x1)y)", "(a(b(c)))"]:
            ids = encode_continuation(tokenizer, text)
            assert compare_masks_along(grammar, ids, require_accept=True) == len(ids) + 1
        _native._wait_for_background_work()


def test_tables_are_built_in_the_background_and_kept() -> None:
    # A TokenizerInfo of its own: the shared one holds whatever tables earlier tests built.
    info = xg.TokenizerInfo.from_huggingface(hf_tokenizer("llama3.1"))
    _native._wait_for_background_work()
    start = info._handle.memory_bytes()
    compiler = xg.GrammarCompiler(info, precompute_nodes=0, cache_enabled=False)
    grammar = compiler.compile_json_schema({"type": "string", "pattern": "^[2-9K-Z]{6}x$"})
    compare_masks_along(grammar, encode_continuation("llama3.1", '"23KLMNx"'), require_accept=True)
    _native._wait_for_background_work()
    grown = info._handle.memory_bytes()
    assert grown > start
    # The same class again: no new table.
    grammar = compiler.compile_json_schema({"type": "string", "pattern": "^[2-9K-Z]{3}y$"})
    compare_masks_along(grammar, encode_continuation("llama3.1", '"9ZYy"'), require_accept=True)
    _native._wait_for_background_work()
    assert info._handle.memory_bytes() == grown
