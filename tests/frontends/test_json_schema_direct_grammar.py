"""The JSON Schema frontend builds the grammar directly (frontends/json_schema/ebnf_builder.h,
grammar/grammar_builder.h; issue 39): for every schema, the grammar it builds is node for node
the parse of the EBNF it prints, so compiling without the text round trip changes nothing
downstream (same FSMs, same masks, same cache keys)."""

from __future__ import annotations

import json

import pytest

from xg2_corpus import stratified_sample
from xg2_test_support import data_dir
from xg2_plugin import _native

_CORPUS = data_dir() / "jsonschemabench"
SAMPLE = stratified_sample(_CORPUS, 8, seed=39) if _CORPUS.is_dir() else []

# Each exercises a different way the converter builds fragments: spelled classes, merged
# literals, shared rules, a pattern's expression, the prebuilt formats (date-time holds the one
# rule with a lookahead), counted loops, JSON character counts (a length next to a format too
# large for the automaton product), recursion through $ref, enums and key tries.
SCHEMAS = [
    {"type": "string", "pattern": "^[a-z]{2,5}(-[0-9]+)?$"},
    {"type": "string", "format": "date-time"},
    {"type": "object", "properties": {"when": {"type": "string", "format": "date-time"}, "day": {"format": "date"}}},
    {"type": "string", "format": "email"},
    {"type": "string", "format": "uri"},
    {"type": "string", "format": "ipv6"},
    {"type": "integer", "minimum": -37, "maximum": 1234},
    {"type": "number", "exclusiveMinimum": 0.5, "maximum": 100},
    {"type": "array", "items": {"type": "integer"}, "minItems": 2, "maxItems": 9, "uniqueItems": True},
    {"type": "object", "properties": {"tags": {"type": "array", "items": {"type": "string"}, "uniqueItems": True}}},
    {"type": "string", "minLength": 3, "maxLength": 12},
    {"type": "string", "format": "email", "minLength": 20, "maxLength": 30},
    {"type": "object", "properties": {"a": {"type": "string", "format": "email", "maxLength": 2147483647}}},
    {"enum": ["a", "b\"c", 1, None, {"k": [1, 2]}]},
    {"$defs": {"node": {"type": "object", "properties": {"next": {"$ref": "#/$defs/node"}}}}, "$ref": "#/$defs/node"},
    {
        "type": "object",
        "properties": {"alpha": {"type": "boolean"}, "alphabet": {"type": "null"}, "beta": {"const": 3}},
        "required": ["alpha"],
        "additionalProperties": {"type": "string", "pattern": "x+"},
    },
    {"type": "object", "patternProperties": {"^s_": {"type": "string"}}, "additionalProperties": False},
    {"oneOf": [{"type": "string", "maxLength": 2}, {"type": "integer"}, {"type": "array"}]},
    {"not": {"type": "string"}},
    {"type": "string", "not": {"enum": ["no", "none"]}},
    True,
]


def _check(schema: str, **options: bool) -> None:
    try:
        assert _native._json_schema_grammar_matches_parse(schema, **options)
    except (_native.SchemaError, _native.ResourceLimitError):
        pytest.skip("refused by the converter (the same error either way)")


@pytest.mark.parametrize("schema", SCHEMAS, ids=[str(i) for i in range(len(SCHEMAS))])
@pytest.mark.parametrize(
    "options",
    [{}, {"any_whitespace": False}, {"strict_mode": False, "any_order": True}, {"any_key_spelling": True}],
    ids=["default", "compact", "loose_any_order", "key_spellings"],
)
def test_built_grammar_is_the_parse_of_the_printed_one(schema, options) -> None:
    _check(json.dumps(schema), **options)


@pytest.mark.parametrize("path", SAMPLE, ids=[p.name for p in SAMPLE])
def test_corpus_grammar_is_the_parse_of_the_printed_one(path) -> None:
    schema = json.dumps(json.loads(path.read_text())["schema"])
    _check(schema, lenient=True)
    _check(schema, any_whitespace=False, strict_mode=False, lenient=True)
