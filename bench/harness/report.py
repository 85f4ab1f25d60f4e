"""The Markdown report and its CDF plots, built from a run's raw results."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any, Callable, Optional, Sequence

from .corpus import CATEGORIES
from .engines import BASELINE, ENGINES
from .stats import (
    EngineSummary,
    Result,
    grammar_walk_groups,
    index_results,
    percentile,
    ratio,
    summarize,
)


# ---- formatting --------------------------------------------------------------------------

def _num(value: float) -> str:
    """Three significant digits without scientific notation (1,234 / 12.3 / 0.123)."""
    if abs(value) >= 100:
        return f"{value:,.0f}"
    if abs(value) >= 10:
        return f"{value:.1f}"
    return f"{value:.3g}"


def _ms(seconds: Optional[float]) -> str:
    return "–" if seconds is None else _num(seconds * 1e3)


def _us(ns: Optional[float]) -> str:
    return "–" if ns is None else _num(ns / 1e3)


def _oneline(text: Any, limit: int = 200) -> str:
    return " ".join(str(text).split())[:limit].replace("|", "\\|")


def _pct(value: Optional[float]) -> str:
    return "–" if value is None else f"{value:.1f}%"


def _x(value: Optional[float]) -> str:
    return "–" if value is None else f"{value:.2f}×"


def _bytes(value: Optional[float]) -> str:
    if value is None:
        return "–"
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(value) < 1024 or unit == "GiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return "–"


def _table(header: Sequence[str], rows: list[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


# ---- speed figures -------------------------------------------------------------------------

SpeedFigure = tuple[str, Callable[[EngineSummary], Optional[float]], Callable[[Optional[float]], str]]

SPEED_FIGURES: list[SpeedFigure] = [
    ("compile p50 (ms)", lambda s: percentile(s.compile_s, 50), _ms),
    ("compile p90 (ms)", lambda s: percentile(s.compile_s, 90), _ms),
    ("compile p99 (ms)", lambda s: percentile(s.compile_s, 99), _ms),
    ("first mask p50 (ms)", lambda s: percentile(s.first_mask_s, 50), _ms),
    ("first mask p99 (ms)", lambda s: percentile(s.first_mask_s, 99), _ms),
    ("fill p50 (µs)", lambda s: percentile(s.fill_ns, 50), _us),
    ("fill p99 (µs)", lambda s: percentile(s.fill_ns, 99), _us),
    ("fill p99.9 (µs)", lambda s: percentile(s.fill_ns, 99.9), _us),
    ("accept p50 (µs)", lambda s: percentile(s.accept_ns, 50), _us),
]


def _peers(engines: list[str]) -> list[str]:
    return [e for e in engines if e != BASELINE and ENGINES.get(e) is not None and ENGINES[e].ablation is None]


# ---- plots ---------------------------------------------------------------------------------

def _cdf_plot(path: Path, title: str, xlabel: str, series: dict[str, list[float]]) -> bool:
    """Empirical CDFs on a log x axis; returns False when there is nothing to plot."""
    series = {k: v for k, v in series.items() if v}
    if not series:
        return False
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    fig, ax = plt.subplots(figsize=(7, 4.2), dpi=110)
    for engine, values in series.items():
        data = np.sort(np.asarray(values, dtype=float))
        data = np.maximum(data, 1e-3)
        ax.step(data, np.arange(1, data.size + 1) / data.size, where="post", label=f"{engine} (n={data.size})")
    ax.set_xscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel("fraction ≤ x")
    ax.set_ylim(0, 1.01)
    ax.grid(True, which="both", alpha=0.3)
    ax.set_title(title)
    ax.legend(loc="lower right")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return True


# ---- sections ------------------------------------------------------------------------------

def _reproduce_section(meta: dict[str, Any]) -> str:
    facts = meta["machine"]
    packages = ", ".join(f"{k} {v}" for k, v in facts["packages"].items())
    engine_lines = "\n".join(
        f"- `{name}` {info.get('version', '?')}: settings `{info.get('settings', {})}`; tokenizer table built in "
        f"{info.get('setup_s', 0):.2f} s"
        for name, info in meta.get("engine_info", {}).items()
    )
    sample = meta["sample"]
    progress = []
    if not meta.get("complete", True):
        progress = [f"- **Partial run**: the run was interrupted; this report covers the items finished so far "
                    f"(planned: {meta.get('planned_items', '?')} schema and grammar items across the engines)."]
    sessions = meta.get("sessions", [])
    if len(sessions) > 1:
        progress.append("- Resumed run, continued at: " +
                        "; ".join(f"{s['started']} (commit `{s['commit'][:10]}`)" for s in sessions))
    return "\n".join([
        "## How this was run",
        "",
        *progress,
        f"- Command: `{meta['command']}`",
        f"- Mode: {meta['mode']}; seed {meta['seed']}; tokenizer `{meta['tokenizer']}`; "
        f"{sample['schemas']} schemas ({sample['description']}), {sample['grammars']} grammars; "
        f"item timeout {meta['timeout_s']} s; {meta['jobs']} item(s) at a time",
        f"- Work per schema: {meta['work']}",
        f"- Started {meta['started']}, took {meta['elapsed_s'] / 60:.1f} min; load average at start "
        f"{facts['load_average']}, at end {meta.get('load_average_end', '?')} (other work on the machine shows up as noise)",
        f"- Repository commit: `{facts['commit']}`",
        f"- CPU: {facts['cpu']}, {facts['cores']} cores; Python {facts['python']}; {facts['platform']}",
        f"- Packages: {packages}",
        engine_lines,
        f"- Raw results: `{meta['raw_dir']}` (not committed); sample list in the appendix",
        "",
    ])


DEFINITIONS = """## Definitions

- **compiled**: the engine turned the schema into a matcher ready for its first mask; **rejected**: it refused
  with an error of its own; **crashed**: the worker process died; **timeout**: the item outlived its timeout
  before compiling (an item that timed out later keeps what it measured and counts as *incomplete*).
- **coverage**: compiled, not incomplete, and every tested valid instance accepted (instance serialized with keys
  in the schema's declared order and `json.dumps` separators, then tokenized; the stop token must follow).
- **invalid rejected**: share of the invalid instances (labelled by a JSON Schema validator) the engine refused.
- **random walks**: tokens sampled from the engine's own masks (fixed seed, biased towards closing bytes and the
  stop token) until the stop token or the cap; a finished walk's text is checked with `jsonschema` and its
  `FormatChecker`. **violations** = finished walks whose text is not valid JSON or fails the schema (a soundness
  bug, or a keyword the engine does not enforce); *validator errors* are schemas `jsonschema` itself cannot use.
- **compile**: schema text to a matcher ready for its first mask; **first mask**: schema text to the first mask
  filled. Percentiles over the schemas *every* engine compiled.
- **fill / accept**: one `fill_next_token_bitmask` / `accept_token` call through the engine's Python API, per
  token along the valid instances, pooled over the instances *every* engine accepted (identical token sequences,
  so each engine is timed on the same masks).
- **ratio** columns: ours ÷ peer (below 1 means we are faster).
"""


SEMANTICS = """## Semantic differences that affect the comparison

- **Undeclared properties**: xgrammar (`strict_mode=True`, its default) and ours (`strict_mode=True`, the same
  default) forbid properties the schema does not declare unless `additionalProperties` allows them; llguidance
  follows JSON Schema (undeclared properties allowed unless `additionalProperties: false`). Valid instances
  with extra properties are therefore rejected by the strict engines (lower coverage), and llguidance's masks are
  larger on such objects. Random walks are checked against the schema, which allows extra properties, so strict
  engines stay sound.
- **Property order**: instances are serialized with their properties in the schema's declared order, because
  xgrammar (default `any_order=False`) and ours only accept declared properties in that order; an instance in
  another order would be refused for its order rather than its content.
- **Whitespace**: all engines use flexible whitespace (xgrammar and ours `any_whitespace=True`; llguidance
  `whitespace_flexible=true`). xgrammar and ours put no cap on whitespace runs by default.
- **Unsupported keywords**: ours (`lenient=False`) and llguidance (`lenient=false`) reject schemas with
  keywords they cannot enforce; engines differ in which keywords they enforce, and a keyword an engine ignores
  shows up as walk violations or invalid instances accepted rather than as a rejection.
- **Compile work**: llguidance builds its lexer lazily, so part of its compile cost moves into the first masks;
  compare *first mask* for the cost a request sees before its first token. Compilers run single-threaded
  (`max_threads=1` for xgrammar and ours). Compiled-grammar caches are on (defaults) but each schema is compiled
  once, so caches only matter across schemas (the cross-grammar cache).
- **GBNF grammars**: xgrammar and ours read GBNF directly; llguidance gets the grammar through its own
  `gbnf_to_lark` converter (included in its compile time). Dialect differences show as rejections.
"""


def _correctness_table(summaries: dict[str, EngineSummary]) -> str:
    rows = []
    for engine, s in summaries.items():
        rows.append([
            f"`{engine}`", s.items, _pct(s.pct(s.compiled)), s.rejected, s.crashed, s.timeout,
            _pct(s.pct(s.covered)),
            f"{s.valid_accepted}/{s.valid_tested}", f"{s.invalid_rejected}/{s.invalid_tested}",
            f"{s.walks_stopped}/{s.walks}", f"**{s.walk_violations}**", s.walks_capped, s.walk_dead_ends,
            s.walk_validator_errors,
        ])
    return _table(["engine", "schemas", "compiled", "rejected", "crashed", "timeout", "coverage",
                   "valid accepted", "invalid rejected", "walks finished", "violations", "capped", "dead ends",
                   "validator errors"], rows)


def _speed_table(summaries: dict[str, EngineSummary]) -> str:
    header = ["engine", "n compile", "n tokens"] + [name for name, _, _ in SPEED_FIGURES]
    rows = []
    for engine, s in summaries.items():
        rows.append([f"`{engine}`", len(s.compile_s), len(s.fill_ns)] + [fmt(get(s)) for _, get, fmt in SPEED_FIGURES])
    return _table(header, rows)


def _ratio_table(summaries: dict[str, EngineSummary], engines: list[str]) -> str:
    base = summaries.get(BASELINE)
    peers = _peers(engines)
    if base is None or not peers:
        return "_No ratio: the run needs `ours` and at least one peer._"
    rows = []
    for name, get, _ in SPEED_FIGURES:
        rows.append([name] + [_x(ratio(get(base), get(summaries[p]))) for p in peers]
                    + [_x(ratio(get(base), min((v for v in (get(summaries[p]) for p in peers) if v is not None), default=None)))])
    return _table(["figure"] + [f"ours ÷ {p}" for p in peers] + ["ours ÷ best peer"], rows)


def _category_tables(table: dict[str, dict[str, Result]], engines: list[str]) -> str:
    by_category: dict[str, list[str]] = defaultdict(list)
    for item, by in table.items():
        category = next(iter(by.values())).get("category") or item.split("---")[0]
        by_category[category].append(item)
    order = [c for c in CATEGORIES if c in by_category] + sorted(c for c in by_category if c not in CATEGORIES)
    peers = _peers(engines)
    coverage_rows, speed_rows = [], []
    for category in order:
        summaries = summarize(table, engines, sorted(by_category[category]))
        n = len(by_category[category])
        coverage_rows.append([category, n] + [
            f"{_pct(s.pct(s.compiled))} / {_pct(s.pct(s.covered))} / {s.walk_violations}" for s in summaries.values()])
        compile_p50 = {e: percentile(s.compile_s, 50) for e, s in summaries.items()}
        fill_p50 = {e: percentile(s.fill_ns, 50) for e, s in summaries.items()}
        row = [category, len(summaries[engines[0]].compile_s), len(summaries[engines[0]].fill_ns)]
        row += [_ms(compile_p50[e]) for e in engines] + [_us(fill_p50[e]) for e in engines]
        if BASELINE in summaries:
            row += [_x(ratio(compile_p50[BASELINE], compile_p50[p])) for p in peers]
            row += [_x(ratio(fill_p50[BASELINE], fill_p50[p])) for p in peers]
        speed_rows.append(row)
    coverage = _table(["category", "schemas"] + [f"`{e}` compiled / coverage / violations" for e in engines], coverage_rows)
    header = ["category", "n compile", "n tokens"] + [f"compile p50 ms `{e}`" for e in engines] + \
        [f"fill p50 µs `{e}`" for e in engines]
    if BASELINE in engines:
        header += [f"compile ours ÷ {p}" for p in peers] + [f"fill ours ÷ {p}" for p in peers]
    return coverage + "\n\n" + _table(header, speed_rows)


def _memory_table(summaries: dict[str, EngineSummary]) -> str:
    rows = []
    for engine, s in summaries.items():
        rows.append([f"`{engine}`", _bytes(percentile(s.grammar_bytes, 50)), _bytes(max(s.grammar_bytes, default=None)),
                     _bytes(sum(s.grammar_bytes) if s.grammar_bytes else None), _bytes(s.cache_bytes),
                     _bytes(s.max_rss_kb * 1024 if s.max_rss_kb else None)])
    return _table(["engine", "compiled grammar p50", "max", "sum over compiled schemas",
                   "compiler cache (largest seen by one worker)", "worker peak RSS"], rows)


def _grammar_section(results: list[Result], engines: list[str]) -> str:
    table = index_results(results, "grammar")
    if not table:
        return "_No grammars in this run._"
    rows = []
    for item in sorted(table):
        by = table[item]
        row = [f"`{item}`"]
        for engine in engines:
            r = by.get(engine)
            if r is None:
                row.append("–")
            elif r.get("status") != "ok":
                row.append(f"{r.get('status')}")
            else:
                fills = [f for w in r.get("walks", []) for f in w.get("fill_ns", [])]
                ends = "/".join(w.get("end", "?")[0] for w in r.get("walks", []))
                row.append(f"{_ms(r['compile_s'])} / {_ms(r['first_mask_s'])} / {_us(percentile(fills, 50))} ({ends})")
        groups = grammar_walk_groups({e: by[e] for e in engines if e in by})
        if len(groups) < 2:
            row.append("same" if groups and len(groups[0]) > 1 else "–")
        else:
            row.append("**" + " ≠ ".join("=".join(g) for g in groups) + "**")
        rows.append(row)
    note = ("Cells: compile ms / first mask ms / fill p50 µs over the random-walk tokens (walk ends: s = stop token, "
            "c = cap, d = dead end). *Walks*: with equal seeds, exact engines with equal masks sample identical "
            "tokens; engines listed apart (a ≠ b) had different masks somewhere along the walks.")
    errors = []
    for item in sorted(table):
        for engine, r in sorted(table[item].items()):
            if r.get("status") not in ("ok", None):
                errors.append(f"- `{item}` / `{engine}`: {r.get('status')}: {_oneline(r.get('error', ''))}")
    return "\n".join([_table(["grammar"] + [f"`{e}`" for e in engines] + ["walks"], rows), "", note, "",
                      *(["Rejections:", "", *errors] if errors else [])])


def _batch_section(results: list[Result], engines: list[str]) -> str:
    batch = [r for r in results if r.get("kind") == "batch"]
    if not batch:
        return "_No batch measurements in this run._"
    configs = sorted({(r["batch"], r["threads"]) for r in batch if "batch" in r})
    peers = _peers(engines)
    rows = []
    for size, threads in configs:
        cell: dict[str, Optional[float]] = {}
        for engine in engines:
            match = [r for r in batch if r["engine"] == engine and r.get("batch") == size and r.get("threads") == threads]
            cell[engine] = match[0].get("masks_per_s") if match and match[0].get("status") == "ok" else None
        row = [size, threads] + [("–" if cell[e] is None else f"{cell[e]:,.0f}") for e in engines]
        if BASELINE in engines:
            row += [_x(ratio(cell[p], cell[BASELINE])) for p in peers]
        rows.append(row)
    header = ["batch", "threads"] + [f"`{e}` masks/s" for e in engines]
    if BASELINE in engines:
        header += [f"time ours ÷ {p}" for p in peers]
    failures = [f"- `{r['engine']}` {r['item']}: {r.get('status')} {_oneline(r.get('error', r.get('harness_error', '')))}"
                for r in batch if r.get("status") != "ok"]
    return "\n".join([_table(header, rows), "",
                      "Matchers cycle over schemas every engine compiled and accepted, starting at spread-out positions "
                      "of a valid instance; each round fills all rows with the engine's batch API (timed), then every "
                      "matcher accepts its next token (untimed). The time ratio is peer throughput ÷ ours.",
                      *(["", "Not measured:", "", *failures] if failures else [])])


def _ablation_section(table: dict[str, dict[str, Result]], engines: list[str]) -> str:
    variants = [e for e in engines if ENGINES.get(e) is not None and ENGINES[e].ablation is not None]
    if not variants or BASELINE not in engines:
        return ("_No ablation variants in this run._ Register a variant of our engine with mechanisms switched off in "
                "`bench/harness/engines/__init__.py` (a subclass of `OursEngine` with other compiler options, "
                "`register(cls, ablation=\"...\")`) and run with `--ablation`; this section then lists each variant's "
                "figures next to `ours` on the same items.")
    group = [BASELINE, *variants]
    summaries = summarize(table, group)
    rows = []
    for engine in group:
        s = summaries[engine]
        label = "all mechanisms on (+repetition compression)" if engine == BASELINE else ENGINES[engine].ablation
        rows.append([f"`{engine}`", label] + [fmt(get(s)) for _, get, fmt in SPEED_FIGURES] +
                    [_x(ratio(percentile(s.fill_ns, 50), percentile(summaries[BASELINE].fill_ns, 50)))])
    return _table(["variant", "what differs"] + [name for name, _, _ in SPEED_FIGURES] + ["fill p50 ÷ ours"], rows)


def _failures_section(table: dict[str, dict[str, Result]], engines: list[str], limit: int = 25) -> str:
    lines = []
    for engine in engines:
        failures = []
        for item in sorted(table):
            r = table[item].get(engine)
            if r is None:
                continue
            if r.get("status") != "ok":
                detail = r.get("error") or r.get("log_tail", "")[-200:]
                failures.append(f"  - `{item}`: {r.get('status')}: {_oneline(detail)}")
            for v in r.get("valid", []):
                if "skipped" not in v and not v.get("accepted"):
                    failures.append(f"  - `{item}` valid #{v['index']} refused at token {v.get('reject_at')} "
                                    f"of {v.get('n_tokens')} ({v.get('why')})")
            for w in r.get("walks", []):
                if w.get("verdict") == "violation":
                    failures.append(f"  - `{item}` walk {w['walk']} VIOLATION: {_oneline(w.get('detail'))}; "
                                    f"text `{_oneline(w.get('text', ''), 160)}`")
            if r.get("incomplete") or r.get("harness_error"):
                failures.append(f"  - `{item}`: incomplete ({_oneline(r.get('incomplete') or r.get('harness_error'))})")
        if failures:
            shown = failures[:limit]
            more = f"\n  - … {len(failures) - limit} more in the raw results" if len(failures) > limit else ""
            lines.append(f"- `{engine}` ({len(failures)}):\n" + "\n".join(shown) + more)
    return "\n".join(lines) if lines else "_None._"


def write_report(path: Path, results: list[Result], engines: list[str], meta: dict[str, Any]) -> Path:
    """Writes the Markdown report (and its PNG plots beside it); returns the report path."""
    path.parent.mkdir(parents=True, exist_ok=True)
    table = index_results(results, "schema")
    summaries = summarize(table, engines)
    main_engines = [e for e in engines if ENGINES.get(e) is None or ENGINES[e].ablation is None]
    main = {e: summaries[e] for e in main_engines}
    stem = path.with_suffix("")
    compile_png = stem.parent / f"{stem.name}-compile-cdf.png"
    fill_png = stem.parent / f"{stem.name}-fill-cdf.png"
    plots = []
    if _cdf_plot(compile_png, "Compile time (schemas every engine compiled)", "milliseconds",
                 {e: [x * 1e3 for x in s.compile_s] for e, s in main.items()}):
        plots.append(f"![compile time CDF]({compile_png.name})")
    if _cdf_plot(fill_png, "Per-token mask fill (instances every engine accepted)", "microseconds",
                 {e: [x / 1e3 for x in s.fill_ns] for e, s in main.items()}):
        plots.append(f"![fill time CDF]({fill_png.name})")
    sample = meta["sample"]
    parts = [
        f"# Structured-generation benchmark: {meta['name']}",
        "",
        f"Engines {', '.join(f'`{e}`' for e in engines)} on {sample['schemas']} JSONSchemaBench schemas "
        f"({sample['description']}) and {sample['grammars']} GBNF grammars, tokenizer `{meta['tokenizer']}`, "
        f"{meta['mode']} mode.",
        "",
        _reproduce_section(meta),
        DEFINITIONS,
        "## JSONSchemaBench: correctness",
        "",
        _correctness_table(main),
        "",
        "## JSONSchemaBench: speed",
        "",
        _speed_table(main),
        "",
        "### Ratios (ours ÷ peer; below 1 = ours faster)",
        "",
        _ratio_table(main, main_engines),
        "",
        *[p + "\n" for p in plots],
        "## Per category",
        "",
        _category_tables(table, main_engines),
        "",
        "## Memory",
        "",
        _memory_table(main),
        "",
        "Compiled-grammar sizes are the engines' own estimates (`memory_size_bytes`); llguidance does not report one. "
        "The compiler cache holds every grammar a worker compiled (default byte limit: unbounded); a worker is "
        "replaced after a crash or timeout, so this is a lower bound for the whole sample.",
        "",
        "## EBNF grammars",
        "",
        _grammar_section(results, main_engines),
        "",
        "## Batch fill throughput",
        "",
        _batch_section(results, main_engines),
        "",
        "## Ablation (our engine with mechanisms switched off)",
        "",
        _ablation_section(table, engines),
        "",
        SEMANTICS,
        "## Appendix: failures, refusals and violations",
        "",
        _failures_section(table, engines),
        "",
        "## Appendix: sample",
        "",
        f"{sample['schemas']} schemas: " + (", ".join(f"`{n}`" for n in sample["names"]) if len(sample["names"]) <= 400
                                            else f"listed in `{meta['raw_dir']}/sample.txt`"),
        "",
    ]
    path.write_text("\n".join(parts), encoding="utf-8")
    return path
