"""Per-request matching: token masks, token acceptance, rollback and forking."""

from __future__ import annotations

import operator
import os
from typing import Any, Optional, Sequence, Union

from . import _native
from .bitmask import view_bitmask
from .compiler import CompiledGrammar

__all__ = ["GrammarMatcher", "batch_fill_next_token_bitmask"]

_INT32_MIN, _INT32_MAX = -(2 ** 31), 2 ** 31 - 1


def _token_id(value: Any, vocab_size: int) -> int:
    """An int token id (TypeError for other types). Ids beyond int32 are reported here with
    the native message, since they cannot cross into the engine to be rejected there."""
    token = operator.index(value)
    if not _INT32_MIN <= token <= _INT32_MAX:
        raise _native.InvalidArgumentError(f"token id {token} is outside the vocabulary [0, {vocab_size})")
    return token


def _row_index(value: Any, rows: int) -> int:
    if isinstance(value, bool):
        raise TypeError("bitmask index must be an int, got bool")
    index = operator.index(value)
    if not 0 <= index < rows:
        raise ValueError(f"bitmask index {index} is out of range for {rows} rows")
    return index


class GrammarMatcher:
    """Tracks one output against a compiled grammar.

    Args:
        compiled_grammar: the grammar (shared, never modified).
        stop_token_ids: tokens that end generation; defaults to the tokenizer's. A stop id is
            a stop even when its text is ordinary text: allowed (and accepted) only where the
            grammar may end. With none (``[]``, or a tokenizer without EOS) the matcher
            terminates by itself once the output is complete and no token can follow; a
            grammar whose complete outputs can always grow then ends only by length.
        terminate_without_stop_token: end as soon as the grammar is complete, without
            waiting for (or allowing) a stop token.
        override_stop_tokens: alias of ``stop_token_ids`` (xgrammar's spelling).
    """

    def __init__(
        self,
        compiled_grammar: CompiledGrammar,
        *,
        stop_token_ids: Optional[Sequence[int]] = None,
        terminate_without_stop_token: bool = False,
        override_stop_tokens: Optional[Union[int, Sequence[int]]] = None,
    ) -> None:
        if not isinstance(compiled_grammar, CompiledGrammar):
            raise TypeError(f"compiled_grammar must be a CompiledGrammar, got {type(compiled_grammar).__name__}")
        if stop_token_ids is None and override_stop_tokens is not None:
            stop_token_ids = [override_stop_tokens] if isinstance(override_stop_tokens, int) else override_stop_tokens
        self._compiled_grammar = compiled_grammar
        self._handle = _native.GrammarMatcher(
            compiled_grammar._handle,
            None if stop_token_ids is None else [int(t) for t in stop_token_ids],
            terminate_without_stop_token,
        )

    @classmethod
    def _wrap(cls, compiled_grammar: CompiledGrammar, handle: Any) -> "GrammarMatcher":
        matcher = cls.__new__(cls)
        matcher._compiled_grammar = compiled_grammar
        matcher._handle = handle
        return matcher

    @property
    def compiled_grammar(self) -> CompiledGrammar:
        return self._compiled_grammar

    @property
    def stop_token_ids(self) -> list[int]:
        return list(self._handle.stop_token_ids)

    @property
    def vocab_size(self) -> int:
        return self._compiled_grammar.tokenizer_info.vocab_size

    def fill_next_token_bitmask(self, bitmask: Any, index: int = 0) -> bool:
        """Writes the allowed tokens into row ``index`` of ``bitmask`` (numpy or torch CPU int32).

        Returns False iff every token is allowed (the mask need not be applied). The buffer is
        validated in the engine (dtype, shape, strides, device, row and vocabulary width), with
        the errors of :func:`xg2_plugin.bitmask.view_bitmask`.
        """
        return self._handle.fill_next_token_bitmask(bitmask, index)

    def _fill_next_token_bitmask_reference(self, bitmask: Any, index: int = 0) -> bool:
        """The same mask by the uncached reference walk (the oracle of the differential tests)."""
        return self._handle.fill_next_token_bitmask_reference(bitmask, index)

    def accept_token(self, token_id: int) -> bool:
        """Consumes one token; returns False (state unchanged) if the grammar forbids it."""
        return bool(self._handle.accept_token(_token_id(token_id, self.vocab_size)))

    def accept_string(self, text: Union[str, bytes]) -> bool:
        """Consumes raw text as one step (undone by ``rollback(1)``); False if not allowed."""
        data = text.encode("utf-8") if isinstance(text, str) else bytes(text)
        return bool(self._handle.accept_string(data))

    def validate_tokens(self, token_ids: Sequence[int]) -> int:
        """Length of the longest prefix of ``token_ids`` the grammar accepts; state unchanged."""
        return int(self._handle.validate_tokens([_token_id(t, self.vocab_size) for t in token_ids]))

    def rollback(self, num_tokens: int = 1) -> None:
        """Undoes the last ``num_tokens`` accepted steps (any depth since the last reset)."""
        count = operator.index(num_tokens)
        if not 0 <= count <= _INT32_MAX:
            raise _native.InvalidArgumentError(
                f"cannot roll back {count} tokens: only {self.num_accepted_steps} accepted since the last reset")
        self._handle.rollback(count)

    def fork(self) -> "GrammarMatcher":
        """An independent copy of this matcher in its current state."""
        return GrammarMatcher._wrap(self._compiled_grammar, self._handle.fork())

    def reset(self) -> None:
        """Returns to the initial state."""
        self._handle.reset()

    def is_terminated(self) -> bool:
        """True after a stop token was accepted (or, with terminate_without_stop_token, once complete;
        without stop tokens, once complete at a dead end). Check it before sampling: a
        terminated matcher's mask allows only its stop tokens."""
        return bool(self._handle.is_terminated())

    def is_completed(self) -> bool:
        """True when the output so far is a complete sentence of the grammar."""
        return bool(self._handle.is_completed())

    def find_jump_forward_bytes(self) -> bytes:
        """The bytes every valid continuation must start with (empty when there is a choice).

        Never ends inside a character, but begins inside one when the matcher stands inside a
        multi-byte UTF-8 character (a token may end mid-character)."""
        return bytes(self._handle.find_jump_forward_string())

    def find_jump_forward_string(self) -> str:
        """The text every valid continuation must start with (empty when there is a choice).

        Inside a multi-byte character the forced continuation cannot be written as text, and
        the result is empty; ``find_jump_forward_bytes`` gives the exact bytes."""
        forced = self.find_jump_forward_bytes()
        if forced and 0x80 <= forced[0] < 0xC0:  # a continuation byte: mid-character
            return ""
        return forced.decode("utf-8")

    @property
    def num_accepted_steps(self) -> int:
        """Steps (tokens or strings) that ``rollback`` can undo."""
        return int(self._handle.num_accepted_steps)


def batch_fill_next_token_bitmask(
    matchers: Sequence[GrammarMatcher],
    bitmask: Any,
    indices: Optional[Sequence[int]] = None,
    max_threads: Optional[int] = None,
) -> list[bool]:
    """Fills one bitmask row per matcher in parallel, without the GIL.

    Row ``indices[i]`` (default ``i``) receives the mask of ``matchers[i]``. Matchers must be
    distinct objects. Returns, per matcher, whether its mask needs applying. The calling thread
    works alongside up to ``max_threads - 1`` threads of a process-wide native pool (threads
    named ``xg2-fill``, started on first use and kept between batches); default: one thread per
    matcher, at most the CPU count.
    """
    view = view_bitmask(bitmask)
    rows = list(range(len(matchers))) if indices is None else [_row_index(i, view.rows) for i in indices]
    if len(rows) != len(matchers):
        raise ValueError(f"{len(matchers)} matchers but {len(rows)} indices")
    for r in rows:
        if not 0 <= r < view.rows:
            raise ValueError(f"bitmask index {r} is out of range for {view.rows} rows")
    if len(set(id(m) for m in matchers)) != len(matchers):
        raise ValueError("batch fill needs distinct matchers (one per row)")
    for m in matchers:
        needed = (m.vocab_size + 31) // 32
        if view.num_words < needed:
            raise ValueError(f"bitmask rows have {view.num_words} words; the vocabulary needs {needed}")
    threads = max_threads if max_threads is not None else min(len(matchers), os.cpu_count() or 1)
    return list(
        _native.batch_fill_next_token_bitmask(
            [m._handle for m in matchers], view.address, view.row_stride_words, view.num_words, rows, max(1, threads)
        )
    )
