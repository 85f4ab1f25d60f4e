"""The grammar pass that moves a terminal expression preceding every reference to a rule into
the rule (native/grammar/sink_leading_terminals.h): which grammars it rewrites, that languages
stay the same, and that the cached masks stay equal to the reference masks."""

from __future__ import annotations

import json
import re

import pytest

import xg2_plugin as xg
from xg2_plugin.testing import ebnf_accepts
from xg2_test_support import compare_masks_along, encode_continuation, hf_tokenizer_info

NESTED = 'root ::= "{" [ ]* v [ ]* "}"\nv ::= "[" [ ]* v "]" | "x"'


@pytest.fixture(scope="module")
def compiler() -> xg.GrammarCompiler:
    return xg.GrammarCompiler(hf_tokenizer_info("llama3.1"), precompute_nodes=0)


def _rules(compiler: xg.GrammarCompiler, ebnf: str) -> dict[str, list[str]]:
    """Rule name -> dump lines of its nodes (start node first)."""
    rules: dict[str, list[str]] = {}
    name = ""
    for line in compiler.compile_grammar(ebnf)._handle.fsm_dump().splitlines():
        header = re.match(r"rule (\S+) start (\d+)", line)
        if header:
            name = header.group(1)
            rules[name] = []
        elif name:
            rules[name].append(line.strip())
    return rules


def _starts_with_space_loop(lines: list[str]) -> bool:
    node = lines[0].split(":")[0].rstrip("*")
    return f"[32-32]->{node}" in lines[0]


def test_whitespace_before_every_reference_moves_into_the_rule(compiler: xg.GrammarCompiler) -> None:
    rules = _rules(compiler, NESTED)
    assert _starts_with_space_loop(rules["v"])
    # The root calls v right after "{", without a space loop of its own there.
    assert rules["root"][1].endswith("<v>->2") and "[32-32]" not in rules["root"][1]


@pytest.mark.parametrize("ebnf", [
    # (v is recursive, so it is not inlined)
    # one reference without the whitespace
    'root ::= "a" [ ]* v | "b" v\nv ::= "x" v | "x"',
    # different expressions before the references
    'root ::= "a" [ ]* v | "b" [\\t]* v\nv ::= "x" v | "x"',
    # a reference as an alternative of its own
    'root ::= "a" [ ]* v | v\nv ::= "x" v | "x"',
])
def test_rules_with_some_other_reference_are_left_alone(compiler: xg.GrammarCompiler, ebnf: str) -> None:
    assert not _starts_with_space_loop(_rules(compiler, ebnf)["v"])


@pytest.mark.parametrize("text, expected", [
    ("{x}", True), ("{ x }", True), ("{  [ [x]] }", True), ("{[  x]}", True),
    ("{ [x ]}", False), ("{[x]] }", False), (" {x}", False), ("{x  ", False),
])
def test_language_is_unchanged(text: str, expected: bool) -> None:
    assert ebnf_accepts(NESTED, text) == expected


def test_masks_equal_the_reference_on_nested_json(compiler: xg.GrammarCompiler) -> None:
    schema = {"type": "object", "properties": {
        "items": {"type": "array", "items": {"type": "object", "properties": {
            "name": {"type": "string"}, "tags": {"type": "array", "items": {"type": "string"}},
            "extra": {}}, "required": ["name"]}},
        "meta": {"type": "object", "properties": {"id": {"type": "integer"}}}},
        "required": ["items"]}
    grammar = compiler.compile_json_schema(schema)
    document = {"items": [{"name": "a b", "tags": ["x", "y z"], "extra": {"k": [1, {"q": None}]}},
                          {"name": "c", "tags": []}], "meta": {"id": 7}}
    for text in (json.dumps(document), json.dumps(document, indent=2), json.dumps(document, separators=(",", ":"))):
        ids = encode_continuation("llama3.1", text)
        assert compare_masks_along(grammar, ids, require_accept=True) == len(ids) + 1
