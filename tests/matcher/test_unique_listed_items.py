"""uniqueItems over more listed scalar values than one rule per subset allows (array_uniqueness.cc,
ListedScalarItems): the item rule is a finite automaton of the values' spellings, and the parser
refuses a byte after which no unused value completes the item, or after which another item must
follow when every value is used (finite_unique_items.cc). Real tokenizers, instances checked
against jsonschema both ways, the dead prefixes absent from both masks, cached masks equal to
the reference walk on biased random walks, and the typed refusals that remain."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest

import xg2_plugin as xg
from xg2_test_support import hf_tokenizer_info, sampled_walk
from unique_items_support import assert_instance_follows_jsonschema, check_walks, compiler, in_mask, tokenizer  # noqa: F401 (fixtures)

# Ten strings, some the prefix of others ("a" of "ab" of "abc"): a prefix stays open while an
# unused value extends it.
WORDS = ["a", "ab", "abc", "b", "ba", "c", "page", "pages", "home", "404"]
STRINGS = {"type": "array", "uniqueItems": True, "items": {"type": "string", "enum": WORDS}}
# Numbers with more than one spelling (2 and 2.0, the same value) and prefixes (1 of 10 of 100).
NUMBERS = {"type": "array", "uniqueItems": True, "minItems": 1,
           "items": {"enum": [1, 10, 100, 2, 2.0, 3, 30, 4, 5, 6, 7]}}
# Untyped scalars of every kind (proxies' methods, jscsrc's keywords have no `type`).
SCALARS = {"type": "array", "uniqueItems": True,
           "items": {"enum": ["x", "xy", 1, 12, True, False, None, "null", "true", 0.5]}}
# maxItems below the number of values stays a bound of the array rule.
BOUNDED = {"type": "array", "uniqueItems": True, "maxItems": 3, "minItems": 2,
           "items": {"type": "string", "enum": WORDS}}
SCHEMAS = {"strings": STRINGS, "numbers": NUMBERS, "scalars": SCALARS, "bounded": BOUNDED}

INSTANCES = [
    (STRINGS, "[]"), (STRINGS, '["a", "ab", "abc"]'), (STRINGS, '["ab", "a"]'), (STRINGS, '["a", "a"]'),
    (STRINGS, '["page", "pages", "page"]'), (STRINGS, '["a", "\\u0061"]'), (STRINGS, '["abcd"]'),
    (STRINGS, json.dumps(WORDS)), (STRINGS, json.dumps(WORDS + ["a"])), (STRINGS, json.dumps(WORDS[::-1])),
    (NUMBERS, "[1, 10, 100]"), (NUMBERS, "[2, 2.0]"), (NUMBERS, "[2.0, 3, 2]"), (NUMBERS, "[1, 1]"),
    (NUMBERS, "[]"), (NUMBERS, "[1, 10, 100, 2, 3, 30, 4, 5, 6, 7]"), (NUMBERS, "[1, 10, 100, 2, 3, 30, 4, 5, 6, 7, 2.0]"),
    (SCALARS, '["null", null, "true", true, false]'), (SCALARS, "[null, null]"), (SCALARS, '[1, 12, 0.5, "x", "xy"]'),
    (SCALARS, "[true, true]"), (SCALARS, '["x", "x"]'),
    (BOUNDED, '["a", "b"]'), (BOUNDED, '["a", "b", "c"]'), (BOUNDED, '["a", "b", "c", "ab"]'), (BOUNDED, '["a"]'),
    (BOUNDED, '["a", "a"]'),
]


@pytest.mark.parametrize("schema, text", INSTANCES)
def test_instances_follow_jsonschema(compiler: xg.GrammarCompiler, schema: dict, text: str) -> None:
    pytest.importorskip("jsonschema")
    assert_instance_follows_jsonschema(compiler.compile_json_schema(schema), schema, text)


@pytest.mark.parametrize("prefix, token, expected", [
    # "a" and "ab" are used: the only values starting with "a" left is "abc".
    ('["a", "ab", "', b"a", True), ('["a", "ab", "abc", "', b"a", False), ('["a", "ab", "abc", "', b"b", True),
    ('["a", "ab", "abc", "b", "ba", "', b"b", False), ('["a", "ab", "abc", "b", "', b"b", True),
    # Every value used: no separator, the array may only close.
    (json.dumps(WORDS)[:-1], b",", False), (json.dumps(WORDS)[:-1], b"]", True),
    (json.dumps(WORDS)[:-1] + " ", b",", False), (json.dumps(WORDS[:-1])[:-1], b",", True),
    # "page" used: '"page' stays open for "pages"; both used, the 'p' is refused.
    ('["page", "', b"p", True), ('["page", "pages", "', b"p", False), ('["pages", "page', b'"', True),
    ('["page", "page', b'"', False),
])
def test_dead_prefixes_are_never_offered(tokenizer: str, compiler: xg.GrammarCompiler, prefix: str, token: bytes,
                                         expected: bool) -> None:
    info = hf_tokenizer_info(tokenizer)
    grammar = compiler.compile_json_schema(STRINGS)
    matcher = xg.GrammarMatcher(grammar)
    assert matcher.accept_string(prefix)
    for fill in (matcher.fill_next_token_bitmask, matcher._fill_next_token_bitmask_reference):
        bitmask = np.zeros(xg.get_bitmask_shape(1, info.vocab_size), dtype=np.int32)
        fill(bitmask)
        assert in_mask(bitmask, info.decoded_vocab.index(token)) == expected, (prefix, token)
    assert matcher.accept_string(token.decode()) == expected


def value_walk(grammar: xg.CompiledGrammar, rng: random.Random, steps: int) -> list[int]:
    """Tokens drawn from the reference mask, preferring short ones without whitespace, so that
    walks use up the values and reach the prefixes only used values complete."""
    vocab = grammar.tokenizer_info.decoded_vocab

    def pick(allowed_ids: list) -> int:
        short = [t for t in allowed_ids if len(vocab[t]) <= 3 and not vocab[t].isspace()]
        return rng.choice(short if short and rng.random() < 0.9 else allowed_ids)

    return sampled_walk(grammar, rng, steps, pick)


@pytest.mark.parametrize("name", sorted(SCHEMAS))
def test_walks_never_repeat_and_cached_masks_match_reference(tokenizer: str, compiler: xg.GrammarCompiler,
                                                              name: str) -> None:
    pytest.importorskip("jsonschema")
    schema = SCHEMAS[name]
    assert check_walks(tokenizer, compiler.compile_json_schema(schema), schema, value_walk, 8, 80, INSTANCES) > 0


def test_a_walk_that_uses_every_value_can_only_close() -> None:
    info = hf_tokenizer_info("llama3.1")
    grammar = xg.GrammarCompiler(info, cache_enabled=False).compile_json_schema(STRINGS)
    matcher = xg.GrammarMatcher(grammar)
    for word in WORDS:
        matcher.accept_string(("[" if word == WORDS[0] else ", ") + json.dumps(word))
    bitmask = np.zeros(xg.get_bitmask_shape(1, info.vocab_size), dtype=np.int32)
    matcher.fill_next_token_bitmask(bitmask)
    bits = np.unpackbits(bitmask[0].view(np.uint8), bitorder="little")[: info.vocab_size]
    texts = {info.decoded_vocab[t] for t in np.flatnonzero(bits)} - {b""}
    assert b"]" in texts and all(b"," not in t and b'"' not in t for t in texts)


@pytest.mark.parametrize("array, why", [
    # A maxItems below the values' count is written out as copies: at most 128.
    ({"maxItems": 129, "items": {"enum": [f"v{i}" for i in range(140)]}}, "maxItems above 128"),
    ({"minItems": 129, "items": {"enum": [f"v{i}" for i in range(140)]}}, "minItems above 128"),
    # Listed objects have spellings with whitespace loops: no finite item automaton.
    ({"items": {"enum": [{"k": i} for i in range(9)]}}, "the items are not one of the types"),
])
def test_what_stays_refused(array: dict, why: str) -> None:
    schema = {"type": "array", "uniqueItems": True, **array}
    with pytest.raises(xg.UnsupportedSchemaError, match="uniqueItems") as raised:
        xg.GrammarCompiler(hf_tokenizer_info("llama3.1"), cache_enabled=False).compile_json_schema(schema)
    assert why in str(raised.value) and "at /:" in str(raised.value)


def test_more_items_required_than_values_accepts_nothing() -> None:
    schema = {"type": "array", "uniqueItems": True, "minItems": 11, "items": {"enum": WORDS}}
    with pytest.raises(xg.SchemaError, match="accepts no JSON value"):
        xg.GrammarCompiler(hf_tokenizer_info("llama3.1"), cache_enabled=False).compile_json_schema(schema)
