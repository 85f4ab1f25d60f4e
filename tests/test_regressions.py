"""Regression tests for defects found in review or by other suites."""

from __future__ import annotations

import json

import numpy as np

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
