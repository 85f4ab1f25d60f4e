"""Helpers shared by the vLLM adapter tests."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any


@contextmanager
def offline_llm(model: Path, **kwargs: Any) -> Iterator[Any]:
    """An in-process ``vllm.LLM`` on the CPU; shut down (and its process group freed) on exit.

    Args:
        model: model folder.
        **kwargs: more ``LLM`` arguments (``structured_outputs_config``, ``speculative_config``...).
    """
    import vllm
    from vllm.distributed import cleanup_dist_env_and_memory

    settings: dict[str, Any] = {"dtype": "float32", "max_model_len": 512, "max_num_seqs": 16, "enforce_eager": True, "seed": 0}
    settings.update(kwargs)
    llm = vllm.LLM(model=str(model), **settings)
    try:
        yield llm
    finally:
        llm.llm_engine.engine_core.shutdown()
        del llm
        gc.collect()
        cleanup_dist_env_and_memory()
