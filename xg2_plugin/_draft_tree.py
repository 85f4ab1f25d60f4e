"""Argument checks of ``GrammarMatcher.traverse_draft_tree``; the walk itself is native
(native/matcher/draft_tree.h)."""

from __future__ import annotations

from typing import Any

import numpy as np

from . import _native
from .bitmask import _torch, view_bitmask


def tree_array(value: Any, name: str) -> np.ndarray:
    """A 1-D int64 CPU torch tensor or numpy array, as a numpy array (no copy)."""
    torch = _torch()
    if torch is not None and isinstance(value, torch.Tensor):
        if value.dtype != torch.int64:
            raise ValueError(f"{name} must be a 1-D int64 tensor, got dtype {value.dtype}")
        if value.device.type != "cpu":
            raise ValueError(f"{name} must be on the CPU, got device {value.device}")
        if value.dim() != 1:
            raise ValueError(f"{name} must be a 1-D int64 tensor, got shape {tuple(value.shape)}")
        return value.numpy()
    if isinstance(value, np.ndarray):
        if value.dtype != np.int64:
            raise ValueError(f"{name} must be a 1-D int64 array, got dtype {value.dtype}")
        if value.ndim != 1:
            raise ValueError(f"{name} must be a 1-D int64 array, got shape {value.shape}")
        return value
    raise TypeError(f"{name} must be a 1-D int64 torch tensor or numpy array, got {type(value).__name__}")


def traverse_draft_tree(
    handle: Any,
    retrieve_next_token: Any,
    retrieve_next_sibling: Any,
    draft_tokens: Any,
    bitmask: Any,
    time_threshold: float,
    clear_skipped_rows: bool = True,
) -> bool:
    next_token = tree_array(retrieve_next_token, "retrieve_next_token")
    next_sibling = tree_array(retrieve_next_sibling, "retrieve_next_sibling")
    tokens = tree_array(draft_tokens, "draft_tokens")
    if isinstance(time_threshold, bool) or not isinstance(time_threshold, (int, float)):
        raise TypeError(f"time_threshold must be a number of seconds, got {type(time_threshold).__name__}")
    view = view_bitmask(bitmask)
    if getattr(bitmask, "ndim", 2) != 2:
        raise ValueError(f"bitmask must be 2-D (one row per node), got shape {tuple(bitmask.shape)}")
    return bool(
        _native.traverse_draft_tree(
            handle, next_token, next_sibling, tokens, view.address, view.rows, view.row_stride_words,
            view.num_words, float(time_threshold), bool(clear_skipped_rows),
        )
    )
