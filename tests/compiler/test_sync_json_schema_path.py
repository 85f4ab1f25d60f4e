"""The synchronous JSON Schema compile takes a one-call native path (``_native.CachedCompiler.compile``,
native/bindings/cached_compiler_bindings.cc) instead of the general one
(``compile_json_schema_async(...).result()`` through ``_shared_compile``), on the main thread
and on the threads engines compile on. Both must give the same grammar for every option, share
cache entries, warn, time out and stop on Ctrl-C alike. The general path is reached here
through the asynchronous API (a worker thread), and through the synchronous one when the
application handles SIGINT itself."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import warnings
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

import xg2_plugin as xg
from xg2_test_support import (CHILD_DEFAULT_SIGINT, assert_same_compiled_grammar, child_env, hf_tokenizer_info,
                              unrolled_compiler)

TOKENIZER = "gpt2"
HERE = Path(__file__).resolve().parents[1]
CHILD_TIMEOUT_S = 120

SCHEMA = json.dumps({
    "type": "object",
    "properties": {"name": {"type": "string"}, "tags": {"type": "array", "items": {"type": "integer"}},
                   "extra": {"type": "object"}},
    "required": ["name"],
})
# Each option away from its default (one per case), so that an option the fast path passes to
# the wrong parameter, or drops, gives another grammar than the general path.
OPTIONS = [
    {},
    {"any_whitespace": False},
    {"indent": 2},
    {"separators": (",", ":")},
    {"separators": [", ", ": "]},
    {"strict_mode": False},
    {"max_whitespace": 2},
    {"any_order": True},
    {"any_key_spelling": True},
    {"lenient": True},
]


def _needs_main_thread() -> None:
    if threading.current_thread() is not threading.main_thread():
        pytest.skip("the fast path runs on the main thread only")


def _compiler(**kwargs) -> xg.GrammarCompiler:
    return xg.GrammarCompiler(hf_tokenizer_info(TOKENIZER), precompute_nodes=0, **kwargs)


def _general_path_fails(compiler: xg.GrammarCompiler, monkeypatch: pytest.MonkeyPatch) -> None:
    def general(*args, **kwargs):
        raise AssertionError("the synchronous compile took the general path")

    monkeypatch.setattr(compiler, "compile_json_schema_async", general)


@pytest.mark.parametrize("options", OPTIONS, ids=lambda options: ",".join(options) or "defaults")
def test_the_fast_path_compiles_what_the_general_path_compiles(options: dict,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    _needs_main_thread()
    general = _compiler(cache_enabled=False).compile_json_schema_async(SCHEMA, **options).result()
    compiler = _compiler(cache_enabled=False)
    _general_path_fails(compiler, monkeypatch)
    fast = compiler.compile_json_schema(SCHEMA, **options)
    assert_same_compiled_grammar(fast, general)


@pytest.mark.parametrize("options", [{}, {"separators": [",", ":"]}, {"any_key_spelling": 1}],
                         ids=["defaults", "separators-list", "truthy-int"])
def test_both_paths_share_one_cache_entry(options: dict) -> None:
    """The fast path's key is the general path's: each finds the other's grammar."""
    _needs_main_thread()
    compiler = _compiler()
    fast = compiler.compile_json_schema(SCHEMA, **options)
    assert compiler.compile_json_schema_async(SCHEMA, **options).result() is fast
    other = SCHEMA + " "
    general = compiler.compile_json_schema_async(other, **options).result()
    assert compiler.compile_json_schema(other, **options) is general
    assert compiler.compile_json_schema(json.loads(other), **options) is fast  # a dict: dumped as SCHEMA
    stats = compiler.cache_stats
    assert (stats["entries"], stats["hits"], stats["misses"]) == (2, 3, 2)


def test_without_a_cache_nothing_is_kept() -> None:
    _needs_main_thread()
    compiler = _compiler(cache_enabled=False)
    first = compiler.compile_json_schema(SCHEMA)
    assert compiler.compile_json_schema(SCHEMA) is not first
    assert compiler.cache_stats["entries"] == 0 and compiler.cache_size_bytes == 0


def test_the_fast_path_charges_what_the_general_path_charges() -> None:
    _needs_main_thread()
    fast, general = _compiler(), _compiler()
    fast.compile_json_schema(SCHEMA)
    general.compile_json_schema_async(SCHEMA).result()
    assert fast.cache_size_bytes == general.cache_size_bytes > 0


def test_lenient_warnings_name_the_callers_line(monkeypatch: pytest.MonkeyPatch) -> None:
    """Ignored keywords warn once, from the compile that ran, at the caller's line."""
    _needs_main_thread()
    schema = {"type": "string", "format": "regex"}
    general = _compiler(cache_enabled=False)
    with warnings.catch_warnings(record=True) as expected:
        warnings.simplefilter("always")
        general.compile_json_schema_async(schema, lenient=True).result()
    assert expected, "the schema should have ignored keywords"
    compiler = _compiler()
    _general_path_fails(compiler, monkeypatch)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        compiler.compile_json_schema(schema, lenient=True)
        compiler.compile_json_schema(schema, lenient=True)  # a cache hit: no compile, no warning
    assert [str(w.message) for w in caught] == [str(w.message) for w in expected]
    assert all(w.category is UserWarning and w.filename == __file__ for w in caught)


def test_argument_errors_are_the_general_paths(monkeypatch: pytest.MonkeyPatch) -> None:
    _needs_main_thread()
    compiler = _compiler()
    _general_path_fails(compiler, monkeypatch)
    with pytest.raises(TypeError, match="schema must be a JSON string"):
        compiler.compile_json_schema(42)
    with pytest.raises(TypeError, match="separators must be a pair of str"):
        compiler.compile_json_schema(SCHEMA, separators=(",",))
    with pytest.raises(ValueError, match="timeout must be a positive finite number"):
        compiler.compile_json_schema(SCHEMA, timeout=0)
    with pytest.raises(xg.InvalidArgumentError, match="not valid Unicode"):
        compiler.compile_json_schema('{"const": "\ud800"}')
    limited = _compiler(limits=xg.CompileLimits(max_input_bytes=10))
    _general_path_fails(limited, monkeypatch)
    with pytest.raises(xg.ResourceLimitError, match="max_input_bytes"):
        limited.compile_json_schema(SCHEMA)
    with pytest.raises(xg.SchemaError):
        compiler.compile_json_schema("{not json")
    with pytest.raises(TypeError):
        compiler.compile_json_schema(SCHEMA, indent="2")


def test_a_timeout_is_reported_with_its_seconds(monkeypatch: pytest.MonkeyPatch) -> None:
    _needs_main_thread()
    compiler = unrolled_compiler(TOKENIZER, cache_enabled=False)
    _general_path_fails(compiler, monkeypatch)
    with pytest.raises(xg.CompilationTimeoutError, match=r"^compilation timed out after 1e-09 s$"):
        compiler.compile_json_schema({"type": "string", "maxLength": 300000}, timeout=1e-9)


def test_application_sigint_handlers_take_the_general_path_and_other_threads_do_not(
        monkeypatch: pytest.MonkeyPatch) -> None:
    _needs_main_thread()
    compiler = _compiler()
    taken = []
    general = compiler.compile_json_schema_async

    def counted(*args, **kwargs):
        taken.append(threading.current_thread().name)
        return general(*args, **kwargs)

    monkeypatch.setattr(compiler, "compile_json_schema_async", counted)
    compiler.compile_json_schema(SCHEMA)
    assert taken == []
    worker = threading.Thread(target=compiler.compile_json_schema, args=(SCHEMA + " ",), name="worker")
    worker.start()
    worker.join()
    assert taken == []
    previous = signal.getsignal(signal.SIGINT)
    try:
        signal.signal(signal.SIGINT, lambda *_: None)
        compiler.compile_json_schema(SCHEMA + "  ")
    finally:
        signal.signal(signal.SIGINT, previous)
    assert taken == ["MainThread"]
    assert compiler.cache_stats["entries"] == 3


@pytest.mark.parametrize("options", OPTIONS[:4], ids=lambda options: ",".join(options) or "defaults")
def test_a_worker_threads_fast_path_compiles_what_the_general_path_compiles(
        options: dict, monkeypatch: pytest.MonkeyPatch) -> None:
    """As an engine calls it: the synchronous compile from a compile worker's thread."""
    general = _compiler(cache_enabled=False).compile_json_schema_async(SCHEMA, **options).result()
    compiler = _compiler()
    _general_path_fails(compiler, monkeypatch)
    with ThreadPoolExecutor(1) as pool:
        fast = pool.submit(compiler.compile_json_schema, SCHEMA, **options).result()
        again = pool.submit(compiler.compile_json_schema, SCHEMA, **options).result()
        with pytest.raises(xg.CompilationTimeoutError, match=r"^compilation timed out after 1e-09 s$"):
            pool.submit(unrolled_compiler(TOKENIZER, cache_enabled=False).compile_json_schema,
                        {"type": "string", "maxLength": 300000}, timeout=1e-9).result()
    assert again is fast  # one cache entry
    assert type(fast) is xg.CompiledGrammar
    assert fast.ebnf == general.ebnf
    assert fast._handle.fsm_dump() == general._handle.fsm_dump()


def test_a_disk_cache_takes_the_general_path(tmp_path: Path) -> None:
    compiler = _compiler(cache_dir=tmp_path)
    taken = []
    general = compiler.compile_json_schema_async

    def counted(*args, **kwargs):
        taken.append(True)
        return general(*args, **kwargs)

    compiler.compile_json_schema_async = counted
    compiler.compile_json_schema(SCHEMA)
    assert taken == [True]
    assert compiler.disk_cache is not None and any(tmp_path.rglob("*"))


# About a second to compile with repetition compression off: the interrupt lands while it runs.
SLOW_SCHEMA = {"type": "string", "maxLength": 600000}
_ENDED_FIRST = "ended-before-the-signal"


@pytest.mark.skipif("libtsan" in __import__("os").environ.get("LD_PRELOAD", ""),
                    reason="a signal-delivery test, slow under ThreadSanitizer")
def test_ctrl_c_stops_a_synchronous_json_schema_compile() -> None:
    """SIGINT during the fast path's compile: KeyboardInterrupt at once (the compile is
    cancelled, nothing cached) and Python's SIGINT handler back in place. In a child process,
    retried when the compile ended before the signal was sent."""
    code = (
        "import os, signal, threading, time\n"
        f"{CHILD_DEFAULT_SIGINT}"
        "from xg2_test_support import unrolled_compiler\n"
        f"compiler = unrolled_compiler({TOKENIZER!r})\n"
        "assert compiler.disk_cache is None\n"
        "sent = []\n"
        "def interrupt():\n"
        "    while compiler._grammar_cache.in_flight == 0:\n"
        "        threading.Event().wait(0.001)\n"
        "    os.kill(os.getpid(), signal.SIGINT)\n"
        "    sent.append(True)\n"
        "threading.Thread(target=interrupt, daemon=True).start()\n"
        "try:\n"
        f"    compiler.compile_json_schema({SLOW_SCHEMA!r})\n"
        f"    print({_ENDED_FIRST!r}, 'sent' if sent else 'not-sent')\n"
        "except KeyboardInterrupt:\n"
        "    print('interrupted', compiler.cache_stats['entries'], compiler._grammar_cache.in_flight,\n"
        "          signal.getsignal(signal.SIGINT) is signal.default_int_handler)\n"
    )
    for _ in range(3):
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                              timeout=CHILD_TIMEOUT_S, env=child_env(), cwd=str(HERE))
        assert proc.returncode == 0, proc.stderr[-3000:]
        words = proc.stdout.split()
        if words[:1] != [_ENDED_FIRST]:
            assert words == ["interrupted", "0", "0", "True"]
            return
        assert words[1] == "not-sent", f"SIGINT was sent during the compile and lost: {words}"
    pytest.fail("the compile ended before SIGINT in all 3 tries")
