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

import json
import os
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
from vllm.v1.structured_output.utils import grammar_is_likely_lark

from xg2_plugin import (
    CompiledGrammar,
    GrammarCompiler,
    GrammarMatcher,
    TokenizerInfo,
    VocabType,
    allocate_token_bitmask,
)

__all__ = ["XG2Backend", "XG2Grammar", "check_request", "tokenizer_info_from_vllm"]

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


def compile_spec(
    compiler: GrammarCompiler,
    request_type: StructuredOutputOptions,
    grammar_spec: str,
    *,
    any_whitespace: bool,
) -> CompiledGrammar:
    """Compiles one vLLM structured-output request with ``compiler``.

    Args:
        compiler: the compiler (and cache) to use.
        request_type: which kind of constraint ``grammar_spec`` is.
        grammar_spec: vLLM's spec string: JSON schema text, ``""`` for a JSON object, a regex,
            a JSON list of choices, EBNF (GBNF) text, or structural-tag JSON.
        any_whitespace: whether JSON may contain flexible whitespace; when False, JSON is
            compact (``,`` and ``:`` with no spaces).

    Returns:
        The compiled grammar.

    Raises:
        ValueError: the spec is invalid or unsupported (the engine's own error types, which
            name the problem and where it is).
    """
    separators = None if any_whitespace else (",", ":")
    if request_type == StructuredOutputOptions.JSON:
        # strict_mode: properties a schema does not declare are never generated, the behaviour
        # vLLM users get from xgrammar and what disable_additional_properties asks of guidance.
        return compiler.compile_json_schema(
            grammar_spec, any_whitespace=any_whitespace, separators=separators, strict_mode=True
        )
    if request_type == StructuredOutputOptions.JSON_OBJECT:
        return compiler.compile_json_schema(
            '{"type": "object"}', any_whitespace=any_whitespace, separators=separators, strict_mode=False
        )
    if request_type == StructuredOutputOptions.REGEX:
        return compiler.compile_regex(grammar_spec)
    if request_type == StructuredOutputOptions.CHOICE:
        choices = json.loads(grammar_spec)
        if not isinstance(choices, list):
            raise ValueError(f"choice must be a list of strings, got {type(choices).__name__}")
        return compiler.compile_choice(choices)
    if request_type == StructuredOutputOptions.GRAMMAR:
        if grammar_is_likely_lark(grammar_spec):
            raise ValueError(
                "the xg2 backend takes EBNF (GBNF) grammars with `rule ::= ...` definitions; "
                "Lark grammars are not supported"
            )
        return compiler.compile_grammar(grammar_spec)
    if request_type == StructuredOutputOptions.STRUCTURAL_TAG:
        # disable_any_whitespace reaches the JSON of every json_schema format inside the tag.
        return compiler.compile_structural_tag(grammar_spec, any_whitespace=any_whitespace)
    raise ValueError(f"unknown structured output request type {request_type!r}")


@lru_cache(maxsize=1)
def _validation_compiler() -> GrammarCompiler:
    """A compiler over the 256 single bytes: enough to run every frontend and grammar check."""
    byte_vocab = [bytes([b]) for b in range(256)]
    return GrammarCompiler(
        TokenizerInfo(byte_vocab, VocabType.RAW, stop_token_ids=[]),
        max_threads=1,
        cache_limit_bytes=64 << 20,
    )


def check_request(params: StructuredOutputsParams, *, any_whitespace: bool) -> None:
    """Validates a request's constraint in the frontend, without the model's tokenizer.

    Args:
        params: the request's structured-output parameters.
        any_whitespace: the engine's JSON whitespace setting.

    Raises:
        ValueError: the constraint does not compile; the message is the engine's.
    """
    request_type, grammar_spec = get_structured_output_key(params)
    compile_spec(_validation_compiler(), request_type, grammar_spec, any_whitespace=any_whitespace)


@dataclass
class XG2Backend(StructuredOutputBackend):
    """Engine-level backend: one vocabulary table and one compiler (with cache) per engine.

    Fields (from :class:`StructuredOutputBackend`): ``vllm_config``, ``tokenizer`` and
    ``vocab_size`` (the model's padded vocabulary).
    """

    def __post_init__(self) -> None:
        so_config = self.vllm_config.structured_outputs_config
        self._any_whitespace = not so_config.disable_any_whitespace
        self.tokenizer_info = tokenizer_info_from_vllm(self.tokenizer, self.vocab_size)
        # Persistent compile cache: --additional-config '{"xg2_cache_dir": DIR}', else $XG2_CACHE_DIR.
        additional = self.vllm_config.additional_config
        cache_dir = additional.get("xg2_cache_dir") if isinstance(additional, dict) else None
        self.compiler = GrammarCompiler(self.tokenizer_info, max_threads=1, cache_limit_bytes=_CACHE_LIMIT_BYTES,
                                        cache_dir=cache_dir)

    def compile_grammar(
        self,
        request_type: StructuredOutputOptions,
        grammar_spec: str,
        stop_token_ids: Optional[set[int]] = None,
    ) -> XG2Grammar:
        """Compiles a request (vLLM calls this from its compile thread pool).

        Args:
            request_type: the kind of constraint.
            grammar_spec: the constraint as vLLM serialises it.
            stop_token_ids: the request's EOS and user stop ids; they stay masked until the
                grammar may end, and accepting one terminates the request's grammar.

        Returns:
            A fresh per-request grammar sharing the compiled (cached) grammar.
        """
        compiled = compile_spec(self.compiler, request_type, grammar_spec, any_whitespace=self._any_whitespace)
        stops = sorted(stop_token_ids) if stop_token_ids else None
        return XG2Grammar(GrammarMatcher(compiled, stop_token_ids=stops))

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
    """

    def __init__(self, matcher: GrammarMatcher) -> None:
        self.matcher = matcher

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
        self.matcher.fill_next_token_bitmask(bitmask, batch_index)

    def is_terminated(self) -> bool:
        """True once a stop token was accepted."""
        return self.matcher.is_terminated()

    def reset(self) -> None:
        """Returns to the initial state."""
        self.matcher.reset()
