"""A torch bitmask filled again after it changed in place: the native fill remembers the
layout of a tensor it validated (native/bindings/torch_layout_cache.h) and must notice every
change that alters it, refusing what it would refuse on a first fill and writing where the
tensor's memory is now. Each mask is compared with the reference walk into a fresh buffer."""

from __future__ import annotations

import gc

import numpy as np
import pytest

import xg2_plugin as xg

torch = pytest.importorskip("torch")

VOCAB = [b"a", b"b", b"ab", b"c", b"{", b"}", b'"', b"1", b"x", b" ", b"</s>"]
STOP = len(VOCAB) - 1


@pytest.fixture(scope="module")
def grammar() -> xg.CompiledGrammar:
    info = xg.TokenizerInfo(VOCAB, xg.VocabType.RAW, stop_token_ids=[STOP])
    return xg.GrammarCompiler(info).compile_grammar('root ::= "a"+ "b" | "c" [0-9]*')


def words() -> int:
    return (len(VOCAB) + 31) // 32


def reference(matcher: xg.GrammarMatcher) -> np.ndarray:
    row = np.zeros((1, words()), dtype=np.int32)
    matcher._fill_next_token_bitmask_reference(row)
    return row[0]


def test_fills_follow_in_place_changes(grammar: xg.CompiledGrammar) -> None:
    m = xg.GrammarMatcher(grammar)
    expected = reference(m)
    t = torch.zeros(2, 3, dtype=torch.int32)  # wider rows than needed
    m.fill_next_token_bitmask(t, 1)
    assert np.array_equal(t[1, :words()].numpy(), expected)
    m.fill_next_token_bitmask(t, 1)  # remembered layout
    assert np.array_equal(t[1, :words()].numpy(), expected)

    t.resize_(1, 3)  # one row now: row 1 is gone
    with pytest.raises(xg.InvalidArgumentError, match="out of range"):
        m.fill_next_token_bitmask(t, 1)
    m.fill_next_token_bitmask(t, 0)
    assert np.array_equal(t[0, :words()].numpy(), expected)

    t.resize_(2, 3).zero_()
    t.t_()  # (3, 2), rows of 2 words not contiguous: refused as on a first fill
    with pytest.raises(xg.InvalidArgumentError, match="contiguous"):
        m.fill_next_token_bitmask(t, 0)


def test_data_assignment_is_noticed(grammar: xg.CompiledGrammar) -> None:
    m = xg.GrammarMatcher(grammar)
    expected = reference(m)
    t = torch.zeros(1, words(), dtype=torch.int32)
    m.fill_next_token_bitmask(t)

    other = torch.zeros(1, words(), dtype=torch.int32)
    t.data = other  # same object and _version, other memory
    m.fill_next_token_bitmask(t)
    assert np.array_equal(other[0].numpy(), expected)

    t.data = torch.zeros(1, words(), dtype=torch.float32)
    with pytest.raises(xg.InvalidArgumentError, match="dtype"):
        m.fill_next_token_bitmask(t)

    t.data = torch.zeros(1, words() * 2, dtype=torch.int32)[:, ::2]  # strided view, same shape
    with pytest.raises(xg.InvalidArgumentError, match="contiguous"):
        m.fill_next_token_bitmask(t)

    t.data = torch.zeros(1, 0, dtype=torch.int32)
    with pytest.raises(xg.InvalidArgumentError, match="words"):
        m.fill_next_token_bitmask(t)


def test_many_tensors_and_recycled_objects(grammar: xg.CompiledGrammar) -> None:
    m = xg.GrammarMatcher(grammar)
    expected = reference(m)
    # More tensors than the cache remembers, each filled twice, then dropped and replaced by
    # tensors of other shapes (whose objects and memory may reuse the old addresses).
    tensors = [torch.zeros(k + 1, words(), dtype=torch.int32) for k in range(6)]
    for _ in range(2):
        for k, t in enumerate(tensors):
            m.fill_next_token_bitmask(t, k)
            assert np.array_equal(t[k].numpy(), expected)
    del tensors, t
    gc.collect()
    for k in range(6):
        small = torch.zeros(1, words(), dtype=torch.int32)
        with pytest.raises(xg.InvalidArgumentError, match="out of range"):
            m.fill_next_token_bitmask(small, 1)
        m.fill_next_token_bitmask(small, 0)
        assert np.array_equal(small[0].numpy(), expected)


def test_row_view_of_a_larger_tensor(grammar: xg.CompiledGrammar) -> None:
    m = xg.GrammarMatcher(grammar)
    expected = reference(m)
    big = torch.full((4, words() + 2), -7, dtype=torch.int32)
    rows = big[:, 1:1 + words()]  # not contiguous: validated at every fill
    for index in range(4):
        m.fill_next_token_bitmask(rows, index)
        assert np.array_equal(big[index, 1:1 + words()].numpy(), expected)
        assert big[index, 0].item() == -7 and big[index, -1].item() == -7


class _TensorSubclass(torch.Tensor):
    """A subclass may override the attributes the fill reads: it takes the ordinary attribute
    lookup, where torch.Tensor itself is read through its type's descriptors."""


def test_subclass_tensor_follows_in_place_changes(grammar: xg.CompiledGrammar) -> None:
    m = xg.GrammarMatcher(grammar)
    expected = reference(m)
    t = torch.zeros(2, words(), dtype=torch.int32).as_subclass(_TensorSubclass)
    assert type(t) is _TensorSubclass
    for _ in range(2):  # the second fill uses the remembered layout
        m.fill_next_token_bitmask(t, 1)
        assert np.array_equal(t[1].numpy(), expected)
    t.resize_(1, words())
    with pytest.raises(xg.InvalidArgumentError, match="out of range"):
        m.fill_next_token_bitmask(t, 1)
    t.data = torch.zeros(1, words(), dtype=torch.float32)
    with pytest.raises(xg.InvalidArgumentError, match="dtype"):
        m.fill_next_token_bitmask(t)
