"""Each compile request is a caller of the native grammar cache, with a token of its own.

The cache and the sharing of identical compiles in flight are native
(``native/compiler/compile_cache.h``, bound as ``_native.GrammarCache``): the first caller of a
key runs the compile under its own token, the callers arriving meanwhile wait for it, each
under its own token. A caller's timeout, ``cancel()`` or Ctrl-C therefore resolves only its own
request: when the caller running the compile stops, a waiting caller takes the compile over.
This module holds what stays in Python: the futures of the asynchronous API and the runs that
resolve them, and the synchronous call on the main thread that Ctrl-C stops. ``cache`` is the
compiler's ``_native.CachedCompiler``, whose ``get_or_compile`` charges what ``build`` returns. A
synchronous compile without the disk cache runs the same steps in one native call instead
(``CachedCompiler.compile``; ``GrammarCompiler._sync_route`` decides).
"""

from __future__ import annotations

from concurrent.futures import Future
from typing import Any, Callable, Optional

from . import _native


def timeout_error(timeout: Optional[float]) -> BaseException:
    return _native.CompilationTimeoutError(f"compilation timed out after {timeout} s")


class CompileFuture(Future):
    """One caller's compile: ``cancel()`` also stops a compile that is already running.

    A running compile cannot become "cancelled" in the ``concurrent.futures`` sense, so for it
    ``cancel()`` returns False as usual, but this future then fails with
    ``CompilationCancelledError`` (this caller's token stops its wait, or its compile at the next
    safe point; another caller of the same grammar carries on). ``timeout`` counts from when
    this caller starts running; past it this future fails with ``CompilationTimeoutError``.
    """

    def __init__(self, timeout: Optional[float], cancel_on_interrupt: bool) -> None:
        super().__init__()
        self.token = _native.CancellationToken()
        self.timeout = timeout
        self._cancel_on_interrupt = cancel_on_interrupt

    def cancel(self) -> bool:
        if super().cancel():
            return True  # still queued
        if not self.done():
            self.token.cancel()
        return False

    def result(self, timeout: Optional[float] = None) -> Any:
        # A synchronous compile handed to a helper thread waits here: Ctrl-C (KeyboardInterrupt,
        # delivered to the main thread while it waits) withdraws this caller.
        try:
            return super().result(timeout)
        except KeyboardInterrupt:
            if self._cancel_on_interrupt:
                self.cancel()
            raise

    def fail_in_forked_child(self) -> None:
        """In a child of fork() the thread that would resolve this future does not exist. Only
        this thread exists there: a condition it can take now is free (one held by a thread of
        the parent stays held, and its future is left as it is)."""
        if self.done() or not self._condition.acquire(blocking=False):
            return
        self._condition.release()
        try:
            self.set_exception(_native.CompilationCancelledError(
                "compilation was running in the parent when the process forked; submit it again"))
        except Exception:  # noqa: BLE001 - resolved meanwhile (InvalidStateError)
            pass


def run(cache: Any, key: str, build: Callable[[Any], Any], future: CompileFuture) -> None:
    """Resolves ``future`` with the grammar of ``key`` (on an executor's thread)."""
    if not future.set_running_or_notify_cancel():
        return  # cancelled while queued
    if future.timeout is not None:
        future.token.set_timeout(future.timeout)
    try:
        grammar = cache.get_or_compile(key, build, future.token)
    except _native.CompilationTimeoutError:
        future.set_exception(timeout_error(future.timeout))
    except BaseException as error:  # noqa: BLE001 - the caller's future carries it
        future.set_exception(error)
    else:
        future.set_result(grammar)


def call(cache: Any, key: str, build: Callable[[Any], Any], timeout: Optional[float]) -> Any:
    """The grammar of ``key`` for a synchronous caller on this thread."""
    token = None
    if timeout is not None:
        token = _native.CancellationToken()
        token.set_timeout(timeout)
    try:
        return cache.get_or_compile(key, build, token)
    except _native.CompilationTimeoutError:
        raise timeout_error(timeout) from None


def call_on_main_thread(cache: Any, key: str, build: Callable[[Any], Any], timeout: Optional[float]) -> Any:
    """``call`` on Python's main thread, stopped by Ctrl-C: while the native code runs, SIGINT
    sets a flag this caller's token reads at each safe point (``_native._sigint_watch_begin``)
    instead of reaching Python, which could not act on it before the call returns. On SIGINT
    this caller withdraws (a caller waiting for the same grammar compiles it instead) and
    KeyboardInterrupt is raised here."""
    if not _native._sigint_watch_begin():
        return call(cache, key, build, timeout)
    token = _native.CancellationToken()
    token._cancel_on_sigint()
    if timeout is not None:
        token.set_timeout(timeout)
    # A SIGINT during the watch raises KeyboardInterrupt whatever the call's outcome (a
    # grammar that completed meanwhile stays cached).
    try:
        grammar = cache.get_or_compile(key, build, token)
    except BaseException as error:
        if _native._sigint_watch_end():
            raise KeyboardInterrupt from None
        if isinstance(error, _native.CompilationTimeoutError):
            raise timeout_error(timeout) from None
        raise
    if _native._sigint_watch_end():
        raise KeyboardInterrupt
    return grammar
