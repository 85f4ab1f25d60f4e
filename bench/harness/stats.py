"""Summaries of raw results: percentiles, coverage, soundness and like-for-like pooling.

Raw results are the dicts the pool returns (one per item and engine; see ``tasks.py``).
Timing comparisons are like for like:

* compile and first-mask percentiles are over the items *every* engine of the run compiled;
* per-token fill and accept percentiles pool the tokens of the valid instances *every*
  engine accepted (same token sequences, so the same number of masks per engine).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any, Iterable, Optional

import numpy as np

Result = dict[str, Any]


def percentile(values: Iterable[float], q: float) -> Optional[float]:
    """The ``q``-th percentile (linear interpolation), or None for no values."""
    array = np.asarray(list(values), dtype=float)
    return float(np.percentile(array, q)) if array.size else None


def ratio(ours: Optional[float], peer: Optional[float]) -> Optional[float]:
    if ours is None or peer is None or peer <= 0:
        return None
    return ours / peer


def index_results(results: list[Result], kind: str) -> dict[str, dict[str, Result]]:
    """``{item: {engine: result}}`` for one task kind."""
    table: dict[str, dict[str, Result]] = defaultdict(dict)
    for result in results:
        if result.get("kind") == kind:
            table[result["item"]][result["engine"]] = result
    return table


def compiled_by_all(table: dict[str, dict[str, Result]], engines: list[str]) -> list[str]:
    return sorted(item for item, by in table.items() if all(by.get(e, {}).get("status") == "ok" for e in engines))


def accepted_by_all(table: dict[str, dict[str, Result]], engines: list[str]) -> list[tuple[str, int]]:
    """``(item, instance index)`` of valid instances every engine accepted."""
    keys: list[tuple[str, int]] = []
    for item, by in sorted(table.items()):
        if not all(e in by for e in engines):
            continue
        per_engine = [{v["index"]: v for v in by[e].get("valid", [])} for e in engines]
        for index in sorted(per_engine[0]) if per_engine else []:
            if all(index in p and p[index].get("accepted") for p in per_engine):
                keys.append((item, index))
    return keys


def instance_times(table: dict[str, dict[str, Result]], engine: str, keys: list[tuple[str, int]], field_name: str) -> list[int]:
    """Concatenated per-token times (ns) of the given instances for one engine."""
    out: list[int] = []
    for item, index in keys:
        for valid in table[item][engine].get("valid", []):
            if valid["index"] == index:
                out.extend(valid.get(field_name, []))
    return out


@dataclass
class EngineSummary:
    """Per-engine figures for one set of items (the whole run or one category)."""

    engine: str
    items: int = 0
    compiled: int = 0
    rejected: int = 0
    crashed: int = 0
    timeout: int = 0
    errors: int = 0
    incomplete: int = 0
    covered: int = 0
    valid_tested: int = 0
    valid_accepted: int = 0
    invalid_tested: int = 0
    invalid_rejected: int = 0
    walks: int = 0
    walks_stopped: int = 0
    walks_valid: int = 0
    walk_violations: int = 0
    walks_capped: int = 0
    walk_dead_ends: int = 0
    walk_validator_errors: int = 0
    compile_s_own: list[float] = field(default_factory=list)
    compile_s: list[float] = field(default_factory=list)
    first_mask_s: list[float] = field(default_factory=list)
    fill_ns: list[int] = field(default_factory=list)
    accept_ns: list[int] = field(default_factory=list)
    grammar_bytes: list[int] = field(default_factory=list)
    cache_bytes: Optional[int] = None
    max_rss_kb: Optional[int] = None

    def pct(self, count: int, total: Optional[int] = None) -> Optional[float]:
        total = self.items if total is None else total
        return 100.0 * count / total if total else None


def summarize(table: dict[str, dict[str, Result]], engines: list[str], items: Optional[list[str]] = None) -> dict[str, EngineSummary]:
    """Per-engine summaries over ``items`` (default: every item in ``table``)."""
    items = sorted(table) if items is None else items
    sub = {i: table[i] for i in items if i in table}
    common = compiled_by_all(sub, engines)
    keys = accepted_by_all(sub, engines)
    summaries = {e: EngineSummary(e) for e in engines}
    for engine, summary in summaries.items():
        for item in items:
            result = sub.get(item, {}).get(engine)
            if result is None:
                continue
            summary.items += 1
            status = result.get("status")
            if status == "ok":
                summary.compiled += 1
                summary.compile_s_own.append(result["compile_s"])
                if result.get("grammar_bytes") is not None:
                    summary.grammar_bytes.append(result["grammar_bytes"])
            elif status == "rejected":
                summary.rejected += 1
            elif status == "crashed":
                summary.crashed += 1
            elif status == "timeout":
                summary.timeout += 1
            else:
                summary.errors += 1
            if result.get("incomplete") or result.get("harness_error"):
                summary.incomplete += 1
            tested = [v for v in result.get("valid", []) if "skipped" not in v]
            summary.valid_tested += len(tested)
            summary.valid_accepted += sum(1 for v in tested if v.get("accepted"))
            if status == "ok" and not result.get("incomplete") and not result.get("harness_error") \
                    and all(v.get("accepted") for v in tested):
                summary.covered += 1
            invalid = result.get("invalid", [])
            summary.invalid_tested += len(invalid)
            summary.invalid_rejected += sum(1 for v in invalid if v.get("rejected"))
            for walk in result.get("walks", []):
                summary.walks += 1
                end = walk.get("end")
                if end == "stop":
                    summary.walks_stopped += 1
                    verdict = walk.get("verdict")
                    summary.walks_valid += verdict == "valid"
                    summary.walk_violations += verdict == "violation"
                    summary.walk_validator_errors += verdict == "validator_error"
                elif end == "cap":
                    summary.walks_capped += 1
                elif end == "dead_end":
                    summary.walk_dead_ends += 1
            if result.get("cache_bytes_after") is not None:
                summary.cache_bytes = max(summary.cache_bytes or 0, result["cache_bytes_after"])
            if result.get("worker_max_rss_kb") is not None:
                summary.max_rss_kb = max(summary.max_rss_kb or 0, result["worker_max_rss_kb"])
        for item in common:
            summary.compile_s.append(sub[item][engine]["compile_s"])
            summary.first_mask_s.append(sub[item][engine]["first_mask_s"])
        summary.fill_ns = instance_times(sub, engine, keys, "fill_ns")
        summary.accept_ns = instance_times(sub, engine, keys, "accept_ns")
    return summaries


def grammar_walk_groups(by_engine: dict[str, Result]) -> list[list[str]]:
    """Engines that compiled a grammar, grouped by identical random walks (same seeds).

    Exact engines with equal masks sample identical tokens, so engines in different groups
    had different masks somewhere along the walks (or parse the grammar differently).
    """
    groups: dict[tuple, list[str]] = {}
    for engine, result in by_engine.items():
        if result.get("status") == "ok":
            digest = tuple(w.get("digest") for w in result.get("walks", []))
            groups.setdefault(digest, []).append(engine)
    return list(groups.values())
