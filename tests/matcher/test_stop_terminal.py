"""A stop token that is also a grammar terminal (Harmony `<|call|>`, `<|return|>`), with the real
gpt-oss tokenizer.

The rule: a stop token that the grammar names as a terminal (Token(id), or special-token text
in a structural tag) is accepted only where the grammar allows it; when accepting it leaves the
root complete, the matcher is terminated (generation ends there, as with any stop token).
Rollback undoes it together with the step. Stop tokens the grammar does not name stay plain
stops, allowed where the grammar is complete.
"""

from __future__ import annotations

import numpy as np

import xg2_plugin as xg
from xg2_plugin.bitmask import bitmask_to_bool_array
from xg2_plugin.presets import get_model_structural_tag

from xg2_test_support import hf_compiler, hf_tokenizer

END_OF_TEXT, RETURN, CALL, CONSTRAIN = 199999, 200002, 200012, 200003
TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}}, "required": ["city"]}}}]


def harmony_matcher(tool_choice="auto", **kwargs):
    grammar = hf_compiler("gpt-oss").compile_structural_tag(
        get_model_structural_tag("harmony", TOOLS, tool_choice, reasoning="auto"))
    return xg.GrammarMatcher(grammar, **kwargs)


def ids_of(text):
    return hf_tokenizer("gpt-oss").encode(text, add_special_tokens=False).ids


def mask(matcher):
    vocab_size = hf_compiler("gpt-oss")._tokenizer_info.vocab_size
    bitmask = xg.allocate_token_bitmask(1, vocab_size)
    matcher.fill_next_token_bitmask(bitmask)
    return bitmask_to_bool_array(np.asarray(bitmask)[0], vocab_size)


CALL_TEXT = '<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{"city": "Paris"}<|call|>'
FINAL_TEXT = "<|channel|>final<|message|>It is sunny.<|return|>"


def test_tokenizer_marks_call_and_return_as_stop_tokens():
    info = hf_compiler("gpt-oss")._tokenizer_info
    assert {RETURN, CALL} <= set(info.stop_token_ids)
    assert ids_of(CALL_TEXT)[-1] == CALL and ids_of(FINAL_TEXT)[-1] == RETURN


def test_call_that_completes_the_grammar_terminates():
    matcher = harmony_matcher()
    ids = ids_of(CALL_TEXT)
    for token in ids[:-1]:
        assert matcher.accept_token(token)
        assert not matcher.is_terminated()
    before = mask(matcher)
    assert before[CALL] and not before[RETURN] and not before[END_OF_TEXT]
    assert matcher.accept_token(CALL)
    assert matcher.is_terminated() and matcher.is_completed()
    # Terminated: nothing more is accepted, the mask holds only the plain stop tokens.
    assert not matcher.accept_token(ids_of("x")[0])
    assert not matcher.accept_token(CALL)
    after = mask(matcher)
    assert set(np.flatnonzero(after)) == set(matcher.stop_token_ids)
    assert CALL not in matcher.stop_token_ids and RETURN not in matcher.stop_token_ids


def test_return_terminates_the_final_answer():
    matcher = harmony_matcher()
    for token in ids_of(FINAL_TEXT):
        assert matcher.accept_token(token)
    assert matcher.is_terminated()


def test_rollback_undoes_termination_exactly():
    matcher = harmony_matcher()
    ids = ids_of(CALL_TEXT)
    for token in ids[:-1]:
        assert matcher.accept_token(token)
    before = mask(matcher)
    assert matcher.accept_token(CALL) and matcher.is_terminated()
    matcher.rollback(1)
    assert not matcher.is_terminated() and not matcher.is_completed()
    assert np.array_equal(mask(matcher), before)
    assert matcher.accept_token(CALL) and matcher.is_terminated()
    # validate_tokens runs through the terminal and leaves the state as it was.
    fresh = harmony_matcher()
    assert fresh.validate_tokens(ids) == len(ids)
    assert not fresh.is_terminated() and fresh.accept_token(ids[0])


def test_stop_terminal_is_rejected_where_the_grammar_does_not_allow_it():
    matcher = harmony_matcher()
    ids = ids_of(CALL_TEXT)
    prefix = ids[: ids.index(CONSTRAIN) + 3]  # inside the JSON arguments
    for token in prefix:
        assert matcher.accept_token(token)
    assert not mask(matcher)[CALL]
    assert not matcher.accept_token(CALL)
    assert not matcher.is_terminated()
    # A tool call is not a final answer: <|return|> cannot end it either.
    for token in ids[len(prefix):-1]:
        assert matcher.accept_token(token)
    assert not matcher.accept_token(RETURN)


def test_terminal_that_does_not_complete_the_grammar_does_not_terminate():
    grammar = hf_compiler("gpt-oss").compile_grammar(f'root ::= "a" Token({CALL}) "b"')
    matcher = xg.GrammarMatcher(grammar)
    assert matcher.accept_token(ids_of("a")[0]) and matcher.accept_token(CALL)
    assert not matcher.is_terminated() and not matcher.is_completed()
    assert matcher.accept_token(ids_of("b")[0]) and matcher.is_completed() and not matcher.is_terminated()
    assert matcher.accept_token(END_OF_TEXT) and matcher.is_terminated()


def test_override_stop_tokens():
    # <|call|> among explicit stop tokens: still a terminal that terminates.
    matcher = harmony_matcher(stop_token_ids=[END_OF_TEXT, CALL])
    for token in ids_of(CALL_TEXT):
        assert matcher.accept_token(token)
    assert matcher.is_terminated() and matcher.stop_token_ids == [END_OF_TEXT]
    # Without it, <|call|> is only a terminal: the grammar completes, a stop token ends it.
    matcher = harmony_matcher(stop_token_ids=[END_OF_TEXT])
    for token in ids_of(CALL_TEXT):
        assert matcher.accept_token(token)
    assert matcher.is_completed() and not matcher.is_terminated()
    assert matcher.accept_token(END_OF_TEXT) and matcher.is_terminated()


def test_fork_keeps_termination():
    matcher = harmony_matcher()
    for token in ids_of(CALL_TEXT):
        assert matcher.accept_token(token)
    assert matcher.fork().is_terminated()


def test_required_call_cannot_end_without_a_call():
    matcher = harmony_matcher("required")
    ids = ids_of(FINAL_TEXT)
    assert not all(matcher.accept_token(t) for t in ids)


def test_jump_forward_stops_before_a_special_token():
    # After "<|channel|>final" the grammar forces <|message|>: a special token, not text to
    # jump over, so the jump-forward string ends before it.
    matcher = harmony_matcher()
    for token in ids_of("<|channel|>final"):
        assert matcher.accept_token(token)
    assert matcher.find_jump_forward_string() == ""
    matcher = harmony_matcher()
    for token in ids_of("<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{\"ci"):
        assert matcher.accept_token(token)
    assert matcher.find_jump_forward_string() == 'ty"'  # then optional whitespace
