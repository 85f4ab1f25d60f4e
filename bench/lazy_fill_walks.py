"""Where rule DFAs built on first use land in the fills (docs/lazy_rule_dfas.md): random walks of
the JSONSchemaBench sample, the same walk in the default (lazy) mode and with
``--eager-rule-dfas``, for instruction counts per fill and per accepted token.

    PYTHONPATH=. python bench/lazy_fill_walks.py --log calls.tsv [--eager-rule-dfas]

Each schema is compiled by one compiler for the whole sample (the cross-grammar pool warms up
across schemas, as in a server), with no background precompute (``precompute_nodes=0``: the
walks are deterministic, and every classification a fill needs is paid in that fill). Each
walk fills a mask, takes a token drawn from it with a seeded generator and accepts it; lazy and
eager masks are equal (tests/matcher/test_lazy_rule_dfas.py), so both modes take the same
walks. ``--log`` writes one line per native call in call order: kind (fill / accept), schema,
walk, step, and the rule DFAs the call built. Run it under callgrind with one dump per call:

    valgrind --tool=callgrind --collect-atstart=no --callgrind-out-file=DIR/cg \\
        --toggle-collect='xg2::GrammarMatcher::FillNextTokenBitmask*' \\
        --toggle-collect='xg2::GrammarMatcher::AcceptToken(*' \\
        --dump-after='xg2::GrammarMatcher::FillNextTokenBitmask*' \\
        --dump-after='xg2::GrammarMatcher::AcceptToken(*' \\
        python bench/lazy_fill_walks.py --log DIR/calls.tsv
    python bench/lazy_fill_walks.py --summarize DIR [DIR2]

``--summarize`` pairs dump k with line k of the log and prints p50 / p99 / p99.9 / max of the
instructions per fill and per accept, and where the calls that built rule DFAs fall; with a
second directory (the other mode, same walks) it prints both side by side.

Caveat: run as above (callgrind 3.19), every dump came out with no cost (``summary: 0``) although
one was written per call; the recipe needs fixing (the order of ``--dump-after`` and the toggle
at the function's exit is the first suspect). The call log itself (which calls built rule DFAs)
needs no callgrind.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "bench"))


def walk_sample(args: argparse.Namespace) -> None:
    import xg2_plugin as xg
    from harness.corpus import sample_paths
    from xg2_test_support import hf_tokenizer_info

    info = hf_tokenizer_info(args.tokenizer)
    compiler = xg.GrammarCompiler(info, cache_enabled=False, max_threads=1, precompute_nodes=0)
    if args.eager_rule_dfas:
        compiler._use_eager_rule_dfas()
    mask = xg.allocate_token_bitmask(1, info.vocab_size)
    log = []
    for path in sample_paths(args.per_category, seed=args.seed):
        text = json.dumps(json.loads(path.read_text())["schema"])
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                grammar = compiler.compile_json_schema(text)
        except xg.XG2Error:
            continue
        handle = grammar._handle
        for walk in range(args.walks):
            rng = random.Random(f"{path.name}/{walk}")
            matcher = xg.GrammarMatcher(grammar)
            for step in range(args.steps):
                builds = handle.rule_dfa_builds
                matcher.fill_next_token_bitmask(mask)
                log.append(("fill", path.name, walk, step, handle.rule_dfa_builds - builds))
                words = np.asarray(mask)[0].view(np.uint8)
                allowed = np.flatnonzero(np.unpackbits(words, bitorder="little")[:info.vocab_size])
                if len(allowed) == 0 or matcher.is_terminated():
                    break
                builds = handle.rule_dfa_builds
                token = int(allowed[rng.randrange(len(allowed))])
                accepted = matcher.accept_token(token)
                log.append(("accept", path.name, walk, step, handle.rule_dfa_builds - builds))
                assert accepted, f"{path.name}: token {token} of the mask refused"
    if args.log:
        args.log.write_text("".join("\t".join(map(str, row)) + "\n" for row in log))
    print(f"{sum(row[0] == 'fill' for row in log)} fills, {sum(row[4] for row in log)} rule DFA builds")


def dump_costs(directory: Path) -> list[int]:
    """Instructions of each callgrind dump in `directory`, in dump order (cg.N, N from 1; the
    final dump at exit, named cg, holds nothing collected)."""
    dumps = sorted((p for p in directory.glob("cg.*") if p.name.rsplit(".", 1)[1].isdigit()),
                   key=lambda p: int(p.name.rsplit(".", 1)[1]))
    costs = []
    for dump in dumps:
        match = re.search(r"^(?:totals|summary): (\d+)", dump.read_text(errors="replace"), re.M)
        costs.append(int(match.group(1)) if match else 0)
    return costs


def load_run(directory: Path) -> list[tuple[str, str, int, int, int, int]]:
    calls = [line.split("\t") for line in (directory / "calls.tsv").read_text().splitlines()]
    costs = dump_costs(directory)
    if len(costs) != len(calls):
        raise SystemExit(f"{directory}: {len(costs)} dumps for {len(calls)} calls")
    return [(kind, name, int(walk), int(step), int(built), cost)
            for (kind, name, walk, step, built), cost in zip(calls, costs)]


def percentiles(values: list[int]) -> str:
    if not values:
        return "none"
    a = np.array(values, dtype=float)
    return (f"n={len(a)} p50={np.percentile(a, 50) / 1e3:.1f}K p99={np.percentile(a, 99) / 1e3:.1f}K "
            f"p99.9={np.percentile(a, 99.9) / 1e3:.1f}K max={a.max() / 1e3:.1f}K sum={a.sum() / 1e6:.1f}M")


def summarize(directories: list[Path]) -> None:
    runs = [load_run(d) for d in directories]
    for directory, run in zip(directories, runs):
        print(f"== {directory}")
        for kind in ("fill", "accept"):
            calls = [c for c in run if c[0] == kind]
            print(f"  {kind:6} all      {percentiles([c[5] for c in calls])}")
            building = [c for c in calls if c[4] > 0]
            print(f"  {kind:6} building {percentiles([c[5] for c in building])} "
                  f"builds={sum(c[4] for c in building)} first-step={sum(c[3] == 0 for c in building)}")
            if building:
                ranks = np.array(sorted(c[5] for c in calls))
                where = [float(np.searchsorted(ranks, c[5]) / len(ranks) * 100) for c in building]
                print(f"  {kind:6} building calls at percentile ranks: p50 of them {np.median(where):.1f}, "
                      f"lowest {min(where):.1f}; in the top 1%: {sum(w >= 99 for w in where)} of {len(where)}")
    if len(runs) == 2 and [c[:4] for c in runs[0]] == [c[:4] for c in runs[1]]:
        for kind in ("fill", "accept"):
            pairs = [(a[5], b[5]) for a, b in zip(*runs) if a[0] == kind]
            diff = np.array([b - a for a, b in pairs], dtype=float)
            print(f"{kind}: second minus first, per call: p50={np.percentile(diff, 50) / 1e3:.1f}K "
                  f"p99={np.percentile(diff, 99) / 1e3:.1f}K max={diff.max() / 1e3:.1f}K "
                  f"min={diff.min() / 1e3:.1f}K")
    elif len(runs) == 2:
        print("the two runs took different walks: no per-call comparison")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--per-category", type=int, default=1)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--tokenizer", default="llama3.1")
    parser.add_argument("--walks", type=int, default=2)
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--eager-rule-dfas", action="store_true", help="build every rule DFA at compile")
    parser.add_argument("--log", type=Path, default=None, help="write the call log here")
    parser.add_argument("--summarize", type=Path, nargs="+", default=None, metavar="DIR")
    args = parser.parse_args()
    if args.summarize:
        summarize(args.summarize)
    else:
        walk_sample(args)


if __name__ == "__main__":
    main()
