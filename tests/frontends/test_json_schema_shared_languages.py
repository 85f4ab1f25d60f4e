"""A regular language the JSON Schema frontend writes as rules (its minimal DFA by state
elimination or one rule per state: member names of patternProperties, string patterns) is written once per
conversion and reused wherever the same language recurs (regular_language.cc,
DfaToFragment): the grammar holds one copy, and every use keeps its own language."""

from __future__ import annotations

import json

import jsonschema
import pytest

from xg2_plugin import _native
from xg2_plugin.testing import ebnf_accepts

# Member names "title_<BCP 47 language tag>" (from JSONSchemaBench Github_ultra---o65323): a
# language written as several rules.
_PATTERN = ("^(title_(((([A-Za-z]{2,3}(-([A-Za-z]{3}(-[A-Za-z]{3}){0,2}))?)|[A-Za-z]{4}|[A-Za-z]{5,8})"
            "(-([A-Za-z]{4}))?(-([A-Za-z]{2}|[0-9]{3}))?(-([A-Za-z0-9]{5,8}|[0-9][A-Za-z0-9]{3}))*"
            "(-([0-9A-WY-Za-wy-z](-[A-Za-z0-9]{2,8})+))*(-(x(-[A-Za-z0-9]{1,8})+))?)|(x(-[A-Za-z0-9]{1,8})+)))$")


def _object(value_type: str) -> dict:
    return {"type": "object", "patternProperties": {_PATTERN: {"type": value_type}},
            "additionalProperties": False}


SCHEMA = {
    "type": "object",
    "properties": {"a": _object("integer"), "b": _object("integer"), "c": _object("string")},
    "required": ["a", "b", "c"], "additionalProperties": False,
}


def _ebnf() -> str:
    ebnf, _ = _native._json_schema_to_ebnf(json.dumps(SCHEMA), any_whitespace=False, indent=None,
                                           separators=None, strict_mode=True, max_whitespace=None,
                                           lenient=False, limits=None, cancel=None)
    return ebnf


def test_the_name_language_is_written_once() -> None:
    ebnf = _ebnf()
    key_rules = [line.split(" ::=")[0] for line in ebnf.splitlines() if "_key" in line.split("::=")[0]]
    # Written for the first object ("a"), reused by the others.
    assert key_rules and all(name.startswith("a_key") for name in key_rules), key_rules


@pytest.mark.parametrize("instance", [
    {"a": {"title_en": 1}, "b": {}, "c": {"title_de-CH": "s"}},
    {"a": {}, "b": {"title_zh-Hant-TW": 2, "title_x-abc": 3}, "c": {}},
    {"a": {"title_e": 1}, "b": {}, "c": {}},
    {"a": {}, "b": {"title_en-": 1}, "c": {}},
    {"a": {}, "b": {}, "c": {"title_fr": 1}},
    {"a": {"title_fr": "s"}, "b": {}, "c": {}},
])
def test_each_use_keeps_its_language(instance: dict) -> None:
    text = json.dumps(instance)  # the grammar's default separators
    assert ebnf_accepts(_ebnf(), text) == jsonschema.Draft202012Validator(SCHEMA).is_valid(instance)
