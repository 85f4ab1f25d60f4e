"""Our own families, under the names this package used before it took xgrammar's: formats
checked against a chat template where they differ from xgrammar's family of that model (see
the package docstring for each difference), plus Mistral and Llama's ``<function=NAME>`` form,
which xgrammar does not register. Each builder takes the tools as ``{"name", "parameters"}``,
tool_choice "auto" / "required" / "forced", and a reasoning mode; `_register` adapts it to the
registry's call and applies the per-request options to the built format."""

from __future__ import annotations

from typing import Any, Dict, List, Sequence

from .formats import Options, check_callable
from .registry import register_model_structural_tag

ReasoningMode = str
ToolChoice = str
_SPECIAL = ("<think>", "</think>")


def _apply_options(node: Any, o: Options) -> Any:
    """`node` with the options applied: argument schemas get any_order / max_whitespace_cnt;
    without parallel calls a repetition of calls stops after the first; without special-token
    exclusion the think tags leave the excluded strings."""
    if isinstance(node, list):
        return [_apply_options(n, o) for n in node]
    if not isinstance(node, dict):
        return node
    if node.get("type") == "json_schema":
        return dict(node, any_order=o.any_order, max_whitespace_cnt=o.max_whitespace_cnt)
    out = {k: _apply_options(v, o) for k, v in node.items()}
    if not o.parallel_tool_calls:
        if out.get("type") in ("triggered_tags", "tags_with_separator"):
            out["stop_after_first"] = True
        if out.get("type") == "plus":
            return out["content"]
    if not o.exclude_special_tokens and "excludes" in out:
        out["excludes"] = [e for e in out["excludes"] if e not in _SPECIAL]
    return out


def _register(name: str, build):
    @register_model_structural_tag(name)
    def builder(tools, builtin_tools, tool_choice, reasoning, **options):
        check_callable(tools, tool_choice)
        functions = [{"name": t.name, "parameters": {"type": "object"} if t.parameters is True else t.parameters}
                     for t in tools]
        return _apply_options(build(functions, tool_choice, reasoning), Options(**options))

    builder.__doc__ = build.__doc__
    return builder


def _json(schema: Dict[str, Any]) -> Dict[str, Any]:
    return {"type": "json_schema", "json_schema": schema}


def _calls(tags: List[Dict[str, Any]], triggers: List[str], tool_choice: ToolChoice,
           excludes: Sequence[str] = ()) -> Dict[str, Any]:
    """Free text with triggered tool calls, shaped by tool_choice."""
    if not tags:
        return {"type": "any_text", "excludes": list(triggers) + list(excludes)}
    forced = tool_choice in ("required", "forced")
    return {"type": "triggered_tags", "triggers": triggers, "tags": tags, "at_least_one": forced,
            "stop_after_first": tool_choice == "forced", "excludes": list(excludes)}


# Line breaks a template writes after </think> (Qwen3: "</think>\n\n").
_AFTER_THINK = {"type": "regex", "pattern": "\n{0,2}"}


def _with_reasoning(body: Dict[str, Any], reasoning: ReasoningMode,
                    begin: str = "<think>", end: str = "</think>") -> Dict[str, Any]:
    think = {"type": "sequence", "elements": [
        {"type": "tag", "begin": begin, "content": {"type": "any_text"}, "end": end}, _AFTER_THINK]}
    if reasoning == "enabled":
        return {"type": "sequence", "elements": [think, body]}
    if reasoning == "auto":
        return {"type": "sequence", "elements": [{"type": "optional", "content": think}, body]}
    return body


_THINK_TAGS = ["<think>", "</think>"]


def _prompt_opened_reasoning(body: Dict[str, Any], reasoning: ReasoningMode) -> Dict[str, Any]:
    """Reasoning whose ``<think>`` the prompt already wrote: reasoning text, then ``</think>``."""
    think = {"type": "sequence", "elements": [
        {"type": "tag", "begin": "", "content": {"type": "any_text", "excludes": ["<think>"]}, "end": "</think>"},
        _AFTER_THINK]}
    if reasoning == "enabled":
        return {"type": "sequence", "elements": [think, body]}
    if reasoning == "auto":
        return {"type": "sequence", "elements": [{"type": "optional", "content": think}, body]}
    return body


def _section(section: Dict[str, Any], trigger: str, tool_choice: ToolChoice, excludes: Sequence[str]) -> Dict[str, Any]:
    """Free text followed by at most one call section (forced first for required / named)."""
    if tool_choice == "auto":
        return {"type": "triggered_tags", "triggers": [trigger], "tags": [section], "at_least_one": False,
                "stop_after_first": True, "excludes": list(excludes)}
    return section


def _one_or_more(calls: List[Dict[str, Any]], separator: str, tool_choice: ToolChoice) -> Dict[str, Any]:
    return {"type": "tags_with_separator", "tags": calls, "separator": separator, "at_least_one": True,
            "stop_after_first": tool_choice == "forced"}


def _llama3_json(functions, tool_choice, reasoning):
    # {"name": "f", "parameters": {...}}: the whole reply is one call when a call is made.
    calls = [{"type": "tag", "begin": f'{{"name": "{f["name"]}", "parameters": ',
              "content": _json(f["parameters"]), "end": "}"} for f in functions]
    text = {"type": "any_text", "excludes": ['{"name": ']}
    if not calls:
        return text
    if tool_choice == "auto":
        return {"type": "or", "elements": calls + [text]}
    return {"type": "or", "elements": calls}


def _llama3_function(functions, tool_choice, reasoning):
    tags = [{"type": "tag", "begin": f"<function={f['name']}>", "content": _json(f["parameters"]),
             "end": "</function>"} for f in functions]
    return _calls(tags, ["<function="], tool_choice)


def _qwen(functions, tool_choice, reasoning):
    tags = [{"type": "tag", "begin": f'<tool_call>\n{{"name": "{f["name"]}", "arguments": ',
             "content": _json(f["parameters"]), "end": "}\n</tool_call>"} for f in functions]
    body = _calls(tags, ["<tool_call>"], tool_choice, excludes=["<think>", "</think>"])
    return _with_reasoning(body, reasoning)


def _mistral(functions, tool_choice, reasoning):
    tags = [{"type": "tag", "begin": f"[TOOL_CALLS]{f['name']}[ARGS]", "content": _json(f["parameters"]),
             "end": ""} for f in functions]
    text = {"type": "any_text", "excludes": ["[TOOL_CALLS]"]}
    if not tags:
        return text
    one = {"type": "or", "elements": tags}
    if tool_choice == "auto":
        return {"type": "or", "elements": [{"type": "plus", "content": one}, text]}
    return one if tool_choice == "forced" else {"type": "plus", "content": one}


def _qwen3_coder(functions, tool_choice, reasoning):
    # Qwen3-Coder.jinja: <tool_call>\n<function=NAME>\n then per argument
    # <parameter=KEY>\nVALUE\n</parameter>\n (strings raw, other values tojson), then
    # </function>\n</tool_call>.
    if reasoning == "enabled":
        raise ValueError("qwen3_coder has no reasoning block; use reasoning='disabled'")
    tags = [{"type": "tag", "begin": f"<tool_call>\n<function={f['name']}>\n",
             "content": {"type": "json_schema", "json_schema": f["parameters"], "style": "qwen_xml"},
             "end": "</function>\n</tool_call>"} for f in functions]
    return _calls(tags, ["<tool_call>"], tool_choice, excludes=_THINK_TAGS)


def _deepseek_v3(functions, tool_choice, reasoning):
    # DeepSeek-R1-Distill-*.jinja / llama-cpp-deepseek-r1.jinja (the V3 / R1 format): calls
    # separated by a newline inside <｜tool▁calls▁begin｜> ... <｜tool▁calls▁end｜>.
    calls = [{"type": "tag", "begin": f"<｜tool▁call▁begin｜>function<｜tool▁sep｜>{f['name']}\n```json\n",
              "content": _json(f["parameters"]), "end": "\n```<｜tool▁call▁end｜>"} for f in functions]
    return _deepseek(calls, "\n", tool_choice, reasoning)


def _deepseek(calls, separator, tool_choice, reasoning):
    excludes = _THINK_TAGS + ["<｜tool▁call▁begin｜>", "<｜tool▁calls▁end｜>"]
    if not calls:
        body = {"type": "any_text", "excludes": ["<｜tool▁calls▁begin｜>"] + excludes}
    else:
        section = {"type": "tag", "begin": "<｜tool▁calls▁begin｜>",
                   "content": _one_or_more(calls, separator, tool_choice), "end": "<｜tool▁calls▁end｜>"}
        body = _section(section, "<｜tool▁calls▁begin｜>", tool_choice, excludes)
    return _prompt_opened_reasoning(body, reasoning)


def _kimi_k2(functions, tool_choice, reasoning):
    # moonshotai-Kimi-K2.jinja / Kimi-K2-Instruct.jinja: a calls section of
    # <|tool_call_begin|>functions.NAME:INDEX<|tool_call_argument_begin|>ARGS<|tool_call_end|>;
    # Kimi-K2-Thinking.jinja puts <think>...</think> before the content.
    calls = [{"type": "tag", "begin": f"<|tool_call_begin|>functions.{f['name']}:",
              "content": {"type": "sequence", "elements": [
                  {"type": "regex", "pattern": "(0|[1-9][0-9]*)"},
                  {"type": "const_string", "value": "<|tool_call_argument_begin|>"},
                  _json(f["parameters"])]},
              "end": "<|tool_call_end|>"} for f in functions]
    excludes = _THINK_TAGS + ["<|tool_call_begin|>", "<|tool_calls_section_end|>"]
    if not calls:
        body = {"type": "any_text", "excludes": ["<|tool_calls_section_begin|>"] + excludes}
    else:
        section = {"type": "tag", "begin": "<|tool_calls_section_begin|>",
                   "content": _one_or_more(calls, "", tool_choice), "end": "<|tool_calls_section_end|>"}
        body = _section(section, "<|tool_calls_section_begin|>", tool_choice, excludes)
    return _with_reasoning(body, reasoning)


def _glm_calls(functions, tool_choice):
    # <tool_call>NAME\n then per argument <arg_key>KEY</arg_key>\n<arg_value>VALUE</arg_value>\n,
    # then </tool_call> (GLM-4.6.jinja; GLM-4.7-Flash.jinja writes no line breaks).
    newline = {"type": "optional", "content": {"type": "const_string", "value": "\n"}}
    tags = [{"type": "tag", "begin": f"<tool_call>{f['name']}",
             "content": {"type": "sequence", "elements": [
                 newline, {"type": "json_schema", "json_schema": f["parameters"], "style": "glm_xml"}]},
             "end": "</tool_call>"} for f in functions]
    return {"type": "sequence", "elements": [newline, _calls(tags, ["<tool_call>"], tool_choice, excludes=_THINK_TAGS)]}


def _glm4_7(functions, tool_choice, reasoning):
    # GLM-4.7-Flash.jinja: the generation prompt opens the block (<think>) or closes it
    # (</think>, thinking disabled).
    return _prompt_opened_reasoning(_glm_calls(functions, tool_choice), reasoning)


def _glm4(functions, tool_choice, reasoning):
    # GLM-4.6.jinja: the reply starts with \n<think>...</think> (with reasoning) or \n (the
    # prompt closed the block), then \n before each call.
    body = _glm_calls(functions, tool_choice)
    if reasoning == "disabled":
        return body
    think = {"type": "sequence", "elements": [
        {"type": "optional", "content": {"type": "const_string", "value": "\n"}},
        {"type": "tag", "begin": "<think>", "content": {"type": "any_text"}, "end": "</think>"}]}
    if reasoning == "auto":
        think = {"type": "optional", "content": think}
    return {"type": "sequence", "elements": [think, body]}




for _name, _build in (("llama3_json", _llama3_json), ("llama3_function", _llama3_function), ("qwen", _qwen),
                      ("qwen3_coder", _qwen3_coder), ("deepseek_v3", _deepseek_v3), ("kimi_k2", _kimi_k2),
                      ("glm4", _glm4), ("glm4_7", _glm4_7), ("mistral", _mistral)):
    _register(_name, _build)
