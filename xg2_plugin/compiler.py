"""Grammar compilation: JSON Schema, EBNF, regex and choice lists into compiled grammars.

A ``GrammarCompiler`` belongs to one tokenizer. It caches compiled grammars (LRU, bounded in
bytes) and shares one in-flight compilation between identical concurrent requests. All native
work runs with the GIL released, so the async variants compile in parallel.
"""

from __future__ import annotations

import json
import threading
import warnings
from collections import OrderedDict
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Callable, Optional, Sequence, Union

from . import _native
from .tokenizer_info import TokenizerInfo

__all__ = ["CompiledGrammar", "GrammarCompiler", "ebnf_string_literal"]

SchemaLike = Union[str, dict, type]


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
    def ebnf(self) -> str:
        """The EBNF the grammar was built from (frontends translate into it)."""
        return self._handle.ebnf

    @property
    def memory_size_bytes(self) -> int:
        """Approximate bytes held by the compiled grammar."""
        return int(self._handle.memory_bytes)

    def __repr__(self) -> str:
        return f"CompiledGrammar({self._source}, rules={self._handle.num_rules}, nodes={self._handle.num_nodes})"


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


def _schema_to_text(schema: SchemaLike) -> str:
    if isinstance(schema, str):
        return schema
    if isinstance(schema, dict):
        return json.dumps(schema)
    if isinstance(schema, type) and hasattr(schema, "model_json_schema"):
        return json.dumps(schema.model_json_schema())
    raise TypeError(
        f"schema must be a JSON string, a dict or a pydantic model class, got {type(schema).__name__}"
    )


class GrammarCompiler:
    """Compiles grammars for one tokenizer, with a shared byte-bounded cache.

    Args:
        tokenizer_info: the model's vocabulary.
        max_threads: threads used for asynchronous compilation.
        cache_enabled: keep compiled grammars for reuse by identical requests.
        cache_limit_bytes: LRU bound on cached grammars; -1 means unbounded.
        mask_cache_limit_bytes: LRU bound on the token-classification pool shared by every
            grammar of this compiler (the cross-grammar mask cache); -1 means unbounded.
        mask_cache: use the adaptive token-mask cache (False: every mask is computed by the
            reference vocabulary walk; for ablation and debugging).
        cross_grammar_cache: share token classifications across grammars through the pool.
        precompute_nodes: partial JIT: after compiling, classify this many of the most
            expensive parser states on a background thread (0: build every state lazily,
            when a matcher first needs it; -1: build all of them during compilation).
    """

    def __init__(
        self,
        tokenizer_info: TokenizerInfo,
        *,
        max_threads: int = 8,
        cache_enabled: bool = True,
        cache_limit_bytes: int = -1,
        mask_cache_limit_bytes: int = 512 << 20,
        mask_cache: bool = True,
        cross_grammar_cache: bool = True,
        precompute_nodes: int = 8,
    ) -> None:
        if not isinstance(tokenizer_info, TokenizerInfo):
            raise TypeError(f"tokenizer_info must be a TokenizerInfo, got {type(tokenizer_info).__name__}")
        if max_threads < 1:
            raise ValueError(f"max_threads must be >= 1, got {max_threads}")
        self._tokenizer_info = tokenizer_info
        self._executor = ThreadPoolExecutor(max_workers=max_threads, thread_name_prefix="xg2-compile")
        self._cache_enabled = cache_enabled
        self._cache_limit_bytes = cache_limit_bytes
        self._cache: "OrderedDict[tuple, CompiledGrammar]" = OrderedDict()
        self._cache_bytes = 0
        self._in_flight: dict[tuple, Future] = {}
        self._lock = threading.Lock()
        self._mask_pool = _native.MaskCachePool(mask_cache_limit_bytes)
        self._mask_cache = mask_cache
        self._cross_grammar_cache = cross_grammar_cache
        self._precompute_nodes = precompute_nodes
        # Vocabularies derived for grammars that name tokens with Token(id), keyed by the ids
        # (native/tokenizer/token_literals.h); filled by the native compile under the GIL.
        self._token_literal_vocabs: dict = {}

    @property
    def tokenizer_info(self) -> TokenizerInfo:
        return self._tokenizer_info

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
    ) -> CompiledGrammar:
        """Compiles a JSON Schema (JSON text, dict, or pydantic model class).

        Keywords the engine cannot enforce raise ``UnsupportedSchemaError`` naming the keyword
        and its JSON pointer; with ``lenient=True`` they are ignored with a ``UserWarning``.
        ``strict_mode`` forbids undeclared properties unless ``additionalProperties`` allows
        them. ``indent`` / ``separators`` fix the formatting as ``json.dumps`` would;
        ``max_whitespace`` caps each whitespace gap when formatting is flexible.
        """
        return self.compile_json_schema_async(
            schema, any_whitespace=any_whitespace, indent=indent, separators=separators,
            strict_mode=strict_mode, max_whitespace=max_whitespace, lenient=lenient,
            _run_inline=True,
        ).result()

    def compile_builtin_json_grammar(self) -> CompiledGrammar:
        """Compiles the grammar of any JSON value."""
        return self.compile_builtin_json_grammar_async(_run_inline=True).result()

    def compile_grammar(self, ebnf: str, root_rule_name: str = "root") -> CompiledGrammar:
        """Compiles an EBNF grammar (GBNF / xgrammar dialect, see docs/ebnf.md)."""
        return self.compile_grammar_async(ebnf, root_rule_name, _run_inline=True).result()

    def compile_regex(self, pattern: str) -> CompiledGrammar:
        """Compiles a regex; the whole output must match it."""
        return self.compile_regex_async(pattern, _run_inline=True).result()

    def compile_structural_tag(self, structural_tag: Any, *, any_whitespace: bool = True) -> CompiledGrammar:
        """Compiles a structural tag (xgrammar's format: JSON text, dict or
        ``structural_tag.StructuralTag``; also the legacy ``{"structures", "triggers"}`` form).
        See ``xg2_plugin.structural_tag`` for the formats and what is unsupported.
        ``any_whitespace=False`` applies to the JSON of every ``json_schema`` format, as in
        ``compile_json_schema`` (vLLM's ``disable_any_whitespace``)."""
        return self.compile_structural_tag_async(structural_tag, any_whitespace=any_whitespace, _run_inline=True).result()

    def compile_choice(self, choices: Sequence[str]) -> CompiledGrammar:
        """Compiles a grammar whose output is exactly one of ``choices``."""
        return self.compile_choice_async(choices, _run_inline=True).result()

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
        _run_inline: bool = False,
    ) -> "Future[CompiledGrammar]":
        """Like :meth:`compile_json_schema`, returning a ``concurrent.futures.Future``."""
        text = _schema_to_text(schema)
        if separators is not None:
            separators = (str(separators[0]), str(separators[1]))
        key = ("json_schema", text, any_whitespace, indent, separators, strict_mode, max_whitespace, lenient)

        def build() -> CompiledGrammar:
            ebnf, warns = _native._json_schema_to_ebnf(
                text, any_whitespace=any_whitespace, indent=indent, separators=separators,
                strict_mode=strict_mode, max_whitespace=max_whitespace, lenient=lenient,
            )
            for message in warns:
                warnings.warn(f"JSON Schema keyword ignored (lenient): {message}", UserWarning, stacklevel=4)
            return self._compile_ebnf_now(ebnf, "root", "json_schema")

        return self._submit(key, build, _run_inline)

    def compile_builtin_json_grammar_async(self, *, _run_inline: bool = False) -> "Future[CompiledGrammar]":
        """Like :meth:`compile_builtin_json_grammar`, returning a future."""
        return self._submit(
            ("builtin_json",),
            lambda: self._compile_ebnf_now(_native._builtin_json_ebnf(), "root", "builtin_json"),
            _run_inline,
        )

    def compile_grammar_async(
        self, ebnf: str, root_rule_name: str = "root", *, _run_inline: bool = False
    ) -> "Future[CompiledGrammar]":
        """Like :meth:`compile_grammar`, returning a future."""
        if not isinstance(ebnf, str):
            raise TypeError(f"ebnf must be a str, got {type(ebnf).__name__}")
        return self._submit(
            ("ebnf", ebnf, root_rule_name),
            lambda: self._compile_ebnf_now(ebnf, root_rule_name, "ebnf"),
            _run_inline,
        )

    def compile_regex_async(self, pattern: str, *, _run_inline: bool = False) -> "Future[CompiledGrammar]":
        """Like :meth:`compile_regex`, returning a future."""
        if not isinstance(pattern, str):
            raise TypeError(f"pattern must be a str, got {type(pattern).__name__}")
        return self._submit(
            ("regex", pattern),
            lambda: self._compile_ebnf_now("root ::= " + _native._regex_to_ebnf(pattern), "root", "regex"),
            _run_inline,
        )

    def compile_structural_tag_async(
        self, structural_tag: Any, *, any_whitespace: bool = True, _run_inline: bool = False
    ) -> "Future[CompiledGrammar]":
        """Like :meth:`compile_structural_tag`, returning a future. Validation errors
        (``StructuralTagError``, ``UnsupportedSchemaError``) are raised here, not deferred."""
        from .structural_tag import parse_structural_tag, structural_tag_to_ebnf

        tag = parse_structural_tag(structural_tag)
        ebnf = structural_tag_to_ebnf(tag, self._tokenizer_info, any_whitespace=any_whitespace)
        return self._submit(
            ("ebnf", ebnf, "root"),
            lambda: self._compile_ebnf_now(ebnf, "root", "structural_tag"),
            _run_inline,
        )

    def compile_choice_async(self, choices: Sequence[str], *, _run_inline: bool = False) -> "Future[CompiledGrammar]":
        """Like :meth:`compile_choice`, returning a future."""
        if isinstance(choices, str) or not all(isinstance(c, str) for c in choices):
            raise TypeError("choices must be a sequence of str")
        if len(choices) == 0:
            raise ValueError("choices must not be empty")
        body = " | ".join(ebnf_string_literal(c) for c in choices)
        return self._submit(
            ("choice", tuple(choices)),
            lambda: self._compile_ebnf_now("root ::= " + body, "root", "choice"),
            _run_inline,
        )

    # ---- cache -------------------------------------------------------------------------

    @property
    def cache_size_bytes(self) -> int:
        """Bytes held by cached compiled grammars."""
        with self._lock:
            return self._cache_bytes

    @property
    def mask_cache_size_bytes(self) -> int:
        """Bytes held by the cross-grammar token-classification pool."""
        return int(self._mask_pool.bytes)

    @property
    def mask_cache_stats(self) -> dict[str, int]:
        """Entries, bytes, hits and misses of the cross-grammar pool."""
        pool = self._mask_pool
        return {"entries": len(pool), "bytes": int(pool.bytes), "hits": int(pool.hits), "misses": int(pool.misses)}

    def clear_cache(self) -> None:
        """Drops every cached grammar and the shared token classifications."""
        with self._lock:
            self._cache.clear()
            self._cache_bytes = 0
        self._mask_pool.clear()
        for _vocab, pool in list(self._token_literal_vocabs.values()):  # derived vocabularies' pools
            if pool is not None:
                pool.clear()

    def _compile_ebnf_now(self, ebnf: str, root_rule_name: str, kind: str) -> CompiledGrammar:
        handle = _native.compile_ebnf_with_token_literals(
            self._tokenizer_info._handle, ebnf, root_rule_name, self._token_literal_vocabs,
            self._mask_pool, self._mask_cache, self._cross_grammar_cache, self._precompute_nodes,
        )
        return CompiledGrammar(handle, self._tokenizer_info, kind)

    def _submit(self, key: tuple, build: Callable[[], CompiledGrammar], run_inline: bool) -> "Future[CompiledGrammar]":
        with self._lock:
            if self._cache_enabled and key in self._cache:
                self._cache.move_to_end(key)
                done: Future = Future()
                done.set_result(self._cache[key])
                return done
            in_flight = self._in_flight.get(key)
            if in_flight is not None:
                return in_flight
            future: Future = Future()
            self._in_flight[key] = future

        def run() -> None:
            if not future.set_running_or_notify_cancel():
                self._forget(key)
                return
            try:
                result = build()
            except BaseException as error:  # delivered to every waiter of the future
                self._forget(key)
                future.set_exception(error)
                return
            self._store(key, result)
            future.set_result(result)

        if run_inline:
            run()
        else:
            self._executor.submit(run)
        return future

    def _forget(self, key: tuple) -> None:
        with self._lock:
            self._in_flight.pop(key, None)

    def _store(self, key: tuple, grammar: CompiledGrammar) -> None:
        with self._lock:
            self._in_flight.pop(key, None)
            if not self._cache_enabled:
                return
            size = grammar.memory_size_bytes
            if 0 <= self._cache_limit_bytes < size:
                return
            self._cache[key] = grammar
            self._cache_bytes += size
            while 0 <= self._cache_limit_bytes < self._cache_bytes and self._cache:
                _, evicted = self._cache.popitem(last=False)
                self._cache_bytes -= evicted.memory_size_bytes
