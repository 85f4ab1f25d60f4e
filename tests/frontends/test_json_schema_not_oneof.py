"""`not` over string schemas and `oneOf` with overlapping branches (issue 38 part B).

`not S` on a string is the canonical-spelling strings outside S's automaton; `oneOf` whose
branches may overlap is the union of each branch with the complements of the branches it
may overlap. Languages are compared with the `jsonschema` library on enumerated instances
(string level, strict_mode=False), then compiled for a real tokenizer: random walks must
validate and hand-written counterexamples must be rejected.
"""

from __future__ import annotations

import pytest

import xg2_plugin as xg
from xg2_plugin import _native
from schema_language import assert_schema_language, schema_ebnf
from xg2_test_support import check_schema_walks_and_counterexamples, hf_compiler

Unsupported = _native.UnsupportedSchemaError


STRINGS = ["", "a", "b", "ab", "ba", "abc", "A1z", "a2Z", "xa", "zz", "a\"z", "é", "a\\b", "\n", "a/b", "aaaa"]
VALUES = [None, True, False, 0, 1, 2.5, -3, [], ["a"], {}, {"a": 1}, {"b": "x"}, {"a": 1, "b": 2}] + STRINGS


# Shapes of `not` that JSONSchemaBench uses (required, properties, enum, type, pattern,
# anyOf / allOf of those) and string languages around them.
@pytest.mark.parametrize("schema", [
    {"not": {"pattern": "^a"}},
    {"type": "string", "not": {"pattern": "b$"}},
    {"not": {"type": "string", "pattern": "^a", "minLength": 2}},
    {"not": {"type": "string", "maxLength": 1}},
    {"type": "string", "pattern": "a", "not": {"pattern": "^a"}},
    {"type": "string", "minLength": 1, "not": {"anyOf": [{"pattern": "^a"}, {"enum": ["b", "zz"]}]}},
    {"type": "string", "not": {"allOf": [{"pattern": "a"}, {"pattern": "b"}]}},
    {"type": "string", "not": {"not": {"pattern": "^[a-c]+$"}}},
    {"not": {"anyOf": [{"pattern": "^a"}, {"const": "xa"}]}},
    {"enum": ["a", "ab", "xa", 1, None], "not": {"pattern": "^a"}},
    {"const": "ab", "not": {"type": "string", "maxLength": 1}},
    {"not": {"required": ["a"]}},
    {"type": "object", "not": {"required": ["a", "b"]}},
    {"not": {"properties": {"a": {"pattern": "^x"}}, "required": ["a"]}},
    {"type": "object", "properties": {"b": {"type": "string", "not": {"pattern": "y"}}}},
])
def test_not_is_exact(schema):
    assert_schema_language(schema, VALUES)


@pytest.mark.parametrize("schema", [
    {"oneOf": [{"required": ["a"]}, {"required": ["b"]}]},
    {"type": "object", "oneOf": [{"required": ["a"]}, {"required": ["b"]}, {"properties": {"a": {"const": 1}}}]},
    {"oneOf": [{"type": "string"}, {"minimum": 2}, {"maximum": 5}]},
    {"oneOf": [{"pattern": "a"}, {"pattern": "b"}]},
    {"oneOf": [{"type": "string", "maxLength": 2}, {"pattern": "^a"}, {"const": "abc"}]},
    {"oneOf": [{"properties": {"a": {"type": "string"}}}, {"required": ["b"]}]},
    {"oneOf": [{"type": "array"}, {"type": "array", "maxItems": 0}, {"enum": ["a", 1]}, {"type": ["string", "null"]}]},
    {"type": "object", "properties": {"v": {"oneOf": [{"type": "number"}, {"minimum": 0}]}}},
])
def test_overlapping_one_of_is_exact(schema):
    assert_schema_language(schema, VALUES + [3, 4, 6, {"v": 1}, {"v": -1}, {"v": "s"}])


ARRAYS = [[], [1], ["a"], [1, "a"], ["a", "b"], [None], [1, 2, 3], ["abc"], [[1]], [[]], [{}], [{"a": 1}],
          [{"a": "x"}], {"a": [1]}, {"a": ["x"]}, {"a": []}, {"a": None}]


# `items` is complemented as `contains` the items' complement (some item fails), and a oneOf
# whose branches are provably disjoint as the complement of their anyOf.
@pytest.mark.parametrize("schema", [
    {"not": {"items": {"type": "number"}}},
    {"not": {"type": "array", "items": {"type": "string", "maxLength": 1}, "minItems": 1}},
    {"oneOf": [{"type": "array", "items": {"type": "string"}}, {"type": "array", "maxItems": 1}]},
    {"oneOf": [{"type": "array", "items": {"type": "string"}}, {"type": "array", "items": {"maxLength": 1}}]},
    {"oneOf": [{"items": {"type": "string"}}, {"type": "array", "minItems": 2}]},
    {"oneOf": [{"items": {"items": {"type": "number"}}}, {"items": {"type": "array", "maxItems": 0}}]},
    {"oneOf": [{"properties": {"a": {"items": {"type": "string"}}}}, {"required": ["a"]}]},
    {"oneOf": [{"items": {"properties": {"a": {"type": "string"}}}}, {"items": {"required": ["a"]}}]},
    {"oneOf": [{"required": ["a"]}, {"oneOf": [{"type": "string"}, {"type": "null"}]}, {"type": ["string", "object"]}]},
    {"not": {"oneOf": [{"type": "string"}, {"type": "array", "maxItems": 1}]}},
    {"oneOf": [{"properties": {"a": {"oneOf": [{"type": "array"}, {"type": "null"}]}}}, {"required": ["a"]}]},
    {"oneOf": [{"properties": {"a": {"oneOf": [{"type": "object", "required": ["x"]}, {"type": "array"}]}}}, {"required": ["a"]}]},
])
def test_items_and_disjoint_one_of_complements_are_exact(schema):
    assert_schema_language(schema, VALUES + ARRAYS)


# Arrays are disjoint when their item counts share no length, or when both need an item and
# their item schemas are disjoint: such a oneOf needs no complement (integer items have none;
# the oracle here does not assert formats, so the string items carry none).
@pytest.mark.parametrize("schema", [
    {"oneOf": [{"type": "array", "items": {"type": "integer"}, "maxItems": 1},
               {"type": "array", "items": {"type": "integer"}, "minItems": 2}]},
    {"oneOf": [{"type": "array", "items": {"type": "integer"}, "minItems": 1},
               {"type": "array", "items": {"type": "string"}, "minItems": 1}]},
    {"oneOf": [{"type": "array", "items": {"type": "integer"}},
               {"type": "array", "items": {"type": "string"}}]},
    {"type": "object", "required": ["from"],
     "oneOf": [{"properties": {"from": {"type": "array", "items": {"type": "integer"}, "maxItems": 1}}},
               {"properties": {"from": {"type": "array", "items": {"type": "integer"}, "minItems": 2}},
                "required": ["sender"]}]},
])
def test_arrays_disjoint_by_counts_or_items_are_exact(schema):
    assert_schema_language(schema, VALUES + ARRAYS + [[1, 2], [1, "a@b.c"], ["a@b.c"], {"from": [1]}, {"from": [1, 2]},
                                                    {"from": [1, 2], "sender": 1}, {"from": [], "sender": 1}])


def test_arrays_overlapping_on_one_length_keep_the_policy_error():
    # Lengths 1..2 and 2..3 overlap at 2, and items of a multipleOf have no complement.
    with pytest.raises(Unsupported, match="'oneOf' at /"):
        schema_ebnf({"oneOf": [{"type": "array", "items": {"multipleOf": 2}, "minItems": 1, "maxItems": 2},
                           {"type": "array", "items": {"multipleOf": 2}, "minItems": 2, "maxItems": 3}]})


@pytest.mark.parametrize("schema,keyword", [
    ({"not": {"oneOf": [{"type": "string"}, {"maxLength": 1}]}}, "not"),  # overlapping oneOf: no complement
    # `required` alone holds for every array: the branches overlap, so no complement.
    ({"oneOf": [{"properties": {"a": {"oneOf": [{"required": ["x"]}, {"type": "array"}]}}}, {"required": ["a"]}]},
     "oneOf"),
    ({"not": {"items": [{"type": "string"}]}}, "not"),  # tuple items: no complement
    ({"not": {"items": {"multipleOf": 2}}}, "not"),  # items without a complement
    ({"not": {"multipleOf": 2}}, "not"),  # multiples have no complement
    ({"type": "string", "not": {"format": "email"}}, "not"),  # format languages: no complement
    ({"oneOf": [{"multipleOf": 3}, {"minimum": 1}]}, "oneOf"),
    ({"oneOf": [{"format": "email"}, {"maxLength": 3}]}, "oneOf"),
])
def test_forms_without_complement_stay_the_policy_error(schema, keyword):
    with pytest.raises(Unsupported, match=f"'{keyword}' at /"):
        schema_ebnf(schema)


def test_one_of_complement_size_is_bounded():
    # Each complement of `required` with 20,000 names writes about 120,000 JSON nodes.
    branches = [{"required": [f"k{b}_{i}" for i in range(20000)]} for b in range(3)]
    with pytest.raises(xg.ResourceLimitError, match="'oneOf' at /"):
        schema_ebnf({"oneOf": branches})


ENGINE_CASES = [
    ({"type": "object", "properties": {"id": {"type": "string", "maxLength": 8, "not": {"pattern": "^tmp"}}},
      "required": ["id"], "additionalProperties": False},
     [{"id": "tmp"}, {"id": "tmpx"}, {"id": "abcdefghi"}, {}]),
    ({"oneOf": [{"type": "string", "maxLength": 3}, {"type": "string", "pattern": "^ab"}]},
     ["abc", "ab", "abcdef"[:2], 1]),
    ({"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "boolean"}},
      "oneOf": [{"required": ["a"]}, {"required": ["b"]}], "additionalProperties": False},
     [{"a": 1, "b": True}, {}]),
    ({"oneOf": [{"type": "array", "items": {"type": "string", "maxLength": 2}, "maxItems": 3},
                {"type": "array", "items": {"enum": ["ab", "cd", 7]}, "maxItems": 3}]},
     [["ab"], ["cd", "ab"], [], ["abc"], [7, "abc"]]),
    ({"type": "object", "properties": {"tags": {"oneOf": [{"type": "array", "items": {"type": "string"}},
                                                         {"oneOf": [{"type": "null"}, {"type": "string"}]}]}},
      "required": ["tags"], "additionalProperties": False},
     [{"tags": 1}, {"tags": [1]}, {}]),
    ({"type": "object", "required": ["from"], "additionalProperties": False,
      "properties": {"sender": {"type": "string"}, "from": {"type": "array", "items": {"type": "integer"}}},
      "oneOf": [{"properties": {"from": {"maxItems": 1}}},
                {"properties": {"from": {"minItems": 2}}, "required": ["sender"]}]},
     [{"from": [1, 2]}, {"from": [], "sender": "x", "extra": 1}, {"sender": "x"}]),
]


@pytest.mark.parametrize("case", range(len(ENGINE_CASES)))
def test_engine_walks_validate_and_counterexamples_are_rejected(case):
    schema, invalid = ENGINE_CASES[case]
    grammar = hf_compiler("llama3.1").compile_json_schema(schema, any_whitespace=False)
    check_schema_walks_and_counterexamples(grammar, schema, invalid, seed=case, walks=6)
