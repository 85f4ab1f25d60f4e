#!/usr/bin/env python3
"""Soak and memory checks of one long-lived GrammarCompiler (not part of CI).

soak:   several threads share one compiler for a fixed time; each picks a random corpus
        schema, compiles it (cache hits and misses both happen), and matches a random walk of
        tokens (fill + accept per step, with occasional rollback). Reports throughput, errors
        by type and RSS over time.
memory: compiles a large part of JSONSchemaBench through one compiler with bounded caches
        and reports RSS against the configured cache limits; RSS growth should stay within
        cache_limit_bytes + mask_cache_limit_bytes + a constant (allocator slack and the
        per-process tables), i.e. flat once the caches are full.

    XG2_DATA_DIR=/work/shared/data PYTHONPATH=. python scripts/soak.py soak --seconds 300 --threads 4
    XG2_DATA_DIR=/work/shared/data PYTHONPATH=. python scripts/soak.py memory --schemas 3000
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import random
import sys
import threading
import time
import warnings
from pathlib import Path

import numpy as np

import xg2_plugin as xg
from xg2_plugin.bitmask import bitmask_to_bool_array


def rss_mb() -> float:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def load_tokenizer(data: Path, name: str) -> xg.TokenizerInfo:
    from tokenizers import Tokenizer

    return xg.TokenizerInfo.from_huggingface(Tokenizer.from_file(str(data / "tokenizers/hf" / name / "tokenizer.json")))


def load_schemas(data: Path, limit: int, seed: int) -> list[str]:
    paths = sorted((data / "jsonschemabench").glob("*.json"))
    random.Random(seed).shuffle(paths)
    return [json.dumps(json.loads(p.read_text())["schema"]) for p in paths[:limit]]


def soak(args: argparse.Namespace) -> None:
    data = Path(os.environ.get("XG2_DATA_DIR", "../shared/data"))
    info = load_tokenizer(data, args.tokenizer)
    schemas = load_schemas(data, args.schemas, args.seed)
    compiler = xg.GrammarCompiler(info, cache_limit_bytes=args.cache_mb << 20,
                                  mask_cache_limit_bytes=args.mask_cache_mb << 20)
    stop = time.monotonic() + args.seconds
    counts: collections.Counter = collections.Counter()
    errors: collections.Counter = collections.Counter()
    lock = threading.Lock()
    stops = set(info.stop_token_ids)

    def worker(index: int) -> None:
        rng = random.Random(args.seed + index)
        bitmask = np.zeros(xg.get_bitmask_shape(1, info.vocab_size), dtype=np.int32)
        local: collections.Counter = collections.Counter()
        while time.monotonic() < stop:
            text = rng.choice(schemas)
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    grammar = compiler.compile_json_schema(text, timeout=args.compile_timeout)
            except xg.XG2Error as error:
                with lock:
                    errors[type(error).__name__] += 1
                continue
            local["compiles"] += 1
            matcher = xg.GrammarMatcher(grammar)
            for _ in range(args.tokens):
                matcher.fill_next_token_bitmask(bitmask)
                local["fills"] += 1
                allowed = [t for t in np.flatnonzero(bitmask_to_bool_array(bitmask[0], info.vocab_size)) if t not in stops]
                if not allowed:
                    break
                if not matcher.accept_token(int(rng.choice(allowed))):
                    with lock:
                        errors["token in mask rejected"] += 1
                    break
                local["accepts"] += 1
                if rng.random() < 0.05 and matcher.num_accepted_steps >= 2:
                    matcher.rollback(2)
        with lock:
            counts.update(local)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(args.threads)]
    start = time.monotonic()
    print(f"soak: {len(schemas)} schemas, {args.threads} threads, {args.seconds} s, rss {rss_mb():.0f} MB", flush=True)
    for t in threads:
        t.start()
    while any(t.is_alive() for t in threads):
        time.sleep(min(args.report_every, max(0.1, stop - time.monotonic() + 0.5)))
        print(f"  t={time.monotonic() - start:6.0f}s rss={rss_mb():7.0f} MB cache={compiler.cache_size_bytes >> 20} MB "
              f"mask_pool={compiler.mask_cache_size_bytes >> 20} MB", flush=True)
    for t in threads:
        t.join()
    elapsed = time.monotonic() - start
    print(f"done in {elapsed:.0f} s: compiles {counts['compiles']} ({counts['compiles'] / elapsed:.1f}/s), "
          f"fills {counts['fills']} ({counts['fills'] / elapsed:.0f}/s), accepts {counts['accepts']}")
    print(f"errors: {dict(errors) or 'none'}")


def memory(args: argparse.Namespace) -> None:
    data = Path(os.environ.get("XG2_DATA_DIR", "../shared/data"))
    info = load_tokenizer(data, args.tokenizer)
    schemas = load_schemas(data, args.schemas, args.seed)
    cache_limit = args.cache_mb << 20
    mask_limit = args.mask_cache_mb << 20
    compiler = xg.GrammarCompiler(info, cache_limit_bytes=cache_limit, mask_cache_limit_bytes=mask_limit, precompute_nodes=0)
    baseline = rss_mb()
    print(f"memory: {len(schemas)} schemas; cache limit {args.cache_mb} MB, mask pool limit {args.mask_cache_mb} MB; "
          f"baseline rss {baseline:.0f} MB", flush=True)
    failures: collections.Counter = collections.Counter()
    peak = baseline
    bitmask = np.zeros(xg.get_bitmask_shape(1, info.vocab_size), dtype=np.int32)
    start = time.monotonic()
    for i, text in enumerate(schemas, 1):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                grammar = compiler.compile_json_schema(text, timeout=args.compile_timeout)
            xg.GrammarMatcher(grammar).fill_next_token_bitmask(bitmask)  # populates the mask cache
        except xg.XG2Error as error:
            failures[type(error).__name__] += 1
        peak = max(peak, rss_mb())
        if i % args.report_every_schemas == 0 or i == len(schemas):
            print(f"  {i:5d} schemas, {time.monotonic() - start:5.0f} s: rss {rss_mb():6.0f} MB (+{rss_mb() - baseline:.0f}), "
                  f"cache {compiler.cache_size_bytes / 2**20:.0f} MB, mask pool {compiler.mask_cache_size_bytes / 2**20:.0f} MB",
                  flush=True)
    growth = peak - baseline
    budget = (cache_limit + mask_limit) / 2**20
    print(f"peak rss growth {growth:.0f} MB vs cache limits {budget:.0f} MB "
          f"(constant overhead {growth - budget:+.0f} MB); compile errors: {dict(failures) or 'none'}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("mode", choices=["soak", "memory"])
    parser.add_argument("--tokenizer", default="llama3.1")
    parser.add_argument("--schemas", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--seconds", type=float, default=300)
    parser.add_argument("--tokens", type=int, default=24, help="tokens matched per compiled schema")
    parser.add_argument("--cache-mb", type=int, default=256)
    parser.add_argument("--mask-cache-mb", type=int, default=256)
    parser.add_argument("--compile-timeout", type=float, default=30.0)
    parser.add_argument("--report-every", type=float, default=15.0, help="seconds between soak reports")
    parser.add_argument("--report-every-schemas", type=int, default=250)
    args = parser.parse_args()
    (soak if args.mode == "soak" else memory)(args)


if __name__ == "__main__":
    sys.exit(main())
