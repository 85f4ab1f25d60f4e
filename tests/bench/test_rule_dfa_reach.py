"""bench/rule_dfa_reach.py: the rules the Earley parser predicts before the first byte.

The tool reads them off the FSM dump; here a grammar whose rules stay rules through the passes
(recursive, so never inlined) checks the closure: the root, the rules it calls at its start,
the rule after a nullable one, and no rule that is only called after a byte."""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

import xg2_plugin as xg  # noqa: E402
from rule_dfa_reach import parse_fsm_dump, predicted_at_start  # noqa: E402
from xg2_test_support import hf_tokenizer_info  # noqa: E402

GRAMMAR = "\n".join([
    'root ::= opt after | other',
    'opt ::= "" | "x" opt',             # nullable: what follows it is predicted too
    'after ::= "y" late | "(" after ")"',
    'other ::= "z" later | "[" other "]"',
    'late ::= "q" | "(" late ")"',      # called only after "y"
    'later ::= "w" | "(" later ")"',    # called only after "z"
])


def test_prediction_closure_of_the_start_position() -> None:
    compiler = xg.GrammarCompiler(hf_tokenizer_info("llama3.1"), cache_enabled=False)
    rules = parse_fsm_dump(compiler.compile_grammar(GRAMMAR)._handle.fsm_dump())
    assert {"root", "opt", "after", "other", "late", "later"} <= set(rules)
    assert rules["opt"]["nullable"] and not rules["after"]["nullable"]
    assert predicted_at_start(rules, "root") == {"root", "opt", "after", "other"}
    # From a rule's own start: "late" is predicted by "after" only once "y" is consumed.
    assert predicted_at_start(rules, "after") == {"after"}
