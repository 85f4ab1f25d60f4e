"""Grammar compilation: JSON Schema, EBNF, regex and choice lists into compiled grammars.

A ``GrammarCompiler`` belongs to one tokenizer. It caches compiled grammars (LRU, bounded in
bytes) and shares one in-flight compilation between identical concurrent requests, both native
(``native/compiler/compile_cache.h``). All native work runs with the GIL released, so the async
variants compile in parallel.

Hostile input is bounded by ``CompileLimits`` (sizes, depths, repetition bounds, automaton
nodes, Earley items) and by a per-compile timeout; a cancelled or timed-out compile stops at
its next safe point and frees its partial work.
"""

from __future__ import annotations

import _signal
import _thread
import json
import math
import os
import threading
import time
import warnings
import weakref
from collections import OrderedDict
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Callable, Optional, Sequence, Union

from . import _heap_trim, _native, serialization
from . import _shared_compile as _calls
from . import disk_cache as _disk_cache
from ._shared_compile import CompileFuture
from .grammar import Grammar
from .tokenizer_info import TokenizerInfo

__all__ = ["CompiledGrammar", "CompileLimits", "GrammarCompiler", "ebnf_string_literal"]

SchemaLike = Union[str, dict, type]

_INT32_MAX = 2 ** 31 - 1
_INT64_MAX = 2 ** 63 - 1
# The JSON Schema converter recurses once per nesting level: deeper limits than this could
# exhaust the native stack of a worker thread, so the limit can only be lowered.
_SCHEMA_DEPTH_CAP = 2000
# Structural tags whose lowering a compiler remembers (most recently used first out).
_LOWERED_TAGS_KEPT = 64
# Lowered structural tags a compiler numbers for its grammar cache's keys (most recently used
# first out: a tag whose number was dropped gets a new one, and compiles again once).
_LOWERED_TAG_KEYS_KEPT = 256
# Distinct option sets whose cache-key prefix a compiler remembers (all dropped past it).
_CACHE_KEY_PREFIXES_KEPT = 256
# Derived vocabularies a compiler without a grammar cache keeps for reuse.
_DERIVED_VOCABS_UNCACHED = 4
# Every compiler of the process, for the fork handler below.
_COMPILERS: "weakref.WeakSet[GrammarCompiler]" = weakref.WeakSet()
# Python's main thread (the thread that forked, in a child of fork()): GrammarCompiler._sync_route.
_main_thread_ident = threading.main_thread().ident
# How a request runs (GrammarCompiler._sync_route): a synchronous one in one native call, off or on
# the main thread (which watches for Ctrl-C), or through the general path on this thread, off or
# on the main thread, or on a helper thread; an asynchronous one on the compiler's executor.
_ONE_CALL, _ONE_CALL_WATCHING_SIGINT, _ON_THIS_THREAD, _ON_THIS_THREAD_WATCHING_SIGINT, _ON_HELPER_THREAD, _ASYNC = \
    range(6)


@dataclass(frozen=True)
class CompileLimits:
    """Resource limits for compiling (and matching) one grammar; exceeding one raises
    ``ResourceLimitError`` naming the limit, or ``CompilationTimeoutError`` for the timeout.

    The defaults accept every JSONSchemaBench schema the engine supports while keeping a
    hostile input from exhausting memory or time. Matching is bounded too: each byte step of
    a matcher creates at most ``max_earley_items_per_step`` items, and the parser's work is
    budgeted per accepted token and per mask fill (``max_earley_work_per_token`` /
    ``_per_fill``), so a pathologically ambiguous grammar raises ``ResourceLimitError``
    instead of stalling the server; the matcher is then as it was before the call.

    Attributes:
        max_input_bytes: size of the grammar, schema, regex or choice list text (UTF-8).
        max_schema_depth: JSON Schema nesting plus ``$ref`` chain depth (at most 2000).
        max_generated_grammar_bytes: EBNF a JSON Schema may expand into (bounds ``$ref`` and
            ``allOf`` explosions).
        max_repetition_bound: largest ``n`` in an EBNF ``{m,n}`` repetition. JSON Schema
            length / item / property counts have their own cap of 2^31-1 (counted loops), and
            regex repetitions one of 100000.
        max_fsm_nodes: automaton nodes built while lowering the grammar (grammar size after
            repetitions are unrolled, and determinisation blow-up).
        max_earley_items_per_step: Earley items one byte step may create in a matcher of the
            grammar (pathological ambiguity fails the step instead of running unboundedly).
        max_earley_work_per_token: elementary parser operations (item scans, predictions,
            completions, duplicates included) one accepted token may cost: ``accept_token``,
            each token of ``validate_tokens``, each byte of ``accept_string``.
        max_earley_work_per_fill: the same for one ``fill_next_token_bitmask`` (cached or
            reference) or ``find_jump_forward_string`` as a whole.
        timeout_s: default wall-clock limit of one compilation, counted from when it starts
            running (``None``: no limit); ``compile_*(timeout=...)`` overrides it.
    """

    max_input_bytes: int = 16 << 20
    max_schema_depth: int = _SCHEMA_DEPTH_CAP
    max_generated_grammar_bytes: int = 64 << 20
    max_repetition_bound: int = 1_000_000
    max_fsm_nodes: int = 4_000_000
    max_earley_items_per_step: int = 1 << 20
    max_earley_work_per_token: int = 1 << 18
    max_earley_work_per_fill: int = 1 << 28
    timeout_s: Optional[float] = None

    def __post_init__(self) -> None:
        caps = {
            "max_input_bytes": _INT64_MAX, "max_schema_depth": _SCHEMA_DEPTH_CAP,
            "max_generated_grammar_bytes": _INT64_MAX, "max_repetition_bound": _INT32_MAX,
            "max_fsm_nodes": _INT64_MAX, "max_earley_items_per_step": _INT32_MAX,
            "max_earley_work_per_token": _INT64_MAX, "max_earley_work_per_fill": _INT64_MAX,
        }
        for name, cap in caps.items():
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int):
                raise TypeError(f"CompileLimits.{name} must be an int, got {type(value).__name__}")
            if not 1 <= value <= cap:
                raise ValueError(f"CompileLimits.{name} must be in [1, {cap}], got {value}")
        _check_timeout(self.timeout_s, "CompileLimits.timeout_s")

    def _to_native(self) -> Any:
        native = _native.CompileLimits()
        native.max_schema_depth = self.max_schema_depth
        native.max_generated_grammar_bytes = self.max_generated_grammar_bytes
        native.max_repetition_bound = self.max_repetition_bound
        native.max_fsm_nodes = self.max_fsm_nodes
        native.max_earley_items_per_step = self.max_earley_items_per_step
        native.max_earley_work_per_token = self.max_earley_work_per_token
        native.max_earley_work_per_fill = self.max_earley_work_per_fill
        return native


# About 31 years: the native deadline is a steady-clock time in int64 nanoseconds.
_MAX_TIMEOUT_S = 10 ** 9


def _check_timeout(timeout: Optional[float], what: str) -> None:
    if timeout is None:
        return
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)):
        raise TypeError(f"{what} must be a number of seconds or None, got {type(timeout).__name__}")
    # Compared before any float conversion: an int too large for a float (10**400) would
    # raise OverflowError there, and a deadline past the native clock's range would wrap.
    if (isinstance(timeout, float) and not math.isfinite(timeout)) or not timeout > 0:
        raise ValueError(f"{what} must be a positive finite number of seconds, got {timeout}")
    if timeout > _MAX_TIMEOUT_S:
        shown = repr(timeout) if len(repr(timeout)) <= 24 else repr(timeout)[:12] + f"... ({len(repr(timeout))} digits)"
        raise ValueError(f"{what} must be at most {_MAX_TIMEOUT_S} seconds (None: no timeout), got {shown}")


class _Ready:
    """A synchronous compile's cache hit: its grammar, read with ``result()`` as a future's
    would be, without building a Future (a condition and a lock) that no one waits on."""

    __slots__ = ("_grammar",)

    def __init__(self, grammar: "CompiledGrammar") -> None:
        self._grammar = grammar

    def result(self, timeout: Optional[float] = None) -> "CompiledGrammar":
        return self._grammar


class CompiledGrammar:
    """A grammar compiled for one tokenizer; immutable and shareable across matchers/threads."""

    def __init__(self, handle: Any, tokenizer_info: TokenizerInfo, source: str) -> None:
        self._handle = handle
        self._tokenizer_info = tokenizer_info
        self._source = source

    @property
    def tokenizer_info(self) -> TokenizerInfo:
        """The tokenizer this grammar was compiled for."""
        return self._tokenizer_info

    @property
    def grammar(self) -> Grammar:
        """The grammar as a :class:`Grammar` (from :attr:`ebnf`; xgrammar's attribute)."""
        return Grammar.from_ebnf(self.ebnf)

    @property
    def ebnf(self) -> str:
        """The grammar as EBNF text (what the frontend prints for its source). Printed on first
        use from the source the grammar was compiled from, so the first read of a large
        grammar's text costs about a frontend conversion; later reads return the same text."""
        return self._handle.ebnf

    @property
    def memory_size_bytes(self) -> int:
        """Approximate bytes held by the compiled grammar."""
        return int(self._handle.memory_bytes)

    def __repr__(self) -> str:
        return f"CompiledGrammar({self._source}, rules={self._handle.num_rules}, nodes={self._handle.num_nodes})"

    def serialize_json(self) -> str:
        """The grammar as JSON text (xg2_plugin/serialization.py); the tokenizer is not included,
        only its fingerprint, checked by :meth:`deserialize_json`."""
        return serialization.grammar_to_json(self)

    @staticmethod
    def deserialize_json(json_str: str, tokenizer_info: TokenizerInfo) -> "CompiledGrammar":
        """The grammar of :meth:`serialize_json` for ``tokenizer_info``; ``DeserializationError``
        when the text is corrupt, of another engine version, or made for another tokenizer."""
        return serialization.grammar_from_json(json_str, tokenizer_info)

    def serialize_bytes(self) -> bytes:
        """Like :meth:`serialize_json`, as the compact binary blob."""
        return serialization.grammar_to_bytes(self)

    @staticmethod
    def deserialize_bytes(data: bytes, tokenizer_info: TokenizerInfo) -> "CompiledGrammar":
        """Like :meth:`deserialize_json`, from :meth:`serialize_bytes`' blob."""
        return serialization.grammar_from_bytes(data, tokenizer_info)


def ebnf_string_literal(text: str) -> str:
    """Quotes ``text`` as an EBNF literal (escaping quotes, backslashes and control characters)."""
    out = ['"']
    for ch in text:
        code = ord(ch)
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif code < 0x20 or code == 0x7F:
            out.append(f"\\x{code:02x}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def shared_rule_dfa_stats() -> dict[str, int]:
    """The process-wide table of rule DFAs that every compiler shares.

    Large rule bodies are determinised and minimised once per process and found again by
    content when another grammar (from any compiler) holds the same body. Returns ``entries``
    and ``bytes`` held now, ``limit_bytes`` (past it the oldest entries are dropped), and the
    ``hits``, ``misses`` and ``evictions`` since the process started.
    """
    return dict(_native._shared_rule_dfa_stats())


def _check_text(text: Any, what: str, max_bytes: int) -> str:
    """Checks that ``text`` is a str of valid Unicode within the input size limit."""
    if not isinstance(text, str):
        raise TypeError(f"{what} must be a str, got {type(text).__name__}")
    if text.isascii():
        # One byte per character, always valid: no copy to measure (isascii reads a flag
        # CPython keeps on the string; most schema texts are ASCII, json.dumps escapes the rest).
        if len(text) > max_bytes:
            raise _native.ResourceLimitError(
                f"{what} is {len(text)} bytes, above the limit of {max_bytes} (CompileLimits.max_input_bytes)"
            )
        return text
    try:
        size = len(text.encode("utf-8"))
    except UnicodeEncodeError as error:
        raise _native.InvalidArgumentError(
            f"{what} is not valid Unicode: {error.reason} at character {error.start}"
        ) from None
    if size > max_bytes:
        raise _native.ResourceLimitError(
            f"{what} is {size} bytes, above the limit of {max_bytes} (CompileLimits.max_input_bytes)"
        )
    return text


# Nesting deeper than the native JSON parser accepts (support/json.h ParseJson's max_depth)
# is refused before serialising, without recursion. This bounds the JSON text (arrays and
# objects inside each other), as documented in README.md beside max_schema_depth, which counts
# schema levels plus $ref hops. The converter recurses a few KB of stack per nesting level:
# 512 levels fit a worker thread's stack with room to spare; 2000 would take most of an
# 8 MiB stack in a release build, and more with ASan's larger frames.
_MAX_JSON_NESTING = 512


def _json_text_size(value: Any, max_bytes: int) -> int:
    """About how many bytes ``json.dumps(value)`` produces, computed iteratively with one
    visit per distinct container: a dict that shares sub-objects can stand for a document
    exponentially larger than itself, which a plain dump would try to build. Raises
    ``SchemaError`` for a cycle and ``ResourceLimitError`` past the nesting or size limit."""
    sizes: dict[int, int] = {}
    on_path: set[int] = set()
    stack: list[tuple[Any, int, bool]] = [(value, 0, False)]

    def leaf(item: Any) -> int:
        return len(item) + 2 if isinstance(item, str) else 8

    while stack:
        obj, depth, finished = stack.pop()
        key = id(obj)
        children = list(obj.values()) if isinstance(obj, dict) else obj
        if finished:
            on_path.discard(key)
            size = 2 + sum(sizes[id(c)] if isinstance(c, (dict, list, tuple)) else leaf(c) for c in children)
            size += 2 * max(0, len(children) - 1)
            if isinstance(obj, dict):
                size += sum(leaf(k) + 2 for k in obj)
            sizes[key] = size
            if size > max_bytes:
                raise _native.ResourceLimitError(
                    f"JSON Schema serialises to more than {max_bytes} bytes (CompileLimits.max_input_bytes)"
                )
            continue
        if key in sizes:
            continue
        if key in on_path:
            raise _native.SchemaError("JSON Schema cannot be serialised as JSON: it contains a cycle")
        if depth >= _MAX_JSON_NESTING:
            raise _native.ResourceLimitError(f"JSON Schema nests deeper than {_MAX_JSON_NESTING} levels")
        on_path.add(key)
        stack.append((obj, depth, True))
        stack.extend((c, depth + 1, False) for c in children if isinstance(c, (dict, list, tuple)))
    return sizes[id(value)] if isinstance(value, (dict, list, tuple)) else leaf(value)


def _dump_json_bounded(value: Any, max_bytes: int) -> str:
    """``json.dumps`` after checking nesting, cycles and size (see ``_json_text_size``)."""
    _json_text_size(value, max_bytes)
    try:
        return json.dumps(value, allow_nan=False)
    except ValueError as error:  # NaN / infinity
        raise _native.SchemaError(f"JSON Schema cannot be serialised as JSON: {error}") from None


def _schema_to_text(schema: SchemaLike, max_bytes: int = _INT64_MAX) -> str:
    if isinstance(schema, str):
        return _check_text(schema, "JSON Schema text", max_bytes)
    if isinstance(schema, dict):
        return _dump_json_bounded(schema, max_bytes)
    if isinstance(schema, type) and hasattr(schema, "model_json_schema"):
        return _dump_json_bounded(schema.model_json_schema(), max_bytes)
    raise TypeError(
        f"schema must be a JSON string, a dict or a pydantic model class, got {type(schema).__name__}"
    )


def _separators_pair(separators: Any) -> tuple[str, str]:
    if (not isinstance(separators, (tuple, list)) or len(separators) != 2
            or not all(isinstance(item, str) for item in separators)):
        raise TypeError(f"separators must be a pair of str (item, key), got {separators!r}"[:200])
    return (separators[0], separators[1])


def _whitespace_cap(max_whitespace: Optional[int], max_whitespace_cnt: int) -> int:
    """The one cap of ``max_whitespace`` and its xgrammar name ``max_whitespace_cnt``."""
    if max_whitespace is not None and max_whitespace != max_whitespace_cnt:
        raise _native.InvalidArgumentError(
            f"max_whitespace={max_whitespace!r} and max_whitespace_cnt={max_whitespace_cnt!r} name one setting")
    return max_whitespace_cnt


def _legacy_pair(tags: Any, triggers: Any) -> dict:
    """xgrammar's deprecated ``(tags, triggers)`` pair as the legacy structures form."""
    from .structural_tag import legacy_structural_tag

    warnings.warn("compile_structural_tag(tags, triggers) is deprecated: pass one structural tag",
                  DeprecationWarning, stacklevel=3)
    return legacy_structural_tag(tags, triggers)


def _check_grammar_root(root_rule_name: str) -> None:
    if root_rule_name != "root":
        raise _native.InvalidArgumentError(
            f"root_rule_name={root_rule_name!r} applies to EBNF text; a Grammar's root is its own")


def _check_init_arguments(**arguments: Any) -> None:
    """Types and ranges of GrammarCompiler's scalar arguments (a float thread count or a
    str flag would otherwise be truncated or read as true)."""
    for name, value in arguments.items():
        if name in ("cache_enabled", "mask_cache", "cross_grammar_cache"):
            if not isinstance(value, bool):
                raise TypeError(f"{name} must be a bool, got {type(value).__name__}")
            continue
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"{name} must be an int, got {type(value).__name__}")
        lowest = {"max_threads": 1, "cache_limit_bytes": -1, "mask_cache_limit_bytes": -1,
                  "precompute_nodes": -1}.get(name, -(2 ** 31))
        highest = {"cache_limit_bytes": _INT64_MAX, "mask_cache_limit_bytes": _INT64_MAX}.get(name, 2 ** 31 - 1)
        if not lowest <= value <= highest:
            raise ValueError(f"{name} must be in [{lowest}, {highest}], got {value}")


class GrammarCompiler:
    """Compiles grammars for one tokenizer, with a shared byte-bounded cache.

    Args:
        tokenizer_info: the model's vocabulary.
        max_threads: threads used for asynchronous compilation.
        cache_enabled: keep compiled grammars for reuse by identical requests.
        cache_limit_bytes: LRU bound on cached grammars (1 GiB by default); -1 means unbounded.
            A grammar is measured when it is stored: parser states its matchers classify
            later are not re-measured (see scripts/soak.py memory for the RSS this gives).
        mask_cache_limit_bytes: LRU bound on the token-classification pool shared by every
            grammar of this compiler (the cross-grammar mask cache); -1 means unbounded.
        mask_cache: use the adaptive token-mask cache (False: every mask is computed by the
            reference vocabulary walk; for ablation and debugging).
        cross_grammar_cache: share token classifications across grammars through the pool.
        precompute_nodes: partial JIT: after compiling, classify this many parser states in
            document order (those a matcher reaches in its first tokens), then the 8 most
            expensive ones, on the process's background thread (newest grammar first; a
            matcher never waits for it). 0: build every state lazily, when a matcher first
            needs it; -1: build all of them during compilation (a positive value means -1
            for structural tags: see ``native/compiler/grammar_compiler.h``).
        repetition_compression_threshold: repetition state compression (XGrammar 2, section
            3.5): a repetition such as ``x{0,65536}`` whose expansion would hold more than this
            many copies of ``x`` is lowered as a counted loop plus a short explicit tail, so its
            compile time, FSM size and mask cost do not grow with the bound (the language stays
            exact). 0 or a negative value turns compression off (ablation).
        limits: resource limits and default timeout of every compilation (``CompileLimits()``
            defaults when None).
        cache_dir: a directory for the persistent compile cache (xg2_plugin/disk_cache.py),
            shared by processes; ``$XG2_CACHE_DIR`` when None, and off when neither is set.
        cache_dir_limit_bytes: bound on that directory's grammar files (oldest used go first);
            -1 means unbounded; ``$XG2_CACHE_DIR_LIMIT_BYTES`` applies with ``$XG2_CACHE_DIR``.
    """

    def __init__(
        self,
        tokenizer_info: TokenizerInfo,
        *,
        max_threads: int = 8,
        cache_enabled: bool = True,
        cache_limit_bytes: int = 1 << 30,
        mask_cache_limit_bytes: int = 512 << 20,
        mask_cache: bool = True,
        cross_grammar_cache: bool = True,
        precompute_nodes: int = 32,
        repetition_compression_threshold: int = 64,
        limits: Optional[CompileLimits] = None,
        cache_dir: Optional[Union[str, "os.PathLike[str]"]] = None,
        cache_dir_limit_bytes: int = _disk_cache.DEFAULT_LIMIT_BYTES,
    ) -> None:
        if not isinstance(tokenizer_info, TokenizerInfo):
            raise TypeError(f"tokenizer_info must be a TokenizerInfo, got {type(tokenizer_info).__name__}")
        if limits is None:
            limits = CompileLimits()
        if not isinstance(limits, CompileLimits):
            raise TypeError(f"limits must be a CompileLimits, got {type(limits).__name__}")
        self._limits = limits
        _check_init_arguments(max_threads=max_threads, cache_enabled=cache_enabled,
                              cache_limit_bytes=cache_limit_bytes, mask_cache_limit_bytes=mask_cache_limit_bytes,
                              mask_cache=mask_cache, cross_grammar_cache=cross_grammar_cache,
                              precompute_nodes=precompute_nodes,
                              repetition_compression_threshold=repetition_compression_threshold)
        self._tokenizer_info = tokenizer_info
        self._executor = ThreadPoolExecutor(max_workers=max_threads, thread_name_prefix="xg2-compile")
        self._cache_enabled = cache_enabled
        # Compiled grammars by request, and the compiles in flight (native/compiler/compile_cache.h).
        self._grammar_cache = _native.GrammarCache(cache_limit_bytes, cache_enabled)
        # (tag text, any_whitespace) -> _native.LoweredStructuralTag
        self._lowered_tags: "OrderedDict[tuple, Any]" = OrderedDict()
        # _native.LoweredStructuralTag -> its number in the grammar cache's keys
        self._lowered_tag_keys: "OrderedDict[Any, int]" = OrderedDict()
        self._lowered_tags_numbered = 0
        self._cache_key_prefixes: dict[tuple, str] = {}  # see _cache_key
        self._lock = threading.Lock()
        # Futures of asynchronous compiles, failed in a child of fork() (_after_fork_in_child).
        self._pending: "weakref.WeakSet[CompileFuture]" = weakref.WeakSet()
        self._max_threads = max_threads
        self._main_thread_executor: Optional[ThreadPoolExecutor] = None  # see _sync_route
        _COMPILERS.add(self)
        self._mask_pool = _native.MaskCachePool(mask_cache_limit_bytes)
        self._mask_cache = mask_cache
        self._cross_grammar_cache = cross_grammar_cache
        self._precompute_nodes = precompute_nodes
        self._repetition_compression_threshold = int(repetition_compression_threshold)
        # Vocabularies derived for grammars that name tokens with Token(id), keyed by the ids
        # (native/compiler/derived_vocabularies.h); filled by the native compiles.
        self._token_literal_vocabs = _native.DerivedVocabularies()
        # The source-to-grammar compiles (native/compiler/grammar_compiler.h).
        self._native = _native.GrammarCompiler(
            tokenizer_info._handle, self._mask_pool, self._token_literal_vocabs, mask_cache, cross_grammar_cache,
            precompute_nodes, self._repetition_compression_threshold, limits._to_native(),
        )
        self._disk_cache = (_disk_cache.DiskCache(cache_dir, cache_dir_limit_bytes) if cache_dir is not None
                            else _disk_cache.DiskCache.from_environment())
        # Every compile reaches the grammar cache through it: a synchronous request in one native
        # call, or the general path's compile and cache call (native/bindings/cached_compiler_bindings.cc).
        self._cached_compiler = _native.CachedCompiler(
            self._grammar_cache, self._token_literal_vocabs, cache_enabled, _DERIVED_VOCABS_UNCACHED, CompiledGrammar,
            tokenizer_info)

    @property
    def tokenizer_info(self) -> TokenizerInfo:
        return self._tokenizer_info

    @property
    def disk_cache(self) -> Optional["_disk_cache.DiskCache"]:
        """The persistent compile cache (``cache_dir``), or None."""
        return self._disk_cache

    @property
    def limits(self) -> CompileLimits:
        """The resource limits every compilation of this compiler runs under."""
        return self._limits

    # ---- synchronous API -------------------------------------------------------------

    def compile_json_schema(
        self,
        schema: SchemaLike,
        *,
        any_whitespace: bool = True,
        indent: Optional[int] = None,
        separators: Optional[tuple[str, str]] = None,
        strict_mode: bool = True,
        max_whitespace: Optional[int] = None,
        lenient: bool = False,
        timeout: Optional[float] = None,
        any_order: bool = False,
        any_key_spelling: bool = False,
        max_whitespace_cnt: Optional[int] = None,
    ) -> CompiledGrammar:
        """Compiles a JSON Schema (JSON text, dict, or pydantic model class).

        Keywords the engine cannot enforce raise ``UnsupportedSchemaError`` naming the keyword
        and its JSON pointer; with ``lenient=True`` they are ignored with a ``UserWarning``.
        ``strict_mode`` forbids undeclared properties unless ``additionalProperties`` allows
        them. ``indent`` / ``separators`` fix the formatting as ``json.dumps`` would;
        ``max_whitespace`` caps each whitespace gap when formatting is flexible
        (``max_whitespace_cnt`` is xgrammar's name for it).
        ``timeout`` (seconds) overrides ``limits.timeout_s``; past it the compile stops with
        ``CompilationTimeoutError``.
        ``any_order=True`` lets object members come in any order (by default declared
        properties follow the schema's order); each declared key still appears at most once
        and every required one exactly once. The grammar has one rule per subset of an
        object's declared properties, so an object with more than 8 declared properties
        raises ``UnsupportedSchemaError`` (with ``lenient=True`` it keeps the schema order and
        warns), as do min/maxProperties next to undeclared members.
        Member names are written in their canonical spelling (raw characters and short
        escapes, as models and ``json.dumps`` write them, and as the peers accept them);
        ``any_key_spelling=True`` also accepts every other JSON spelling of a name
        (``{"\\u0061": 1}`` is member ``a``) at about twice the grammar size.
        """
        if max_whitespace_cnt is not None:
            max_whitespace = _whitespace_cap(max_whitespace, max_whitespace_cnt)
        route = self._sync_route()
        if route > _ONE_CALL_WATCHING_SIGINT:
            return self.compile_json_schema_async(
                schema, any_whitespace=any_whitespace, indent=indent, separators=separators,
                strict_mode=strict_mode, max_whitespace=max_whitespace, lenient=lenient,
                timeout=timeout, any_order=any_order, any_key_spelling=any_key_spelling, _run_inline=True,
            ).result()
        # The checks and key of compile_json_schema_async and _submit, without their frames: a
        # request pays each Python frame cold.
        max_bytes = self._limits.max_input_bytes
        if type(schema) is str and schema.isascii() and len(schema) <= max_bytes:
            text = schema  # what _check_text accepts without a copy
        else:
            text = _schema_to_text(schema, max_bytes)
        if separators is not None:
            separators = _separators_pair(separators)
        if timeout is None:
            timeout = self._limits.timeout_s
        else:
            _check_timeout(timeout, "timeout")
        any_key_spelling = bool(any_key_spelling)
        options = ("json_schema", any_whitespace, indent, separators, strict_mode, max_whitespace, lenient,
                   any_order, any_key_spelling)
        cache_key = (self._cache_key_prefixes.get(options) or self._cache_key_prefix(options)) + text
        cached = self._grammar_cache.find(cache_key)  # a hit first, as _submit looks
        if cached is not None:
            return cached
        return self._compile_in_one_call(
            "json_schema", cache_key, (text,) + options[1:], timeout, route == _ONE_CALL_WATCHING_SIGINT, 3)

    def compile_builtin_json_grammar(self, *, timeout: Optional[float] = None) -> CompiledGrammar:
        """Compiles the grammar of any JSON value."""
        return self.compile_builtin_json_grammar_async(timeout=timeout, _run_inline=True).result()

    def compile_grammar(
        self, ebnf: Union[str, Grammar], root_rule_name: str = "root", *, timeout: Optional[float] = None
    ) -> CompiledGrammar:
        """Compiles an EBNF grammar (GBNF / xgrammar dialect, see docs/ebnf.md), or a
        ``Grammar`` (from its source, as the matching ``compile_*`` call would; its root is
        its own, so ``root_rule_name`` must be left at ``"root"``).
        ``timeout`` (seconds) overrides ``limits.timeout_s``."""
        if isinstance(ebnf, Grammar):
            _check_grammar_root(root_rule_name)
            return ebnf._compile(self, timeout, asynchronous=False)
        return self.compile_grammar_async(ebnf, root_rule_name, timeout=timeout, _run_inline=True).result()

    def compile_regex(self, pattern: str, *, timeout: Optional[float] = None) -> CompiledGrammar:
        """Compiles a regex; the whole output must match it. ``timeout`` as for compile_grammar."""
        return self.compile_regex_async(pattern, timeout=timeout, _run_inline=True).result()

    def compile_structural_tag(
        self, structural_tag: Any, triggers: Optional[Sequence[str]] = None, *, any_whitespace: bool = True,
        timeout: Optional[float] = None,
    ) -> CompiledGrammar:
        """Compiles a structural tag (xgrammar's format: JSON text (str or bytes), dict or
        ``structural_tag.StructuralTag``; also the legacy ``{"structures", "triggers"}`` form,
        and xgrammar's deprecated ``(tags, triggers)`` pair of ``StructuralTagItem`` list and
        trigger list, which warns with ``DeprecationWarning``).
        JSON text goes to the native frontend as is (no Python-side validation).
        See ``xg2_plugin.structural_tag`` for the formats and what is unsupported.
        ``any_whitespace=False`` applies to the JSON of every ``json_schema`` format, as in
        ``compile_json_schema`` (vLLM's ``disable_any_whitespace``). ``timeout`` bounds the final
        grammar compilation (the tag's schemas convert eagerly)."""
        if triggers is not None:
            structural_tag = _legacy_pair(structural_tag, triggers)
        route = self._sync_route()
        if route > _ONE_CALL_WATCHING_SIGINT:
            return self.compile_structural_tag_async(
                structural_tag, any_whitespace=any_whitespace, timeout=timeout, _run_inline=True
            ).result()
        # What compile_structural_tag_async and _submit do, without their frames (engines send a
        # tag with every request that has tools).
        _text, lowered = self._lowered_tag(structural_tag, any_whitespace)
        if timeout is None:
            timeout = self._limits.timeout_s
        else:
            _check_timeout(timeout, "timeout")
        return self._compile_in_one_call(
            "structural_tag", self._cache_key(("structural_tag", lowered)), (lowered,), timeout,
            route == _ONE_CALL_WATCHING_SIGINT, 3)

    def compile_lark(
        self, lark_string: str, *, named_grammars: Optional[dict] = None, timeout: Optional[float] = None
    ) -> CompiledGrammar:
        """Compiles a Lark grammar (rooted at its ``start`` rule; dialect and the llguidance
        extensions in docs/lark.md). Its language is the grammar's context-free language, as
        Lark's Earley parser reads it. ``named_grammars`` (xgrammar's ``@name`` references) is
        not supported: only None or an empty dict. ``timeout`` as for compile_grammar."""
        return self.compile_lark_async(
            lark_string, named_grammars=named_grammars, timeout=timeout, _run_inline=True
        ).result()

    def compile_choice(self, choices: Sequence[str], *, timeout: Optional[float] = None) -> CompiledGrammar:
        """Compiles a grammar whose output is exactly one of ``choices``."""
        return self.compile_choice_async(choices, timeout=timeout, _run_inline=True).result()

    # ---- asynchronous API ------------------------------------------------------------

    def compile_json_schema_async(
        self,
        schema: SchemaLike,
        *,
        any_whitespace: bool = True,
        indent: Optional[int] = None,
        separators: Optional[tuple[str, str]] = None,
        strict_mode: bool = True,
        max_whitespace: Optional[int] = None,
        lenient: bool = False,
        timeout: Optional[float] = None,
        any_order: bool = False,
        any_key_spelling: bool = False,
        max_whitespace_cnt: Optional[int] = None,
        _run_inline: bool = False,
    ) -> "Future[CompiledGrammar]":
        """Like :meth:`compile_json_schema`, returning a ``concurrent.futures.Future``
        (``cancel()`` stops the compile even once it runs; see ``CompileFuture``)."""
        if max_whitespace_cnt is not None:
            max_whitespace = _whitespace_cap(max_whitespace, max_whitespace_cnt)
        text = _schema_to_text(schema, self._limits.max_input_bytes)
        if separators is not None:
            separators = _separators_pair(separators)
        key = ("json_schema", text, any_whitespace, indent, separators, strict_mode, max_whitespace, lenient,
               any_order, bool(any_key_spelling))
        return self._submit(key, (text,) + key[2:], _run_inline, timeout)

    def compile_builtin_json_grammar_async(
        self, *, timeout: Optional[float] = None, _run_inline: bool = False
    ) -> "Future[CompiledGrammar]":
        """Like :meth:`compile_builtin_json_grammar`, returning a future."""
        return self._submit(("builtin_json",), (), _run_inline, timeout)

    def compile_grammar_async(
        self, ebnf: Union[str, Grammar], root_rule_name: str = "root", *, timeout: Optional[float] = None,
        _run_inline: bool = False,
    ) -> "Future[CompiledGrammar]":
        """Like :meth:`compile_grammar`, returning a future."""
        if isinstance(ebnf, Grammar):
            _check_grammar_root(root_rule_name)
            return ebnf._compile(self, timeout, asynchronous=True)
        _check_text(ebnf, "ebnf", self._limits.max_input_bytes)
        _check_text(root_rule_name, "root_rule_name", self._limits.max_input_bytes)
        return self._submit(("ebnf", ebnf, root_rule_name), (ebnf, root_rule_name), _run_inline, timeout)

    def compile_regex_async(
        self, pattern: str, *, timeout: Optional[float] = None, _run_inline: bool = False
    ) -> "Future[CompiledGrammar]":
        """Like :meth:`compile_regex`, returning a future."""
        _check_text(pattern, "pattern", self._limits.max_input_bytes)
        return self._submit(("regex", pattern), (pattern,), _run_inline, timeout)

    def compile_lark_async(
        self, lark_string: str, *, named_grammars: Optional[dict] = None, timeout: Optional[float] = None,
        _run_inline: bool = False,
    ) -> "Future[CompiledGrammar]":
        """Like :meth:`compile_lark`, returning a future."""
        _check_text(lark_string, "lark_string", self._limits.max_input_bytes)
        if named_grammars:
            raise _native.InvalidArgumentError("named_grammars (@name references) are not supported by compile_lark")
        return self._submit(("lark", lark_string), (lark_string,), _run_inline, timeout)

    def compile_structural_tag_async(
        self,
        structural_tag: Any,
        triggers: Optional[Sequence[str]] = None,
        *,
        any_whitespace: bool = True,
        timeout: Optional[float] = None,
        _run_inline: bool = False,
    ) -> "Future[CompiledGrammar]":
        """Like :meth:`compile_structural_tag`, returning a future. Validation errors
        (``StructuralTagError``, ``UnsupportedSchemaError``) are raised here, not deferred."""
        if triggers is not None:
            structural_tag = _legacy_pair(structural_tag, triggers)
        text, lowered = self._lowered_tag(structural_tag, any_whitespace)
        # The disk cache names a grammar by the repr of its key: the tag's text.
        return self._submit(("structural_tag", lowered), (lowered,), _run_inline, timeout,
                            disk_key=("structural_tag", text, any_whitespace))

    def _lowered_tag(self, structural_tag: Any, any_whitespace: bool) -> tuple[Union[str, bytes], Any]:
        """(the tag's JSON text, the tag validated and lowered). The grammar is cached under its
        lowered form (tags spelled differently share it); the lowering itself (milliseconds for a
        large tool set) is remembered per tag text, so a repeated tool set skips it too. A tag
        seen before was already validated."""
        text = _structural_tag_json(structural_tag, self._limits.max_input_bytes)
        lowered_key = (text, any_whitespace)
        with self._lock:
            lowered = self._lowered_tags.get(lowered_key)
            if lowered is not None:
                self._lowered_tags.move_to_end(lowered_key)
        if lowered is None:
            lowered = self._native.lower_structural_tag(text, any_whitespace)
            if self._cache_enabled:
                with self._lock:
                    self._lowered_tags[lowered_key] = lowered
                    while len(self._lowered_tags) > _LOWERED_TAGS_KEPT:
                        self._lowered_tags.popitem(last=False)
        return text, lowered

    def compile_choice_async(
        self, choices: Sequence[str], *, timeout: Optional[float] = None, _run_inline: bool = False
    ) -> "Future[CompiledGrammar]":
        """Like :meth:`compile_choice`, returning a future."""
        if isinstance(choices, str) or not all(isinstance(c, str) for c in choices):
            raise TypeError("choices must be a sequence of str")
        if len(choices) == 0:
            raise ValueError("choices must not be empty")
        # The size limit applies to the alternatives as the grammar spells them.
        _check_text(" | ".join(ebnf_string_literal(c) for c in choices), "choices", self._limits.max_input_bytes)
        return self._submit(("choice", tuple(choices)), (list(choices),), _run_inline, timeout)

    # ---- cache -------------------------------------------------------------------------

    @property
    def cache_size_bytes(self) -> int:
        """Bytes held by cached compiled grammars."""
        return int(self._grammar_cache.stats["bytes"])

    def get_cache_size_bytes(self) -> int:
        """:attr:`cache_size_bytes` (xgrammar's name)."""
        return int(self._grammar_cache.stats["bytes"])

    @property
    def cache_limit_bytes(self) -> int:
        """The bound on :attr:`cache_size_bytes` given at construction (-1: unbounded)."""
        return int(self._grammar_cache.stats["limit_bytes"])

    @property
    def cache_stats(self) -> dict[str, int]:
        """Compiled-grammar cache: ``bytes`` held, grammar ``entries``, ``derived_vocabularies``
        (of grammars naming tokens with Token(id); counted in ``bytes``), ``evictions`` (LRU,
        past ``cache_limit_bytes``), ``limit_bytes``, and the compile requests since the compiler
        was made: ``hits`` (served by the cache or an identical compile already in flight) and
        ``misses`` (compiles started)."""
        stats = self._grammar_cache.stats
        return {"bytes": stats["bytes"], "entries": stats["entries"],
                "derived_vocabularies": stats["shared_parts"], "evictions": stats["evictions"],
                "limit_bytes": stats["limit_bytes"], "hits": stats["hits"], "misses": stats["misses"]}

    @property
    def mask_cache_size_bytes(self) -> int:
        """Bytes held by the cross-grammar token-classification pool."""
        return int(self._mask_pool.bytes)

    @property
    def mask_cache_stats(self) -> dict[str, int]:
        """Entries, bytes and node lookups of the cross-grammar pool.

        ``perfect_hits``: same FSM and same lookahead (reused as is); ``partial_hits``: same FSM,
        other lookahead (decided tokens reused, uncertain ones re-checked), or the same FSM within
        16 bytes of the node (``short_token_hits``, a part of ``partial_hits``: the verdicts on
        tokens of at most 16 bytes reused, the longer tokens walked); ``hits`` is the sum of
        perfect and partial hits; ``misses``: classified from scratch; ``bypasses``: nodes whose
        vocabulary walk is cheaper than the pool's keys and lookups (a position inside a literal, a
        JSON string body), classified straight away and kept by their grammar only. ``entries``
        counts keys (an entry is stored under an FSM-only and an FSM-plus-lookahead key, in two
        key schemes); ``bytes`` counts each stored object once.
        """
        pool = self._mask_pool
        return {
            "entries": len(pool),
            "bytes": int(pool.bytes),
            "hits": int(pool.hits),
            "perfect_hits": int(pool.perfect_hits),
            "partial_hits": int(pool.partial_hits),
            "short_token_hits": int(pool.short_token_hits),
            "misses": int(pool.misses),
            "bypasses": int(pool.bypasses),
        }

    def clear_cache(self) -> None:
        """Drops every cached grammar, derived vocabulary and the shared token classifications."""
        self._grammar_cache.clear()
        with self._lock:
            self._lowered_tags.clear()
            self._lowered_tag_keys.clear()
            derived = self._token_literal_vocabs.values()
            self._token_literal_vocabs.clear()
        self._mask_pool.clear()
        for _vocab, pool in derived:  # pools still held by grammars that matchers use
            if pool is not None:
                pool.clear()

    def _sync_route(self) -> int:
        """How a synchronous compile runs on this thread: the one place that decides it.

        In one native call (``_ONE_CALL``) unless the disk cache (whose build is Python) is on;
        on Python's main thread that call watches for Ctrl-C itself (``_ONE_CALL_WATCHING_SIGINT``:
        Python cannot raise KeyboardInterrupt while native code runs there). With the disk cache,
        the general path runs the same steps on this thread (``_shared_compile.call`` or
        ``call_on_main_thread``). A main thread whose application installed a SIGINT handler of
        its own hands the compile to a helper thread and waits interruptibly, so that Python runs
        the handler as it decides (``_ON_HELPER_THREAD``); one that ignores SIGINT, or leaves it
        to the operating system, compiles as a worker thread does."""
        if _thread.get_ident() != _main_thread_ident:
            return _ONE_CALL if self._disk_cache is None else _ON_THIS_THREAD
        # (_signal.getsignal: signal.getsignal first tries to make a function handler a
        # Handlers member, raising and catching ValueError, on every synchronous compile.)
        handler = _signal.getsignal(_signal.SIGINT)
        if handler is _signal.default_int_handler:
            return _ONE_CALL_WATCHING_SIGINT if self._disk_cache is None else _ON_THIS_THREAD_WATCHING_SIGINT
        if handler is _signal.SIG_IGN or handler is _signal.SIG_DFL:
            # Ctrl-C is ignored, or ends the process without Python: nothing to watch or run.
            return _ONE_CALL if self._disk_cache is None else _ON_THIS_THREAD
        return _ON_HELPER_THREAD

    def _compile_in_one_call(self, kind: str, cache_key: str, args: tuple, timeout: Optional[float],
                             on_main_thread: bool, stacklevel: int) -> CompiledGrammar:
        """A synchronous request in one native call (``_ONE_CALL`` routes); ignored JSON Schema
        keywords warn ``stacklevel`` frames up (1: here)."""
        began = 0.0 if on_main_thread else time.monotonic()
        try:
            grammar, ignored = self._cached_compiler.compile(
                self._native, kind, cache_key, args, timeout, on_main_thread)
        except _native.CompilationTimeoutError:
            raise _calls.timeout_error(timeout) from None
        finally:
            if not on_main_thread:
                _heap_trim.after_compile(time.monotonic() - began)
        if ignored:
            _warn_ignored(ignored, stacklevel)
        return grammar

    def _submit(
        self, key: tuple, args: tuple, run_inline: bool, timeout: Optional[float], disk_key: Optional[tuple] = None,
    ) -> "Future[CompiledGrammar]":
        """``key``: the request (kind, source, options), which names it in the grammar cache;
        ``args``: the arguments of its native compile (``native/bindings/compile_requests.h``);
        ``disk_key``: its name in the disk cache, when ``key`` has no stable repr.
        ``run_inline``: a synchronous caller, which only reads ``result()``."""
        if timeout is None:
            timeout = self._limits.timeout_s
        else:
            _check_timeout(timeout, "timeout")
        cache_key = self._cache_key(key)
        # A hit first, for every route: one native call, and no routing (the one-call path
        # looks again, which costs a miss less than the routing would cost a hit).
        cached = self._grammar_cache.find(cache_key)
        if cached is not None:
            if run_inline:
                return _Ready(cached)
            done: Future = Future()
            done.set_result(cached)
            return done
        kind = key[0]
        route = self._sync_route() if run_inline else _ASYNC
        if route <= _ONE_CALL_WATCHING_SIGINT:
            # warnings: _compile_in_one_call, here, compile_*_async, compile_*, its caller
            return _Ready(self._compile_in_one_call(
                kind, cache_key, args, timeout, route == _ONE_CALL_WATCHING_SIGINT, 5))
        build = self._build(kind, args)
        if self._disk_cache is not None:
            build = self._disk_cache.cached_build(self, key if disk_key is None else disk_key, build)
        entry = _trimmed(build)
        cache = self._cached_compiler
        if route == _ON_THIS_THREAD:
            return _Ready(_calls.call(cache, cache_key, entry, timeout))
        if route == _ON_THIS_THREAD_WATCHING_SIGINT:
            return _Ready(_calls.call_on_main_thread(cache, cache_key, entry, timeout))
        future = CompileFuture(timeout, cancel_on_interrupt=route == _ON_HELPER_THREAD)
        self._pending.add(future)
        executor = self._main_thread_pool() if route == _ON_HELPER_THREAD else self._executor
        executor.submit(_calls.run, cache, cache_key, entry, future)
        return future

    def _build(self, kind: str, args: tuple) -> Callable[[Any], CompiledGrammar]:
        """The general path's compile of a request, outside the cache."""

        def build(token: Any) -> CompiledGrammar:
            grammar, ignored = self._cached_compiler.build(self._native, kind, args, token)
            if ignored:
                # warnings: build, _trimmed's entry, _shared_compile.call, _submit,
                # compile_json_schema_async, compile_json_schema, its caller
                _warn_ignored(ignored, 7)
            return grammar

        return build

    def _cache_key(self, key: tuple) -> str:
        """The grammar cache's key of a request: its kind and options as their repr, then its
        source text as is (the repr has no NUL character, so the first one ends it). A lowered
        structural tag (compared by its grammar's structure) is keyed by its number."""
        source = key[1] if len(key) > 1 else ""
        if isinstance(source, str):
            options = (key[0],) + key[2:]
            return (self._cache_key_prefixes.get(options) or self._cache_key_prefix(options)) + source
        if key[0] != "structural_tag":
            return repr(key)
        with self._lock:
            number = self._lowered_tag_keys.get(source)
            if number is None:
                self._lowered_tags_numbered += 1
                number = self._lowered_tag_keys[source] = self._lowered_tags_numbered
                while len(self._lowered_tag_keys) > _LOWERED_TAG_KEYS_KEPT:
                    self._lowered_tag_keys.popitem(last=False)
            else:
                self._lowered_tag_keys.move_to_end(source)
        return f"('structural_tag', {number})"

    def _cache_key_prefix(self, options: tuple) -> str:
        """The key's start for a request kind and options: their repr, remembered (it cost more
        than the rest of a cache hit)."""
        prefix = self._cache_key_prefixes.get(options)
        if prefix is None:
            if len(self._cache_key_prefixes) >= _CACHE_KEY_PREFIXES_KEPT:
                self._cache_key_prefixes.clear()
            prefix = self._cache_key_prefixes[options] = repr(options) + "\0"
        return prefix

    def _main_thread_pool(self) -> ThreadPoolExecutor:
        with self._lock:
            if self._main_thread_executor is None:
                self._main_thread_executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="xg2-sync")
            return self._main_thread_executor

    def _after_fork_in_child(self) -> None:
        """The parent's threads do not exist in a child of fork(): fresh executors and lock
        (the parent's lock may have been held by one of them), the parent's in-flight compiles
        leave the grammar cache, and the futures waiting for them fail."""
        self._lock = threading.Lock()
        self._executor = ThreadPoolExecutor(max_workers=self._max_threads, thread_name_prefix="xg2-compile")
        self._main_thread_executor = None
        self._grammar_cache.reset_after_fork()
        pending, self._pending = list(self._pending), weakref.WeakSet()
        for future in pending:
            future.fail_in_forked_child()


def _trimmed(build: Callable[[Any], CompiledGrammar]) -> Callable[[Any], CompiledGrammar]:
    """``build`` followed by the heap trim after a long compile (``_heap_trim``)."""

    def entry(token: Any) -> CompiledGrammar:
        began = time.monotonic()
        try:
            return build(token)
        finally:
            _heap_trim.after_compile(time.monotonic() - began)

    return entry


def _warn_ignored(messages: Sequence[str], stacklevel: int) -> None:
    """Warns of each JSON Schema keyword a lenient compile ignored, ``stacklevel`` frames up
    from the caller (1: the caller)."""
    for message in messages:
        warnings.warn(f"JSON Schema keyword ignored (lenient): {message}", UserWarning, stacklevel=stacklevel + 1)


def _structural_tag_json(value: Any, max_bytes: int) -> Union[str, bytes]:
    """``structural_tag.structural_tag_json`` (imported at the first call: that module imports
    this one)."""
    global _structural_tag_json
    from .structural_tag import structural_tag_json

    _structural_tag_json = structural_tag_json
    return structural_tag_json(value, max_bytes)


def _compilers_after_fork_in_child() -> None:
    global _main_thread_ident
    _main_thread_ident = threading.main_thread().ident  # threading's own fork handler ran first
    for compiler in list(_COMPILERS):
        compiler._after_fork_in_child()


os.register_at_fork(after_in_child=_compilers_after_fork_in_child)
