"""Identical concurrent compile requests share the native work, never the outcome.

Every caller gets its own ``CompileFuture`` (or, when it runs the compile itself on its own
thread, an ``InlineCall``: see there). Callers asking for the same grammar while it is
queued or running join one ``SharedCompile``; each caller's timeout and ``cancel()`` resolve
only its own future. The shared native compile runs until the latest deadline of the callers
still waiting (none if one of them has none) and is cancelled when no caller wants it any
more; then its in-flight entry is removed.

Invariants, under the owning compiler's lock:
  * ``in_flight[key] is job`` exactly while ``job`` has callers and has not finished;
  * a future is in ``job.callers`` until one party removes it, and the party that removes it
    (the compile's thread, the deadline watcher, ``cancel()`` or the fork handler) is the one
    that resolves it.
"""

from __future__ import annotations

import heapq
import itertools
import math
import os
import threading
import time
import weakref
from concurrent.futures import Future
from typing import Any, Callable, Optional, Union

from . import _heap_trim, _native


class CompileFuture(Future):
    """One caller's compile: ``cancel()`` also stops a compile that is already running.

    A running compile cannot become "cancelled" in the ``concurrent.futures`` sense, so for it
    ``cancel()`` returns False as usual, but this future then fails with
    ``CompilationCancelledError`` and the native compile stops at its next safe point unless
    another caller still waits for it. ``timeout`` counts from when the compile starts
    running (or from joining one that runs); past it this future fails with
    ``CompilationTimeoutError``.
    """

    def __init__(self, owner: "InFlightCompiles", job: "SharedCompile", timeout: Optional[float],
                 cancel_on_interrupt: bool) -> None:
        super().__init__()
        self._owner = owner
        self._job = job
        self._timeout = timeout
        self._deadline: Optional[float] = None  # time.monotonic(); set once the compile runs
        self._watched = False  # handed to the deadline watcher (InFlightCompiles._retime_locked)
        self._cancel_on_interrupt = cancel_on_interrupt

    def cancel(self) -> bool:
        if not self._owner.leave(self):
            return super().cancel()  # resolved, or being resolved by the party that removed it
        if super().cancel():
            return True
        self.set_exception(_native.CompilationCancelledError("compilation cancelled"))
        return False

    def result(self, timeout: Optional[float] = None) -> Any:
        # A synchronous compile waits here: Ctrl-C (KeyboardInterrupt, delivered to the main
        # thread while it waits) withdraws this caller, which stops a compile no one else wants.
        try:
            return super().result(timeout)
        except KeyboardInterrupt:
            if self._cancel_on_interrupt:
                self.cancel()
            raise

    def _timed_out(self) -> None:
        if self._owner.leave(self):
            self.set_exception(_timeout_error(self._timeout))

    def _fail_in_forked_child(self, error: BaseException) -> None:
        # Only this thread exists in the child: a condition it can take now is free (one held
        # by a thread of the parent stays held, and its future is left as it is).
        if self._condition.acquire(blocking=False):
            self._condition.release()
            self.set_exception(error)


def _timeout_error(timeout: Optional[float]) -> BaseException:
    return _native.CompilationTimeoutError(f"compilation timed out after {timeout} s")


class InlineCall:
    """The caller of a synchronous compile that runs on the caller's own thread: a caller of its
    compile like a ``CompileFuture`` (identical requests join the compile, the deadline watcher
    may time it out), without a ``concurrent.futures.Future`` (a condition, and a lock taken by
    each of its steps) that only this thread reads. It never escapes the synchronous call, so
    no one cancels it; ``result()`` is read once the compile returned.

    Another party can resolve it (the deadline watcher, the fork handler), and, as for a future,
    does so just after removing it from the callers under the lock: ``result()`` waits on
    ``_resolved``, a lock held until the outcome is set, for the moment between the two.
    """

    __slots__ = ("_owner", "_job", "_timeout", "_deadline", "_watched", "_outcome", "_failed", "_resolved",
                 "__weakref__")

    def __init__(self, owner: "InFlightCompiles", job: "SharedCompile", timeout: Optional[float]) -> None:
        self._owner = owner
        self._job = job
        self._timeout = timeout
        self._deadline: Optional[float] = None
        self._watched = False
        self._outcome: Any = None
        self._failed = False
        self._resolved = threading.Lock()
        self._resolved.acquire()

    def set_running_or_notify_cancel(self) -> bool:
        return True  # no one else holds it, so it cannot have been cancelled

    def set_result(self, result: Any) -> None:
        self._outcome = result
        self._resolved.release()

    def set_exception(self, error: BaseException) -> None:
        self._outcome, self._failed = error, True
        self._resolved.release()

    def done(self) -> bool:
        return not self._resolved.locked()

    def result(self) -> Any:
        with self._resolved:
            if self._failed:
                raise self._outcome
            return self._outcome

    def _timed_out(self) -> None:
        if self._owner.leave(self):
            self.set_exception(_timeout_error(self._timeout))

    def _fail_in_forked_child(self, error: BaseException) -> None:
        self.set_exception(error)


# A caller of a shared compile, as the in-flight table sees it.
Caller = Union[CompileFuture, InlineCall]


class SharedCompile:
    """The native compile of one key, and the callers still waiting for it."""

    def __init__(self, key: tuple, build: Callable[[Any], Any]) -> None:
        self.key = key
        self.build = build
        self.token = _native.CancellationToken()
        self.token_has_deadline = False  # set_timeout gave the token a finite deadline
        self.callers: dict[Caller, None] = {}  # insertion-ordered set
        self.started = False
        self.stop_on_sigint = False  # runs on the main thread, stopped by Ctrl-C (run_on_main_thread)

    def renew_token(self) -> None:
        """A fresh token, for running again after the current one stopped the compile."""
        self.token = _native.CancellationToken()
        self.token_has_deadline = False


class InFlightCompiles:
    """The compiles of one compiler that are queued or running, by key.

    ``lock`` is the compiler's lock (it also guards the grammar cache, so a finished compile
    leaves the in-flight table and enters the cache in one step); ``store(key, result)`` is
    called under it.
    """

    def __init__(self, lock: threading.Lock, store: Callable[[tuple, Any], None]) -> None:
        self.lock = lock
        self._store = store
        self._jobs: dict[tuple, SharedCompile] = {}

    def __len__(self) -> int:
        with self.lock:
            return len(self._jobs)

    def join_locked(self, key: tuple, build: Callable[[Any], Any], timeout: Optional[float],
                    cancel_on_interrupt: bool, runs_here: bool = False,
                    ) -> tuple[Caller, Optional[SharedCompile]]:
        """A new caller of ``key``: its future, and the job to run when there was none.
        ``runs_here``: a fresh job will be run by the caller's own thread, so its caller is an
        ``InlineCall`` (a caller that joins a running compile waits on a ``CompileFuture``)."""
        job = self._jobs.get(key)
        fresh = job is None
        if fresh:
            job = SharedCompile(key, build)
            self._jobs[key] = job
        future: Caller
        if fresh and runs_here:
            future = InlineCall(self, job, timeout)
        else:
            future = CompileFuture(self, job, timeout, cancel_on_interrupt)
        job.callers[future] = None
        if job.started:
            self._start_caller_locked(future, time.monotonic())
            self._retime_locked(job)
        return future, (job if fresh else None)

    def leave(self, future: Caller) -> bool:
        """Withdraws ``future`` from its compile; False when it is no longer a caller."""
        with self.lock:
            job = future._job
            if future not in job.callers:
                return False
            del job.callers[future]
            if job.callers:
                self._retime_locked(job)
            else:
                job.token.cancel()
                self._forget_locked(job)
            return True

    def run(self, job: SharedCompile) -> None:
        """Runs the shared compile and resolves its callers (on a worker or the caller's thread)."""
        with self.lock:
            if not job.callers:
                return  # every caller left while it was queued
            job.started = True
            now = time.monotonic()
            for future in job.callers:
                self._start_caller_locked(future, now)
            self._retime_locked(job)
        began = time.monotonic()
        try:
            self._run_started(job)
        finally:
            _heap_trim.after_compile(time.monotonic() - began)

    def run_on_main_thread(self, job: SharedCompile, future: Caller,
                           submit: Callable[..., Any]) -> None:
        """``run(job)`` on Python's main thread, for ``future``'s synchronous caller, stopped by
        Ctrl-C: while the native compile runs, SIGINT sets a flag its token reads at each safe
        point (``_native._sigint_watch_begin``) instead of reaching Python, which could not act
        on it before the compile returns. On SIGINT this caller withdraws (the compile goes on
        with ``submit`` for the other callers, if any) and KeyboardInterrupt is raised here."""
        if not _native._sigint_watch_begin():
            self.run(job)
            return
        job.stop_on_sigint = True
        try:
            self.run(job)
        finally:
            job.stop_on_sigint = False
            interrupted = _native._sigint_watch_end()
        if interrupted:
            if self._withdraw_interrupted(job, future):
                submit(self._run_again, job)
            raise KeyboardInterrupt

    def _withdraw_interrupted(self, job: SharedCompile, future: Caller) -> bool:
        """Takes ``future`` out of its compile after Ctrl-C; True when the compile, stopped by
        the signal, must run again for callers that joined meanwhile."""
        with self.lock:
            rerun = False
            if future in job.callers:
                del job.callers[future]
                if job.callers:
                    # The token saw the signal flag: the rest of the compile needs a fresh one.
                    job.renew_token()
                    self._retime_locked(job)
                    rerun = True
                else:
                    job.token.cancel()
                    self._forget_locked(job)
        if not future.done():
            future.set_exception(_native.CompilationCancelledError("compilation interrupted (KeyboardInterrupt)"))
        return rerun

    def _run_again(self, job: SharedCompile) -> None:
        began = time.monotonic()
        try:
            self._run_started(job)
        finally:
            _heap_trim.after_compile(time.monotonic() - began)

    def _run_started(self, job: SharedCompile) -> None:
        while True:
            stop_on_sigint = job.stop_on_sigint
            if stop_on_sigint:
                job.token._cancel_on_sigint()
            try:
                result = job.build(job.token)
            except _native.CompilationCancelledError:
                if stop_on_sigint and job.token.interrupted:
                    return  # Ctrl-C: run_on_main_thread withdraws the caller
                if self._after_stop(job):
                    continue
                return
            except BaseException as error:  # every caller gets the error
                for future in self._finish(job, None):
                    future.set_exception(error)
                return
            for future in self._finish(job, result):
                future.set_result(result)
            return

    def _after_stop(self, job: SharedCompile) -> bool:
        """The token stopped the compile: callers past their deadline get their timeout; True
        when callers remain (they joined with a later or no deadline after the compile read
        the clock), which then run again with a fresh token."""
        with self.lock:
            now = time.monotonic()
            expired = [f for f in job.callers if f._deadline is not None and f._deadline <= now]
            for future in expired:
                del job.callers[future]
            retry = bool(job.callers)
            if retry:
                job.renew_token()
                self._retime_locked(job)
            else:
                self._forget_locked(job)
        for future in expired:
            future.set_exception(_timeout_error(future._timeout))
        return retry

    def _finish(self, job: SharedCompile, result: Any) -> list[Caller]:
        with self.lock:
            callers = list(job.callers)
            job.callers.clear()
            self._forget_locked(job)
            if result is not None and callers:  # a result no one waits for is not kept
                self._store(job.key, result)
        return callers

    def _forget_locked(self, job: SharedCompile) -> None:
        if self._jobs.get(job.key) is job:
            del self._jobs[job.key]

    def _start_caller_locked(self, future: Caller, now: float) -> None:
        # Under the lock, so a concurrent cancel() sees either PENDING before this or RUNNING.
        future.set_running_or_notify_cancel()
        if future._timeout is not None:
            future._deadline = now + future._timeout

    @staticmethod
    def _retime_locked(job: SharedCompile) -> None:
        """The native deadline: the latest of the callers', or none if one has none. A caller
        whose deadline is earlier is handed to the deadline watcher (the token would stop the
        compile too late for it); a compile's only caller never is, which spares every plain
        compile a heap entry and a wake-up of the watcher's thread."""
        if not job.started or not job.callers:
            return
        latest = -math.inf
        for future in job.callers:
            if future._deadline is None:
                latest = math.inf
                break
            latest = max(latest, future._deadline)
        if latest != math.inf:
            job.token.set_timeout(latest - time.monotonic())
            job.token_has_deadline = True
        elif job.token_has_deadline:  # a fresh token has none: most compiles skip this call
            job.token.set_timeout(math.inf)
            job.token_has_deadline = False
        if len(job.callers) > 1:
            for future in job.callers:
                if future._deadline is not None and future._deadline < latest and not future._watched:
                    future._watched = True
                    _WATCHER.arm(future._deadline, future)

    def reset_after_fork(self, lock: threading.Lock) -> None:
        """In a child of fork(): the compiles' threads do not exist here, so their callers fail
        (a caller waiting in the child would wait forever) and the table starts empty."""
        self.lock = lock
        jobs, self._jobs = self._jobs, {}
        for job in jobs.values():
            for future in list(job.callers):
                future._fail_in_forked_child(_native.CompilationCancelledError(
                    "compilation was running in the parent when the process forked; submit it again"))
            job.callers.clear()


class _DeadlineWatcher:
    """One daemon thread that times out callers whose deadline is earlier than the shared
    compile's (the native token stops the compile only at the latest deadline). Holds the
    futures weakly, so a finished request's entry keeps nothing alive."""

    def __init__(self) -> None:
        self._reset()

    def _reset(self) -> None:
        self._cond = threading.Condition(threading.Lock())
        self._heap: list[tuple[float, int, weakref.ref]] = []
        self._seq = itertools.count()
        self._thread: Optional[threading.Thread] = None

    def arm(self, deadline: float, future: Caller) -> None:
        with self._cond:
            if len(self._heap) >= 1024:  # drop entries of futures that are done or gone
                self._heap = [e for e in self._heap if (f := e[2]()) is not None and not f.done()]
                heapq.heapify(self._heap)
            heapq.heappush(self._heap, (deadline, next(self._seq), weakref.ref(future)))
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, name="xg2-deadlines", daemon=True)
                self._thread.start()
            elif self._heap[0][0] == deadline:
                self._cond.notify()  # the thread sleeps until an earlier entry's deadline otherwise

    def _loop(self) -> None:
        while True:
            with self._cond:
                while not self._heap or self._heap[0][0] > time.monotonic():
                    self._cond.wait(None if not self._heap else self._heap[0][0] - time.monotonic())
                _, _, ref = heapq.heappop(self._heap)
            future = ref()
            if future is not None:
                future._timed_out()


_WATCHER = _DeadlineWatcher()
os.register_at_fork(after_in_child=_WATCHER._reset)
