"""xg2 as a vLLM structured-output backend.

:class:`XG2Backend` builds one :class:`~xg2_plugin.TokenizerInfo` from vLLM's tokenizer and
compiles every request type through one :class:`~xg2_plugin.GrammarCompiler` (and its
shared cache); :class:`XG2Grammar` wraps the per-request :class:`~xg2_plugin.GrammarMatcher`.
:func:`check_request` is the frontend validation that turns a bad grammar into a 400 error
before the request reaches the engine core.

The bitmask is vLLM's own layout (int32 CPU tensor, one row per sequence and draft position);
vLLM copies it to the device and applies it with its kernels.
"""

from __future__ import annotations

import contextvars
import json
import logging
import os
import time
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Optional

import torch
from vllm.sampling_params import StructuredOutputsParams
from vllm.utils.mistral import is_mistral_tokenizer
from vllm.v1.structured_output.backend_types import (
    StructuredOutputBackend,
    StructuredOutputGrammar,
    StructuredOutputOptions,
)
from vllm.v1.structured_output.request import get_structured_output_key

from xg2_plugin import (
    CompiledGrammar,
    CompileLimits,
    GrammarCompiler,
    GrammarMatcher,
    TokenizerInfo,
    VocabType,
    allocate_token_bitmask,
)
from xg2_plugin.lark import looks_like_lark
from xg2_plugin.stats import GRAMMAR_STATS

from ..lenient import LenientSchemas
from ..options import AdapterSettings, JsonLayout, cap_tag_whitespace, whitespace_from_pattern

__all__ = ["XG2Backend", "XG2Grammar", "check_request", "request_layout", "tokenizer_info_from_vllm"]

logger = logging.getLogger("xg2_plugin.adapters.vllm")

REQUEST_PARAMS: "contextvars.ContextVar[Optional[StructuredOutputsParams]]" = contextvars.ContextVar(
    "xg2_vllm_request_params", default=None
)
"""The structured-output parameters of the request being compiled on this thread.

vLLM hands a backend only the request's (type, spec) key; the engine-core hook in ``_patch``
sets this around vLLM's own ``_create_grammar`` so the request's own options reach
:meth:`XG2Backend.compile_grammar`."""

_CACHE_LIMIT_BYTES = int(os.environ.get("XG2_VLLM_CACHE_MB", "512")) << 20
"""Bound on the compiled-grammar cache of one engine (``XG2_VLLM_CACHE_MB``, default 512)."""


def tokenizer_info_from_vllm(tokenizer: Any, vocab_size: int) -> TokenizerInfo:
    """Builds the engine's vocabulary table from a tokenizer as vLLM loads it.

    Args:
        tokenizer: vLLM's tokenizer: a Hugging Face tokenizer (including tiktoken-backed
            custom tokenizers) or vLLM's ``MistralTokenizer`` (tekken or sentencepiece).
        vocab_size: the model's vocabulary size (logits width), which may exceed the
            tokenizer's; padding ids are never allowed.

    Returns:
        The table every grammar of this engine is compiled for.
    """
    if is_mistral_tokenizer(tokenizer):
        inner = tokenizer.tokenizer
        stop = [tokenizer.eos_token_id]
        if tokenizer.is_tekken:
            return TokenizerInfo.from_mistral_tekken(inner.file_path, vocab_size=vocab_size, stop_token_ids=stop)
        return TokenizerInfo.from_sentencepiece(str(inner.file_path), vocab_size=vocab_size, stop_token_ids=stop)
    encoding = _tiktoken_encoding(tokenizer)
    if encoding is not None:
        # Its string vocabulary (get_vocab) replaces the bytes of partial UTF-8 tokens; the
        # encoding has them exactly.
        return TokenizerInfo.from_tiktoken(encoding, vocab_size=vocab_size, stop_token_ids=[tokenizer.eos_token_id])
    return TokenizerInfo.from_huggingface(tokenizer, vocab_size=vocab_size)


def _tiktoken_encoding(tokenizer: Any) -> Any:
    """The ``tiktoken.Encoding`` inside a tiktoken-based tokenizer, else None.

    vLLM's own tiktoken tokenizer (``tokenizer_mode="kimi_audio"``) keeps it as ``_tokenizer``;
    remote-code Hugging Face tokenizers built on tiktoken keep it as ``model`` or ``tokenizer``.
    """
    try:
        import tiktoken
    except ImportError:
        return None
    for name in ("_tokenizer", "model", "tokenizer"):
        candidate = getattr(tokenizer, name, None)
        if isinstance(candidate, tiktoken.Encoding):
            return candidate
    return None


def request_layout(
    params: Optional[StructuredOutputsParams], engine_disable_any_whitespace: bool, max_whitespace: Optional[int]
) -> JsonLayout:
    """The whitespace a request's JSON may contain.

    The request's ``whitespace_pattern``, when set, says it exactly (see
    :func:`~xg2_plugin.adapters.options.whitespace_from_pattern`); otherwise JSON is compact
    when the engine's or the request's ``disable_any_whitespace`` is set, flexible else. The
    operator's cap (``XG2_MAX_WHITESPACE``) then bounds every gap.

    Raises:
        ValueError: a ``whitespace_pattern`` the engine cannot enforce as written.
    """
    if params is not None and params.whitespace_pattern is not None:
        layout = whitespace_from_pattern(params.whitespace_pattern)
    else:
        disable = engine_disable_any_whitespace or bool(params is not None and params.disable_any_whitespace)
        layout = JsonLayout(any_whitespace=not disable)
    return layout.capped(max_whitespace)


def compile_spec(
    compiler: GrammarCompiler,
    request_type: StructuredOutputOptions,
    grammar_spec: str,
    *,
    layout: JsonLayout,
    schemas: Optional[LenientSchemas] = None,
) -> CompiledGrammar:
    """Compiles one vLLM structured-output request with ``compiler``.

    Args:
        compiler: the compiler (and cache) to use.
        request_type: which kind of constraint ``grammar_spec`` is.
        grammar_spec: vLLM's spec string: JSON schema text, ``""`` for a JSON object, a regex,
            a JSON list of choices, EBNF (GBNF) text, or structural-tag JSON.
        layout: the whitespace JSON may contain (JSON schema, JSON object, and the JSON
            formats of a structural tag).
        schemas: the leniency switch for JSON schemas (None: exact).

    Returns:
        The compiled grammar.

    Raises:
        ValueError: the spec is invalid or unsupported (the engine's own error types, which
            name the problem and where it is).
    """
    if schemas is None:
        schemas = LenientSchemas(False, None)
    if request_type == StructuredOutputOptions.JSON:
        # strict_mode: properties a schema does not declare are never generated, the behaviour
        # vLLM users get from xgrammar and what disable_additional_properties asks of guidance.
        return schemas.compile(compiler, grammar_spec, layout, strict_mode=True)
    if request_type == StructuredOutputOptions.JSON_OBJECT:
        return compiler.compile_json_schema('{"type": "object"}', strict_mode=False, **layout.compile_kwargs())
    if request_type == StructuredOutputOptions.REGEX:
        return compiler.compile_regex(grammar_spec)
    if request_type == StructuredOutputOptions.CHOICE:
        choices = json.loads(grammar_spec)
        if not isinstance(choices, list):
            raise ValueError(f"choice must be a list of strings, got {type(choices).__name__}")
        return compiler.compile_choice(choices)
    if request_type == StructuredOutputOptions.GRAMMAR:
        if looks_like_lark(grammar_spec):
            return compiler.compile_lark(grammar_spec)
        return compiler.compile_grammar(grammar_spec)
    if request_type == StructuredOutputOptions.STRUCTURAL_TAG:
        # The layout reaches the JSON of every json_schema format inside the tag.
        tag: Any = grammar_spec
        if layout.max_whitespace is not None:
            tag = cap_tag_whitespace(json.loads(grammar_spec), layout.max_whitespace)
        return compiler.compile_structural_tag(tag, any_whitespace=layout.any_whitespace)
    raise ValueError(f"unknown structured output request type {request_type!r}")


@lru_cache(maxsize=1)
def adapter_settings() -> AdapterSettings:
    """The operator's ``XG2_*`` settings as the frontend validation uses them, read once per
    process (each :class:`XG2Backend` reads them when it is made)."""
    return AdapterSettings.from_env()


def reload_settings() -> None:
    """Makes the frontend validation read the ``XG2_*`` variables again (for a process that
    changes them after a first request, such as a test session running several engines)."""
    adapter_settings.cache_clear()
    _validation_compiler.cache_clear()
    _validation_schemas.cache_clear()


@lru_cache(maxsize=1)
def _validation_compiler() -> GrammarCompiler:
    """A compiler over the 256 single bytes: enough to run every frontend and grammar check
    (under the operator's compile timeout: it runs in the API server process)."""
    byte_vocab = [bytes([b]) for b in range(256)]
    return GrammarCompiler(
        TokenizerInfo(byte_vocab, VocabType.RAW, stop_token_ids=[]),
        max_threads=1,
        cache_limit_bytes=64 << 20,
        limits=CompileLimits(timeout_s=adapter_settings().compile_timeout_s),
    )


@lru_cache(maxsize=1)
def _validation_schemas() -> LenientSchemas:
    # Silent: the engine core logs the one warning for a lenient schema.
    return LenientSchemas(adapter_settings().lenient, None)


def check_request(params: StructuredOutputsParams, structured_outputs_config: Any) -> None:
    """Validates a request's constraint and options in the frontend, without the model's tokenizer.

    Args:
        params: the request's structured-output parameters.
        structured_outputs_config: the engine's ``StructuredOutputsConfig``.

    Raises:
        ValueError: the constraint does not compile, or an option is one the engine cannot
            enforce; the message is the engine's.
    """
    request_type, grammar_spec = get_structured_output_key(params)
    layout = request_layout(
        params, structured_outputs_config.disable_any_whitespace, adapter_settings().max_whitespace
    )
    compile_spec(_validation_compiler(), request_type, grammar_spec, layout=layout, schemas=_validation_schemas())


@dataclass
class XG2Backend(StructuredOutputBackend):
    """Engine-level backend: one vocabulary table and one compiler (with cache) per engine.

    Fields (from :class:`StructuredOutputBackend`): ``vllm_config``, ``tokenizer`` and
    ``vocab_size`` (the model's padded vocabulary).
    """

    def __post_init__(self) -> None:
        so_config = self.vllm_config.structured_outputs_config
        self._disable_any_whitespace = bool(so_config.disable_any_whitespace)
        self.settings = AdapterSettings.from_env()
        self.tokenizer_info = tokenizer_info_from_vllm(self.tokenizer, self.vocab_size)
        # Persistent compile cache: --additional-config '{"xg2_cache_dir": DIR}', else $XG2_CACHE_DIR.
        additional = self.vllm_config.additional_config
        cache_dir = additional.get("xg2_cache_dir") if isinstance(additional, dict) else None
        self.compiler = GrammarCompiler(
            self.tokenizer_info,
            max_threads=1,
            cache_limit_bytes=_CACHE_LIMIT_BYTES,
            limits=CompileLimits(timeout_s=self.settings.compile_timeout_s),
            cache_dir=cache_dir,
        )
        self._schemas = LenientSchemas(self.settings.lenient, logger)
        GRAMMAR_STATS.watch_compiler(self.compiler)

    def compile_grammar(
        self,
        request_type: StructuredOutputOptions,
        grammar_spec: str,
        stop_token_ids: Optional[set[int]] = None,
        params: Optional[StructuredOutputsParams] = None,
    ) -> XG2Grammar:
        """Compiles a request (vLLM calls this from its compile thread pool).

        Args:
            request_type: the kind of constraint.
            grammar_spec: the constraint as vLLM serialises it.
            stop_token_ids: the request's EOS and user stop ids; they stay masked until the
                grammar may end, and accepting one terminates the request's grammar.
            params: the request's structured-output parameters, for its own options
                (``disable_any_whitespace``, ``whitespace_pattern``); None: those vLLM's
                engine core is compiling on this thread (:data:`REQUEST_PARAMS`), if any.

        Returns:
            A fresh per-request grammar sharing the compiled (cached) grammar.
        """
        if params is None:
            params = REQUEST_PARAMS.get()
        start = time.perf_counter()
        ok = False
        try:
            layout = request_layout(params, self._disable_any_whitespace, self.settings.max_whitespace)
            compiled = compile_spec(self.compiler, request_type, grammar_spec, layout=layout, schemas=self._schemas)
            ok = True
        finally:
            GRAMMAR_STATS.record_compile(time.perf_counter() - start, ok)
            GRAMMAR_STATS.maybe_log(logger, self.settings.stats_log_interval_s)
        stops = sorted(stop_token_ids) if stop_token_ids else None
        return XG2Grammar(GrammarMatcher(compiled, stop_token_ids=stops), self.settings.stats_log_interval_s)

    def allocate_token_bitmask(self, max_num_seqs: int) -> torch.Tensor:
        """An all-allowed int32 CPU bitmask of ``max_num_seqs`` rows over ``vocab_size`` tokens."""
        return allocate_token_bitmask(max_num_seqs, self.vocab_size)

    def destroy(self) -> None:
        """Drops the compiled-grammar cache."""
        self.compiler.clear_cache()


class XG2Grammar(StructuredOutputGrammar):
    """Per-request grammar state over a shared compiled grammar.

    Args:
        matcher: the request's matcher (its stop tokens already set).
        stats_log_interval_s: seconds between statistics log lines (None: none).

    Attributes:
        mask_fills: bitmask rows this request's grammar filled.
        mask_seconds: the time those fills took.
    """

    def __init__(self, matcher: GrammarMatcher, stats_log_interval_s: Optional[float] = None) -> None:
        self.matcher = matcher
        self.mask_fills = 0
        self.mask_seconds = 0.0
        self._stats_log_interval_s = stats_log_interval_s

    def accept_tokens(self, request_id: str, tokens: list[int]) -> bool:
        """Advances by ``tokens``; all or nothing.

        Tokens after a stop token was accepted are ignored (and accepted), as vLLM expects.

        Returns:
            False (state unchanged) if the grammar rejects one of the tokens.
        """
        accepted = 0
        for token in tokens:
            if self.matcher.is_terminated():
                break
            if not self.matcher.accept_token(token):
                if accepted:
                    self.matcher.rollback(accepted)
                return False
            accepted += 1
        return True

    def validate_tokens(self, tokens: list[int]) -> list[int]:
        """The longest prefix of ``tokens`` the grammar accepts from here; state unchanged."""
        if self.matcher.is_terminated():
            return []
        return tokens[: self.matcher.validate_tokens(tokens)]

    def rollback(self, num_tokens: int) -> None:
        """Undoes the last ``num_tokens`` accepted tokens (any depth, including a stop token)."""
        if num_tokens > 0:
            self.matcher.rollback(num_tokens)

    def fill_bitmask(self, bitmask: torch.Tensor, batch_index: int) -> None:
        """Writes the allowed next tokens into row ``batch_index`` (the GIL is released)."""
        start = time.perf_counter()
        self.matcher.fill_next_token_bitmask(bitmask, batch_index)
        seconds = time.perf_counter() - start
        self.mask_fills += 1
        self.mask_seconds += seconds
        GRAMMAR_STATS.record_fills(1, seconds)
        GRAMMAR_STATS.maybe_log(logger, self._stats_log_interval_s)

    def is_terminated(self) -> bool:
        """True once a stop token was accepted."""
        return self.matcher.is_terminated()

    def reset(self) -> None:
        """Returns to the initial state."""
        self.matcher.reset()
