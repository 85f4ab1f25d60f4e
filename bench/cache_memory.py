"""Memory of the compiler's caches after compiling the whole JSONSchemaBench corpus (issue #5).

    PYTHONPATH=. python bench/cache_memory.py [--tokenizer llama3.1] [--limit N] [--no-first-mask]

One ``GrammarCompiler`` with its default limits (compiled-grammar cache 1 GiB, cross-grammar
mask pool 512 MiB, 8 precomputed nodes per grammar) compiles every schema of the corpus in file
order, as a server would across requests; rejected schemas are skipped. By default each compiled
grammar also fills its first mask (what every request does before its first token), so the pool
holds the classifications a first token needs. Along the way and at the end it prints the
compiled-grammar cache (bytes, entries, evictions), the mask pool (bytes, entries, hits, misses)
and the process RSS. Background precompute threads are let finish before the final figures.
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

import xg2_plugin as xg  # noqa: E402
from xg2_test_support import data_dir, hf_tokenizer_info  # noqa: E402


def rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize()


def mib(n: float) -> str:
    return f"{n / (1 << 20):.1f} MiB"


def snapshot(compiler: xg.GrammarCompiler) -> dict[str, int]:
    grammar = compiler.cache_stats
    pool = compiler.mask_cache_stats
    return {"grammar_bytes": grammar["bytes"], "grammar_entries": grammar["entries"],
            "grammar_evictions": grammar["evictions"], "pool_bytes": pool["bytes"],
            "pool_keys": pool["entries"], "pool_hits": pool["hits"], "pool_misses": pool["misses"],
            "rss": rss_bytes()}


def line(done: int, total: int, compiled: int, rejected: int, elapsed: float, snap: dict[str, int]) -> str:
    return (f"[{done}/{total}] {elapsed:.0f}s compiled {compiled} rejected {rejected} | grammar cache "
            f"{mib(snap['grammar_bytes'])} in {snap['grammar_entries']} (evicted {snap['grammar_evictions']}) | "
            f"mask pool {mib(snap['pool_bytes'])} in {snap['pool_keys']} keys (hits {snap['pool_hits']}, "
            f"misses {snap['pool_misses']}) | RSS {mib(snap['rss'])}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tokenizer", default="llama3.1")
    parser.add_argument("--limit", type=int, default=None, help="only the first N schemas")
    parser.add_argument("--no-first-mask", action="store_true", help="compile only")
    parser.add_argument("--every", type=int, default=250, help="progress line every N schemas")
    parser.add_argument("--json", type=Path, default=None, help="write the final figures here")
    args = parser.parse_args()

    info = hf_tokenizer_info(args.tokenizer)
    start_rss = rss_bytes()
    compiler = xg.GrammarCompiler(info)  # default limits
    bitmask = xg.allocate_token_bitmask(1, info.vocab_size)
    paths = sorted((data_dir() / "jsonschemabench").glob("*.json"))[: args.limit]
    compiled = rejected = 0
    started = time.monotonic()
    print(f"tokenizer {args.tokenizer}; RSS with tokenizer loaded {mib(start_rss)}; {len(paths)} schemas", flush=True)
    for done, path in enumerate(paths, 1):
        schema = json.loads(path.read_text())["schema"]
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                grammar = compiler.compile_json_schema(schema)
            if not args.no_first_mask:
                xg.GrammarMatcher(grammar).fill_next_token_bitmask(bitmask)
            compiled += 1
        except (xg.XG2Error, RecursionError, ValueError, TypeError):
            rejected += 1
        if done % args.every == 0 or done == len(paths):
            print(line(done, len(paths), compiled, rejected, time.monotonic() - started, snapshot(compiler)),
                  flush=True)
    time.sleep(2.0)  # background precompute of the last grammars
    final = snapshot(compiler)
    print("final: " + line(len(paths), len(paths), compiled, rejected, time.monotonic() - started, final))
    max_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(f"peak RSS {mib(max_rss)}; RSS growth over the run {mib(final['rss'] - start_rss)}")
    if args.json:
        args.json.write_text(json.dumps({"tokenizer": args.tokenizer, "schemas": len(paths), "compiled": compiled,
                                         "rejected": rejected, "first_mask": not args.no_first_mask,
                                         "start_rss": start_rss, "peak_rss": max_rss, **final}, indent=1))


if __name__ == "__main__":
    main()
