"""The JSON Schema frontend's work and memory grow linearly with an object's properties.

Required properties used to cost quadratic memory in the converter (the text of every suffix
of the member sequence was kept): MANY of them need several times the address space the
child below may add, so a regression fails the test (MemoryError) instead of exhausting the
machine. No test here reads a clock.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import xg2_plugin as xg
from xg2_plugin import _native
from xg2_test_support import child_env, hf_tokenizer_info, string_accepted

HERE = Path(__file__).resolve().parents[1]
TOKENIZER = "gpt2"
CHILD_TIMEOUT_S = 240
MANY = 12000
# Address space the child may add to what it holds once the engine and tokenizer are loaded.
HEADROOM_BYTES = 1 << 30


def object_schema(count: int, required_every: int = 1, additional: object = None) -> dict:
    """`count` integer properties p0.., every `required_every`-th one required (0: none)."""
    properties = {f"p{i}": {"type": "integer"} for i in range(count)}
    required = [] if required_every == 0 else [f"p{i}" for i in range(0, count, required_every)]
    schema: dict = {"type": "object", "properties": properties, "required": required}
    if additional is not None:
        schema["additionalProperties"] = additional
    return schema


def _compiler() -> xg.GrammarCompiler:
    return xg.GrammarCompiler(hf_tokenizer_info(TOKENIZER), cache_enabled=False, precompute_nodes=0)


def _child(count: int) -> None:
    """Child entry: caps the address space, then converts and compiles `count` required
    properties three ways, printing one line per outcome."""
    import resource

    compiler = _compiler()
    compiler.compile_json_schema(object_schema(3))  # loads what every compile needs first
    with open("/proc/self/status") as status:
        held_kib = next(int(line.split()[1]) for line in status if line.startswith("VmSize:"))
    cap = held_kib * 1024 + HEADROOM_BYTES
    resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    text = json.dumps(object_schema(count))
    ebnf, _ = _native._json_schema_to_ebnf(text)
    print("converted", len(ebnf), flush=True)
    grammar = compiler.compile_json_schema(text)
    print("compiled", len(grammar.ebnf), flush=True)
    # The generated-size limit stops the conversion before it has built the grammar.
    small = xg.GrammarCompiler(hf_tokenizer_info(TOKENIZER), cache_enabled=False, precompute_nodes=0,
                               limits=xg.CompileLimits(max_generated_grammar_bytes=len(ebnf) // 4))
    try:
        small.compile_json_schema(text)
        print("limit not applied", flush=True)
    except xg.ResourceLimitError as error:
        print("limited", error, flush=True)


# The child caps its address space, which a sanitizer runtime cannot start under (its shadow
# memory alone reserves terabytes); the main suite runs this test.
@pytest.mark.skipif(any(runtime in os.environ.get("LD_PRELOAD", "") for runtime in ("libasan", "libclang_rt.asan", "libtsan")),
                    reason="a sanitizer runtime cannot run under an address-space limit")
def test_many_required_properties_fit_in_bounded_memory() -> None:
    env = child_env()
    code = f"import test_json_schema_scaling as t; t._child({MANY})"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=CHILD_TIMEOUT_S, env=env, cwd=str(HERE))
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    lines = proc.stdout.splitlines()
    assert len(lines) == 3, proc.stdout
    assert lines[0].startswith("converted ") and lines[1].startswith("compiled "), proc.stdout
    assert lines[2].startswith("limited ") and "generated grammar exceeds" in lines[2], proc.stdout


@pytest.mark.parametrize("required_every, additional", [(1, None), (2, None), (1, True), (1, False), (0, None)])
def test_generated_grammar_grows_linearly(required_every: int, additional: object) -> None:
    """The output side: twice the properties give about twice the EBNF (never their square)."""
    sizes = [len(_native._json_schema_to_ebnf(json.dumps(object_schema(n, required_every, additional)))[0])
             for n in (1000, 2000)]
    assert sizes[1] <= 2.2 * sizes[0], sizes


def _instance(present: list[int]) -> str:
    return "{" + ",".join(f'"p{i}":{i}' for i in present) + "}"


@pytest.mark.parametrize("additional", [None, True, False])
def test_mixed_required_members_keep_their_language(additional: object) -> None:
    """Every other property required: members in schema order, each optional one may be left
    out, no required one may."""
    count = 40
    grammar = _compiler().compile_json_schema(object_schema(count, 2, additional), any_whitespace=False,
                                                   separators=(",", ":"))
    everything = list(range(count))
    required_only = list(range(0, count, 2))
    assert string_accepted(grammar, _instance(everything))
    assert string_accepted(grammar, _instance(required_only))
    assert string_accepted(grammar, _instance(required_only + [count - 1]))
    assert not string_accepted(grammar, _instance(required_only[1:]))
    assert not string_accepted(grammar, _instance(everything[:-2]))
    assert not string_accepted(grammar, _instance([1, 0] + everything[2:]))
    extra = _instance(everything)[:-1] + ',"q":1}'
    assert string_accepted(grammar, extra) == (additional is True)
