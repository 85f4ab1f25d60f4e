"""Fixtures for the vLLM adapter tests (run in the vLLM venv; each module skips without vLLM).

vLLM runs on the CPU with settings that keep it small and fast on two cores; the models are
tiny random-weights Llamas next to real tokenizers, built once and cached in the temp dir
(``XG2_TINY_MODEL_DIR`` to override).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

for _name, _value in {
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "VLLM_CPU_KVCACHE_SPACE": "1",
    "VLLM_ENABLE_V1_MULTIPROCESSING": "0",
    "OMP_NUM_THREADS": "1",
    "OMP_WAIT_POLICY": "PASSIVE",
    "TOKENIZERS_PARALLELISM": "false",
    "VLLM_NO_USAGE_STATS": "1",
    "DO_NOT_TRACK": "1",
}.items():
    os.environ.setdefault(_name, _value)


@pytest.fixture(scope="session")
def model_cache_dir() -> Path:
    """Where tiny models are kept between runs."""
    path = Path(os.environ.get("XG2_TINY_MODEL_DIR", Path(tempfile.gettempdir()) / "xg2-vllm-tiny-models"))
    path.mkdir(parents=True, exist_ok=True)
    return path


@pytest.fixture(scope="session")
def tiny_llama(data_dir: Path, model_cache_dir: Path) -> Path:
    """Tiny Llama with the Llama-3.1 tokenizer (128,256 tokens)."""
    from xg2_plugin.adapters.vllm.tiny_model import build_tiny_llama

    return build_tiny_llama(data_dir / "tokenizers" / "hf" / "llama3.1", model_cache_dir / "llama3.1")


@pytest.fixture(scope="session")
def tiny_qwen3(data_dir: Path, model_cache_dir: Path) -> Path:
    """Tiny model with the Qwen3 tokenizer (``<think>`` / ``</think>`` for reasoning parsers)."""
    from xg2_plugin.adapters.vllm.tiny_model import build_tiny_llama

    return build_tiny_llama(data_dir / "tokenizers" / "hf" / "qwen3", model_cache_dir / "qwen3")


@pytest.fixture(scope="session")
def xg2_registered() -> None:
    """vLLM's plugins loaded, as the offline API needs before it sees ``backend="xg2"``."""
    import vllm.plugins

    vllm.plugins.load_general_plugins()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Runs vLLM's ngram speculation test after every other test of the session.

    Its proposer imports numba, after which vLLM 0.32's CPU kernel registration fails for any
    further engine started in the same process (whichever module that engine's test is in).
    """
    items.sort(key=lambda item: item.name == "test_ngram_speculative_decoding")
