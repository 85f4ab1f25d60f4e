"""Adapter for our engine (xg2_plugin), and the base class for its ablation variants."""

from __future__ import annotations

from typing import Any, Optional

from .base import BatchFill, Engine, EngineRejected


class OursEngine(Engine):
    """xg2_plugin with its documented defaults: flexible whitespace, ``strict_mode=True``.

    Ablation variants subclass this and override :attr:`compiler_options` (keyword arguments
    for ``GrammarCompiler``) and/or :attr:`schema_options` (for ``compile_json_schema``); see
    ``harness/engines/__init__.py``.
    """

    name = "ours"
    family = "ours"
    compiler_options: dict[str, Any] = {}
    schema_options: dict[str, Any] = {}

    def __init__(self, vocab: Any) -> None:
        super().__init__(vocab)
        import xg2_plugin

        self._xg = xg2_plugin
        self._info = xg2_plugin.TokenizerInfo.from_huggingface(
            vocab.hf, vocab_size=vocab.vocab_size, stop_token_ids=[vocab.eos_id]
        )
        # One compile thread, like the peers' single-threaded compile in this harness.
        options = {"max_threads": 1, **self.compiler_options}
        self._compiler = xg2_plugin.GrammarCompiler(self._info, **options)

    def version(self) -> str:
        # The package's own attribute, not the distribution metadata: a source tree on
        # PYTHONPATH (how the offline GPU host runs the bench) has no installed metadata.
        return self._xg.__version__

    def settings(self) -> dict[str, Any]:
        return {"GrammarCompiler": {"max_threads": 1, **self.compiler_options},
                "compile_json_schema": {"any_whitespace": True, "strict_mode": True, **self.schema_options}}

    def compile_json_schema(self, schema_text: str) -> Any:
        try:
            return self._compiler.compile_json_schema(schema_text, **self.schema_options)
        except self._xg.XG2Error as error:
            raise EngineRejected(f"{type(error).__name__}: {error}") from error

    def compile_gbnf(self, grammar_text: str) -> Any:
        try:
            return self._compiler.compile_grammar(grammar_text)
        except self._xg.XG2Error as error:
            raise EngineRejected(f"{type(error).__name__}: {error}") from error

    def new_matcher(self, compiled: Any) -> Any:
        return self._xg.GrammarMatcher(compiled)

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
        batch_fill = self._xg.batch_fill_next_token_bitmask

        def fill(matchers: list[Any], bitmask: Any) -> None:
            batch_fill(matchers, bitmask, max_threads=threads)

        return fill

    def grammar_memory_bytes(self, compiled: Any) -> Optional[int]:
        return int(compiled.memory_size_bytes)

    def cache_memory_bytes(self) -> Optional[int]:
        return int(self._compiler.cache_size_bytes)
