"""Fixtures for the SGLang adapter tests: a tiny random-weights Llama and SGLang on CPU.

The model has the real Llama-3.1 tokenizer (so grammars are matched over a real 128k
vocabulary, three EOS ids included) and a 2-layer, 64-wide body with random weights, written
as safetensors. SGLang runs it on the CPU with its torch-native attention backend.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
from pathlib import Path
from typing import Any, Iterator

import pytest

LLAMA3_EOS_IDS = [128001, 128008, 128009]
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


def build_tiny_llama(path: Path, tokenizer_dir: Path) -> Path:
    """Writes a random-weights Llama with the tokenizer from ``tokenizer_dir`` into ``path``.

    Args:
        path: an empty directory to write config, weights and tokenizer into.
        tokenizer_dir: a Llama-3.1 ``tokenizer.json`` / ``tokenizer_config.json`` directory.

    Returns:
        ``path``, loadable by SGLang as ``--model-path``.
    """
    import torch
    from safetensors.torch import save_file

    hidden, intermediate, layers, heads, kv_heads, vocab = 64, 128, 2, 4, 2, 128256
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
        "bos_token_id": 128000,
        "eos_token_id": LLAMA3_EOS_IDS,
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
        json.dumps({"bos_token_id": 128000, "eos_token_id": LLAMA3_EOS_IDS})
    )
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(tokenizer_dir / name, path / name)
    return path


@pytest.fixture(scope="session")
def sglang_tiny_llama(data_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny random-weights Llama with the real Llama-3.1 tokenizer (session-wide)."""
    return build_tiny_llama(tmp_path_factory.mktemp("tiny-llama"), data_dir / "tokenizers" / "hf" / "llama3.1")


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
