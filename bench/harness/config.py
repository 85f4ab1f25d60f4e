"""Paths and options shared by the driver process and the workers."""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent.parent
REPO_ROOT = BENCH_DIR.parent


def data_dir() -> Path:
    """The shared data folder: ``$XG2_DATA_DIR`` or ``../shared/data`` beside the repository.

    Worktrees live beside the main checkout, so ``../shared/data`` is also tried relative to
    the parent of the repository root's parent when the first guess does not exist.
    """
    env = os.environ.get("XG2_DATA_DIR")
    if env:
        return Path(env)
    for candidate in (REPO_ROOT.parent / "shared" / "data", REPO_ROOT.parent.parent / "shared" / "data"):
        if candidate.is_dir():
            return candidate
    return REPO_ROOT.parent / "shared" / "data"


TOKENIZERS = {
    # name -> folder under tokenizers/hf/ (tokenizer.json + tokenizer_config.json)
    "llama3.1": "llama3.1",
    "qwen3": "qwen3",
    "gpt-oss": "gpt-oss",
}


@dataclass
class WorkOptions:
    """What a worker measures per item; sent to every worker with its task."""

    max_valid_instances: int = 3
    max_invalid_instances: int = 3
    max_instance_tokens: int = 4096
    walks: int = 2
    walk_token_cap: int = 256
    grammar_walks: int = 3
    grammar_walk_token_cap: int = 128
    seed: int = 0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "WorkOptions":
        return cls(**{k: v for k, v in data.items() if k in cls.__dataclass_fields__})


@dataclass
class BatchOptions:
    """Batch fill throughput settings."""

    batch_sizes: list[int] = field(default_factory=lambda: [64, 256])
    threads: list[int] = field(default_factory=lambda: [1, 2])
    rounds: int = 20
    max_grammars: int = 32
