"""uniqueItems over strings and numbers, kept distinct by the matcher (grammar/grammar_fsm.h,
"Unique items"): real tokenizers, instances checked against jsonschema both ways, the token that
makes an item a duplicate rejected (and absent from the mask) exactly, cached masks equal to the
reference walk, rollback, fork, serialization and batch fills."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest

import xg2_plugin as xg
from xg2_corpus import make_validator
from xg2_test_support import compare_masks_along, encode_continuation, hf_tokenizer_info
from unique_items_support import accepts, assert_duplicate_refused_at, assert_instance_follows_jsonschema, check_walks, compiler, tokenizer  # noqa: F401 (fixtures)

STRINGS = {"type": "array", "items": {"type": "string"}, "uniqueItems": True}
NUMBERS = {"type": "array", "items": {"type": "number"}, "uniqueItems": True}
INTEGERS = {"type": "array", "items": {"type": "integer"}, "uniqueItems": True, "minItems": 2}
# Patterns whose every body prefix has infinitely many completions (array_uniqueness.cc
# EveryPrefixHasInfinitelyManyCompletions); from the corpus (bxci, chisel-slices).
IDENTIFIERS = {"type": "array", "items": {"type": "string", "pattern": "^[A-Za-z_][A-Za-z0-9_]*$"}, "uniqueItems": True}
SLICES = {"type": "array", "items": {"type": "string", "pattern": "^[a-z0-9][a-z0-9+\\-\\._]+$"}, "uniqueItems": True,
          "maxItems": 4}
TOOL = {"type": "object", "properties": {
    "tags": {"type": "array", "items": {"type": "string", "minLength": 1}, "uniqueItems": True, "maxItems": 5},
    "labels": {"type": "array", "items": {"type": "string"}, "uniqueItems": True},
    "ids": {"type": "array", "items": {"type": "array", "items": {"type": "integer"}, "uniqueItems": True}}},
    "required": ["tags"], "additionalProperties": False}
# Several open-ended types: their union is open-ended too (behat's contexts: strings or objects).
STRING_OR_NUMBER = {"type": "array", "items": {"type": ["string", "number"]}, "uniqueItems": True}
STRING_OR_OBJECT = {"type": "array", "items": {"type": ["string", "object"]}, "uniqueItems": True}

# (schema, JSON text) pairs: each is accepted exactly when jsonschema finds it valid.
INSTANCES = [
    (STRINGS, '["a", "b", "ab"]'), (STRINGS, '["a", "a"]'), (STRINGS, '["a", "\\u0061"]'),
    (STRINGS, '["\\n", "\\u000a"]'), (STRINGS, '["\\u00e9", "é"]'), (STRINGS, '["\\ud83d\\ude00", "😀"]'),
    (STRINGS, '["", ""]'), (STRINGS, '["", " "]'), (STRINGS, '["x", "y", "z", "y"]'), (STRINGS, "[]"),
    (STRINGS, '["a\\"", "a\\\\"]'), (STRINGS, '["/", "\\/"]'),
    (NUMBERS, "[1, 1.0]"), (NUMBERS, "[1, 10]"), (NUMBERS, "[0, -0]"), (NUMBERS, "[1e2, 100]"),
    (NUMBERS, "[1.5, 15e-1]"), (NUMBERS, "[2, 3, 2.5, 0.25]"), (NUMBERS, "[12, 1, 2]"), (NUMBERS, "[0.1, 0.10]"),
    (INTEGERS, "[1, 2]"), (INTEGERS, "[0, -0]"), (INTEGERS, "[7, 7]"), (INTEGERS, "[3]"),
    (TOOL, '{"tags": ["x", "y"], "labels": ["x"]}'), (TOOL, '{"tags": ["x", "x"]}'),
    (TOOL, '{"tags": ["x"], "ids": [[1, 2], [1, 2]]}'), (TOOL, '{"tags": ["x"], "ids": [[1, 1]]}'),
    (TOOL, '{"tags": ["a", "b", "c", "d", "e"]}'), (TOOL, '{"tags": ["a", "b", "c", "d", "e", "f"]}'),
    (IDENTIFIERS, '["a", "b", "a_1"]'), (IDENTIFIERS, '["a", "a"]'), (IDENTIFIERS, '["x1", "\\u0078\\u0031"]'),
    (IDENTIFIERS, '["1a"]'), (IDENTIFIERS, '["ab", "a", "abc", "ab"]'),
    (SLICES, '["ab", "a.b", "a-b", "a+b"]'), (SLICES, '["ab", "ab"]'), (SLICES, '["a"]'), (SLICES, '["ab", "Ab"]'),
    (SLICES, '["ab", "ac", "ad", "ae", "af"]'),
    (STRING_OR_NUMBER, '["1", 1]'), (STRING_OR_NUMBER, '[1, "a", 1.0]'), (STRING_OR_NUMBER, '["a", "\\u0061"]'),
    (STRING_OR_NUMBER, '[2, 20, "2"]'), (STRING_OR_NUMBER, "[true]"),
    (STRING_OR_OBJECT, '["x", {}]'), (STRING_OR_OBJECT, '[{}, {}]'), (STRING_OR_OBJECT, '["a", {"a": 1}, "a"]'),
    (STRING_OR_OBJECT, '[{"a": 1, "b": [2]}, {"b": [2.0], "a": 1}]'), (STRING_OR_OBJECT, '[{"a": "x"}, "x", {"a": "y"}]'),
    (STRING_OR_OBJECT, "[1]"),
]


@pytest.mark.parametrize("schema, text", INSTANCES)
def test_instances_follow_jsonschema(compiler: xg.GrammarCompiler, schema: dict, text: str) -> None:
    pytest.importorskip("jsonschema")
    assert_instance_follows_jsonschema(compiler.compile_json_schema(schema), schema, text)


def decisive_offset(text: str) -> int:
    """The byte offset where a walk of `text` (an array of scalars whose last item repeats an
    earlier one) must stop: the last item's closing quote, or the byte after a number."""
    body = text.rstrip().rstrip("]").rstrip().encode("utf-8")
    return len(body) - 1 if body.endswith(b'"') else len(body)


@pytest.mark.parametrize("schema, text", [
    (STRINGS, '["alpha", "beta", "alpha"]'), (STRINGS, '["a", "\\u0061"]'), (STRINGS, '["x y", "x y"]'),
    (NUMBERS, "[1, 2, 1.0]"), (NUMBERS, "[100, 1e2]"), (INTEGERS, "[42, 42]"),
    (IDENTIFIERS, '["alpha", "beta", "alpha"]'), (SLICES, '["a.b", "a.b"]'), (STRING_OR_NUMBER, '["x", 3, "x"]'),
    (STRING_OR_OBJECT, '["x", "y", "x"]'),
])
def test_duplicate_is_rejected_at_the_token_that_completes_it(tokenizer: str, compiler: xg.GrammarCompiler,
                                                              schema: dict, text: str) -> None:
    assert_duplicate_refused_at(tokenizer, compiler.compile_json_schema(schema), text, decisive_offset(text))


def closing_walk(grammar: xg.CompiledGrammar, rng: random.Random, steps: int) -> list[int]:
    """Tokens drawn from the reference mask, preferring those that end a value early (a quote,
    a comma, a bracket) so that short, repeated items are tried often."""
    info = grammar.tokenizer_info
    vocab = info.decoded_vocab
    matcher = xg.GrammarMatcher(grammar)
    bitmask = np.zeros(xg.get_bitmask_shape(1, info.vocab_size), dtype=np.int32)
    stops = set(matcher.stop_token_ids)
    ids: list[int] = []
    for _ in range(steps):
        matcher._fill_next_token_bitmask_reference(bitmask)
        bits = np.unpackbits(bitmask[0].view(np.uint8), bitorder="little")[: info.vocab_size]
        allowed = [int(t) for t in np.flatnonzero(bits) if t not in stops]
        if not allowed:
            break
        closing = [t for t in allowed if len(vocab[t]) <= 3 and any(c in vocab[t] for c in b'",]1')]
        pool = closing if closing and rng.random() < 0.8 else allowed
        token = rng.choice(pool)
        assert matcher.accept_token(token)
        ids.append(token)
    return ids


@pytest.mark.parametrize("schema", [STRINGS, NUMBERS, INTEGERS, TOOL, IDENTIFIERS, SLICES, STRING_OR_NUMBER,
                                    STRING_OR_OBJECT],
                         ids=["strings", "numbers", "integers", "tool", "identifiers", "slices", "string-or-number",
                              "string-or-object"])
def test_walks_never_repeat_and_cached_masks_match_reference(tokenizer: str, compiler: xg.GrammarCompiler,
                                                              schema: dict) -> None:
    pytest.importorskip("jsonschema")
    grammar = compiler.compile_json_schema(schema)
    check_walks(tokenizer, grammar, schema, closing_walk, 6, 40, INSTANCES)


def test_rollback_and_fork_restore_the_used_values(compiler: xg.GrammarCompiler, tokenizer: str) -> None:
    grammar = compiler.compile_json_schema(STRINGS)
    matcher = xg.GrammarMatcher(grammar)
    for piece in ['["a"', ', ', '"b"', ', ']:
        assert matcher.accept_string(piece)
    fork = matcher.fork()
    assert not fork.accept_string('"a"')
    assert fork.accept_string('"c"')
    assert not fork.accept_string(', "c"')
    # The fork's "c" is not in the original's set; a rollback drops "b" from it.
    assert matcher.accept_string('"c"')
    matcher.rollback(3)  # '"c"', ', ', '"b"'
    assert matcher.accept_string('"c", "b", ')
    assert not matcher.accept_string('"b"')
    assert matcher.accept_string('"d"]') and matcher.is_completed()
    matcher.reset()
    assert matcher.accept_string('["a", "b"]') and matcher.is_completed()


def test_serialization_round_trip_keeps_the_values_distinct(compiler: xg.GrammarCompiler, tokenizer: str) -> None:
    grammar = compiler.compile_json_schema(TOOL)
    info = hf_tokenizer_info(tokenizer)
    for restored in (xg.CompiledGrammar.deserialize_bytes(grammar.serialize_bytes(), info),
                     xg.CompiledGrammar.deserialize_json(grammar.serialize_json(), info)):
        assert "[unique_items]" in restored.ebnf
        assert accepts(restored, '{"tags": ["x", "y"]}')
        assert not accepts(restored, '{"tags": ["x", "\\u0078"]}')
        compare_masks_along(restored, encode_continuation(tokenizer, '{"tags": ["ab", "a'), require_accept=True)


def test_batch_fill_equals_single_fills(compiler: xg.GrammarCompiler) -> None:
    grammar = compiler.compile_json_schema(STRINGS)
    info = grammar.tokenizer_info
    prefixes = ['["a", "', '["a", "b", "a', '["', '["a", "ab", "a', '[']
    matchers = [xg.GrammarMatcher(grammar) for _ in prefixes]
    for matcher, prefix in zip(matchers, prefixes):
        assert matcher.accept_string(prefix)
    batch = np.zeros(xg.get_bitmask_shape(len(matchers), info.vocab_size), dtype=np.int32)
    xg.BatchGrammarMatcher().batch_fill_next_token_bitmask(matchers, batch)
    single = np.zeros(xg.get_bitmask_shape(1, info.vocab_size), dtype=np.int32)
    for row, matcher in enumerate(matchers):
        matcher._fill_next_token_bitmask_reference(single)
        assert np.array_equal(batch[row], single[0]), prefixes[row]
    # '"' would close a second "a" in the second and fourth rows: forbidden there only.
    quote = info.decoded_vocab.index(b'"')
    for row, allowed in [(0, True), (1, False), (2, True), (3, False)]:
        assert bool((int(batch[row][quote >> 5]) >> (quote & 31)) & 1) == allowed, prefixes[row]


def test_ebnf_attributes_and_their_misuse() -> None:
    compiler = xg.GrammarCompiler(hf_tokenizer_info("llama3.1"), cache_enabled=False)
    grammar = compiler.compile_grammar(
        'root[unique_items] ::= "(" item ("," item)* ")"\nitem[unique_item] ::= [a-z]+')
    assert accepts(grammar, "(ab,a,b)") and not accepts(grammar, "(ab,a,ab)")
    assert "[unique_items]" in grammar.ebnf and "[unique_item]" in grammar.ebnf
    with pytest.raises(xg.GrammarSyntaxError, match="not a \\[unique_items\\] rule"):
        compiler.compile_grammar('root ::= "(" item ("," item)* ")"\nitem[unique_item] ::= [a-z]+')
    with pytest.raises(xg.GrammarSyntaxError, match="empty string"):
        compiler.compile_grammar('root[unique_items] ::= "(" item ")"\nitem[unique_item] ::= [a-z]*')


@pytest.mark.parametrize("threshold", [1, 4, 16, 64])
@pytest.mark.parametrize("items, bounds, distinct", [
    ({"type": "string"}, {"minItems": 3, "maxItems": 20}, lambda i: f'"v{i}"'),
    ({"type": "number"}, {"minItems": 10}, str),
    ({"type": "integer"}, {"maxItems": 32}, str),
])
def test_item_counts_hold_under_any_compression_threshold(threshold: int, items: dict, bounds: dict,
                                                          distinct) -> None:
    # The counted items of a uniqueItems array are written out (a [unique_items] rule cannot
    # hold a compressed repetition), so a compiler whose repetition_compression_threshold is
    # below the bound still builds them; counts at, below and above each bound.
    pytest.importorskip("jsonschema")
    schema = {"type": "array", "items": items, "uniqueItems": True, **bounds}
    compiler = xg.GrammarCompiler(hf_tokenizer_info("llama3.1"), cache_enabled=False,
                                  repetition_compression_threshold=threshold)
    grammar = compiler.compile_json_schema(schema)
    validator = make_validator(schema)
    for count in sorted({0, 1, 2, 3, 9, 10, 11, 19, 20, 21, 32, 33}):
        text = "[" + ", ".join(distinct(i) for i in range(count)) + "]"
        assert accepts(grammar, text) == validator.is_valid(json.loads(text)), (threshold, text)
    repeated = "[" + ", ".join([distinct(0)] + [distinct(i) for i in range(11)]) + "]"
    assert not accepts(grammar, repeated)


@pytest.mark.parametrize("items, options, why", [
    # A whole open object in the item: as for object items, no indented layout.
    ({"type": ["string", "object"]}, {"indent": 2}, "indented layout"),
    # Every type must be open-ended: null and booleans are one value each.
    ({"type": ["string", "null"]}, {}, "not one of the types"),
    ({"type": ["string", "object"], "properties": {"a": {"type": "string"}}, "additionalProperties": False}, {},
     "no more members may follow"),
    ({"type": ["string", "number"], "maxLength": 3}, {}, "'maxLength'"),
])
def test_mixed_types_that_can_run_out_of_values_are_refused(items: dict, options: dict, why: str) -> None:
    schema = {"type": "array", "items": items, "uniqueItems": True}
    compiler = xg.GrammarCompiler(hf_tokenizer_info("llama3.1"), cache_enabled=False)
    with pytest.raises(xg.UnsupportedSchemaError, match="uniqueItems") as raised:
        compiler.compile_json_schema(schema, **options)
    assert why in str(raised.value), str(raised.value)
