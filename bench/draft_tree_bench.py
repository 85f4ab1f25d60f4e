"""Draft-tree masks for speculative decoding: xg2's native traversal against the per-node
Python traversal and against xgrammar 0.2.8's native traversal, in one run, interleaved.

    PYTHONPATH=. python bench/draft_tree_bench.py [--iterations 300] [--out bench/results]

Grammars (Llama-3.1 tokenizer): a JSON schema (an object with strings, an enum array and
numbers) and a tool-call structural tag (``triggered_tags`` with one JSON-schema tag). Each
matcher first accepts a prefix of a valid output, so the tree grows from mid-output.

Trees of 8, 32 and 64 nodes, shaped like EAGLE's: from each node up to three children, the
tokens drawn from the grammar's allowed set at that node (ranked by a fixed random score, so
siblings differ) and, for one node in eight, any token (a draft the grammar rejects). Node ids
are in breadth-first order, as SGLang lays them out.

Engines, per traversal of one tree (time of the whole call, the matcher restored after):
- ``xg2 native``: ``GrammarMatcher.traverse_draft_tree`` (one call, the walk in C++).
- ``python per-node``: the same depth-first walk in Python over xg2's public API
  (accept_token, is_terminated, fill_next_token_bitmask, rollback per node).
- ``SGLang traverse_tree``: SGLang's own per-node helper (``spec_utils.traverse_tree``, what
  SGLang 0.5.23 runs for every grammar backend) over the same matcher calls, when SGLang is
  importable (run the script with SGLang's venv for it).
- ``xgrammar native``: xgrammar 0.2.8's ``GrammarMatcher.traverse_draft_tree`` on its own
  compile of the same grammar (same tree arrays).
Rows filled per engine are reported, so unequal work would show. Warm-up iterations first (mask
caches filled), then the engines rotate order every iteration.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Tuple

import numpy as np
import torch

REPO = Path(__file__).resolve().parents[1]
DATA = Path(os.environ.get("XG2_DATA_DIR", REPO.parent / "shared" / "data"))
TOKENIZER = DATA / "tokenizers" / "hf" / "llama3.1" / "tokenizer.json"

SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "email": {"type": "string"},
        "tags": {"type": "array", "items": {"enum": ["alpha", "beta", "gamma", "delta"]}},
        "score": {"type": "number"},
        "count": {"type": "integer"},
    },
    "required": ["name", "tags", "score"],
    "additionalProperties": False,
}
SCHEMA_PREFIX = '{"name": "Ada Lovelace", "tags": ["alpha", '
TOOL_TAG = {
    "type": "structural_tag",
    "format": {
        "type": "triggered_tags",
        "triggers": ["<tool_call>"],
        "tags": [{
            "type": "tag",
            "begin": "<tool_call>",
            "content": {"type": "json_schema", "json_schema": {
                "type": "object",
                "properties": {"name": {"const": "get_weather"}, "arguments": {
                    "type": "object",
                    "properties": {"city": {"type": "string"}, "unit": {"enum": ["celsius", "fahrenheit"]},
                                   "days": {"type": "integer"}},
                    "required": ["city"], "additionalProperties": False}},
                "required": ["name", "arguments"], "additionalProperties": False}},
            "end": "</tool_call>",
        }],
        "at_least_one": True,
    },
}
TOOL_PREFIX = '<tool_call>{"name": "get_weather", "arguments": {"city": "Par'
SIZES = (8, 32, 64)
NATIVE, PER_NODE, SGLANG, PEER = "xg2 native", "python per-node", "SGLang traverse_tree", "xgrammar native"


def python_traversal(matcher: Any, next_token: torch.Tensor, next_sibling: torch.Tensor,
                     draft: torch.Tensor, bitmask: torch.Tensor) -> None:
    """The per-node walk over the public API (SGLang's traverse_tree, node for node)."""
    nt, ns, dt = next_token.tolist(), next_sibling.tolist(), draft.tolist()
    words = bitmask.shape[1]

    def visit(node: int, parent: int) -> None:
        token = dt[node]
        ok = node == 0 or (0 <= token < words * 32 and (int(bitmask[parent, token // 32]) >> (token % 32)) & 1)
        if ok:
            if node:
                matcher.accept_token(token)
            if not matcher.is_terminated():
                matcher.fill_next_token_bitmask(bitmask, node)
                if nt[node] != -1:
                    visit(nt[node], node)
            if node:
                matcher.rollback(1)
        if ns[node] != -1:
            visit(ns[node], parent)

    visit(0, -1)


def sglang_traversal() -> Callable[..., None] | None:
    try:
        from sglang.srt.speculative.spec_utils import traverse_tree
    except Exception:
        return None
    return traverse_tree


def build_tree(rng: random.Random, matcher: Any, num_nodes: int, vocab: int) -> Tuple[torch.Tensor, ...]:
    """Breadth-first EAGLE-like tree (see the module docstring)."""
    import xg2_plugin as xg

    mask = xg.allocate_token_bitmask(1, vocab)
    score = np.random.default_rng(rng.randrange(2**32)).random(vocab)
    parents, tokens, paths = [-1], [0], [[]]
    frontier = [0]
    while len(tokens) < num_nodes and frontier:
        next_frontier = []
        for parent in frontier:
            probe = matcher.fork()
            alive = all(probe.accept_token(t) for t in paths[parent]) and not probe.is_terminated()
            allowed = []
            if alive:
                probe.fill_next_token_bitmask(mask)
                allowed = np.flatnonzero(xg.bitmask.bitmask_to_bool_array(mask[0], vocab))
                allowed = list(allowed[np.argsort(-score[allowed])][:3])
            for child in range(3):
                if len(tokens) >= num_nodes:
                    break
                if allowed and rng.random() >= 1 / 8:
                    token = int(allowed[child % len(allowed)])
                else:
                    token = rng.randrange(vocab)
                parents.append(parent)
                tokens.append(token)
                paths.append(paths[parent] + [token])
                next_frontier.append(len(tokens) - 1)
        frontier = next_frontier
    n = len(tokens)
    next_token, next_sibling, last = [-1] * n, [-1] * n, {}
    for node in range(1, n):
        p = parents[node]
        if p in last:
            next_sibling[last[p]] = node
        else:
            next_token[p] = node
        last[p] = node
    as_t = lambda a: torch.tensor(a, dtype=torch.int64)  # noqa: E731
    return as_t(next_token), as_t(next_sibling), as_t(tokens)


def filled_rows(bitmask: torch.Tensor, sentinel: int) -> int:
    return sum(1 for row in bitmask if not bool((row == sentinel).all()) and bool(row.any()))


def percentile(values: List[float], q: float) -> float:
    data = sorted(values)
    k = (len(data) - 1) * q / 100
    lo, hi = int(k), min(int(k) + 1, len(data) - 1)
    return data[lo] + (data[hi] - data[lo]) * (k - lo)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--iterations", type=int, default=300)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--trees", type=int, default=3, help="random trees per size and grammar")
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "results")
    parser.add_argument("--name", default="draft-tree", help="report <name>.md and plot <name>.png")
    args = parser.parse_args()

    import tokenizers
    import xg2_plugin as xg

    tok = tokenizers.Tokenizer.from_file(str(TOKENIZER))
    info = xg.TokenizerInfo.from_huggingface(tok)
    compiler = xg.GrammarCompiler(info)
    try:
        import xgrammar as xgr
        from transformers import PreTrainedTokenizerFast

        xgr_info = xgr.TokenizerInfo.from_huggingface(PreTrainedTokenizerFast(tokenizer_object=tok),
                                                      vocab_size=info.vocab_size)
        xgr_compiler = xgr.GrammarCompiler(xgr_info)
    except ImportError:
        xgr = None
    sglang_walk = sglang_traversal()
    xgr_version = _version("xgrammar")

    grammars = {
        "json-schema": (lambda: compiler.compile_json_schema(SCHEMA),
                        lambda: xgr_compiler.compile_json_schema(json.dumps(SCHEMA)), SCHEMA_PREFIX),
        "tool-call tag": (lambda: compiler.compile_structural_tag(TOOL_TAG),
                          lambda: xgr_compiler.compile_structural_tag(json.dumps(TOOL_TAG)), TOOL_PREFIX),
    }
    rng = random.Random(40)
    words = (info.vocab_size + 31) // 32
    sentinel = 0x5A5A5A5A
    results: List[Dict[str, Any]] = []
    for gname, (ours, theirs, prefix) in grammars.items():
        native = xg.GrammarMatcher(ours())
        assert native.accept_string(prefix), gname
        per_node = native.fork()
        peer = None
        if xgr is not None:
            peer = xgr.GrammarMatcher(theirs())
            assert peer.accept_string(prefix), gname
        for size in SIZES:
            trees = [build_tree(rng, native, size, info.vocab_size) for _ in range(args.trees)]
            engines = [NATIVE, PER_NODE] + ([SGLANG] if sglang_walk else []) + ([PEER] if peer is not None else [])
            masks = {e: torch.full((size, words), sentinel, dtype=torch.int32) for e in engines}

            class PerNode:  # the object SGLang's helper drives: its grammar-object calls
                accept_token = staticmethod(per_node.accept_token)
                rollback = staticmethod(per_node.rollback)
                is_terminated = staticmethod(per_node.is_terminated)
                fill_vocab_mask = staticmethod(per_node.fill_next_token_bitmask)

            def run(engine: str, tree: Tuple[torch.Tensor, ...]) -> None:
                if engine == NATIVE:
                    native.traverse_draft_tree(*tree, masks[engine])
                elif engine == PER_NODE:
                    python_traversal(per_node, *tree, masks[engine])
                elif engine == SGLANG:
                    sglang_walk(*tree, PerNode, masks[engine], vocab_size=info.vocab_size)
                else:
                    peer.traverse_draft_tree(*tree, masks[engine])

            filled = {e: 0 for e in engines}
            for tree in trees:
                for e in engines:
                    masks[e].fill_(sentinel)
                    run(e, tree)
                    filled[e] += filled_rows(masks[e], sentinel)
                # Same masks node for node; the per-node walk leaves rejected and terminal
                # nodes' rows as they were, where the native walks zero them. (xgrammar's masks,
                # over its own compile, are compared by the count of rows filled only.)
                for walk in (PER_NODE, SGLANG) if sglang_walk else (PER_NODE,):
                    for ours_row, walk_row in zip(masks[NATIVE], masks[walk]):
                        if bool((walk_row == sentinel).all()):
                            assert bool((ours_row == sentinel).all()) or not bool(ours_row.any())
                        else:
                            assert torch.equal(ours_row, walk_row)
            for _ in range(args.warmup):
                for tree in trees:
                    for e in engines:
                        run(e, tree)
            times: Dict[str, List[float]] = {e: [] for e in engines}
            for i in range(args.iterations):
                tree = trees[i % len(trees)]
                order = engines[i % len(engines):] + engines[: i % len(engines)]
                for e in order:
                    start = time.perf_counter_ns()
                    run(e, tree)
                    times[e].append((time.perf_counter_ns() - start) / 1000)
            assert native.num_accepted_steps == per_node.num_accepted_steps
            row = {"grammar": gname, "nodes": size, "filled": {e: filled[e] / len(trees) for e in engines},
                   "median_us": {e: statistics.median(times[e]) for e in engines},
                   "p99_us": {e: percentile(times[e], 99) for e in engines}, "raw": times}
            results.append(row)
            print(gname, size, {e: round(row["median_us"][e], 1) for e in engines}, flush=True)
    write_report(args.out, results, xgr_version, args)


def _version(package: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(package)
    except PackageNotFoundError:
        return "not installed"


def write_report(out: Path, results: List[Dict[str, Any]], xgr_version: str, args: argparse.Namespace) -> None:
    out.mkdir(parents=True, exist_ok=True)
    engines = list(results[0]["median_us"])
    peers = [e for e in engines if e != NATIVE]
    label = {PEER: f"xgrammar {xgr_version} native", SGLANG: f"SGLang {_version('sglang')} traverse_tree"}
    lines = [
        f"## {', '.join(label.get(e, e) for e in engines)}",
        "",
        f"Llama-3.1 tokenizer; {args.trees} random EAGLE-shaped trees per row, {args.iterations} timed",
        f"traversals per engine after {args.warmup} warm-up rounds, engines interleaved; µs per traversal",
        "(p50 / p99); ratio = engine p50 ÷ xg2 native p50 (> 1: xg2 faster).",
        "",
        "| grammar | nodes | rows filled | " + " | ".join(label.get(e, e) for e in engines) + " | "
        + " | ".join(f"{label.get(e, e)} ÷ xg2" for e in peers) + " |",
        "|---|---:|---:|" + "---:|" * (len(engines) + len(peers)),
    ]
    for r in results:
        m, p, f = r["median_us"], r["p99_us"], r["filled"]
        cells = [r["grammar"], str(r["nodes"]), f"{f[NATIVE]:.1f}" + (f" (xgrammar {f[PEER]:.1f})" if PEER in f else "")]
        cells += [f"{m[e]:.1f} / {p[e]:.1f}" for e in engines]
        cells += [f"{m[e] / m[NATIVE]:.2f}" for e in peers]
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", f"Machine: {platform.machine()}, {os.cpu_count()} CPUs (shared), Python {platform.python_version()}, "
              f"torch {torch.__version__}; command: `{' '.join(sys.argv)}`."]
    png = plot(out, results, args.name)
    if png:
        lines += ["", f"![draft-tree traversal medians]({png})"]
    (out / f"{args.name}.md").write_text("\n".join(lines) + "\n")
    print((out / f"{args.name}.md").read_text())


def plot(out: Path, results: List[Dict[str, Any]], name: str) -> str:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib not installed: no plot", file=sys.stderr)
        return ""
    grammars = list(dict.fromkeys(r["grammar"] for r in results))
    fig, axes = plt.subplots(1, len(grammars), figsize=(5.5 * len(grammars), 4), dpi=110, squeeze=False)
    for ax, g in zip(axes[0], grammars):
        rows = [r for r in results if r["grammar"] == g]
        engines = list(rows[0]["median_us"])
        width = 0.8 / len(engines)
        for k, e in enumerate(engines):
            xs = [i + (k - (len(engines) - 1) / 2) * width for i in range(len(rows))]
            med = [r["median_us"][e] for r in rows]
            p99 = [r["p99_us"][e] for r in rows]
            ax.bar(xs, med, width, label=e, yerr=[[0] * len(med), [b - a for a, b in zip(med, p99)]], capsize=3)
        ax.set_xticks(range(len(rows)), [f"{r['nodes']} nodes" for r in rows])
        ax.set_yscale("log")
        ax.set_ylabel("µs per tree (bar: median, whisker: p99)")
        ax.set_title(g)
        ax.grid(True, axis="y", which="both", alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out / f"{name}.png")
    plt.close(fig)
    return f"{name}.png"


if __name__ == "__main__":
    main()
