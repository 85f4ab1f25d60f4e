"""Batch matching (xgrammar's ``BatchGrammarMatcher``): one native call, without the GIL, per
batch of matchers for filling masks, accepting tokens or strings, and rolling back."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Set as AbstractSet
from typing import Any, List, Literal, Optional, Union

from . import _native
from .bitmask import _int_argument
from .matcher import GrammarMatcher, _token_id, batch_fill_next_token_bitmask

__all__ = ["BatchGrammarMatcher"]


def _sequence(values: Any, name: str, what: str) -> list:
    if isinstance(values, (str, bytes, bytearray, Mapping, AbstractSet)) or not isinstance(values, Iterable):
        raise TypeError(f"{name} must be a sequence of {what}, got {type(values).__name__}")
    return list(values)


def _handles(matchers: Any) -> list:
    matchers = _sequence(matchers, "matchers", "GrammarMatcher")
    for i, m in enumerate(matchers):
        if not isinstance(m, GrammarMatcher):
            raise TypeError(f"matchers[{i}] must be a GrammarMatcher, got {type(m).__name__}")
    return [m._handle for m in matchers]


def _same_length(matchers: list, values: list, name: str) -> None:
    if len(values) != len(matchers):
        raise ValueError(f"{len(matchers)} matchers but {len(values)} {name}; give one per matcher")


def _auto_threads() -> int:
    return max(1, (os.cpu_count() or 2) // 2)


def _batch_threads(count: int) -> int:
    """Threads for a static batch call: the 'auto' count, never more than the batch."""
    return max(1, min(count, _auto_threads()))


class BatchGrammarMatcher:
    """Runs one operation for many matchers in a single native call, without the GIL.

    A batch names each matcher once (a matcher serves one thread at a time); naming one twice
    is a ``ValueError``. Bad input (a token outside a matcher's vocabulary, a rollback deeper
    than its history) is refused before any matcher changes, and a step that fails mid-batch
    (``ResourceLimitError``) is undone in every matcher of the batch before it is raised.

    Args:
        max_threads: threads for ``batch_fill_next_token_bitmask`` (the calling thread included);
            ``"auto"`` is half the CPU count, at least one.
    """

    def __init__(self, max_threads: Union[int, Literal["auto"]] = "auto") -> None:
        if max_threads == "auto" and isinstance(max_threads, str):
            self._max_threads = _auto_threads()
        else:
            if isinstance(max_threads, str):
                raise ValueError(f"max_threads must be a positive int or 'auto', got {max_threads!r}")
            threads = _int_argument(max_threads, "max_threads")
            if threads < 1:
                raise ValueError(f"max_threads must be >= 1, got {threads}")
            self._max_threads = threads

    @property
    def max_threads(self) -> int:
        return self._max_threads

    def batch_fill_next_token_bitmask(
        self,
        matchers: List[GrammarMatcher],
        bitmask: Any,
        indices: Optional[List[int]] = None,
        debug_print: bool = False,
    ) -> None:
        """Fills row ``indices[i]`` (default ``i``) of ``bitmask`` with ``matchers[i]``'s mask.

        ``debug_print`` is accepted for xgrammar compatibility and prints nothing."""
        batch_fill_next_token_bitmask(matchers, bitmask, indices, max_threads=self._max_threads)

    @staticmethod
    def batch_accept_token(
        matchers: List[GrammarMatcher], tokens: List[int], debug_print: bool = False
    ) -> List[bool]:
        """Accepts ``tokens[i]`` in ``matchers[i]``; per matcher, whether it was accepted."""
        handles = _handles(matchers)
        tokens = _sequence(tokens, "tokens", "ints")
        _same_length(handles, tokens, "tokens")
        ids = [_token_id(t, m.vocab_size, f"tokens[{i}]") for i, (t, m) in enumerate(zip(tokens, matchers))]
        return _native.batch_accept_token(handles, ids, _batch_threads(len(handles)))

    @staticmethod
    def batch_accept_string(
        matchers: List[GrammarMatcher], strings: List[Union[str, bytes]], debug_print: bool = False
    ) -> List[bool]:
        """Accepts ``strings[i]`` (one rollback step each) in ``matchers[i]``."""
        handles = _handles(matchers)
        strings = _sequence(strings, "strings", "str or bytes")
        _same_length(handles, strings, "strings")
        data = []
        for i, text in enumerate(strings):
            if isinstance(text, str):
                data.append(text.encode("utf-8"))
            elif isinstance(text, (bytes, bytearray, memoryview)):
                data.append(bytes(text))
            else:
                raise TypeError(f"strings[{i}] must be str or bytes, got {type(text).__name__}")
        return _native.batch_accept_string(handles, data, _batch_threads(len(handles)))

    @staticmethod
    def batch_rollback(matchers: List[GrammarMatcher], num_tokens: Union[List[int], int] = 1) -> None:
        """Rolls ``matchers[i]`` back by ``num_tokens[i]`` steps (one int: the same for all)."""
        handles = _handles(matchers)
        if isinstance(num_tokens, Iterable) and not isinstance(num_tokens, (str, bytes, Mapping, AbstractSet)):
            counts = [_int_argument(n, f"num_tokens[{i}]") for i, n in enumerate(num_tokens)]
            _same_length(handles, counts, "rollback counts")
        else:
            counts = [_int_argument(num_tokens, "num_tokens")] * len(handles)
        for i, n in enumerate(counts):
            if not 0 <= n <= 2 ** 31 - 1:
                raise ValueError(f"num_tokens[{i}] must be >= 0, got {n}")
        _native.batch_rollback(handles, counts, _batch_threads(len(handles)))
