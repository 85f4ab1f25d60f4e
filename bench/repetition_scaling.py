"""How the cost of a bounded repetition grows with its bound, with repetition state compression
(XGrammar 2, section 3.5) on and off.

For each bound it compiles ``{"type": "string", "maxLength": N}`` (and an array of objects with
``maxItems: N``) on a fresh compiler (empty cross-grammar pool), then walks a valid instance of
N characters (N items) token by token and times the mask fill at 40 evenly spaced positions.
Printed per row: compile time, FSM node count, grammar memory after the fills, first-mask
time and the fill p50 / p90 at those positions. A measurement, not a test: the machine is
shared, so compare ratios within one run.

    XG2_DATA_DIR=/work/shared/data PYTHONPATH=. python bench/repetition_scaling.py [--tokenizer llama3.1]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

import xg2_plugin as xg  # noqa: E402
from xg2_test_support import encode_continuation, hf_tokenizer_info  # noqa: E402

PIECES = ["a", "é", "漢", " ", r"\n", r"\"", "Z", "0"]


def string_instance(count: int) -> str:
    rng = random.Random(count)
    source = "".join(rng.choice(PIECES) for _ in range(count))
    return json.dumps(json.loads('"' + source + '"'), ensure_ascii=False)


def array_instance(count: int) -> str:
    return json.dumps([{"id": i, "tag": "t%d" % (i % 10)} for i in range(count)])


def string_schema(bound: int) -> dict:
    return {"type": "string", "maxLength": bound}


def array_schema(bound: int) -> dict:
    return {"type": "array", "maxItems": bound,
            "items": {"type": "object", "properties": {"id": {"type": "integer"}, "tag": {"type": "string"}},
                      "required": ["id", "tag"]}}


def measure(tokenizer: str, info: xg.TokenizerInfo, schema: dict, text: str, threshold: int, samples: int) -> dict:
    compiler = xg.GrammarCompiler(info, repetition_compression_threshold=threshold)
    start = time.perf_counter()
    try:
        grammar = compiler.compile_json_schema(schema)
    except xg.ResourceLimitError as error:
        return {"error": f"ResourceLimitError: {error}"}
    compile_ms = (time.perf_counter() - start) * 1e3
    ids = encode_continuation(tokenizer, text)
    matcher = xg.GrammarMatcher(grammar)
    bitmask = np.zeros(xg.get_bitmask_shape(1, info.vocab_size), dtype=np.int32)
    start = time.perf_counter()
    matcher.fill_next_token_bitmask(bitmask)
    first_ms = (time.perf_counter() - start) * 1e3
    positions = set(np.linspace(1, len(ids) - 1, samples).astype(int).tolist())
    fills = []
    for i, token in enumerate(ids):
        if i in positions:
            start = time.perf_counter()
            matcher.fill_next_token_bitmask(bitmask)
            fills.append((time.perf_counter() - start) * 1e6)
        if not matcher.accept_token(token):
            raise AssertionError(f"token {i} of a valid instance refused")
    fills.sort()
    return {
        "compile_ms": compile_ms,
        "nodes": grammar._handle.num_nodes,
        "memory_kb": grammar.memory_size_bytes / 1024,
        "first_ms": first_ms,
        "fill_p50_us": statistics.median(fills),
        "fill_p90_us": fills[int(0.9 * (len(fills) - 1))],
        "tokens": len(ids),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokenizer", default="llama3.1")
    parser.add_argument("--samples", type=int, default=40, help="fills timed per instance")
    parser.add_argument("--threshold", type=int, default=64, help="compression threshold when on")
    args = parser.parse_args()
    info = hf_tokenizer_info(args.tokenizer)
    header = f"{'case':<18}{'compression':>12}{'compile ms':>12}{'nodes':>9}{'memory KB':>11}{'first ms':>10}{'fill p50 us':>13}{'fill p90 us':>13}"
    print(f"tokenizer {args.tokenizer}, {args.samples} timed fills per instance\n")
    print(header)
    cases = [("maxLength", n, string_schema, string_instance) for n in (16, 256, 4096, 65536)]
    cases += [("maxItems", n, array_schema, array_instance) for n in (16, 256, 4096, 10000)]
    for keyword, bound, make_schema, make_text in cases:
        text = make_text(bound)
        for label, threshold in (("on", args.threshold), ("off", 0)):
            r = measure(args.tokenizer, info, make_schema(bound), text, threshold, args.samples)
            name = f"{keyword} {bound}"
            if "error" in r:
                print(f"{name:<18}{label:>12}  {r['error'][:80]}")
                continue
            print(f"{name:<18}{label:>12}{r['compile_ms']:>12.1f}{r['nodes']:>9}{r['memory_kb']:>11.0f}"
                  f"{r['first_ms']:>10.2f}{r['fill_p50_us']:>13.1f}{r['fill_p90_us']:>13.1f}", flush=True)


if __name__ == "__main__":
    main()
