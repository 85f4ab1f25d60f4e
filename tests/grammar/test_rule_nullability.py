"""Rule nullability in the FSM builder (native/grammar/fsm_builder.cc, LoweringContext).

Whether a repetition's body can match the empty string decides whether the repetition may be
compressed into a counted loop (a nullable body would let the counter run through empty
iterations, so it stays explicit). Nullability reaches a rule through the rules it calls; here
it travels back along a chain of rules declared caller first, which the builder must follow to
the end in both directions: a nullable end makes every link nullable (no loop), a non-nullable
end none (a loop)."""

from __future__ import annotations

import pytest

import xg2_plugin as xg
from xg2_plugin import _native
from xg2_test_support import hf_tokenizer_info

CHAIN = 40
REPEAT = 2000  # above the default compression threshold


def chain_grammar(nullable_end: bool) -> str:
    # Each link is recursive, so the inlining pass leaves the chain as rules.
    lines = [f'root ::= "[" link0{{0,{REPEAT}}} "]"']
    for i in range(CHAIN):
        lines.append(f'link{i} ::= link{i + 1} | "(" link{i} ")"')
    end = '"" | "y"' if nullable_end else '"y"'
    lines.append(f'link{CHAIN} ::= {end} | "(" link{CHAIN} ")"')
    return "\n".join(lines)


@pytest.mark.parametrize("nullable_end", [True, False])
def test_nullability_follows_a_caller_first_chain(nullable_end: bool) -> None:
    ebnf = chain_grammar(nullable_end)
    compiler = xg.GrammarCompiler(hf_tokenizer_info("llama3.1"), cache_enabled=False)
    dump = compiler.compile_grammar(ebnf)._handle.fsm_dump()
    nullable_rules = {line.split()[1] for line in dump.splitlines()
                      if line.startswith("rule ") and "(nullable)" in line}
    links = {f"link{i}" for i in range(CHAIN + 1)}
    if nullable_end:
        assert links <= nullable_rules
        assert "(loop" not in dump  # a nullable body is never compressed
    else:
        assert not links & nullable_rules
        assert "(loop" in dump
    assert _native.ebnf_accepts(ebnf, b"[(y)y]", "root", 256, 128)
    assert _native.ebnf_accepts(ebnf, b"[()]", "root", 256, 128) == nullable_end
    assert not _native.ebnf_accepts(ebnf, b"[(y]", "root", 256, 128)
