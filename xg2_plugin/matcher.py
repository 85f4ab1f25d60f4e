"""Per-request matching: token masks, token acceptance, rollback and forking."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Set as AbstractSet
from typing import Any, Optional, Sequence, Union

from . import _native
from .bitmask import _int_argument, view_bitmask
from .compiler import CompiledGrammar

__all__ = ["GrammarMatcher", "batch_fill_next_token_bitmask"]

_INT32_MIN, _INT32_MAX = -(2 ** 31), 2 ** 31 - 1


def _token_id(value: Any, vocab_size: int, name: str = "token_id") -> int:
    """An int token id. Ids beyond int32 are reported here with the native message, since
    they cannot cross into the engine to be rejected there."""
    token = value if type(value) is int else _int_argument(value, name)
    if not _INT32_MIN <= token <= _INT32_MAX:
        raise _native.InvalidArgumentError(f"token id {token} is outside the vocabulary [0, {vocab_size})")
    return token


def _token_id_list(values: Any, vocab_size: int, name: str) -> list[int]:
    """An ordered collection of token ids as a list. Unordered or textual collections (a
    dict, a set, a str) are refused: iterating them would give keys, arbitrary order or
    characters."""
    if isinstance(values, (str, bytes, bytearray, Mapping, AbstractSet)) or not isinstance(values, Iterable):
        raise TypeError(f"{name} must be a sequence of ints, got {type(values).__name__}")
    return [_token_id(t, vocab_size, f"{name}[{i}]") for i, t in enumerate(values)]


def _stop_token_list(values: Any, vocab_size: int, name: str) -> Optional[list[int]]:
    """``stop_token_ids`` / ``override_stop_tokens``: None, one int, or a sequence of ints
    (the engine checks that each is inside the vocabulary)."""
    if values is None:
        return None
    if isinstance(values, bool):
        raise TypeError(f"{name} must be an int or a sequence of ints, got bool")
    return _token_id_list([values] if type(values) is int else values, vocab_size, name)


_new_default_matcher = _native._new_default_matcher


def _new_matcher(compiled_grammar: CompiledGrammar, stop_token_ids: Any, terminate_without_stop_token: Any,
                 override_stop_tokens: Any) -> Any:
    """The native matcher for GrammarMatcher's arguments other than the defaults."""
    if not isinstance(terminate_without_stop_token, bool):
        raise TypeError(
            f"terminate_without_stop_token must be a bool, got {type(terminate_without_stop_token).__name__}")
    stops = None
    if stop_token_ids is not None or override_stop_tokens is not None:
        vocab_size = compiled_grammar.tokenizer_info.vocab_size
        stops = _stop_token_list(stop_token_ids, vocab_size, "stop_token_ids")
        if stops is None:
            stops = _stop_token_list(override_stop_tokens, vocab_size, "override_stop_tokens")
    return _native.GrammarMatcher(compiled_grammar._handle, stops, terminate_without_stop_token)


def _warn_max_rollback_tokens() -> None:
    import warnings

    warnings.warn("max_rollback_tokens is deprecated and has no effect: rollback reaches any step since "
                  "the last reset", DeprecationWarning, stacklevel=3)


def _row_index(value: Any, rows: int, name: str = "bitmask index") -> int:
    index = _int_argument(value, name)
    if not 0 <= index < rows:
        raise ValueError(f"{name} {index} is out of range for {rows} rows")
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
        max_rollback_tokens: accepted for xgrammar's signature, which deprecates it: rollback
            reaches any step since the last reset, so only ``-1`` (unlimited) has a meaning;
            another value warns with ``DeprecationWarning`` and changes nothing.
    """

    def __init__(
        self,
        compiled_grammar: CompiledGrammar,
        *,
        stop_token_ids: Optional[Sequence[int]] = None,
        terminate_without_stop_token: bool = False,
        override_stop_tokens: Optional[Union[int, Sequence[int]]] = None,
        max_rollback_tokens: int = -1,
    ) -> None:
        # Every request builds a matcher just before its first mask, mostly with the defaults:
        # that call does only the checks it needs (no vocabulary size, no stop-token lists) and
        # one native call (_new_default_matcher: no pybind11 constructor dispatch).
        if not isinstance(compiled_grammar, CompiledGrammar):
            raise TypeError(f"compiled_grammar must be a CompiledGrammar, got {type(compiled_grammar).__name__}")
        if max_rollback_tokens != -1:
            _warn_max_rollback_tokens()
        if stop_token_ids is None and override_stop_tokens is None and terminate_without_stop_token is False:
            handle = _new_default_matcher(compiled_grammar._handle)
        else:
            handle = _new_matcher(compiled_grammar, stop_token_ids, terminate_without_stop_token, override_stop_tokens)
        self._compiled_grammar = compiled_grammar
        self._handle = handle
        self._bind_fill()

    @classmethod
    def _wrap(cls, compiled_grammar: CompiledGrammar, handle: Any) -> "GrammarMatcher":
        matcher = cls.__new__(cls)
        matcher._compiled_grammar = compiled_grammar
        matcher._handle = handle
        matcher._bind_fill()
        return matcher

    def _bind_fill(self) -> None:
        # The native fill and accept validate their arguments themselves (see
        # fill_next_token_bitmask, accept_token), so the instance calls them directly, one
        # Python frame less per token; a subclass that overrides a method keeps its override.
        handle = self._handle
        if type(self) is GrammarMatcher:
            self.fill_next_token_bitmask = handle.fill_next_token_bitmask  # type: ignore[method-assign]
            self.accept_token = handle.accept_token  # type: ignore[method-assign]
            return
        if type(self).fill_next_token_bitmask is GrammarMatcher.fill_next_token_bitmask:
            self.fill_next_token_bitmask = handle.fill_next_token_bitmask  # type: ignore[method-assign]
        if type(self).accept_token is GrammarMatcher.accept_token:
            self.accept_token = handle.accept_token  # type: ignore[method-assign]

    @property
    def compiled_grammar(self) -> CompiledGrammar:
        return self._compiled_grammar

    @property
    def stop_token_ids(self) -> list[int]:
        return self._handle.stop_token_ids  # a new list per read, converted once

    @property
    def vocab_size(self) -> int:
        return self._compiled_grammar.tokenizer_info.vocab_size

    @property
    def max_rollback_tokens(self) -> int:
        """Always -1: rollback reaches any step since the last reset (xgrammar's deprecated property)."""
        return -1

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
        """Consumes one token; returns False (state unchanged) if the grammar forbids it.

        The id is checked in the engine, with the errors of the other token-id arguments: a
        ``TypeError`` for a bool or a non-integer, ``InvalidArgumentError`` outside the vocabulary.
        """
        return self._handle.accept_token(token_id)

    def accept_string(self, text: Union[str, bytes]) -> bool:
        """Consumes raw text as one step (undone by ``rollback(1)``); False if not allowed."""
        if isinstance(text, str):
            data = text.encode("utf-8")
        elif isinstance(text, (bytes, bytearray, memoryview)):
            data = bytes(text)
        else:  # bytes(5) would be five NUL bytes, bytes([123, 34]) the text '{"'
            raise TypeError(f"text must be str or bytes, got {type(text).__name__}")
        return bool(self._handle.accept_string(data))

    def validate_tokens(self, token_ids: Sequence[int]) -> int:
        """Length of the longest prefix of ``token_ids`` the grammar accepts; state unchanged."""
        return int(self._handle.validate_tokens(_token_id_list(token_ids, self.vocab_size, "token_ids")))

    def rollback(self, num_tokens: int = 1) -> None:
        """Undoes the last ``num_tokens`` accepted steps (any depth since the last reset)."""
        count = _int_argument(num_tokens, "num_tokens")
        if not 0 <= count <= _INT32_MAX:
            raise _native.InvalidArgumentError(
                f"cannot roll back {count} tokens: only {self.num_accepted_steps} accepted since the last reset")
        self._handle.rollback(count)

    def traverse_draft_tree(
        self,
        retrieve_next_token: Any,
        retrieve_next_sibling: Any,
        draft_tokens: Any,
        bitmask: Any,
        time_threshold: float = -1.0,
        *,
        clear_skipped_rows: bool = True,
    ) -> bool:
        """Fills one mask row per node of a speculative draft tree, in one native call.

        Node 0 is the last verified token (already accepted); ``retrieve_next_token[i]`` /
        ``retrieve_next_sibling[i]`` are node i's first child / next sibling (-1: none) and
        ``draft_tokens[i]`` its token (1-D int64 CPU tensors or numpy arrays). Row i of
        ``bitmask`` (int32, one row per node) receives the mask after the tokens on the path
        from node 0 to node i; a node whose token its parent's mask forbids, or after which
        the matcher terminates, gets an all-zero row (as in xgrammar; with
        ``clear_skipped_rows=False`` it keeps its row, as SGLang's own traversal does) and its
        subtree is skipped (those rows stay as they were). The matcher ends in the state it
        started in. Returns False if ``time_threshold`` seconds (> 0) ran out first. Invalid
        trees are a ``ValueError``.
        """
        from ._draft_tree import traverse_draft_tree

        return traverse_draft_tree(
            self._handle, retrieve_next_token, retrieve_next_sibling, draft_tokens, bitmask, time_threshold,
            clear_skipped_rows)

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
    if isinstance(matchers, (str, bytes, Mapping, AbstractSet)) or not isinstance(matchers, Iterable):
        raise TypeError(f"matchers must be a sequence of GrammarMatcher, got {type(matchers).__name__}")
    matchers = list(matchers)
    view = view_bitmask(bitmask)
    if indices is None:
        rows = list(range(len(matchers)))
    elif isinstance(indices, (str, bytes, Mapping, AbstractSet)) or not isinstance(indices, Iterable):
        raise TypeError(f"indices must be a sequence of ints, got {type(indices).__name__}")
    else:
        rows = [_row_index(r, view.rows, f"indices[{i}]") for i, r in enumerate(indices)]
    if len(rows) != len(matchers):
        raise ValueError(f"{len(matchers)} matchers but {len(rows)} indices")
    for r in rows:
        if not 0 <= r < view.rows:
            raise ValueError(f"bitmask index {r} is out of range for {view.rows} rows")
    if len(set(rows)) != len(rows):
        raise ValueError(f"indices must be distinct (each row is written by one matcher), got {rows}")
    for i, m in enumerate(matchers):
        if not isinstance(m, GrammarMatcher):
            raise TypeError(f"matchers[{i}] must be a GrammarMatcher, got {type(m).__name__}")
        needed = (m.vocab_size + 31) // 32
        if view.num_words < needed:
            raise ValueError(f"bitmask rows have {view.num_words} words; the vocabulary needs {needed}")
    if len(set(id(m) for m in matchers)) != len(matchers):
        raise ValueError("matchers must be distinct objects (one per row)")
    if max_threads is None:
        threads = min(len(matchers), os.cpu_count() or 1)
    else:
        threads = _int_argument(max_threads, "max_threads")
        if threads < 1:
            raise ValueError(f"max_threads must be >= 1, got {threads}")
    threads = max(1, min(threads, len(matchers)))  # more threads than rows would idle
    return list(
        _native.batch_fill_next_token_bitmask(
            [m._handle for m in matchers], view.address, view.row_stride_words, view.num_words, rows, threads
        )
    )
