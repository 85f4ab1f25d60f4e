"""A regular language the JSON Schema frontend writes as right-linear rules (its minimal DFA
above 600 states, where Minimized only trims: frontends/json_schema/right_linear_rules.h; from
33 to 600 states it is an automaton literal, printed as one rule per state) keeps a rule only for a state
entered from several places or looping; a state entered by one edge is written inside its
predecessor's rule, down to a bounded depth. The FSM builder merges the chain into one rule
DFA either way, so the language and the masks must not change with the form: checked here
with the real engine and the llama3.1 tokenizer against jsonschema and the reference mask."""

from __future__ import annotations

import json
import re

import pytest

import xg2_plugin as xg
from xg2_plugin import _native
from xg2_test_support import (
    check_accepted_as_jsonschema_says,
    compare_masks_along_valid_instances,
    hf_tokenizer_info,
)

jsonschema = pytest.importorskip("jsonschema")

# name -> (schema, instances); each language's minimal DFA has more than 32 states.
CASES = {
    # The layered automaton of a pattern under a length: hubs where layers meet.
    "pattern_under_max_length": (
        {"type": "string", "pattern": "^(\\d+\\.\\d+\\.\\d+.*)$", "maxLength": 32},
        ["1.2.3", "10.20.30-beta+build.7", "1.2.3" + "x" * 27, "1.2.3" + "x" * 28, "1.2", "a1.2.3",
         "1.2.3 \u00e9\"q\"", "1.2.3\\u0001"],
    ),
    # A long chain of single-predecessor states: nested up to the depth bound, then a new rule.
    # Above 600 states: the right-linear writer's own form.
    "large_product": (
        {"type": "string", "pattern": "^(a|b[0-9]*c)*d$", "maxLength": 300},
        ["d", "ab12cd", "a" * 299 + "d", "a" * 300 + "d", "b" + "7" * 297 + "cd", "abc", "b1c" * 99 + "d"],
    ),
    "long_literal_chain": (
        {"type": "string", "pattern": "^prefix-abcdefghijklmnopqrstuvwxyz-0123456789-[a-f]+$", "maxLength": 60},
        ["prefix-abcdefghijklmnopqrstuvwxyz-0123456789-abc", "prefix-abcdefghijklmnopqrstuvwxyz-0123456789-",
         "prefix-abcdefghijklmnopqrstuvwxyz-0123456789-" + "a" * 15,
         "prefix-abcdefghijklmnopqrstuvwxyz-0123456789-" + "a" * 16, "prefix-abcdefghijklmnopqrstuvwxyz-012345678-a"],
    ),
}


def _chain(schema: dict) -> dict[str, str]:
    ebnf, _ = _native._json_schema_to_ebnf(json.dumps(schema), strict_mode=False)
    bodies = {}
    for line in ebnf.splitlines():
        name, _, body = line.partition(" ::= ")
        if re.fullmatch(r"value_chars(_\d+)?", name):
            bodies[name] = body
    return bodies, ebnf


# One character class in the printed body (a state's step).
CLASS = re.compile(r"\[(?:\\.|[^\]\\])*\]")


# The cases whose minimal DFA has 33 to 600 states: an automaton literal (grammar/automaton_literal.h).
LITERAL_CASES = ["long_literal_chain", "pattern_under_max_length"]


@pytest.mark.parametrize("case", LITERAL_CASES)
def test_mid_sized_language_is_an_automaton_literal(case: str) -> None:
    schema, _ = CASES[case]
    bodies, ebnf = _chain(schema)
    assert list(bodies) == ["value_chars"], ebnf
    assert re.search(r"^value_chars__s[0-9]+ ::= ", ebnf, re.MULTILINE), ebnf
    assert _native._json_schema_grammar_matches_parse(json.dumps(schema), strict_mode=False)


@pytest.mark.parametrize("case", sorted(set(CASES) - set(LITERAL_CASES)))
def test_chain_keeps_only_shared_or_looping_states(case: str) -> None:
    schema, _ = CASES[case]
    bodies, ebnf = _chain(schema)
    assert len(bodies) > 1, f"expected a chain of right-linear rules\n{ebnf}"
    for name, body in bodies.items():
        if name == "value_chars" or re.search(rf"\b{name}\b", body):
            continue  # the head, or a state with a self-loop
        users = [(user, m.start()) for user, text in bodies.items() for m in re.finditer(rf"\b{name}\b", text)]
        if len(users) >= 2:
            continue
        # Used once: a rule only because nesting it would pass the depth bound, so at least
        # that many states (one class each) lead to it inside its user.
        (user, at), = users
        assert len(CLASS.findall(bodies[user][:at])) >= 16, (name, user, ebnf)


@pytest.mark.parametrize("case", sorted(CASES))
def test_instances_accepted_as_jsonschema_says(case: str) -> None:
    schema, instances = CASES[case]
    grammar = xg.GrammarCompiler(hf_tokenizer_info("llama3.1")).compile_json_schema(schema, strict_mode=False)
    check_accepted_as_jsonschema_says(grammar, schema, instances)


@pytest.mark.parametrize("case", sorted(CASES))
def test_masks_match_reference(case: str) -> None:
    schema, instances = CASES[case]
    grammar = xg.GrammarCompiler(hf_tokenizer_info("llama3.1")).compile_json_schema(schema, strict_mode=False)
    steps = compare_masks_along_valid_instances(grammar, schema, instances)
    assert steps > 10
