"""What the uniqueItems matcher tests share (matcher/test_unique_*.py): one compiler per real
tokenizer, and the three checks every construction runs — instances against jsonschema, the
token that completes a duplicate item refused by mask and matcher alike, and biased walks whose
cached masks equal the reference walk's and whose finished documents jsonschema accepts."""

from __future__ import annotations

import json
import random
from typing import Callable, Iterable, Tuple

import numpy as np
import pytest

import xg2_plugin as xg
from xg2_corpus import make_validator
from xg2_test_support import compare_masks_along, decode_bytes, encode_continuation, hf_tokenizer_info

TOKENIZERS = ["llama3.1", "qwen3"]

Walk = Callable[[xg.CompiledGrammar, random.Random, int], list]


@pytest.fixture(scope="module", params=TOKENIZERS)
def tokenizer(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture(scope="module")
def compiler(tokenizer: str) -> xg.GrammarCompiler:
    return xg.GrammarCompiler(hf_tokenizer_info(tokenizer), cache_enabled=False)


def accepts(grammar: xg.CompiledGrammar, text: str) -> bool:
    matcher = xg.GrammarMatcher(grammar)
    return matcher.accept_string(text) and matcher.is_completed()


def in_mask(bitmask: np.ndarray, token_id: int, row: int = 0) -> bool:
    return bool((int(bitmask[row][token_id >> 5]) >> (token_id & 31)) & 1)


def assert_instance_follows_jsonschema(grammar: xg.CompiledGrammar, schema: dict, text: str) -> None:
    assert accepts(grammar, text) == make_validator(schema).is_valid(json.loads(text)), text


def assert_duplicate_refused_at(tokenizer: str, grammar: xg.CompiledGrammar, text: str, stop: int) -> None:
    """Walks `text` token by token: every token that ends before byte `stop` is in the mask and
    accepted; the first token reaching it (the one that makes an item a duplicate) is neither."""
    info = grammar.tokenizer_info
    matcher = xg.GrammarMatcher(grammar)
    bitmask = np.zeros(xg.get_bitmask_shape(1, info.vocab_size), dtype=np.int32)
    offset = 0
    for token in encode_continuation(tokenizer, text):
        matcher.fill_next_token_bitmask(bitmask)
        token_bytes = info.decoded_vocab[token]
        if offset + len(token_bytes) > stop:
            assert not in_mask(bitmask, token) and not matcher.accept_token(token), (text, token_bytes)
            return
        assert in_mask(bitmask, token) and matcher.accept_token(token), (text, token_bytes)
        offset += len(token_bytes)
    raise AssertionError(f"{text}: no token reached the duplicate")


def check_walks(tokenizer: str, grammar: xg.CompiledGrammar, schema: dict, walk: Walk, walks: int, steps: int,
                instances: Iterable[Tuple[dict, str]]) -> int:
    """Seeded walks drawn by `walk`: cached masks equal the reference ones along each, every token
    is accepted, and a finished document is valid. The instances of `schema` are compared token by
    token too (valid or not). Returns how many walks finished a document."""
    validator = make_validator(schema)
    rng = random.Random(38)
    finished = 0
    for _ in range(walks):
        ids = walk(grammar, rng, steps)
        assert compare_masks_along(grammar, ids, require_accept=True) == len(ids) + 1
        matcher = xg.GrammarMatcher(grammar)
        assert all(matcher.accept_token(t) for t in ids)
        if matcher.is_completed():
            value = json.loads(decode_bytes(grammar.tokenizer_info, ids).decode("utf-8"))
            assert validator.is_valid(value), value
            finished += 1
    for instance_schema, text in instances:
        if instance_schema is schema:
            compare_masks_along(grammar, encode_continuation(tokenizer, text))
    return finished
