"""Micro-benchmarks of our engine's hot paths; numbers only, nothing is asserted about time.

    bench/.venv/bin/pytest bench/micro --benchmark-only
    bench/.venv/bin/pytest bench/micro --benchmark-only --benchmark-compare   # against a saved run
"""

from __future__ import annotations

from typing import Any, Callable

import xg2_plugin as xg2
from conftest import DENSE_PREFIX, SPARSE_PREFIX, compile_small


def test_fill_dense_mask(benchmark: Any, matcher_at: Callable[[str], Any], bitmask: Any) -> None:
    """Mask inside a JSON string, where nearly the whole vocabulary is allowed."""
    matcher = matcher_at(DENSE_PREFIX)
    benchmark(matcher.fill_next_token_bitmask, bitmask)


def test_fill_sparse_mask(benchmark: Any, matcher_at: Callable[[str], Any], bitmask: Any) -> None:
    """Mask between JSON tokens, where only a few tokens are allowed."""
    matcher = matcher_at(SPARSE_PREFIX)
    benchmark(matcher.fill_next_token_bitmask, bitmask)


def test_accept_token(benchmark: Any, matcher_at: Callable[[str], Any], tokenizer: Any) -> None:
    """One accept_token in the middle of an object (each round starts from a fresh fork)."""
    base = matcher_at(SPARSE_PREFIX)
    token = tokenizer.encode(", ", add_special_tokens=False).ids[0]

    def setup() -> tuple[tuple[Any, int], dict]:
        return (base.fork(), token), {}

    benchmark.pedantic(lambda m, t: m.accept_token(t), setup=setup, rounds=2000, iterations=1)


def test_rollback(benchmark: Any, matcher_at: Callable[[str], Any], tokenizer: Any) -> None:
    """rollback(1) right after an accepted token."""
    base = matcher_at(SPARSE_PREFIX)
    token = tokenizer.encode(", ", add_special_tokens=False).ids[0]

    def setup() -> tuple[tuple[Any], dict]:
        matcher = base.fork()
        matcher.accept_token(token)
        return (matcher,), {}

    benchmark.pedantic(lambda m: m.rollback(1), setup=setup, rounds=2000, iterations=1)


def test_fork(benchmark: Any, matcher_at: Callable[[str], Any]) -> None:
    """Forking a matcher in the middle of an object (e.g. for beam search or speculation)."""
    matcher = matcher_at(SPARSE_PREFIX)
    benchmark(matcher.fork)


def test_compile_small_schema(benchmark: Any, info: Any) -> None:
    """Compiling a five-property schema, cold (compiled-grammar cache off)."""
    compiler = xg2.GrammarCompiler(info, cache_enabled=False)
    benchmark(compile_small, compiler)
