"""Token bitmask buffers: allocation, validation and CPU application.

Layout (shared with xgrammar, vLLM and SGLang): int32, shape ``(batch, ceil(vocab_size / 32))``;
token ``t`` is allowed iff bit ``t % 32`` of word ``t // 32`` is set. Buffers may be numpy arrays
or torch CPU tensors; they are written in place, never copied.
"""

from __future__ import annotations

import operator
from collections.abc import Mapping, Set as AbstractSet
from dataclasses import dataclass
from typing import Any, Optional, Sequence

import numpy as np

from . import _native

__all__ = [
    "allocate_token_bitmask",
    "get_bitmask_shape",
    "reset_token_bitmask",
    "apply_token_bitmask_inplace",
    "bitmask_to_bool_array",
]


def get_bitmask_shape(batch_size: int, vocab_size: int) -> tuple[int, int]:
    """Shape of a bitmask for ``batch_size`` rows over ``vocab_size`` tokens
    (``vocab_size`` at most ``TokenizerInfo``'s cap, ``xg2_plugin._native.MAX_VOCAB_SIZE``)."""
    batch_size = _int_argument(batch_size, "batch_size")
    vocab_size = _int_argument(vocab_size, "vocab_size")
    if batch_size < 0:
        raise ValueError(f"batch_size must be >= 0, got {batch_size}")
    if not 0 < vocab_size <= _native.MAX_VOCAB_SIZE:
        raise ValueError(f"vocab_size must be in [1, {_native.MAX_VOCAB_SIZE}], got {vocab_size}")
    return (batch_size, (vocab_size + 31) // 32)


def _torch() -> Any:
    try:
        import torch
    except ImportError:
        return None
    return torch


def allocate_token_bitmask(batch_size: int, vocab_size: int) -> Any:
    """Allocates an all-allowed bitmask (every bit set).

    Returns a torch int32 CPU tensor when torch is installed, otherwise a numpy array.
    """
    shape = get_bitmask_shape(batch_size, vocab_size)
    torch = _torch()
    if torch is not None:
        return torch.full(shape, -1, dtype=torch.int32)
    return np.full(shape, -1, dtype=np.int32)


def reset_token_bitmask(bitmask: Any) -> None:
    """Sets every bit of ``bitmask`` (all tokens allowed)."""
    torch = _torch()
    if isinstance(bitmask, np.ndarray):
        bitmask.fill(-1)
    elif torch is not None and isinstance(bitmask, torch.Tensor):
        bitmask.fill_(-1)
    else:
        raise TypeError(f"bitmask must be a numpy array or a torch tensor, got {type(bitmask).__name__}")


@dataclass(frozen=True)
class BitmaskView:
    """A validated bitmask buffer: base address, row stride and row width in 32-bit words."""

    address: int
    rows: int
    row_stride_words: int
    num_words: int


# Rows that overlap (a broadcast view: torch expand(), numpy as_strided with stride 0) would
# let the fill of one row overwrite another.
_OVERLAP = "bitmask rows overlap in memory (strides {}); pass a buffer whose rows are distinct"


def view_bitmask(bitmask: Any) -> BitmaskView:
    """Validates a bitmask buffer and returns its raw layout.

    Raises ``ValueError`` for a wrong dtype, dimensionality, device, layout or stride (rows
    must be contiguous and must not overlap), and
    ``TypeError`` for an object that is neither a numpy array nor a torch tensor.
    """
    if isinstance(bitmask, np.ndarray):
        if bitmask.dtype != np.int32:
            raise ValueError(f"bitmask must have dtype int32, got {bitmask.dtype}")
        if bitmask.ndim not in (1, 2):
            raise ValueError(f"bitmask must be 1-D or 2-D, got shape {bitmask.shape}")
        if not bitmask.flags.writeable:
            raise ValueError("bitmask array is read-only")
        shape = bitmask.shape if bitmask.ndim == 2 else (1, bitmask.shape[0])
        strides = bitmask.strides if bitmask.ndim == 2 else (bitmask.strides[0] * bitmask.shape[0], bitmask.strides[0])
        if bitmask.size and (strides[1] != 4 or strides[0] % 4 != 0 or strides[0] < 0):
            raise ValueError(f"bitmask rows must be contiguous int32 words, got strides {bitmask.strides}")
        if bitmask.size and shape[0] > 1 and strides[0] // 4 < shape[1]:
            raise ValueError(_OVERLAP.format(bitmask.strides))
        return BitmaskView(bitmask.ctypes.data, shape[0], strides[0] // 4 if shape[0] > 1 else shape[1], shape[1])
    torch = _torch()
    if torch is not None and isinstance(bitmask, torch.Tensor):
        if bitmask.dtype != torch.int32:
            raise ValueError(f"bitmask must have dtype torch.int32, got {bitmask.dtype}")
        if bitmask.device.type != "cpu":
            raise ValueError(
                f"bitmask must be on the CPU to be filled, got device {bitmask.device}; "
                "fill a CPU tensor and copy it to the accelerator"
            )
        if bitmask.layout != torch.strided:
            raise ValueError(f"bitmask must be a dense (strided) tensor, got layout {bitmask.layout}")
        if bitmask.dim() not in (1, 2):
            raise ValueError(f"bitmask must be 1-D or 2-D, got shape {tuple(bitmask.shape)}")
        shape = tuple(bitmask.shape) if bitmask.dim() == 2 else (1, bitmask.shape[0])
        strides = bitmask.stride() if bitmask.dim() == 2 else (bitmask.shape[0], bitmask.stride(0))
        if bitmask.numel() and (strides[1] != 1 or strides[0] < 0):
            raise ValueError(f"bitmask rows must be contiguous int32 words, got strides {bitmask.stride()}")
        if bitmask.numel() and shape[0] > 1 and strides[0] < shape[1]:
            raise ValueError(_OVERLAP.format(bitmask.stride()))
        return BitmaskView(bitmask.data_ptr(), shape[0], strides[0] if shape[0] > 1 else shape[1], shape[1])
    raise TypeError(f"bitmask must be a numpy array or a torch tensor, got {type(bitmask).__name__}")


def bitmask_to_bool_array(bitmask_row: Any, vocab_size: int) -> np.ndarray:
    """Unpacks one bitmask row into a bool array of length ``vocab_size``."""
    row = np.asarray(bitmask_row.numpy() if hasattr(bitmask_row, "numpy") else bitmask_row, dtype=np.int32)
    bits = np.unpackbits(row.astype("<i4").view(np.uint8), bitorder="little")
    return bits[:vocab_size].astype(bool)


def apply_token_bitmask_inplace(
    logits: Any,
    bitmask: Any,
    indices: Optional[Sequence[int]] = None,
    vocab_size: Optional[int] = None,
) -> None:
    """Sets disallowed logits to ``-inf`` in place (CPU implementation).

    ``logits`` is ``(batch, vocab)`` or ``(vocab,)``; bitmask row ``i`` applies to logits row
    ``i``. With ``indices``, only those rows are masked (as in xgrammar). Tokens beyond
    ``vocab_size`` (default: the narrower of the logits and the bitmask) are left untouched.
    On accelerators the serving engine applies the same bitmask with its own kernel.
    """
    torch = _torch()
    is_torch = torch is not None and isinstance(logits, torch.Tensor)
    if not is_torch and not isinstance(logits, np.ndarray):
        raise TypeError(f"logits must be a numpy array or a torch tensor, got {type(logits).__name__}")
    _check_apply_operand(logits, "logits", torch, floating=True)
    if is_torch and isinstance(bitmask, np.ndarray):
        bitmask = torch.from_numpy(bitmask)
    elif not is_torch and torch is not None and isinstance(bitmask, torch.Tensor):
        bitmask = bitmask.cpu().numpy()
    if not isinstance(bitmask, np.ndarray) and not (torch is not None and isinstance(bitmask, torch.Tensor)):
        raise TypeError(f"bitmask must be a numpy array or a torch tensor, got {type(bitmask).__name__}")
    _check_apply_operand(bitmask, "bitmask", torch, floating=False)
    squeeze = logits.ndim == 1
    logits2d = logits[None, :] if squeeze else logits
    mask2d = bitmask[None, :] if bitmask.ndim == 1 else bitmask
    width = min(logits2d.shape[-1], mask2d.shape[-1] * 32)
    if vocab_size is not None:
        width = min(width, _int_argument(vocab_size, "vocab_size"))
        if width < 0:
            raise ValueError(f"vocab_size must be >= 0, got {vocab_size}")
    if indices is None:
        rows = list(range(logits2d.shape[0]))
    elif isinstance(indices, (str, bytes, Mapping, AbstractSet)):
        raise TypeError(f"indices must be a sequence of ints, got {type(indices).__name__}")
    else:
        rows = [_int_argument(r, f"indices[{i}]") for i, r in enumerate(indices)]
    for r in rows:
        if not 0 <= r < logits2d.shape[0] or r >= mask2d.shape[0]:
            raise ValueError(f"index {r} is out of range for logits with {logits2d.shape[0]} rows "
                             f"and a bitmask with {mask2d.shape[0]} rows")
    if is_torch:
        shifts = torch.arange(32, dtype=torch.int32, device=mask2d.device)
        for r in rows:
            bits = ((mask2d[r].unsqueeze(-1) >> shifts) & 1).reshape(-1)[:width].bool()
            logits2d[r, :width].masked_fill_(~bits.to(logits2d.device), float("-inf"))
    else:
        for r in rows:
            allowed = bitmask_to_bool_array(mask2d[r], width)
            logits2d[r, :width][~allowed] = -np.inf


def _int_argument(value: Any, name: str) -> int:
    """``value`` as an int: numpy integers are accepted, bool and float are not (a TypeError
    naming ``name``). Exact ints take the first, cheapest test (the per-token path)."""
    if type(value) is int:
        return value
    if isinstance(value, bool):
        raise TypeError(f"{name} must be an int, got bool")
    try:
        return operator.index(value)
    except TypeError:
        raise TypeError(f"{name} must be an int, got {type(value).__name__}") from None


def _check_apply_operand(array: Any, name: str, torch: Any, *, floating: bool) -> None:
    """Dtype, layout and rank of an ``apply_token_bitmask_inplace`` operand: logits must be
    floating point (they receive ``-inf``), the bitmask int32; both dense, 1-D or 2-D."""
    if isinstance(array, np.ndarray):
        ok = np.issubdtype(array.dtype, np.floating) if floating else array.dtype == np.int32
    else:
        if array.layout != torch.strided:
            raise ValueError(f"{name} must be a dense (strided) tensor, got layout {array.layout}")
        ok = array.dtype.is_floating_point if floating else array.dtype == torch.int32
    if not ok:
        wanted = "a floating-point dtype" if floating else "dtype int32"
        raise ValueError(f"{name} must have {wanted}, got {array.dtype}")
    if array.ndim not in (1, 2):
        raise ValueError(f"{name} must be 1-D or 2-D, got shape {tuple(array.shape)}")
