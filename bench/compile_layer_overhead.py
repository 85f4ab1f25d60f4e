"""What the Python layer of ``GrammarCompiler`` adds to a compile, cold and warm.

    PYTHONPATH=. XG2_DATA_DIR=... python bench/compile_layer_overhead.py [--tokenizer llama3.1] [--rounds 200]

Times, on this thread's CPU clock, for one small JSON Schema (its native compile is short, so the
layer's share shows):
  * native: ``compiler._native.compile_json_schema`` alone (the native compile, no cache);
  * cold: the public ``compile_json_schema`` with the compiler cache off (argument checks, the
    in-flight table, futures, then the same native compile);
  * warm: the public call answered by the compiler cache;
  * cold_layer: cold minus native (what the Python layer costs each compile).
Rounds alternate the cold and native calls, so load drifts hit both alike; medians are shown.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

import xg2_plugin as xg  # noqa: E402
from xg2_test_support import hf_tokenizer_info  # noqa: E402

SCHEMA = '{"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"}}}'


def _cpu_us(call) -> float:
    began = time.thread_time_ns()
    call()
    return (time.thread_time_ns() - began) / 1000


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tokenizer", default="llama3.1")
    parser.add_argument("--rounds", type=int, default=200)
    args = parser.parse_args()
    info = hf_tokenizer_info(args.tokenizer)
    uncached = xg.GrammarCompiler(info, cache_enabled=False, precompute_nodes=0)
    cached = xg.GrammarCompiler(info, precompute_nodes=0)
    cached.compile_json_schema(SCHEMA)
    times: dict[str, list[float]] = {"native": [], "cold": [], "warm": []}
    for _ in range(args.rounds):
        times["native"].append(_cpu_us(lambda: uncached._native.compile_json_schema(SCHEMA)))
        times["cold"].append(_cpu_us(lambda: uncached.compile_json_schema(SCHEMA)))
        times["warm"].append(_cpu_us(lambda: cached.compile_json_schema(SCHEMA)))
    medians = {name: statistics.median(values) for name, values in times.items()}
    medians["cold_layer"] = medians["cold"] - medians["native"]
    print(f"tokenizer {args.tokenizer}, {args.rounds} rounds, median us (thread CPU clock)")
    for name, value in medians.items():
        print(f"{name:<11} {value:9.1f}")


if __name__ == "__main__":
    main()
