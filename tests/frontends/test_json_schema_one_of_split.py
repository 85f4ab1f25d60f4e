"""`oneOf` decided per JSON type, by string languages, by patternProperties, and with
complements built inside closed object branches (issue 38).

Three decisions that make more `oneOf`s exact without complements, and one complement:
- split by JSON type: within one type, a branch whose keywords all concern other types
  accepts every value, so two such branches rule the type out and the rest is decided with
  the type known (object branches without `type`, the common hand-written form);
- two string schemas are disjoint when their automata (pattern, lengths, listed strings)
  share no string;
- a member one branch requires is forbidden by the other when it is undeclared there, no
  pattern of its patternProperties matches it and additionalProperties is false;
- when branch B has no complement (an `integer` member, `additionalProperties`), the
  objects of a closed branch A that fail B are still a schema: a name B requires absent, or
  a member of A present whose value B's schema for it rejects (B forbids it, disjoint
  schemas, or the complement of that member schema alone); arrays likewise when the item
  schemas are disjoint (a non-empty array of A fails B).
Each language is compared with the `jsonschema` library on instances (strict_mode=False),
then compiled for a real tokenizer: random walks must validate, counterexamples must be
rejected.
"""

from __future__ import annotations

import pytest

from xg2_plugin import _native
from schema_language import assert_schema_language, schema_ebnf
from xg2_test_support import check_schema_walks_and_counterexamples, hf_compiler

Unsupported = _native.UnsupportedSchemaError


SCALARS = [None, True, False, 0, 1, -2, 2.5, "", "a", "b", "ab", [], [1], ["a", "b"], {}]

# Tagged unions without `type`: the branches overlap on every non-object (and the `code`
# integer has no complement, so the direct construction was refused).
TAGGED = {"oneOf": [
    {"required": ["name", "code"], "properties": {"name": {"enum": ["http"]}, "code": {"type": "integer"}}},
    {"required": ["name", "code"], "properties": {"name": {"enum": ["ns"]}, "code": {"type": "integer"}}},
]}
TAGGED_VALUES = SCALARS + [
    {"name": "http", "code": 1}, {"name": "ns", "code": 2}, {"name": "other", "code": 1},
    {"name": "http"}, {"name": "http", "code": 1.5}, {"name": "ns", "code": "x"}, {"code": 1},
]

# One object branch without type next to typed scalar branches: it accepts every string and
# boolean too, so only strings outside the pattern and no booleans are valid.
MIXED = {"oneOf": [
    {"type": "string", "pattern": "^a"},
    {"type": "boolean"},
    {"properties": {"k": {"type": "integer"}}, "required": ["k"]},
]}
MIXED_VALUES = SCALARS + ["abc", "ba", 3, 3.5, {"k": 1}, {"k": 1.5}, {"j": 1}]

# Strings told apart by patterns (anchored, so no string matches both).
PATTERNS = {"type": "object", "oneOf": [
    {"required": ["type", "value"], "properties": {"type": {"type": "string", "pattern": "^basic:date:$"},
                                                    "value": {"type": "string", "pattern": "^[0-9]{4}$"}}},
    {"required": ["type", "value"], "properties": {"type": {"type": "string", "pattern": "^basic:(string|text):$"},
                                                    "value": {"type": "integer"}}},
]}
PATTERN_VALUES = [
    {"type": "basic:date:", "value": "2024"}, {"type": "basic:text:", "value": 3},
    {"type": "basic:string:", "value": 3.5}, {"type": "basic:date:", "value": 3}, {"type": "x", "value": 3},
    {"type": "basic:date:"}, {}, 1, "s",
]

# A required name that the other branch's patterns do not match (additionalProperties false).
PATTERN_PROPERTIES = {"oneOf": [
    {"type": "object", "properties": {"ios": {"type": "string"}, "android": {"type": "string"}},
     "required": ["ios", "android"], "additionalProperties": False},
    {"type": "object", "patternProperties": {"^[0-9]x$": {"type": "string"}}, "additionalProperties": False,
     "minProperties": 1},
]}
PATTERN_PROPERTIES_VALUES = [
    {"ios": "a", "android": "b"}, {"2x": "a"}, {"2x": "a", "3x": "b"}, {"ios": "a"}, {"ios": "a", "2x": "b"},
    {}, {"2x": 1}, "a", None,
]

# Two branches accept every value of a type: no value of it is valid (here strings and
# arrays), while numbers split on the discriminating keyword.
TWO_WHOLE = {"oneOf": [
    {"properties": {"a": {"type": "string"}}, "minimum": 5},
    {"required": ["b"], "maximum": 1},
]}
TWO_WHOLE_VALUES = SCALARS + [6, 3, 0.5, {"a": "x"}, {"b": 1}, {"a": "x", "b": 1}, {"a": 1, "b": 1}]

# Unanchored patterns that share strings stay overlapping, and are still exact (complements).
UNANCHORED = {"type": "object", "required": ["type"], "oneOf": [
    {"properties": {"type": {"type": "string", "pattern": "compound"}}},
    {"properties": {"type": {"type": "string", "pattern": "atomic"}}},
]}
UNANCHORED_VALUES = [{"type": "compound"}, {"type": "atomic"}, {"type": "atomic compound"}, {"type": "x"},
                     {"type": 1}, {}]


def object_instances(values_by_name, extra=()):
    """Every object over the names (up to three members, in sorted order: the schemas below
    declare their properties sorted, and declared order is enforced) with the listed values."""
    import itertools
    names = sorted(values_by_name)
    found = [None, 1, "s", []] + list(extra)
    for size in range(4):
        for chosen in itertools.combinations(names, size):
            for values in itertools.product(*[values_by_name[n] for n in chosen]):
                found.append(dict(zip(chosen, values)))
    return found


# Closed objects with optional members only: {} satisfies both, and a member one branch
# forbids tells them apart.
OPTIONAL_ONLY = {"oneOf": [
    {"type": "object", "properties": {"bar": {"type": "string"}}, "additionalProperties": False},
    {"type": "object", "properties": {"foo": {"type": "integer"}}, "additionalProperties": False},
]}
OPTIONAL_ONLY_VALUES = object_instances({"bar": ["x", 1], "foo": [1, 1.5, "x"]})

# Optional discriminators (not required): each branch also has its own member.
OPTIONAL_TAG = {"oneOf": [
    {"type": "object", "properties": {"d": {"const": "first"}, "first": {"type": "boolean"}},
     "additionalProperties": False},
    {"type": "object", "properties": {"d": {"const": "second"}, "second": {"type": "integer"}},
     "additionalProperties": False},
]}
OPTIONAL_TAG_VALUES = object_instances({"d": ["first", "second", "x"], "first": [True, 0], "second": [2, 2.5]})

# A shared required member with the same schema, one optional member each, and a member
# whose schemas overlap (the complement of one member schema is used).
SHARED = {"oneOf": [
    {"type": "object", "properties": {"id": {"type": "integer"}, "s": {"type": "string", "maxLength": 2},
                                      "x": {"type": "integer"}},
     "required": ["id"], "additionalProperties": False},
    {"type": "object", "properties": {"id": {"type": "integer"}, "s": {"type": "string", "pattern": "^a"},
                                      "y": {"type": "integer"}},
     "required": ["id"], "additionalProperties": False},
]}
SHARED_VALUES = object_instances({"id": [1, 1.5], "x": [2], "y": [3], "s": ["a", "abc", "b", "bcd"]})

# Arrays whose item schemas are disjoint: [] satisfies both, any item tells them apart.
ARRAYS = {"oneOf": [
    {"type": "array", "items": {"type": "number"}},
    {"type": "array", "items": {"type": "array", "items": {"type": "number"}}},
]}
ARRAY_VALUES = [[], [1], [1, 2.5], [[1]], [[1], []], [1, [1]], ["a"], [[]], [["a"]], None, 1, {}]


@pytest.mark.parametrize("schema,instances", [
    (ARRAYS, ARRAY_VALUES),
    (OPTIONAL_ONLY, OPTIONAL_ONLY_VALUES),
    (OPTIONAL_TAG, OPTIONAL_TAG_VALUES),
    (SHARED, SHARED_VALUES),
], ids=["arrays", "optional-only", "optional-tag", "shared"])
def test_complement_within_closed_objects_is_exact(schema, instances):
    assert_schema_language(schema, instances, both_sides=True)


def test_complement_within_needs_closed_objects():
    # Branch 0 is open (strict_mode=False, no additionalProperties): its objects can have
    # any member, so B's complement would need "a member outside B's names" -> refused.
    schema = {"oneOf": [
        {"type": "object", "properties": {"a": {"type": "integer"}}},
        {"type": "object", "properties": {"b": {"type": "integer"}}, "additionalProperties": False},
    ]}
    with pytest.raises(Unsupported, match="'oneOf' at /"):
        schema_ebnf(schema, strict_mode=False)


@pytest.mark.parametrize("schema,instances", [
    (TAGGED, TAGGED_VALUES),
    (MIXED, MIXED_VALUES),
    (PATTERNS, PATTERN_VALUES),
    (PATTERN_PROPERTIES, PATTERN_PROPERTIES_VALUES),
    (TWO_WHOLE, TWO_WHOLE_VALUES),
    (UNANCHORED, UNANCHORED_VALUES),
], ids=["tagged", "mixed", "patterns", "pattern-properties", "two-whole", "unanchored"])
def test_one_of_is_exact(schema, instances):
    assert_schema_language(schema, instances, both_sides=True)


def test_disjoint_patterns_need_no_complement():
    # Disjoint branches are a plain alternative: no rule for a complement of either pattern.
    ebnf = schema_ebnf({"oneOf": [{"type": "string", "pattern": "^a+$"}, {"type": "string", "pattern": "^b"}]})
    assert "allOf" not in ebnf and "not" not in ebnf, ebnf


def test_split_keeps_the_policy_error_where_a_type_still_needs_a_complement():
    # Within numbers, `multipleOf` overlaps `minimum` and has no complement.
    with pytest.raises(Unsupported, match="'oneOf' at /"):
        schema_ebnf({"oneOf": [{"multipleOf": 3}, {"minimum": 1}, {"required": ["a"]}]})
    # Within strings, a format has no complement.
    with pytest.raises(Unsupported, match="'oneOf' at /"):
        schema_ebnf({"oneOf": [{"format": "email"}, {"maxLength": 3}, {"type": "object"}]})


ENGINE_CASES = [
    (TAGGED, [{"name": "http", "code": 1.5}, 5, "s", {"name": "other", "code": 1}]),
    (MIXED, ["abc", True, {"k": 1.5}, {"j": 1}]),
    (PATTERNS, [{"type": "basic:date:", "value": 3}, {"type": "basic:text:", "value": "2024"}]),
    (PATTERN_PROPERTIES, [{"ios": "a"}, {}, {"ios": "a", "android": "b", "2x": "c"}]),
    (OPTIONAL_TAG, [{}, {"d": "first", "second": 2}, {"first": True, "second": 2}]),
    (SHARED, [{"id": 1}, {"id": 1, "s": "a"}, {"id": 1, "x": 2, "y": 3}]),
    (ARRAYS, [[], [1, [1]], ["a"]]),
]


@pytest.mark.parametrize("case", range(len(ENGINE_CASES)))
def test_engine_walks_validate_and_counterexamples_are_rejected(case):
    schema, invalid = ENGINE_CASES[case]
    grammar = hf_compiler("llama3.1").compile_json_schema(schema, any_whitespace=False, strict_mode=False)
    check_schema_walks_and_counterexamples(grammar, schema, invalid, seed=case, walks=8)
