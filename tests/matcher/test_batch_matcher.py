"""BatchGrammarMatcher: each batch call equals the per-matcher calls, refuses a batch that names
a matcher twice, and changes no matcher when one input of the batch is bad."""

from __future__ import annotations

import pytest
import torch

import xg2_plugin as xg
from xg2_test_support import encode_continuation, hf_compiler

SCHEMA = {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"enum": ["x", "yz"]}},
          "required": ["a"], "additionalProperties": False}
TEXT = '{"a": 12, "b": "yz"}'


@pytest.fixture(scope="module")
def compiled() -> xg.CompiledGrammar:
    return hf_compiler("llama3.1").compile_json_schema(SCHEMA)


def masks(matchers: list[xg.GrammarMatcher]) -> torch.Tensor:
    rows = xg.allocate_token_bitmask(len(matchers), matchers[0].vocab_size)
    for i, m in enumerate(matchers):
        m.fill_next_token_bitmask(rows, i)
    return rows


@pytest.mark.parametrize("max_threads", [1, 3, "auto"])
def test_batch_calls_equal_single_calls(compiled: xg.CompiledGrammar, max_threads) -> None:
    ids = encode_continuation("llama3.1", TEXT)
    batch = xg.BatchGrammarMatcher(max_threads)
    matchers = [xg.GrammarMatcher(compiled) for _ in range(5)]
    singles = [xg.GrammarMatcher(compiled) for _ in range(5)]
    for step in range(len(ids)):
        # Matcher i lags i tokens behind (and is fed one forbidden token at step 2).
        tokens = [ids[max(0, step - i)] if step != 2 or i != 3 else ids[-1] for i in range(5)]
        got = xg.BatchGrammarMatcher.batch_accept_token(matchers, tokens)
        assert got == [m.accept_token(t) for m, t in zip(singles, tokens)]
        rows = xg.allocate_token_bitmask(5, compiled.tokenizer_info.vocab_size)
        batch.batch_fill_next_token_bitmask(matchers, rows)
        assert torch.equal(rows, masks(singles))
    counts = [m.num_accepted_steps for m in matchers]
    xg.BatchGrammarMatcher.batch_rollback(matchers, [c // 2 for c in counts])
    for m, c in zip(singles, counts):
        m.rollback(c // 2)
    assert [m.num_accepted_steps for m in matchers] == [c - c // 2 for c in counts]
    assert torch.equal(masks(matchers), masks(singles))
    xg.BatchGrammarMatcher.batch_rollback(matchers, 1)
    strings = ["1", b"3", "}", '"c"', "x"]
    got = xg.BatchGrammarMatcher.batch_accept_string(matchers, strings)
    for m in singles:
        m.rollback(1)
    assert got == [m.accept_string(s) for m, s in zip(singles, strings)]
    assert torch.equal(masks(matchers), masks(singles))


def test_a_matcher_named_twice_is_refused_before_anything_runs(compiled: xg.CompiledGrammar) -> None:
    a, b = xg.GrammarMatcher(compiled), xg.GrammarMatcher(compiled)
    first = encode_continuation("llama3.1", TEXT)[0]
    calls = [
        lambda: xg.BatchGrammarMatcher.batch_accept_token([a, b, a], [first] * 3),
        lambda: xg.BatchGrammarMatcher.batch_accept_string([b, a, b], ["{"] * 3),
        lambda: xg.BatchGrammarMatcher.batch_rollback([a, a], 0),
        lambda: xg.BatchGrammarMatcher().batch_fill_next_token_bitmask(
            [a, a], xg.allocate_token_bitmask(2, a.vocab_size)),
    ]
    for call in calls:
        with pytest.raises(ValueError, match="matchers"):
            call()
        assert a.num_accepted_steps == b.num_accepted_steps == 0
    # A fork is another matcher.
    assert xg.BatchGrammarMatcher.batch_accept_token([a, a.fork()], [first] * 2) == [True, True]


def test_bad_input_changes_no_matcher(compiled: xg.CompiledGrammar) -> None:
    ids = encode_continuation("llama3.1", TEXT)
    matchers = [xg.GrammarMatcher(compiled) for _ in range(3)]
    vocab = matchers[0].vocab_size
    with pytest.raises(ValueError, match=r"tokens\[2\].*outside the vocabulary"):
        xg.BatchGrammarMatcher.batch_accept_token(matchers, [ids[0], ids[0], vocab])
    with pytest.raises(ValueError, match="3 matchers but 2 tokens"):
        xg.BatchGrammarMatcher.batch_accept_token(matchers, [ids[0], ids[0]])
    assert [m.num_accepted_steps for m in matchers] == [0, 0, 0]
    xg.BatchGrammarMatcher.batch_accept_token(matchers, [ids[0]] * 3)
    with pytest.raises(ValueError, match=r"num_tokens\[1\]: cannot roll back 2"):
        xg.BatchGrammarMatcher.batch_rollback(matchers, [1, 2, 1])
    with pytest.raises(ValueError):
        xg.BatchGrammarMatcher.batch_rollback(matchers, [1, -1, 1])
    with pytest.raises(TypeError, match=r"strings\[1\]"):
        xg.BatchGrammarMatcher.batch_accept_string(matchers, ["1", 5, "2"])
    with pytest.raises(TypeError, match=r"matchers\[0\]"):
        xg.BatchGrammarMatcher.batch_accept_token([None], [1])
    with pytest.raises(ValueError, match="max_threads"):
        xg.BatchGrammarMatcher(0)
    assert [m.num_accepted_steps for m in matchers] == [1, 1, 1]
