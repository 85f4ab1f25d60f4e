"""Determinisation fallback (native/grammar/fsm_builder.cc, DeterminisationExplosion).

A regular rule whose DFA is exponential in its NFA (``[ab]*a[ab]{22}`` needs 2^23 subset
states) is not refused: its determinisation stops at a cap proportional to the NFA and the
rule is lowered again with its compound parts as rules of their own, which the Earley parser
runs exactly. These tests check that such grammars compile within a node limit far below the
full DFA (the work before falling back is bounded), that the language equals Python's
``re.fullmatch`` on random strings, that cached masks equal the reference walk along random
token walks, and that rules below the cap keep their single DFA.
"""

from __future__ import annotations

import json
import random
import re

import pytest

import xg2_plugin as xg
from xg2_test_support import compare_masks_along, hf_tokenizer_info, sampled_walk, string_accepted

TOKENIZER = "llama3.1"

# Exponential DFAs: the last `n` characters must be remembered until the string ends.
EXPONENTIAL_REGEXES = ["[ab]*a[ab]{22}", "(a|b)*a(a|b){15}c"]
# Well above every DFA the fallback builds, far below the 2^23 states of the full DFA.
SMALL_NODE_LIMIT = 20_000


@pytest.fixture(scope="module")
def compiler() -> xg.GrammarCompiler:
    return xg.GrammarCompiler(hf_tokenizer_info(TOKENIZER), cache_enabled=False)


def fallback_rules(grammar: xg.CompiledGrammar) -> list[str]:
    return [line.split()[1] for line in grammar._handle.fsm_dump().splitlines()
            if line.startswith("rule ") and "#part" in line.split()[1]]


def random_strings(rng: random.Random, alphabet: str, lengths: range, count: int) -> list[str]:
    return ["".join(rng.choice(alphabet) for _ in range(rng.choice(lengths))) for _ in range(count)]


@pytest.mark.parametrize("pattern", EXPONENTIAL_REGEXES)
def test_exponential_regex_compiles_within_a_small_node_limit(pattern: str) -> None:
    limited = xg.GrammarCompiler(hf_tokenizer_info(TOKENIZER), cache_enabled=False,
                                 limits=xg.CompileLimits(max_fsm_nodes=SMALL_NODE_LIMIT))
    grammar = limited.compile_regex(pattern)
    assert fallback_rules(grammar), "the exploding rule should have been split into parts"


@pytest.mark.parametrize("pattern", EXPONENTIAL_REGEXES)
def test_exponential_regex_language_equals_re(compiler: xg.GrammarCompiler, pattern: str) -> None:
    grammar = compiler.compile_regex(pattern)
    python = re.compile(pattern)
    rng = random.Random(pattern)
    texts = random_strings(rng, "ab", range(12, 30), 300) + random_strings(rng, "abc", range(14, 26), 200)
    texts += ["", "a", "a" * 23, "b" * 23, "a" + "b" * 22, "a" + "b" * 15 + "c", "a" * 16 + "c"]
    verdicts = {text: bool(python.fullmatch(text)) for text in texts}
    assert any(verdicts.values()) and not all(verdicts.values())  # both sides are exercised
    for text, expected in verdicts.items():
        assert string_accepted(grammar, text) == expected, (pattern, text)


def _check_masks_on_walks(grammar: xg.CompiledGrammar, seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(2):
        walk = sampled_walk(grammar, rng, 24)
        assert walk
        assert compare_masks_along(grammar, walk, require_accept=True) == len(walk) + 1


@pytest.mark.parametrize("pattern", EXPONENTIAL_REGEXES)
def test_exponential_regex_masks_equal_the_reference(compiler: xg.GrammarCompiler, pattern: str) -> None:
    grammar = compiler.compile_regex(pattern)
    _check_masks_on_walks(grammar, seed=len(pattern))


# A JSON Schema pattern is written into the string rule as the regex frontend's expression,
# so it goes through the same rule lowering and the same fallback.
PATTERN_SCHEMA = json.dumps({"type": "string", "pattern": "^[ab]*a[ab]{22}$"})


def test_schema_pattern_with_an_exponential_dfa(compiler: xg.GrammarCompiler) -> None:
    grammar = compiler.compile_json_schema(PATTERN_SCHEMA)
    assert fallback_rules(grammar)
    python = re.compile("[ab]*a[ab]{22}")
    rng = random.Random(3)
    texts = random_strings(rng, "ab", range(18, 30), 200)
    verdicts = {text: bool(python.fullmatch(text)) for text in texts}
    assert any(verdicts.values()) and not all(verdicts.values())
    for text, expected in verdicts.items():
        assert string_accepted(grammar, json.dumps(text)) == expected, text
    _check_masks_on_walks(grammar, seed=4)


def test_nested_explosion_inside_a_repetition(compiler: xg.GrammarCompiler) -> None:
    # The exploding part sits in a repeated alternative: it is split again inside its part.
    grammar = compiler.compile_grammar('root ::= ("x" [ab]* "a" [ab]{22} | "yz")+ "!"')
    python = re.compile("(x[ab]*a[ab]{22}|yz)+!")
    rng = random.Random(5)
    texts = []
    for _ in range(200):
        pieces = ["yz" if rng.random() < 0.3 else "x" + "".join(rng.choice("ab") for _ in range(rng.randint(20, 26)))
                  for _ in range(rng.randint(1, 3))]
        texts.append("".join(pieces) + ("!" if rng.random() < 0.9 else ""))
    verdicts = {text: bool(python.fullmatch(text)) for text in texts}
    assert any(verdicts.values()) and not all(verdicts.values())
    for text, expected in verdicts.items():
        assert string_accepted(grammar, text) == expected, text
    _check_masks_on_walks(grammar, seed=6)


def test_exploding_lookahead_is_refused_at_the_cap() -> None:
    # A lookahead must stay one byte-only DFA, so there is no fallback: the refusal comes at
    # the cap, long before the node limit.
    limited = xg.GrammarCompiler(hf_tokenizer_info(TOKENIZER), cache_enabled=False,
                                 limits=xg.CompileLimits(max_fsm_nodes=SMALL_NODE_LIMIT))
    with pytest.raises(xg.ResourceLimitError, match="lookahead assertion exceeds the determinisation limits"):
        limited.compile_grammar('root ::= item [ab]+\nitem ::= "x" (= [ab]* "a" [ab]{22})')


def test_rules_below_the_cap_keep_one_dfa(compiler: xg.GrammarCompiler) -> None:
    # 2^11 subset states: below the cap, so determinised as before.
    grammar = compiler.compile_regex("[ab]*a[ab]{10}")
    assert not fallback_rules(grammar)
    assert "#rep" not in grammar._handle.fsm_dump()
