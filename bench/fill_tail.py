"""Where the slow fills of the JSON Schema bench come from, for our engine alone: the bench's
own workload (same sample, tokenizer, serialization and compiler options as `bench/run.sh`),
each fill along the valid instance timed twice in a row.

    PYTHONPATH=. python bench/fill_tail.py [--tokenizer llama3.1] [--per-category 10] [--top 30]

Times are the calling thread's CPU time (so a scheduler time slice on a loaded machine is
not counted; the background precompute's work is not either). For every token position:
  * first: the fill the bench times (it builds the cache entries the state needs);
  * again: the same state filled again (its entries now built): the walk of uncertain tokens,
    the merges, and any reference fill the state forces;
  * built: cache entries the grammar gained during the first fill (the background precompute
    may add some of its own meanwhile, unless --wait-background).
A fill is counted as "cold" when `first` exceeds twice `again` and at least one entry was built
during it; the rest of the tail is "warm" (the state costs that much every time).
Percentiles are over the pooled fills of the instances, as in the bench report; the machine is
shared, so compare runs made side by side.
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

import xg2_plugin as xg  # noqa: E402
from harness.corpus import list_schemas, load_schema_item, serialize_instance, stratified_sample  # noqa: E402
from harness.vocab import load_vocab  # noqa: E402


OUTCOMES = ("perfect_hits", "partial_hits", "misses", "bypasses")


def pool_counts(compiler) -> tuple[int, ...]:
    stats = compiler.mask_cache_stats
    return tuple(stats[k] for k in OUTCOMES)


# The thread's CPU time: on a loaded machine, wall-clock fills pick up the scheduler's time
# slices (a few milliseconds each) that have nothing to do with the fill.
clock = time.thread_time_ns


def walk(compiler, vocab, bitmask, name: str, wait_background: bool) -> list[tuple]:
    """(position, first ns, again ns, entries built, pool outcomes) per fill along the first
    valid instance."""
    item = load_schema_item(name)
    if not item.valid:
        return []
    try:
        grammar = compiler.compile_json_schema(item.schema_text)
    except xg.XG2Error:
        return []
    xg.GrammarMatcher(grammar).fill_next_token_bitmask(bitmask)  # the bench's first mask
    if wait_background:
        xg._native._wait_for_background_work()
    tokens = vocab.encode(serialize_instance(item.valid[0], item.schema)) + [vocab.eos_id]
    matcher = xg.GrammarMatcher(grammar)
    rows = []
    gc.disable()
    try:
        for position, token in enumerate(tokens):
            before = grammar._handle.cached_nodes
            pool_before = pool_counts(compiler)
            t0 = clock()
            matcher.fill_next_token_bitmask(bitmask)
            t1 = clock()
            built = grammar._handle.cached_nodes - before
            outcomes = tuple(a - b for a, b in zip(pool_counts(compiler), pool_before))
            matcher.fill_next_token_bitmask(bitmask)
            t2 = clock()
            rows.append((position, t1 - t0, t2 - t1, built, outcomes))
            if not matcher.accept_token(token):
                return []
    finally:
        gc.enable()
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tokenizer", default="llama3.1")
    parser.add_argument("--per-category", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--top", type=int, default=30)
    parser.add_argument("--wait-background", action="store_true",
                        help="let the precompute finish before the walk (isolates what it leaves undone)")
    parser.add_argument("--precompute", type=int, default=None, help="compiler option precompute_nodes")
    parser.add_argument("--no-pool", action="store_true", help="compiler option cross_grammar_cache=False")
    parser.add_argument("--only", nargs="*", default=[])
    args = parser.parse_args()
    vocab = load_vocab(args.tokenizer)
    info = xg.TokenizerInfo.from_huggingface(vocab.hf, vocab_size=vocab.vocab_size, stop_token_ids=[vocab.eos_id])
    options = {"max_threads": 1}
    if args.no_pool:
        options["cross_grammar_cache"] = False
    if args.precompute is not None:
        options["precompute_nodes"] = args.precompute
    compiler = xg.GrammarCompiler(info, **options)
    bitmask = xg.allocate_token_bitmask(1, info.vocab_size)
    names = args.only or stratified_sample(list_schemas(), args.per_category, args.seed)
    fills = []  # (first, again, built, name, position, pool outcomes)
    for name in names:
        for position, first, again, built, outcomes in walk(compiler, vocab, bitmask, name, args.wait_background):
            fills.append((first, again, built, name, position, outcomes))
    first = np.array([f[0] for f in fills], dtype=float) / 1e3
    again = np.array([f[1] for f in fills], dtype=float) / 1e3
    print(f"{len(fills)} fills over {len({f[3] for f in fills})} schemas, tokenizer {args.tokenizer}, "
          f"module {xg._native.__file__}")
    for label, values in (("first (us)", first), ("again (us)", again)):
        print(f"{label:11} " + " ".join(f"p{q:g}={np.percentile(values, q):.1f}" for q in (50, 90, 99, 99.9)))
    for q in (99, 99.9):
        threshold = np.percentile(first, q)
        tail = [f for f in fills if f[0] / 1e3 >= threshold]
        cold = [f for f in tail if f[2] > 0 and f[0] > 2 * f[1]]
        print(f"tail >= p{q:g} ({threshold:.0f} us): {len(tail)} fills, cold {len(cold)}, warm {len(tail) - len(cold)}; "
              f"positions {sorted(Counter(min(f[4], 9) for f in tail).items())} (9 = 9 or later); "
              f"entries built in the tail {sum(f[2] for f in tail)}; pool outcomes "
              + ", ".join(f"{k} {sum(f[5][i] for f in tail)}" for i, k in enumerate(OUTCOMES)))
        print("  by schema: " + ", ".join(f"{n} {c}" for n, c in Counter(f[3] for f in tail).most_common(8)))
    print(f"slowest {args.top} fills (first us, again us, entries built, pool outcomes {'/'.join(OUTCOMES)}, "
          "schema, position):")
    for f in sorted(fills, reverse=True)[: args.top]:
        print(f"  {f[0] / 1e3:9.1f} {f[1] / 1e3:9.1f} {f[2]:4d} {'/'.join(map(str, f[5])):>12}  {f[3]}  {f[4]}")


if __name__ == "__main__":
    main()
