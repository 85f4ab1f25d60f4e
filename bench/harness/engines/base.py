"""The engine adapter interface: what the harness needs from a structured-generation engine.

An adapter wraps one engine behind six verbs (compile, matcher, fill, accept, rollback,
reset) plus a few optional capabilities (batch fill, memory figures). Adapters do the same
work a serving engine would do through the engine's public API, with its documented
defaults; anything an adapter sets beyond the defaults is listed in :meth:`Engine.settings`
so the report can print it.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, Callable, Optional

from ..vocab import Vocab

BatchFill = Callable[[list[Any], Any], None]


class EngineRejected(Exception):
    """The engine refused the grammar or schema with an error of its own (not a crash)."""


class Engine(ABC):
    """One structured-generation engine, bound to one tokenizer.

    Subclasses set :attr:`name` (unique, used on the command line), :attr:`family` (which
    engine it is: ``ours``, ``xgrammar`` or ``llguidance``; ablation variants share their
    base's family) and implement the abstract methods. Constructing an engine builds its
    tokenizer table; that cost is measured separately (``setup_s``) and is not part of
    compile time.
    """

    name: str = ""
    family: str = ""

    def __init__(self, vocab: Vocab) -> None:
        self.vocab = vocab

    # ---- identity -----------------------------------------------------------------------

    @abstractmethod
    def version(self) -> str:
        """The engine's package version."""

    def settings(self) -> dict[str, Any]:
        """Options the adapter passes (for the report's semantic-differences section)."""
        return {}

    # ---- compiling ----------------------------------------------------------------------

    @abstractmethod
    def compile_json_schema(self, schema_text: str) -> Any:
        """Compiles a JSON Schema (as JSON text). Raises on rejection."""

    @abstractmethod
    def compile_gbnf(self, grammar_text: str) -> Any:
        """Compiles a GBNF (llama.cpp-style EBNF) grammar with root rule ``root``."""

    # ---- matching -----------------------------------------------------------------------

    @abstractmethod
    def new_matcher(self, compiled: Any) -> Any:
        """A fresh matcher for a compiled grammar, stopping on the tokenizer's eos only."""

    @abstractmethod
    def fill(self, matcher: Any, bitmask: Any, row: int = 0) -> None:
        """Writes the next-token mask into row ``row`` of an int32 torch bitmask."""

    @abstractmethod
    def accept(self, matcher: Any, token_id: int) -> bool:
        """Consumes one token; False if the engine refuses it."""

    @abstractmethod
    def rollback(self, matcher: Any, num_tokens: int) -> None:
        """Undoes the last ``num_tokens`` accepted tokens."""

    @abstractmethod
    def reset(self, matcher: Any) -> None:
        """Returns the matcher to its initial state."""

    @abstractmethod
    def is_terminated(self, matcher: Any) -> bool:
        """True once the stop token was accepted."""

    # ---- optional capabilities ----------------------------------------------------------

    def batch_filler(self, threads: int) -> Optional[BatchFill]:
        """A function filling rows ``0..len(matchers)-1`` for a batch, using ``threads`` threads.

        None when the engine has no batch API (the harness then skips it).
        """
        return None

    def grammar_memory_bytes(self, compiled: Any) -> Optional[int]:
        """Bytes held by one compiled grammar, if the engine reports it."""
        return None

    def cache_memory_bytes(self) -> Optional[int]:
        """Bytes held by the engine's compiler cache, if the engine reports it."""
        return None
