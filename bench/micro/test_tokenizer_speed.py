"""Micro-benchmarks of building a TokenizerInfo for a 200k vocabulary (gpt-oss / o200k)."""

from __future__ import annotations

from typing import Any

import pytest

from harness.config import data_dir

xg2 = pytest.importorskip("xg2_plugin")
tokenizers = pytest.importorskip("tokenizers")


@pytest.fixture(scope="module")
def gpt_oss() -> Any:
    path = data_dir() / "tokenizers" / "hf" / "gpt-oss" / "tokenizer.json"
    if not path.exists():
        pytest.skip(f"tokenizer not found: {path}")
    return tokenizers.Tokenizer.from_file(str(path))


def test_decode_vocabulary_200k(benchmark: Any, gpt_oss: Any) -> None:
    encoded = [token for token, _ in sorted(gpt_oss.get_vocab().items(), key=lambda item: item[1])]
    benchmark(xg2._native.decode_vocabulary, encoded, 2)


def test_tokenizer_info_from_huggingface_200k(benchmark: Any, gpt_oss: Any) -> None:
    benchmark(xg2.TokenizerInfo.from_huggingface, gpt_oss)
