"""Fixtures for the SGLang adapter tests: a tiny random-weights Llama and SGLang on CPU.

The model has the real Llama-3.1 tokenizer (so grammars are matched over a real 128k
vocabulary, three EOS ids included) and a 2-layer, 64-wide body with random weights, written
as safetensors. SGLang runs it on the CPU with its torch-native attention backend.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator, Optional, Sequence

import pytest

LLAMA3_EOS_IDS = [128001, 128008, 128009]
# Qwen3's vocabulary as its models pad it (the tokenizer has 151,669 ids), and its <|im_end|>.
QWEN3_VOCAB = 151936
QWEN3_IM_END = 151645
SERVER_STARTUP_TIMEOUT_S = 420
ENGINE_ARGS: dict[str, Any] = {
    "device": "cpu",
    "attention_backend": "torch_native",
    "sampling_backend": "pytorch",
    "grammar_backend": "xg2",
    "disable_cuda_graph": True,
    "disable_overlap_schedule": True,
    "constrained_json_disable_any_whitespace": True,
    "mem_fraction_static": 0.05,
    "max_total_tokens": 4096,
    "max_running_requests": 8,
    "context_length": 512,
    "random_seed": 0,
    "log_level": "error",
}
# SGLang's CPU engine switch; set before SGLang is imported by the test process and
# inherited by the scheduler processes it spawns.
os.environ.setdefault("SGLANG_USE_CPU_ENGINE", "1")
# Everything is loaded from local paths; never wait on a model hub.
os.environ.setdefault("HF_HUB_OFFLINE", "1")


def build_tiny_llama(
    path: Path,
    tokenizer_dir: Path,
    *,
    vocab: int = 128256,
    bos_token_id: Optional[int] = 128000,
    eos_token_ids: Sequence[int] = tuple(LLAMA3_EOS_IDS),
) -> Path:
    """Writes a random-weights Llama with the tokenizer from ``tokenizer_dir`` into ``path``.

    Args:
        path: an empty directory to write config, weights and tokenizer into.
        tokenizer_dir: a ``tokenizer.json`` / ``tokenizer_config.json`` directory (by
            default Llama-3.1's, whose vocabulary and special ids the defaults are).
        vocab: the model's vocabulary (logits width), at least the tokenizer's.
        bos_token_id: the tokenizer's BOS id, if it has one.
        eos_token_ids: the ids that end generation.

    Returns:
        ``path``, loadable by SGLang as ``--model-path``.
    """
    import torch
    from safetensors.torch import save_file

    hidden, intermediate, layers, heads, kv_heads = 64, 128, 2, 4, 2
    eos = list(eos_token_ids)
    head_dim = hidden // heads
    config = {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "hidden_size": hidden,
        "intermediate_size": intermediate,
        "num_hidden_layers": layers,
        "num_attention_heads": heads,
        "num_key_value_heads": kv_heads,
        "head_dim": head_dim,
        "vocab_size": vocab,
        "max_position_embeddings": 2048,
        "rms_norm_eps": 1e-5,
        "rope_theta": 500000.0,
        "hidden_act": "silu",
        "tie_word_embeddings": True,
        "torch_dtype": "float32",
        "bos_token_id": bos_token_id,
        "eos_token_id": eos,
    }
    generator = torch.Generator().manual_seed(0)

    def randn(*shape: int) -> torch.Tensor:
        return torch.randn(*shape, generator=generator) * 0.5

    weights = {"model.embed_tokens.weight": randn(vocab, hidden), "model.norm.weight": torch.ones(hidden)}
    for i in range(layers):
        prefix = f"model.layers.{i}."
        weights.update(
            {
                prefix + "self_attn.q_proj.weight": randn(heads * head_dim, hidden),
                prefix + "self_attn.k_proj.weight": randn(kv_heads * head_dim, hidden),
                prefix + "self_attn.v_proj.weight": randn(kv_heads * head_dim, hidden),
                prefix + "self_attn.o_proj.weight": randn(hidden, heads * head_dim),
                prefix + "mlp.gate_proj.weight": randn(intermediate, hidden),
                prefix + "mlp.up_proj.weight": randn(intermediate, hidden),
                prefix + "mlp.down_proj.weight": randn(hidden, intermediate),
                prefix + "input_layernorm.weight": torch.ones(hidden),
                prefix + "post_attention_layernorm.weight": torch.ones(hidden),
            }
        )
    path.mkdir(parents=True, exist_ok=True)
    save_file(weights, str(path / "model.safetensors"), metadata={"format": "pt"})
    (path / "config.json").write_text(json.dumps(config, indent=1))
    (path / "generation_config.json").write_text(
        json.dumps({"bos_token_id": bos_token_id, "eos_token_id": eos})
    )
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(tokenizer_dir / name, path / name)
    return path


@pytest.fixture(scope="session")
def sglang_tiny_llama(data_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny random-weights Llama with the real Llama-3.1 tokenizer (session-wide)."""
    return build_tiny_llama(tmp_path_factory.mktemp("tiny-llama"), data_dir / "tokenizers" / "hf" / "llama3.1")


@pytest.fixture(scope="session")
def sglang_tiny_qwen3(data_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny random-weights Llama with the real Qwen3 tokenizer (session-wide)."""
    return build_tiny_llama(
        tmp_path_factory.mktemp("tiny-qwen3"),
        data_dir / "tokenizers" / "hf" / "qwen3",
        vocab=QWEN3_VOCAB,
        bos_token_id=None,
        eos_token_ids=[QWEN3_IM_END],
    )


@pytest.fixture(scope="session")
def llama_tokenizer(sglang_tiny_llama: Path) -> Any:
    """The model's Hugging Face tokenizer, loaded as SGLang loads it."""
    from sglang.srt.utils.hf_transformers.tokenizer import get_tokenizer

    return get_tokenizer(str(sglang_tiny_llama))


@pytest.fixture(scope="module")
def sglang_engine(sglang_tiny_llama: Path) -> Iterator[Any]:
    """``sgl.Engine`` on the CPU with ``grammar_backend="xg2"`` (shut down after the module)."""
    import sglang as sgl

    engine = sgl.Engine(model_path=str(sglang_tiny_llama), **ENGINE_ARGS)
    try:
        yield engine
    finally:
        engine.shutdown()


def free_port() -> int:
    """A TCP port on the loopback interface that is free right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def sglang_server(arguments: Sequence[str], log_path: Path, env: Optional[dict[str, str]] = None) -> Iterator[str]:
    """``sglang serve ARGUMENTS --port P`` in its own process group; yields its base URL.

    Waits (bounded) until ``/health`` answers; the process group is terminated on exit.

    Args:
        arguments: the words after ``sglang serve``, without ``--port``.
        log_path: file that receives the server's output (quoted when it fails to start).
        env: variables set on top of this process's environment.
    """
    import requests

    port = free_port()
    command = [str(Path(sys.executable).parent / "sglang"), "serve", *arguments, "--port", str(port)]
    with open(log_path, "wb") as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                                   env={**os.environ, **(env or {})})
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + SERVER_STARTUP_TIMEOUT_S
        while True:
            if process.poll() is not None:
                pytest.fail(f"sglang serve exited with {process.returncode}:\n{log_path.read_text()[-4000:]}")
            try:
                if requests.get(base + "/health", timeout=5).status_code == 200:
                    break
            except requests.RequestException:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"sglang serve not healthy after {SERVER_STARTUP_TIMEOUT_S}s:\n{log_path.read_text()[-4000:]}")
            time.sleep(2)
        yield base
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=30)
