"""uniqueItems: exact over listed item domains (JSON equality: 1 and 1.0 are one value),
otherwise the typed refusal that names the keyword and the pointer."""

from __future__ import annotations

import json

import pytest

import xg2_plugin as xg
from xg2_corpus import make_validator
from xg2_test_support import hf_tokenizer_info

TOKENIZER = "llama3.1"


@pytest.fixture(scope="module")
def compiler() -> xg.GrammarCompiler:
    return xg.GrammarCompiler(hf_tokenizer_info(TOKENIZER), cache_enabled=False)


def accepts(grammar: xg.CompiledGrammar, text: str) -> bool:
    matcher = xg.GrammarMatcher(grammar)
    return matcher.accept_string(text) and matcher.is_completed()


@pytest.mark.parametrize("schema, texts", [
    ({"type": "array", "items": {"enum": [1, 1.0, 2, "a"]}, "uniqueItems": True},
     ["[1, 1.0]", "[1.0, 1]", "[1, 2]", "[1, 1]", '[2, 1.0, "a"]', '["a", "a"]', "[]"]),
    ({"type": "array", "items": {"enum": [{"a": 1}, {"a": 1.0}, [1], [1.0]]}, "uniqueItems": True},
     ['[{"a": 1}, {"a": 1.0}]', "[[1], [1.0]]", '[{"a": 1}, [1]]']),
    ({"type": "array", "items": {"type": "boolean"}, "uniqueItems": True},
     ["[true, false]", "[true, true]", "[false]", "[false, true, false]"]),
    ({"type": "array", "items": {"enum": [None, "x"]}, "uniqueItems": True, "minItems": 2},
     ['[null, "x"]', '["x", null]', "[null]", "[null, null]"]),
])
def test_listed_domains_follow_json_equality(compiler: xg.GrammarCompiler, schema: dict, texts: list) -> None:
    grammar = compiler.compile_json_schema(schema)
    validator = make_validator(schema)
    for text in texts:
        assert accepts(grammar, text) == validator.is_valid(json.loads(text)), text


CLOSED_ENDING_IN_BOOLEAN = {"type": "object", "properties": {"a": {"type": "boolean"}}, "additionalProperties": False}


@pytest.mark.parametrize("items", [CLOSED_ENDING_IN_BOOLEAN, {"enum": [{"k": i} for i in range(9)]},
                                   {"type": "integer", "minimum": 0, "maximum": 3},
                                   {"type": "string", "maxLength": 3}, {"type": "string", "pattern": "^a+b$"},
                                   {"type": "string", "pattern": "^(?:ab|c)x?$"},
                                   {"type": "string", "format": "date"}, {"type": ["string", "null"]}, {}])
def test_unbounded_or_large_domains_are_refused_with_the_pointer(compiler: xg.GrammarCompiler, items: dict) -> None:
    schema = {"type": "object", "properties": {"tags": {"type": "array", "items": items, "uniqueItems": True}}}
    with pytest.raises(xg.UnsupportedSchemaError, match="'uniqueItems' at /properties/tags"):
        compiler.compile_json_schema(schema)


def test_large_item_counts_next_to_unbounded_items_are_refused(compiler: xg.GrammarCompiler) -> None:
    schema = {"type": "array", "items": {"type": "string"}, "uniqueItems": True, "maxItems": 129}
    with pytest.raises(xg.UnsupportedSchemaError, match="maxItems above 128"):
        compiler.compile_json_schema(schema)


@pytest.mark.parametrize("node", [{"type": "string", "uniqueItems": True},
                                  {"type": "string", "pattern": "^[a-z]{1,2}$", "uniqueItems": True},
                                  {"type": ["object", "null"], "uniqueItems": True}])
def test_unique_items_where_the_type_rules_out_arrays_says_nothing(compiler: xg.GrammarCompiler, node: dict) -> None:
    # JSONSchemaStore's schema.json and stylecop carry this form: the keyword constrains arrays only.
    schema = {"type": "object", "properties": {"v": node}, "required": ["v"], "additionalProperties": False}
    grammar = compiler.compile_json_schema(schema)
    validator = make_validator(schema)
    for text in ['{"v": "ab"}', '{"v": "abc"}', '{"v": null}', '{"v": {}}', '{"v": ["a", "a"]}', '{"v": []}']:
        assert accepts(grammar, text) == validator.is_valid(json.loads(text)), text


def test_unique_items_next_to_a_type_that_allows_arrays_is_still_decided(compiler: xg.GrammarCompiler) -> None:
    schema = {"type": ["array", "string"], "items": CLOSED_ENDING_IN_BOOLEAN, "uniqueItems": True}
    with pytest.raises(xg.UnsupportedSchemaError, match="'uniqueItems' at /"):
        compiler.compile_json_schema(schema)
    # Open object items are kept distinct by the matcher (tests/matcher/test_unique_object_items.py).
    schema = {"type": ["array", "string"], "items": {"type": "object"}, "uniqueItems": True}
    grammar = compiler.compile_json_schema(schema)
    validator = make_validator(schema)
    for text in ['"s"', '[{}, {"a": 1}]', '[{"a": 1}, {"a": 1.0}]', '[{}, {}]', '[{"a": [1, 2]}, {"a": [2, 1]}]']:
        assert accepts(grammar, text) == validator.is_valid(json.loads(text)), text
