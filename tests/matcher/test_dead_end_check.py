"""The dead-end check (a complete output with no plain stop token to end it: can any token
follow?) is answered from the token-mask cache, not by a walk of the whole vocabulary.

Harmony tags hit it at every point where the output may end (the start, after each message):
their stop tokens are named by the grammar, so the matcher has no plain stop token. A whole
vocabulary walk there cost a fill hundreds of times the cached one. The walk is observed by its
parser work: under a per-fill work budget smaller than one vocabulary walk, the cached fill
must still succeed, with the reference walk's mask.
"""

from __future__ import annotations

import numpy as np
import pytest

import xg2_plugin as xg
from xg2_test_support import hf_tokenizer_info

# Complete at the start and after each item, and most lowercase tokens can follow: a
# vocabulary walk there does parser work for each of them.
GRAMMAR = 'root ::= item*\nitem ::= [a-z ]+ "."'
BUDGET = 20_000


@pytest.fixture(scope="module")
def info() -> xg.TokenizerInfo:
    return hf_tokenizer_info("llama3.1")


def _fill(matcher: xg.GrammarMatcher, info: xg.TokenizerInfo, reference: bool = False) -> np.ndarray:
    bitmask = np.zeros(xg.get_bitmask_shape(1, info.vocab_size), dtype=np.int32)
    if reference:
        matcher._fill_next_token_bitmask_reference(bitmask)
    else:
        matcher.fill_next_token_bitmask(bitmask)
    return bitmask


def test_dead_end_check_uses_the_mask_cache(info: xg.TokenizerInfo) -> None:
    tight = xg.GrammarCompiler(info, limits=xg.CompileLimits(max_earley_work_per_fill=BUDGET))
    grammar = tight.compile_grammar(GRAMMAR)
    loose = xg.GrammarCompiler(info).compile_grammar(GRAMMAR)
    # The budget is below one vocabulary walk at this state ...
    with pytest.raises(xg.ResourceLimitError, match="max_earley_work_per_fill"):
        _fill(xg.GrammarMatcher(grammar, override_stop_tokens=[]), info, reference=True)
    matcher = xg.GrammarMatcher(grammar, override_stop_tokens=[])
    expected = _fill(xg.GrammarMatcher(loose, override_stop_tokens=[]), info, reference=True)
    # ... and the cached fill, dead-end check included, stays within it, exactly.
    assert np.array_equal(_fill(matcher, info), expected)
    assert not matcher.is_terminated()
    # After a complete item the output may end again: the same check, the same exactness.
    reference = xg.GrammarMatcher(loose, override_stop_tokens=[])
    for m in (matcher, reference):
        assert m.accept_string("some words.")
    assert np.array_equal(_fill(matcher, info), _fill(reference, info, reference=True))
    assert not matcher.is_terminated()
