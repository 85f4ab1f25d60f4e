"""Unanchored `pattern` intersected with other patterns, lengths and formats (issue 38 part B).

JSON Schema patterns match anywhere in the string; two of them on one value (allOf, $ref
with siblings) are intersected through the code-point automaton product. Languages are
compared with the `jsonschema` library on random strings; engine walks with a real
tokenizer must validate; counterexamples must be rejected.
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


def to_ebnf(schema):
    ebnf, _ = _native._json_schema_to_ebnf(json.dumps(schema), strict_mode=False)
    return ebnf


def validator(schema):
    return jsonschema.Draft202012Validator(schema, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)


def random_strings(alphabet, count, longest, seed):
    rng = random.Random(seed)
    found = {""}
    while len(found) < count:
        found.add("".join(rng.choice(alphabet) for _ in range(rng.randint(1, longest))))
    return sorted(found)


def assert_same_strings(schema, strings):
    ebnf, check = to_ebnf(schema), validator(schema)
    wrong = [(s, check.is_valid(s)) for s in strings if ebnf_accepts(ebnf, json.dumps(s, ensure_ascii=False)) != check.is_valid(s)]
    assert not wrong, f"{len(wrong)} disagreements, e.g. {wrong[:5]}"
    return ebnf


CASES = {
    # The shape the issue reports: an unanchored class pair and a second pattern.
    "issue_example": {"allOf": [{"pattern": "[aA][12].*[zZ]"}, {"pattern": "^a"}]},
    "three_patterns_and_length": {"allOf": [{"pattern": "[aA][12]"}, {"pattern": "z"}, {"pattern": "^[^q]"}],
                                  "maxLength": 5},
    "ref_with_sibling_pattern": {"$defs": {"p": {"type": "string", "pattern": "1"}}, "$ref": "#/$defs/p",
                                 "pattern": "2$", "minLength": 2},
    "anyOf_distributed": {"pattern": "a", "anyOf": [{"pattern": "z$"}, {"pattern": "^1"}]},
    "escaped_characters": {"allOf": [{"pattern": "\""}, {"pattern": "\\\\"}]},
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_pattern_intersection_is_exact(name):
    assert_same_strings(CASES[name], random_strings("aAzZ12q\"\\", 160, 6, name))


def test_patterns_with_a_format():
    schema = {"allOf": [{"type": "string", "format": "date"}, {"pattern": "^20"}, {"pattern": "-1[0-2]-"}]}
    ebnf = assert_same_strings(schema, ["2020-10-01", "2020-01-10", "1999-11-11", "2021-12-31", "20-10-01", "2020-13-01"])
    assert ebnf_accepts(ebnf, '"2024-11-30"') and not ebnf_accepts(ebnf, '"2024-09-30"')


def test_non_strings_pass_both_patterns():
    ebnf = to_ebnf({"allOf": [{"pattern": "a"}, {"pattern": "b"}]})
    for text in ["1", "null", "[]", "{}", '"ab"', '"ba"']:
        assert ebnf_accepts(ebnf, text), text
    for text in ['"a"', '"b"', '""']:
        assert not ebnf_accepts(ebnf, text), text


def test_product_size_is_bounded():
    # The second pattern's automaton alone has about 2^15 states.
    schema = {"type": "string", "allOf": [{"pattern": "a"}, {"pattern": "^[ab]*a[ab]{14}$"}, {"pattern": "^[ab]*b[ab]{14}$"}]}
    with pytest.raises((xg.ResourceLimitError, _native.UnsupportedSchemaError), match="limit|states|pattern|not"):
        to_ebnf(schema)


def test_engine_walks_validate_and_counterexamples_are_rejected():
    schema = {"type": "object", "properties": {"code": {"allOf": [{"type": "string", "pattern": "[aA][12].*[zZ]"},
                                                                  {"pattern": "^[a-z]"}], "maxLength": 6}},
              "required": ["code"], "additionalProperties": False}
    grammar = hf_compiler("llama3.1").compile_json_schema(schema, any_whitespace=False)
    check = validator(schema)
    for value in [{"code": "A1z"}, {"code": "a1"}, {"code": "a1zzzzz"}, {"code": "xa3z"}]:
        assert not check.is_valid(value), value
        assert not string_accepted(grammar, json.dumps(value)), value
    assert string_accepted(grammar, json.dumps({"code": "xa1z"}))
    info = grammar.tokenizer_info
    bitmask = np.full(xg.get_bitmask_shape(1, info.vocab_size), -1, dtype=np.int32)
    rng = random.Random(7)
    finished = 0
    for _ in range(6):
        out = random_walk(grammar, rng, bitmask, 48)
        if out is not None:
            assert check.is_valid(json.loads(out.decode("utf-8"))), out
            finished += 1
    assert finished > 0


def test_a_pattern_beyond_the_regex_subset_stays_the_policy_error():
    # Look-ahead has no automaton: the intersection is refused (it once rewrote without end).
    schema = {"allOf": [{"type": "string", "pattern": "a"}, {"pattern": "^x((?!mode).)*$"}]}
    with pytest.raises(_native.UnsupportedSchemaError, match="'pattern' at /"):
        to_ebnf(schema)
