"""The Earley parser's work is budgeted per token and per mask fill (CompileLimits
max_earley_work_per_token / max_earley_work_per_fill): an ambiguous grammar whose chart grows
without bound raises ResourceLimitError promptly, and leaves the matcher usable.

The items-per-step limit alone does not bound the work: `s ::= s s | "a" | ""` keeps O(n)
items per step, but completes each against O(n) waiters, so byte n costs O(n^2).
"""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

import xg2_plugin as xg
from xg2_test_support import child_env, hf_tokenizer_info

AMBIGUOUS = 'root ::= s\ns ::= s s | "a" | ""'

# Runs in a child with a timeout: without the budget this takes minutes, and a test must fail
# rather than hang.
_DEFAULT_LIMITS_CHILD = r"""
import numpy as np
import xg2_plugin as xg
from xg2_test_support import hf_tokenizer_info

info = hf_tokenizer_info("gpt2")
a = info.decoded_vocab.index(b"a")
matcher = xg.GrammarMatcher(xg.GrammarCompiler(info).compile_grammar(GRAMMAR))
accepted = 0
try:
    for _ in range(4000):
        assert matcher.accept_token(a)
        accepted += 1
    raise SystemExit("4000 tokens accepted without reaching the work limit")
except xg.ResourceLimitError as e:
    assert "max_earley_work_per_token" in str(e), str(e)
# The refused token changed nothing; the matcher still works where it stands.
assert matcher.num_accepted_steps == accepted
matcher.rollback(accepted // 2)
assert matcher.accept_token(a) and matcher.num_accepted_steps == accepted - accepted // 2 + 1
bitmask = np.zeros(xg.get_bitmask_shape(1, info.vocab_size), dtype=np.int32)
matcher.fill_next_token_bitmask(bitmask)
print("accepted", accepted)
"""


def test_ambiguous_grammar_stops_promptly_with_default_limits() -> None:
    env = child_env()
    script = f"GRAMMAR = {AMBIGUOUS!r}\n" + _DEFAULT_LIMITS_CHILD
    try:
        child = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=240)
    except subprocess.TimeoutExpired:
        pytest.fail("the ambiguous grammar ran past the timeout: its work is not bounded")
    assert child.returncode == 0, f"child exited with {child.returncode}:\n{child.stdout}\n{child.stderr[-3000:]}"
    assert 100 < int(child.stdout.split("accepted")[-1]) < 4000


@pytest.fixture(scope="module")
def info() -> xg.TokenizerInfo:
    return hf_tokenizer_info("gpt2")


def _tight(info: xg.TokenizerInfo, **limits: int) -> xg.GrammarCompiler:
    return xg.GrammarCompiler(info, limits=xg.CompileLimits(**limits))


def test_fill_budget_raises_and_keeps_the_state(info: xg.TokenizerInfo) -> None:
    grammar = _tight(info, max_earley_work_per_fill=20_000).compile_grammar(AMBIGUOUS)
    matcher = xg.GrammarMatcher(grammar)
    a = info.decoded_vocab.index(b"a")
    bitmask = np.zeros(xg.get_bitmask_shape(1, info.vocab_size), dtype=np.int32)
    for _ in range(100):
        assert matcher.accept_token(a)
    # The reference fill walks the a-tokens through the parser (the cached one may not need to).
    with pytest.raises(xg.ResourceLimitError, match="max_earley_work_per_fill"):
        matcher._fill_next_token_bitmask_reference(bitmask)
    assert matcher.num_accepted_steps == 100
    assert matcher.accept_token(a) and matcher.num_accepted_steps == 101
    matcher.rollback(101)
    matcher._fill_next_token_bitmask_reference(bitmask)  # cheap again at the start


def test_validate_tokens_past_the_budget_changes_nothing(info: xg.TokenizerInfo) -> None:
    grammar = _tight(info, max_earley_work_per_token=5_000).compile_grammar(AMBIGUOUS)
    matcher = xg.GrammarMatcher(grammar)
    a = info.decoded_vocab.index(b"a")
    assert matcher.accept_token(a)
    with pytest.raises(xg.ResourceLimitError, match="max_earley_work_per_token"):
        matcher.validate_tokens([a] * 200)
    assert matcher.num_accepted_steps == 1
    assert matcher.validate_tokens([a, a]) == 2


def test_accept_string_is_charged_per_byte(info: xg.TokenizerInfo) -> None:
    grammar = _tight(info, max_earley_work_per_token=5_000).compile_grammar(AMBIGUOUS)
    matcher = xg.GrammarMatcher(grammar)
    assert matcher.accept_string("a" * 20)  # 20 cheap bytes: more than one byte's budget in all
    with pytest.raises(xg.ResourceLimitError, match="max_earley_work_per_token"):
        matcher.accept_string("a" * 500)
    assert matcher.num_accepted_steps == 1
    assert matcher.accept_string("aa") and matcher.num_accepted_steps == 2


def test_work_limits_are_validated() -> None:
    for bad in (0, -1, 2 ** 63):
        with pytest.raises(ValueError, match="max_earley_work_per_token"):
            xg.CompileLimits(max_earley_work_per_token=bad)
        with pytest.raises(ValueError, match="max_earley_work_per_fill"):
            xg.CompileLimits(max_earley_work_per_fill=bad)
