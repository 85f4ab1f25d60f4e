"""Full differential sweep against xgrammar 0.2.8 (test oracle; needs the test extras).

For BFCL v3 tool sets (categories taken in turn), every model xgrammar registers x tool_choice
(auto, required, named, none) x reasoning (enabled, disabled, auto): xgrammar builds the tag,
both engines compile it, and seeded walks driven by each engine's mask check every token
against the other's (tests/xgrammar_oracle.py; the CI subset is
tests/frontends/test_structural_tag_differential.py). Prints Markdown: a summary per tokenizer,
disagreements per model and class, one example per class, compile failures grouped by
message. Exit status 1 when anything compiles in one engine only or a disagreement is not a
documented difference.

    XG2_DATA_DIR=../shared/data PYTHONPATH=. python scripts/tag_differential.py --tool-sets 12
    ... --tokenizers llama3.1:all,qwen3:qwen_3,qwen_3_5,qwen_3_coder --json out.json
"""

from __future__ import annotations

import argparse
import collections
import importlib.metadata
import json
import os
import re
import sys
import time
from pathlib import Path
from typing import Any, Dict, List, Tuple

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests"))
os.environ.setdefault("XG2_DATA_DIR", str(REPO.parent / "shared" / "data"))

from xgrammar_oracle import (DOCUMENTED_DIFFERENCES, KNOWN_DEFECTS, MODELS, REASONING_MODES,  # noqa: E402
                             TOOL_CHOICES, TagCase, check_tag, oracle_pair, tool_choice_value, xgr)
from preset_support import BfclCase, bfcl_cases  # noqa: E402

CATEGORIES = ("multiple", "simple", "parallel_multiple", "parallel")
# tokenizer: the models walked on it ("all": every registered model)
DEFAULT_TOKENIZERS = ("llama3.1:all;qwen3:qwen_3,qwen_3_5,qwen_3_coder,glm_4_7,mimo;gpt-oss:harmony")


def parse_tokenizers(spec: str) -> List[Tuple[str, Tuple[str, ...]]]:
    out = []
    for part in filter(None, spec.split(";")):
        name, _, models = part.partition(":")
        chosen = MODELS if models in ("", "all") else tuple(models.split(","))
        unknown = set(chosen) - set(MODELS)
        if unknown:
            raise SystemExit(f"--tokenizers: unknown models {sorted(unknown)}; registered: {list(MODELS)}")
        out.append((name, chosen))
    return out


def tool_sets(count: int) -> List[BfclCase]:
    per_category = {c: bfcl_cases(c, count) for c in CATEGORIES}
    picked: List[BfclCase] = []
    for i in range(count):
        for category in CATEGORIES:
            if len(picked) < count and i < len(per_category[category]):
                picked.append(per_category[category][i])
    return picked


def tags_for(case: BfclCase, models: Tuple[str, ...], build_errors: List[str]) -> List[TagCase]:
    tags = []
    for model in models:
        for choice in TOOL_CHOICES:
            for reasoning in REASONING_MODES:
                try:
                    tag = xgr.get_model_structural_tag(model, case.tools, tool_choice_value(choice, case.tools), reasoning)
                except ValueError as error:
                    build_errors.append(f"{case.id} {model}-{choice}-{reasoning}: {error}")
                    continue
                tags.append(TagCase(model, choice, reasoning, tag.model_dump_json()))
    return tags


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tool-sets", type=int, default=12, help="BFCL tool sets (categories in turn)")
    parser.add_argument("--tokenizers", default=DEFAULT_TOKENIZERS,
                        help="';'-separated NAME:MODELS (MODELS comma-separated or 'all')")
    parser.add_argument("--walks", type=int, default=2, help="walks per direction per tag")
    parser.add_argument("--max-steps", type=int, default=200, help="tokens per walk at most")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--output", type=Path, help="also write the Markdown report here")
    parser.add_argument("--json", type=Path, help="write every disagreement and compile failure here")
    args = parser.parse_args()

    sets = tool_sets(args.tool_sets)
    lines: List[str] = []
    out = lines.append
    counts: Dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    by_model: Dict[Tuple[str, str], collections.Counter] = collections.defaultdict(collections.Counter)
    examples: Dict[str, Any] = {}
    compile_failures: Dict[Tuple[str, str], List[str]] = collections.defaultdict(list)
    records: List[Dict[str, Any]] = []
    build_errors: List[str] = []
    started = time.time()
    for tok_name, models in parse_tokenizers(args.tokenizers):
        pair = oracle_pair(tok_name)
        c = counts[tok_name]
        for n, case in enumerate(sets):
            print(f"[{time.time() - started:6.0f}s] {tok_name} tool set {n + 1}/{len(sets)} {case.id}", file=sys.stderr)
            for tag in tags_for(case, models, build_errors):
                outcome = check_tag(pair, tag, case, walks_per_direction=args.walks, max_steps=args.max_steps,
                                    seed=args.seed)
                c["tags"] += 1
                for engine in ("ours", "xgrammar"):
                    if engine not in outcome.compile_errors:
                        c[f"compiled {engine}"] += 1
                    else:
                        message = outcome.compile_errors[engine]
                        general = re.sub(r"\bat /\S*: ", "", message)[:110]  # the same error at any path
                        compile_failures[(engine, general)].append(f"{tok_name} {case.id} {tag.id}")
                        by_model[(tok_name, tag.model)][f"compile fails ({engine})"] += 1
                        records.append({"compile_error": message, "engine": engine, "tokenizer": tok_name,
                                        "tool_set": case.id, "tag": tag.id})
                by_model[(tok_name, tag.model)]["tags"] += 1
                for driver, walk in outcome.walks:
                    c["walks"] += 1
                    c["walks ended"] += walk.ended
                    c["walks reached a call"] += walk.reached_call
                    c["special tokens mapped"] += walk.mapped_specials
                    for d in walk.disagreements:
                        c[d.kind] += 1
                        by_model[(tok_name, tag.model)][d.kind] += 1
                        if d.kind not in examples or len(d.text) < len(examples[d.kind].text):
                            examples[d.kind] = d
                        records.append({"kind": d.kind, "tokenizer": tok_name, "tool_set": case.id, "model": d.model,
                                        "tool_choice": d.tool_choice, "reasoning": d.reasoning, "driver": d.driver,
                                        "token": d.token, "token_bytes": d.token_bytes.decode("latin-1"),
                                        "text": d.text.decode("utf-8", "replace"), "detail": d.detail})

    kinds = sorted({k for c in counts.values() for k in c} - {"tags", "compiled ours", "compiled xgrammar", "walks",
                                                             "walks ended", "walks reached a call",
                                                             "special tokens mapped"})
    documented = [k for k in kinds if k in DOCUMENTED_DIFFERENCES]
    defects = [k for k in kinds if k not in DOCUMENTED_DIFFERENCES]
    out(f"### Differential walks against xgrammar {importlib.metadata.version('xgrammar')} ({len(sets)} BFCL tool sets: "
        f"{', '.join(s.id for s in sets)}; {args.walks} walk(s) per direction per tag, at most {args.max_steps} tokens)\n")
    head = ["tokenizer", "tags", "compiled ours", "compiled xgrammar", "walks", "walks ended", "walks reached a call",
            "special tokens mapped"]
    out("| " + " | ".join(head + [f"{k} (documented)" for k in documented] + defects) + " |")
    out("|" + "---|" * (len(head) + len(kinds)))
    for tok_name, c in counts.items():
        out("| " + " | ".join([tok_name] + [str(c[h]) for h in head[1:]] + [str(c[k]) for k in documented + defects]) + " |")
    out("")
    out("#### Per model (tags; compile failures; disagreements by class)\n")
    cols = sorted({k for c in by_model.values() for k in c} - {"tags"})
    out("| tokenizer | model | tags | " + " | ".join(cols) + " |")
    out("|" + "---|" * (3 + len(cols)))
    for (tok_name, model), c in sorted(by_model.items()):
        out(f"| {tok_name} | {model} | {c['tags']} | " + " | ".join(str(c[k] or "") for k in cols) + " |")
    out("")
    out("#### One example per class (the shortest output so far)\n")
    for kind in kinds:
        reason = DOCUMENTED_DIFFERENCES.get(kind) or KNOWN_DEFECTS.get(kind) or "not explained: look into it"
        label = "documented difference" if kind in DOCUMENTED_DIFFERENCES else "defect"
        out(f"- **{kind}** ({label}: {reason})\n  `{examples[kind].describe()}`")
    out("")
    if compile_failures:
        out("#### Compile failures (engine: message; count; first tag)\n")
        for (engine, message), where in sorted(compile_failures.items(), key=lambda kv: -len(kv[1])):
            out(f"- {engine}: `{message}` x{len(where)} (e.g. {where[0]})")
        out("")
    if build_errors:
        out(f"#### xgrammar's builder refused {len(build_errors)} tag(s), e.g. `{build_errors[0][:200]}`\n")
    report = "\n".join(lines)
    print(report)
    if args.output:
        args.output.write_text(report + "\n")
    if args.json:
        args.json.write_text(json.dumps(records, indent=1, ensure_ascii=False))
    return 1 if compile_failures or defects else 0


if __name__ == "__main__":
    sys.exit(main())
