"""The explicit copies of a bounded string far from both ends are chain roots (Utf8ChainRoot).

Past its folded loop (grammar/grammar_fsm.h), or when the bound is too small for a loop, a
string with maxLength is a chain of explicit copies of json_char. At a copy with k copies
left, a token of string characters is accepted when it starts at most k characters and
rejected otherwise, so the walk starts from VocabularyIndex::Utf8ChainTokens(ascii, k): kept
sets up to 32 characters, the region set from the longest token's bytes on, and in between
the region set less the tokens of more than k characters. These tests compare the masks with
the reference walk at copies left in that middle range, with tokens longer than the copies
left in the vocabulary (runs of spaces and dashes), escapes and multi-byte text."""

from __future__ import annotations

import json
import random

import pytest

import xg2_plugin as xg
from xg2_test_support import compare_masks_along, compare_masks_on_sampled_walks, encode_continuation, hf_tokenizer_info

TOKENIZERS = ("gpt-oss", "llama3.1", "qwen3")


def _texts(bound: int) -> list[str]:
    """JSON string bodies of at most `bound` characters whose tokens stand at copies left
    between the bound and a few (escapes written out, each counting one character)."""
    spaces = " " * 40
    dashes = "-" * 36
    texts = [
        "plain words" + spaces + "and more words",
        "a" + dashes + "b" + "\\u00e9\\n" + "café 中文 🙂",
        "x" * (bound - 40) + spaces[:20] + "end",
        "quote \\\" here" + " " * (bound - 20),
    ]
    return [t for t in texts if len(json.loads('"' + t + '"')) <= bound]


@pytest.mark.parametrize("tokenizer", TOKENIZERS)
@pytest.mark.parametrize("bound", [48, 100, 127, 150])
def test_middle_copies_masks_match_reference(tokenizer: str, bound: int) -> None:
    compiler = xg.GrammarCompiler(hf_tokenizer_info(tokenizer), precompute_nodes=0, cache_enabled=False)
    schema = {"type": "object", "properties": {"s": {"type": "string", "maxLength": bound}, "n": {"type": "integer"}},
              "required": ["s", "n"], "additionalProperties": False}
    grammar = compiler.compile_json_schema(schema)
    compared = 0
    for text in _texts(bound):
        ids = encode_continuation(tokenizer, '{"s": "' + text + '", "n": 1}')
        compared += compare_masks_along(grammar, ids, require_accept=True)
    assert compared > 20


@pytest.mark.parametrize("tokenizer", TOKENIZERS)
def test_middle_copies_masks_match_reference_on_sampled_walks(tokenizer: str) -> None:
    # Tokens drawn from the mask stand at every count of copies left, long ones included.
    compiler = xg.GrammarCompiler(hf_tokenizer_info(tokenizer), precompute_nodes=0, cache_enabled=False)
    grammar = compiler.compile_json_schema({"type": "array", "items": {"type": "string", "maxLength": 90},
                                            "maxItems": 3})
    compare_masks_on_sampled_walks(grammar, random.Random(11), walks=4, steps=40)


def test_token_longer_than_the_copies_left_is_rejected() -> None:
    # After 60 of 100 characters, a run of 64 spaces (one gpt-oss token) no longer fits: the
    # chain root's set must leave it out, and a run of 32 spaces must stay in.
    info = hf_tokenizer_info("gpt-oss")
    decoded = info.decoded_vocab
    ids = {bytes(decoded[i]): i for i in range(len(decoded))}
    long_run, short_run = ids.get(b" " * 64), ids.get(b" " * 32)
    if long_run is None or short_run is None:
        pytest.skip("the vocabulary has no such runs of spaces")
    compiler = xg.GrammarCompiler(info, precompute_nodes=0, cache_enabled=False)
    grammar = compiler.compile_json_schema({"type": "string", "maxLength": 100})
    matcher = xg.GrammarMatcher(grammar)
    assert matcher.accept_string(b'"' + b"y" * 60)
    bitmask = xg.allocate_token_bitmask(1, info.vocab_size)
    matcher.fill_next_token_bitmask(bitmask)
    words = bitmask.reshape(-1)

    def is_allowed(token: int) -> bool:
        return bool((int(words[token >> 5]) >> (token & 31)) & 1)

    assert not is_allowed(long_run) and is_allowed(short_run)
    # The plain reference walk agrees.
    reference = xg.allocate_token_bitmask(1, info.vocab_size)
    matcher._fill_next_token_bitmask_reference(reference)
    assert (reference == bitmask).all()
