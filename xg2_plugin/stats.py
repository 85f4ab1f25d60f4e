"""Grammar statistics of this process, for operators: compiles, cache use, mask fills.

The serving adapters record into :data:`GRAMMAR_STATS` (each request's compile time, each
mask fill's time) and register their compilers, whose cache hit and miss counters the
snapshot adds up. Read it with :func:`grammar_stats`; an adapter also writes it as one log
line at most every ``XG2_STATS_LOG_INTERVAL_S`` seconds while grammars are in use.
Per request, the adapters' grammar objects keep their own ``mask_fills`` / ``mask_seconds``.
"""

from __future__ import annotations

import logging
import threading
import time
import weakref
from typing import Any, Optional

__all__ = ["GRAMMAR_STATS", "GrammarStatistics", "grammar_stats"]


class GrammarStatistics:
    """Thread-safe counters of grammar work (compile threads and mask-fill threads record).

    Counted: ``requests`` (grammars handed to requests), ``compile_calls`` with their total and
    largest wall time (cache hits included, waiting for a shared in-flight compile included),
    ``compile_errors``, ``mask_fills`` (rows) with ``mask_seconds``; and from the registered
    compilers, ``cache_hits`` / ``cache_misses`` (compiles served from the compiled-grammar
    cache or an identical in-flight compile / compiles run).
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._compilers: "weakref.WeakSet[Any]" = weakref.WeakSet()
        self._next_log = 0.0
        self._logged_activity = 0  # compiles plus fills at the last line (no line before any)
        self.reset()

    def reset(self) -> None:
        """Zeroes the counters (registered compilers keep their own)."""
        with self._lock:
            self._requests = 0
            self._compile_calls = 0
            self._compile_errors = 0
            self._compile_seconds = 0.0
            self._compile_seconds_max = 0.0
            self._mask_fills = 0
            self._mask_seconds = 0.0

    def watch_compiler(self, compiler: Any) -> None:
        """Adds ``compiler``'s cache hits and misses to the snapshot (held weakly)."""
        with self._lock:
            self._compilers.add(compiler)

    def record_compile(self, seconds: float, ok: bool) -> None:
        """One compile call of a request took ``seconds``; ``ok``: it gave a grammar."""
        with self._lock:
            self._compile_calls += 1
            self._compile_seconds += seconds
            self._compile_seconds_max = max(self._compile_seconds_max, seconds)
            if ok:
                self._requests += 1
            else:
                self._compile_errors += 1

    def record_request(self) -> None:
        """A request got a grammar without a compile call (an engine-side cache copy)."""
        with self._lock:
            self._requests += 1

    def record_fills(self, rows: int, seconds: float) -> None:
        """``rows`` mask rows were filled in ``seconds``."""
        with self._lock:
            self._mask_fills += rows
            self._mask_seconds += seconds

    def snapshot(self) -> dict[str, Any]:
        """The counters now, with means (seconds) where they have a count."""
        with self._lock:
            compilers = list(self._compilers)
            stats: dict[str, Any] = {
                "requests": self._requests,
                "compile_calls": self._compile_calls,
                "compile_errors": self._compile_errors,
                "compile_seconds_total": self._compile_seconds,
                "compile_seconds_max": self._compile_seconds_max,
                "mask_fills": self._mask_fills,
                "mask_seconds_total": self._mask_seconds,
            }
        hits = misses = 0
        for compiler in compilers:
            cache = compiler.cache_stats
            hits += cache.get("hits", 0)
            misses += cache.get("misses", 0)
        stats["cache_hits"], stats["cache_misses"] = hits, misses
        stats["compile_seconds_mean"] = stats["compile_seconds_total"] / max(1, stats["compile_calls"])
        stats["mask_seconds_mean"] = stats["mask_seconds_total"] / max(1, stats["mask_fills"])
        stats["mask_seconds_per_request"] = stats["mask_seconds_total"] / max(1, stats["requests"])
        return stats

    def maybe_log(self, logger: logging.Logger, interval_s: Optional[float]) -> None:
        """Logs the snapshot as one INFO line if ``interval_s`` passed since the last one and
        grammars were used since then (None: never)."""
        if interval_s is None:
            return
        now = time.monotonic()
        if now < self._next_log:
            return
        with self._lock:
            if now < self._next_log:
                return
            self._next_log = now + interval_s
            activity = self._compile_calls + self._mask_fills
            if activity == self._logged_activity:
                return
            self._logged_activity = activity
        stats = self.snapshot()
        logger.info(
            "xg2 grammar stats: %d requests, %d compiles (%d errors, mean %.1f ms, max %.1f ms), cache "
            "%d hits / %d misses, %d mask fills (mean %.3f ms, %.1f ms per request)",
            stats["requests"], stats["compile_calls"], stats["compile_errors"],
            stats["compile_seconds_mean"] * 1e3, stats["compile_seconds_max"] * 1e3, stats["cache_hits"],
            stats["cache_misses"], stats["mask_fills"], stats["mask_seconds_mean"] * 1e3,
            stats["mask_seconds_per_request"] * 1e3,
        )


GRAMMAR_STATS = GrammarStatistics()
"""The process's statistics, recorded by the vLLM and SGLang adapters."""


def grammar_stats() -> dict[str, Any]:
    """A snapshot of :data:`GRAMMAR_STATS` (see :class:`GrammarStatistics` for the fields)."""
    return GRAMMAR_STATS.snapshot()
