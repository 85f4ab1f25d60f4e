"""Where mask time goes, for our engine alone: token classification per cache node, time to
first mask and per-token fill along the valid instances of a JSONSchemaBench sample.

    PYTHONPATH=. python bench/fill_profile.py [--per-category 3] [--tokenizer llama3.1]

Two passes over the same schemas:
  * classification: pure JIT (no background precompute, no cross-grammar pool). At every
    step the mask is filled twice; the first fill builds the nodes the state needs, the
    second finds them built. (first - second) / nodes built = classification time per node.
  * serving: the compiler's default options, one compiler for the whole sample (the
    cross-grammar pool warms up across schemas, as in a server). Compile, first mask, and
    every fill along the instance are timed.
Medians and percentiles only; the machine is shared, so compare runs made side by side.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "bench"))

import xg2_plugin as xg  # noqa: E402
from harness.corpus import sample_paths  # noqa: E402
from xg2_test_support import dumps, encode_continuation, hf_tokenizer_info, ordered_like_schema  # noqa: E402


def percentiles(values: list[float], qs: tuple[float, ...] = (50, 99)) -> str:
    if not values:
        return "n/a"
    arr = np.asarray(values)
    return " ".join(f"p{q:g}={np.percentile(arr, q):.1f}" for q in qs) + f" n={len(arr)}"


def workload(tokenizer: str, per_category: int, seed: int) -> list[tuple[str, dict, list[int]]]:
    items = []
    for path in sample_paths(per_category, seed=seed):
        data = json.loads(path.read_text())
        valid = [t["data"] for t in data.get("tests", []) if t.get("valid")]
        if not valid:
            continue
        text = dumps(ordered_like_schema(valid[0], data["schema"]))
        try:
            ids = encode_continuation(tokenizer, text)
        except AssertionError:
            continue
        items.append((path.name, data["schema"], ids))
    return items


def compile_or_none(compiler: xg.GrammarCompiler, schema: dict) -> "xg.CompiledGrammar | None":
    try:
        return compiler.compile_json_schema(schema, strict_mode=False)
    except (xg.SchemaError, xg.ResourceLimitError):
        return None


def classification_pass(info: xg.TokenizerInfo, items: list, compiler_options: dict) -> None:
    compiler = xg.GrammarCompiler(info, cross_grammar_cache=False, precompute_nodes=0, cache_enabled=False,
                                  **compiler_options)
    bitmask = xg.allocate_token_bitmask(1, info.vocab_size)
    per_node_us: list[float] = []
    for name, schema, ids in items:
        grammar = compile_or_none(compiler, schema)
        if grammar is None:
            continue
        matcher = xg.GrammarMatcher(grammar)
        for token in ids:
            before = grammar._handle.cached_nodes
            t0 = time.perf_counter()
            matcher.fill_next_token_bitmask(bitmask)
            t1 = time.perf_counter()
            matcher.fill_next_token_bitmask(bitmask)
            t2 = time.perf_counter()
            built = grammar._handle.cached_nodes - before
            if built:
                per_node_us.append(max(0.0, (t1 - t0) - (t2 - t1)) * 1e6 / built)
            if not matcher.accept_token(token):
                break
    print(f"classification per node (us): {percentiles(per_node_us, (50, 90, 99))} "
          f"mean={np.mean(per_node_us) if per_node_us else 0:.1f}")


def serving_pass(info: xg.TokenizerInfo, items: list, compiler_options: dict, top: int = 0) -> None:
    compiler = xg.GrammarCompiler(info, cache_enabled=False, **compiler_options)
    bitmask = xg.allocate_token_bitmask(1, info.vocab_size)
    compile_us, first_us, fill_us, accept_us = [], [], [], []
    slowest: list[tuple[float, str, int]] = []  # (fill us, schema, token index)
    for name, schema, ids in items:
        t0 = time.perf_counter()
        grammar = compile_or_none(compiler, schema)
        if grammar is None:
            continue
        matcher = xg.GrammarMatcher(grammar)
        compile_us.append((time.perf_counter() - t0) * 1e6)
        for k, token in enumerate(ids):
            t0 = time.perf_counter()
            matcher.fill_next_token_bitmask(bitmask)
            elapsed = (time.perf_counter() - t0) * 1e6
            (first_us if k == 0 else fill_us).append(elapsed)
            if k > 0:
                slowest.append((elapsed, name, k))
            t0 = time.perf_counter()
            ok = matcher.accept_token(token)
            accept_us.append((time.perf_counter() - t0) * 1e6)
            if not ok:
                print(f"  {name}: token {k} rejected", file=sys.stderr)
                break
    print(f"compile (us):    {percentiles(compile_us)}")
    print(f"first mask (us): {percentiles(first_us)}")
    print(f"fill (us):       {percentiles(fill_us, (50, 99, 99.9))}")
    print(f"accept (us):     {percentiles(accept_us)}")
    print(f"pool: {compiler.mask_cache_stats}")
    if top > 0:
        print(f"slowest {top} fills (us, schema, token index):")
        for elapsed, name, k in sorted(slowest, reverse=True)[:top]:
            print(f"  {elapsed:10.1f}  {name}  {k}")
        per_schema: dict[str, float] = {}
        for elapsed, name, _ in slowest:
            per_schema[name] = per_schema.get(name, 0.0) + elapsed
        print("schemas with the most fill time (total us):")
        for name, total in sorted(per_schema.items(), key=lambda kv: -kv[1])[:top]:
            print(f"  {total:10.1f}  {name}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tokenizer", default="llama3.1")
    parser.add_argument("--per-category", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--skip-classification", action="store_true")
    parser.add_argument("--top", type=int, default=15, help="list the slowest fills and schemas (0: none)")
    parser.add_argument("--exclude", nargs="*", default=[], help="schema file names to leave out")
    parser.add_argument("--only", nargs="*", default=[], help="keep only these schema file names")
    parser.add_argument("--repetition-compression-threshold", type=int, default=None,
                        help="compiler option (0 turns repetition compression off)")
    args = parser.parse_args()
    info = hf_tokenizer_info(args.tokenizer)
    items = [item for item in workload(args.tokenizer, args.per_category, args.seed)
             if item[0] not in args.exclude and (not args.only or item[0] in args.only)]
    options = {}
    if args.repetition_compression_threshold is not None:
        options["repetition_compression_threshold"] = args.repetition_compression_threshold
    print(f"{len(items)} schemas with a valid instance, tokenizer {args.tokenizer}, module {xg._native.__file__}")
    if not args.skip_classification:
        classification_pass(info, items, options)
    serving_pass(info, items, options, args.top)


if __name__ == "__main__":
    main()
