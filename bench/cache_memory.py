"""Compiler cache memory over JSONSchemaBench, side by side with the peers (issue #5).

    XG2_DATA_DIR=/work/shared/data python bench/cache_memory.py \\
        [--engines ours,xgrammar,llguidance] [--tokenizer llama3.1] [--limit N] [--seed S] \\
        [--python ENGINE=PATH ...] [--markdown OUT.md] [--json OUT.json]

Each engine runs in a process of its own (so the RSS figures are per engine) over the same
schemas in the same order: the whole corpus, or with ``--limit N`` a uniform sample of N
schemas drawn and shuffled with ``--seed`` (the same list for every engine). Each process builds
one compiler with the engine's default settings, then for every schema compiles it, builds a
matcher and fills the first mask (what every request does before its first token), as a server
would across requests; schemas an engine rejects are skipped by that engine. The compiled
grammar and the matcher are dropped after the first mask: whatever the engine keeps lives in
its caches.

What each engine reports:
 * ours: the compiled-grammar cache (``cache_stats``: bytes, entries, evictions; default limit
   1 GiB) and the cross-grammar mask pool (``mask_cache_stats``; default limit 512 MiB). The
   grammar cache counts each grammar's own classifications too, and many of those are the same
   objects as the pool's, so the sum of the two overcounts shared objects (said in the report).
 * xgrammar: ``GrammarCompiler.get_cache_size_bytes()`` (default: unbounded cache).
 * llguidance: no compiler cache exists (a grammar is rebuilt per ``LLMatcher``); only RSS.
 * every engine: ``memory_size_bytes`` of each compiled grammar where the engine has one
   (ours, xgrammar; measured right after the first mask), and the process RSS growth from
   after the compiler is built (tokenizer loaded) to the end.
``--include RUN.json`` adds the engines of an earlier run's ``--json`` over the same sample (to
rerun only ours after a change). ``--worker ENGINE`` is the per-engine process (internal). Engines other than ours import from
the interpreter given with ``--python ENGINE=PATH`` (e.g. the bench venv's python); the
repository root is put on PYTHONPATH for every worker, so ``ours`` is this checkout's build.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any, Callable, Optional

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "bench"
ENGINES = ("ours", "xgrammar", "llguidance")


def rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize()


def mib(n: float) -> str:
    return f"{n / (1 << 20):.1f} MiB"


def kib(n: float) -> str:
    return f"{n / 1024:.1f} KiB"


def schema_sample(limit: Optional[int], seed: int) -> list[str]:
    """Corpus file names: all in file order, or a seeded uniform sample of ``limit`` in seeded order."""
    sys.path.insert(0, str(BENCH))
    from harness.corpus import list_schemas

    names = list_schemas()
    if limit is None or limit >= len(names):
        return names
    rng = random.Random(seed)
    return rng.sample(names, limit)  # uniform without replacement, in random order


# ---- per-engine worker ---------------------------------------------------------------------


class Runner:
    """One engine's compiler with its defaults; ``step`` compiles, fills a first mask, drops."""

    def __init__(self, engine: str, vocab: Any) -> None:
        self.engine = engine
        self.grammar_bytes: list[int] = []
        if engine == "ours":
            import xg2_plugin as xg

            info = xg.TokenizerInfo.from_huggingface(vocab.hf, vocab_size=vocab.vocab_size,
                                                     stop_token_ids=[vocab.eos_id])
            self.compiler = xg.GrammarCompiler(info)  # default limits
            self.bitmask = xg.allocate_token_bitmask(1, info.vocab_size)
            self.rejections: tuple[type[BaseException], ...] = (xg.XG2Error, RecursionError, ValueError, TypeError)
            self._matcher: Callable[[Any], Any] = xg.GrammarMatcher
        elif engine == "xgrammar":
            import xgrammar

            info = xgrammar.TokenizerInfo.from_huggingface(vocab.hf, vocab_size=vocab.vocab_size,
                                                           stop_token_ids=[vocab.eos_id])
            self.compiler = xgrammar.GrammarCompiler(info)  # defaults: unbounded cache
            self.bitmask = xgrammar.allocate_token_bitmask(1, info.vocab_size)
            self.rejections = (RuntimeError, ValueError, TypeError)
            self._matcher = xgrammar.GrammarMatcher
        elif engine == "llguidance":
            import llguidance
            import llguidance.hf
            import llguidance.torch

            self._llg = llguidance
            self.tokenizer = llguidance.hf.from_tokenizer(vocab.hf, n_vocab=vocab.vocab_size, eos_token=vocab.eos_id)
            self.bitmask = llguidance.torch.allocate_token_bitmask(1, vocab.vocab_size)
            self._fill = llguidance.torch.fill_next_token_bitmask
            self.rejections = (ValueError, TypeError, RuntimeError)
        else:
            raise ValueError(f"unknown engine {engine!r}")

    def step(self, schema_text: str) -> bool:
        """Compiles and fills the first mask; False where the engine rejects the schema."""
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                if self.engine == "llguidance":
                    grammar = self._llg.LLMatcher.grammar_from_json_schema(schema_text)
                    matcher = self._llg.LLMatcher(self.tokenizer, grammar, log_level=0)
                    if matcher.is_error():
                        return False
                    self._fill(matcher, self.bitmask, 0)
                    return True
                compiled = self.compiler.compile_json_schema(schema_text)
                self._matcher(compiled).fill_next_token_bitmask(self.bitmask)
                self.grammar_bytes.append(int(compiled.memory_size_bytes))
                return True
        except self.rejections:
            return False

    def cache(self) -> dict[str, int]:
        """The engine's own cache figures (bytes under ``cache_bytes``)."""
        if self.engine == "ours":
            grammar = self.compiler.cache_stats
            pool = self.compiler.mask_cache_stats
            return {"cache_bytes": grammar["bytes"] + pool["bytes"], "grammar_cache_bytes": grammar["bytes"],
                    "grammar_cache_entries": grammar["entries"], "grammar_cache_evictions": grammar["evictions"],
                    "mask_pool_bytes": pool["bytes"], "mask_pool_keys": pool["entries"]}
        if self.engine == "xgrammar":
            return {"cache_bytes": int(self.compiler.get_cache_size_bytes())}
        return {}


def run_worker(args: argparse.Namespace) -> None:
    sys.path.insert(0, str(BENCH))
    from harness.corpus import load_schema_item
    from harness.vocab import load_vocab

    names = json.loads(Path(args.names_file).read_text())
    vocab = load_vocab(args.tokenizer)
    gc.collect()
    before_engine = rss_bytes()
    runner = Runner(args.worker, vocab)
    start_rss = rss_bytes()
    compiled = rejected = 0
    progress: list[dict[str, Any]] = []
    started = time.monotonic()
    deadline = started + args.max_seconds if args.max_seconds else None
    for done, name in enumerate(names, 1):
        text = load_schema_item(name).schema_text
        if runner.step(text):
            compiled += 1
        else:
            rejected += 1
        if done % args.every == 0 or done == len(names) or (deadline and time.monotonic() > deadline):
            gc.collect()
            row = {"done": done, "compiled": compiled, "rejected": rejected,
                   "seconds": round(time.monotonic() - started, 1), "rss": rss_bytes(), **runner.cache()}
            progress.append(row)
            print(f"[{args.worker}] " + json.dumps(row), flush=True)
            if deadline and time.monotonic() > deadline:
                break
    time.sleep(2.0)  # let background precompute threads finish before the final figures
    gc.collect()
    final = {"done": progress[-1]["done"], "compiled": compiled, "rejected": rejected, "rss": rss_bytes(),
             **runner.cache()}
    sizes = runner.grammar_bytes
    result = {
        "engine": args.worker, "tokenizer": args.tokenizer, "schemas": len(names),
        "rss_before_engine": before_engine, "start_rss": start_rss,
        "peak_rss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
        "final": final, "progress": progress,
        "grammar_bytes": {"count": len(sizes), "sum": sum(sizes),
                          "mean": statistics.fmean(sizes) if sizes else None,
                          "median": statistics.median(sizes) if sizes else None,
                          "max": max(sizes) if sizes else None},
    }
    Path(args.json).write_text(json.dumps(result, indent=1))


# ---- driver -----------------------------------------------------------------------------------


def markdown(results: list[dict[str, Any]], command: str, sample: str) -> str:
    out = [f"# Compiler cache memory, side by side ({results[0]['tokenizer']})", "",
           f"Command: `{command}`", "", sample, "",
           "| engine | compiled | rejected | cache bytes at end | cache bytes / compiled grammar | "
           "grammar object: mean / median / max | RSS growth (from compiler built) | peak RSS |",
           "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for r in results:
        f = r["final"]
        cache = f.get("cache_bytes")
        per = cache / f["compiled"] if cache is not None and f["compiled"] else None
        g = r["grammar_bytes"]
        sizes = (f"{kib(g['mean'])} / {kib(g['median'])} / {kib(g['max'])}" if g["count"] else "n/a (no object)")
        out.append(f"| {r['engine']} | {f['compiled']} | {f['rejected']} | "
                   f"{mib(cache) if cache is not None else 'n/a (no cache)'} | "
                   f"{kib(per) if per is not None else 'n/a'} | {sizes} | {mib(f['rss'] - r['start_rss'])} | "
                   f"{mib(r['peak_rss'])} |")
    for r in results:
        if r["engine"] == "ours":
            f = r["final"]
            out += ["", f"ours, split: compiled-grammar cache {mib(f['grammar_cache_bytes'])} in "
                    f"{f['grammar_cache_entries']} entries ({f['grammar_cache_evictions']} evicted), mask pool "
                    f"{mib(f['mask_pool_bytes'])} in {f['mask_pool_keys']} keys. The grammar cache counts each "
                    "grammar's classifications, which are mostly the pool's objects, so the sum overcounts."]
    out += ["", "Progress (schemas done: cache bytes, RSS):", "", "```"]
    for r in results:
        for row in r["progress"]:
            cache = row.get("cache_bytes")
            out.append(f"{r['engine']:>10} {row['done']:>6} {row['seconds']:>7.1f}s compiled {row['compiled']:>5} | "
                       f"cache {mib(cache) if cache is not None else '-':>11} | RSS {mib(row['rss'])}")
    out.append("```")
    return "\n".join(out) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--engines", default="ours")
    parser.add_argument("--tokenizer", default="llama3.1")
    parser.add_argument("--limit", type=int, default=None, help="a seeded uniform sample of N schemas")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--every", type=int, default=250, help="progress line every N schemas")
    parser.add_argument("--max-seconds", type=float, default=None, help="stop an engine after this long")
    parser.add_argument("--python", action="append", default=[], metavar="ENGINE=PATH",
                        help="interpreter for an engine (default: this one)")
    parser.add_argument("--json", type=Path, default=None, help="write all figures here")
    parser.add_argument("--markdown", type=Path, default=None, help="write the report here")
    parser.add_argument("--include", type=Path, action="append", default=[],
                        help="add the engines of an earlier run's --json (same sample) to the report")
    parser.add_argument("--worker", choices=ENGINES, help=argparse.SUPPRESS)
    parser.add_argument("--names-file", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        run_worker(args)
        return

    engines = [e.strip() for e in args.engines.split(",") if e.strip()]
    pythons = dict(spec.split("=", 1) for spec in args.python)
    names = schema_sample(args.limit, args.seed)
    sample = (f"{len(names)} schemas: the whole corpus in file order" if args.limit is None else
              f"{len(names)} schemas: a uniform sample drawn and ordered with seed {args.seed} (Python "
              "random.Random(seed).sample over the sorted corpus names), the same order for every engine")
    print(sample, flush=True)
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        names_file = Path(tmp) / "names.json"
        names_file.write_text(json.dumps(names))
        for engine in engines:
            if engine not in ENGINES:
                raise SystemExit(f"unknown engine {engine!r}")
            out = Path(tmp) / f"{engine}.json"
            cmd = [pythons.get(engine, sys.executable), __file__, "--worker", engine, "--names-file", str(names_file),
                   "--tokenizer", args.tokenizer, "--every", str(args.every), "--json", str(out)]
            if args.max_seconds:
                cmd += ["--max-seconds", str(args.max_seconds)]
            env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
            subprocess.run(cmd, env=env, check=True)
            results.append(json.loads(out.read_text()))
    for path in args.include:
        earlier = json.loads(path.read_text())
        if any(r["schemas"] != len(names) for r in earlier):
            raise SystemExit(f"{path}: another sample size")
        results += [r for r in earlier if r["engine"] not in engines]
    command = "python bench/cache_memory.py " + " ".join(sys.argv[1:])
    report = markdown(results, command, sample)
    print(report)
    if args.markdown:
        args.markdown.write_text(report)
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
