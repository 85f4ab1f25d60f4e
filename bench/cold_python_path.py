"""The bench's compile path, stage by stage, cold: what the Python layer adds to the engine.

    PYTHONPATH=. XG2_DATA_DIR=... python bench/cold_python_path.py [--tokenizer llama3.1] [--rounds 5]

Reproduces what ``bench/harness/tasks.py`` times for our engine, per schema: ``gc.collect()``
(which leaves the CPU caches cold), then ``compile_json_schema(text, any_whitespace=True,
strict_mode=True)``, ``GrammarMatcher(compiled)`` and one ``fill_next_token_bitmask`` into a
torch int32 row (torch is imported, as in the bench: a larger heap for the collection to walk).
Each stage is timed on this thread's CPU clock. The same sequence is run through the native
module directly (``_native.GrammarCompiler.compile_json_schema`` with positional arguments and
``_native.GrammarMatcher``), so the difference per stage is what the Python layer costs.

Schemas: the benchmark's JSONSchemaBench sample (``--per-category`` per category) and one tiny
schema (its native compile is short, so the layer's share shows). Each round appends a space to
the text, so every compile misses the grammar cache; round 0 warms the process-wide tables and
is not counted. The two paths alternate their order every round. Medians over schemas x rounds.
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import torch  # noqa: E402,F401  (the bench process has it loaded)

import xg2_plugin as xg  # noqa: E402
from xg2_plugin import _native  # noqa: E402
from harness.corpus import sample_paths  # noqa: E402
from xg2_test_support import hf_tokenizer_info  # noqa: E402

TINY = json.dumps({"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]})
STAGES = ("compile", "matcher", "fill")


def _public(compiler, bitmask, text):
    clock = time.thread_time_ns
    t0 = clock()
    grammar = compiler.compile_json_schema(text, any_whitespace=True, strict_mode=True)
    t1 = clock()
    matcher = xg.GrammarMatcher(grammar)
    t2 = clock()
    matcher.fill_next_token_bitmask(bitmask, 0)
    t3 = clock()
    return t1 - t0, t2 - t1, t3 - t2


def _native_path(compiler, bitmask, text):
    clock = time.thread_time_ns
    native = compiler._native
    t0 = clock()
    handle, _warnings = native.compile_json_schema(text, True, None, None, True, None, False, False, False, None)
    t1 = clock()
    matcher = _native.GrammarMatcher(handle, None, False)
    t2 = clock()
    matcher.fill_next_token_bitmask(bitmask, 0)
    t3 = clock()
    return t1 - t0, t2 - t1, t3 - t2


def _measure(compiler, bitmask, texts, rounds):
    times = {path: {stage: [] for stage in STAGES} for path in ("public", "native")}
    for round_index in range(rounds + 1):
        order = (("public", _public), ("native", _native_path))
        if round_index % 2:
            order = order[::-1]
        for text in texts:
            spent = {}
            for path, run in order:
                # The two paths compile distinct texts, so neither hits the other's cache entry.
                padded = text + " " * (2 * round_index + (path == "native"))
                gc.collect()
                try:
                    spent[path] = run(compiler, bitmask, padded)
                except xg.XG2Error:
                    break
            if round_index and len(spent) == 2:  # schemas both paths compiled, counted for both
                for path, stages in spent.items():
                    for stage, ns in zip(STAGES, stages):
                        times[path][stage].append(ns / 1000)
    return times


def _report(title, times):
    print(f"{title}: median us (thread CPU clock), {len(times['public']['compile'])} samples")
    print(f"  {'stage':<9}{'public':>10}{'native':>10}{'layer':>10}")
    for stage in STAGES:
        public = statistics.median(times["public"][stage])
        native = statistics.median(times["native"][stage])
        print(f"  {stage:<9}{public:10.1f}{native:10.1f}{public - native:10.1f}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tokenizer", default="llama3.1")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--per-category", type=int, default=10)
    parser.add_argument("--tiny-rounds", type=int, default=200)
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    info = hf_tokenizer_info(args.tokenizer)
    compiler = xg.GrammarCompiler(info, max_threads=1)
    bitmask = torch.full((1, (info.vocab_size + 31) // 32), -1, dtype=torch.int32)
    paths = sample_paths(args.per_category, seed=0)
    texts = [json.dumps(json.loads(path.read_text())["schema"]) for path in paths]
    _report(f"tiny schema x {args.tiny_rounds}", _measure(compiler, bitmask, [TINY], args.tiny_rounds))
    _report(f"{len(texts)} corpus schemas x {args.rounds} rounds", _measure(compiler, bitmask, texts, args.rounds))


if __name__ == "__main__":
    main()
