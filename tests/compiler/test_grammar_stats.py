"""xg2_plugin.stats: the counters the serving adapters record and the periodic log line."""

from __future__ import annotations

import logging

import pytest

import xg2_plugin as xg
from xg2_plugin.stats import GrammarStatistics


def byte_compiler() -> xg.GrammarCompiler:
    return xg.GrammarCompiler(xg.TokenizerInfo([bytes([b]) for b in range(256)], xg.VocabType.RAW, stop_token_ids=[]))


def test_snapshot_adds_up_records_and_watched_compilers() -> None:
    stats = GrammarStatistics()
    compiler = byte_compiler()
    stats.watch_compiler(compiler)
    for _ in range(3):
        compiler.compile_regex("[a-z]+")
    stats.record_compile(0.5, ok=True)
    stats.record_compile(0.25, ok=False)
    stats.record_request()
    stats.record_fills(4, 0.002)
    snapshot = stats.snapshot()
    assert (snapshot["cache_hits"], snapshot["cache_misses"]) == (2, 1)
    assert snapshot["requests"] == 2 and snapshot["compile_calls"] == 2 and snapshot["compile_errors"] == 1
    assert snapshot["compile_seconds_max"] == 0.5 and snapshot["compile_seconds_mean"] == pytest.approx(0.375)
    assert snapshot["mask_fills"] == 4 and snapshot["mask_seconds_per_request"] == pytest.approx(0.001)
    stats.reset()
    assert stats.snapshot()["mask_fills"] == 0 and stats.snapshot()["cache_hits"] == 2


def test_log_line_at_most_once_per_interval_and_only_after_activity(caplog: pytest.LogCaptureFixture) -> None:
    stats = GrammarStatistics()
    logger = logging.getLogger("xg2_test_stats")
    with caplog.at_level("INFO", logger="xg2_test_stats"):
        stats.maybe_log(logger, None)  # no interval: never
        stats.record_fills(1, 0.001)
        stats.maybe_log(logger, 1e9)
        stats.record_fills(1, 0.001)
        stats.maybe_log(logger, 1e9)  # inside the interval
    assert [r.getMessage().split(",")[0] for r in caplog.records] == ["xg2 grammar stats: 0 requests"]
    caplog.clear()
    idle = GrammarStatistics()
    with caplog.at_level("INFO", logger="xg2_test_stats"):
        idle.maybe_log(logger, 1e-9)  # nothing happened yet: no line
    assert caplog.records == []
