"""Right-linear rule groups become one rule DFA when the grammar FSM is built.

A rule whose only calls are tail calls of other such rules (a right-linear group: the JSON
Schema frontend writes a regular language of more than 32 states as such rules, one per state,
and hand-written EBNF often has them) has a regular language. The FSM builder
gives each member called from elsewhere one DFA for its whole language, so tokens that cross
the members' boundaries are decided by the FSM-only mask cache instead of the Earley parser.

Checked with the real engine and the llama3.1 tokenizer: the FSM of the merged rule has no
rule edges while the grammar text still holds the chain, the members reachable only through
it are emptied, a group's entry is not inlined into its caller (which would leave a call into
the middle of the group), rules with a non-tail call keep their calls, the language is unchanged
(accept/reject against Python's `re` and `jsonschema`), and the cached mask equals the
reference mask along instances and sampled walks."""

from __future__ import annotations

import json
import random
import re

import pytest

import xg2_plugin as xg
from xg2_plugin import _native
from xg2_test_support import (
    check_accepted_as_jsonschema_says,
    compare_masks_along,
    compare_masks_along_valid_instances,
    emptied,
    encode_continuation,
    fsm_calls,
    fsm_rules,
    hf_tokenizer_info,
    sampled_walk,
    string_accepted,
)

jsonschema = pytest.importorskip("jsonschema")

# The OCDS language-tag key (JSONSchemaBench o65323): its automaton is too large for one
# expression (more than 32 states), so the key is a chain of right-linear rules.
LANGUAGE_TAG = (
    "^(name_(((([A-Za-z]{2,3}(-([A-Za-z]{3}(-[A-Za-z]{3}){0,2}))?)|[A-Za-z]{4}|[A-Za-z]{5,8})"
    "(-([A-Za-z]{4}))?(-([A-Za-z]{2}|[0-9]{3}))?(-([A-Za-z0-9]{5,8}|[0-9][A-Za-z0-9]{3}))*"
    "(-([0-9A-WY-Za-wy-z](-[A-Za-z0-9]{2,8})+))*(-(x(-[A-Za-z0-9]{1,8})+))?)|(x(-[A-Za-z0-9]{1,8})+)))$"
)
TAG_SCHEMA = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "id": {"type": "integer"}},
    "patternProperties": {LANGUAGE_TAG: {"type": "string"}},
    "additionalProperties": False,
}
TAG_INSTANCES = [
    {"name": "x", "id": 3, "name_en": "English", "name_es-419": "b", "name_zh-Hant-TW": "c"},
    {"name_en-GB-oxendict": "d", "name_x-private-1": "e", "name_sgn-BE-FR": "f"},
    {"name_de-CH-1901": "g", "name_en-a-bbb-x-ccc": "h", "name_abcd": "i"},
    {"name_": "bad"}, {"name_e": "bad"}, {"name_en-": "bad"}, {"name_toolongtag": "bad"},
    {"name_en": 1}, {"other": "x"},
]

# Hand-written right-linear group: `item` is called non-tail from `root`, so it is the entry;
# `digits` and `more` are reachable only through it.
RIGHT_LINEAR_EBNF = r"""
root ::= "[" item "]" | "<" item ">"
item ::= [a-z] more | "#" digits
more ::= [a-z] more | "-" item | "." digits | ""
digits ::= [0-9] digits | [0-9] | "!" item
"""
RIGHT_LINEAR_REGEX = re.compile(r"(\[|<)((?:[a-z]+-|[a-z]+\.[0-9]*!|#[0-9]*!)*(?:[a-z]+|[a-z]+\.[0-9]+|#[0-9]+))(\]|>)")

# `head` is small and its only call is a tail call of the recursive `tail`: inlined into
# `root`, it would leave root calling `tail` after the bytes "id-", a rule boundary inside the
# language; kept, it merges with `tail` into one DFA. `dash` is called only from inside the
# group and is inlined into `head` as any small rule.
HEAD_EBNF = r"""
root ::= "(" head ")" | "[" head "]"
head ::= "id" dash
dash ::= "-" tail
tail ::= [a-z0-9] tail | [a-z0-9]
"""
HEAD_REGEX = re.compile(r"\(id-[a-z0-9]+\)|\[id-[a-z0-9]+\]")

# `wrapped` calls `inner` in the middle of its body (not a tail call), so neither merges.
NON_TAIL_EBNF = r"""
root ::= wrapped
wrapped ::= "(" inner ")" | [a-z]
inner ::= [0-9] inner | wrapped
"""


def tag_grammar(**options: object) -> xg.CompiledGrammar:
    return xg.GrammarCompiler(hf_tokenizer_info("llama3.1"), **options).compile_json_schema(TAG_SCHEMA, strict_mode=False)


def test_language_tag_key_is_one_fsm() -> None:
    ebnf, _ = _native._json_schema_to_ebnf(json.dumps(TAG_SCHEMA), strict_mode=False)
    # Right-linear rules, or an automaton literal's printed state rules (value_key__sK).
    chain = [name for name in _native._ebnf_rule_names(ebnf) if re.fullmatch(r"value_key(_\d+|__s\d+)", name)]
    assert chain, "the key is expected to stay a rule chain in the grammar text; pick a larger language"
    rules = fsm_rules(tag_grammar()._handle.fsm_dump())
    assert fsm_calls(rules["value_key"]) == [], rules["value_key"]
    # No other rule calls into the chain: its head was not inlined into the object rule.
    for rule, lines in rules.items():
        assert not set(fsm_calls(lines)) & set(chain), (rule, lines)
    for name in chain:
        # Members only the merged key called: emptied (one node, not accepting, no edges).
        if name in rules:
            assert emptied(rules[name]), (name, rules[name])


def test_language_tag_instances_accepted_as_jsonschema_says() -> None:
    check_accepted_as_jsonschema_says(tag_grammar(), TAG_SCHEMA, TAG_INSTANCES)


@pytest.mark.parametrize("mechanism", ["default", "pure_jit"])
def test_language_tag_masks_match_reference(mechanism: str) -> None:
    options = {} if mechanism == "default" else {"cross_grammar_cache": False, "precompute_nodes": 0}
    grammar = tag_grammar(**options)
    steps = compare_masks_along_valid_instances(grammar, TAG_SCHEMA, TAG_INSTANCES)
    rng = random.Random(11)
    for _ in range(4):
        steps += compare_masks_along(grammar, sampled_walk(grammar, rng, 30), require_accept=True)
    assert steps > 40


def ebnf_grammar(text: str, **options: object) -> xg.CompiledGrammar:
    return xg.GrammarCompiler(hf_tokenizer_info("llama3.1"), **options).compile_grammar(text)


def test_hand_written_group_is_one_fsm() -> None:
    rules = fsm_rules(ebnf_grammar(RIGHT_LINEAR_EBNF)._handle.fsm_dump())
    assert fsm_calls(rules["item"]) == []
    assert sorted(fsm_calls(rules["root"])) == ["item", "item"]
    # `more` and `digits` are reachable only through `item`: emptied.
    for name in ("more", "digits"):
        assert emptied(rules[name]), (name, rules[name])


def test_non_tail_calls_are_kept() -> None:
    rules = fsm_rules(ebnf_grammar(NON_TAIL_EBNF)._handle.fsm_dump())
    assert fsm_calls(rules["wrapped"]) == ["inner"]
    assert "wrapped" in fsm_calls(rules["inner"])


def test_group_entry_is_not_inlined_into_its_caller() -> None:
    rules = fsm_rules(ebnf_grammar(HEAD_EBNF)._handle.fsm_dump())
    assert sorted(fsm_calls(rules["root"])) == ["head", "head"], rules["root"]
    assert fsm_calls(rules["head"]) == [], rules["head"]
    assert "dash" not in rules
    assert emptied(rules["tail"]), rules["tail"]


@pytest.mark.parametrize("mechanism", ["default", "pure_jit"])
def test_group_entry_language_and_masks(mechanism: str) -> None:
    options = {} if mechanism == "default" else {"cross_grammar_cache": False, "precompute_nodes": 0}
    grammar = ebnf_grammar(HEAD_EBNF, **options)
    texts = ["(id-a)", "[id-x9z]", "(id-)", "(id-a]", "[id-ab-c]", "(idx)", "(id-" + "q" * 40 + ")"]
    steps = 0
    for text in texts:
        expected = HEAD_REGEX.fullmatch(text) is not None
        assert string_accepted(grammar, text) == expected, text
        if expected:
            steps += compare_masks_along(grammar, encode_continuation("llama3.1", text), require_accept=True)
    rng = random.Random(7)
    for _ in range(4):
        steps += compare_masks_along(grammar, sampled_walk(grammar, rng, 12), require_accept=True)
    assert steps > 20


TEXTS = ["[abc]", "<a-b>", "[a.12]", "[#12]", "[#!a]", "[a.!#1]", "[ab-cd.3!x]", "[]", "[a-]", "[a.]",
         "[#]", "[a.1!]", "<abc]", "[A]", "[a--b]", "[#1!#2!z]"]


@pytest.mark.parametrize("text", TEXTS)
def test_hand_written_group_language_unchanged(text: str) -> None:
    grammar = ebnf_grammar(RIGHT_LINEAR_EBNF)
    expected = RIGHT_LINEAR_REGEX.fullmatch(text) is not None and (text[0] == "[") == (text[-1] == "]")
    assert string_accepted(grammar, text) == expected
    assert _native.ebnf_accepts(RIGHT_LINEAR_EBNF, text.encode()) == expected


@pytest.mark.parametrize("mechanism", ["default", "pure_jit"])
def test_hand_written_group_masks_match_reference(mechanism: str) -> None:
    options = {} if mechanism == "default" else {"cross_grammar_cache": False, "precompute_nodes": 0}
    grammar = ebnf_grammar(RIGHT_LINEAR_EBNF, **options)
    steps = 0
    for text in TEXTS:
        if string_accepted(grammar, text):
            steps += compare_masks_along(grammar, encode_continuation("llama3.1", text), require_accept=True)
    rng = random.Random(3)
    for _ in range(4):
        steps += compare_masks_along(grammar, sampled_walk(grammar, rng, 20), require_accept=True)
    assert steps > 30
