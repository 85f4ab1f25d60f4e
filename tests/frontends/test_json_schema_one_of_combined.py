"""oneOf / anyOf combined with other keywords (issue 38 coverage): alternative groups pruned by
JSON type before they are distributed, the complement of `integer` (the non-integral numbers),
and disjointness decided alternative by alternative when a branch holds its own oneOf.

Languages are compared with the `jsonschema` library on enumerated instances (string level,
strict_mode=False); then compiled for a real tokenizer: random walks must validate and
hand-written counterexamples must be rejected. The corpus schemas that convert through these
constructions are walked in test_json_schema_corpus.py.
"""

from __future__ import annotations


import pytest

import xg2_plugin as xg
from xg2_plugin import _native
from schema_language import assert_schema_language, schema_ebnf
from xg2_test_support import check_schema_walks_and_counterexamples, hf_compiler

Unsupported = _native.UnsupportedSchemaError

# Numbers in their json.dumps spelling; no exponent forms (the grammars write one spelling
# of each value, without exponent where a number is bounded or non-integral).
NUMBERS = [0, 1, -1, 2, 7, 10, 123, 0.5, -0.5, 2.5, -3.25, 0.001, 10.75, 99.9]
VALUES = [None, True, False, "", "a", "1.5", [], [1], [0.5], [1, 2], [1, 0.5], [0.5, 1, 2], [1, 2, 3], {}, {"a": 1},
          {"a": 1.5}, {"a": "x"}] + NUMBERS


# The complement of `integer` is every other type and the non-integral numbers.
@pytest.mark.parametrize("schema", [
    {"not": {"type": "integer"}},
    {"type": "number", "not": {"type": "integer"}},
    {"type": "number", "minimum": -1, "maximum": 3, "not": {"type": "integer"}},
    {"type": "number", "exclusiveMinimum": 0, "not": {"type": "integer"}},
    {"type": "number", "multipleOf": 0.25, "not": {"type": "integer"}},
    {"not": {"type": ["integer", "string"]}},
    {"not": {"type": "integer", "minimum": 2}},
    {"oneOf": [{"type": "integer"}, {"minimum": 1}]},
    {"oneOf": [{"type": "integer"}, {"type": "number", "maximum": 5}]},
    {"oneOf": [{"properties": {"a": {"type": "integer"}}}, {"required": ["a"]}]},
    {"type": "array", "oneOf": [{"items": {"type": "integer"}}, {"maxItems": 1}]},
    {"not": {"items": {"type": "integer"}}},
    {"type": "array", "contains": {"type": "integer"}},
    {"oneOf": [{"type": "array", "items": {"type": "integer"}, "minItems": 1, "maxItems": 2},
               {"type": "array", "items": {"type": "integer"}, "minItems": 2, "maxItems": 3}]},
])
def test_integer_complement_is_exact(schema):
    assert_schema_language(schema, VALUES, both_sides=True)


def test_integer_and_its_complement_accept_nothing():
    with pytest.raises(_native.SchemaError, match="accepts no JSON value"):
        schema_ebnf({"type": "integer", "not": {"type": "integer"}})


def test_non_integral_numbers_have_one_spelling_without_exponent():
    ebnf = schema_ebnf({"type": "number", "not": {"type": "integer"}})
    assert "[eE]" not in ebnf and "json_number" not in ebnf, ebnf
    assert_schema_language({"type": "number", "not": {"type": "integer"}}, [0.5, 1, 1.25, -7, -7.125], both_sides=True)


# Groups of alternatives next to a base with a type: branches of another type are dropped
# before the product is counted (if/then/else chains over one discriminator).
@pytest.mark.parametrize("schema", [
    {"type": "string", "allOf": [{"anyOf": [{"type": "number"}, {"minLength": 2}]},
                                 {"oneOf": [{"type": "null"}, {"maxLength": 3}, {"type": "object"}]}]},
    {"allOf": [{"anyOf": [{"type": "string"}, {"type": "number"}]}, {"anyOf": [{"type": "null"}, {"type": "number"}]}]},
    {"allOf": [{"anyOf": [{"type": "string", "minLength": 1}, {"type": "integer"}]},
               {"oneOf": [{"type": "number", "maximum": 2}, {"type": "integer", "minimum": 1}, {"maxLength": 2}]}]},
])
def test_type_pruned_alternatives_are_exact(schema):
    assert_schema_language(schema, VALUES + ["ab", "abcd", 3], both_sides=True)


def _discriminated_chain(count: int) -> dict:
    kinds = [f"k{i}" for i in range(count)]
    return {"type": "object", "required": ["kind"],
            "properties": {"kind": {"type": "string", "enum": kinds}},
            "allOf": [{"if": {"properties": {"kind": {"const": kind}}},
                       "then": {"properties": {f"v{i}": {"type": "integer"}}, "required": [f"v{i}"]}}
                      for i, kind in enumerate(kinds)]}


def test_if_then_chain_over_one_discriminator_converts_exactly():
    # Ten if/then pairs: 2^10 combined branches before pruning (the limit is 256); each
    # complement of `kind: const` is a disjunct per type, and only the string one is left.
    schema = _discriminated_chain(10)
    instances = [{"kind": "k3", "v3": 1}, {"kind": "k3", "v3": 1.5}, {"kind": "k3"}, {"kind": "k9", "v9": 0},
                 {"kind": "k9", "v3": 0}, {"kind": "x", "v1": 1}, {"v1": 1}, {"kind": "k0", "v0": -2, "v1": 1}]
    assert_schema_language(schema, instances, both_sides=True)


def test_distribution_past_the_bound_stays_a_typed_refusal():
    # Nine groups of two alternatives of one type each: 512 combinations that no type rules out.
    groups = [{"anyOf": [{"required": [f"a{i}"]}, {"required": [f"b{i}"]}]} for i in range(9)]
    with pytest.raises(Unsupported, match=r"'anyOf' / 'oneOf' at /: more than 256 combined branches"):
        schema_ebnf({"type": "object", "allOf": groups})


# A branch that is itself a oneOf next to other keywords is compared alternative by
# alternative: each one requires a member whose value the other branch forbids.
@pytest.mark.parametrize("schema", [
    {"oneOf": [{"type": "object", "oneOf": [{"required": ["a", "t"], "properties": {"t": {"const": "x"}}},
                                            {"required": ["b", "t"], "properties": {"t": {"const": "y"}}}]},
               {"type": "object", "additionalProperties": {"type": "boolean"}, "maxProperties": 1}]},
    {"oneOf": [{"type": "object", "anyOf": [{"required": ["t"], "properties": {"t": {"type": "string"}}},
                                            {"required": ["u"], "properties": {"u": {"type": "string"}}}]},
               {"type": "object", "additionalProperties": {"type": "number"}}]},
])
def test_branch_alternatives_decided_one_by_one(schema):
    # Keys in the order the grammar writes them (declared properties first).
    instances = [{}, {"t": "x", "a": 1}, {"t": "y", "b": 1}, {"t": "x"}, {"a": True}, {"t": 1}, {"u": "s"},
                 {"t": "s", "u": 1}, {"q": 2}, {"t": True}, 1]
    assert_schema_language(schema, instances, both_sides=True)


# Member and item schemas that accept every value assert nothing, so they add nothing to a
# complement (package schemas spell open objects out as additionalProperties true).
@pytest.mark.parametrize("schema", [
    {"oneOf": [{"properties": {"a": {"type": "string"}}, "required": ["a"], "additionalProperties": True},
               {"required": ["b"], "additionalProperties": {}}]},
    {"not": {"type": "array", "additionalItems": True, "uniqueItems": False, "minItems": 1}},
    {"not": {"type": "object", "propertyNames": {"description": "any"}, "patternProperties": {"^x": True}}},
])
def test_trivial_member_schemas_complement_to_nothing(schema):
    assert_schema_language(schema, VALUES + [{"b": 1}, {"a": "s", "b": 1}, {"b": 1, "a": "s"}, {"x": 1}],
                           both_sides=True)


def test_member_schemas_that_assert_keep_the_policy_error():
    with pytest.raises(Unsupported, match="'oneOf' at /"):
        schema_ebnf({"oneOf": [{"properties": {"a": {"type": "string"}}, "required": ["a"]},
                               {"required": ["b"], "additionalProperties": {"minLength": 2}}]}, strict_mode=False)


ENGINE_CASES = [
    ({"type": "object", "additionalProperties": False, "required": ["x"],
      "properties": {"x": {"oneOf": [{"type": "integer"}, {"type": "number", "minimum": 0, "maximum": 10}]}}},
     [{"x": 5}, {"x": "a"}, {}]),
    (_discriminated_chain(9) | {"additionalProperties": False,
                                "properties": {"kind": {"enum": [f"k{i}" for i in range(9)]}} |
                                {f"v{i}": {"type": "integer"} for i in range(9)}},
     [{"kind": "k1"}, {"kind": "k2", "v2": 0.5}, {"kind": "zz"}]),
    ({"type": "object", "additionalProperties": False, "properties": {"v": {"not": {"type": "integer"}}}},
     [{"v": 3}, {"v": -10}]),
]


@pytest.mark.parametrize("case", range(len(ENGINE_CASES)))
def test_engine_walks_validate_and_counterexamples_are_rejected(case):
    schema, invalid = ENGINE_CASES[case]
    grammar = hf_compiler("llama3.1").compile_json_schema(schema, any_whitespace=False)
    check_schema_walks_and_counterexamples(grammar, schema, invalid, seed=case, walks=6)
