"""Adapter for llguidance (1.9.1), used through its public Python API with its defaults."""

from __future__ import annotations

from typing import Any, Optional

from .base import BatchFill, Engine, EngineRejected


class LLGuidanceEngine(Engine):
    """llguidance: ``grammar_from_json_schema`` with default options, ``LLMatcher`` per request.

    llguidance has no separate compiled-grammar object in Python: building an ``LLMatcher``
    from the grammar is the compile step. The adapter's "compiled grammar" is that first,
    pristine matcher; later matchers for the same grammar are ``deep_copy()`` of it (cheap),
    as a server that caches per-grammar state would do. JSON defaults: flexible whitespace
    (``whitespace_flexible=true``), separators ``,``/``:`` (with whitespace around them
    allowed), undeclared properties allowed unless ``additionalProperties: false`` (JSON
    Schema semantics), unsupported keywords rejected (``lenient=false``).
    GBNF grammars are converted with ``llguidance.gbnf_to_lark`` (the converter llguidance
    ships) and that conversion counts as compile time.
    """

    name = "llguidance"
    family = "llguidance"

    def __init__(self, vocab: Any) -> None:
        super().__init__(vocab)
        import llguidance
        import llguidance.hf

        self._llg = llguidance
        self._tokenizer = llguidance.hf.from_tokenizer(vocab.hf, n_vocab=vocab.vocab_size, eos_token=vocab.eos_id)
        self._executors: dict[int, Any] = {}

    def version(self) -> str:
        from importlib.metadata import version

        return version("llguidance")

    def settings(self) -> dict[str, Any]:
        return {"grammar_from_json_schema": {"defaults": None}, "LLMatcher": {"log_level": 0}}

    def _matcher_from(self, grammar: str) -> Any:
        matcher = self._llg.LLMatcher(self._tokenizer, grammar, log_level=0)
        if matcher.is_error():
            raise EngineRejected(matcher.get_error())
        return matcher

    def compile_json_schema(self, schema_text: str) -> Any:
        try:
            grammar = self._llg.LLMatcher.grammar_from_json_schema(schema_text)
        except (ValueError, TypeError) as error:
            raise EngineRejected(f"{type(error).__name__}: {error}") from error
        return self._matcher_from(grammar)

    def compile_gbnf(self, grammar_text: str) -> Any:
        from llguidance.gbnf_to_lark import gbnf_to_lark

        try:
            lark = gbnf_to_lark(grammar_text)
        except Exception as error:  # the converter's own error types
            raise EngineRejected(f"gbnf_to_lark: {type(error).__name__}: {error}") from error
        return self._matcher_from(self._llg.LLMatcher.grammar_from_lark(lark))

    def new_matcher(self, compiled: Any) -> Any:
        return compiled.deep_copy()

    def fill(self, matcher: Any, bitmask: Any, row: int = 0) -> None:
        target = bitmask[row]
        matcher.unsafe_compute_mask_ptr(target.data_ptr(), target.numel() * 4)

    def accept(self, matcher: Any, token_id: int) -> bool:
        return bool(matcher.consume_token(token_id))

    def rollback(self, matcher: Any, num_tokens: int) -> None:
        matcher.rollback(num_tokens)

    def reset(self, matcher: Any) -> None:
        matcher.reset()

    def is_terminated(self, matcher: Any) -> bool:
        return bool(matcher.is_stopped())

    def batch_filler(self, threads: int) -> Optional[BatchFill]:
        executor = self._executors.get(threads)
        if executor is None:
            executor = self._executors[threads] = self._llg.LLExecutor(num_threads=threads)

        def fill(matchers: list[Any], bitmask: Any) -> None:
            executor.unsafe_compute_mask_ptr(
                [(m, i) for i, m in enumerate(matchers)], bitmask.data_ptr(), bitmask.shape[1] * 4, bitmask.shape[0]
            )

        return fill
