"""GrammarMatcher's Python constructor: the default call (what every request makes before its
first mask) takes a shorter path than a call with stop-token arguments; both must check and
behave the same way. Real Llama-3.1 tokenizer, real engine."""

from __future__ import annotations

import json

import numpy as np
import pytest

import xg2_plugin as xg

from xg2_test_support import hf_compiler

SCHEMA = json.dumps({"type": "object", "properties": {"a": {"type": "string"}, "n": {"type": "integer"}},
                     "required": ["a"]})


@pytest.fixture(scope="module")
def grammar() -> xg.CompiledGrammar:
    return hf_compiler("llama3.1").compile_json_schema(SCHEMA)


def _mask(fill, vocab_size: int) -> np.ndarray:
    bitmask = xg.allocate_token_bitmask(1, vocab_size)
    fill(bitmask)
    return np.asarray(bitmask).copy()


def test_default_call_keeps_the_tokenizers_stop_tokens(grammar: xg.CompiledGrammar) -> None:
    info = grammar.tokenizer_info
    default = xg.GrammarMatcher(grammar)
    explicit = xg.GrammarMatcher(grammar, stop_token_ids=list(info.stop_token_ids))
    assert default.stop_token_ids == list(info.stop_token_ids) != []
    assert np.array_equal(_mask(default.fill_next_token_bitmask, info.vocab_size),
                          _mask(explicit.fill_next_token_bitmask, info.vocab_size))
    assert np.array_equal(_mask(default.fill_next_token_bitmask, info.vocab_size),
                          _mask(default._fill_next_token_bitmask_reference, info.vocab_size))


@pytest.mark.parametrize("value", [0, 1, None, "no"])
def test_terminate_flag_must_be_a_bool(grammar: xg.CompiledGrammar, value: object) -> None:
    # 0 compares equal to False: the default path must still refuse it.
    with pytest.raises(TypeError, match="terminate_without_stop_token must be a bool"):
        xg.GrammarMatcher(grammar, terminate_without_stop_token=value)  # type: ignore[arg-type]


def test_stop_token_arguments_are_still_checked(grammar: xg.CompiledGrammar) -> None:
    vocab_size = grammar.tokenizer_info.vocab_size
    with pytest.raises(xg.InvalidArgumentError):
        xg.GrammarMatcher(grammar, stop_token_ids=[vocab_size])
    with pytest.raises(TypeError):
        xg.GrammarMatcher(grammar, override_stop_tokens=True)  # type: ignore[arg-type]
    assert xg.GrammarMatcher(grammar, override_stop_tokens=7).stop_token_ids == [7]
    assert xg.GrammarMatcher(grammar, stop_token_ids=[]).stop_token_ids == []


def test_subclass_overrides_are_kept(grammar: xg.CompiledGrammar) -> None:
    calls: list[str] = []

    class Counting(xg.GrammarMatcher):
        def fill_next_token_bitmask(self, bitmask, index=0):  # type: ignore[override]
            calls.append("fill")
            return super().fill_next_token_bitmask(bitmask, index)

        def accept_token(self, token_id):  # type: ignore[override]
            calls.append("accept")
            return super().accept_token(token_id)

    class Plain(xg.GrammarMatcher):
        pass

    vocab_size = grammar.tokenizer_info.vocab_size
    counting = Counting(grammar)
    bitmask = xg.allocate_token_bitmask(1, vocab_size)
    counting.fill_next_token_bitmask(bitmask)
    counting.accept_token(int(np.flatnonzero(np.unpackbits(
        np.asarray(bitmask)[0].view(np.uint8), bitorder="little"))[0]))
    assert calls == ["fill", "accept"]
    plain = Plain(grammar)
    assert type(plain) is Plain
    assert np.array_equal(_mask(plain.fill_next_token_bitmask, vocab_size),
                          _mask(xg.GrammarMatcher(grammar).fill_next_token_bitmask, vocab_size))


def _state(matcher, vocab_size: int) -> tuple:
    """What a caller can observe of a matcher: stop ids, flags and the mask."""
    return (list(matcher.stop_token_ids), matcher.is_terminated(), matcher.is_completed(),
            matcher.num_accepted_steps, _mask(matcher.fill_next_token_bitmask, vocab_size).tobytes())


def test_default_native_constructor_is_the_general_one(grammar: xg.CompiledGrammar) -> None:
    """_native._new_default_matcher (the default call's one native call) builds what the bound
    constructor builds with no stop list and terminate_without_stop_token=False, along a whole
    output: at the start, inside it, complete, and after the stop token."""
    from xg2_plugin import _native

    info = grammar.tokenizer_info
    fast = _native._new_default_matcher(grammar._handle)
    general = _native.GrammarMatcher(grammar._handle, None, False)
    assert type(fast) is _native.GrammarMatcher
    for step in (b'{"a": "x', b'"', b"}"):
        assert _state(fast, info.vocab_size) == _state(general, info.vocab_size)
        assert fast.accept_string(step) and general.accept_string(step)
    assert _state(fast, info.vocab_size) == _state(general, info.vocab_size)
    assert fast.is_completed() and not fast.is_terminated()  # waits for its stop token
    assert fast.accept_token(info.stop_token_ids[0]) and general.accept_token(info.stop_token_ids[0])
    assert _state(fast, info.vocab_size) == _state(general, info.vocab_size)
    assert fast.is_terminated()


@pytest.mark.parametrize("value", [None, 3, "grammar"])
def test_default_native_constructor_refuses_what_is_not_a_grammar(value: object) -> None:
    from xg2_plugin import _native

    with pytest.raises(TypeError):
        _native._new_default_matcher(value)


def test_stop_token_ids_is_a_new_list_per_read(grammar: xg.CompiledGrammar) -> None:
    matcher = xg.GrammarMatcher(grammar, stop_token_ids=[5, 3])
    first = matcher.stop_token_ids
    assert type(first) is list and first == [5, 3]
    first.append(9)
    assert matcher.stop_token_ids == [5, 3] and matcher.stop_token_ids is not matcher.stop_token_ids


def test_max_rollback_tokens_is_accepted_and_deprecated_as_in_xgrammar(grammar: xg.CompiledGrammar) -> None:
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert xg.GrammarMatcher(grammar, max_rollback_tokens=-1).max_rollback_tokens == -1
    with pytest.warns(DeprecationWarning, match="max_rollback_tokens"):
        matcher = xg.GrammarMatcher(grammar, max_rollback_tokens=2)
    # The value changes nothing: rollback still reaches every accepted step.
    text = '{"a": "xyz"}'
    assert all(matcher.accept_string(character) for character in text) and matcher.is_completed()
    assert matcher.num_accepted_steps == len(text)
    matcher.rollback(len(text))
    assert matcher.num_accepted_steps == 0 and matcher.accept_string(text)
