"""Cheap nodes bypass the cross-grammar pool (kPoolBypassWork in token_mask_cache.h).

A node whose vocabulary walk stays within a small budget (a position inside a property-name
literal, or a JSON string body, which is classified by the tails of the few thousand tokens
outside its UTF-8 region) is classified straight away and kept by its grammar alone. The
masks must still equal the reference walk's, the pool must see such nodes as bypasses rather
than misses, and expensive nodes (the copies of a long bounded string) must still go through
the pool."""

from __future__ import annotations

import json

import xg2_plugin as xg
from xg2_test_support import compare_masks_along, encode_continuation, hf_tokenizer_info

# Many distinct property names: most fills inside them build a cheap literal node.
PROPERTIES = [f"{a}{b}" for a in ("alpha", "beta", "gamma", "delta") for b in ("Count", "Name", "Source", "Target")]
SCHEMA = {
    "type": "object",
    "properties": {**{name: {"type": "integer"} for name in PROPERTIES}, "note": {"type": "string"},
                   "summary": {"type": "string", "maxLength": 200}},
    "required": [*PROPERTIES, "note", "summary"],
    "additionalProperties": False,
}
INSTANCE = {**{name: i * 7 for i, name in enumerate(PROPERTIES)}, "note": "a free-text value, long enough to walk",
            "summary": "a bounded value: each copy of its character walks most of the vocabulary"}


def _walk(compiler: xg.GrammarCompiler, tokenizer: str) -> int:
    grammar = compiler.compile_json_schema(SCHEMA)
    text = json.dumps(INSTANCE)
    return compare_masks_along(grammar, encode_continuation(tokenizer, text), require_accept=True)


def test_bypassed_nodes_match_reference_and_skip_the_pool() -> None:
    for tokenizer in ("llama3.1", "qwen3"):
        compiler = xg.GrammarCompiler(hf_tokenizer_info(tokenizer), precompute_nodes=0, cache_enabled=False)
        assert _walk(compiler, tokenizer) > 100
        stats = compiler.mask_cache_stats
        assert stats["bypasses"] > 30, stats
        # The bounded string's copies are over the budget, so the pool still works.
        assert stats["misses"] + stats["hits"] > 0, stats
        # A second grammar repeats the walks: bypassed nodes are rebuilt (not pool hits),
        # and nothing about them entered the pool.
        entries = stats["entries"]
        assert _walk(compiler, tokenizer) > 100
        again = compiler.mask_cache_stats
        assert again["bypasses"] >= 2 * stats["bypasses"] - 2, (stats, again)
        assert again["entries"] == entries, (stats, again)


def test_no_bypass_without_the_pool() -> None:
    compiler = xg.GrammarCompiler(
        hf_tokenizer_info("llama3.1"), precompute_nodes=0, cache_enabled=False, cross_grammar_cache=False
    )
    assert _walk(compiler, "llama3.1") > 100
    assert compiler.mask_cache_stats["bypasses"] == 0


# A recursive rule keeps its own DFA (no inlining), so tokens that finish one of its words
# and go on into the caller (`alpha),`, `))`) are uncertain at its nodes, which are cheap:
# a bypassed entry must carry its uncertain list like a pooled one.
WORDS_EBNF = r"""
root ::= "[" item ("," " "? item)* "]"
item ::= "alpha" | "beta" | "gamma" | "delta" | "alphabet" | "betamax" | "(" item ")" | "(" item "," item ")"
"""
WORDS_TEXT = "[alpha,(beta), ((gamma)),(delta,alphabet),((betamax)), (((alpha)))]"


def test_bypassed_nodes_keep_uncertain_tokens() -> None:
    for tokenizer in ("llama3.1", "qwen3"):
        compiler = xg.GrammarCompiler(hf_tokenizer_info(tokenizer), precompute_nodes=0, cache_enabled=False)
        grammar = compiler.compile_grammar(WORDS_EBNF)
        ids = encode_continuation(tokenizer, WORDS_TEXT)
        assert compare_masks_along(grammar, ids, require_accept=True) >= len(ids)
        assert compiler.mask_cache_stats["bypasses"] > 5


def test_string_body_is_classified_by_tails_and_bypassed() -> None:
    # A JSON string body is a UTF-8 region root with one boundary node: its tails walk is
    # within the budget, so it never costs a pool key; the masks along the string (inside,
    # across escapes and at the closing quote) equal the reference walk's.
    info = hf_tokenizer_info("llama3.1")
    compiler = xg.GrammarCompiler(info, precompute_nodes=0, cache_enabled=False)
    grammar = compiler.compile_json_schema({"type": "array", "items": {"type": "string"}})
    text = json.dumps(["plain words", 'a \\"quoted\\" word', "tab\\tand \\u00e9", "", "end"])
    assert compare_masks_along(grammar, encode_continuation("llama3.1", text), require_accept=True) > 10
    stats = compiler.mask_cache_stats
    assert stats["bypasses"] > 0 and stats["misses"] == 0, stats
