"""The loop head of a compressed bounded string is classified by tails (LongChainRoot).

A string with a large maxLength is lowered as a counted loop whose explicit copies reach
beyond any token (grammar/grammar_fsm.h), so at the loop head every token of the string's
character class is accepted and any other token is decided by its tail walked from the head
(matcher/token_mask_cache.cc, DenseStepper::LongChainRoot). These tests compare the masks
with the reference walk inside such strings (plain, escaped and multi-byte text, the closing
quote and what follows it, counts near the bound), check that the head no longer costs a
pool key, and check that a loop head that can leave its rule keeps the plain walk (the tails
argument needs no leave on the way)."""

from __future__ import annotations

import random

import pytest

import xg2_plugin as xg
from xg2_test_support import compare_masks_along, compare_masks_on_sampled_walks, encode_continuation, hf_tokenizer_info

TOKENIZERS = ("llama3.1", "qwen3")

# String contents as they appear in JSON text (escapes already written out).
TEXTS = [
    "plain words and spaces",
    'quotes \\" and backslashes \\\\ inside',
    "tabs\\tnewlines\\nunicode \\u00e9 escapes",
    "multi-byte: café, naïve, 中文字符, emoji 🙂🚀",
    "",
]


def _quoted(content: str) -> str:
    return '"' + content + '"'


def _schemas(bound: int) -> list[tuple[dict, list[str]]]:
    """(schema, instance texts) pairs whose string bodies have at most `bound` characters."""
    near_bound = "x" * (bound - 3) + "é"  # the last copies: the walk leaves the loop head
    as_property = {
        "type": "object",
        "properties": {"name": {"type": "string", "maxLength": bound}, "n": {"type": "integer"}},
        "required": ["name", "n"],
        "additionalProperties": False,
    }
    in_array = {"type": "array", "items": {"type": "string", "maxLength": bound}}
    with_minimum = {"type": "string", "minLength": 2, "maxLength": bound}
    return [
        (as_property, ['{"name": ' + _quoted(t) + ', "n": 7}' for t in TEXTS]),
        (in_array, ["[" + ", ".join(_quoted(t) for t in [TEXTS[0], TEXTS[3], near_bound]) + "]"]),
        (with_minimum, [_quoted(TEXTS[1]), _quoted(TEXTS[3]), _quoted(near_bound)]),
    ]


@pytest.mark.parametrize("tokenizer", TOKENIZERS)
@pytest.mark.parametrize("bound", [300, 1000])
def test_loop_head_masks_match_reference(tokenizer: str, bound: int) -> None:
    compiler = xg.GrammarCompiler(hf_tokenizer_info(tokenizer), precompute_nodes=0, cache_enabled=False)
    compared = 0
    for schema, texts in _schemas(bound):
        grammar = compiler.compile_json_schema(schema)
        for text in texts:
            compared += compare_masks_along(grammar, encode_continuation(tokenizer, text), require_accept=True)
    assert compared > 200


@pytest.mark.parametrize("tokenizer", TOKENIZERS)
def test_loop_head_masks_match_reference_on_sampled_walks(tokenizer: str) -> None:
    # Tokens drawn from the mask reach tails the instances above do not (control bytes cut
    # by the tokenizer, quotes followed by punctuation, truncated characters).
    compiler = xg.GrammarCompiler(hf_tokenizer_info(tokenizer), precompute_nodes=0, cache_enabled=False)
    grammar = compiler.compile_json_schema(
        {"type": "array", "items": {"type": "string", "maxLength": 400}, "maxItems": 3})
    compare_masks_on_sampled_walks(grammar, random.Random(7), walks=4, steps=40)


def test_loop_head_is_classified_within_the_bypass_budget() -> None:
    # The head's tails walk costs less than its pool keys (which would run over the hundred
    # explicit copies), so a walk through a long string body goes to the pool for nothing.
    info = hf_tokenizer_info("llama3.1")
    compiler = xg.GrammarCompiler(info, precompute_nodes=0, cache_enabled=False)
    grammar = compiler.compile_json_schema({"type": "string", "maxLength": 5000})
    # (No token of this text ends inside a character: a node inside one is no chain root.)
    text = _quoted(TEXTS[0] + " " + TEXTS[1] + " café, naïve")
    assert compare_masks_along(grammar, encode_continuation("llama3.1", text), require_accept=True) > 5
    stats = compiler.mask_cache_stats
    assert stats["bypasses"] > 0 and stats["misses"] == 0 and stats["hits"] == 0, stats


# `body` is recursive, so it keeps its own rule and its loop head is accepting: the parser can
# leave the rule after any number of characters, and a token such as `abc)` must stay
# uncertain at the head (decided by the parser, which finds the caller's `)`), not be
# rejected by its tail `)` walked from the head.
LEAVING_EBNF = r"""
root ::= "(" body ")"
body ::= [^()]{0,400} ("(" body ")" [^()]{0,400})*
"""


@pytest.mark.parametrize("tokenizer", TOKENIZERS)
def test_loop_head_that_can_leave_its_rule_keeps_exact_masks(tokenizer: str) -> None:
    compiler = xg.GrammarCompiler(hf_tokenizer_info(tokenizer), precompute_nodes=0, cache_enabled=False)
    grammar = compiler.compile_grammar(LEAVING_EBNF)
    for text in ["(abc)", "(some text (nested words) and more)", "(café 🙂 (x))", "((()))"]:
        ids = encode_continuation(tokenizer, text)
        assert compare_masks_along(grammar, ids, require_accept=True) == len(ids) + 1
    compare_masks_on_sampled_walks(grammar, random.Random(3), walks=3, steps=30)


# A class without some multi-byte characters is no chain of "every character" copies: the
# head must not accept the class tokens wholesale (a token holding `é` is rejected here).
PARTIAL_CLASS_EBNF = r"""
root ::= "<" [^<>é]{0,500} ">"
"""


@pytest.mark.parametrize("tokenizer", TOKENIZERS)
def test_class_without_every_character_keeps_exact_masks(tokenizer: str) -> None:
    compiler = xg.GrammarCompiler(hf_tokenizer_info(tokenizer), precompute_nodes=0, cache_enabled=False)
    grammar = compiler.compile_grammar(PARTIAL_CLASS_EBNF)
    for text in ["<abc>", "<naive cafe, 中文 🙂>", "<>"]:
        ids = encode_continuation(tokenizer, text)
        assert compare_masks_along(grammar, ids, require_accept=True) == len(ids) + 1
