"""Adapter for xgrammar (0.2.8), used through its public Python API with its defaults."""

from __future__ import annotations

from typing import Any, Optional

from .base import BatchFill, Engine, EngineRejected


class XGrammarEngine(Engine):
    """xgrammar: ``compile_json_schema`` defaults (``any_whitespace=True``, ``strict_mode=True``).

    The compiler gets ``max_threads=1`` so compile time is single-threaded like the others'.
    xgrammar raises ``RuntimeError``/``ValueError`` (and its own exception types) for schemas
    it cannot handle; those count as rejections.
    """

    name = "xgrammar"
    family = "xgrammar"

    def __init__(self, vocab: Any) -> None:
        super().__init__(vocab)
        import xgrammar

        self._xgr = xgrammar
        self._info = xgrammar.TokenizerInfo.from_huggingface(
            vocab.hf, vocab_size=vocab.vocab_size, stop_token_ids=[vocab.eos_id]
        )
        self._compiler = xgrammar.GrammarCompiler(self._info, max_threads=1)
        self._batch: dict[int, Any] = {}

    def version(self) -> str:
        from importlib.metadata import version

        return version("xgrammar")

    def settings(self) -> dict[str, Any]:
        return {"GrammarCompiler": {"max_threads": 1},
                "compile_json_schema": {"any_whitespace": True, "strict_mode": True}}

    def compile_json_schema(self, schema_text: str) -> Any:
        try:
            return self._compiler.compile_json_schema(schema_text)
        except (RuntimeError, ValueError, TypeError) as error:
            raise EngineRejected(f"{type(error).__name__}: {error}") from error

    def compile_gbnf(self, grammar_text: str) -> Any:
        try:
            return self._compiler.compile_grammar(grammar_text)
        except (RuntimeError, ValueError, TypeError) as error:
            raise EngineRejected(f"{type(error).__name__}: {error}") from error

    def new_matcher(self, compiled: Any) -> Any:
        return self._xgr.GrammarMatcher(compiled)

    def fill(self, matcher: Any, bitmask: Any, row: int = 0) -> None:
        matcher.fill_next_token_bitmask(bitmask, row)

    def accept(self, matcher: Any, token_id: int) -> bool:
        return matcher.accept_token(token_id)

    def rollback(self, matcher: Any, num_tokens: int) -> None:
        matcher.rollback(num_tokens)

    def reset(self, matcher: Any) -> None:
        matcher.reset()

    def is_terminated(self, matcher: Any) -> bool:
        return matcher.is_terminated()

    def batch_filler(self, threads: int) -> Optional[BatchFill]:
        batch = self._batch.get(threads)
        if batch is None:
            batch = self._batch[threads] = self._xgr.BatchGrammarMatcher(max_threads=threads)

        def fill(matchers: list[Any], bitmask: Any) -> None:
            batch.batch_fill_next_token_bitmask(matchers, bitmask)

        return fill

    def grammar_memory_bytes(self, compiled: Any) -> Optional[int]:
        return int(compiled.memory_size_bytes)

    def cache_memory_bytes(self) -> Optional[int]:
        return int(self._compiler.get_cache_size_bytes())
