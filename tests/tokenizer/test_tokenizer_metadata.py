"""``TokenizerInfo.dump_metadata`` / ``from_vocab_and_metadata`` (xgrammar's way to rebuild a
table in another process from the vocabulary it already has): the rebuilt table equals the
original, field by field, for real tokenizers; xgrammar's own metadata is read, and ours holds
xgrammar's keys with the values xgrammar writes for the same vocabulary."""

from __future__ import annotations

import json

import pytest

import xg2_plugin as xg
from xg2_test_support import hf_tokenizer, hf_tokenizer_info


def _encoded_vocab(name: str) -> list[str]:
    """The tokenizer.json spelling of every id (byte-level BPE), as an engine would pass it."""
    vocab = hf_tokenizer(name).get_vocab(with_added_tokens=True)
    encoded = [""] * (max(vocab.values()) + 1)
    for token, token_id in vocab.items():
        encoded[token_id] = token
    return encoded


def _fields(info: xg.TokenizerInfo) -> tuple:
    return (info.vocab_type, info.vocab_size, info.add_prefix_space, info.stop_token_ids, info.special_token_ids,
            info.decoded_vocab)


@pytest.mark.parametrize("name", ["llama3.1", "gpt2"])
def test_rebuilt_table_equals_the_original(name: str) -> None:
    info = hf_tokenizer_info(name)
    assert info.vocab_type == xg.VocabType.BYTE_LEVEL
    rebuilt = xg.TokenizerInfo.from_vocab_and_metadata(_encoded_vocab(name), info.dump_metadata())
    assert _fields(rebuilt) == _fields(info)
    assert info.special_token_ids, "the test needs a tokenizer with special ids to show they survive"


def test_metadata_matches_xgrammars() -> None:
    xgr = pytest.importorskip("xgrammar")
    name = "gpt2"
    info = hf_tokenizer_info(name)
    encoded = _encoded_vocab(name)
    theirs = xgr.TokenizerInfo(encoded, xgr.VocabType.BYTE_LEVEL, vocab_size=info.vocab_size,
                               stop_token_ids=info.stop_token_ids, add_prefix_space=False)
    their_metadata = json.loads(theirs.dump_metadata())
    ours = json.loads(info.dump_metadata())
    assert {key: ours[key] for key in their_metadata} == their_metadata
    from_theirs = xg.TokenizerInfo.from_vocab_and_metadata(encoded, theirs.dump_metadata())
    assert (from_theirs.vocab_type, from_theirs.vocab_size, from_theirs.stop_token_ids, from_theirs.decoded_vocab) == \
        (info.vocab_type, info.vocab_size, info.stop_token_ids, info.decoded_vocab)


@pytest.mark.parametrize("metadata", [
    "not json", "[]", "{}",
    '{"vocab_type": 2, "vocab_size": 3, "add_prefix_space": false}',
    '{"vocab_type": 2, "vocab_size": 3, "add_prefix_space": false, "stop_token_ids": [], "extra": 1}',
])
def test_bad_metadata_raises_invalid_argument(metadata: str) -> None:
    with pytest.raises(xg.InvalidArgumentError, match="metadata"):
        xg.TokenizerInfo.from_vocab_and_metadata(["a", "b", "c"], metadata)


@pytest.mark.parametrize("metadata, error", [
    ('{"vocab_type": 7, "vocab_size": 3, "add_prefix_space": false, "stop_token_ids": []}', ValueError),
    ('{"vocab_type": 0, "vocab_size": 2, "add_prefix_space": false, "stop_token_ids": []}', ValueError),
    ('{"vocab_type": 0, "vocab_size": 3, "add_prefix_space": 1, "stop_token_ids": []}', TypeError),
    ('{"vocab_type": 0, "vocab_size": 3, "add_prefix_space": false, "stop_token_ids": [9]}', ValueError),
])
def test_metadata_values_are_checked_as_the_constructor_checks_them(metadata: str, error: type) -> None:
    with pytest.raises(error):
        xg.TokenizerInfo.from_vocab_and_metadata(["a", "b", "c"], metadata)


def test_prepend_space_in_tokenization_is_a_deprecated_alias() -> None:
    info = xg.TokenizerInfo(["a"], xg.VocabType.RAW, add_prefix_space=True)
    with pytest.warns(DeprecationWarning, match="add_prefix_space"):
        assert info.prepend_space_in_tokenization is True
