"""Every grammar kind's synchronous compile takes the one-call native path
(``_native.CachedCompiler.compile``, native/bindings/cached_compiler_bindings.cc) where no disk
cache is set and the application keeps Python's SIGINT handler, on the main thread and on the
threads engines compile on. The general path (the asynchronous API, ``_shared_compile`` and a
Python build) must give the same grammar, the same cache entry and charge, the same timeout
message and the same errors. (JSON Schema, which has options and warnings of its own:
test_sync_json_schema_path.py.)"""

from __future__ import annotations

import json
import signal
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable

import pytest

import xg2_plugin as xg
from xg2_test_support import assert_same_compiled_grammar, hf_tokenizer_info, unrolled_compiler

TOKENIZER = "gpt2"


def _vllm_tag(name: str, max_length: int = 16) -> str:
    """A structural tag as vLLM sends it for a request with one strict tool (JSON text)."""
    parameters = {"type": "object", "properties": {"city": {"type": "string", "maxLength": max_length},
                                                   "days": {"type": "integer"}},
                  "required": ["city", "days"], "additionalProperties": False}
    return json.dumps({"type": "structural_tag", "format": {
        "type": "triggered_tags", "triggers": ["<tool_call>"],
        "tags": [{"begin": f'<tool_call>\n{{"name": "{name}", "arguments": ',
                  "content": {"type": "json_schema", "json_schema": parameters}, "end": "}\n</tool_call>"}],
        "at_least_one": False, "stop_after_first": False}})


# kind -> (public synchronous method, its request, a second request of the same kind)
REQUESTS: dict[str, tuple[str, Any, Any]] = {
    "structural_tag": ("compile_structural_tag", _vllm_tag("get_weather"), json.loads(_vllm_tag("get_time"))),
    "ebnf": ("compile_grammar", 'root ::= "yes" | "no" [0-9]*', 'root ::= ("a" | "b")+ "."'),
    "regex": ("compile_regex", r"[a-z]{1,5}@x\.com", r"(ab|cd)*[0-9]?"),
    "lark": ("compile_lark", 'start: "a" NUM\nNUM: /[0-9]+/', 'start: WORD ("," WORD)*\nWORD: /[a-z]+/'),
    "choice": ("compile_choice", ["yes", "no", "maybe"], ("red", "green")),
    "builtin_json": ("compile_builtin_json_grammar", None, None),
}
KINDS = list(REQUESTS)

# kind -> a request whose compile takes long enough (repetitions unrolled) to pass a 1 ns timeout
SLOW_REQUESTS: dict[str, Any] = {
    "structural_tag": _vllm_tag("slow", max_length=300000),
    "ebnf": 'root ::= "a"{0,300000}',
    "regex": "a{0,100000}",
    "lark": "start: /a{0,100000}/",
    "choice": [f"choice number {i}" for i in range(20000)],
    "builtin_json": None,
}

# kind -> requests the engine refuses: each must raise the same exception, with the same message,
# on both paths.
BAD_REQUESTS: dict[str, list[Any]] = {
    "structural_tag": ['{"type": "structural_tag"}', '{"type": "structural_tag", "format": {"type": "const_string"}}',
                       42, "{not json"],
    "ebnf": ['root ::= "a', "rule ::= [", "root ::= undefined_rule", "", 42],
    "regex": ["(", "a{2,1}", "[z-a]", "\ud800", None],
    "lark": ["start: (", "start: UNDEFINED", "start: /(/", b"start: 'a'"],
    "choice": [[], "yes", ["yes", 1], ["\ud800"]],
    "builtin_json": [],
}


def _compiler(**kwargs: Any) -> xg.GrammarCompiler:
    return xg.GrammarCompiler(hf_tokenizer_info(TOKENIZER), precompute_nodes=0, **kwargs)


def _sync(compiler: xg.GrammarCompiler, kind: str, request: Any, **kwargs: Any) -> xg.CompiledGrammar:
    method = getattr(compiler, REQUESTS[kind][0])
    return method(**kwargs) if kind == "builtin_json" else method(request, **kwargs)


def _general(compiler: xg.GrammarCompiler, kind: str, request: Any, **kwargs: Any) -> xg.CompiledGrammar:
    """The general path: the asynchronous API, compiled on the compiler's executor."""
    method = getattr(compiler, REQUESTS[kind][0] + "_async")
    return (method(**kwargs) if kind == "builtin_json" else method(request, **kwargs)).result()


def _general_path_fails(compiler: xg.GrammarCompiler, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every compile of the general path builds through ``_build``; the one-call path never does."""

    def general(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the synchronous compile took the general path")

    monkeypatch.setattr(compiler, "_build", general)


def _on(thread: str, call: Callable[[], Any]) -> Any:
    """``call()`` on the main thread, or on a worker thread as an engine's compile worker runs it."""
    if thread == "main":
        if threading.current_thread() is not threading.main_thread():
            pytest.skip("runs on Python's main thread only")
        return call()
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(call).result()


def _native_fsm(compiler: xg.GrammarCompiler, kind: str, request: Any) -> str:
    """The grammar of ``request`` from the kind's own native entry (no request dispatch), as a
    reference that a kind mapped to the wrong compile in both paths would miss."""
    native = compiler._native
    if kind == "structural_tag":
        text = request if isinstance(request, str) else json.dumps(request)
        return native.compile_structural_tag(native.lower_structural_tag(text, True)).fsm_dump()
    if kind == "builtin_json":
        return native.compile_builtin_json().fsm_dump()
    if kind == "choice":
        return native.compile_choice(list(request)).fsm_dump()
    return getattr(native, "compile_" + kind)(request).fsm_dump()


@pytest.mark.parametrize("thread", ["main", "worker"])
@pytest.mark.parametrize("kind", KINDS)
def test_the_fast_path_compiles_what_the_general_path_compiles(kind: str, thread: str,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    _method, request, other = REQUESTS[kind]
    compiler = _compiler(cache_enabled=False)
    _general_path_fails(compiler, monkeypatch)
    for each in (request, other):
        general = _general(_compiler(cache_enabled=False), kind, each)
        fast = _on(thread, lambda: _sync(compiler, kind, each))
        assert_same_compiled_grammar(fast, general)
        assert fast._handle.fsm_dump() == _native_fsm(compiler, kind, each)


@pytest.mark.parametrize("thread", ["main", "worker"])
@pytest.mark.parametrize("kind", KINDS)
def test_both_paths_share_one_cache_entry_and_charge_it_alike(kind: str, thread: str) -> None:
    """The fast path's key is the general path's (each finds the other's grammar), and it charges
    the cache what the general path charges."""
    _method, request, other = REQUESTS[kind]
    compiler = _compiler()
    fast = _on(thread, lambda: _sync(compiler, kind, request))
    assert _general(compiler, kind, request) is fast
    general_compiler = _compiler()
    general = _general(general_compiler, kind, request)
    assert compiler.cache_size_bytes == general_compiler.cache_size_bytes > 0
    if kind != "builtin_json":
        general = _general(compiler, kind, other)
        assert _on(thread, lambda: _sync(compiler, kind, other)) is general
    stats = compiler.cache_stats
    entries = 1 if kind == "builtin_json" else 2
    assert (stats["entries"], stats["hits"], stats["misses"]) == (entries, entries, entries)


def test_a_grammar_naming_tokens_charges_its_derived_vocabulary_alike(monkeypatch: pytest.MonkeyPatch) -> None:
    """A grammar with Token(id) holds a derived vocabulary: a shared part of the cache that both
    paths charge once, under one key."""
    if threading.current_thread() is not threading.main_thread():
        pytest.skip("runs on Python's main thread only")
    grammar = 'root ::= Token(50256) | "a"'
    fast, general = _compiler(), _compiler()
    _general_path_fails(fast, monkeypatch)
    first = fast.compile_grammar(grammar)
    general.compile_grammar_async(grammar).result()
    assert fast.cache_stats == general.cache_stats
    assert fast.cache_stats["derived_vocabularies"] == 1
    fast.compile_grammar(grammar + " | Token(50256)")  # another grammar, the same vocabulary
    general.compile_grammar_async(grammar + " | Token(50256)").result()
    assert fast.cache_stats == general.cache_stats
    assert fast.cache_stats["derived_vocabularies"] == 1
    assert fast.compile_grammar(grammar) is first
    uncached = _compiler(cache_enabled=False)
    _general_path_fails(uncached, monkeypatch)
    for i in range(8):  # past the vocabularies an uncached compiler keeps
        uncached.compile_grammar(f'root ::= Token({50000 + i})')
    assert len(uncached._token_literal_vocabs) == 4 and uncached.cache_size_bytes == 0


@pytest.mark.parametrize("thread", ["main", "worker"])
@pytest.mark.parametrize("kind", [kind for kind in KINDS if kind != "builtin_json"])
def test_a_timeout_is_reported_as_the_general_path_reports_it(kind: str, thread: str,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    request = SLOW_REQUESTS[kind]
    with pytest.raises(xg.CompilationTimeoutError) as general:
        _general(unrolled_compiler(TOKENIZER, cache_enabled=False), kind, request, timeout=1e-9)
    compiler = unrolled_compiler(TOKENIZER)
    _general_path_fails(compiler, monkeypatch)
    with pytest.raises(xg.CompilationTimeoutError) as fast:
        _on(thread, lambda: _sync(compiler, kind, request, timeout=1e-9))
    assert str(fast.value) == str(general.value) == "compilation timed out after 1e-09 s"
    assert compiler.cache_stats["entries"] == 0 and compiler._grammar_cache.in_flight == 0


def _error_of(call: Callable[[], Any]) -> tuple[type, str]:
    try:
        call()
    except Exception as error:  # noqa: BLE001 - the error is what is compared
        return type(error), str(error)
    raise AssertionError("the request was accepted")


@pytest.mark.parametrize("thread", ["main", "worker"])
@pytest.mark.parametrize("kind", [kind for kind in KINDS if BAD_REQUESTS[kind]])
def test_errors_are_the_general_paths(kind: str, thread: str, monkeypatch: pytest.MonkeyPatch) -> None:
    compiler = _compiler()
    _general_path_fails(compiler, monkeypatch)
    for request in BAD_REQUESTS[kind]:
        general = _error_of(lambda: _general(_compiler(), kind, request))
        assert _on(thread, lambda: _error_of(lambda: _sync(compiler, kind, request))) == general, request
    assert compiler.cache_stats["entries"] == 0 and compiler._grammar_cache.in_flight == 0


@pytest.mark.parametrize("kind", KINDS)
def test_only_an_application_sigint_handler_or_a_disk_cache_takes_the_general_path(
        kind: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    if threading.current_thread() is not threading.main_thread():
        pytest.skip("runs on Python's main thread only")
    _method, request, _other = REQUESTS[kind]
    compiler = _compiler(cache_enabled=False)
    built = []
    general_build = compiler._build

    def counted(*args: Any) -> Any:
        built.append(threading.current_thread().name)
        return general_build(*args)

    monkeypatch.setattr(compiler, "_build", counted)
    fast = _sync(compiler, kind, request)
    _on("worker", lambda: _sync(compiler, kind, request))
    assert built == []
    previous = signal.getsignal(signal.SIGINT)
    try:
        signal.signal(signal.SIGINT, lambda *_: None)
        general = _sync(compiler, kind, request)
    finally:
        signal.signal(signal.SIGINT, previous)
    assert built == ["MainThread"]
    assert_same_compiled_grammar(fast, general)
    # Ctrl-C ignored or left to the operating system: nothing for Python to run, one call.
    for handler in (signal.SIG_IGN, signal.SIG_DFL):
        try:
            signal.signal(signal.SIGINT, handler)
            assert compiler._sync_route() == xg.compiler._ONE_CALL
            assert_same_compiled_grammar(_sync(compiler, kind, request), fast)
        finally:
            signal.signal(signal.SIGINT, previous)
    assert built == ["MainThread"]
    with_disk_cache = _compiler(cache_dir=tmp_path)
    assert_same_compiled_grammar(_sync(with_disk_cache, kind, request), fast)
    assert with_disk_cache.disk_cache.stats["misses"] == 1
