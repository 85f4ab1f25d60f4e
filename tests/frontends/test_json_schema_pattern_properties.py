"""patternProperties merged through allOf and next to other branches' declared properties
(issue 38 part B).

Each side's rule for a member name (its declared entry, every matching pattern, else its
additionalProperties) must hold in the merge. Languages are compared with the `jsonschema`
library on enumerated objects (strict_mode=False); engine walks with a real tokenizer must
validate; counterexamples must be rejected; the one form no flat schema can say stays the
policy error.
"""

from __future__ import annotations

import itertools
import json
import random

import jsonschema
import numpy as np
import pytest

import xg2_plugin as xg
from xg2_plugin import _native
from xg2_plugin.testing import ebnf_accepts
from xg2_corpus import random_walk
from xg2_test_support import hf_compiler, string_accepted


def to_ebnf(schema):
    ebnf, _ = _native._json_schema_to_ebnf(json.dumps(schema), strict_mode=False)
    return ebnf


def is_valid(schema, instance):
    return jsonschema.Draft202012Validator(schema).is_valid(instance)


VALUES = [1, -1, "s", None]
NAMES = ["a", "b", "x1", "xa", "ya"]


def objects():
    yield {}
    for name, value in itertools.product(NAMES, VALUES):
        yield {name: value}
    for (n1, n2), (v1, v2) in itertools.product([("a", "x1"), ("x1", "xa"), ("b", "ya"), ("a", "b")],
                                                itertools.product(VALUES[:3], repeat=2)):
        yield {n1: v1, n2: v2}


CASES = {
    "patterns_and_declared": {"allOf": [{"patternProperties": {"^x": {"type": "integer"}}},
                                        {"properties": {"a": {"type": "string"}, "x1": {"minimum": 0}}}]},
    "patterns_on_both_sides": {"allOf": [{"patternProperties": {"^x": {"type": "integer"}}},
                                         {"patternProperties": {"a$": {"type": "string"}}}]},
    "closed_side_with_patterns": {"allOf": [{"patternProperties": {"^x": {"type": "integer"}}, "additionalProperties": False},
                                            {"properties": {"a": {"type": "string"}, "x1": {}}}]},
    "same_pattern_both_sides": {"allOf": [{"patternProperties": {"^x": {"type": "integer"}}},
                                          {"properties": {"a": {}}, "patternProperties": {"^x": {"minimum": 0}},
                                           "additionalProperties": {"type": "string"}}]},
    "pattern_takes_other_additional": {"allOf": [{"patternProperties": {"^x": {"type": "integer"}}},
                                                 {"properties": {"a": {}}, "additionalProperties": {"minimum": 0}}]},
    "ref_with_sibling": {"$defs": {"base": {"type": "object", "patternProperties": {"a$": {"type": "string"}}}},
                         "$ref": "#/$defs/base", "properties": {"ya": {"maxLength": 0}, "b": {"type": "null"}}},
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_merge_is_exact(name):
    schema = CASES[name]
    ebnf = to_ebnf(schema)
    wrong = [(v, is_valid(schema, v)) for v in objects() if ebnf_accepts(ebnf, json.dumps(v)) != is_valid(schema, v)]
    assert not wrong, f"{len(wrong)} disagreements, e.g. {wrong[:5]}"


@pytest.mark.parametrize("schema", [
    # Names matching ^x outside the other side's pattern `a` take its additionalProperties,
    # names matching both do not: no flat schema says "^x but not a".
    {"allOf": [{"patternProperties": {"^x": {"type": "integer"}}, "additionalProperties": False},
               {"patternProperties": {"a": {}}, "additionalProperties": {"type": "string"}}]},
    # The declared name xa matches ^x; other ^x names take the additionalProperties.
    {"allOf": [{"patternProperties": {"^x": {"type": "integer"}}},
               {"properties": {"xa": {}}, "additionalProperties": {"type": "string"}}]},
])
def test_inexpressible_merges_stay_the_policy_error(schema):
    with pytest.raises(_native.UnsupportedSchemaError, match="'patternProperties' .* at /"):
        to_ebnf(schema)


def test_engine_walks_validate_and_counterexamples_are_rejected():
    schema = {"type": "object",
              "allOf": [{"patternProperties": {"^x-": {"type": "integer", "maximum": 9}},
                         "additionalProperties": {"type": "string"}},
                        {"properties": {"name": {"type": "string", "maxLength": 4}}, "required": ["name"]}]}
    grammar = hf_compiler("llama3.1").compile_json_schema(schema, any_whitespace=False)
    for value in [{"name": "abc", "x-a": 10}, {"name": "abc", "y": 1}, {"x-a": 1}, {"name": 1}]:
        assert not is_valid(schema, value), value
        assert not string_accepted(grammar, json.dumps(value)), value
    assert string_accepted(grammar, json.dumps({"name": "abc", "x-a": 3}))
    info = grammar.tokenizer_info
    bitmask = np.full(xg.get_bitmask_shape(1, info.vocab_size), -1, dtype=np.int32)
    rng = random.Random(3)
    finished = 0
    for _ in range(6):
        out = random_walk(grammar, rng, bitmask, 48)
        if out is not None:
            assert is_valid(schema, json.loads(out.decode("utf-8"))), out
            finished += 1
    assert finished > 0
