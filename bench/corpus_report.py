"""JSONSchemaBench coverage and soundness report for our engine.

    python bench/corpus_report.py [--per-category N] [--walk-per-category N] [--out FILE]

Every schema of the corpus (or N per category) is compiled; valid instances must be accepted
and invalid ones rejected (string level); the first valid instance of each schema is also
checked token by token with a full mask at every step; random walks (token choice from the
mask until a stop token) run on a stratified subset and are validated with jsonschema. Writes a
Markdown report (default bench/results/jsonschema-coverage.md).
"""

from __future__ import annotations

import argparse
import platform
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

from xg2_corpus import CATEGORIES, evaluate_schema, stratified_sample  # noqa: E402
from xg2_test_support import data_dir, encode_continuation, hf_compiler  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--per-category", type=int, default=None, help="schemas per category (default: all)")
    parser.add_argument("--walk-per-category", type=int, default=20, help="schemas per category that get random walks")
    parser.add_argument("--walks", type=int, default=2, help="random walks per walked schema")
    parser.add_argument("--token-level", type=int, default=1, help="valid instances per schema checked token by token")
    parser.add_argument("--tokenizer", default="llama3.1")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "results" / "jsonschema-coverage.md")
    args = parser.parse_args()

    corpus = data_dir() / "jsonschemabench"
    paths = stratified_sample(corpus, args.per_category, seed=args.seed)
    walked = {p.name for p in stratified_sample(corpus, args.walk_per_category, seed=args.seed + 1)}
    compiler = hf_compiler(args.tokenizer)
    encode = lambda text: encode_continuation(args.tokenizer, text)  # noqa: E731

    results = []
    start = time.time()
    for i, path in enumerate(paths, 1):
        results.append(evaluate_schema(
            path, compiler, encode,
            token_level_instances=args.token_level,
            walks=args.walks if path.name in walked else 0,
            seed=args.seed,
        ))
        compiler.clear_cache()
        if i % 200 == 0 or i == len(paths):
            elapsed = time.time() - start
            print(f"{i}/{len(paths)} schemas, {elapsed:.0f} s, eta {elapsed / i * (len(paths) - i):.0f} s", flush=True)

    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(render(results, args, time.time() - start))
    print(f"wrote {args.out}")
    return 0


def render(results: list, args: argparse.Namespace, seconds: float) -> str:
    by_cat: dict[str, list] = defaultdict(list)
    for r in results:
        by_cat[r.category].append(r)
    lines = [
        "# JSONSchemaBench: coverage and soundness of xg2",
        "",
        f"Command: `python bench/corpus_report.py {' '.join(sys.argv[1:])}`  ",
        f"Tokenizer: {args.tokenizer}; seed {args.seed}; {len(results)} schemas; {seconds:.0f} s on "
        f"{platform.processor() or platform.machine()} ({platform.python_version()}).",
        "",
        "Status: **ok** compiled; **unsupported** refused with the policy error (a keyword the engine",
        "cannot enforce exactly, named with its JSON pointer); **invalid** the schema itself is invalid or",
        "exceeds a resource limit; **error** anything else (a defect).",
        "",
        "| category | schemas | ok | unsupported | invalid | error | valid accepted | invalid rejected | token-level ok | walks finished | walk violations |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    totals = Counter()
    for cat in CATEGORIES + sorted(set(by_cat) - set(CATEGORIES)):
        rs = by_cat.get(cat, [])
        if not rs:
            continue
        c = Counter(r.status for r in rs)
        row = dict(
            n=len(rs), ok=c["ok"], unsupported=c["unsupported"], invalid=c["invalid_schema"], error=c["error"],
            vt=sum(r.valid_total for r in rs), va=sum(r.valid_accepted for r in rs),
            it=sum(r.invalid_total for r in rs), ir=sum(r.invalid_rejected for r in rs),
            tc=sum(r.token_checked for r in rs), tf=sum(len(r.token_failures) for r in rs),
            w=sum(r.walks for r in rs), wf=sum(r.walks_finished for r in rs), wv=sum(len(r.walk_violations) for r in rs),
        )
        totals.update(row)
        lines.append(_row(cat, row))
    lines.append(_row("**all**", totals))
    unsupported = Counter()
    for r in results:
        if r.status == "unsupported":
            msg = r.message
            keyword = msg.split("'")[1] if "'" in msg else msg[:60]
            unsupported[keyword] += 1
    lines += ["", "## Why schemas were refused (keyword counts)", "", "| keyword | schemas |", "|---|---|"]
    lines += [f"| `{k}` | {n} |" for k, n in unsupported.most_common(30)]
    problems = [r for r in results if r.status == "error" or r.acceptance_failures or r.token_failures or r.walk_violations]
    lines += ["", f"## Defects ({len(problems)} schemas)", ""]
    for r in problems[:100]:
        details = ([r.message] if r.status == "error" else []) + r.acceptance_failures[:3] + r.token_failures[:3] + r.walk_violations[:3]
        lines.append(f"- `{r.path}`: " + "; ".join(d.replace("|", "\\|").replace("\n", " ")[:300] for d in details))
    return "\n".join(lines) + "\n"


def _row(name: str, r) -> str:
    def pct(a: int, b: int) -> str:
        return f"{a}/{b} ({100 * a / b:.1f}%)" if b else "-"
    return (f"| {name} | {r['n']} | {pct(r['ok'], r['n'])} | {r['unsupported']} | {r['invalid']} | {r['error']} | "
            f"{pct(r['va'], r['vt'])} | {pct(r['ir'], r['it'])} | {pct(r['tc'] - r['tf'], r['tc'])} | "
            f"{pct(r['wf'], r['w'])} | {r['wv']} |")


if __name__ == "__main__":
    sys.exit(main())
