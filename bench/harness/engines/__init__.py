"""Engine registry: the engines a run can name with ``--engines``.

Adding an engine or an ablation variant is one class and one ``register`` call. An ablation
variant of our engine (a mechanism switched off) looks like this::

    class OursNoJit(OursEngine):
        name = "ours-nojit"
        compiler_options = {"jit": False}  # whatever switch GrammarCompiler grows

    register(OursNoJit, ablation="JIT off")

Variants registered with ``ablation=`` are listed in the report's ablation table, next to
``ours`` (pass ``--engines ours,ours-nojit,...`` or ``--ablation`` to run all of them).
Adapters import their engine lazily, so a run that does not name an engine never imports it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from .base import Engine, EngineRejected
from .llguidance_engine import LLGuidanceEngine
from .ours import OursEngine
from .xgrammar_engine import XGrammarEngine

__all__ = ["Engine", "EngineRejected", "EngineSpec", "ENGINES", "register", "ablation_variants", "make_engine"]


@dataclass(frozen=True)
class EngineSpec:
    """A registered engine: its adapter class, and the ablation label if it is a variant."""

    cls: type[Engine]
    ablation: Optional[str] = None

    @property
    def name(self) -> str:
        return self.cls.name

    @property
    def family(self) -> str:
        return self.cls.family


ENGINES: dict[str, EngineSpec] = {}

# The engine the ratio columns are computed for, and the peers it is compared with.
BASELINE = "ours"
PEERS = ("xgrammar", "llguidance")


def register(cls: type[Engine], ablation: Optional[str] = None) -> type[Engine]:
    """Adds an adapter class to the registry (``ablation``: what the variant switches off)."""
    if not cls.name:
        raise ValueError(f"{cls.__name__} has no name")
    ENGINES[cls.name] = EngineSpec(cls, ablation)
    return cls


def ablation_variants() -> list[str]:
    """Names of the registered ablation variants of our engine."""
    return [name for name, spec in ENGINES.items() if spec.ablation is not None]


def make_engine(name: str, vocab: object) -> Engine:
    """Instantiates a registered engine for a tokenizer."""
    if name not in ENGINES:
        raise ValueError(f"unknown engine {name!r}; registered: {sorted(ENGINES)}")
    return ENGINES[name].cls(vocab)  # type: ignore[arg-type]


register(OursEngine)
register(XGrammarEngine)
register(LLGuidanceEngine)

# ---- ablation variants of our engine (the paper's Table 1, on our mechanisms) -------------------
# The paper's incremental series: baseline (ours-aot) -> +JIT (ours-jit) -> +cross-grammar
# (ours-no-rep) -> +repetition compression (ours, every mechanism on). The first three switch
# repetition compression off (compiler option repetition_compression_threshold=0).
NO_REPETITION_COMPRESSION = {"repetition_compression_threshold": 0}


class OursNoMaskCache(OursEngine):
    """Every mask by the reference vocabulary walk (no token-mask cache at all)."""

    name = "ours-no-cache"
    compiler_options = {"mask_cache": False}


class OursAheadOfTime(OursEngine):
    """Mask cache built for every state during compilation, not shared across grammars
    (the paper's baseline: no JIT, no cross-grammar cache)."""

    name = "ours-aot"
    compiler_options = {"precompute_nodes": -1, "cross_grammar_cache": False, **NO_REPETITION_COMPRESSION}


class OursJitOnly(OursEngine):
    """JIT (lazy, with background precompute) but no cross-grammar sharing."""

    name = "ours-jit"
    compiler_options = {"cross_grammar_cache": False, **NO_REPETITION_COMPRESSION}


class OursNoRepetitionCompression(OursEngine):
    """JIT and cross-grammar sharing, but long repetitions expanded copy by copy (no
    repetition state compression); `ours` adds compression on top of this."""

    name = "ours-no-rep"
    compiler_options = dict(NO_REPETITION_COMPRESSION)


register(OursNoMaskCache, ablation="no mask cache (reference walk)")
register(OursAheadOfTime, ablation="baseline: ahead-of-time cache, no cross-grammar sharing")
register(OursJitOnly, ablation="+JIT (no cross-grammar sharing, no repetition compression)")
register(OursNoRepetitionCompression, ablation="+cross-grammar (no repetition compression)")
