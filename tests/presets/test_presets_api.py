"""The preset entry point's arguments, as xgrammar's get_model_structural_tag takes them: tool
shapes, every tool_choice form, reasoning modes, options, the registry, and typed errors. The
formats are checked by compiling with the real engine and matching hand-written outputs."""

from __future__ import annotations

import json

import pytest

import xg2_plugin as xg
from xg2_plugin.presets import (MODEL_FAMILIES, get_model_structural_tag, model_families, normalize_tools,
                                register_model_structural_tag)
from xg2_plugin.structural_tag import StructuralTag

from preset_support import accepts, tokenizer

WEATHER = {"type": "function", "function": {"name": "get_weather", "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}
TIME = {"type": "function", "function": {"name": "get_time", "parameters": {
    "type": "object", "properties": {"zone": {"type": "string"}}, "required": ["zone"]}}}
SEARCH = {"type": "web_search_preview", "name": "browser.search", "parameters": {
    "type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}}

XGRAMMAR_FAMILIES = ["llama", "kimi", "kimi_k3", "deepseek_r1", "deepseek_v3_1", "qwen_3_coder", "qwen_3_5", "mimo",
                     "qwen_3", "harmony", "deepseek_v3_2", "minimax", "minimax_m3", "glm_4_7", "deepseek_v4",
                     "deepseek_v4_1", "cohere", "exaone"]
OURS = ["llama3_json", "llama3_function", "qwen", "qwen3_coder", "deepseek_v3", "kimi_k2", "glm4", "glm4_7", "mistral"]


def qwen3(tag) -> xg.CompiledGrammar:
    return tokenizer("qwen3").compiler.compile_structural_tag(tag)


def qwen_call(name, args):
    return '<tool_call>\n{"name": "' + name + '", "arguments": ' + json.dumps(args) + "}\n</tool_call>"


def test_every_family_is_registered_and_builds():
    assert set(XGRAMMAR_FAMILIES + OURS) == set(MODEL_FAMILIES) <= set(model_families())
    for family in MODEL_FAMILIES:
        assert isinstance(get_model_structural_tag(family, [WEATHER], "required", "disabled"), StructuralTag)


def test_registered_family_is_served():
    @register_model_structural_tag("test_bracket_calls")
    def bracket(tools, builtin_tools, tool_choice, reasoning, **options):
        calls = [{"type": "tag", "begin": f"[{t.name}]", "content": {"type": "json_schema", "json_schema": t.parameters},
                  "end": "[/]"} for t in tools]
        return {"type": "triggered_tags", "triggers": ["["], "tags": calls, "at_least_one": tool_choice != "auto"}

    assert "test_bracket_calls" in model_families()
    grammar = qwen3(get_model_structural_tag("test_bracket_calls", [WEATHER], "required"))
    assert accepts(tokenizer("qwen3"), grammar, '[get_weather]{"city": "Oslo"}[/]')
    assert not accepts(tokenizer("qwen3"), grammar, '[get_weather]{"town": "Oslo"}[/]')

    @register_model_structural_tag("test_bad_builder")
    def bad(tools, builtin_tools, tool_choice, reasoning, **options):
        return 42

    with pytest.raises(TypeError, match="test_bad_builder"):
        get_model_structural_tag("test_bad_builder", [WEATHER])


def test_tool_shapes_and_choices():
    functions, builtins, choice = normalize_tools([WEATHER, TIME, SEARCH], "auto")
    assert [t.name for t in functions] == ["get_weather", "get_time"] and builtins[0].name == "browser.search"
    assert choice == "auto"
    assert normalize_tools([WEATHER], None)[2] == "auto"
    assert normalize_tools([WEATHER, SEARCH], "none") == ([], [], "auto")
    named = normalize_tools([WEATHER, TIME], {"type": "function", "function": {"name": "get_time"}})
    assert [t.name for t in named[0]] == ["get_time"] and named[2] == "forced"
    builtin = normalize_tools([WEATHER, SEARCH], {"type": "web_search_preview"})
    assert builtin[0] == [] and [t.name for t in builtin[1]] == ["browser.search"] and builtin[2] == "forced"
    allowed = normalize_tools([WEATHER, TIME, SEARCH], {"type": "allowed_tools", "allowed_tools": {
        "mode": "required", "tools": [{"type": "function", "function": {"name": "get_time"}}]}})
    assert [t.name for t in allowed[0]] == ["get_time"] and allowed[1] == [] and allowed[2] == "required"
    # No parameters, or strict=False: any JSON arguments.
    loose = {"type": "function", "function": {"name": "f", "strict": False, "parameters": {"type": "object"}}}
    assert normalize_tools([loose, {"type": "function", "function": {"name": "g"}}])[0][0].parameters is True
    # A builtin tool without a name is called by its type.
    assert normalize_tools([{"type": "code_interpreter"}])[1][0].name == "code_interpreter"


@pytest.mark.parametrize("tools,choice,message", [
    ([WEATHER], {"type": "function", "function": {"name": "nope"}}, "not among the tools"),
    ([], "required", "needs at least one tool"),
    ([WEATHER], "sometimes", "tool_choice must be"),
    ([WEATHER], {"type": "web_search_preview"}, "exactly one builtin tool"),
    ([WEATHER], {"type": "allowed_tools", "allowed_tools": {"mode": "auto", "tools": [
        {"type": "function", "function": {"name": "get_time"}}]}}, "not among the tools"),
    ([WEATHER], {"type": "allowed_tools", "allowed_tools": {"mode": "forced", "tools": []}}, "mode"),
    ([{"type": "function", "function": {"parameters": {}}}], "auto", r"tools\[0\]"),
])
def test_bad_tools_and_choices_are_value_errors(tools, choice, message):
    with pytest.raises(ValueError, match=message):
        get_model_structural_tag("qwen_3", tools, choice)


def test_bad_arguments_are_typed_errors():
    with pytest.raises(ValueError, match="unknown model family"):
        get_model_structural_tag("nope")
    with pytest.raises(TypeError, match="tools must be a list"):
        get_model_structural_tag("qwen_3", WEATHER)
    with pytest.raises(TypeError, match=r"tools\[0\]"):
        get_model_structural_tag("qwen_3", ["get_weather"])
    with pytest.raises(ValueError, match="reasoning"):
        get_model_structural_tag("qwen_3", [WEATHER], reasoning="sometimes")
    with pytest.raises(TypeError, match="parallel_tool_calls"):
        get_model_structural_tag("qwen_3", [WEATHER], parallel_tool_calls="no")
    with pytest.raises(TypeError, match="max_whitespace_cnt"):
        get_model_structural_tag("qwen_3", [WEATHER], max_whitespace_cnt="2")
    # A family without builtin tools cannot force one.
    with pytest.raises(ValueError, match="no tool this model family can call"):
        get_model_structural_tag("qwen_3", [WEATHER, SEARCH], {"type": "web_search_preview"})
    with pytest.raises(ValueError, match="builtin"):
        get_model_structural_tag("mimo", [WEATHER, SEARCH])


def test_reasoning_modes_and_bools():
    tok = tokenizer("qwen3")
    call = qwen_call("get_weather", {"city": "Oslo"})
    # qwen_3: the prompt opens <think>; enabled = reasoning text, </think>, two line breaks.
    for reasoning in ("enabled", True):
        grammar = qwen3(get_model_structural_tag("qwen_3", [WEATHER], "required", reasoning))
        assert accepts(tok, grammar, "Oslo it is.</think>\n\n" + call)
        assert not accepts(tok, grammar, call)
    auto = qwen3(get_model_structural_tag("qwen_3", [WEATHER], "required", "auto"))
    assert accepts(tok, auto, call) and accepts(tok, auto, "<think>Oslo.</think>\n\n" + call)
    for reasoning in ("disabled", False):
        grammar = qwen3(get_model_structural_tag("qwen_3", [WEATHER], "required", reasoning))
        assert accepts(tok, grammar, call) and not accepts(tok, grammar, "<think>x</think>\n\n" + call)


def test_parallel_tool_calls_false_allows_one_call():
    tok = tokenizer("qwen3")
    two = qwen_call("get_weather", {"city": "Oslo"}) + "\n" + qwen_call("get_time", {"zone": "CET"})
    parallel = qwen3(get_model_structural_tag("qwen_3", [WEATHER, TIME], "auto", "disabled"))
    single = qwen3(get_model_structural_tag("qwen_3", [WEATHER, TIME], "auto", "disabled", parallel_tool_calls=False))
    assert accepts(tok, parallel, two) and not accepts(tok, single, two)
    assert accepts(tok, single, "Checking. " + qwen_call("get_time", {"zone": "CET"}))


def test_allowed_tools_limit_the_calls():
    tok = tokenizer("qwen3")
    choice = {"type": "allowed_tools", "allowed_tools": {"mode": "required", "tools": [
        {"type": "function", "function": {"name": "get_time"}}]}}
    grammar = qwen3(get_model_structural_tag("qwen_3", [WEATHER, TIME], choice, "disabled"))
    assert accepts(tok, grammar, qwen_call("get_time", {"zone": "CET"}))
    assert not accepts(tok, grammar, qwen_call("get_weather", {"city": "Oslo"}))


def test_exclude_special_tokens_and_argument_options():
    tok = tokenizer("qwen3")
    kept_out = qwen3(get_model_structural_tag("qwen_3", [WEATHER], "auto", "disabled"))
    allowed = qwen3(get_model_structural_tag("qwen_3", [WEATHER], "auto", "disabled", exclude_special_tokens=False))
    assert not accepts(tok, kept_out, "Say <think> here.") and accepts(tok, allowed, "Say <think> here.")
    two = {"type": "function", "function": {"name": "f", "parameters": {
        "type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}, "required": ["a", "b"]}}}
    swapped = qwen_call("f", {"b": 1, "a": 2})
    assert not accepts(tok, qwen3(get_model_structural_tag("qwen_3", [two], "required", "disabled")), swapped)
    assert accepts(tok, qwen3(get_model_structural_tag("qwen_3", [two], "required", "disabled", any_order=True)), swapped)
    spaced = '<tool_call>\n{"name": "f", "arguments": {"a":     1, "b": 2}}\n</tool_call>'
    assert accepts(tok, qwen3(get_model_structural_tag("qwen_3", [two], "required", "disabled")), spaced)
    assert not accepts(tok, qwen3(get_model_structural_tag("qwen_3", [two], "required", "disabled",
                                                           max_whitespace_cnt=2)), spaced)
    # The options reach our own families' argument schemas too.
    tag = get_model_structural_tag("mistral", [two], "required", any_order=True, max_whitespace_cnt=3)
    schemas = [n for n in json.loads(tag.model_dump_json())["format"]["content"]["elements"]]
    assert all(s["content"]["any_order"] and s["content"]["max_whitespace_cnt"] == 3 for s in schemas)


def test_harmony_builtin_tool_and_documented_head():
    tok = tokenizer("gpt-oss")
    tag = get_model_structural_tag("harmony", [WEATHER, SEARCH], {"type": "web_search_preview"}, "disabled")
    grammar = tok.compiler.compile_structural_tag(tag)
    assert accepts(tok, grammar, '<|channel|>commentary to=browser.search code<|message|>{"query": "x"}<|call|>')
    assert not accepts(tok, grammar, '<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>'
                                     '{"city": "Oslo"}<|call|>')
    # OpenAI's documented header, with a space before <|constrain|> (xgrammar lacks this form).
    required = tok.compiler.compile_structural_tag(get_model_structural_tag("harmony", [WEATHER], "required", "disabled"))
    for head in ("<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>",
                 "<|channel|>commentary to=functions.get_weather<|constrain|>json<|message|>",
                 " to=functions.get_weather<|channel|>commentary json<|message|>"):
        assert accepts(tok, required, head + '{"city": "Oslo"}<|call|>'), head


def test_families_without_a_template_on_hand_written_replies():
    tok = tokenizer("qwen3")
    # EXAONE 4.0 (its model card's format).
    exaone = qwen3(get_model_structural_tag("exaone", [WEATHER], "required", "enabled"))
    call = '<tool_call>{"name": "get_weather", "arguments": {"city": "Oslo"}}</tool_call>'
    assert accepts(tok, exaone, "Weather.</think>\n\n" + call)
    assert not accepts(tok, exaone, "Weather.</think>\n\n" + call.replace("Oslo\"", "Oslo\", \"x\": 1"))
