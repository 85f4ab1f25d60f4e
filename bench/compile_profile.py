"""Where compile time goes, for our engine alone: schema text to the first mask, split per stage.

    PYTHONPATH=. python bench/compile_profile.py [--per-category 10] [--tokenizer llama3.1] [--repeat 3]

Stages timed from Python on the benchmark's JSONSchemaBench sample (``harness/corpus.py``, the
schemas ``run.py --per-category N`` measures; one compiler for the whole sample, as in a
server, so the cross-grammar pool warms up across schemas):
  * compile: JSON Schema text to a compiled grammar through the public
    ``GrammarCompiler.compile_json_schema``, as the benchmark calls it: its Python side (argument
    checks, the in-flight table, futures) and one native call (the JSON Schema frontend,
    which builds the rule AST directly (its EBNF view is printed only when asked), inlining, rule FSMs, hashing,
    follow sets, mask-cache setup, background precompute start; native/compiler/grammar_compiler.h);
  * matcher: matcher construction (the Earley start state);
  * first fill: the first ``fill_next_token_bitmask``.
Two parts of the compile are also timed on their own, after the timed stages and outside the
total: to_ebnf, the frontend alone (JSON Schema text to EBNF text, as ``_json_schema_to_ebnf``
returns it, without building the AST), and parse, that text's EBNF parse alone, which the compile
no longer runs (what building the AST directly replaced); their share column is of the total.
Each schema is compiled ``--repeat`` times with the compiler cache off (the cross-grammar mask pool
stays on) and the fastest run is kept, so the figures are less sensitive to machine load;
``--clock cpu`` times the stages in this thread's CPU time instead of wall time (steadier on a
shared machine; it leaves out the background precompute thread). For the
split inside the native compile, run this under ``perf record -g`` (``--loop N`` repeats the
whole sample N times).

The benchmark (``bench/run.py``) times the first compile of each schema, after a
``gc.collect()``. To see that path, use ``--repeat 1 --gc``: a repeat finds every rule DFA in
the process-wide shared table (about 2.5x faster than the first compile on the quick30
sample), and the collection leaves the CPU caches cold (on the 2-core machine it adds about
0.4 ms to each compile, most of the p50).
"""

from __future__ import annotations

import argparse
import gc
import json
import sys
import time
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "bench"))

import xg2_plugin as xg  # noqa: E402
from xg2_plugin import _native  # noqa: E402
from harness.corpus import sample_paths  # noqa: E402
from xg2_test_support import hf_tokenizer_info  # noqa: E402

STAGES = ("compile", "matcher", "first_fill", "total")
PARTS = ("to_ebnf", "parse")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--per-category", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--tokenizer", default="llama3.1")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--loop", type=int, default=1, help="repeat the whole sample (for perf record)")
    parser.add_argument("--threshold", type=int, default=None, help="repetition_compression_threshold")
    parser.add_argument("--top", type=int, default=8, help="list the slowest schemas")
    parser.add_argument("--gc", action="store_true",
                        help="gc.collect() before each compile, as the benchmark harness does")
    parser.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                        help="cpu: this thread's CPU time (time.thread_time), steadier on a loaded "
                             "machine; leaves out the background precompute thread")
    parser.add_argument("--lazy-rule-dfas", action="store_true",
                        help="compile with the internal switch that leaves rule DFAs unbuilt until a "
                             "matcher needs them (native/grammar/lazy_rule_builder.h): the first fill "
                             "then builds what it reaches")
    args = parser.parse_args()

    clock = time.perf_counter if args.clock == "wall" else time.thread_time
    info = hf_tokenizer_info(args.tokenizer)
    options = {"cache_enabled": False, "max_threads": 1}
    if args.threshold is not None:
        options["repetition_compression_threshold"] = args.threshold
    compiler = xg.GrammarCompiler(info, **options)
    limits = compiler.limits._to_native()
    if args.lazy_rule_dfas:  # internal switch: the native compiler is replaced by one with it on
        compiler._native = _native.GrammarCompiler(
            info._handle, compiler._mask_pool, compiler._token_literal_vocabs, True, True, compiler._precompute_nodes,
            compiler._repetition_compression_threshold, limits, lazy_rule_dfas=True)
    bitmask = xg.allocate_token_bitmask(1, info.vocab_size)
    paths = sample_paths(args.per_category, seed=args.seed)
    rows: list[tuple[str, dict[str, float], int]] = []
    rejected = 0
    for _ in range(args.loop):
        for path in paths:
            schema_text = json.dumps(json.loads(path.read_text())["schema"])
            best: dict[str, float] = {}
            nodes = 0
            for _ in range(args.repeat):
                times: dict[str, float] = {}
                try:
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        if args.gc:
                            gc.collect()
                        t0 = clock()
                        compiled = compiler.compile_json_schema(schema_text)
                        t1 = clock()
                        matcher = xg.GrammarMatcher(compiled)
                        t2 = clock()
                        matcher.fill_next_token_bitmask(bitmask)
                        t3 = clock()
                        ebnf, _ = _native._json_schema_to_ebnf(schema_text, limits=limits)
                        t4 = clock()
                        _native._ebnf_rule_names(ebnf)
                        t5 = clock()
                except xg.XG2Error:
                    rejected += 1
                    break
                times = {"compile": t1 - t0, "matcher": t2 - t1, "first_fill": t3 - t2, "total": t3 - t0,
                         "to_ebnf": t4 - t3, "parse": t5 - t4}
                if not best or times["total"] < best["total"]:
                    best = times
                nodes = len(ebnf)
            if best:
                rows.append((path.name, best, nodes))
    n = len(rows)
    print(f"{n} compiled, {rejected} rejected; tokenizer {args.tokenizer}; best of {args.repeat} "
          f"(ms, {args.clock} clock)")
    print(f"{'stage':12s} {'p50':>8s} {'p90':>8s} {'p99':>8s} {'sum':>9s} {'share':>6s}")
    totals = {stage: sum(r[1][stage] for r in rows) for stage in STAGES}
    totals.update({part: sum(r[1][part] for r in rows) for part in PARTS})
    for stage in STAGES + PARTS:
        values = np.asarray([r[1][stage] for r in rows]) * 1e3
        print(f"{stage:12s} {np.percentile(values, 50):8.3f} {np.percentile(values, 90):8.3f} "
              f"{np.percentile(values, 99):8.3f} {values.sum():9.1f} {totals[stage] / totals['total']:6.1%}")
    print(f"\nslowest {args.top} (ms): name, compile (to_ebnf, parse), matcher, first_fill, ebnf bytes")
    for name, times, size in sorted(rows, key=lambda r: -r[1]["total"])[: args.top]:
        print(f"  {name:45s} {times['compile'] * 1e3:8.2f} ({times['to_ebnf'] * 1e3:7.2f} {times['parse'] * 1e3:7.2f}) "
              f"{times['matcher'] * 1e3:7.2f} {times['first_fill'] * 1e3:8.2f} {size:8d}")


if __name__ == "__main__":
    main()
