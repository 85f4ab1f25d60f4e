"""Where the time of one tool-call mask fill goes, for our engine alone: the per-call floor
(a native call that does nothing), the fill into a numpy row (buffer protocol), into a torch
row (layout read through torch's attributes) and through the Python matcher, at every state of
the tags_bench replies, split into free-text and call states.

    PYTHONPATH=. python bench/fill_floor.py [--format llama3.1-json] [--tool-sets 8] [--repeats 30]

Each state is filled `repeats` times in a row and the minimum is kept (the state's rows are
then cached, as in a walk where the background precompute kept up). Medians over states;
the machine is shared, so compare columns of one run.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import tags_bench as tb  # noqa: E402


def best_ns(call, repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter_ns()
        call()
        best = min(best, time.perf_counter_ns() - start)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--format", default="llama3.1-json", choices=list(tb.FORMATS))
    parser.add_argument("--tool-sets", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=30)
    args = parser.parse_args()

    import transformers
    import xgrammar

    import xg2_plugin as xg

    model, tokenizer, reasoning, _ = tb.FORMATS[args.format]
    hf = transformers.PreTrainedTokenizerFast.from_pretrained(str(tb.DATA / "tokenizers" / "hf" / tokenizer),
                                                              local_files_only=True)
    engine = tb.Engine("xg2", hf)
    torch_row = engine.bitmask
    numpy_row = torch_row.numpy()
    columns = ("native no-op", "numpy row", "torch row", "Python matcher")
    spans = {"free text": {c: [] for c in columns}, "call": {c: [] for c in columns}}
    for tools, name, call_args in tb.load_tool_sets(args.tool_sets):
        tag = json.loads(xgrammar.get_model_structural_tag(model, tools, "auto", reasoning=reasoning).model_dump_json())
        grammar, _ = engine.compile(tag)
        xg._native._wait_for_background_work()
        text, call_start = tb.reply(args.format, name, call_args)
        ids, starts = engine.encode(text)
        matcher = xg.GrammarMatcher(grammar)
        handle = matcher._handle
        for token, start in zip(ids, starts):
            matcher.fill_next_token_bitmask(torch_row)  # builds what the state needs
            out = spans["call" if start >= call_start else "free text"]
            out["native no-op"].append(best_ns(handle.is_completed, args.repeats))
            out["numpy row"].append(best_ns(lambda: handle.fill_next_token_bitmask(numpy_row, 0), args.repeats))
            out["torch row"].append(best_ns(lambda: handle.fill_next_token_bitmask(torch_row, 0), args.repeats))
            out["Python matcher"].append(best_ns(lambda: matcher.fill_next_token_bitmask(torch_row), args.repeats))
            if not matcher.accept_token(token):
                raise SystemExit(f"token {token} refused")
    print(f"{args.format}, {args.tool_sets} tool sets, medians over states of the min of {args.repeats} fills (ns)")
    print("| states | n | " + " | ".join(columns) + " |")
    print("|---|---|" + "---|" * len(columns))
    for span, values in spans.items():
        n = len(values[columns[0]])
        print(f"| {span} | {n} | " + " | ".join(f"{statistics.median(values[c]):.0f}" for c in columns) + " |")


if __name__ == "__main__":
    main()
