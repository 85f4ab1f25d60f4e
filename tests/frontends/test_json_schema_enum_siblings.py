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


def test_listed_values_checked_against_another_list(compiler: xg.GrammarCompiler) -> None:
    # Each value of the outer enum is looked for in the inner one (1 equals 1.0 there).
    schema = {"enum": ["a", "b", 1, 1.0, 2, None, [1], {"a": 1}], "anyOf": [{"enum": ["a", 1.0, None, [1]]}]}
    validator = make_validator(schema)
    grammar = compiler.compile_json_schema(schema)
    for value in ["a", "b", 1, 1.0, 2, None, [1], {"a": 1}]:
        text = json.dumps(value)
        assert accepts(grammar, text) == validator.is_valid(value), text


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


FORMAT_VALUES = [
    "2024-02-29", "2023-02-29", "2024-13-01", "12:30:00Z", "23:59:60Z", "2024-02-29T12:30:00Z",
    "2024-02-29 12:30:00Z", "192.168.0.1", "192.168.0.01", "256.1.1.1", "::1", "1::2::3",
    "123e4567-e89b-12d3-a456-426614174000", "123e4567-e89b-12d3-a456", "https://example.com/a/b?c=d#e",
    "http://www.w3.org/2000/09/xmldsig#rsa-sha1", "not a uri", "/a/b", "a@b.c", "P1D", "PT1.5S", "/a~1b",
    "/a~2b", "0/a", "", 7, None, {"a": 1},
]


# The listed strings are decided on the format's automaton (printable ASCII spells itself).
@pytest.mark.parametrize("format_name", ["date", "ipv4", "ipv6", "uuid", "uri", "uri-reference", "json-pointer",
                                         "relative-json-pointer", "url", "path"])
def test_enum_keeps_exactly_the_values_of_the_format(compiler: xg.GrammarCompiler, format_name: str) -> None:
    schema = {"enum": FORMAT_VALUES, "format": format_name}
    validator = make_validator(schema)
    grammar = compiler.compile_json_schema(schema, strict_mode=False)
    for value in FORMAT_VALUES:
        text = json.dumps(value, ensure_ascii=False)
        assert accepts(grammar, text) == validator.is_valid(value), (format_name, text)


def test_hostnames_in_the_subset_are_kept_and_overlong_ones_dropped(compiler: xg.GrammarCompiler) -> None:
    # The hostname grammar is a sound subset: a listed string it accepts is a host name, one
    # longer than 253 characters is not; any other it rejects could still be one (the
    # policy error, test_keywords_not_evaluated_stay_refused).
    overlong = ".".join(["a" * 63] * 4)
    grammar = compiler.compile_json_schema({"enum": ["example.com", "a-b", overlong, 7], "format": "hostname"})
    for value, expected in [("example.com", True), ("a-b", True), (overlong, False), (7, True)]:
        assert accepts(grammar, json.dumps(value)) == expected, value


def test_const_with_a_format_in_an_object(compiler: xg.GrammarCompiler) -> None:
    schema = {"type": "object", "properties": {"version": {"type": "string", "format": "uri",
                                                           "const": "https://jsonfeed.org/version/1"},
                                               "when": {"format": "date", "enum": ["2024-01-01", "2024-01-32"]}},
              "required": ["version"]}
    grammar = compiler.compile_json_schema(schema)
    assert accepts(grammar, '{"version": "https://jsonfeed.org/version/1", "when": "2024-01-01"}')
    assert not accepts(grammar, '{"version": "https://jsonfeed.org/version/1", "when": "2024-01-32"}')


# email's and duration's grammars are sound subsets (a string they reject may still be valid), a format
# without a grammar cannot decide anything, and a string that is not its own JSON spelling is
# not decided on the automaton: the policy error.
@pytest.mark.parametrize("schema,keyword", [
    ({"enum": ["a b@c", {"a": 1}], "format": "email"}, "format"),
    ({"enum": ["P1D", "PT1.5S"], "format": "duration"}, "format"),
    ({"enum": ["example.com", "xn--ll-0ea"], "format": "hostname"}, "format"),
    ({"enum": ["2024-01-01\n"], "format": "date"}, "format"),
    ({"enum": ["a", {"a": 1}], "unevaluatedProperties": False}, "unevaluatedProperties"),
])
def test_keywords_not_evaluated_stay_refused(compiler: xg.GrammarCompiler, schema: dict, keyword: str) -> None:
    with pytest.raises(xg.UnsupportedSchemaError, match=f"'{keyword}' alongside 'enum'/'const' at /"):
        compiler.compile_json_schema(schema)
