"""Helpers shared by the vLLM adapter tests."""

from __future__ import annotations

import gc
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

SERVER_STARTUP_TIMEOUT_S = 420


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


def free_port() -> int:
    """A TCP port on the loopback interface that is free right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _wait_healthy(url: str, process: subprocess.Popen, log: Path) -> None:
    deadline = time.monotonic() + SERVER_STARTUP_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"vLLM server exited with {process.returncode}:\n{log.read_text()[-4000:]}")
        try:
            with urllib.request.urlopen(url + "/health", timeout=5) as response:
                if response.status == 200:
                    return
        except OSError:
            pass
        time.sleep(2)
    pytest.fail(f"vLLM server not healthy after {SERVER_STARTUP_TIMEOUT_S} s:\n{log.read_text()[-4000:]}")


@contextmanager
def openai_server(arguments: Sequence[str], log: Path, env: dict[str, str] | None = None) -> Iterator[str]:
    """``python -m vllm.entrypoints.openai.api_server ARGUMENTS --port P`` in a subprocess.

    Yields the server's base URL once ``/health`` answers; terminated on exit. Every wait is
    bounded.

    Args:
        arguments: the server's arguments (model, backend, parsers...), without ``--port``.
        log: file that receives the server's output (quoted when it fails to start).
        env: variables set on top of this process's environment.
    """
    port = free_port()
    environment = dict(os.environ)
    environment.pop("VLLM_ENABLE_V1_MULTIPROCESSING", None)  # the server runs its engine core in its own process
    environment.update(env or {})
    command = [sys.executable, "-m", "vllm.entrypoints.openai.api_server", *arguments, "--port", str(port)]
    with open(log, "wb") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=environment)
    try:
        base = f"http://127.0.0.1:{port}"
        _wait_healthy(base, process, log)
        yield base
    finally:
        process.terminate()
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=30)
