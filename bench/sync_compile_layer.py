"""Instructions the Python layer adds to one synchronous compile, per grammar kind, under callgrind.

    PYTHONPATH=. XG2_DATA_DIR=... valgrind --tool=callgrind --collect-atstart=no \\
        --toggle-collect=_operator_call --toggle-collect=functools_reduce --callgrind-out-file=OUT \\
        python bench/sync_compile_layer.py --kind structural_tag --compiles miss
    callgrind_annotate --inclusive=yes OUT | grep -E ':(_operator_call|functools_reduce) '

Runs ``--rounds`` compiles through the public ``GrammarCompiler.compile_<kind>`` inside one
``operator.call``, and as many through the native module alone (``compiler._native``; for a
structural tag its lowering and its compile) inside one ``functools.reduce`` (two items: one
call). Callgrind collects only inside those two C functions, so
``(_operator_call - functools_reduce) / rounds`` is what the public layer adds to one compile,
in instructions (deterministic, unlike a timing on a loaded machine): Python frames, the cache
lookup and in-flight table, the wrapping and the charge.

``--compiles miss``: every request is new to the process (a name numbered per round and marked
per loop, so neither loop finds the other's rule DFAs in the process-wide table); ``hit``: the
same request every round, answered by the grammar cache (the native loop is then empty). The
cyclic garbage collector is off inside the loops (a collection walks the whole heap, and would
land in one loop and not the other). Without callgrind the script prints thread-CPU
microseconds per compile for both loops. The structural tag is a small one as vLLM sends it
for a request with one strict tool (JSON text, ``triggered_tags``).
"""

from __future__ import annotations

import argparse
import functools
import gc
import json
import operator
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

import xg2_plugin as xg  # noqa: E402
from xg2_test_support import hf_tokenizer_info  # noqa: E402

KINDS = ("structural_tag", "json_schema", "grammar", "regex", "choice", "lark")


def _tag(name: str) -> str:
    parameters = {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
                  "required": ["city", "days"], "additionalProperties": False}
    return json.dumps({"type": "structural_tag", "format": {
        "type": "triggered_tags", "triggers": ["<tool_call>"],
        "tags": [{"begin": f'<tool_call>\n{{"name": "{name}", "arguments": ',
                  "content": {"type": "json_schema", "json_schema": parameters}, "end": "}\n</tool_call>"}],
        "at_least_one": False, "stop_after_first": False}})


def _requests(kind: str, rounds: int, miss: bool, loop: str) -> list:
    """``loop`` marks the requests of one loop: the other loop's requests, compiled before, would
    leave their rule DFAs in the process-wide table (shared_rule_dfa_stats) for this one."""

    def unique(i: int) -> str:
        return f"{loop}{i}" if miss else ""
    if kind == "structural_tag":
        return [_tag("get_weather" + unique(i)) for i in range(rounds)]
    if kind == "json_schema":
        return [f'{{"type": "object", "properties": {{"a{unique(i)}": {{"type": "integer"}}}}}}' for i in range(rounds)]
    if kind == "grammar":
        return [f'root ::= "yes{unique(i)}" | "no"' for i in range(rounds)]
    if kind == "regex":
        return [f"[a-z]+{unique(i)}" for i in range(rounds)]
    if kind == "choice":
        return [["yes" + unique(i), "no"] for i in range(rounds)]
    return [f'start: "yes{unique(i)}" | "no"' for i in range(rounds)]


def _public(compiler: xg.GrammarCompiler, kind: str):
    call = getattr(compiler, "compile_" + kind)
    return lambda request: call(request)


def _native(compiler: xg.GrammarCompiler, kind: str):
    native = compiler._native
    if kind == "structural_tag":
        return lambda request: native.compile_structural_tag(native.lower_structural_tag(request, True))
    if kind == "json_schema":
        return lambda request: native.compile_json_schema(request, True, None, None, True, None, False, False, False)
    call = getattr(native, {"grammar": "compile_ebnf"}.get(kind, "compile_" + kind))
    return lambda request: call(request)


def _inside(collector: str, loop) -> None:
    """Runs ``loop`` inside one call of ``operator.call`` or ``functools.reduce``."""
    if collector == "operator.call":
        operator.call(loop)
    else:
        functools.reduce(lambda _a, _b: loop(), [0, 1])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--kind", choices=KINDS, default="structural_tag")
    parser.add_argument("--compiles", choices=("miss", "hit"), default="miss")
    parser.add_argument("--tokenizer", default="gpt2")
    parser.add_argument("--rounds", type=int, default=100)
    args = parser.parse_args()
    miss = args.compiles == "miss"
    compiler = xg.GrammarCompiler(hf_tokenizer_info(args.tokenizer), precompute_nodes=0)
    public, native = _public(compiler, args.kind), _native(compiler, args.kind)
    warm = _requests(args.kind, 1, True, "W")[0]
    public(warm)  # imports, process-wide tables, the cache-key prefix of the kind
    native(warm)
    requests = _requests(args.kind, args.rounds, miss, "P")
    if not miss:
        public(requests[0])  # the grammar every round then finds in the cache
    native_requests = _requests(args.kind, args.rounds, miss, "N")
    times = {}
    for name, function, collector, batch in (("public", public, "operator.call", requests),
                                             ("native", native, "functools.reduce", native_requests)):
        if name == "native" and not miss:
            times[name] = 0.0
            continue
        gc.collect()
        gc.disable()  # a collection would walk the whole heap inside one loop and not the other
        began = time.thread_time_ns()
        _inside(collector, lambda: [function(r) for r in batch])
        times[name] = (time.thread_time_ns() - began) / 1000 / args.rounds
        gc.enable()
    print(f"{args.kind} {args.compiles}: public {times['public']:.1f} us, native {times['native']:.1f} us per compile "
          f"(thread CPU; under callgrind read the two collected functions' counts instead)")


if __name__ == "__main__":
    main()
