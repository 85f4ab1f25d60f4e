"""any_order: object members in any order, each declared key at most once and every required
one exactly once, with the real engine and the llama3.1 tokenizer."""

from __future__ import annotations

import itertools
import json
import random

import numpy as np
import pytest

import xg2_plugin as xg
from xg2_plugin import _native
from xg2_test_support import allowed_tokens, check_tokens_accepted, encode_continuation, hf_compiler, string_accepted

jsonschema = pytest.importorskip("jsonschema")

TOKENIZER = "llama3.1"

SCHEMA = {"type": "object",
          "properties": {"id": {"type": "integer"}, "name": {"type": "string"}, "tags": {"type": "array"},
                         "ok": {"type": "boolean"}},
          "required": ["id", "name"], "additionalProperties": False}


def compile_any_order(schema: dict, **options) -> xg.CompiledGrammar:
    return hf_compiler(TOKENIZER).compile_json_schema(schema, any_order=True, **options)


def members(pairs: list) -> str:
    return "{" + ", ".join(f"{json.dumps(k)}: {json.dumps(v)}" for k, v in pairs) + "}"


def test_every_order_of_valid_members_is_accepted_token_by_token() -> None:
    grammar = compile_any_order(SCHEMA)
    values = {"id": 1, "name": "x", "tags": [], "ok": True}
    for size in (2, 3, 4):
        for keys in itertools.permutations(values, size):
            if not {"id", "name"} <= set(keys):
                continue
            text = members([(k, values[k]) for k in keys])
            check_tokens_accepted(grammar, encode_continuation(TOKENIZER, text), mask_every=3)


@pytest.mark.parametrize("text", [
    '{"name": "x", "id": 1, "id": 2}',          # a declared key twice
    '{"name": "x", "ok": true, "ok": false, "id": 1}',
    '{"name": "x"}',                             # a required key missing
    '{"ok": true}',
    '{}',
    '{"id": 1, "name": "x", "other": 1}',        # undeclared, additionalProperties false
    '{"id": "1", "name": "x"}',                  # a value against its schema
])
def test_invalid_objects_are_rejected(text: str) -> None:
    assert not string_accepted(compile_any_order(SCHEMA), text)


def test_undeclared_members_anywhere_and_never_a_declared_name() -> None:
    schema = {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "string"}},
              "required": ["a"], "additionalProperties": {"type": "null"}}
    grammar = compile_any_order(schema)
    for text in ['{"x": null, "a": 1}', '{"b": "s", "y": null, "a": 2, "z": null}', '{"a": 1}']:
        check_tokens_accepted(grammar, encode_continuation(TOKENIZER, text))
    for text in ['{"x": null}', '{"a": 1, "a": 2}', '{"x": 1, "a": 1}', '{"a": 1, "b": "s", "b": "t"}']:
        assert not string_accepted(grammar, text)


def test_member_counts_of_a_closed_object() -> None:
    schema = {"type": "object", "properties": {"a": {}, "b": {}, "c": {}}, "minProperties": 2,
              "maxProperties": 2, "additionalProperties": False}
    grammar = compile_any_order(schema)
    for text in ['{"c": 1, "a": 2}', '{"b": 1, "c": 2}', '{"a": 1, "b": 2}']:
        assert string_accepted(grammar, text)
    for text in ['{}', '{"b": 1}', '{"c": 1, "b": 2, "a": 3}']:
        assert not string_accepted(grammar, text)


def test_required_beyond_max_properties_accepts_nothing_but_the_alternative() -> None:
    schema = {"anyOf": [{"type": "object", "properties": {"a": {}, "b": {}}, "required": ["a", "b"],
                         "maxProperties": 1, "additionalProperties": False}, {"type": "null"}]}
    grammar = compile_any_order(schema)
    assert string_accepted(grammar, "null")
    assert not string_accepted(grammar, '{"a": 1}') and not string_accepted(grammar, '{"a": 1, "b": 2}')


def test_nested_objects_and_fixed_formatting() -> None:
    schema = {"type": "object", "properties": {"inner": SCHEMA, "n": {"type": "integer"}}, "required": ["inner", "n"],
              "additionalProperties": False}
    grammar = compile_any_order(schema, separators=(",", ":"))
    check_tokens_accepted(grammar, encode_continuation(TOKENIZER, '{"n":1,"inner":{"ok":false,"name":"a","id":3}}'))
    assert not string_accepted(grammar, '{"n": 1, "inner": {"name": "a", "id": 3}}')


def test_more_declared_properties_than_the_bound_is_the_policy_error() -> None:
    schema = {"type": "object", "properties": {f"p{i}": {"type": "integer"} for i in range(9)}}
    with pytest.raises(_native.UnsupportedSchemaError, match="any_order"):
        compile_any_order(schema)
    with pytest.warns(UserWarning, match="any_order"):
        grammar = compile_any_order(schema, lenient=True)
    assert string_accepted(grammar, '{"p0": 1, "p3": 2}')  # lenient: the declared order
    eight = {"type": "object", "properties": {f"p{i}": {"type": "integer"} for i in range(8)}}
    assert string_accepted(compile_any_order(eight), '{"p7": 1, "p0": 2}')


def test_counts_next_to_undeclared_members_are_the_policy_error() -> None:
    schema = {"type": "object", "properties": {"a": {}, "b": {}}, "maxProperties": 2,
              "additionalProperties": {"type": "integer"}}
    with pytest.raises(_native.UnsupportedSchemaError, match="any_order"):
        compile_any_order(schema)


def test_default_keeps_the_declared_order() -> None:
    grammar = hf_compiler(TOKENIZER).compile_json_schema(SCHEMA)
    assert string_accepted(grammar, '{"id": 1, "name": "x"}')
    assert not string_accepted(grammar, '{"name": "x", "id": 1}')


def _no_duplicate_keys(pairs: list) -> dict:
    keys = [k for k, _ in pairs]
    assert len(keys) == len(set(keys)), f"duplicate key in {pairs}"
    return dict(pairs)


def test_random_walks_are_valid_objects_without_duplicate_keys() -> None:
    schema = {"type": "object", "properties": {"a": {"type": "integer", "minimum": 0, "maximum": 9}, "b": {"enum": ["x", "y"]},
                                               "c": {"type": "boolean"}, "d": {"type": "null"}},
              "required": ["b", "d"], "additionalProperties": False}
    grammar = compile_any_order(schema, any_whitespace=False)
    info = grammar.tokenizer_info
    validator = jsonschema.Draft202012Validator(schema)
    bitmask = np.full(xg.get_bitmask_shape(1, info.vocab_size), -1, dtype=np.int32)
    rng = random.Random(5)
    orders = set()
    for _ in range(25):
        matcher = xg.GrammarMatcher(grammar)
        stops = np.array(matcher.stop_token_ids)
        out = bytearray()
        for _ in range(200):
            allowed = np.flatnonzero(allowed_tokens(matcher, bitmask, info.vocab_size))
            if np.isin(allowed, stops).any():
                break
            token = int(allowed[rng.randrange(len(allowed))])
            assert matcher.accept_token(token)
            out += info.decoded_vocab[token]
        else:
            pytest.fail("walk did not finish")
        value = json.loads(out.decode(), object_pairs_hook=_no_duplicate_keys)
        assert validator.is_valid(value), out
        orders.add(tuple(json.loads(out.decode())))
    assert len(orders) > 3  # several member orders were drawn


def test_structural_tag_json_schema_any_order() -> None:
    tag = {"type": "structural_tag", "format": {"type": "json_schema", "json_schema": SCHEMA, "any_order": True}}
    grammar = hf_compiler(TOKENIZER).compile_structural_tag(tag)
    assert string_accepted(grammar, '{"name": "x", "id": 1}')
    assert not string_accepted(grammar, '{"name": "x", "id": 1, "id": 1}')
