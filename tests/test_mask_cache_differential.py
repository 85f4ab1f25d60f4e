"""The cached mask equals the reference mask (uncached vocabulary walk) at every step of many
documents, with every cache mechanism on and with each one off."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest

import xg2_plugin as xg
from xg2_corpus import random_walk, stratified_sample
from xg2_test_support import (
    data_dir,
    dumps,
    encode_continuation,
    hf_tokenizer_info,
    ordered_like_schema,
    require_data,
)

# (compiler options, schemas per category, tokens compared per document)
CONFIGS = {
    "all": ({}, 2, 60),
    "no_cross_grammar": ({"cross_grammar_cache": False}, 1, 40),
}


def compare_along(grammar: xg.CompiledGrammar, ids: list[int]) -> int:
    """Feeds `ids`, comparing cached and reference masks before every token; returns steps."""
    info = grammar.tokenizer_info
    matcher = xg.GrammarMatcher(grammar)
    cached = np.zeros(xg.get_bitmask_shape(1, info.vocab_size), dtype=np.int32)
    reference = np.zeros_like(cached)
    steps = 0
    for token in ids + [None]:
        need_cached = matcher.fill_next_token_bitmask(cached)
        need_reference = matcher._fill_next_token_bitmask_reference(reference)
        assert need_cached == need_reference
        if not np.array_equal(cached, reference):
            diff = np.flatnonzero(np.unpackbits((cached ^ reference).view(np.uint8), bitorder="little"))
            raise AssertionError(f"step {steps}: masks differ on tokens {[info.decoded_vocab[t] for t in diff[:10]]}")
        steps += 1
        if token is None or not matcher.accept_token(token):
            break
    return steps


@pytest.mark.parametrize("config", sorted(CONFIGS))
def test_corpus_sample_masks_match_reference(config: str) -> None:
    pytest.importorskip("jsonschema")
    corpus = data_dir() / "jsonschemabench"
    if not corpus.is_dir():
        pytest.skip("JSONSchemaBench not available")
    info = hf_tokenizer_info("llama3.1")
    options, per_category, max_tokens = CONFIGS[config]
    compiler = xg.GrammarCompiler(info, **options)
    rng = random.Random(7)
    checked = 0
    for path in stratified_sample(corpus, per_category, seed=11):
        data = json.loads(path.read_text())
        try:
            grammar = compiler.compile_json_schema(data["schema"], strict_mode=False)
        except (xg.SchemaError, xg.ResourceLimitError):
            continue
        valid = [t["data"] for t in data.get("tests", []) if t.get("valid")]
        for value in valid[:1]:
            text = dumps(ordered_like_schema(value, data["schema"]))
            checked += compare_along(grammar, encode_continuation("llama3.1", text)[:max_tokens])
        # A random walk visits states the instances do not.
        bitmask = np.zeros(xg.get_bitmask_shape(1, info.vocab_size), dtype=np.int32)
        walk = random_walk(grammar, rng, bitmask, 40)
        if walk:
            checked += compare_along(grammar, encode_continuation("llama3.1", walk.decode("utf-8"))[:max_tokens])
    assert checked > 50


GRAMMARS = ["json.gbnf", "arithmetic.gbnf", "c.gbnf", "chess.gbnf", "list.gbnf"]


@pytest.mark.parametrize("name", GRAMMARS)
def test_ebnf_corpus_random_walks_match_reference(name: str) -> None:
    info = hf_tokenizer_info("llama3.1")
    grammar = xg.GrammarCompiler(info).compile_grammar(require_data(f"grammars/{name}").read_text())
    rng = random.Random(3)
    bitmask = np.zeros(xg.get_bitmask_shape(1, info.vocab_size), dtype=np.int32)
    for _ in range(3):
        matcher = xg.GrammarMatcher(grammar)
        ids = []
        for _ in range(30):
            matcher.fill_next_token_bitmask(bitmask)
            allowed = [t for t in np.flatnonzero(np.unpackbits(bitmask[0].view(np.uint8), bitorder="little")[: info.vocab_size])
                       if t not in info.stop_token_ids]
            if not allowed:
                break
            ids.append(int(rng.choice(allowed)))
            matcher.accept_token(ids[-1])
        compare_along(grammar, ids)


def test_lookahead_grammar_masks_match_reference() -> None:
    info = hf_tokenizer_info("llama3.1")
    grammar = xg.GrammarCompiler(info).compile_grammar(
        'root ::= item ("," item)* ";"\nitem ::= [a-z]+ (= [,;])'
    )
    compare_along(grammar, encode_continuation("llama3.1", "abc,de,fgh;"))
