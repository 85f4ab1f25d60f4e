"""Large rule bodies and right-linear groups are determinised once per process and shared
across grammars (fsm_builder.cc, "Shared rule DFAs"): a grammar built from the shared table
must be exactly the grammar a cold build gives (rule references mapped to the grammar's own
rules, counted loops with the grammar's own limits), and the node limit must refuse it exactly
where a cold build would."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import xg2_plugin as xg
from xg2_test_support import hf_tokenizer_info

ROOT = Path(__file__).resolve().parents[2]

# A closed rule body of some thousand distinct nodes (shared as a rule DFA); the date-time
# format, whose leap-second table is one rule of ~5,000 states that calls another (shared as
# a rule DFA with a rule edge); and a pattern under a long maxLength, which the JSON Schema
# frontend writes as one right-linear rule per automaton state (shared as a merged group).
_WIDE = " | ".join(f'"k{i:04d}" [a-f]{{2}} ("x" | "y{i % 7}")' for i in range(300))
GRAMMAR_A = f'root ::= "<" wide ">" | "[" wide "]"\nwide ::= {_WIDE}\n'
GRAMMAR_B = f'root ::= "(" other ")"\nother ::= {_WIDE}\n'
SCHEMA_A = {"type": "object", "properties": {"when": {"type": "string", "format": "date-time"}},
            "required": ["when"], "additionalProperties": False}
SCHEMA_B = {"type": "array", "items": {"type": "string", "format": "date-time"}, "maxItems": 3}
_VERSION = {"type": "string", "pattern": "^(\\d+\\.\\d+\\.\\d+.*)$", "maxLength": 32}
SCHEMA_GROUP_A = {"type": "object", "properties": {"version": _VERSION}, "required": ["version"]}
SCHEMA_GROUP_B = {"type": "array", "items": _VERSION, "maxItems": 2}

_COLD = """
import json, sys
import xg2_plugin as xg
from xg2_test_support import hf_tokenizer_info
kind, text, nodes = sys.argv[1], sys.argv[2], int(sys.argv[3])
c = xg.GrammarCompiler(hf_tokenizer_info("llama3.1"), precompute_nodes=0, cache_enabled=False,
                       limits=xg.CompileLimits(max_fsm_nodes=nodes))
try:
    g = c.compile_grammar(text) if kind == "ebnf" else c.compile_json_schema(text)
    print(json.dumps({"dump": g._handle.fsm_dump()}))
except xg.XG2Error as e:
    print(json.dumps({"error": type(e).__name__}))
"""


def _cold(kind: str, text: str, max_nodes: int = 4_000_000) -> dict:
    """The grammar built in a fresh process (empty shared table)."""
    # The package the tests run against (the working tree in development, site-packages in CI,
    # where the tree holds no built module), not whatever the repository root would shadow.
    package_parent = Path(xg.__file__).resolve().parent.parent
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(package_parent), str(ROOT / "tests")]))
    out = subprocess.run([sys.executable, "-c", _COLD, kind, text, str(max_nodes)], env=env, cwd=ROOT / "tests",
                         capture_output=True, text=True, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def _warm(kind: str, text: str, max_nodes: int = 4_000_000) -> dict:
    c = xg.GrammarCompiler(hf_tokenizer_info("llama3.1"), precompute_nodes=0, cache_enabled=False,
                           limits=xg.CompileLimits(max_fsm_nodes=max_nodes))
    try:
        g = c.compile_grammar(text) if kind == "ebnf" else c.compile_json_schema(text)
        return {"dump": g._handle.fsm_dump()}
    except xg.XG2Error as e:
        return {"error": type(e).__name__}


# A body that refers to rules of its grammar: the same body text over rules with other ids
# (padding rules before and between them), over the same rules in the other id order, and over a rule
# that is nullable in one grammar and not in the other (the repetition around it is then
# compressed in one and explicit in the other).
_REFS = " | ".join(f'"r{i:03d}" (alpha | beta) [a-f]{{2}} beta' for i in range(120))
# The referenced rules are recursive, so that inlining (inline_rules.h) keeps them rules.
_ALPHA = 'alpha ::= "a" | "(" alpha ")"\n'
_BETA = 'beta ::= "b" | "[" beta "]"\n'
GRAMMAR_REFS_A = f'root ::= wide ";" wide\n{_ALPHA}{_BETA}wide ::= {_REFS}\n'
GRAMMAR_REFS_B = (f'root ::= wide ";" wide pad pad2\npad ::= "p" | "q" pad\n{_ALPHA}pad2 ::= "q" | "p" pad2\n'
                  f'{_BETA}wide ::= {_REFS}\n')
GRAMMAR_REFS_SWAPPED = f'root ::= wide ";" wide\n{_BETA}{_ALPHA}wide ::= {_REFS}\n'
_AROUND = '"<" ("x" alpha "y"){0,150} ">"'
GRAMMAR_NULLABLE_A = f'root ::= {_AROUND}\n{_ALPHA}'
GRAMMAR_NULLABLE_B = f'root ::= {_AROUND}\nalpha ::= "" | "(" alpha ")"\n'
GRAMMAR_NULLABLE_C = f'root ::= "<" alpha{{0,150}} ">"\n{_ALPHA}'
GRAMMAR_NULLABLE_D = f'root ::= "<" alpha{{0,150}} ">"\nalpha ::= "" | "(" alpha ")"\n'


@pytest.mark.parametrize("kind, first, second", [
    ("ebnf", GRAMMAR_A, GRAMMAR_B),
    ("schema", json.dumps(SCHEMA_A), json.dumps(SCHEMA_B)),
    ("schema", json.dumps(SCHEMA_GROUP_A), json.dumps(SCHEMA_GROUP_B)),
    ("ebnf", GRAMMAR_REFS_A, GRAMMAR_REFS_B),
    ("ebnf", GRAMMAR_REFS_A, GRAMMAR_REFS_SWAPPED),
    ("ebnf", GRAMMAR_NULLABLE_A, GRAMMAR_NULLABLE_B),
    ("ebnf", GRAMMAR_NULLABLE_C, GRAMMAR_NULLABLE_D),
    # x{10,70} is compressed (70 > 64) with its 60 optional iterations written out, x{10,60}
    # is not compressed: the same counts, two lowerings, two keys.
    ("ebnf", 'root ::= "<" "x"{10,70} ">"\n', 'root ::= "<" "x"{10,60} ">"\n'),
    ("ebnf", 'root ::= "<" "x"{10,60} ">"\n', 'root ::= "<" "x"{10,70} ">"\n'),
    # Bounded strings whose optional iterations fold into a counted loop share one DFA; the
    # loop's limit is each grammar's own.
    ("schema", json.dumps({"type": "string", "maxLength": 300}), json.dumps({"type": "string", "maxLength": 5000})),
    ("schema", json.dumps({"type": "string", "minLength": 200, "maxLength": 700}),
     json.dumps({"type": "string", "minLength": 1000, "maxLength": 1400})),
])
def test_shared_dfas_build_the_cold_grammar(kind: str, first: str, second: str) -> None:
    _warm(kind, first)  # fills the table with the shared rule / group
    for text in (first, second):
        warm = _warm(kind, text)
        assert "dump" in warm
        assert warm == _cold(kind, text)


def test_shared_dfas_respect_the_node_limit() -> None:
    _warm("ebnf", GRAMMAR_A)
    # The smallest node limit a warm build (from the shared table) passes, by bisection; a
    # cold build must pass there too and fail one below.
    lo, hi = 1, 1_000_000
    assert "dump" in _warm("ebnf", GRAMMAR_B, hi)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if "dump" in _warm("ebnf", GRAMMAR_B, mid):
            hi = mid
        else:
            lo = mid
    assert lo > 1000  # the limit binds: the NFA alone has thousands of nodes
    assert "dump" in _cold("ebnf", GRAMMAR_B, hi)
    assert _cold("ebnf", GRAMMAR_B, lo) == _warm("ebnf", GRAMMAR_B, lo) == {"error": "ResourceLimitError"}


def test_shared_bounded_string_keeps_its_own_bound() -> None:
    """After a grammar with maxLength 300 filled the table, maxLength 5000 (same DFA, other
    loop limit) accepts exactly 5000 characters, and 300 still stops at 300."""
    c = xg.GrammarCompiler(hf_tokenizer_info("llama3.1"), cache_enabled=False)
    for bound in (300, 5000, 300):
        g = c.compile_json_schema(json.dumps({"type": "string", "maxLength": bound}))
        for length, valid in ((bound, True), (bound + 1, False)):
            m = xg.GrammarMatcher(g)
            accepted = m.accept_string('"' + "x" * length + '"')
            assert accepted == valid and (not valid or m.is_completed()), (bound, length)


def test_rule_calling_a_lifted_repetition_body_is_not_shared() -> None:
    """A repetition body that is not a prefix code becomes a synthetic rule of the grammar,
    cached per body: the second rule that repeats it calls that rule without creating it, so
    its DFA names a rule of this grammar only and must not enter the table (a second compile
    would find an edge to a rule it never made)."""
    grammar = ('root ::= A | B\nA ::= r "y" | "(" A ")"\nB ::= r "w" | "[" B "]"\n'
               'r ::= ("a" | "ab"){0,20}\n')
    c = xg.GrammarCompiler(hf_tokenizer_info("llama3.1"), precompute_nodes=0, cache_enabled=False,
                           repetition_compression_threshold=8)
    dumps = [c.compile_grammar(grammar)._handle.fsm_dump() for _ in range(2)]
    assert dumps[0] == dumps[1]
    m = xg.GrammarMatcher(c.compile_grammar(grammar))
    assert m.accept_string("(" + "ab" * 20 + "y)") and m.is_completed()


def test_shared_table_is_observable() -> None:
    # A body no other test compiles (a fresh token in every alternative): the first grammar
    # misses and stores it, a second grammar with the same body under another rule finds it.
    token = os.urandom(6).hex()
    body = " | ".join(f'"{token}{i:03d}" [a-f]{{2}} ("x" | "y{i % 5}")' for i in range(200))
    before = xg.shared_rule_dfa_stats()
    _warm("ebnf", f'root ::= "<" first ">" | "[" first "]"\nfirst ::= {body}\n')
    stored = xg.shared_rule_dfa_stats()
    _warm("ebnf", f'root ::= "[" second "]" | "<" second ">"\nsecond ::= {body}\n')
    found = xg.shared_rule_dfa_stats()
    assert set(found) == {"entries", "bytes", "limit_bytes", "hits", "misses", "evictions"}
    assert stored["misses"] > before["misses"]
    assert found["hits"] > stored["hits"]
    assert found["misses"] == stored["misses"]
    assert 0 < found["bytes"] <= found["limit_bytes"] == 32 << 20
    assert found["entries"] >= 1
