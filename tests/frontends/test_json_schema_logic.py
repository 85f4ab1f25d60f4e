"""JSON Schema logic keywords: if / then / else, not, contains / minContains / maxContains,
uniqueItems over listed domains, and the oneOf disjointness decision.

Languages are compared with the `jsonschema` library on every instance of a small
enumerated space (strict_mode=False, so that the grammar's language is the schema's up to
key order), then checked with the real engine and a real tokenizer: valid instances accepted
token by token, invalid ones rejected, random walks validated.
"""

from __future__ import annotations

import itertools
import json
import random

import numpy as np
import pytest

import xg2_plugin as xg
from xg2_plugin import _native
from xg2_plugin.testing import ebnf_accepts
from schema_language import assert_schema_language, schema_ebnf, schema_is_valid
from xg2_test_support import allowed_tokens, check_tokens_accepted, encode_continuation, hf_compiler, string_accepted

Unsupported = _native.UnsupportedSchemaError


SCALARS = [None, True, False, 0, 1, 2, -1, 1.5, "", "a", "b", "ab", "A"]


def arrays_over(values, longest):
    for n in range(longest + 1):
        yield from (list(p) for p in itertools.product(values, repeat=n))


# --------------------------------------------------------------------------------------
# not: complements

@pytest.mark.parametrize("negated", [
    {"const": "a"}, {"enum": ["a", "b", 1, None]}, {"const": 1}, {"enum": [0, 1, 2]}, {"const": True},
    {"enum": [1.5, -1]}, {"type": "string"}, {"type": ["null", "number"]}, {"minimum": 1}, {"exclusiveMaximum": 1},
    {"minLength": 1}, {"maxLength": 1}, {"not": {"type": "string"}}, {"anyOf": [{"const": "a"}, {"type": "number", "minimum": 2}]},
    {"allOf": [{"type": "string"}, {"maxLength": 1}]},
])
def test_not_is_the_exact_complement(negated):
    assert_schema_language({"not": negated}, SCALARS + [[], {}, [1], {"a": 1}])


def test_not_const_string_excludes_every_spelling():
    ebnf = schema_ebnf({"type": "string", "not": {"enum": ["a/b", "é", "\n"]}})
    for spelling in ['"a/b"', '"a\\/b"', '"\\u0061/b"', '"\\u00e9"', '"\\u00E9"', '"é"', '"\\n"', '"\\u000a"']:
        assert not ebnf_accepts(ebnf, spelling), spelling
    for other in ['"a/c"', '""', '"ab"', '"\\u00e8"', '"\\t"']:
        assert ebnf_accepts(ebnf, other), other


def test_not_next_to_enum_filters_the_values():
    assert_schema_language({"enum": ["a", "b", 1, 2], "not": {"enum": ["b", 2.0]}}, SCALARS)


def test_not_of_object_constants_stays_the_policy_error():
    with pytest.raises(Unsupported, match="'not' at /"):
        schema_ebnf({"not": {"const": {"a": 1}}})


# --------------------------------------------------------------------------------------
# if / then / else

IF_CASES = {
    "const_then": {"type": "object", "properties": {"kind": {"type": "string"}, "x": {}},
                   "if": {"properties": {"kind": {"const": "a"}}}, "then": {"required": ["x"]}},
    "enum_then_else": {"type": "object", "properties": {"kind": {"enum": ["a", "b", "c"]}, "x": {}},
                       "if": {"properties": {"kind": {"enum": ["a", "b"]}}, "required": ["kind"]},
                       "then": {"properties": {"x": {"type": "integer"}}},
                       "else": {"properties": {"x": {"type": "string"}}}},
    "type_condition": {"properties": {"kind": {}, "x": {}},
                       "if": {"properties": {"kind": {"type": "string"}}, "required": ["kind"]},
                       "then": {"required": ["x"]}, "else": {"properties": {"x": False}}},
    "scalar_if": {"if": {"type": "number"}, "then": {"minimum": 1}, "else": {"type": "string"}},
    "not_if": {"if": {"not": {"const": 0}}, "then": {"type": "integer"}, "else": {"const": 0}},
    "bounds_if": {"type": "integer", "if": {"maximum": 1}, "then": {"minimum": 0}, "else": {"multipleOf": 2}},
}


def _objects():
    keys = ["kind", "x"]
    values = [None, "a", "b", "c", 1, 2, 1.5]
    for present in itertools.product([False, True], repeat=2):
        names = [k for k, p in zip(keys, present) if p]
        for chosen in itertools.product(values, repeat=len(names)):
            yield dict(zip(names, chosen))


@pytest.mark.parametrize("name", sorted(IF_CASES))
def test_if_then_else_is_exact(name):
    instances = list(_objects()) + SCALARS + [-2, 3, 4, []]
    assert_schema_language(IF_CASES[name], instances)


def test_if_with_an_undecidable_condition_is_the_policy_error():
    with pytest.raises(Unsupported, match="'if' at /"):
        schema_ebnf({"if": {"format": "email"}, "then": {"minLength": 2}})
    _, warnings = _native._json_schema_to_ebnf(json.dumps({"if": {"format": "email"}, "then": {"minLength": 2}}),
                                               lenient=True)
    assert any("'if'" in w for w in warnings)


# --------------------------------------------------------------------------------------
# contains / minContains / maxContains

CONTAINS_CASES = {
    "contains_string": {"type": "array", "contains": {"type": "string"}},
    "contains_const_items": {"type": "array", "items": {"type": ["integer", "string"]}, "contains": {"const": 1}},
    "min_max_contains": {"type": "array", "contains": {"enum": [1, "a"]}, "minContains": 2, "maxContains": 3},
    "with_item_bounds": {"type": "array", "contains": {"type": "number", "minimum": 1}, "minItems": 2, "maxItems": 3},
    "min_contains_zero": {"type": "array", "contains": {"type": "null"}, "minContains": 0, "maxContains": 1},
    "contains_false": {"contains": False},
}


@pytest.mark.parametrize("name", sorted(CONTAINS_CASES))
def test_contains_is_exact(name):
    assert_schema_language(CONTAINS_CASES[name], list(arrays_over([1, 2, "a", None], 4)) + [1, "a", {}])


def test_contains_draft7_ignores_min_max_contains():
    schema = {"$schema": "http://json-schema.org/draft-07/schema#", "type": "array", "contains": {"const": 1},
              "maxContains": 1}
    ebnf = schema_ebnf(schema, strict_mode=False)
    assert ebnf_accepts(ebnf, "[1, 1]") and not ebnf_accepts(ebnf, "[2]")


def test_contains_forms_without_complement_are_the_policy_error():
    with pytest.raises(Unsupported, match="'contains' at /"):
        schema_ebnf({"type": "array", "contains": {"multipleOf": 3}})  # multiples have no complement
    with pytest.raises(Unsupported, match="'contains' at /"):
        schema_ebnf({"type": "array", "contains": {"type": "string", "format": "email"}})
    with pytest.raises(Unsupported, match="'contains' at /"):
        schema_ebnf({"type": "array", "prefixItems": [{}], "contains": {"const": 1}})


# --------------------------------------------------------------------------------------
# uniqueItems

UNIQUE_CASES = {
    "enum": {"type": "array", "items": {"enum": [1, "a", None]}, "uniqueItems": True},
    "enum_bounds": {"type": "array", "items": {"enum": [1, 2, "a"]}, "uniqueItems": True, "minItems": 1, "maxItems": 2},
    "boolean": {"type": "array", "items": {"type": "boolean"}, "uniqueItems": True},
    "equal_numbers": {"type": "array", "items": {"enum": [1, 1.0, 2]}, "uniqueItems": True},
    "typed_enum": {"type": "array", "items": {"type": "integer", "enum": [1, "a", 2]}, "uniqueItems": True},
    "trivial": {"type": "array", "items": {"type": "string"}, "uniqueItems": True, "maxItems": 1},
}


@pytest.mark.parametrize("name", sorted(UNIQUE_CASES))
def test_unique_items_is_exact(name):
    instances = list(arrays_over([1, 2, "a", None, True, False], 4)) + [1, "a"]
    assert_schema_language(UNIQUE_CASES[name], instances)


def test_unique_items_of_an_enum_value_list():
    schema = {"enum": [[1, 2], [1, 1], "x"], "uniqueItems": True}
    assert_schema_language(schema, [[1, 2], [1, 1], "x", [2, 1]])


@pytest.mark.parametrize("schema", [
    # Object items whose last member can end only one way (a boolean) stay refused.
    {"type": "array", "uniqueItems": True, "items": {"type": "object", "required": ["on"],
                                                     "properties": {"on": {"type": "boolean"}},
                                                     "additionalProperties": False}},
    # More than 8 listed values convert when they are scalars; listed arrays beyond 8 do not
    # (their spellings carry whitespace loops, so the item automaton is not finite).
    {"type": "array", "items": {"enum": [[i] for i in range(9)]}, "uniqueItems": True},
    {"type": "array", "uniqueItems": True},
])
def test_unique_items_outside_small_domains_is_the_policy_error(schema):
    with pytest.raises(Unsupported, match="'uniqueItems' at /"):
        schema_ebnf(schema)


# --------------------------------------------------------------------------------------
# oneOf disjointness

DISJOINT_ONE_OF = {
    "discriminator_not_required_in_other": {"oneOf": [
        {"type": "object", "properties": {"kind": {"const": "a"}, "x": {"type": "integer"}}, "required": ["kind"]},
        {"type": "object", "properties": {"kind": {"const": "b"}, "y": {"type": "string"}}, "required": ["kind", "y"]}]},
    "after_ref_and_allOf": {"$defs": {"base": {"type": "object", "properties": {"id": {"type": "integer"}}}},
                            "oneOf": [{"allOf": [{"$ref": "#/$defs/base"}, {"type": "string"}]},
                                      {"$ref": "#/$defs/base"}]},
    "nested_alternatives": {"oneOf": [{"anyOf": [{"type": "string"}, {"type": "null"}]}, {"type": "integer"}]},
    "with_sibling_type": {"type": "object", "properties": {"a": {}, "b": {}},
                          "oneOf": [{"required": ["a"], "properties": {"a": {"type": "string"}}},
                                    {"required": ["a"], "properties": {"a": {"type": "integer"}}}]},
}


@pytest.mark.parametrize("name", sorted(DISJOINT_ONE_OF))
def test_disjoint_one_of_is_decided_and_exact(name):
    schema = DISJOINT_ONE_OF[name]
    instances = list(_objects()) + SCALARS + [{"kind": "a", "y": "s"}, {"kind": "b", "y": "s"}, {"a": "s"},
                                              {"a": 1}, {"a": 1.5}, {"id": 1}, {"id": "x"}]
    assert_schema_language(schema, instances)


def test_strict_mode_generation_decides_required_members():
    # Non-strict, {"a": 1, "b": 1} matches both branches; strict mode generates branch 0 with
    # member a only and branch 1 with member b only, so no generated value matches both.
    schema = {"oneOf": [{"type": "object", "properties": {"a": {}}, "required": ["a"]},
                        {"type": "object", "properties": {"b": {}}, "required": ["b"]}]}
    # Non-strict, the branches overlap: each excludes the other (test_json_schema_not_oneof.py).
    assert_schema_language(schema, [{"a": 1}, {"b": 1}, {"a": 1, "b": 1}, {}])
    ebnf = schema_ebnf(schema, strict_mode=True)
    assert ebnf_accepts(ebnf, '{"a": 1}') and ebnf_accepts(ebnf, '{"b": 1}')
    assert not ebnf_accepts(ebnf, '{"a": 1, "b": 1}')
    # additionalProperties false closes the objects in either mode.
    closed = {"oneOf": [{**branch, "additionalProperties": False} for branch in schema["oneOf"]]}
    assert_schema_language(closed, [{"a": 1}, {"b": 1}, {"a": 1, "b": 1}, {}])


@pytest.mark.parametrize("schema", [
    {"oneOf": [{"multipleOf": 3}, {"minimum": 1}]},  # multiples have no complement
    {"oneOf": [{"type": "string", "format": "email"}, {"maxLength": 3}]},  # nor format languages
])
def test_overlapping_one_of_without_complement_stays_the_policy_error(schema):
    with pytest.raises(Unsupported, match="'oneOf' at /"):
        schema_ebnf(schema)


# --------------------------------------------------------------------------------------
# Real engine, real tokenizer

ENGINE_CASES = [
    (IF_CASES["enum_then_else"], [{"kind": "a", "x": 1}, {"kind": "c", "x": "s"}, {}],
     [{"kind": "a", "x": "s"}, {"kind": "c", "x": 1}]),
    ({**CONTAINS_CASES["min_max_contains"], "items": {"enum": [1, 2, "a", "b"]}}, [[1, "a"], [2, 1, "b", "a", 1]],
     [[1], [1, 1, 1, 1], [], [1, 1, 3]]),
    (UNIQUE_CASES["enum"], [[], [1, "a", None], ["a"]], [[1, 1], [None, "a", None]]),
    (DISJOINT_ONE_OF["discriminator_not_required_in_other"], [{"kind": "a", "x": 3}, {"kind": "b", "y": "s"}],
     [{"kind": "b"}, {"kind": "c"}]),
    ({"type": "object", "properties": {"mode": {"type": "string", "maxLength": 6}, "n": {"type": "integer", "maximum": 99}},
      "required": ["mode"],
      "if": {"properties": {"mode": {"const": "fixed"}}}, "then": {"required": ["n"]}},
     [{"mode": "fixed", "n": 2}, {"mode": "free"}, {"mode": "fixe"}], [{"mode": "fixed"}]),
]


@pytest.mark.parametrize("case", range(len(ENGINE_CASES)))
def test_engine_tokens_and_random_walks(case):
    schema, valid, invalid = ENGINE_CASES[case]
    compiler = hf_compiler("llama3.1")
    grammar = compiler.compile_json_schema(schema, any_whitespace=False)
    for value in valid:
        assert schema_is_valid(schema, value)
        check_tokens_accepted(grammar, encode_continuation("llama3.1", json.dumps(value)))
    for value in invalid:
        assert not schema_is_valid(schema, value)
        assert not string_accepted(grammar, json.dumps(value))
    info = grammar.tokenizer_info
    vocab = info.decoded_vocab
    bitmask = np.full(xg.get_bitmask_shape(1, info.vocab_size), -1, dtype=np.int32)
    rng = random.Random(case)
    finished = 0
    for _ in range(2):
        matcher = xg.GrammarMatcher(grammar)
        stops = set(matcher.stop_token_ids)
        out = bytearray()
        for _ in range(60):
            allowed = np.flatnonzero(allowed_tokens(matcher, bitmask, info.vocab_size))
            assert len(allowed) > 0, "empty mask before termination"
            allowed_stops = [t for t in stops if t in set(allowed.tolist())] if len(allowed) < 64 else \
                [t for t in stops if allowed_tokens_has(allowed, t)]
            if allowed_stops and rng.random() < 0.7:
                assert matcher.accept_token(allowed_stops[0])
                value = json.loads(out.decode("utf-8"))
                assert schema_is_valid(schema, value), out
                finished += 1
                break
            # Half of the steps take a one-byte token so that strings end.
            text = [t for t in allowed.tolist() if t not in stops] if len(allowed) < 4096 else None
            token = int(rng.choice(text)) if text else int(allowed[rng.randrange(len(allowed))])
            if token in stops:
                continue
            if rng.random() < 0.5:
                short = [t for t in (text or []) if len(vocab[t]) == 1]
                if short:
                    token = rng.choice(short)
            assert matcher.accept_token(token), f"token {token} in mask but rejected"
            out += vocab[token]
    assert finished > 0


def allowed_tokens_has(allowed, token):
    index = np.searchsorted(allowed, token)
    return index < len(allowed) and allowed[index] == token
