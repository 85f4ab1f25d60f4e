"""Regression tests for defects found in review or by other suites."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import xg2_plugin as xg
from xg2_test_support import hf_tokenizer, hf_tokenizer_info


def test_triggered_structural_tag_survives_rule_inlining() -> None:
    # The inlining pass renumbered rules but not the rules a TagDispatch hands over to, so
    # filling a mask read past the rule tables (heap corruption). Found by the SGLang suite.
    info = hf_tokenizer_info("llama3.1")
    tokenizer = hf_tokenizer("llama3.1")
    compiler = xg.GrammarCompiler(info)
    schema = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
    legacy = {
        "structures": [{"begin": "<f>", "schema": schema, "end": "</f>"}, {"begin": "<g>", "schema": {}, "end": "</g>"}],
        "triggers": ["<f>", "<g>"],
    }
    grammar = compiler.compile_structural_tag(json.dumps(legacy))
    matcher = xg.GrammarMatcher(grammar)
    cached = np.zeros(xg.get_bitmask_shape(1, info.vocab_size), dtype=np.int32)
    reference = np.zeros_like(cached)
    for token in tokenizer.encode('Sure. <g>{}</g> and <f>{"name": "ada"}</f>', add_special_tokens=False).ids:
        matcher.fill_next_token_bitmask(cached)
        matcher._fill_next_token_bitmask_reference(reference)
        assert np.array_equal(cached, reference)
        assert matcher.accept_token(token), info.decoded_vocab[token]


@pytest.mark.parametrize("ebnf", [
    'root ::= "x"\na ::= a "y" | "z"',
    'root ::= "x"\nm ::= m',
])
def test_unreachable_self_referencing_rule_compiles(ebnf: str) -> None:
    # The FSM builder computed nullability for every node of the AST, including the bodies of
    # rules dropped as unreachable, whose rule references index past the rule table (a heap
    # overflow, found by the native EBNF fuzz target; the ASan stage runs this test).
    grammar = xg.GrammarCompiler(hf_tokenizer_info("gpt2"), cache_enabled=False).compile_grammar(ebnf)
    assert xg._native.ebnf_accepts(ebnf, b"x") and not xg._native.ebnf_accepts(ebnf, b"xy")
    matcher = xg.GrammarMatcher(grammar)
    assert matcher.accept_string("x") and matcher.is_completed()


@pytest.mark.parametrize("dialect, accepts_fraction", [
    ("http://json-schema.org/draft-04/schema#", False),
    ("https://json-schema.org/draft/2020-12/schema", True),
])
def test_integer_enum_fraction_spelling_follows_the_dialect(dialect: str, accepts_fraction: bool) -> None:
    # JSONSchemaBench Github_easy---o21860 (draft-04): `type: integer` with an integer enum let a
    # random walk write 7.0, which draft 4 does not count as an integer (draft 6 and later do).
    import jsonschema

    info = hf_tokenizer_info("llama3.1")
    schema = {"$schema": dialect, "type": "object", "required": ["days"],
              "properties": {"days": {"type": "integer", "enum": [1, 7, 30]}}, "additionalProperties": False}
    grammar = xg.GrammarCompiler(info).compile_json_schema(schema)
    validator = jsonschema.validators.validator_for(schema)(schema)
    assert validator.is_valid({"days": 7.0}) == accepts_fraction  # the dialects really differ
    for text, expected in (('{"days": 7}', True), ('{"days": 7.0}', accepts_fraction)):
        matcher = xg.GrammarMatcher(grammar)
        assert (matcher.accept_string(text) and matcher.is_completed()) == expected, text


def test_lenient_conversion_of_many_alternative_groups_stays_bounded() -> None:
    # JsonSchemaStore---cloudify and ---jfrog-pipelines: an allOf of many if/then parts (each a
    # group of alternatives) made the lenient conversion distribute every combination and run
    # out of memory. Strict mode refuses it; lenient mode drops the groups past the bound, warns.
    parts = [{"if": {"properties": {f"k{i}": {"const": "a"}}, "required": [f"k{i}"]},
              "then": {"required": [f"v{i}"]}} for i in range(12)]
    schema = {"type": "object", "allOf": parts}
    with pytest.raises(xg.UnsupportedSchemaError, match="combined branches"):
        xg._native._json_schema_to_ebnf(json.dumps(schema))
    ebnf, warnings = xg._native._json_schema_to_ebnf(json.dumps(schema), lenient=True)
    assert any("combined branches" in warning for warning in warnings)
    assert ebnf.startswith("root ::=")


# ---- fuzzing inputs: seeds and every saved finding, replayed through their harness ----

FUZZ_DIR = Path(__file__).resolve().parents[2] / "fuzz"
FUZZ_HARNESSES = ["fuzz_ebnf", "fuzz_regex", "fuzz_json_schema", "fuzz_structural_tag", "fuzz_matcher"]


@pytest.mark.parametrize("harness", FUZZ_HARNESSES)
def test_fuzz_inputs_replay(harness: str) -> None:
    """Each input under fuzz/seeds/<harness>/ and fuzz/regressions/<harness>/ runs through
    the harness in a child process (a crash fails this test, not the whole run)."""
    pytest.importorskip("atheris")
    inputs = sorted(p for sub in ("seeds", "regressions") for p in (FUZZ_DIR / sub / harness).glob("*") if p.is_file())
    assert inputs, f"no inputs for {harness}"
    code = (
        "import sys, pathlib; sys.path.insert(0, sys.argv[1]); import importlib; "
        "h = importlib.import_module(sys.argv[2]); "
        "[h.test_one_input(pathlib.Path(p).read_bytes()) for p in sys.argv[3:]]"
    )
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(os.path.abspath(p) for p in sys.path if p))
    proc = subprocess.run([sys.executable, "-c", code, str(FUZZ_DIR), harness, *map(str, inputs)],
                          capture_output=True, text=True, timeout=600, env=env)
    assert proc.returncode == 0, f"{harness} failed on its saved inputs:\n{proc.stderr[-3000:]}"
