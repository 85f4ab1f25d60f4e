"""Regular languages the JSON Schema frontend builds as automata (patternProperties keys, a
pattern next to a length, keys outside many declared properties) end up as ONE rule DFA in the
compiled grammar: a small automaton written as one rule whose body is a regular expression, a
larger one as an automaton node the FSM builder copies (printed as right-linear rules, one per
state), or past that as a chain of right-linear rules that the FSM builder merges. A rule
boundary inside the language left every token that crossed it uncertain, for the Earley
parser, at fill time.

Each shape is checked three ways with the real engine and the llama3.1 tokenizer: no rule of
the compiled FSM calls into the language's chain (neither the merged head nor a caller it was
inlined into), instances are accepted or rejected as jsonschema says, and the cached mask
equals the reference mask at every step of valid instances (declared properties first, in
schema order, as the grammar writes objects) and of sampled walks."""

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
    fsm_calls,
    fsm_rules,
    hf_tokenizer_info,
    sampled_walk,
)

jsonschema = pytest.importorskip("jsonschema")

DECLARED = [f"{word}_{i}" for i, word in enumerate(
    ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa", "lambda", "mu",
     "nu", "xi", "omicron", "pi", "rho", "sigma", "tau", "upsilon"])]

# name -> (schema, the rule name of the language (a chain of right-linear rules numbers the
# rest name_2, name_3, ...; an automaton node prints its states as name__s1, name__s2, ...),
# whether the language is expected as such a chain, instances)
CASES = {
    "pattern_properties_key": (
        {"type": "object", "additionalProperties": False,
         "patternProperties": {"^[a-zA-Z]+://[^ \"]+$": {"type": "string"}}},
        "value_key", False,
        [{"http://example.com/x": "a", "https://e.org/y?z=1": "b"}, {}, {"h://\\u00e9": ""},
         {"http:/x": "a"}, {"1http://x": "a"}, {"http://a b": "a"}, {"http://": "a"}],
    ),
    "pattern_properties_any_key_next_to_declared": (
        {"type": "object", "required": ["basic"], "properties": {"basic": {"type": "string"}},
         "patternProperties": {".*": {"type": "string"}}},
        "value_key", False,
        [{"basic": "x", "extra": "y", "ba": "z", "basi": "w", "basics": "v"}, {"basic": "x", "other": 1},
         {"extra": "y"}, {"basic": "x", "": "empty key"}],
    ),
    "pattern_with_max_length": (
        {"type": "string", "pattern": "^[a-z]+(-[a-z]+)*$", "maxLength": 12},
        "value_chars", False,
        ["abc", "abc-de-f", "a-b-c-d-e-f", "abcdefghijkl", "abcdefghijklm", "-abc", "abc-", "ab--c", ""],
    ),
    # The layered automaton of a pattern under a long maxLength (hundreds of states) has no
    # small expression: one right-linear rule per state.
    "pattern_with_long_max_length": (
        {"type": "string", "pattern": "^(\\d+\\.\\d+\\.\\d+.*)$", "maxLength": 32},
        "value_chars", True,
        ["1.2.3", "10.20.30-beta+build.7", "1.2.3" + "x" * 27, "1.2.3" + "x" * 28, "1.2", "a1.2.3", "1.2.3\t",
         "1.2.3 \u00e9\"q\""],
    ),
    "keys_outside_many_declared": (
        {"type": "object", "properties": {name: {"type": "integer"} for name in DECLARED},
         "additionalProperties": {"type": "string"}},
        "key_suffix", False,
        [{DECLARED[0]: 1, "alpha": "x", "alpha_": "y", "alpha_00": "z"}, {DECLARED[3]: "not an integer"},
         {DECLARED[19]: 7, "zzz": "free"}, {"beta_1": 2, "alpha_0x": "s"}, {"upsilon_19": "wrong type"}],
    ),
}



@pytest.mark.parametrize("case", sorted(CASES))
def test_language_is_one_rule_dfa(case: str) -> None:
    schema, name, is_chain, _ = CASES[case]
    ebnf, _warnings = _native._json_schema_to_ebnf(json.dumps(schema), strict_mode=False)
    chain = {n for n in _native._ebnf_rule_names(ebnf) if re.fullmatch(re.escape(name) + r"(_\d+|__s\d+)", n)}
    assert bool(chain) == is_chain, f"expected the language {'as' if is_chain else 'not as'} a rule chain\n{ebnf}"
    grammar = xg.GrammarCompiler(hf_tokenizer_info("llama3.1")).compile_json_schema(schema, strict_mode=False)
    rules = fsm_rules(grammar._handle.fsm_dump())
    for rule, lines in rules.items():
        assert not set(fsm_calls(lines)) & chain, f"{rule} calls into the chain of {name}: {lines}"
    for member in chain & set(rules):
        assert emptied(rules[member]), (member, rules[member])


@pytest.mark.parametrize("case", sorted(CASES))
def test_instances_accepted_as_jsonschema_says(case: str) -> None:
    schema, _, _, instances = CASES[case]
    grammar = xg.GrammarCompiler(hf_tokenizer_info("llama3.1")).compile_json_schema(schema, strict_mode=False)
    check_accepted_as_jsonschema_says(grammar, schema, instances)


@pytest.mark.parametrize("mechanism", ["default", "pure_jit"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_masks_match_reference(case: str, mechanism: str) -> None:
    schema, _, _, instances = CASES[case]
    info = hf_tokenizer_info("llama3.1")
    options = {} if mechanism == "default" else {"cross_grammar_cache": False, "precompute_nodes": 0}
    grammar = xg.GrammarCompiler(info, **options).compile_json_schema(schema, strict_mode=False)
    steps = compare_masks_along_valid_instances(grammar, schema, instances)
    rng = random.Random(5)
    for _ in range(3):
        steps += compare_masks_along(grammar, sampled_walk(grammar, rng, 25), require_accept=True)
    assert steps > 20
