"""CPU cost of fills that build mask-cache entries (JIT) and of fills that build nothing, for
our engine alone, on the valid instances of a JSONSchemaBench sample.

    PYTHONPATH=. python bench/jit_build_cost.py [--per-category 3] [--rounds 5] [--tokenizer llama3.1]

Each round makes a fresh compiler (fresh cross-grammar pool, no background precompute, so
which fills build is the same every round) and walks every instance once, timing each fill
with the thread's CPU clock (the machine is shared: wall time would count other processes).
A fill "builds" when the grammar's count of built entries grows during it. Reported: medians
over all rounds of building fills, non-building fills and all fills, and the build time the
cache itself measured per built entry. To compare two engines, run this script alternately
with each on PYTHONPATH, in separate processes, and compare medians.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))

from fill_profile import compile_or_none, workload, xg  # noqa: E402
from xg2_test_support import hf_tokenizer_info  # noqa: E402


def one_round(info: "xg.TokenizerInfo", items: list, cross_grammar: bool) -> tuple[list, list, list]:
    compiler = xg.GrammarCompiler(info, cache_enabled=False, precompute_nodes=0, cross_grammar_cache=cross_grammar)
    bitmask = xg.allocate_token_bitmask(1, info.vocab_size)
    building, plain, per_entry = [], [], []
    clock = time.thread_time_ns
    for _name, schema, ids in items:
        grammar = compile_or_none(compiler, schema)
        if grammar is None:
            continue
        handle = grammar._handle
        matcher = xg.GrammarMatcher(grammar)
        for token in ids:
            nodes, build_ns = handle.cached_nodes, handle.mask_build_ns
            t0 = clock()
            matcher.fill_next_token_bitmask(bitmask)
            elapsed = (clock() - t0) / 1e3
            built = handle.cached_nodes - nodes
            if built:
                building.append(elapsed)
                per_entry.append((handle.mask_build_ns - build_ns) / 1e3 / built)
            else:
                plain.append(elapsed)
            if not matcher.accept_token(token):
                break
    return building, plain, per_entry


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tokenizer", default="llama3.1")
    parser.add_argument("--per-category", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--no-pool", action="store_true", help="turn the cross-grammar pool off")
    args = parser.parse_args()
    info = hf_tokenizer_info(args.tokenizer)
    items = workload(args.tokenizer, args.per_category, args.seed)
    building, plain, per_entry = [], [], []
    for _ in range(args.rounds):
        b, p, e = one_round(info, items, not args.no_pool)
        building += b
        plain += p
        per_entry += e
    fills = building + plain

    def med(values: list) -> str:
        return f"{np.median(values):.2f}" if values else "n/a"

    print(f"module {xg._native.__file__}")
    print(f"fills {len(fills) // args.rounds}/round, building {len(building) / max(1, len(fills)):.1%}")
    print(f"building fill p50 (us CPU): {med(building)}  p90 {np.percentile(building, 90) if building else 0:.1f}")
    print(f"non-building fill p50 (us CPU): {med(plain)}")
    print(f"all fills p50 (us CPU): {med(fills)}  p99 {np.percentile(fills, 99):.1f}")
    print(f"build time per entry p50 (us, cache's clock): {med(per_entry)}")
    print(f"sum of fills per round (ms CPU): {sum(fills) / args.rounds / 1e3:.1f}")


if __name__ == "__main__":
    main()
