"""The rule NFAs share what Thompson's construction would copy (fsm_builder.cc: equal tail
expressions lowered once per rule, equal ends of a choice's alternatives once per choice,
UTF-8 continuation bytes shared within a character class, subset states keyed by their
important NFA nodes). The minimal DFA must not change: a rule
written with a repeated tail equals the same language written with the tail once, and the
node budget, which counts NFA nodes and subset states, sees the smaller construction."""

from __future__ import annotations

import pytest

import xg2_plugin as xg
from xg2_plugin.testing import ebnf_accepts
from xg2_test_support import hf_tokenizer_info

# A JSON-string-like tail of more than a dozen expression nodes (worth sharing), with
# multi-byte UTF-8 characters in its class.
TAIL = '([^"\\\\] | "\\\\" ["\\\\/bfnrt] | "\\\\u" [0-9a-f]{4})*'


def _not(chars: str) -> str:
    return f'[^"\\\\{chars}]'


# The shape of the JSON Schema frontend's key-exclusion rules (a key that is not "key"): a trie
# of the excluded word where every branch that leaves it ends in the same tail.
KEY_TRIE = (
    f'root ::= "k" ("" | "e" ("" | "y" ("" | {_not("")} {TAIL}) | {_not("y")} {TAIL}) | {_not("e")} {TAIL}) '
    f'| {_not("k")} {TAIL}'
)
# The same language with the tail written once.
KEY_FACTORED = (
    f'root ::= "k" | "ke" | "key" | ("key" {_not("")} | "ke" {_not("y")} | "k" {_not("e")} | {_not("k")}) {TAIL}'
)


def _compiler(max_fsm_nodes: int | None = None) -> xg.GrammarCompiler:
    limits = xg.CompileLimits() if max_fsm_nodes is None else xg.CompileLimits(max_fsm_nodes=max_fsm_nodes)
    return xg.GrammarCompiler(hf_tokenizer_info("llama3.1"), precompute_nodes=0, cache_enabled=False, limits=limits)


def test_repeated_tails_give_the_minimal_dfa_of_the_factored_rule() -> None:
    compiler = _compiler()
    trie = compiler.compile_grammar(KEY_TRIE)._handle.fsm_dump()
    factored = compiler.compile_grammar(KEY_FACTORED)._handle.fsm_dump()
    assert trie == factored


@pytest.mark.parametrize(
    "text, expected",
    [
        ("k", True), ("ke", True), ("key", True), ("keys", True), ("keyé\\n", True), ("kex", True),
        ("kz\\u00e9", True), ("x", True), ("é", True), ("kex\\q", False), ("", False), ("k\"", False),
        ("key\\u00", False), ("ab\\", False),
    ],
)
def test_repeated_tails_keep_the_language(text: str, expected: bool) -> None:
    assert ebnf_accepts(KEY_TRIE, text) == expected


def test_repeated_tails_are_built_once_within_the_node_budget() -> None:
    # Each of the four branches copying the tail (with its multi-byte classes) made the
    # construction need ~450 nodes of budget; sharing the tail and the continuation bytes
    # keeps it near what the factored rule needs (~130). 200 fits only the shared build.
    compiler = _compiler(max_fsm_nodes=200)
    compiler.compile_grammar(KEY_FACTORED)
    compiler.compile_grammar(KEY_TRIE)


# The shape of the JSON Schema frontend's object rules: every alternative of a choice ends in
# the same expression and something follows the choice (the closing brace), so the
# alternatives' ends are not the rule's end but share the choice's continuation.
CHOICE_ENDS = f'root ::= ("a" {TAIL} | "b" {TAIL} | "c" {TAIL} | "d" {TAIL}) "!"'
CHOICE_FACTORED = f'root ::= [a-d] {TAIL} "!"'


def test_equal_ends_of_a_choice_give_the_minimal_dfa_of_the_factored_rule() -> None:
    compiler = _compiler()
    assert (compiler.compile_grammar(CHOICE_ENDS)._handle.fsm_dump()
            == compiler.compile_grammar(CHOICE_FACTORED)._handle.fsm_dump())


@pytest.mark.parametrize(
    "text, expected",
    [("ax!", True), ("d\\n!", True), ("c!", True), ("b\\u00e9x!", True), ("e!", False), ("a", False),
     ("ax", False), ("a\"!", False), ("!", False)],
)
def test_equal_ends_of_a_choice_keep_the_language(text: str, expected: bool) -> None:
    assert ebnf_accepts(CHOICE_ENDS, text) == expected


def _smallest_budget(ebnf: str) -> int:
    low, high = 1, 10_000
    while low < high:
        mid = (low + high) // 2
        try:
            _compiler(max_fsm_nodes=mid).compile_grammar(ebnf)
            high = mid
        except xg.ResourceLimitError:
            low = mid + 1
    return low


def test_equal_ends_of_a_choice_are_built_once() -> None:
    # Four copies of the tail (with its multi-byte classes) needed about four times the
    # factored rule's budget; one shared copy needs about what the factored rule does.
    assert _smallest_budget(CHOICE_ENDS) <= _smallest_budget(CHOICE_FACTORED) + 16


def test_a_single_tail_costs_no_extra_node() -> None:
    # A tail that occurs once is lowered in place, without an entry node of its own: the rule
    # needs no more budget than the same rule with one more byte after that tail (where the
    # first version of the sharing needed one entry node per tail candidate, three here).
    body = " ".join(["[a-z]"] * 12)
    single = f'root ::= "x" ({body}) | "y"'
    # The same rule with the 12 classes in non-tail position (followed by a byte).
    assert _smallest_budget(single) <= _smallest_budget(f'root ::= "x" ({body}) "z" | "y"')
    # Likewise for the end of an alternative of a choice that something follows.
    assert _smallest_budget(f'root ::= ("x" ({body}) | "y") "!"') <= _smallest_budget(
        f'root ::= ("x" ({body}) "z" | "y") "!"')
