"""A stop token whose text is also ordinary text (GPT-2's `a` as a stop id) is a stop: the mask
allows it exactly where accept_token accepts it, which is where the grammar may end.

A serving engine ends a request when it samples one of the request's stop ids, so the id can
never stand for its text; the mask, the reference mask, accept_token and validate_tokens
must all say so. Checked on the reported case and, as a property, on every token of a small
vocabulary at random states of a few grammars.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest

import xg2_plugin as xg
from xg2_plugin.bitmask import bitmask_to_bool_array
from xg2_test_support import hf_tokenizer_info

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


def masks(matcher: xg.GrammarMatcher) -> tuple[np.ndarray, np.ndarray]:
    vocab = matcher.vocab_size
    cached = np.zeros(xg.get_bitmask_shape(1, vocab), dtype=np.int32)
    reference = np.zeros_like(cached)
    matcher.fill_next_token_bitmask(cached)
    matcher._fill_next_token_bitmask_reference(reference)
    return bitmask_to_bool_array(cached[0], vocab), bitmask_to_bool_array(reference[0], vocab)


def assert_mask_decides_acceptance(matcher: xg.GrammarMatcher, tokens) -> None:
    cached, reference = masks(matcher)
    assert np.array_equal(cached, reference)
    steps = matcher.num_accepted_steps
    for token in tokens:
        accepted = matcher.fork().accept_token(int(token))
        assert accepted == bool(cached[token]), f"token {token}: in mask {bool(cached[token])}, accepted {accepted}"
        assert matcher.validate_tokens([int(token)]) == int(accepted)
    assert matcher.num_accepted_steps == steps


def test_gpt2_text_token_as_stop_inside_a_json_string() -> None:
    info = hf_tokenizer_info("gpt2")
    a = info.decoded_vocab.index(b"a")
    grammar = xg.GrammarCompiler(info).compile_json_schema('{"type": "string"}')
    matcher = xg.GrammarMatcher(grammar, stop_token_ids=[a])
    assert matcher.accept_string('"')
    cached, reference = masks(matcher)
    assert not cached[a] and not reference[a]
    assert not matcher.accept_token(a)
    assert_mask_decides_acceptance(matcher, range(info.vocab_size))
    assert matcher.accept_string('b"')  # complete: the stop id may now end the output
    assert_mask_decides_acceptance(matcher, range(info.vocab_size))
    assert matcher.accept_token(a) and matcher.is_terminated()


# A small vocabulary where every stop candidate is also text some grammar below spells.
VOCAB = [bytes([c]) for c in b'ab{}":, 0123456789[]xyz'] + [b"ab", b'{"', b'":', b"12", b'"}', b"a,", b"</s>"]
GRAMMARS = [
    'root ::= "a"* "b"',
    'root ::= "[" (item ("," item)*)? "]"\nitem ::= [0-9]+ | "\\"" [a-z]* "\\""',
    'root ::= "{" ("\\"" [abxyz]* "\\":" [0-9]+)? "}"',
    'root ::= s\ns ::= "a" s "b" | ""',
]
STOP_CANDIDATES = [VOCAB.index(t) for t in (b"a", b"b", b"}", b'"', b"1", b"]", b'"}', b"a,", b"</s>")]


@functools.lru_cache(maxsize=None)
def compiled(index: int) -> xg.CompiledGrammar:
    info = xg.TokenizerInfo(VOCAB, xg.VocabType.RAW, stop_token_ids=[VOCAB.index(b"</s>")])
    return xg.GrammarCompiler(info).compile_grammar(GRAMMARS[index])


@settings(max_examples=40, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(grammar_index=st.integers(0, len(GRAMMARS) - 1),
       stops=st.lists(st.sampled_from(STOP_CANDIDATES), min_size=1, max_size=3, unique=True),
       terminate_without_stop_token=st.booleans(),
       walk=st.lists(st.integers(0, 1 << 30), max_size=10))
def test_every_mask_bit_equals_acceptance(grammar_index: int, stops: list[int], terminate_without_stop_token: bool,
                                          walk: list[int]) -> None:
    matcher = xg.GrammarMatcher(compiled(grammar_index), stop_token_ids=stops,
                                terminate_without_stop_token=terminate_without_stop_token)
    for value in walk:
        if matcher.is_terminated():
            break
        assert_mask_decides_acceptance(matcher, range(len(VOCAB)))
        allowed = np.flatnonzero(masks(matcher)[0])
        if len(allowed) == 0:
            break
        assert matcher.accept_token(int(allowed[value % len(allowed)]))
    if matcher.is_terminated():
        # After the end only the stop ids are offered (a sampler never faces an empty row
        # while the matcher has stop ids); nothing more is accepted.
        cached, reference = masks(matcher)
        assert np.array_equal(cached, reference)
        expected = np.zeros(len(VOCAB), dtype=bool)
        expected[stops] = True
        assert np.array_equal(cached, expected)
        assert not any(matcher.fork().accept_token(t) for t in range(len(VOCAB)))
