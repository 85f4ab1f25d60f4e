"""Seeded random walks over every model preset: tokens drawn from the mask (uniformly, then with
a bias towards closing strings so that each walk ends within its bound) always give output that
the family's parser reads as tool calls of the offered tools, with arguments valid under their
JSON schemas (jsonschema). Tools come from BFCL's "multiple" category (several tools each)."""

from __future__ import annotations

import pytest

from xg2_plugin.presets import get_model_structural_tag

from preset_support import bfcl_cases, parse_calls, random_walk, tokenizer

JSON_CLOSERS = ['"', ":", "]", "}", ","]
# family: (tokenizer, reasoning mode, closers tried in order once the uniform part is over)
WALKS = {
    "llama3_json": ("llama3.1", "disabled", JSON_CLOSERS),
    "llama3_function": ("llama3.1", "disabled", JSON_CLOSERS + ["</function>"]),
    "qwen": ("qwen3", "auto", ["</think>"] + JSON_CLOSERS + ["\n</tool_call>"]),
    "qwen3_coder": ("qwen3", "disabled", ["\n</parameter>\n"] + JSON_CLOSERS + ["</function>\n</tool_call>"]),
    "deepseek_v3": ("qwen2.5", "auto", ["</think>"] + JSON_CLOSERS + ["\n```<｜tool▁call▁end｜>", "<｜tool▁calls▁end｜>"]),
    "deepseek_v3_1": ("llama3.1", "auto", ["</think>"] + JSON_CLOSERS + ["<｜tool▁call▁end｜>", "<｜tool▁calls▁end｜>"]),
    "kimi_k2": ("gpt-oss", "auto", ["</think>", "<|tool_call_argument_begin|>"] + JSON_CLOSERS + ["<|tool_call_end|>", "<|tool_calls_section_end|>"]),
    "glm4": ("qwen3", "auto", ["</think>", "</arg_value>"] + JSON_CLOSERS + ["</tool_call>"]),
    "glm4_7": ("qwen3", "auto", ["</think>", "</arg_value>"] + JSON_CLOSERS + ["</tool_call>"]),
    "harmony": ("gpt-oss", "auto", ["<|end|><|start|>assistant"] + JSON_CLOSERS + ["<|call|>"]),
    "mistral": ("tekken", "disabled", JSON_CLOSERS),
    # xgrammar's families (those whose arguments are JSON or glm_xml).
    "llama": ("llama3.1", "disabled", JSON_CLOSERS),
    "qwen_3": ("qwen3", "auto", ["</think>"] + JSON_CLOSERS + ["\n</tool_call>"]),
    "exaone": ("qwen3", "auto", ["</think>"] + JSON_CLOSERS + ["</tool_call>"]),
    "kimi": ("gpt-oss", "auto", ["</think>", "<|tool_call_argument_begin|>"] + JSON_CLOSERS + ["<|tool_call_end|>", "<|tool_calls_section_end|>"]),
    "deepseek_r1": ("qwen2.5", "auto", ["</think>"] + JSON_CLOSERS + ["\n```<｜tool▁call▁end｜>", "<｜tool▁calls▁end｜>"]),
    "glm_4_7": ("qwen3", "auto", ["</think>", "</arg_value>"] + JSON_CLOSERS + ["</tool_call>"]),
}
# Families whose "required" / forced tags still allow an output without a call (xgrammar
# 0.2.8's harmony: its messages are any number of analysis messages and calls).
CALL_OPTIONAL = {"harmony"}


@pytest.mark.parametrize("family", sorted(WALKS))
@pytest.mark.parametrize("choice", ["required", "named"])
def test_random_walks_yield_valid_tool_calls(family, choice):
    import jsonschema

    tok_name, reasoning, closers = WALKS[family]
    tok = tokenizer(tok_name)
    for seed, case in enumerate(bfcl_cases("multiple", 2)):
        schemas = {t["function"]["name"]: t["function"]["parameters"] for t in case.tools}
        named = case.calls[0][0]
        tool_choice = {"type": "function", "function": {"name": named}} if choice == "named" else "required"
        tag = get_model_structural_tag(family, case.tools, tool_choice, reasoning=reasoning)
        grammar = tok.compiler.compile_structural_tag(tag)
        text, steps = random_walk(tok, grammar, seed=seed, closers=closers)
        assert text is not None, f"walk {seed} did not end in {steps} steps"
        calls = parse_calls(family, text, schemas)
        assert calls or family in CALL_OPTIONAL, text
        if choice == "named" and calls:
            assert [n for n, _ in calls] == [named], text
        for name, args in calls:
            assert name in schemas, text
            jsonschema.validate(args, schemas[name])
