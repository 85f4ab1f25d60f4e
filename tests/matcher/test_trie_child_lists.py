"""Trie child lists: the classification walk visits, below a trie node with many children,
only the children its DFA node steps on or may leave the rule on (VocabularyIndex::trie_children
in matcher/vocabulary_index.h, walked by matcher/mask_cache/token_classifier.cc), and all of
them once the parser may have left. The prefixes with the most children are a space and a
newline, which JSON separators with flexible whitespace and whitespace loops in EBNF step on:
these cases put leave sets (a callee's first bytes after a loop) right below such prefixes,
where a skipped child would lose uncertain tokens, and compare every mask with the reference
walk."""

from __future__ import annotations

import random

import numpy as np
import pytest

import xg2_plugin as xg
from xg2_test_support import compare_masks_along, compare_masks_on_sampled_walks, encode_continuation, hf_tokenizer_info

TOKENIZERS = ("llama3.1", "qwen3")

INDENTED_SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "tags": {"type": "array", "items": {"type": "integer"}},
        "nested": {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"],
                   "additionalProperties": False},
    },
    "required": ["name", "tags", "nested"],
    "additionalProperties": False,
}
INDENTED_TEXTS = [
    '{"name": "x", "tags": [1, 2,   3], "nested": {"ok": true}}',
    '{\n  "name" :\t"y",\n\n  "tags": [\n    10,\n    20\n  ],\n  "nested":  {  "ok":false }\n}',
]

# The loop after "x" can leave its rule (item, recursive so never inlined, is called after
# it): tokens such as ' "' and '\n1' are uncertain there, decided by the parser.
LEAVING_LOOP_EBNF = r"""
root ::= "x" [ \t\n]* item ([ \n]* "," [ \n]* item)*
item ::= "\"" [a-z]* "\"" | [0-9]+ | "{" [ \n]* "}" | "[" [ \n]* item [ \n]* "]"
"""
LEAVING_LOOP_TEXTS = ['x "ab" , 12,\n\n{ }', 'x\n\t"zz",  "q"', "x{\n}", "x   7", 'x [ ["a"]\n],\n [ 3 ]']



def _grammars(info: xg.TokenizerInfo) -> list[tuple[xg.CompiledGrammar, list[str]]]:
    # No precompute and no cache: the matcher's own fills classify every node they meet.
    compiler = xg.GrammarCompiler(info, precompute_nodes=0, cache_enabled=False)
    return [(compiler.compile_json_schema(INDENTED_SCHEMA), INDENTED_TEXTS),
            (compiler.compile_grammar(LEAVING_LOOP_EBNF), LEAVING_LOOP_TEXTS)]


@pytest.mark.parametrize("tokenizer", TOKENIZERS)
def test_whitespace_prefixes_match_reference(tokenizer: str) -> None:
    info = hf_tokenizer_info(tokenizer)
    compared = 0
    for grammar, texts in _grammars(info):
        for text in texts:
            compared += compare_masks_along(grammar, encode_continuation(tokenizer, text), require_accept=True)
    assert compared > 60


@pytest.mark.parametrize("tokenizer", TOKENIZERS)
def test_whitespace_prefixes_match_reference_on_sampled_walks(tokenizer: str) -> None:
    info = hf_tokenizer_info(tokenizer)
    rng = random.Random(5)
    for grammar, _ in _grammars(info):
        compare_masks_on_sampled_walks(grammar, rng, walks=3, steps=32)


def test_children_kept_once_the_parser_may_have_left() -> None:
    """Below "  " the parser may already have left the loop: its first space is the loop's and
    its second starts an item. The letters after "  " are then uncertain, not rejected, though
    the loop does not step on them ("  a" is the loop's space and the item " a"). Real
    vocabularies split such runs (two spaces, then a letter) in pre-tokenization, so this
    vocabulary is made for the case: "  " has nine children, enough for a child list. (The
    item is recursive and referenced after different terminals, so that it is neither inlined
    nor given the loop's spaces: the loop's node keeps a rule edge, and ' ' in its leave set.)"""
    letters = "abcdefghi"
    vocab = ["x", " ", "  ", ",", "[", "]", *letters, *(" " + c for c in letters), *("  " + c for c in letters)]
    info = xg.TokenizerInfo(vocab)
    compiler = xg.GrammarCompiler(info, precompute_nodes=0, cache_enabled=False)
    grammar = compiler.compile_grammar(r"""
root ::= "x" [ ]* item ("," item)*
item ::= " " [a-z]+ | "[" item "]"
""")
    ids = {text: i for i, text in enumerate(vocab)}
    walk = [ids[t] for t in ("x", "  a", "b", ",", "[", " c", "]")]
    assert compare_masks_along(grammar, walk, require_accept=True) == len(walk) + 1
    matcher = xg.GrammarMatcher(grammar)
    matcher.accept_token(ids["x"])
    bitmask = np.zeros(xg.get_bitmask_shape(1, info.vocab_size), dtype=np.int32)
    matcher.fill_next_token_bitmask(bitmask)
    allowed = {vocab[t] for t in range(len(vocab)) if (bitmask[0, t // 32] >> (t % 32)) & 1}
    assert {"  " + c for c in letters} <= allowed
