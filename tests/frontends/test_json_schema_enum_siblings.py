"""enum / const next to structural keywords (properties, required, patternProperties,
items, contains, pattern, allOf / anyOf / oneOf / not, $ref, ...): the grammar lists exactly
the values that validate against the siblings, with jsonschema as the oracle."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest

import xg2_plugin as xg
from xg2_corpus import make_validator, random_walk
from xg2_test_support import hf_tokenizer_info

TOKENIZER = "llama3.1"

VALUES = [
    None, True, False, 0, 1, -1, 2.5, 7, "", "a", "ab", "abc", "Zed", "a1", "é", "\n", "x/y",
    [], [1], [1, 2], ["a", 1], [1, "a", None], [[1]], [2, 2, 2], ["abc", "z"],
    {}, {"a": 1}, {"a": "x"}, {"b": 2}, {"a": 1, "b": 2}, {"b": 1, "a": 2}, {"a": 1, "x1": True},
    {"x1": 5}, {"x1": "no"}, {"a": {"a": 1}}, {"a": [1, 2]}, {"c": None, "a": 3}, {"é": 1},
]

SIBLINGS = [
    {"properties": {"a": {"type": "integer"}}},
    {"properties": {"a": {"type": "integer", "minimum": 2}}, "required": ["a"]},
    {"required": ["a", "b"]},
    {"properties": {"a": {}}, "additionalProperties": False},
    {"properties": {"a": {"type": "integer"}}, "additionalProperties": {"type": "boolean"}},
    {"patternProperties": {"^x[0-9]$": {"type": "integer"}}},
    {"patternProperties": {"^x": {"type": "integer"}}, "additionalProperties": False},
    {"propertyNames": {"maxLength": 1}},
    {"propertyNames": {"pattern": "^[ab]$"}},
    {"dependentRequired": {"a": ["b"]}},
    {"dependentSchemas": {"a": {"required": ["x1"]}}},
    {"properties": {"a": {"properties": {"a": {"const": 1}}}}},
    {"items": {"type": "integer"}},
    {"prefixItems": [{"type": "string"}], "items": {"type": "integer"}},
    {"minItems": 2},
    {"maxItems": 1},
    {"contains": {"type": "string"}},
    {"contains": {"const": 2}, "minContains": 2, "maxContains": 2},
    {"pattern": "b"},
    {"pattern": "^[a-z]+$"},
    {"pattern": "^.$"},
    {"anyOf": [{"type": "string"}, {"type": "array", "items": {"type": "integer"}}]},
    {"oneOf": [{"type": "integer"}, {"minimum": 2}]},
    {"not": {"type": "object", "required": ["a"]}},
    {"allOf": [{"required": ["a"]}, {"properties": {"a": {"type": "integer"}}}]},
    {"if": {"type": "string"}, "then": {"minLength": 2}, "else": {"type": "object"}},
    {"properties": {"a": {"$ref": "#/$defs/small"}}, "$defs": {"small": {"type": "integer", "maximum": 1}}},
    {"type": "object", "properties": {"a": {"enum": [1, 3]}}},
    {"items": {"if": {"type": "integer"}, "then": {"minimum": 2}}},
]


@pytest.fixture(scope="module")
def compiler() -> xg.GrammarCompiler:
    return xg.GrammarCompiler(hf_tokenizer_info(TOKENIZER), cache_enabled=False)


def accepts(grammar: xg.CompiledGrammar, text: str) -> bool:
    matcher = xg.GrammarMatcher(grammar)
    return matcher.accept_string(text) and matcher.is_completed()


@pytest.mark.parametrize("index", range(len(SIBLINGS)))
def test_enum_keeps_exactly_the_values_the_siblings_accept(compiler: xg.GrammarCompiler, index: int) -> None:
    schema = {"enum": VALUES, **SIBLINGS[index]}
    validator = make_validator(schema)
    grammar = compiler.compile_json_schema(schema, strict_mode=False)
    for value in VALUES:
        text = json.dumps(value, ensure_ascii=False)
        assert accepts(grammar, text) == validator.is_valid(value), (SIBLINGS[index], text)


def test_const_next_to_properties(compiler: xg.GrammarCompiler) -> None:
    kept = compiler.compile_json_schema({"const": {"a": 1}, "properties": {"a": {"type": "integer"}},
                                         "required": ["a"]})
    assert accepts(kept, '{"a": 1}')
    dropped = compiler.compile_json_schema({"type": "object", "properties": {"a": {"const": {"a": 1}, "required": ["b"]}}})
    assert accepts(dropped, "{}")
    assert not accepts(dropped, '{"a": {"a": 1}}')


def test_random_walks_stay_valid(compiler: xg.GrammarCompiler) -> None:
    rng = random.Random(7)
    info = hf_tokenizer_info(TOKENIZER)
    bitmask = np.full(xg.get_bitmask_shape(1, info.vocab_size), -1, dtype=np.int32)
    for sibling in SIBLINGS[:1]:
        schema = {"type": "object", "properties": {"v": {"enum": VALUES, **sibling}}, "required": ["v"]}
        validator = make_validator(schema)
        grammar = compiler.compile_json_schema(schema, strict_mode=False)
        out = random_walk(grammar, rng, bitmask, 40)
        if out is not None:
            instance = json.loads(out.decode("utf-8"))
            assert validator.is_valid(instance), (sibling, out)


@pytest.mark.parametrize("sibling", [{"format": "email"}, {"unevaluatedProperties": False}])
def test_keywords_not_evaluated_stay_refused(compiler: xg.GrammarCompiler, sibling: dict) -> None:
    keyword = next(iter(sibling))
    with pytest.raises(xg.UnsupportedSchemaError, match=f"'{keyword}' alongside 'enum'/'const' at /"):
        compiler.compile_json_schema({"enum": ["a@b.c", {"a": 1}], **sibling})
