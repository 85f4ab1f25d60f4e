"""A tiny random-weights Llama next to a tokenizer (a real one, or the demo's own), for tests and the demo.

Random weights make the model's choices arbitrary, so every structure in its output comes
from the grammar: constrained output that validates is a real end-to-end check of the
backend. The model is a few MB of float32 weights (most of it the embedding) and runs on a
CPU in milliseconds per token.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path
from typing import Union

__all__ = ["build_tiny_llama", "build_tiny_mistral", "build_tiny_tiktoken"]

_TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json")


def build_tiny_llama(
    tokenizer_dir: Union[str, Path],
    out_dir: Union[str, Path],
    *,
    hidden_size: int = 64,
    num_layers: int = 2,
    seed: int = 0,
) -> Path:
    """Saves a random-weights Llama model (safetensors) with a copy of a tokenizer.

    Reuses ``out_dir`` when it already holds a model built with the same settings and
    tokenizer files.

    Args:
        tokenizer_dir: a Hugging Face tokenizer folder (``tokenizer.json`` and
            ``tokenizer_config.json``); its vocabulary size becomes the model's.
        out_dir: where to write the model folder.
        hidden_size: model width (two heads of ``hidden_size // 2``; vLLM's CPU attention
            needs a head size of at least 32).
        num_layers: decoder layers.
        seed: torch seed for the weights.

    Returns:
        ``out_dir``, loadable by ``vllm.LLM(model=str(out_dir))``.

    Raises:
        FileNotFoundError: ``tokenizer_dir`` has no ``tokenizer.json``.
    """
    tokenizer_dir, out_dir = Path(tokenizer_dir), Path(out_dir)
    if not (tokenizer_dir / "tokenizer.json").is_file():
        raise FileNotFoundError(f"{tokenizer_dir} is not a Hugging Face tokenizer folder (no tokenizer.json in it)")
    # The tokenizer's files are part of the key: a rebuilt tokenizer needs a rebuilt model.
    files = hashlib.sha256()
    for name in _TOKENIZER_FILES:
        if (tokenizer_dir / name).exists():
            files.update(name.encode() + b"\0" + (tokenizer_dir / name).read_bytes())
    settings = {"tokenizer": str(tokenizer_dir.resolve()), "files": files.hexdigest(), "hidden": hidden_size,
                "layers": num_layers, "seed": seed}
    stamp = out_dir / "xg2_tiny_model.json"
    if stamp.exists() and json.loads(stamp.read_text()) == settings:
        return out_dir

    import transformers

    tokenizer = transformers.AutoTokenizer.from_pretrained(str(tokenizer_dir))
    _save_random_llama(
        out_dir,
        vocab_size=len(tokenizer),
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        hidden_size=hidden_size,
        num_layers=num_layers,
        seed=seed,
    )
    for name in _TOKENIZER_FILES:
        if (tokenizer_dir / name).exists():
            shutil.copy(tokenizer_dir / name, out_dir / name)
    stamp.write_text(json.dumps(settings))
    return out_dir


# Mistral tokenizer files, under the names mistral_common looks for in a model folder.
_MISTRAL_FILE_NAMES = {"tekken": "tekken.json", "sentencepiece": "tokenizer.model.v{version}"}


def build_tiny_mistral(
    tokenizer_file: Union[str, Path],
    out_dir: Union[str, Path],
    *,
    vocab_size: int,
    sentencepiece_version: int = 0,
    hidden_size: int = 64,
    num_layers: int = 2,
    seed: int = 0,
) -> Path:
    """Saves a random-weights Llama next to a Mistral tokenizer file, for ``tokenizer_mode="mistral"``.

    Args:
        tokenizer_file: a tekken JSON file, or a Mistral sentencepiece model (then give
            ``sentencepiece_version``, which mistral_common reads from the file name).
        out_dir: where to write the model folder.
        vocab_size: the tokenizer's vocabulary size (the model's logits width).
        sentencepiece_version: the tokenizer version (1, 3, 7...) of a sentencepiece file.
        hidden_size: model width.
        num_layers: decoder layers.
        seed: torch seed for the weights.

    Returns:
        ``out_dir``, loadable by ``vllm.LLM(model=str(out_dir), tokenizer_mode="mistral")``.
    """
    tokenizer_file, out_dir = Path(tokenizer_file), Path(out_dir)
    if sentencepiece_version:
        name = _MISTRAL_FILE_NAMES["sentencepiece"].format(version=sentencepiece_version)
    else:
        name = _MISTRAL_FILE_NAMES["tekken"]
    settings = {"tokenizer": str(tokenizer_file.resolve()), "vocab": vocab_size, "hidden": hidden_size,
                "layers": num_layers, "seed": seed}
    stamp = out_dir / "xg2_tiny_model.json"
    if stamp.exists() and json.loads(stamp.read_text()) == settings:
        return out_dir
    # Mistral's layout: <unk> 0, <s> 1, </s> 2.
    _save_random_llama(out_dir, vocab_size=vocab_size, bos_token_id=1, eos_token_id=2,
                       hidden_size=hidden_size, num_layers=num_layers, seed=seed)
    shutil.copy(tokenizer_file, out_dir / name)
    stamp.write_text(json.dumps(settings))
    return out_dir


def build_tiny_tiktoken(
    tiktoken_file: Union[str, Path],
    special_tokens: dict[str, int],
    out_dir: Union[str, Path],
    *,
    eos_token: str,
    hidden_size: int = 64,
    num_layers: int = 2,
    seed: int = 0,
) -> Path:
    """Saves a random-weights Llama next to a tiktoken vocabulary, for vLLM's tiktoken tokenizer.

    vLLM 0.32's ``tokenizer_mode="kimi_audio"`` loads ``tiktoken.model`` (base64 token, rank
    per line) plus the special tokens listed in ``tokenizer_config.json``.

    Args:
        tiktoken_file: a ``.tiktoken`` ranks file.
        special_tokens: special token text -> id.
        out_dir: where to write the model folder.
        eos_token: the special token that ends generation.
        hidden_size: model width.
        num_layers: decoder layers.
        seed: torch seed for the weights.

    Returns:
        ``out_dir``, loadable by ``vllm.LLM(model=str(out_dir), tokenizer_mode="kimi_audio")``.
    """
    tiktoken_file, out_dir = Path(tiktoken_file), Path(out_dir)
    settings = {"tokenizer": str(tiktoken_file.resolve()), "specials": special_tokens, "eos": eos_token,
                "hidden": hidden_size, "layers": num_layers, "seed": seed}
    stamp = out_dir / "xg2_tiny_model.json"
    if stamp.exists() and json.loads(stamp.read_text()) == settings:
        return out_dir
    with open(tiktoken_file, encoding="utf-8") as ranks:
        num_ranks = sum(1 for line in ranks if line.strip())
    vocab_size = max(num_ranks, max(special_tokens.values()) + 1)
    _save_random_llama(out_dir, vocab_size=vocab_size, bos_token_id=special_tokens[eos_token],
                       eos_token_id=special_tokens[eos_token], hidden_size=hidden_size,
                       num_layers=num_layers, seed=seed)
    shutil.copy(tiktoken_file, out_dir / "tiktoken.model")
    decoder = {str(i): {"content": text, "special": True} for text, i in special_tokens.items()}
    (out_dir / "tokenizer_config.json").write_text(json.dumps({"added_tokens_decoder": decoder, "eos_token": eos_token}))
    stamp.write_text(json.dumps(settings))
    return out_dir


def _save_random_llama(
    out_dir: Path,
    *,
    vocab_size: int,
    bos_token_id: int,
    eos_token_id: int,
    hidden_size: int,
    num_layers: int,
    seed: int,
) -> None:
    import torch
    import transformers

    heads = 2
    config = transformers.LlamaConfig(
        vocab_size=vocab_size,
        hidden_size=hidden_size,
        intermediate_size=2 * hidden_size,
        num_hidden_layers=num_layers,
        num_attention_heads=heads,
        num_key_value_heads=1,
        head_dim=hidden_size // heads,
        max_position_embeddings=2048,
        tie_word_embeddings=True,
        bos_token_id=bos_token_id,
        eos_token_id=eos_token_id,
        torch_dtype="float32",
    )
    torch.manual_seed(seed)
    model = transformers.LlamaForCausalLM(config)
    out_dir.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(str(out_dir), safe_serialization=True)
