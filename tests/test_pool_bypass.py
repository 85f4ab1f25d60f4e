"""Cheap nodes bypass the cross-grammar pool (kPoolBypassWork in token_mask_cache.h).

A node whose vocabulary walk stays within a small budget (a position inside a property-name
literal) is classified straight away and kept by its grammar alone. The masks must still
equal the reference walk's, the pool must see such nodes as bypasses rather than misses, and
expensive nodes (string bodies) must still go through the pool."""

from __future__ import annotations

import json

import xg2_plugin as xg
from xg2_test_support import compare_masks_along, encode_continuation, hf_tokenizer_info

# Many distinct property names: most fills inside them build a cheap literal node.
PROPERTIES = [f"{a}{b}" for a in ("alpha", "beta", "gamma", "delta") for b in ("Count", "Name", "Source", "Target")]
SCHEMA = {
    "type": "object",
    "properties": {**{name: {"type": "integer"} for name in PROPERTIES}, "note": {"type": "string"}},
    "required": [*PROPERTIES, "note"],
    "additionalProperties": False,
}
INSTANCE = {**{name: i * 7 for i, name in enumerate(PROPERTIES)}, "note": "a free-text value, long enough to walk"}


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
        # The string body is a UTF-8 region root: never bypassed, so the pool still works.
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
