"""Recursive `$ref`s intersected with sibling keywords, and dependencies on required names.

A merge (allOf, `$ref` with siblings, a patternProperty over a declared name) that leads back
to itself through a recursive `$ref` becomes a rule of its own; a `$ref` met twice in one
merge is one conjunct. Languages are compared with `jsonschema` on enumerated instances
(strict_mode=False, so that the grammar's language is the schema's up to key order); the
corpus schemas these constructions convert are walked with the real engine and a real
tokenizer (valid instances accepted token by token, invalid ones rejected, walks validated).
"""

from __future__ import annotations

import itertools

import pytest

from schema_language import assert_schema_language, schema_ebnf
from xg2_corpus import evaluate_schema
from xg2_test_support import data_dir, encode_continuation, hf_compiler


def trees(depth):
    """Objects {"v": ..., "kids": [...]} nested up to `depth`, with members left out."""
    if depth == 0:
        return [{}, {"v": 1}, {"v": "a"}]
    smaller = trees(depth - 1)
    out = list(smaller)
    for kids in [[], *([t] for t in smaller), [smaller[1], smaller[2]]]:
        out.append({"kids": kids})
        out.append({"v": 1, "kids": kids})
    return out


RECURSIVE_WITH_SIBLINGS = {
    "$defs": {"node": {"type": "object", "properties": {
        "v": {"type": "integer"},
        "kids": {"type": "array", "items": {"$ref": "#/$defs/node", "required": ["v"]}}}}},
    "$ref": "#/$defs/node",
    "required": ["kids"],
}


def test_recursive_ref_with_siblings_is_exact():
    assert_schema_language(RECURSIVE_WITH_SIBLINGS, trees(3) + [[], 1, {"kids": 1}], both_sides=True)


def test_recursive_ref_with_siblings_uses_one_rule_per_merge():
    # The grammar is finite: the merge of the items recurs as one rule, not unrolled.
    ebnf = schema_ebnf(RECURSIVE_WITH_SIBLINGS, strict_mode=False)
    assert len(ebnf) < 20000, len(ebnf)


def credit_values():
    authors = [{}, {"name": "a"}, {"name": 1}, {"credits": {"by": [{}]}}, {"credits": {"by": [{"name": 2}]}},
               {"credits": {"x": [{"name": "b"}]}}, {"credits": {"B": 1}}, {"other": 1}]
    return [[], 1, *([a] for a in authors)]


# WashingtonPost's `credits`: a patternProperty that matches the declared name too, whose items
# refer back (through the author's credits) to the schema being intersected.
CREDITS = {
    "$defs": {
        "credits": {"type": "object",
                    "properties": {"by": {"type": "array", "items": {"$ref": "#/$defs/author"}}},
                    "patternProperties": {"^[a-z]": {"type": "array", "items": {"$ref": "#/$defs/author"}}}},
        "author": {"type": "object", "additionalProperties": False,
                   "properties": {"name": {"type": "string"}, "credits": {"$ref": "#/$defs/credits"}}},
    },
    "$ref": "#/$defs/credits",
}


def test_pattern_property_over_a_declared_recursive_name_is_exact():
    instances = [{}, 1]
    for key, value in itertools.product(["by", "x", "B"], credit_values()):
        instances.append({key: value})
    assert_schema_language(CREDITS, instances, both_sides=True)


def test_repeated_ref_in_one_merge_is_one_conjunct():
    schema = {"$defs": {"s": {"type": "string", "minLength": 1}},
              "allOf": [{"$ref": "#/$defs/s"}, {"$ref": "#/$defs/s"}, {"anyOf": [{"maxLength": 1}, {"const": 1}]},
                        {"anyOf": [{"maxLength": 1}, {"const": 1}]}]}
    assert_schema_language(schema, ["", "a", "ab", 1, None], both_sides=True)


# A competency framework (Github_easy o78062): a merge inside a recursive merge expands a
# shared base schema again without being the same merge; the nesting guard must let it.
COMPETENCY = {
    "$defs": {
        "named": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]},
        "ability": {"allOf": [{"$ref": "#/$defs/named"}, {"properties": {"level": {"type": "integer"}},
                                                          "required": ["level"]}]},
        "competency": {"allOf": [{"$ref": "#/$defs/named"}, {"properties": {
            "competencies": {"type": "array", "items": {"$ref": "#/$defs/competency"}},
            "abilities": {"type": "array", "items": {"$ref": "#/$defs/ability"}}}}]},
    },
    "allOf": [{"$ref": "#/$defs/competency"}, {"required": ["competencies"]}],
}


def test_shared_base_expanded_in_nested_merges_is_exact():
    abilities = [[], [{"name": "a", "level": 1}], [{"name": "a"}], [{"level": 1}]]
    inner = [{"name": "c"}, {}, {"name": 1}] + [{"name": "c", "abilities": a} for a in abilities]
    instances = [{}, {"name": "r"}, 1]
    for competencies in [[], *([c] for c in inner), [{"name": "c", "competencies": [{"name": "d", "abilities": a}]}
                                                    for a in abilities]]:
        instances.append({"name": "r", "competencies": competencies})
        instances.append({"competencies": competencies})
    assert_schema_language(COMPETENCY, instances, both_sides=True)


# --------------------------------------------------------------------------------------
# dependencies whose trigger is required: the dependency always applies

@pytest.mark.parametrize("keyword", ["dependencies", "dependentRequired"])
def test_dependency_on_a_required_name_requires_undeclared_names(keyword):
    schema = {"type": "object", "properties": {"a": {"type": "number"}}, "required": ["a"],
              keyword: {"a": ["t"]}}
    if keyword == "dependencies":  # draft 7's name for it (2020-12 ignores it)
        schema["$schema"] = "http://json-schema.org/draft-07/schema#"
    instances = [{}, {"a": 1}, {"a": 1, "t": None}, {"t": 1}, {"a": "x", "t": 1}, {"a": 1, "t": 1, "u": 2}]
    assert_schema_language(schema, instances, both_sides=True)


def test_dependency_schema_on_a_required_name_is_intersected():
    schema = {"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "string"}},
              "required": ["a"], "dependentSchemas": {"a": {"required": ["b"], "properties": {"b": {"maxLength": 1}}}}}
    instances = [{}, {"a": 1}, {"a": 1, "b": "x"}, {"a": 1, "b": "xy"}, {"b": "x"}, {"a": 1, "b": 2}]
    assert_schema_language(schema, instances, both_sides=True)


# --------------------------------------------------------------------------------------
# JSONSchemaBench schemas these constructions convert: walked with the real engine

CORPUS_SCHEMAS = [
    "WashingtonPost---wp_53_Normalized.json",     # credits: a patternProperty over declared names
    "Github_medium---o13135.json",               # nested menu items: recursive $ref with siblings
    "JsonSchemaStore---resjson.json",            # additionalProperties recursing through allOf
    "Glaiveai2K---calculate_area_08e029cf.json",  # dependencies on required names
]


@pytest.mark.parametrize("name", CORPUS_SCHEMAS)
def test_corpus_schema_converts_and_walks_validate(name):
    path = data_dir() / "jsonschemabench" / name
    if not path.is_file():
        pytest.skip(f"no corpus file {path}")
    result = evaluate_schema(path, hf_compiler("llama3.1"), lambda text: encode_continuation("llama3.1", text),
                             token_level_instances=1, walks=4, walk_max_tokens=120)
    assert result.status == "ok", result.message
    assert result.acceptance_failures == []
    assert result.token_failures == []
    assert result.walk_violations == []
