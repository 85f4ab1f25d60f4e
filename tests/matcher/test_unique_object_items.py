"""uniqueItems over object items, kept distinct by the matcher (grammar/grammar_fsm.h, "Unique
items"; array_uniqueness.cc, OpenEndedObjectItem): the item rule ends before the object's
closing brace, objects compare as JSON values (members in any order, escapes decoded, numbers
by value). Real tokenizers, instances checked against jsonschema both ways, the token that makes
an item a duplicate rejected and absent from the mask, cached masks equal to the reference walk,
and the typed refusal where a prefix could run out of unused values."""

from __future__ import annotations

import random

import numpy as np
import pytest

import xg2_plugin as xg
from xg2_test_support import hf_tokenizer_info, sampled_walk
from unique_items_support import accepts, assert_duplicate_refused_at, assert_instance_follows_jsonschema, check_walks, compiler, in_mask, tokenizer  # noqa: F401 (fixtures)

# Closed objects whose last member (schema order) is a plain string, as in the corpus
# (artifacthub owners, sarif notifications, sergen connections).
OWNERS = {"type": "array", "uniqueItems": True, "items": {
    "type": "object", "additionalProperties": False,
    "properties": {"id": {"type": "integer"}, "name": {"type": "string"}}}}
REQUIRED = {"type": "array", "uniqueItems": True, "minItems": 1, "items": {
    "type": "object", "additionalProperties": False, "required": ["flag", "key"],
    "properties": {"flag": {"type": "boolean"}, "key": {"type": "string", "minLength": 1}}}}
# The last member is a number: its completions go on with digits.
NUMBERED = {"type": "array", "uniqueItems": True, "maxItems": 4, "items": {
    "type": "object", "additionalProperties": False, "required": ["kind"],
    "properties": {"kind": {"enum": ["a", "b"]}, "weight": {"type": "number"}}}}
# Open objects: more members may always follow, so no member is last.
OPEN = {"type": "array", "uniqueItems": True, "items": {
    "type": "object", "properties": {"on": {"type": "boolean"}}, "additionalProperties": True}}
# The last member is itself an open object.
NESTED = {"type": "array", "uniqueItems": True, "items": {
    "type": "object", "additionalProperties": False, "required": ["tag"],
    "properties": {"tag": {"const": "t"}, "meta": {"type": "object"}}}}
SCHEMAS = {"owners": OWNERS, "required": REQUIRED, "numbered": NUMBERED, "open": OPEN, "nested": NESTED}

INSTANCES = [
    (OWNERS, '[{"id": 1, "name": "a"}, {"id": 1, "name": "b"}]'),
    (OWNERS, '[{"id": 1, "name": "a"}, {"id": 1, "name": "a"}]'),
    (OWNERS, '[{"id": 1, "name": "a"}, {"id": 1.0, "name": "\\u0061"}]'),
    (OWNERS, '[{}, {}]'), (OWNERS, '[{}, {"id": 2}]'), (OWNERS, '[{ }, {}]'),
    (OWNERS, '[{"name": "x"}, {"id": 3, "name": "x"}, {"name": "x"}]'),
    (OWNERS, '[{"id": 1}, {"id": 10}, {"id": 1e0}]'),
    (REQUIRED, '[{"flag": true, "key": "k"}, {"flag": false, "key": "k"}]'),
    (REQUIRED, '[{"flag": true, "key": "k"}, {"flag": true, "key": "k"}]'),
    (REQUIRED, '[]'), (REQUIRED, '[{"flag": true, "key": ""}]'),
    (NUMBERED, '[{"kind": "a"}, {"kind": "b"}, {"kind": "a", "weight": 1}, {"kind": "a", "weight": 10}]'),
    (NUMBERED, '[{"kind": "a", "weight": 1}, {"kind": "a", "weight": 1.0}]'),
    (NUMBERED, '[{"kind": "a"}, {"kind": "a"}]'),
    (NUMBERED, '[{"kind": "a"}, {"kind": "b"}, {"kind": "a", "weight": 1}, {"kind": "b", "weight": 1}, '
               '{"kind": "a", "weight": 2}]'),
    (OPEN, '[{"on": true}, {"on": true, "x": 1}]'), (OPEN, '[{"on": true, "x": 1}, {"x": 1, "on": true}]'),
    (OPEN, '[{"x": [1, {"y": null}]}, {"x": [1, {"y": null}]}]'), (OPEN, '[{"x": [1]}, {"x": [1.0, 2]}]'),
    (NESTED, '[{"tag": "t"}, {"tag": "t", "meta": {}}]'), (NESTED, '[{"tag": "t", "meta": {"a": 1}}, '
                                                                  '{"tag": "t", "meta": {"a": 1.0}}]'),
    (NESTED, '[{"tag": "t"}, {"tag": "t"}]'),
]


@pytest.mark.parametrize("schema, text", INSTANCES)
def test_instances_follow_jsonschema(compiler: xg.GrammarCompiler, schema: dict, text: str) -> None:
    pytest.importorskip("jsonschema")
    grammar = compiler.compile_json_schema(schema)
    assert "[unique_items]" in grammar.ebnf
    assert_instance_follows_jsonschema(grammar, schema, text)


@pytest.mark.parametrize("schema, text, decisive", [
    # The byte that completes the repeated object (its last member's closing quote, the byte
    # after a number, or the brace of an open object) is where the walk must stop.
    (OWNERS, '[{"id": 1, "name": "abc"}, {"id": 1, "name": "abc"}]', '{"id": 1, "name": "abc"'),
    (OWNERS, '[{"name": "x y"}, {"name": "x y"}]', '{"name": "x y"'),
    (REQUIRED, '[{"flag": false, "key": "k1"}, {"flag": false, "key": "k1"}]', '{"flag": false, "key": "k1"'),
    (OPEN, '[{"on": true}, {"on": true}]', '{"on": true'),
    (NESTED, '[{"tag": "t", "meta": {"a": 1}}, {"tag": "t", "meta": {"a": 1}}]', '{"tag": "t", "meta": {"a": 1}'),
])
def test_duplicate_is_rejected_at_the_token_that_completes_it(tokenizer: str, compiler: xg.GrammarCompiler,
                                                              schema: dict, text: str, decisive: str) -> None:
    # The second occurrence's last byte before the closing brace (open objects: the brace).
    second = text.rindex(decisive) + len(decisive)
    stop = second if schema is OPEN else second - 1
    assert_duplicate_refused_at(tokenizer, compiler.compile_json_schema(schema), text, stop)


def closing_walk(grammar: xg.CompiledGrammar, rng: random.Random, steps: int) -> list[int]:
    """Tokens drawn from the reference mask, preferring short ones that end a value (a quote, a
    brace, a comma, a digit) so that short, repeated objects are tried often."""
    vocab = grammar.tokenizer_info.decoded_vocab

    def pick(allowed: list) -> int:
        closing = [t for t in allowed if len(vocab[t]) <= 3 and any(c in vocab[t] for c in b'",]}{1a')]
        return rng.choice(closing if closing and rng.random() < 0.85 else allowed)

    return sampled_walk(grammar, rng, steps, pick)


@pytest.mark.parametrize("name", sorted(SCHEMAS))
def test_walks_never_repeat_and_cached_masks_match_reference(tokenizer: str, compiler: xg.GrammarCompiler,
                                                              name: str) -> None:
    pytest.importorskip("jsonschema")
    schema = SCHEMAS[name]
    check_walks(tokenizer, compiler.compile_json_schema(schema), schema, closing_walk, 6, 60, INSTANCES)


def test_a_dead_end_prefix_is_never_offered() -> None:
    # Every (flag, key) pair but one is taken for keys of one character from {"k"}: after
    # '{"flag": true, "key": "k' the quote is forbidden (it would repeat an item) while more
    # characters stay allowed; after '{"flag": false, "key": "k' the quote is allowed.
    info = hf_tokenizer_info("llama3.1")
    grammar = xg.GrammarCompiler(info, cache_enabled=False).compile_json_schema(REQUIRED)
    quote = info.decoded_vocab.index(b'"')
    letter = info.decoded_vocab.index(b"x")
    for prefix, quote_allowed in [('[{"flag": true, "key": "k"}, {"flag": true, "key": "k', False),
                                  ('[{"flag": true, "key": "k"}, {"flag": false, "key": "k', True)]:
        matcher = xg.GrammarMatcher(grammar)
        assert matcher.accept_string(prefix)
        for fill in (matcher.fill_next_token_bitmask, matcher._fill_next_token_bitmask_reference):
            bitmask = np.zeros(xg.get_bitmask_shape(1, info.vocab_size), dtype=np.int32)
            fill(bitmask)
            assert in_mask(bitmask, quote) == quote_allowed, prefix
            assert in_mask(bitmask, letter), prefix


@pytest.mark.parametrize("items, why", [
    # The last member can end an item in one way: '{"on": tru' has one completion.
    ({"type": "object", "additionalProperties": False, "properties": {"on": {"type": "boolean"}}},
     "last member 'on'"),
    ({"type": "object", "additionalProperties": False,
      "properties": {"name": {"type": "string"}, "size": {"type": "string", "maxLength": 3}}}, "last member 'size'"),
    ({"type": "object", "additionalProperties": False, "required": ["x"], "properties": {}},
     "required name they do not declare"),
    ({"type": "object", "minProperties": 1, "properties": {"a": {"type": "string"}}}, "'minProperties'"),
])
def test_objects_that_can_run_out_of_values_are_refused(items: dict, why: str) -> None:
    schema = {"type": "array", "items": items, "uniqueItems": True}
    with pytest.raises(xg.UnsupportedSchemaError, match="uniqueItems") as raised:
        xg.GrammarCompiler(hf_tokenizer_info("llama3.1"), cache_enabled=False).compile_json_schema(schema)
    assert why in str(raised.value) and "at /:" in str(raised.value)


def test_layouts() -> None:
    compiler = xg.GrammarCompiler(hf_tokenizer_info("llama3.1"), cache_enabled=False)
    with pytest.raises(xg.UnsupportedSchemaError, match="indented layout"):
        compiler.compile_json_schema(OWNERS, indent=2)
    # The compact layouts spell the empty object and the closing brace exactly.
    for options, good, bad in [
        ({"any_whitespace": False}, '[{}, {"name": "a"}]', ['[{ }, {"name": "a"}]', '[{"name": "a" }]']),
        ({"separators": (",", ":")}, '[{},{"id":2,"name":"a"}]', ['[{},{"id":2, "name":"a"}]', "[{},{}]"]),
        ({"max_whitespace": 1}, '[{ }, {"name": "a" }]', ['[{  }]', '[{"name": "a"  }]']),
    ]:
        grammar = compiler.compile_json_schema(OWNERS, **options)
        assert accepts(grammar, good), options
        for text in bad:
            assert not accepts(grammar, text), (options, text)
