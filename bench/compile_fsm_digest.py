"""A fixed compile workload for instruction counts, and a digest of what it compiles.

    PYTHONPATH=. python bench/compile_fsm_digest.py [--per-category 10] [--out digest.txt] [--mask]

Compiles the benchmark's own JSONSchemaBench sample (``harness/corpus.py``: the schemas
``run.py --per-category N`` measures) with Llama-3.1, the compiler cache off and one compiler for
the whole sample as in a server, once each, in order. With ``--out`` it writes one line per
schema: the SHA-256 of the compiled grammar's FSM dump (every rule DFA, node by node, with
nullability and counted loops) and, with ``--mask``, of the first mask. Two builds whose digests are equal compiled byte-identical FSMs: the check
for a change to the back half (AST to compiled grammar) that must not change its output.

Without ``--out`` it only compiles (and, with ``--mask``, fills each first mask), for callgrind;
to count the native compile call alone:

    valgrind --tool=callgrind --toggle-collect='xg2::GrammarCompiler::CompileJsonSchema*' \\
        python bench/compile_fsm_digest.py

(``CompileGrammarAst`` inside it is the back half). ``--lazy-rule-dfas`` compiles with the
internal switch that leaves rule DFAs unbuilt until a matcher first needs them; with ``--mask``
the first mask is filled before the dump (which builds every rule), so it reads the partial
snapshot and builds what it reaches. To count the FSM build alone, compare
``--toggle-collect='xg2::BuildGrammarFsm(*'`` without it against
``--toggle-collect='xg2::BuildGrammarFsmLazily*'`` with it. ``--tags N`` compiles the structural tags
of ``bench/tags_bench.py`` instead (N BFCL tool sets in the tokenizer's format: llama3.1 ->
Llama JSON calls, qwen3 -> Qwen3 XML-wrapped calls with reasoning, gpt-oss -> Harmony; built
with xgrammar, before anything is counted); count them with
``--toggle-collect='xg2::GrammarCompiler::LowerStructuralTag*'
--toggle-collect='xg2::GrammarCompiler::CompileStructuralTag*'``. Use a RelWithDebInfo build
(``XG2_BUILD_DIR=build/prof XG2_BUILD_TYPE=RelWithDebInfo bash scripts/dev_build.sh``): the
release module is stripped.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import warnings
from pathlib import Path
from typing import List, Tuple

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "bench"))

import xg2_plugin as xg  # noqa: E402
from harness.corpus import sample_paths  # noqa: E402
from xg2_test_support import hf_tokenizer_info  # noqa: E402


def tag_workload(tokenizer: str, count: int) -> Tuple[List[str], List[str]]:
    """The structural tags of ``bench/tags_bench.py`` for `count` BFCL tool sets, in the format
    of `tokenizer`, as JSON texts (built with xgrammar, which only the bench needs)."""
    import xgrammar
    from preset_support import bfcl_cases

    model, reasoning = {"llama3.1": ("llama", False), "qwen3": ("qwen_3", True), "gpt-oss": ("harmony", True)}[tokenizer]
    cases = bfcl_cases("multiple", count // 2) + bfcl_cases("simple", count - count // 2)
    texts = [xgrammar.get_model_structural_tag(model, case.tools, "auto", reasoning=reasoning).model_dump_json()
             for case in cases]
    return [case.id for case in cases], texts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--per-category", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--tokenizer", default="llama3.1")
    parser.add_argument("--out", type=Path, default=None, help="write the per-schema digests here")
    parser.add_argument("--mask", action="store_true", help="also digest each grammar's first mask")
    parser.add_argument("--tags", type=int, default=0, metavar="N",
                        help="compile N tool sets' structural tags instead of the schema sample")
    parser.add_argument("--lazy-rule-dfas", action="store_true",
                        help="compile with the internal switch that leaves rule DFAs unbuilt "
                             "(native/grammar/lazy_rule_builder.h); see above")
    args = parser.parse_args()

    info = hf_tokenizer_info(args.tokenizer)
    compiler = xg.GrammarCompiler(info, cache_enabled=False, max_threads=1)
    if args.lazy_rule_dfas:
        # The switch is internal: the native compiler is replaced by one with it on.
        compiler._native = xg._native.GrammarCompiler(
            info._handle, compiler._mask_pool, compiler._token_literal_vocabs, True, True, compiler._precompute_nodes,
            compiler._repetition_compression_threshold, compiler._limits._to_native(), lazy_rule_dfas=True)
    bitmask = xg.allocate_token_bitmask(1, info.vocab_size)
    if args.tags:
        names, texts = tag_workload(args.tokenizer, args.tags)
        compile_one = compiler.compile_structural_tag
    else:
        paths = sample_paths(args.per_category, seed=args.seed)
        names = [path.name for path in paths]
        texts = [json.dumps(json.loads(path.read_text())["schema"]) for path in paths]
        compile_one = compiler.compile_json_schema
    lines = []
    for name, text in zip(names, texts):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                compiled = compile_one(text)
        except xg.XG2Error as error:
            lines.append(f"{name} refused {type(error).__name__}")
            continue
        if args.out is None:
            if args.mask:  # the first fill alone, as a server's first step (counted by callgrind)
                xg.GrammarMatcher(compiled).fill_next_token_bitmask(bitmask)
            continue
        mask = ""
        if args.mask:  # before the dump: under --lazy-rule-dfas the dump builds every rule
            matcher = xg.GrammarMatcher(compiled)
            matcher.fill_next_token_bitmask(bitmask)
            mask = f" mask {hashlib.sha256(bitmask.numpy().tobytes()).hexdigest()}"
        lines.append(f"{name} fsm {hashlib.sha256(compiled._handle.fsm_dump().encode()).hexdigest()}{mask}")
    if args.out is not None:
        args.out.write_text("\n".join(lines) + "\n")
        print(f"{len(lines)} digests written to {args.out}")


if __name__ == "__main__":
    main()
