"""Identical concurrent compile requests share the work, never the outcome; compilers survive
fork(); a synchronous compile stops on Ctrl-C.

Every request is a separate caller (as in vLLM and SGLang): one caller's timeout or cancel()
must resolve only its own future, and the shared native compile stops only when no caller
wants it any more. scripts/sanitize.sh tsan runs this file under ThreadSanitizer.
"""

from __future__ import annotations

import multiprocessing
import os
import subprocess
import sys
import threading
from concurrent.futures import CancelledError
from pathlib import Path

import pytest

import xg2_plugin as xg
from xg2_test_support import CHILD_DEFAULT_SIGINT, child_env, hf_tokenizer_info, unrolled_compiler

TOKENIZER = "gpt2"
HERE = Path(__file__).resolve().parents[1]
CHILD_TIMEOUT_S = 120
# Takes a few hundred milliseconds to compile (unrolled: compression off), far longer than the
# short timeouts below, and far shorter than the generous waits.
SLOW = "root ::= [a-z]{0,300000}"
# Compiles for seconds, far longer than the short timeouts and cancels below need.
ENDLESS = "root ::= [a-z]{0,1000000}"
# About a second, and within the limits (ENDLESS ends with ResourceLimitError).
LONG = "root ::= [a-z]{0,900000}"


def _compiler(**kwargs) -> xg.GrammarCompiler:
    return unrolled_compiler(TOKENIZER, **kwargs)


def _wait_running(future) -> None:
    while not future.running() and not future.done():
        threading.Event().wait(0.001)


def test_one_callers_timeout_does_not_fail_another() -> None:
    compiler = _compiler(max_threads=2)
    hasty = compiler.compile_grammar_async(SLOW, timeout=0.05)
    patient = compiler.compile_grammar_async(SLOW)
    late = None
    _wait_running(patient)
    late = compiler.compile_grammar_async(SLOW)  # joins the running compile
    with pytest.raises(xg.CompilationTimeoutError, match="timed out after 0.05 s"):
        hasty.result(timeout=CHILD_TIMEOUT_S)
    grammar = patient.result(timeout=CHILD_TIMEOUT_S)
    assert late.result(timeout=CHILD_TIMEOUT_S) is grammar  # one native compile served both
    assert compiler._grammar_cache.in_flight == 0
    assert compiler.cache_stats["entries"] == 1

def test_a_synchronous_callers_timeout_does_not_fail_a_caller_that_joined_it() -> None:
    """A synchronous compile runs on its caller's thread, which is then a caller like any other:
    a request joining it keeps the compile going past the synchronous caller's deadline, and the
    deadline watcher times the synchronous caller out while its own thread still runs the compile
    (had the join come after that deadline, the compile stops there and the joiner starts anew:
    the outcomes are the same)."""
    compiler = _compiler(max_threads=1)
    joined = []

    def join_when_started() -> None:
        while compiler._grammar_cache.in_flight == 0:
            threading.Event().wait(0.001)
        joined.append(compiler.compile_grammar_async(SLOW))

    joiner = threading.Thread(target=join_when_started, daemon=True)
    joiner.start()
    with pytest.raises(xg.CompilationTimeoutError, match="timed out after 0.05 s"):
        compiler.compile_grammar(SLOW, timeout=0.05)
    joiner.join(timeout=CHILD_TIMEOUT_S)
    assert xg.GrammarMatcher(joined[0].result(timeout=CHILD_TIMEOUT_S)).accept_string("abc")
    assert compiler._grammar_cache.in_flight == 0
    assert compiler.cache_stats["entries"] == 1



def test_one_callers_cancel_does_not_cancel_another() -> None:
    compiler = _compiler(max_threads=2)
    first = compiler.compile_grammar_async(SLOW)
    second = compiler.compile_grammar_async(SLOW)
    _wait_running(first)
    assert first.cancel() is False  # it runs: cancelled at a safe point, as a failure
    with pytest.raises(xg.CompilationCancelledError):
        first.result(timeout=CHILD_TIMEOUT_S)
    assert xg.GrammarMatcher(second.result(timeout=CHILD_TIMEOUT_S)).accept_string("abc")

    # A queued caller's cancel() is the usual concurrent.futures cancel, and also its own.
    busy = _compiler(max_threads=1)
    blocker = busy.compile_grammar_async(ENDLESS)
    queued = busy.compile_grammar_async('root ::= "q"')
    queued_too = busy.compile_grammar_async('root ::= "q"')
    assert queued.cancel() and queued.cancelled()
    blocker.cancel()
    assert xg.GrammarMatcher(queued_too.result(timeout=CHILD_TIMEOUT_S)).accept_string("q")


def test_compile_stops_when_every_caller_has_left() -> None:
    compiler = _compiler(max_threads=1)
    callers = [compiler.compile_grammar_async(ENDLESS, timeout=t) for t in (0.02, 0.05, None)]
    _wait_running(callers[0])
    for timeout_caller in callers[:2]:
        with pytest.raises(xg.CompilationTimeoutError):
            timeout_caller.result(timeout=CHILD_TIMEOUT_S)
    assert not callers[2].done()  # the caller without a timeout keeps the compile alive
    callers[2].cancel()
    # Cancelled while it runs, or (the single worker just freed) while still queued.
    with pytest.raises((xg.CompilationCancelledError, CancelledError)):
        callers[2].result(timeout=CHILD_TIMEOUT_S)
    assert compiler._grammar_cache.in_flight == 0
    # The single worker is free again: the abandoned compile stopped.
    assert compiler.compile_grammar_async('root ::= "next"').result(timeout=CHILD_TIMEOUT_S).ebnf

    # Every caller timing out stops it as well.
    timed = [compiler.compile_grammar_async(ENDLESS, timeout=t) for t in (0.02, 0.04)]
    for future in timed:
        with pytest.raises(xg.CompilationTimeoutError):
            future.result(timeout=CHILD_TIMEOUT_S)
    assert compiler.compile_grammar_async('root ::= "again"').result(timeout=CHILD_TIMEOUT_S).ebnf
    assert compiler._grammar_cache.in_flight == 0 and compiler.cache_stats["entries"] == 2


def test_submit_cancel_storm_leaves_no_in_flight_entries() -> None:
    compiler = _compiler(max_threads=4)
    grammars = [f'root ::= "s{i % 7}" [a-z]{{0,{i % 5 + 1}}}' for i in range(600)]
    errors: list[BaseException] = []

    def storm(offset: int) -> None:
        try:
            for i in range(offset, len(grammars), 3):
                future = compiler.compile_grammar_async(grammars[i], timeout=None if i % 2 else 5.0)
                if i % 3 != 2:
                    future.cancel()
        except BaseException as error:  # noqa: BLE001 - reported below
            errors.append(error)

    threads = [threading.Thread(target=storm, args=(k,)) for k in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    compiler._executor.shutdown(wait=True)  # every queued compile has run or been skipped
    assert compiler._grammar_cache.in_flight == 0


def _child_compiles_after_fork(queue) -> None:
    compiler = _FORKED_COMPILER
    grammar = compiler.compile_grammar_async('root ::= "child" [0-9]+').result(timeout=60)
    matcher = xg.GrammarMatcher(grammar)
    ok = matcher.accept_string("child42")
    fresh = xg.GrammarCompiler(hf_tokenizer_info(TOKENIZER), precompute_nodes=64)
    ok = ok and xg.GrammarMatcher(fresh.compile_json_schema_async({"type": "object"}).result(timeout=60)
                                  ).accept_string("{}")
    from xg2_plugin import _native
    _native._wait_for_background_work()  # the child's own background thread runs the queue
    queue.put(ok)


_FORKED_COMPILER = None


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork()")
@pytest.mark.skipif("libtsan" in os.environ.get("LD_PRELOAD", ""),
                    reason="ThreadSanitizer refuses to start threads after a multi-threaded fork")
def test_compiler_created_before_fork_works_in_the_child() -> None:
    global _FORKED_COMPILER
    compiler = xg.GrammarCompiler(hf_tokenizer_info(TOKENIZER), max_threads=2, precompute_nodes=64)
    # Worker threads exist and the background precompute is busy when the process forks.
    for i in range(4):
        compiler.compile_json_schema_async({"type": "object", "properties": {f"p{i}": {"type": "string"}}}
                                           ).result(timeout=CHILD_TIMEOUT_S)
    _FORKED_COMPILER = compiler
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    child = context.Process(target=_child_compiles_after_fork, args=(queue,))
    child.start()
    child.join(CHILD_TIMEOUT_S)
    hung = child.is_alive()
    if hung:
        child.kill()
        child.join()
    assert not hung, "the child's compile hung after fork()"
    assert child.exitcode == 0 and queue.get(timeout=5) is True
    # The parent is unaffected.
    assert compiler.compile_grammar_async('root ::= "parent"').result(timeout=CHILD_TIMEOUT_S).ebnf


# What a Ctrl-C child prints when its compile ended before the signal could arrive: on a
# heavily loaded machine the interrupting thread can wait longer than the whole compile.
_ENDED_FIRST = "ended-before-the-signal"
_CTRL_C_ATTEMPTS = 3


def _run_interrupted_child(code: str) -> list:
    """Runs a Ctrl-C child until its signal lands during the compile (at most a few tries: a
    try whose compile ended first says nothing about the interrupt) and returns what it printed.
    A child whose compile ended first prints whether its interrupting thread had sent SIGINT by
    then: sent and not seen would be a lost Ctrl-C, a defect, never retried."""
    tries = []
    for _ in range(_CTRL_C_ATTEMPTS):
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                              timeout=CHILD_TIMEOUT_S, env=child_env(), cwd=str(HERE))
        assert proc.returncode == 0, proc.stderr[-3000:]
        words = proc.stdout.split()
        if words[:1] != [_ENDED_FIRST]:
            return words
        assert words[1] == "not-sent", f"SIGINT was sent during the compile and lost: {words}"
        tries.append(" ".join(words))
    pytest.fail(f"the compile ended before SIGINT in all {_CTRL_C_ATTEMPTS} tries: {tries}")


@pytest.mark.skipif("libtsan" in os.environ.get("LD_PRELOAD", ""),
                    reason="a signal-delivery test, not a race test: under ThreadSanitizer's slowdown the "
                           "slow grammar's compile outlasts the child's time bound on a loaded machine")
def test_ctrl_c_stops_a_synchronous_compile() -> None:
    """SIGINT while the main thread compiles: KeyboardInterrupt arrives while the compile runs
    (it is cancelled, so nothing is cached), not after it. In a child: the signal is real."""
    code = (
        "import os, signal, threading, sys, time\n"
        f"{CHILD_DEFAULT_SIGINT}"
        "import xg2_plugin as xg\n"
        "import test_compile_futures as t\n"
        "compiler = t._compiler()\n"
        "sent = []\n"
        "def interrupt():\n"
        "    while compiler.cache_stats['entries'] == 0 and compiler._grammar_cache.in_flight == 0:\n"
        "        threading.Event().wait(0.001)\n"
        "    os.kill(os.getpid(), signal.SIGINT)\n"
        "    sent.append(True)\n"
        "threading.Thread(target=interrupt, daemon=True).start()\n"
        "began = time.monotonic()\n"
        "try:\n"
        "    compiler.compile_grammar(t.SLOW_UNCANCELLED)\n"
        "    print('finished')\n"
        "except xg.ResourceLimitError:\n"
        f"    print('{_ENDED_FIRST}', 'sent' if sent else 'not-sent', round(time.monotonic() - began, 1))\n"
        "except KeyboardInterrupt:\n"
        "    print('interrupted', compiler.cache_stats['entries'], compiler._grammar_cache.in_flight)\n"
    )
    assert _run_interrupted_child(code) == ["interrupted", "0", "0"]


# Seconds long, so the interrupt lands while it runs; the fix stops it at once.
SLOW_UNCANCELLED = ENDLESS


@pytest.mark.skipif("libtsan" in os.environ.get("LD_PRELOAD", ""),
                    reason="a signal-delivery test (see test_ctrl_c_stops_a_synchronous_compile)")
def test_ctrl_c_on_the_main_thread_leaves_a_joined_caller_its_grammar() -> None:
    """SIGINT stops the main thread's synchronous compile (it runs there, watching for the
    signal), but a caller that joined it from another thread still gets the grammar: the compile
    runs again for it on a worker, and the main thread gets KeyboardInterrupt."""
    code = (
        "import os, signal, threading, time\n"
        f"{CHILD_DEFAULT_SIGINT}"
        "import test_compile_futures as t\n"
        "compiler = t._compiler(max_threads=1)\n"
        "joined = []\n"
        "sent = []\n"
        "def join_then_interrupt():\n"
        "    while compiler._grammar_cache.in_flight == 0:\n"
        "        threading.Event().wait(0.001)\n"
        "    joined.append(compiler.compile_grammar_async(t.LONG))\n"
        "    os.kill(os.getpid(), signal.SIGINT)\n"
        "    sent.append(True)\n"
        "threading.Thread(target=join_then_interrupt, daemon=True).start()\n"
        "began = time.monotonic()\n"
        "try:\n"
        "    compiler.compile_grammar(t.LONG)\n"
        f"    print('{_ENDED_FIRST}', 'sent' if sent else 'not-sent', round(time.monotonic() - began, 1))\n"
        "except KeyboardInterrupt:\n"
        "    grammar = joined[0].result(timeout=t.CHILD_TIMEOUT_S)\n"
        "    print('interrupted', type(grammar).__name__, compiler.cache_stats['entries'], compiler._grammar_cache.in_flight,\n"
        "          signal.getsignal(signal.SIGINT) is signal.default_int_handler)\n"
    )
    assert _run_interrupted_child(code) == ["interrupted", "CompiledGrammar", "1", "0", "True"]


def test_main_thread_compiles_in_place_unless_the_application_handles_sigint() -> None:
    """With Python's default SIGINT handler a synchronous compile runs on the main thread itself
    (no hand-off to another thread, which costs two wake-ups); with a handler of the
    application's own it runs on a helper thread, so that the handler runs as Python decides."""
    import signal

    if threading.current_thread() is not threading.main_thread():
        pytest.skip("needs the main thread")
    compiler = _compiler()
    previous = signal.getsignal(signal.SIGINT)
    try:
        signal.signal(signal.SIGINT, signal.default_int_handler)
        compiler.compile_grammar('root ::= "a"')
        assert compiler._main_thread_executor is None
        signal.signal(signal.SIGINT, lambda *_: None)
        compiler.compile_grammar('root ::= "b"')
        assert compiler._main_thread_executor is not None
    finally:
        signal.signal(signal.SIGINT, previous)
    assert signal.getsignal(signal.SIGINT) is previous


def test_derived_vocabularies_are_bounded_by_the_cache_limit() -> None:
    """A grammar naming a token (Token(id)) derives a vocabulary as large as the tokenizer's
    tables; they count in cache_limit_bytes, are evicted LRU and dropped by clear_cache()."""
    from xg2_plugin import _native

    info = hf_tokenizer_info(TOKENIZER)
    vocab_bytes = int(info._handle.memory_bytes())
    compiler = xg.GrammarCompiler(info, precompute_nodes=0, cache_limit_bytes=3 * vocab_bytes)
    first = info.vocab_size - 10
    for i in range(6):
        grammar = compiler.compile_grammar(f'root ::= "a" Token({first + i})')
        assert xg.GrammarMatcher(grammar).accept_string(b"a" + _native._token_literal_bytes(first + i))
        assert len(compiler._token_literal_vocabs) <= 3
        assert compiler.cache_stats["bytes"] <= compiler.cache_stats["limit_bytes"]
    stats = compiler.cache_stats
    assert stats["evictions"] > 0 and stats["derived_vocabularies"] == len(compiler._token_literal_vocabs)
    compiler.clear_cache()
    assert len(compiler._token_literal_vocabs) == 0 and compiler.cache_stats["bytes"] == 0

    uncached = xg.GrammarCompiler(info, precompute_nodes=0, cache_enabled=False)
    for i in range(6):
        uncached.compile_grammar(f'root ::= "a" Token({first + i})')
    assert len(uncached._token_literal_vocabs) <= 4

