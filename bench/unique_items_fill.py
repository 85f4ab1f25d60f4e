"""Mask cost inside a uniqueItems array (the matcher keeps items distinct) against the same
array without uniqueItems: per-token fill time along one document, same tokens, same run.

    PYTHONPATH=. python bench/unique_items_fill.py [--tokenizer llama3.1] [--items 24] [--rounds 5]

Each round walks a fresh matcher of each grammar over the document (the mask cache already
warm from a first pass), interleaved; the figures are medians over every fill of every round,
on the calling thread's CPU clock (time.thread_time_ns: the single fill runs on that thread).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

import xg2_plugin as xg  # noqa: E402
from xg2_test_support import encode_continuation, hf_tokenizer_info  # noqa: E402


def fills(grammar: xg.CompiledGrammar, ids: list[int]) -> list[int]:
    matcher = xg.GrammarMatcher(grammar)
    bitmask = np.zeros(xg.get_bitmask_shape(1, grammar.tokenizer_info.vocab_size), dtype=np.int32)
    times = []
    for token in ids:
        start = time.thread_time_ns()
        matcher.fill_next_token_bitmask(bitmask)
        times.append(time.thread_time_ns() - start)
        assert matcher.accept_token(token)
    return times


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tokenizer", default="llama3.1")
    parser.add_argument("--items", type=int, default=24)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    compiler = xg.GrammarCompiler(hf_tokenizer_info(args.tokenizer), cache_enabled=False)
    # Listed items: an enum of twice as many words as the document uses (the parser decides
    # every prefix inside them, finite_unique_items.cc).
    words = [f"word{i}" for i in range(2 * args.items)]
    documents = {
        "string": ({"type": "string"}, '["' + '", "'.join(f"tag {i} of the release" for i in range(args.items)) + '"]'),
        "number": ({"type": "number"}, "[" + ", ".join(str(i * 7 + 0.5) for i in range(args.items)) + "]"),
        "listed": ({"type": "string", "enum": words}, '["' + '", "'.join(words[1::2]) + '"]'),
    }
    for kind, (items, text) in documents.items():
        plain = {"type": "array", "items": items}
        grammars = {"plain": compiler.compile_json_schema(plain),
                    "unique": compiler.compile_json_schema({**plain, "uniqueItems": True})}
        ids = encode_continuation(args.tokenizer, text)
        for grammar in grammars.values():
            fills(grammar, ids)  # builds the cache entries
        samples: dict[str, list[int]] = {name: [] for name in grammars}
        for _ in range(args.rounds):
            for name, grammar in grammars.items():
                samples[name] += fills(grammar, ids)
        medians = {name: statistics.median(values) / 1000 for name, values in samples.items()}
        p90 = {name: float(np.percentile(values, 90)) / 1000 for name, values in samples.items()}
        print(f"{kind} items, {len(ids)} tokens x {args.rounds} rounds: "
              + ", ".join(f"{name} median {medians[name]:.1f} us (p90 {p90[name]:.1f})" for name in grammars)
              + f"; unique / plain median {medians['unique'] / medians['plain']:.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
