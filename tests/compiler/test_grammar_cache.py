"""The compiled-grammar cache and the sharing of compiles in flight (native/compiler/compile_cache.h)
through the public GrammarCompiler: counts, identity of a shared grammar, errors never cached."""

from __future__ import annotations

import threading

import pytest

import xg2_plugin as xg
from xg2_test_support import unrolled_compiler

TOKENIZER = "gpt2"
# Compiles for a few hundred milliseconds (unrolled: compression off), so concurrent callers
# started together join it.
SLOW = "root ::= [a-z]{0,300000}"


def _compiler(**kwargs) -> xg.GrammarCompiler:
    return unrolled_compiler(TOKENIZER, **kwargs)


def test_concurrent_callers_share_one_compile_and_one_grammar() -> None:
    compiler = _compiler()
    start = threading.Barrier(4)
    grammars: list = [None] * 4

    def compile_slow(slot: int) -> None:
        start.wait()
        grammars[slot] = compiler.compile_grammar(SLOW)

    threads = [threading.Thread(target=compile_slow, args=(i,)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert all(grammar is grammars[0] for grammar in grammars)
    stats = compiler.cache_stats
    assert (stats["misses"], stats["hits"], stats["entries"]) == (1, 3, 1)
    assert compiler.compile_grammar_async(SLOW).result() is grammars[0]
    assert compiler.cache_stats["hits"] == 4


def test_errors_are_not_cached() -> None:
    compiler = _compiler()
    for attempt in range(2):
        with pytest.raises(xg.GrammarSyntaxError):
            compiler.compile_grammar("root ::= (")
        with pytest.raises(xg.GrammarSyntaxError):
            compiler.compile_grammar_async("root ::= (").result()
    stats = compiler.cache_stats
    assert stats["entries"] == 0 and stats["bytes"] == 0 and stats["misses"] == 4
    assert compiler._grammar_cache.in_flight == 0


def test_a_timed_out_compile_leaves_no_entry_and_compiles_again() -> None:
    compiler = _compiler()
    with pytest.raises(xg.CompilationTimeoutError, match="timed out after 0.01 s"):
        compiler.compile_grammar(SLOW, timeout=0.01)
    assert compiler.cache_stats["entries"] == 0 and compiler._grammar_cache.in_flight == 0
    assert xg.GrammarMatcher(compiler.compile_grammar(SLOW)).accept_string("abc")
    assert compiler.cache_stats["entries"] == 1


def test_cache_limit_and_clear() -> None:
    compiler = _compiler(cache_limit_bytes=-1)
    grammars = [compiler.compile_grammar(f'root ::= "g{i}"') for i in range(3)]
    stats = compiler.cache_stats
    assert stats["entries"] == 3 and stats["limit_bytes"] == -1
    assert stats["bytes"] == sum(g._handle.built_memory_bytes for g in grammars) == compiler.cache_size_bytes
    compiler.clear_cache()
    assert compiler.cache_stats["entries"] == 0 and compiler.cache_size_bytes == 0
    assert compiler.compile_grammar('root ::= "g0"') is not grammars[0]  # compiled anew

    # A grammar larger than the whole bound is returned and not kept.
    tiny = _compiler(cache_limit_bytes=1)
    tiny.compile_grammar('root ::= "x"')
    assert tiny.cache_stats["entries"] == 0 and tiny.cache_stats["evictions"] == 0
