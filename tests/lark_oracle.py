"""Lark's own parser as the oracle of compile_lark, and random strings of a compiled grammar.

The oracle is Lark's Earley parser with the dynamic_complete lexer: it tries every end of
each terminal match, so it accepts the grammar's context-free language, which is what
compile_lark enforces (docs/lark.md lists where Lark's other parsers differ)."""

from __future__ import annotations

import random
from typing import Optional

import lark
import numpy as np

import xg2_plugin as xg
from xg2_plugin.bitmask import bitmask_to_bool_array


def lark_parser(grammar: str) -> lark.Lark:
    return lark.Lark(grammar, parser="earley", lexer="dynamic_complete")


def lark_accepts(parser: lark.Lark, text: str) -> bool:
    try:
        parser.parse(text)
    except lark.exceptions.LarkError:
        return False
    return True


def xg2_accepts(grammar: xg.CompiledGrammar, text: str) -> bool:
    matcher = xg.GrammarMatcher(grammar)
    return matcher.accept_string(text) and matcher.is_completed()


_token_lengths: dict[int, np.ndarray] = {}


def _short_tokens(info: xg.TokenizerInfo) -> np.ndarray:
    """Whether each token's text is 1 to 3 bytes (short tokens reach more of a grammar's
    structure per walk)."""
    key = id(info)
    if key not in _token_lengths:
        lengths = np.array([len(text) for text in info.decoded_vocab], dtype=np.int64)
        _token_lengths[key] = (lengths >= 1) & (lengths <= 3)
    return _token_lengths[key]


def random_output(grammar: xg.CompiledGrammar, rng: random.Random, max_tokens: int) -> Optional[str]:
    """The text of a random token walk through the grammar's masks that ends with a stop
    token (taken with probability 1/2 wherever the mask allows it), or None when the walk
    does not end within max_tokens."""
    info = grammar.tokenizer_info
    matcher = xg.GrammarMatcher(grammar)
    bitmask = np.full(xg.get_bitmask_shape(1, info.vocab_size), -1, dtype=np.int32)
    stops = np.zeros(info.vocab_size, dtype=bool)
    stops[matcher.stop_token_ids] = True
    short = _short_tokens(info)[: info.vocab_size]
    vocab = info.decoded_vocab
    out = b""
    for _ in range(max_tokens):
        matcher.fill_next_token_bitmask(bitmask)
        allowed = bitmask_to_bool_array(bitmask[0], info.vocab_size)
        stop_allowed = bool((allowed & stops).any())
        if stop_allowed and rng.random() < 1 / 2:
            return out.decode("utf-8")
        candidates = allowed & ~stops
        preferred = np.flatnonzero(candidates & short)
        if preferred.size == 0:
            preferred = np.flatnonzero(candidates)
        if preferred.size == 0:
            return out.decode("utf-8") if stop_allowed else None
        token = int(preferred[rng.randrange(preferred.size)])
        assert matcher.accept_token(token), f"token {vocab[token]!r} was in the mask but rejected"
        out += vocab[token]
    return None


def mutations(text: str, alphabet: str, rng: random.Random, count: int) -> list[str]:
    """Strings one edit (delete, insert, replace, duplicate a slice) away from `text`."""
    out = []
    for _ in range(count):
        i = rng.randrange(len(text) + 1)
        op = rng.randrange(4)
        if op == 0 and text:
            i = min(i, len(text) - 1)
            out.append(text[:i] + text[i + 1:])
        elif op == 1:
            out.append(text[:i] + rng.choice(alphabet) + text[i:])
        elif op == 2 and text:
            i = min(i, len(text) - 1)
            out.append(text[:i] + rng.choice(alphabet) + text[i + 1:])
        else:
            j = min(len(text), i + rng.randrange(1, 4))
            out.append(text[:j] + text[i:j] + text[j:])
    return out
