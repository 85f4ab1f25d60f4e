"""Tool-calling benchmark: BFCL v3 tool sets as xgrammar's own structural tags, xg2 against
xgrammar 0.2.8 and llguidance 1.9.1 in one run, interleaved.

    PYTHONPATH=. python bench/tags_bench.py --tool-sets 40 --name tool-calls-bfcl

Formats: each tag is ``xgrammar.get_model_structural_tag(model, tools, "auto", reasoning)`` for
model ``llama`` (Llama-3.1 JSON, llama3.1 tokenizer), ``qwen_3`` (reasoning on, qwen3 tokenizer)
and ``harmony`` (reasoning on, gpt-oss tokenizer), given as is to xg2 and xgrammar. llguidance
has no structural tags; it gets a Lark grammar written from the same tag JSON (``tag_to_lark``:
``triggered_tags`` become llguidance's lazy-trigger form, ``json_schema`` becomes ``%json``,
``any_text`` a text lexeme, special-token strings special tokens) where that is a faithful
equivalent, and is reported as n/a for a format where it is not.

Per tool set the engines run in a rotating order (interleaved, so load drifts hit all alike):
compile (cache off, one thread; llguidance: building the matcher) then one walk along a
rendered reply: free text (reasoning and prose), then the ground-truth call. Each step times one
mask fill. Reported: compile p50; the first mask of the matcher; fill p50/p99 over the whole
reply (all steps but the first) and over the call part alone (steps whose token starts at or
after the call's first byte); and the first mask after the trigger. Ratios are xg2 / peer on
the same tool sets.

After the trigger: the fill at the first token boundary at or past the trigger's last byte,
i.e. the mask for the token that follows the text consumed so far, in the same grammar state
for every engine. The engines' token sequences differ (see Tokenization), but each has a
boundary at the same offset there: Qwen3's `<tool_call>` is one added token for xg2 and
llguidance and the text pieces `<tool` and `_call>` for xgrammar, so the fill is after exactly
`<tool_call>`; Harmony's `<|channel|>commentary` ends in ordinary text (the same tokens
`comment`, `ary` in every engine); Llama-3.1's `{"name": ` ends inside the token ` "`, so the
fill is after `{"name": "` in every engine. The run checks that every engine's after-trigger
fill is at the same offset of each reply. What differs is the path there: on Qwen3, xg2 and
llguidance consume the trigger in one step from a free-text state, while xgrammar walks its
text piece by piece, its fills just before being at states inside the trigger.

Fills are timed by the wall clock; compiles too, or with ``--compile-clock cpu`` by the
process's CPU time over all its threads (on a loaded machine a wall-clock compile of a few
milliseconds also counts any time slice it waits out behind other processes).

Tokenization: xg2 and llguidance are fed the tokenizer's own encoding (special tokens as
special tokens); xgrammar 0.2.8 matches special-token text as text, so it is fed the same text
split into ordinary tokens (a different, longer token sequence; each engine's figures are over
its own steps). A walk that an engine refuses is counted and its steps dropped.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests"))

DATA = Path(os.environ.get("XG2_DATA_DIR", REPO.parent / "shared" / "data"))
os.environ.setdefault("XG2_DATA_DIR", str(DATA))

# format -> (xgrammar model name, tokenizer, reasoning, trigger text that starts a call)
FORMATS = {
    "llama3.1-json": ("llama", "llama3.1", False, '{"name": '),
    "qwen3": ("qwen_3", "qwen3", True, "<tool_call>"),
    "harmony": ("harmony", "gpt-oss", True, "<|channel|>commentary"),
}
PROSE = "Let me check that for you with the right tool; one moment while I look it up. "


def quantile(values: List[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def load_tool_sets(count: int) -> List[Tuple[List[Dict[str, Any]], str, Dict[str, Any]]]:
    from preset_support import bfcl_cases  # BFCL -> JSON Schema, ground truth validated

    cases = bfcl_cases("multiple", count // 2) + bfcl_cases("simple", count - count // 2)
    return [(c.tools, c.calls[0][0], c.calls[0][1]) for c in cases]


def reply(fmt: str, name: str, args: Dict[str, Any]) -> Tuple[str, int]:
    """The rendered model output and the offset where the call starts."""
    arguments = json.dumps(args)
    if fmt == "llama3.1-json":
        text = PROSE
        call = json.dumps({"name": name, "parameters": args})
    elif fmt == "qwen3":
        text = "The user wants " + name + ". " + PROSE + "\n</think>\n\n" + PROSE
        call = '<tool_call>\n{"name": "' + name + '", "arguments": ' + arguments + "}\n</tool_call>"
    else:
        text = "<|channel|>analysis<|message|>The user wants " + name + ". " + PROSE + "<|end|><|start|>assistant"
        call = "<|channel|>commentary to=functions." + name + "<|constrain|>json<|message|>" + arguments + "<|call|>"
    return text + call, len(text)


# ---- llguidance: the same language in Lark where a faithful equivalent exists ----------------

class NoEquivalent(Exception):
    pass


def tag_to_lark(tag: Dict[str, Any], specials: List[str]) -> str:
    rules: List[str] = []

    def lit(text: str) -> str:
        """A literal, special-token strings as llguidance special tokens."""
        parts, i, start = [], 0, 0
        while i < len(text):
            hit = next((s for s in specials if text.startswith(s, i)), None)
            if hit:
                if i > start:
                    parts.append(json.dumps(text[start:i]))
                parts.append(hit)
                i += len(hit)
                start = i
            else:
                i += 1
        if start < len(text):
            parts.append(json.dumps(text[start:]))
        return " ".join(parts) if parts else '""'

    def content(node: Dict[str, Any]) -> str:
        kind = node["type"]
        if kind == "json_schema":
            if node.get("style", "json") != "json" or node.get("any_order") or node.get("excludes"):
                raise NoEquivalent(f"json_schema style {node.get('style')}")
            return "%json " + json.dumps(node["json_schema"])
        if kind == "const_string":
            return lit(node["value"])
        if kind == "any_text":
            if node.get("max_tokens") or node.get("max_chars"):
                raise NoEquivalent("any_text budget")
            # Text lexemes never contain special tokens; excludes of ordinary text are not
            # expressed (a documented difference in the report).
            return "TEXT"
        if kind == "tag":
            ends = node["end"] if isinstance(node["end"], list) else [node["end"]]
            end = "(" + " | ".join(lit(e) for e in ends) + ")" if len(ends) > 1 else lit(ends[0])
            if node["content"]["type"] == "any_text" and not all(e in specials for e in ends):
                # Text up to the first end string: llguidance's lazy form.
                if len(ends) > 1:
                    raise NoEquivalent("any_text with several ordinary-text ends")
                content(node["content"])  # the same checks on the text itself
                name = f"lazy{len(rules)}"
                rules.append(f"{name}[lazy]: FREE {lit(ends[0])}")
                return f"{lit(node['begin'])} {name}"
            return f"{lit(node['begin'])} {content(node['content'])} {end}"
        if kind == "sequence":
            return " ".join(f"({content(e)})" for e in node["elements"])
        if kind == "tags_with_separator":
            if node.get("at_least_one") or node.get("stop_after_first"):
                raise NoEquivalent("tags_with_separator options")
            name = f"alt{len(rules)}"
            rules.append(f"{name}: " + " | ".join(f"({content(t)})" for t in node["tags"]))
            return f"({name} ({lit(node['separator'])} {name})*)?"
        if kind == "triggered_tags":
            if node.get("at_least_one") or node.get("stop_after_first"):
                raise NoEquivalent("triggered_tags options")
            base = len(rules)
            options = []
            for i, t in enumerate(node["tags"]):
                trig = next(tr for tr in node["triggers"] if t["begin"].startswith(tr))
                name = f"call{base}_{i}"
                body = {"type": "tag", "begin": t["begin"][len(trig):], "content": t["content"], "end": t["end"]}
                if trig in specials:
                    rules.append(f"{name}: FREE {trig} {content(body)}")
                else:
                    rules.append(f"{name}_trig[lazy]: FREE {json.dumps(trig)}")
                    rules.append(f"{name}: {name}_trig {content(body)}")
                options.append(name)
            return f"({' | '.join(options)})* FREE"
        raise NoEquivalent(kind)

    start = content(tag["format"])
    lines = ["%llguidance {}", f"start: {start}", *rules, r"TEXT: /(.|\n)*/", r"FREE: /(.|\n)*/"]
    return "\n".join(lines) + "\n"


# ---- engines -------------------------------------------------------------------------------

class Engine:
    precompute_nodes = 32
    # The clock of compile times: wall (perf_counter) or the process's CPU time over all its
    # threads (process_time: a peer's helper threads and our background thread count too).
    # On a loaded machine a compile of a few milliseconds either runs within one time slice or
    # waits out another process's, which a wall clock adds to it; fills stay on the wall clock.
    compile_clock = time.perf_counter

    def __init__(self, name: str, hf: Any) -> None:
        self.name, self.hf = name, hf
        if name == "xg2":
            import xg2_plugin as lib

            info = lib.TokenizerInfo.from_huggingface(hf)
            self.compiler = lib.GrammarCompiler(info, max_threads=1, cache_enabled=False,
                                                precompute_nodes=Engine.precompute_nodes)
            self.bitmask = lib.allocate_token_bitmask(1, info.vocab_size)
        elif name == "xgrammar":
            import xgrammar as lib

            info = lib.TokenizerInfo.from_huggingface(hf)
            self.compiler = lib.GrammarCompiler(info, max_threads=1, cache_enabled=False)
            self.bitmask = lib.allocate_token_bitmask(1, info.vocab_size)
        else:
            import llguidance
            import llguidance.hf
            import torch

            self.llg = llguidance
            self.tok = llguidance.hf.from_tokenizer(hf)
            self.bitmask = torch.zeros((1, (self.tok.vocab_size + 31) // 32), dtype=torch.int32)
            added = hf.get_added_vocab()  # the strings llguidance matches as special tokens
            self.specials = sorted((t for t, i in added.items() if self.tok.is_special_token(i)
                                    and t.startswith("<") and t.endswith(">")), key=len, reverse=True)
        self.lib = lib if name != "llguidance" else None

    def compile(self, tag: Dict[str, Any]) -> Tuple[Any, float]:
        if self.name == "llguidance":
            lark = tag_to_lark(tag, self.specials)  # raises NoEquivalent outside the timed part
            start = Engine.compile_clock()
            matcher = self.llg.LLMatcher(self.tok, self.llg.LLMatcher.grammar_from_lark(lark), log_level=0)
            seconds = Engine.compile_clock() - start
            if matcher.is_error():
                raise RuntimeError(matcher.get_error())
            return matcher, seconds
        text = json.dumps(tag)
        start = Engine.compile_clock()
        grammar = self.compiler.compile_structural_tag(text)
        return grammar, Engine.compile_clock() - start

    def encode(self, text: str) -> Tuple[List[int], List[int]]:
        """Token ids and each token's start offset in `text`."""
        backend = self.hf.backend_tokenizer
        if self.name != "xgrammar":
            enc = backend.encode(text, add_special_tokens=False)
            return enc.ids, [a for a, _ in enc.offsets]
        ids, starts, base = [], [], 0
        for piece in _split_specials(text, self.hf):
            enc = backend.encode(piece, add_special_tokens=False)
            ids += enc.ids
            starts += [base + a for a, _ in enc.offsets]
            base += len(piece)
        return ids, starts

    def walk(self, grammar: Any, ids: List[int]) -> Tuple[List[float], bool]:
        if self.name == "llguidance":
            matcher = grammar
            target = self.bitmask[0]
            ptr, size = target.data_ptr(), target.numel() * 4
            times = []
            for token in ids:
                start = time.perf_counter()
                matcher.unsafe_compute_mask_ptr(ptr, size)
                times.append(time.perf_counter() - start)
                if not matcher.consume_token(token):
                    return times, False
            return times, True
        matcher = self.lib.GrammarMatcher(grammar)
        times = []
        for token in ids:
            start = time.perf_counter()
            matcher.fill_next_token_bitmask(self.bitmask)
            times.append(time.perf_counter() - start)
            if not matcher.accept_token(token):
                return times, False
        return times, True


def _split_specials(text: str, hf: Any) -> List[str]:
    """`text` cut so that no piece contains a whole special-token string (each piece is then
    encoded on its own, so special tokens become ordinary tokens)."""
    specials = sorted((t for t in hf.all_special_tokens + list(hf.get_added_vocab()) if len(t) > 1), key=len, reverse=True)
    pieces, i, start = [], 0, 0
    while i < len(text):
        hit = next((s for s in specials if text.startswith(s, i)), None)
        if hit:
            if i > start:
                pieces.append(text[start:i])
            cut = len(hit) // 2
            pieces.extend([hit[:cut], hit[cut:]])
            i += len(hit)
            start = i
        else:
            i += 1
    if start < len(text):
        pieces.append(text[start:])
    return pieces


# ---- the run -------------------------------------------------------------------------------

def run_format(fmt: str, engine_names: List[str], tool_sets: List[Any]) -> Dict[str, Dict[str, Any]]:
    import transformers
    import xgrammar

    model, tokenizer, reasoning, trigger = FORMATS[fmt]
    hf = transformers.PreTrainedTokenizerFast.from_pretrained(str(DATA / "tokenizers" / "hf" / tokenizer),
                                                              local_files_only=True)
    engines = [Engine(n, hf) for n in engine_names]
    tags = [json.loads(xgrammar.get_model_structural_tag(model, tools, "auto", reasoning=reasoning).model_dump_json())
            for tools, _, _ in tool_sets]
    raw: Dict[str, Dict[str, Any]] = {e.name: {"compile": [], "first": [], "whole": [], "call": [], "trigger": [],
                                               "trigger_at": [], "refused": 0, "na": None} for e in engines}
    for e in engines:  # warm-up: derived vocabularies, lazy tables
        try:
            e.compile(tags[0])
        except NoEquivalent as why:
            raw[e.name]["na"] = str(why)
    for index, (tag, (tools, name, args)) in enumerate(zip(tags, tool_sets)):
        text, call_start = reply(fmt, name, args)
        trigger_end = call_start + len(trigger)
        order = engines[index % len(engines):] + engines[:index % len(engines)]
        for e in order:
            r = raw[e.name]
            if r["na"]:
                continue
            grammar, seconds = e.compile(tag)
            ids, starts = e.encode(text)
            times, ok = e.walk(grammar, ids)
            r["compile"].append(seconds)
            if not ok:
                r["refused"] += 1
                continue
            r["first"].append(times[0])
            r["whole"] += times[1:]
            r["call"] += [t for t, s in zip(times[1:], starts[1:]) if s >= call_start]
            # The first step whose consumed text covers the trigger: token i starts at or past it.
            step = next(i for i, s in enumerate(starts) if s >= trigger_end)
            r["trigger"].append(times[step])
            r["trigger_at"].append((index, starts[step]))
    offsets = {e.name: dict(raw[e.name]["trigger_at"]) for e in engines}
    for index in range(len(tool_sets)):
        at = {name: o[index] for name, o in offsets.items() if index in o}
        if len(set(at.values())) > 1:
            raise RuntimeError(f"{fmt} tool set {index}: the after-trigger fills are at different offsets {at}")
    return raw


def summarise(raw: Dict[str, Any]) -> Optional[Dict[str, float]]:
    if raw["na"] or not raw["whole"]:
        return None
    return {"compile_p50": statistics.median(raw["compile"]), "first_p50": statistics.median(raw["first"]),
            "whole_p50": statistics.median(raw["whole"]), "whole_p99": quantile(raw["whole"], 0.99),
            "call_p50": statistics.median(raw["call"]), "call_p99": quantile(raw["call"], 0.99),
            "trigger_p50": statistics.median(raw["trigger"]), "steps": len(raw["whole"]),
            "call_steps": len(raw["call"])}


def plot(all_raw: Dict[str, Dict[str, Any]], out_dir: Path, name: str) -> List[str]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    files = []
    for key, title, scale in (("whole", "fill, whole output (us)", 1e6), ("call", "fill, call part (us)", 1e6),
                              ("compile", "compile (ms)", 1e3)):
        fig, axes = plt.subplots(1, len(all_raw), figsize=(5 * len(all_raw), 3.6), squeeze=False)
        for ax, (fmt, raw) in zip(axes[0], all_raw.items()):
            for engine, r in raw.items():
                values = sorted(v * scale for v in r[key])
                if values:
                    ax.step(values, [(i + 1) / len(values) for i in range(len(values))], where="post", label=engine)
            ax.set_xscale("log")
            ax.set_title(f"{fmt}: {title}")
            ax.set_ylabel("fraction")
            ax.grid(alpha=0.3)
            ax.legend()
        fig.tight_layout()
        file = f"{name}-{key}-cdf.png"
        fig.savefig(out_dir / file, dpi=90)
        plt.close(fig)
        files.append(file)
    return files


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--engines", default="xg2,xgrammar,llguidance")
    parser.add_argument("--formats", default=",".join(FORMATS))
    parser.add_argument("--tool-sets", type=int, default=40, help="BFCL tool sets (half 'multiple', half 'simple')")
    parser.add_argument("--xg2-precompute", type=int, default=32, help="xg2 precompute_nodes")
    parser.add_argument("--compile-clock", choices=("wall", "cpu"), default="wall",
                        help="compile times by the wall clock or by the process's CPU time (all threads)")
    parser.add_argument("--name", help="write bench/results/NAME.md and its CDF plots")
    parser.add_argument("--raw", type=Path, help="also write the raw timings (JSON) here")
    args = parser.parse_args()
    Engine.precompute_nodes = args.xg2_precompute
    Engine.compile_clock = time.process_time if args.compile_clock == "cpu" else time.perf_counter
    engine_names = [e for e in args.engines.split(",") if e]
    formats = [f for f in args.formats.split(",") if f]
    tool_sets = load_tool_sets(args.tool_sets)
    load_start = os.getloadavg()
    all_raw = {fmt: run_format(fmt, engine_names, tool_sets) for fmt in formats}
    load_end = os.getloadavg()
    if args.raw:
        args.raw.write_text(json.dumps(all_raw))

    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True).stdout.strip()
    lines = ["# Tool calling: BFCL v3 tool sets as xgrammar's structural tags (bench/tags_bench.py)", "",
             f"Command: `PYTHONPATH=. python bench/tags_bench.py {' '.join(sys.argv[1:])}`; engine at commit {commit} "
             f"(plus the working tree); {len(tool_sets)} tool sets (half BFCL `multiple`, half `simple`), tool_choice auto; "
             f"xg2 precompute_nodes={args.xg2_precompute}; compile clock {args.compile_clock}. Load average at start "
             f"{load_start[0]:.1f} {load_start[1]:.1f}, at end {load_end[0]:.1f} {load_end[1]:.1f} "
             f"({os.cpu_count()} cores, shared).", "",
             "The method is in the script's docstring. *whole*: every fill of the reply but the first; "
             "*call*: fills for tokens inside the call; *after trigger*: the first fill once the trigger text "
             "is consumed, at the same offset of the reply in every engine (checked); *first*: the matcher's "
             "first mask. Times in us, compile in ms.", ""]
    lines += ["| format | engine | compile p50 ms | first p50 | whole p50 | whole p99 | call p50 | call p99 | "
              "after trigger p50 | steps (call) | refused |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    sums: Dict[Tuple[str, str], Optional[Dict[str, float]]] = {}
    for fmt, raw in all_raw.items():
        for engine, r in raw.items():
            s = sums[(fmt, engine)] = summarise(r)
            if s is None:
                lines.append(f"| {fmt} | {engine} | n/a: {r['na'] or 'no accepted walk'} | | | | | | | | {r['refused']} |")
                continue
            lines.append(f"| {fmt} | {engine} | {s['compile_p50'] * 1e3:.2f} | {s['first_p50'] * 1e6:.0f} | "
                         f"{s['whole_p50'] * 1e6:.1f} | {s['whole_p99'] * 1e6:.1f} | {s['call_p50'] * 1e6:.1f} | "
                         f"{s['call_p99'] * 1e6:.1f} | {s['trigger_p50'] * 1e6:.1f} | {s['steps']} ({s['call_steps']}) | "
                         f"{r['refused']}/{len(tool_sets)} |")
    lines += ["", "Ratios xg2 / peer (below 1: xg2 faster; targets vs xgrammar: fills and after-trigger <= 0.5, "
              "compile <= 0.1):", "",
              "| format | peer | compile p50 | whole p50 | whole p99 | call p50 | call p99 | after trigger p50 |",
              "|---|---|---|---|---|---|---|---|"]
    for fmt in all_raw:
        ours = sums.get((fmt, "xg2"))
        for peer in engine_names:
            theirs = sums.get((fmt, peer))
            if peer == "xg2" or ours is None or theirs is None:
                continue
            cells = [f"{ours[k] / theirs[k]:.2f}x" for k in
                     ("compile_p50", "whole_p50", "whole_p99", "call_p50", "call_p99", "trigger_p50")]
            lines.append(f"| {fmt} | {peer} | " + " | ".join(cells) + " |")
    lines += ["", "Semantic differences: llguidance gets a Lark translation (`tag_to_lark`): its `%json` has its "
              "own whitespace and separator defaults, and its free text is a lexeme without the tag's `excludes` "
              "of ordinary text (`<think>`, `</think>` in Llama/Qwen free text), so its language is close to, not "
              "identical with, the tag's; formats it cannot express are n/a. xgrammar matches special-token "
              "text as text (see the docstring).", ""]
    text = "\n".join(lines) + "\n"
    print(text)
    if args.name:
        out_dir = REPO / "bench" / "results"
        files = plot(all_raw, out_dir, args.name)
        text += "\n" + "\n".join(f"![{f}]({f})" for f in files) + "\n"
        (out_dir / f"{args.name}.md").write_text(text)


if __name__ == "__main__":
    main()
