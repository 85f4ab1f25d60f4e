"""Shared pieces of the atheris harnesses (fuzz/fuzz_*.py).

Every harness feeds arbitrary bytes to one input path of the engine. An exception that is a
typed engine error (XG2Error), a ValueError or a TypeError is the expected answer to bad
input; anything else (or a crash, caught by libFuzzer / the sanitizers) is a finding.
Each harness defines ``test_one_input(data: bytes)``, which the regression replay
(tests/robustness/test_regressions.py) also calls on every saved input under fuzz/regressions/<name>/.
"""

from __future__ import annotations

import functools
import os
import sys
from pathlib import Path
from typing import Any, Callable

HERE = Path(__file__).resolve().parent

# The engine under test is whichever xg2_plugin is importable: the installed package, or the
# working tree / sanitizer stage through PYTHONPATH.
import xg2_plugin as xg  # noqa: E402

EXPECTED = (xg.XG2Error, ValueError, TypeError)


def data_dir() -> Path:
    return Path(os.environ.get("XG2_DATA_DIR", HERE.parent.parent / "shared" / "data"))


@functools.lru_cache(maxsize=None)
def tokenizer_info() -> xg.TokenizerInfo:
    from tokenizers import Tokenizer

    return xg.TokenizerInfo.from_huggingface(Tokenizer.from_file(str(data_dir() / "tokenizers/hf/gpt2/tokenizer.json")))


@functools.lru_cache(maxsize=None)
def compiler() -> xg.GrammarCompiler:
    # No grammar cache (every input compiles afresh); tight limits keep each run short.
    limits = xg.CompileLimits(max_fsm_nodes=200_000, max_repetition_bound=2000, timeout_s=5.0,
                              max_earley_items_per_step=20_000)
    return xg.GrammarCompiler(tokenizer_info(), cache_enabled=False, precompute_nodes=0, limits=limits)


def expect_typed(fn: Callable[[], Any]) -> Any:
    try:
        return fn()
    except EXPECTED:
        return None


def main(test_one_input: Callable[[bytes], None]) -> None:
    import atheris

    compiler()  # load the tokenizer before fuzzing starts
    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()


@functools.lru_cache(maxsize=None)
def seeds(harness: str) -> tuple[bytes, ...]:
    directory = HERE / "seeds" / harness
    return tuple(p.read_bytes() for p in sorted(directory.glob("*")) if p.is_file())


def splice_into_seed(harness: str, data: bytes) -> bytes:
    """Turns fuzz bytes into an edit of a seed input. The native engine is not coverage-
    instrumented, so libFuzzer alone would mutate tiny inputs that fail at the first byte;
    editing real grammars / schemas keeps every run deep inside the frontends.

    data[0]: which seed (or, when it is 255, the raw remaining bytes); data[1:3]: position;
    data[3]: insert, overwrite or delete; data[4:]: the bytes inserted / written / the count."""
    pool = seeds(harness)
    if len(data) < 4 or not pool or data[0] == 255:
        return data[1:] if data[:1] == b"\xff" else data
    seed = pool[data[0] % len(pool)]
    position = int.from_bytes(data[1:3], "little") % (len(seed) + 1)
    payload = data[4:]
    mode = data[3] % 3
    if mode == 0:
        return seed[:position] + payload + seed[position:]
    if mode == 1:
        return seed[:position] + payload + seed[position + len(payload):]
    return seed[:position] + seed[position + 1 + (payload[0] if payload else 0):]
