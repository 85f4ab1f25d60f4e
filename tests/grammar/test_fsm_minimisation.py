"""Rule DFAs are minimal (fsm_builder.cc: Moore's rounds for small machines, Hopcroft's
algorithm above), whatever their size, and minimisation keeps each rule's language."""

from __future__ import annotations

import pytest

import xg2_plugin as xg
from xg2_plugin.testing import ebnf_accepts
from xg2_test_support import hf_tokenizer_info


@pytest.fixture(scope="module")
def compiler() -> xg.GrammarCompiler:
    return xg.GrammarCompiler(hf_tokenizer_info("llama3.1"), precompute_nodes=0)


def _nodes(compiler: xg.GrammarCompiler, ebnf: str) -> int:
    return compiler.compile_grammar(ebnf)._handle.num_nodes


@pytest.mark.parametrize("zeros", [3, 40, 200])
def test_equal_suffixes_merge_at_every_size(compiler: xg.GrammarCompiler, zeros: int) -> None:
    # Two branches with the same tail: the minimal DFA reads "k", one of [ab], then one chain
    # of zeros (start + 1 + zeros + 1 states). 200 zeros puts the unminimised machine (two
    # chains) past the size where minimisation used to be skipped.
    tail = "0" * zeros  # a literal, not a repetition (long ones are compressed)
    ebnf = f'root ::= "k" ("a{tail}" | "b{tail}")'
    assert _nodes(compiler, ebnf) == zeros + 3
    assert ebnf_accepts(ebnf, "ka" + "0" * zeros)
    assert ebnf_accepts(ebnf, "kb" + "0" * zeros)
    assert not ebnf_accepts(ebnf, "kc" + "0" * zeros)
    assert not ebnf_accepts(ebnf, "ka" + "0" * (zeros - 1))
    assert not ebnf_accepts(ebnf, "ka" + "0" * (zeros + 1))


@pytest.mark.parametrize("zeros", [1, 40])
def test_states_whose_ranges_are_cut_differently_merge(compiler: xg.GrammarCompiler, zeros: int) -> None:
    # After "x" the letters step through [a-m] and [n-z] to two equivalent states; after "y"
    # through [a-z] to a third. Once those merge, the states after "x" and "y" are equivalent
    # too: start, one state for both, one after the letter, then the zeros.
    tail = "0" * zeros
    ebnf = f'root ::= "x" ([a-m] "{tail}" | [n-z] "{tail}") | "y" [a-z] "{tail}"'
    assert _nodes(compiler, ebnf) == zeros + 3
    for text, expected in [("xa", True), ("xz", True), ("yq", True), ("x0", False), ("za", False)]:
        assert ebnf_accepts(ebnf, text + "0" * zeros) == expected, text


@pytest.mark.parametrize("zs", [1, 40])
def test_block_splits_three_ways_by_the_symbols_into_a_splitter(compiler: xg.GrammarCompiler, zs: int) -> None:
    # The states after "a", "b", "c" and "d" all step into the state before the z's, on
    # {0-3}, {0-1}, {0-1} then {2-3} (two runs that join into {0-3}), and {2-3}: one block
    # that Hopcroft's algorithm (used from 33 states) splits into three parts at once. Minimal:
    # start, after "k", three states for a/c, b and d, then the z chain.
    tail = "z" * zs
    ebnf = f'root ::= "k" ("a" [0-3] | "b" [0-1] | "c" ([0-1] | [2-3]) | "d" [2-3]) "{tail}"'
    assert _nodes(compiler, ebnf) == zs + 6
    cases = [("ka3", True), ("kc3", True), ("kc0", True), ("kb1", True), ("kb2", False), ("kd2", True),
             ("kd1", False), ("ke0", False)]
    for text, expected in cases:
        assert ebnf_accepts(ebnf, text + tail) == expected, text


# An expression that inlining shares among several parents is determinised once and copied
# (fsm_builder.cc, LoweringContext "Fragments"): the rule DFAs must be exactly those of the
# same grammar written out with an unshared copy at every occurrence.
_STR = "\"'\" ([a-z] | \"\\\\\" [\"'nt] | \"\\\\u\" [0-9a-f]{4} | [\\u00e9-\\u00fc])* \"'\""
_ITEM_SHAPES = ['"k" {s}', '"[" {s}* "]"', '{s} {s}', '"o" ({s} "=" {s})? "."', '{s} ":" ("n" | {s}) {s}']


def _fragment_grammars() -> tuple[str, str]:
    shared = " | ".join(shape.format(s="str") for shape in _ITEM_SHAPES)
    written = " | ".join(shape.format(s=f"({_STR})") for shape in _ITEM_SHAPES)
    head = 'root ::= item ("," item)*\n'
    return head + f"item ::= {shared}\nstr ::= {_STR}\n", head + f"item ::= {written}\n"


def test_shared_fragments_give_the_written_out_dfas(compiler: xg.GrammarCompiler) -> None:
    shared, written = _fragment_grammars()
    assert compiler.compile_grammar(shared)._handle.fsm_dump() == compiler.compile_grammar(written)._handle.fsm_dump()


@pytest.mark.parametrize("text, ok", [
    ("k'ab'", True), ("[]", True), ("['a''\\n''\\u00ff']", True), ("'x''y'", True), ("o.", True),
    ("o'a'='b'.", True), ("'a':n'b'", True), ("'a':'b''c',k'é'", True), ("k'a\\u12'", False),
    ("k'a", False), ("'a':'b'", False), ("o'a'.", False), ("k'\\x'", False), ("[k'a']", False),
])
def test_shared_fragments_keep_the_language(text: str, ok: bool) -> None:
    shared, written = _fragment_grammars()
    assert ebnf_accepts(shared, text) is ok
    assert ebnf_accepts(written, text) is ok
