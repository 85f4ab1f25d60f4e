"""Dependencies on names an object never has (issue 38).

`dependencies` / `dependentRequired` / `dependentSchemas` on a name that a closed object
neither declares nor requires nor matches with a pattern always hold, so they are no-ops
instead of the policy error (e.g. `{"dependencies": {"shape": [...]}}` inside an object
whose `shape` lives one level up). Closed means additionalProperties false, or strict mode
next to declared properties. Compared with `jsonschema` on instances, then compiled for a
real tokenizer: random walks validate and counterexamples are rejected.
"""

from __future__ import annotations

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

Unsupported = _native.UnsupportedSchemaError


def to_ebnf(schema, **options):
    ebnf, _ = _native._json_schema_to_ebnf(json.dumps(schema), **options)
    return ebnf


def is_valid(schema, instance):
    return jsonschema.Draft7Validator(schema).is_valid(instance)


CLOSED = {"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "string"}},
          "additionalProperties": False, "dependencies": {"shape": ["a", "c"], "b": ["a"]}}
CLOSED_VALUES = [{}, {"a": 1}, {"b": "x"}, {"a": 1, "b": "x"}, {"shape": 1}, {"shape": 1, "a": 1, "c": 2},
                 {"a": "x"}, 1, None]

PATTERNS = {"type": "object", "patternProperties": {"^x_": {"type": "integer"}}, "additionalProperties": False,
            "dependentSchemas": {"shape": {"required": ["x_a"]}}}
PATTERN_VALUES = [{}, {"x_a": 1}, {"x_b": 1.5}, {"shape": 1}, {"shape": 1, "x_a": 1}, {"y": 1}]


@pytest.mark.parametrize("schema,instances", [(CLOSED, CLOSED_VALUES), (PATTERNS, PATTERN_VALUES)],
                         ids=["closed", "patterns"])
def test_dependency_on_a_name_never_present_is_exact(schema, instances):
    ebnf = to_ebnf(schema, strict_mode=False)
    checked = [(v, is_valid(schema, v)) for v in instances]
    assert any(ok for _, ok in checked) and not all(ok for _, ok in checked)
    wrong = [(v, ok) for v, ok in checked if ebnf_accepts(ebnf, json.dumps(v)) != ok]
    assert not wrong, wrong


def test_names_that_can_be_present_keep_their_dependency():
    # Open object (strict_mode=False, no additionalProperties): `shape` may be present and
    # would need an arbitrary position for `c` -> still the policy error.
    open_schema = {"type": "object", "properties": {"a": {"type": "number"}}, "dependencies": {"shape": ["c"]}}
    with pytest.raises(Unsupported, match="'dependencies' at /"):
        to_ebnf(open_schema, strict_mode=False)
    # A required name is always present: its dependency's names are simply required too.
    required = {"type": "object", "properties": {"a": {"type": "number"}}, "required": ["shape"],
                "dependencies": {"shape": ["c"]}}
    ebnf = to_ebnf(required)
    assert ebnf_accepts(ebnf, '{"a": 1, "shape": 1, "c": 2}')
    assert not ebnf_accepts(ebnf, '{"a": 1, "shape": 1}')
    # A pattern that matches the name keeps it possible.
    matched = {"type": "object", "patternProperties": {"^s": {}}, "additionalProperties": False,
               "dependencies": {"shape": ["c"]}}
    with pytest.raises(Unsupported, match="'dependencies' at /"):
        to_ebnf(matched, strict_mode=False)


def test_malformed_dependency_is_a_schema_error_even_when_skipped():
    with pytest.raises(xg.SchemaError, match="'dependencies' at /"):
        to_ebnf({"type": "object", "properties": {}, "additionalProperties": False, "dependencies": {"shape": 3}})


def test_engine_strict_mode_walks_validate():
    # Strict mode: `shape` is undeclared, so never generated, and the dependency is a no-op.
    schema = {"type": "object", "properties": {"dimensions": {
        "type": "object", "properties": {"radius": {"type": "number"}, "width": {"type": "number"}},
        "required": ["radius"], "dependencies": {"shape": ["circle"]}}}, "required": ["dimensions"]}
    grammar = hf_compiler("llama3.1").compile_json_schema(schema, any_whitespace=False)
    for value in [{"dimensions": {"radius": 1, "shape": "x"}}, {"dimensions": {"width": 1}}]:
        assert not string_accepted(grammar, json.dumps(value)), value
    assert string_accepted(grammar, json.dumps({"dimensions": {"radius": 1, "width": 2}}))
    info = grammar.tokenizer_info
    bitmask = np.full(xg.get_bitmask_shape(1, info.vocab_size), -1, dtype=np.int32)
    rng = random.Random(0)
    finished = 0
    for _ in range(8):
        out = random_walk(grammar, rng, bitmask, 48)
        if out is None:
            continue
        assert is_valid(schema, json.loads(out.decode("utf-8"))), out
        finished += 1
    assert finished > 0
