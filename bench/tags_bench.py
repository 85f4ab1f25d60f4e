"""Structural-tag benchmark: compile time and per-token mask fill over BFCL tool sets, xg2 against
xgrammar 0.2.8 on the same structural tags, plus how the dispatching-mode fill scales with the
number of tags.

    bench/.venv-tags/bin/python bench/tags_bench.py --tool-sets 40      # needs xgrammar==0.2.8
    python bench/tags_bench.py --engines xg2 --tags-scaling 1,10,100,300

Formats (xg2_plugin.presets): ``llama3_json`` on the llama3.1 tokenizer and ``harmony`` on the
gpt-oss tokenizer, tool_choice "auto" (Harmony with optional analysis). Each tag is the JSON of
the preset, given to both engines as is. Compile: a compiler with its cache off, one thread,
after one warm-up compile per format; the figure is wall time of ``compile_structural_tag``.
Fill: along the ground-truth call of each tool set (rendered as the chat template does), the
time of each ``fill_next_token_bitmask`` except the first (reported separately as first mask).

Semantic difference on Harmony: xg2 matches special-token text (``<|channel|>``, ``<|call|>``)
as the special token, xgrammar 0.2.8 as text; each engine is therefore fed the tokenization it
accepts (xg2: with special tokens; xgrammar: the same text split into ordinary tokens), so the
two token sequences differ in length. Medians are per engine over its own steps.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Tuple

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests"))

DATA = Path(os.environ.get("XG2_DATA_DIR", REPO.parent / "shared" / "data"))
TOKENIZERS = {"llama3_json": "llama3.1", "harmony": "gpt-oss"}


def quantile(values: List[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def load_tool_sets(count: int) -> List[Tuple[List[Dict[str, Any]], str, Dict[str, Any]]]:
    from preset_support import bfcl_cases  # BFCL -> JSON Schema, ground truth validated

    os.environ.setdefault("XG2_DATA_DIR", str(DATA))
    cases = bfcl_cases("multiple", count // 2) + bfcl_cases("simple", count - count // 2)
    return [(c.tools, c.calls[0][0], c.calls[0][1]) for c in cases]


def reply(family: str, name: str, args: Dict[str, Any]) -> str:
    if family == "llama3_json":
        return json.dumps({"name": name, "parameters": args})
    return ("<|channel|>analysis<|message|>The user wants " + name + ".<|end|><|start|>assistant"
            "<|channel|>commentary to=functions." + name + " <|constrain|>json<|message|>" + json.dumps(args) + "<|call|>")


class Engine:
    precompute_nodes = 32  # xg2's default partial JIT (--xg2-precompute)

    def __init__(self, name: str, tokenizer_name: str) -> None:
        import transformers

        self.name = name
        path = DATA / "tokenizers" / "hf" / tokenizer_name
        self.hf = transformers.PreTrainedTokenizerFast.from_pretrained(str(path), local_files_only=True)
        if name == "xg2":
            import xg2_plugin as lib

            self.info = lib.TokenizerInfo.from_huggingface(self.hf)
            self.compiler = lib.GrammarCompiler(self.info, max_threads=1, cache_enabled=False,
                                                precompute_nodes=Engine.precompute_nodes)
            self.bitmask = lib.allocate_token_bitmask(1, self.info.vocab_size)
        else:
            import xgrammar as lib

            self.info = lib.TokenizerInfo.from_huggingface(self.hf)
            self.compiler = lib.GrammarCompiler(self.info, max_threads=1, cache_enabled=False)
            self.bitmask = lib.allocate_token_bitmask(1, self.info.vocab_size)
        self.lib = lib

    def compile(self, tag: Dict[str, Any]) -> Tuple[Any, float]:
        text = json.dumps(tag)
        start = time.perf_counter()
        grammar = self.compiler.compile_structural_tag(text)
        return grammar, time.perf_counter() - start

    def encode(self, text: str) -> List[int]:
        # xgrammar matches special-token text as text: feed it ordinary tokens.
        backend = self.hf.backend_tokenizer
        if self.name == "xg2":
            return backend.encode(text, add_special_tokens=False).ids
        return [i for piece in _split_specials(text, self.hf) for i in backend.encode(piece, add_special_tokens=False).ids]

    def walk(self, grammar: Any, ids: List[int]) -> Tuple[List[float], bool]:
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


def bench_tool_sets(engines: List[str], count: int, out: Callable[[str], None]) -> None:
    from xg2_plugin.presets import get_model_structural_tag

    tool_sets = load_tool_sets(count)
    out(f"### BFCL tool sets as structural tags ({len(tool_sets)} tool sets, tool_choice auto)\n")
    out("| format | engine | compile p50 ms | compile p90 ms | first mask p50 us | fill p50 us | fill p90 us | fill steps | accepted |")
    out("|---|---|---|---|---|---|---|---|---|")
    summary: Dict[Tuple[str, str], Dict[str, float]] = {}
    for family in ("llama3_json", "harmony"):
        for engine_name in engines:
            engine = Engine(engine_name, TOKENIZERS[family])
            reasoning = "auto" if family == "harmony" else "disabled"
            tags = [get_model_structural_tag(family, tools, "auto", reasoning=reasoning).model_dump(mode="json")
                    for tools, _, _ in tool_sets]
            engine.compile(tags[0])  # warm-up (derived vocabularies, lazy tables)
            compiles, firsts, fills, accepted = [], [], [], 0
            for tag, (tools, name, args) in zip(tags, tool_sets):
                grammar, seconds = engine.compile(tag)
                compiles.append(seconds)
                times, ok = engine.walk(grammar, engine.encode(reply(family, name, args)))
                accepted += ok
                firsts.append(times[0])
                fills.extend(times[1:])
            row = {"compile": statistics.median(compiles), "fill": statistics.median(fills)}
            summary[(family, engine_name)] = row
            out(f"| {family} | {engine_name} | {row['compile'] * 1e3:.2f} | {quantile(compiles, 0.9) * 1e3:.2f} | "
                f"{statistics.median(firsts) * 1e6:.0f} | {row['fill'] * 1e6:.1f} | {quantile(fills, 0.9) * 1e6:.1f} | "
                f"{len(fills)} | {accepted}/{len(tool_sets)} |")
    if len(engines) == 2:
        out("\nRatios xg2 / xgrammar (below 1: xg2 faster):\n")
        for family in ("llama3_json", "harmony"):
            ours, theirs = summary[(family, "xg2")], summary[(family, "xgrammar")]
            out(f"- {family}: compile p50 {ours['compile'] / theirs['compile']:.2f}x, fill p50 {ours['fill'] / theirs['fill']:.2f}x")
    out("")


def bench_tags_scaling(engines: List[str], counts: List[int], out: Callable[[str], None]) -> None:
    """Dispatching mode with N tags (llama3_function ``<function=tool_i>`` tags, one trigger):
    fill time along prose that never triggers, and compile time, against N."""
    def schema(i: int) -> Dict[str, Any]:  # distinct per tag, as different tools are
        return {"type": "object", "properties": {f"query_{i}": {"type": "string"}, f"limit_{i}": {"type": "integer"}},
                "required": [f"query_{i}"]}

    prose = ("The weather today is mild, with a light breeze from the west. Later this afternoon, "
             "clouds will gather over the hills; some rain is likely tonight (about 60%). ") * 2
    out("### Dispatching-mode fill against the number of tags (llama3.1, free text)\n")
    out("| engine | tags | compile ms | fill p50 us | fill p90 us | steps |")
    out("|---|---|---|---|---|---|")
    for engine_name in engines:
        engine = Engine(engine_name, "llama3.1")
        for n in counts:
            tag = {"type": "structural_tag", "format": {"type": "triggered_tags", "triggers": ["<function="], "tags": [
                {"type": "tag", "begin": f"<function=tool_{i}>", "content": {"type": "json_schema", "json_schema": schema(i)},
                 "end": "</function>"} for i in range(n)]}}
            grammar, seconds = engine.compile(tag)
            times, ok = engine.walk(grammar, engine.encode(prose))
            assert ok, (engine_name, n)
            fills = times[1:]
            out(f"| {engine_name} | {n} | {seconds * 1e3:.1f} | {statistics.median(fills) * 1e6:.1f} | "
                f"{quantile(fills, 0.9) * 1e6:.1f} | {len(fills)} |")
    out("")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--engines", default="xg2,xgrammar", help="comma-separated: xg2, xgrammar")
    parser.add_argument("--tool-sets", type=int, default=40, help="BFCL tool sets (half 'multiple', half 'simple')")
    parser.add_argument("--tags-scaling", default="1,10,100,300", help="tag counts for the dispatching-mode table ('' to skip)")
    parser.add_argument("--xg2-precompute", type=int, default=32,
                        help="xg2 precompute_nodes (parser states classified on a background thread after compile)")
    parser.add_argument("--output", type=Path, help="also write the Markdown tables here")
    args = parser.parse_args()
    Engine.precompute_nodes = args.xg2_precompute
    engines = [e for e in args.engines.split(",") if e]
    lines: List[str] = []

    def out(line: str) -> None:
        print(line, flush=True)
        lines.append(line)

    load = os.getloadavg()
    out(f"Load average at start: {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}; engines: {', '.join(engines)}; "
        f"xg2 precompute_nodes={args.xg2_precompute}\n")
    if args.tool_sets:
        bench_tool_sets(engines, args.tool_sets, out)
    if args.tags_scaling:
        bench_tags_scaling(engines, [int(n) for n in args.tags_scaling.split(",")], out)
    load = os.getloadavg()
    out(f"Load average at end: {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}")
    if args.output:
        args.output.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
