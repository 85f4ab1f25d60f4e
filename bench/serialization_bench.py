"""Serialization benchmark: what a grammar costs to get, cold, from a blob, from the disk cache
and from the in-memory cache, on the JSONSchemaBench sample and on tool-call structural tags.

    XG2_DATA_DIR=/work/shared/data PYTHONPATH=. python bench/serialization_bench.py

Per item, on one tokenizer (llama3.1 by default), every path measured in the same process:
  * cold compile: ``compile_json_schema`` on a fresh compiler with its in-memory cache off
    (every path gets a fresh compiler, so no pool holds the item's classifications);
  * serialize: ``serialize_bytes()`` of that grammar (and the blob's size);
  * deserialize: the blob read back for the tokenizer, sharing that compiler's pool, with the
    mask-cache classifications it carried, and without them (``with_classifications=False``);
  * disk hit: ``compile_json_schema`` on a compiler whose ``cache_dir`` already holds the grammar
    (key hashing, file read, deserialize), in-memory cache off;
  * warm hit: the second ``compile_json_schema`` of the same schema on a caching compiler.
For each load path, the first mask fill of a fresh matcher and the fills along one valid
instance are timed too: a grammar whose classifications were carried over needs none rebuilt.
Structural tags (BFCL tool sets in the Llama 3.1 JSON format) classify every parser state at
compile time, so there the question is whether reading classifications back beats
recomputing them: the table compares load + the fills of one call, with and without them.

Writes ``bench/results/<name>.md`` (p50 / p99 in milliseconds) and CDF plots beside it when
matplotlib is importable.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))
sys.path.insert(0, str(REPO / "tests"))

import numpy as np  # noqa: E402

import xg2_plugin as xg  # noqa: E402
from harness.config import data_dir  # noqa: E402
from harness.corpus import list_schemas, schema_dir, stratified_sample  # noqa: E402

PATHS = ["cold compile", "deserialize", "deserialize, no classifications", "disk hit", "warm hit"]


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    start = time.perf_counter()
    value = fn()
    return time.perf_counter() - start, value


def percentile(values: List[float], q: float) -> float:
    return float(np.percentile(np.asarray(values, dtype=float), q))


def fills_along(grammar: xg.CompiledGrammar, ids: List[int]) -> tuple[float, float]:
    """(first fill, all fills) seconds of a fresh matcher walking `ids`."""
    matcher = xg.GrammarMatcher(grammar)
    bitmask = np.zeros(xg.get_bitmask_shape(1, grammar.tokenizer_info.vocab_size), dtype=np.int32)
    first = total = 0.0
    for step, token in enumerate(ids + [None]):
        elapsed, _ = timed(lambda: matcher.fill_next_token_bitmask(bitmask))
        total += elapsed
        if step == 0:
            first = elapsed
        if token is None or not matcher.accept_token(token):
            break
    return first, total


def instance_ids(tokenizer: Any, schema: Any, tests: List[Dict[str, Any]]) -> List[int]:
    from xg2_test_support import ordered_like_schema

    valid = [t["data"] for t in tests if t.get("valid")]
    if not valid:
        return []
    text = json.dumps(ordered_like_schema(valid[0], schema), ensure_ascii=False)
    return tokenizer.encode(text, add_special_tokens=False).ids


def measure(info: xg.TokenizerInfo, compile_fn: Callable[[xg.GrammarCompiler], xg.CompiledGrammar],
            ids: List[int], cache_dir: Path) -> Optional[Dict[str, Any]]:
    """Every load path of one item; None when the item does not compile."""
    cold_compiler = xg.GrammarCompiler(info, cache_enabled=False)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            cold, grammar = timed(lambda: compile_fn(cold_compiler))
    except (xg.SchemaError, xg.ResourceLimitError, xg.GrammarSyntaxError):
        return None
    fills = {"cold compile": fills_along(grammar, ids)}
    serialize, blob = timed(grammar.serialize_bytes)
    bare_blob = xg.serialization.grammar_to_bytes(grammar, with_classifications=False)
    reader = xg.GrammarCompiler(info, cache_enabled=False)
    deserialize, restored = timed(lambda: xg.serialization.grammar_from_bytes(blob, info, compiler=reader))
    fills["deserialize"] = fills_along(restored, ids)
    bare_reader = xg.GrammarCompiler(info, cache_enabled=False)
    deserialize_bare, bare = timed(lambda: xg.serialization.grammar_from_bytes(bare_blob, info, compiler=bare_reader))
    fills["deserialize, no classifications"] = fills_along(bare, ids)
    compile_fn(xg.GrammarCompiler(info, cache_enabled=False, cache_dir=cache_dir))  # writes the file
    disk_compiler = xg.GrammarCompiler(info, cache_enabled=False, cache_dir=cache_dir)
    disk, from_disk = timed(lambda: compile_fn(disk_compiler))
    assert disk_compiler.disk_cache.stats["hits"] == 1
    fills["disk hit"] = fills_along(from_disk, ids)
    warm_compiler = xg.GrammarCompiler(info)
    compile_fn(warm_compiler)
    warm, hit = timed(lambda: compile_fn(warm_compiler))
    fills["warm hit"] = fills_along(hit, ids)
    return {
        "load": {"cold compile": cold, "deserialize": deserialize, "deserialize, no classifications": deserialize_bare,
                 "disk hit": disk, "warm hit": warm},
        "first_fill": {k: v[0] for k, v in fills.items()},
        "walk_fills": {k: v[1] for k, v in fills.items()},
        "serialize": serialize,
        "blob_bytes": len(blob),
        "bare_blob_bytes": len(bare_blob),
        "steps": len(ids) + 1,
    }


def ms(seconds: float) -> str:
    value = seconds * 1e3
    return f"{value:.3f}" if value < 1 else f"{value:.2f}" if value < 100 else f"{value:.0f}"


def table(rows: List[Dict[str, Any]], field: str, plus_walk: bool = False) -> str:
    lines = ["| path | p50 ms | p99 ms | mean ms |", "|---|---:|---:|---:|"]
    for path in PATHS:
        values = [r[field][path] + (r["walk_fills"][path] if plus_walk else 0.0) for r in rows]
        lines.append(f"| {path} | {ms(percentile(values, 50))} | {ms(percentile(values, 99))} | "
                     f"{ms(statistics.fmean(values))} |")
    return "\n".join(lines)


def cdf_plot(path: Path, title: str, series: Dict[str, List[float]]) -> bool:
    try:
        import matplotlib
    except ImportError:
        return False
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.2), dpi=110)
    for label, values in series.items():
        data = np.maximum(np.sort(np.asarray(values, dtype=float)) * 1e3, 1e-3)
        ax.step(data, np.arange(1, data.size + 1) / data.size, where="post", label=f"{label} (n={data.size})")
    ax.set_xscale("log")
    ax.set_xlabel("milliseconds")
    ax.set_ylabel("fraction ≤ x")
    ax.set_ylim(0, 1.01)
    ax.grid(True, which="both", alpha=0.3)
    ax.set_title(title)
    ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return True


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tokenizer", default="llama3.1")
    parser.add_argument("--per-category", type=int, default=4)
    parser.add_argument("--tool-sets", type=int, default=12)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--name", default="serialization")
    parser.add_argument("--results", type=Path, default=REPO / "bench" / "results")
    args = parser.parse_args()

    import tokenizers

    hf = tokenizers.Tokenizer.from_file(str(data_dir() / "tokenizers" / "hf" / args.tokenizer / "tokenizer.json"))
    info = xg.TokenizerInfo.from_huggingface(hf)
    names = stratified_sample(list_schemas(), args.per_category, args.seed)
    schema_rows: List[Dict[str, Any]] = []
    refused = 0
    with tempfile.TemporaryDirectory(prefix="xg2-serialization-bench-") as temp:
        for index, name in enumerate(names):
            data = json.loads((schema_dir() / name).read_text())
            schema = data["schema"]
            ids = instance_ids(hf, schema, data.get("tests", []))
            row = measure(info, lambda c, s=schema: c.compile_json_schema(s, strict_mode=False), ids,
                          Path(temp) / f"s{index}")
            if row is None:
                refused += 1
                continue
            row["name"] = name
            schema_rows.append(row)
        tag_rows: List[Dict[str, Any]] = []
        if args.tool_sets:
            from preset_support import bfcl_cases
            from xg2_plugin.presets import get_model_structural_tag

            cases = bfcl_cases("multiple", args.tool_sets // 2) + bfcl_cases("simple", args.tool_sets - args.tool_sets // 2)
            for index, case in enumerate(cases):
                tag = get_model_structural_tag("llama", case.tools, "auto", reasoning=False)
                name, arguments = case.calls[0]
                call = json.dumps({"name": name, "parameters": arguments})
                ids = hf.encode(call, add_special_tokens=False).ids
                row = measure(info, lambda c, t=tag: c.compile_structural_tag(t), ids, Path(temp) / f"t{index}")
                if row is not None:
                    tag_rows.append(row)

    out = args.results
    out.mkdir(parents=True, exist_ok=True)
    plots = []
    for rows, what in ((schema_rows, "jsonschema"), (tag_rows, "tags")):
        if rows and cdf_plot(out / f"{args.name}-{what}-cdf.png", f"Getting a compiled grammar ({what}, {args.tokenizer})",
                             {p: [r["load"][p] for r in rows] for p in PATHS}):
            plots.append(f"{args.name}-{what}-cdf.png")

    def share(rows: List[Dict[str, Any]], key: str) -> str:
        return ms(percentile([r[key] for r in rows], 50))

    commit = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True).stdout.strip()
    lines = [
        "# Serialization and the persistent compile cache",
        "",
        f"Tokenizer {args.tokenizer}; {len(schema_rows)} JSONSchemaBench schemas ({args.per_category} per category, "
        f"seed {args.seed}; {refused} refused by the compiler and left out) and {len(tag_rows)} BFCL tool sets as "
        f"Llama 3.1 JSON structural tags. Machine: {platform.processor() or platform.machine()}, {os.cpu_count()} "
        f"cores, load average {', '.join(f'{x:.1f}' for x in os.getloadavg())} at the end (shared machine); "
        f"commit {commit}. Reproduce: `XG2_DATA_DIR=... PYTHONPATH=. python bench/serialization_bench.py "
        f"--per-category {args.per_category} --tool-sets {args.tool_sets}`.",
        "",
        "Paths (see the script's docstring), each on a fresh compiler: cold compile (in-memory cache off); deserialize (the blob "
        "with the mask-cache classifications it carried, read back for the tokenizer); the same without "
        "classifications; disk hit (a compiler whose `cache_dir` holds the grammar: key, file read, deserialize); "
        "warm hit (in-memory cache).",
        "",
        "## JSON Schemas: time to get the grammar",
        "",
        table(schema_rows, "load"),
        "",
        "## JSON Schemas: get the grammar, then fill the masks along one valid instance",
        "",
        table(schema_rows, "load", plus_walk=True),
        "",
        f"Blob size p50: {int(percentile([r['blob_bytes'] for r in schema_rows], 50))} bytes with classifications, "
        f"{int(percentile([r['bare_blob_bytes'] for r in schema_rows], 50))} without; serialize p50 "
        f"{share(schema_rows, 'serialize')} ms.",
        "",
        "A disk file is written as soon as its compile returns, so it carries the classifications built by "
        "then: for a JSON Schema the background precompute has mostly not run yet, and a disk hit's first "
        "fills classify the rest (compare its walk with the no-classifications row); a structural tag's file "
        "carries them all.",
        "",
    ]
    if tag_rows:
        lines += [
            "## Structural tags: time to get the grammar",
            "",
            "Every parser state is classified at compile time, so a blob carries all classifications.",
            "",
            table(tag_rows, "load"),
            "",
            "## Structural tags: get the grammar, then fill the masks along one call",
            "",
            table(tag_rows, "load", plus_walk=True),
            "",
            f"Blob size p50: {int(percentile([r['blob_bytes'] for r in tag_rows], 50))} bytes with classifications, "
            f"{int(percentile([r['bare_blob_bytes'] for r in tag_rows], 50))} without.",
            "",
        ]
    lines += [f"![{p}]({p})" for p in plots]
    report = out / f"{args.name}.md"
    report.write_text("\n".join(lines) + "\n")
    print(report.read_text())


if __name__ == "__main__":
    main()
