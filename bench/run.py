"""Benchmark driver: our engine against xgrammar and llguidance, side by side, in one run.

Usually started through ``bash bench/run.sh`` (which prepares the environment)::

    bash bench/run.sh --quick                      # fixed stratified sample, a few minutes
    bash bench/run.sh --full                       # the whole JSONSchemaBench corpus
    bash bench/run.sh --quick --tokenizer qwen3    # another tokenizer
    bash bench/run.sh --quick --per-category 2 --no-batch   # smaller still
    bash bench/run.sh --report-only bench/out/quick-llama3.1  # re-render a report

Raw results go to ``bench/out/<name>/`` (``results.jsonl``, ``meta.json``, worker logs); the
report to ``bench/results/<name>.md`` with its plots beside it.
"""

from __future__ import annotations

import argparse
import json
import random
import shlex
import signal
import sys
import time
from collections import Counter
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from harness.config import BENCH_DIR, TOKENIZERS, BatchOptions, WorkOptions, data_dir
from harness.corpus import list_grammars, list_schemas, stratified_sample
from harness.engines import ENGINES, PEERS, BASELINE, ablation_variants
from harness.pool import Task, WorkerPool
from harness.report import write_report
from harness.stats import accepted_by_all, index_results
from harness.sysinfo import machine_facts

# Per-mode defaults; every one can be overridden on the command line.
MODES: dict[str, dict[str, Any]] = {
    "quick": dict(per_category=10, max_valid=1, max_invalid=2, walks=1, walk_cap=192, grammar_walks=2,
                  grammar_walk_cap=64, batch_rounds=10, timeout=120.0),
    "full": dict(per_category=0, max_valid=3, max_invalid=3, walks=2, walk_cap=256, grammar_walks=3,
                 grammar_walk_cap=128, batch_rounds=30, timeout=300.0),
}


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--quick", dest="mode", action="store_const", const="quick", help="stratified sample (default)")
    mode.add_argument("--full", dest="mode", action="store_const", const="full", help="the whole corpus")
    parser.add_argument("--name", help="run name (default: <mode>-<tokenizer>)")
    parser.add_argument("--tokenizer", default="llama3.1", choices=sorted(TOKENIZERS))
    parser.add_argument("--engines", default=",".join([BASELINE, *PEERS]), help="comma-separated registered engines")
    parser.add_argument("--ablation", action="store_true", help="also run every registered ablation variant of ours")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--per-category", type=int, help="schemas per category (0 = all)")
    parser.add_argument("--categories", help="comma-separated category filter")
    parser.add_argument("--schemas", nargs="*", help="explicit schema file names (overrides sampling)")
    parser.add_argument("--jobs", type=int, default=1, help="items run at once (1 gives the cleanest timings)")
    parser.add_argument("--timeout", type=float, help="seconds per item and engine")
    parser.add_argument("--max-valid", type=int, help="valid instances walked per schema")
    parser.add_argument("--max-invalid", type=int, help="invalid instances checked per schema")
    parser.add_argument("--walks", type=int, help="random walks per schema")
    parser.add_argument("--walk-cap", type=int, help="token cap of a random walk")
    parser.add_argument("--grammar-walks", type=int)
    parser.add_argument("--grammar-walk-cap", type=int)
    parser.add_argument("--no-schemas", action="store_true")
    parser.add_argument("--no-grammars", action="store_true")
    parser.add_argument("--no-batch", action="store_true")
    parser.add_argument("--batch-sizes", default="64,256")
    parser.add_argument("--batch-threads", default="1,2")
    parser.add_argument("--batch-rounds", type=int)
    parser.add_argument("--out", type=Path, default=BENCH_DIR / "out", help="folder for raw results")
    parser.add_argument("--results", type=Path, default=BENCH_DIR / "results", help="folder for the report")
    parser.add_argument("--report-only", type=Path, metavar="RAW_DIR", help="re-render the report of a finished run")
    parser.add_argument("--resume", action="store_true",
                        help="continue an interrupted run of the same name: keep its results and skip finished items")
    args = parser.parse_args(argv)
    args.mode = args.mode or "quick"
    for key, value in MODES[args.mode].items():
        if getattr(args, key, None) is None:
            setattr(args, key, value)
    args.name = args.name or f"{args.mode}-{args.tokenizer}"
    names = [e for e in args.engines.split(",") if e]
    if args.ablation:
        names += [v for v in ablation_variants() if v not in names]
    unknown = [e for e in names if e not in ENGINES]
    if unknown:
        parser.error(f"unknown engines {unknown}; registered: {sorted(ENGINES)}")
    args.engine_list = names
    return args


def choose_schemas(args: argparse.Namespace) -> tuple[list[str], str]:
    """The schema sample and a one-line description of how it was drawn."""
    if args.no_schemas:
        return [], "none"
    if args.schemas:
        return sorted(args.schemas), "listed on the command line"
    categories = args.categories.split(",") if args.categories else None
    names = list_schemas(categories)
    if args.per_category and args.per_category > 0:
        return stratified_sample(names, args.per_category, args.seed), f"{args.per_category} per category, seed {args.seed}"
    return names, "whole corpus" + (f" of {args.categories}" if categories else "")


class Recorder:
    """Appends results to ``results.jsonl`` and keeps them in memory, with a progress bar."""

    def __init__(self, path: Path, total: int, desc: str) -> None:
        from tqdm import tqdm

        self.file = open(path, "a", encoding="utf-8")
        self.results: list[dict[str, Any]] = []
        self.counts: Counter[str] = Counter()
        self.bar = tqdm(total=total, desc=desc, unit="item", dynamic_ncols=True, smoothing=0.05)

    def __call__(self, result: dict[str, Any]) -> None:
        self.file.write(json.dumps(result) + "\n")
        self.file.flush()
        self.results.append(result)
        self.counts[result.get("status", "?")] += 1
        self.bar.set_postfix_str(f"{result['engine']} {result['item'][:28]} | " +
                                 " ".join(f"{k}:{v}" for k, v in sorted(self.counts.items())), refresh=False)
        self.bar.update(1)

    def close(self) -> None:
        self.bar.close()
        self.file.close()


def batch_items(results: list[dict[str, Any]], engines: list[str], limit: int) -> list[dict[str, Any]]:
    """Schemas (with a valid instance) that every engine compiled and accepted, for batch filling."""
    table = index_results(results, "schema")
    chosen: list[dict[str, Any]] = []
    seen: set[str] = set()
    for item, index in accepted_by_all(table, engines):
        if item not in seen:
            seen.add(item)
            chosen.append({"item": item, "index": index})
    return chosen[:limit]


def run(args: argparse.Namespace) -> Path:
    raw_dir = args.out / args.name
    raw_dir.mkdir(parents=True, exist_ok=True)
    results_path = raw_dir / "results.jsonl"
    meta_path = raw_dir / "meta.json"
    previous: list[dict[str, Any]] = []
    previous_meta: dict[str, Any] = {}
    if args.resume and results_path.exists():
        previous = [json.loads(line) for line in results_path.read_text().splitlines() if line.strip()]
        previous_meta = json.loads(meta_path.read_text()) if meta_path.exists() else {}
    else:
        results_path.unlink(missing_ok=True)
    schemas, description = choose_schemas(args)
    grammars = [] if args.no_grammars else list_grammars()
    (raw_dir / "sample.txt").write_text("\n".join(schemas) + "\n")
    work = WorkOptions(max_valid_instances=args.max_valid, max_invalid_instances=args.max_invalid,
                       walks=args.walks, walk_token_cap=args.walk_cap, grammar_walks=args.grammar_walks,
                       grammar_walk_token_cap=args.grammar_walk_cap, seed=args.seed)
    batch = BatchOptions(batch_sizes=[int(x) for x in args.batch_sizes.split(",") if x],
                         threads=[int(x) for x in args.batch_threads.split(",") if x], rounds=args.batch_rounds)
    engines = args.engine_list
    started = time.time()
    # A resumed run keeps its first start, commit and machine facts; every continuation is listed.
    meta: dict[str, Any] = {
        "name": args.name, "mode": args.mode, "tokenizer": args.tokenizer, "seed": args.seed, "engines": engines,
        "command": "bash bench/run.sh " + shlex.join(sys.argv[1:]), "timeout_s": args.timeout, "jobs": args.jobs,
        "work": work.to_dict(), "batch": batch.__dict__, "data_dir": str(data_dir()),
        "started": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"), "machine": machine_facts(),
        "raw_dir": str(raw_dir.relative_to(BENCH_DIR.parent)) if raw_dir.is_relative_to(BENCH_DIR.parent) else str(raw_dir),
        "sample": {"schemas": len(schemas), "grammars": len(grammars), "description": description, "names": schemas},
    }
    if previous_meta:
        for key in ("started", "machine", "command"):
            meta[key] = previous_meta.get(key, meta[key])
    meta["sessions"] = previous_meta.get("sessions", []) + [
        {"started": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"), "commit": machine_facts()["commit"]}]
    print(f"{len(schemas)} schemas ({description}), {len(grammars)} grammars, engines {engines}, tokenizer {args.tokenizer}")
    pool = WorkerPool(args.tokenizer, args.jobs, raw_dir / "logs")
    options = work.to_dict()
    task_id = 0
    tasks: list[Task] = []
    # Schemas run in a seeded random order (each schema's engines back to back), so that a run
    # cut short and resumed later is a uniform sample of the corpus at every point, not its
    # first categories.
    run_order = list(schemas)
    random.Random(args.seed).shuffle(run_order)
    for name in run_order:
        for engine in engines:
            task_id += 1
            tasks.append(Task(task_id, engine, "schema", name, args.timeout, {"options": options}))
    for name in grammars:
        for engine in engines:
            task_id += 1
            tasks.append(Task(task_id, engine, "grammar", name, args.timeout, {"options": options}))
    done = {(r["engine"], r["kind"], r["item"]) for r in previous if r.get("kind") in ("schema", "grammar")}
    tasks = [t for t in tasks if (t.engine, t.kind, t.item) not in done]
    meta["planned_items"] = task_id
    meta["complete"] = False
    recorder = Recorder(results_path, len(tasks), "schemas+grammars")
    try:
        pool.run(tasks, recorder)
        recorder.close()
        all_results = [r for r in previous if r.get("kind") in ("schema", "grammar")] + list(recorder.results)
        if not args.no_batch and any(r.get("kind") == "batch" for r in previous):
            print("batch fill already measured in the resumed run")
        elif not args.no_batch:
            items = batch_items(all_results, [e for e in engines if ENGINES[e].ablation is None], 32)
            if items:
                batch_tasks = []
                for size in batch.batch_sizes:
                    for threads in batch.threads:
                        for engine in engines:
                            task_id += 1
                            batch_tasks.append(Task(task_id, engine, "batch", f"batch{size}x{threads}", args.timeout,
                                                    {"batch": size, "threads": threads, "rounds": batch.rounds, "items": items}))
                recorder = Recorder(results_path, len(batch_tasks), "batch fill")
                pool.run(batch_tasks, recorder)
                recorder.close()
                all_results += recorder.results
            else:
                print("batch fill skipped: no schema was compiled and accepted by every engine")
        meta["complete"] = True
    finally:
        pool.close()
        # Written also when the run is interrupted, so that --resume and --report-only can use it.
        meta["engine_info"] = pool.engine_info or previous_meta.get("engine_info", {})
        meta["elapsed_s"] = previous_meta.get("elapsed_s", 0.0) + time.time() - started
        meta["load_average_end"] = machine_facts()["load_average"]
        meta_path.write_text(json.dumps(meta, indent=1))
    return render(raw_dir, args.results)


def render(raw_dir: Path, results_dir: Path) -> Path:
    """Builds the report of a run from its raw folder."""
    meta = json.loads((raw_dir / "meta.json").read_text())
    results = [json.loads(line) for line in (raw_dir / "results.jsonl").read_text().splitlines() if line.strip()]
    path = write_report(results_dir / f"{meta['name']}.md", results, meta["engines"], meta)
    print(f"report: {path}")
    return path


def _interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def main(argv: list[str]) -> int:
    # SIGTERM (and SIGINT, which a shell's background job ignores) end the run through the same
    # path, so its meta.json is written and --resume can continue it.
    signal.signal(signal.SIGTERM, _interrupt)
    signal.signal(signal.SIGINT, _interrupt)
    args = parse_args(argv)
    if args.report_only:
        render(args.report_only, args.results)
        return 0
    run(args)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
