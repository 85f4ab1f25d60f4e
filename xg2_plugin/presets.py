r"""Model presets: the structural tag of a model family's tool-call and reasoning format.

:func:`get_model_structural_tag` builds it from OpenAI-style ``tools`` and ``tool_choice``
(``"auto"``, ``"none"``, ``"required"`` or ``{"type": "function", "function": {"name": ...}}``)
and a reasoning mode (``"enabled"``, ``"disabled"``, ``"auto"``). Each format follows the
family's chat template (``../shared/data/chat_templates/``); special tokens written in these
strings (``<|channel|>``, ``<|call|>``, ``[TOOL_CALLS]``...) are matched as tokens by
``compile_structural_tag`` when the tokenizer marks them special.

Families (chat template each was checked against, in ``tests/test_presets.py``):

========================  ==================================================================
``llama3_json``           Llama 3.1/3.2/3.3: ``{"name": ..., "parameters": {...}}``
``llama3_function``       Llama 3.1 ``<function=name>{...}</function>``
``qwen``                  Qwen 2.5, Qwen 3, Hermes: ``<tool_call>\n{"name", "arguments"}\n</tool_call>``
``qwen3_coder``           Qwen3-Coder: ``<tool_call>\n<function=name>\n<parameter=p>\nv\n</parameter>\n...``
``deepseek_v3``           DeepSeek V3 / R1 (and R1 distills): ``<｜tool▁call▁begin｜>function<｜tool▁sep｜>name``
                          followed by a json code block, inside ``<｜tool▁calls▁begin｜>...<｜tool▁calls▁end｜>``
``deepseek_v3_1``         DeepSeek V3.1: ``<｜tool▁call▁begin｜>name<｜tool▁sep｜>{...}<｜tool▁call▁end｜>``
``kimi_k2``               Kimi K2: ``<|tool_calls_section_begin|><|tool_call_begin|>functions.name:0``
                          ``<|tool_call_argument_begin|>{...}<|tool_call_end|>...<|tool_calls_section_end|>``
``glm4``                  GLM 4.5/4.6: ``<tool_call>name\n<arg_key>k</arg_key>\n<arg_value>v</arg_value>\n</tool_call>``
``glm4_7``                GLM 4.7: the same without line breaks; the prompt opens ``<think>``
``harmony``               gpt-oss (OpenAI Harmony channels)
``mistral``               ``[TOOL_CALLS]name[ARGS]{...}``
========================  ==================================================================

Reasoning. Families with a ``<think>`` block (``qwen``, ``kimi_k2``, ``glm4``: the block is part
of the output; ``deepseek_v3``/``deepseek_v3_1``/``glm4_7``: the prompt opens it, so the output is the
reasoning text up to ``</think>``; ``harmony``: the analysis channel): ``"enabled"`` requires
it, ``"auto"`` allows it, ``"disabled"`` forbids it. ``qwen3_coder`` has no reasoning block:
``"enabled"`` is an error there. Free text never contains the think tags.

Tool choice. ``"auto"``: free text with any number of calls (one call section where the
format has sections); ``"none"``: free text without calls; ``"required"``: the output starts
with a call; a named function: exactly that one call.
"""

from __future__ import annotations

from typing import Any, Dict, List, Literal, Sequence, Union

from .structural_tag import StructuralTag, parse_structural_tag

__all__ = ["MODEL_FAMILIES", "get_model_structural_tag"]

ReasoningMode = Literal["enabled", "disabled", "auto"]
ToolChoice = Union[str, Dict[str, Any]]

MODEL_FAMILIES = ("llama3_json", "llama3_function", "qwen", "qwen3_coder", "deepseek_v3", "deepseek_v3_1",
                  "kimi_k2", "glm4", "glm4_7", "harmony", "mistral")


def _tool_functions(tools: Sequence[Dict[str, Any]], tool_choice: ToolChoice) -> List[Dict[str, Any]]:
    """(name, parameters schema) of the tools that may be called under `tool_choice`."""
    functions = []
    for i, tool in enumerate(tools):
        function = tool.get("function", tool) if isinstance(tool, dict) else None
        if not isinstance(function, dict) or not isinstance(function.get("name"), str):
            raise ValueError(f"tools[{i}] must be {{'type': 'function', 'function': {{'name': ..., 'parameters': ...}}}}")
        functions.append({"name": function["name"], "parameters": function.get("parameters") or {"type": "object"}})
    if isinstance(tool_choice, dict):
        name = tool_choice.get("function", {}).get("name")
        chosen = [f for f in functions if f["name"] == name]
        if not chosen:
            raise ValueError(f"tool_choice names {name!r}, which is not among the tools")
        return chosen
    if tool_choice not in ("auto", "none", "required"):
        raise ValueError(f"tool_choice must be 'auto', 'none', 'required' or a named function, got {tool_choice!r}")
    return functions


def _json(schema: Dict[str, Any]) -> Dict[str, Any]:
    return {"type": "json_schema", "json_schema": schema}


def _calls(tags: List[Dict[str, Any]], triggers: List[str], tool_choice: ToolChoice,
           excludes: Sequence[str] = ()) -> Dict[str, Any]:
    """Free text with triggered tool calls, shaped by tool_choice."""
    if tool_choice == "none" or not tags:
        return {"type": "any_text", "excludes": list(triggers) + list(excludes)}
    forced = tool_choice == "required" or isinstance(tool_choice, dict)
    return {"type": "triggered_tags", "triggers": triggers, "tags": tags, "at_least_one": forced,
            "stop_after_first": isinstance(tool_choice, dict), "excludes": list(excludes)}


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
    if tool_choice == "none":
        return {"type": "any_text", "excludes": [trigger] + list(excludes)}
    if tool_choice == "auto":
        return {"type": "triggered_tags", "triggers": [trigger], "tags": [section], "at_least_one": False,
                "stop_after_first": True, "excludes": list(excludes)}
    return section


def _one_or_more(calls: List[Dict[str, Any]], separator: str, tool_choice: ToolChoice) -> Dict[str, Any]:
    return {"type": "tags_with_separator", "tags": calls, "separator": separator, "at_least_one": True,
            "stop_after_first": isinstance(tool_choice, dict)}


def _llama3_json(functions, tool_choice, reasoning):
    # {"name": "f", "parameters": {...}}: the whole reply is one call when a call is made.
    calls = [{"type": "tag", "begin": f'{{"name": "{f["name"]}", "parameters": ',
              "content": _json(f["parameters"]), "end": "}"} for f in functions]
    text = {"type": "any_text", "excludes": ['{"name": ']}
    if tool_choice == "none" or not calls:
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


def _harmony(functions, tool_choice, reasoning):
    # After the prompt's "<|start|>assistant": optional analysis, then a commentary tool
    # call ending in <|call|> or a final answer ending in <|return|>.
    analysis = {"type": "tag", "begin": "<|channel|>analysis<|message|>", "content": {"type": "any_text"},
                "end": "<|end|><|start|>assistant"}
    final = {"type": "tag", "begin": "<|channel|>final<|message|>", "content": {"type": "any_text"},
             "end": "<|return|>"}
    # The recipient goes in the channel (as models write it) or in the header (as
    # openai-gpt-oss-120b.jinja renders history: " to=functions.NAME<|channel|>commentary json").
    heads = ["<|channel|>commentary to=functions.{} <|constrain|>json<|message|>",
             " to=functions.{}<|channel|>commentary json<|message|>",
             " to=functions.{}<|channel|>commentary <|constrain|>json<|message|>"]
    calls = [{"type": "tag", "begin": head.format(f["name"]), "content": _json(f["parameters"]), "end": "<|call|>"}
             for f in functions for head in heads]
    if tool_choice == "none" or not calls:
        answer = [final]
    elif tool_choice == "auto":
        answer = calls + [final]
    else:
        answer = calls
    elements = [{"type": "or", "elements": answer}]
    if reasoning == "enabled":
        elements.insert(0, analysis)
    elif reasoning == "auto":
        elements.insert(0, {"type": "optional", "content": analysis})
    return {"type": "sequence", "elements": elements}


def _mistral(functions, tool_choice, reasoning):
    tags = [{"type": "tag", "begin": f"[TOOL_CALLS]{f['name']}[ARGS]", "content": _json(f["parameters"]),
             "end": ""} for f in functions]
    text = {"type": "any_text", "excludes": ["[TOOL_CALLS]"]}
    if tool_choice == "none" or not tags:
        return text
    one = {"type": "or", "elements": tags}
    if tool_choice == "auto":
        return {"type": "or", "elements": [{"type": "plus", "content": one}, text]}
    return one if isinstance(tool_choice, dict) else {"type": "plus", "content": one}


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


def _deepseek_v3_1(functions, tool_choice, reasoning):
    # deepseek-ai-DeepSeek-V3.1.jinja: <｜tool▁call▁begin｜>NAME<｜tool▁sep｜>ARGS<｜tool▁call▁end｜>,
    # back to back inside the calls section.
    calls = [{"type": "tag", "begin": f"<｜tool▁call▁begin｜>{f['name']}<｜tool▁sep｜>",
              "content": _json(f["parameters"]), "end": "<｜tool▁call▁end｜>"} for f in functions]
    return _deepseek(calls, "", tool_choice, reasoning)


def _deepseek(calls, separator, tool_choice, reasoning):
    excludes = _THINK_TAGS + ["<｜tool▁call▁begin｜>", "<｜tool▁calls▁end｜>"]
    if tool_choice == "none" or not calls:
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
    if tool_choice == "none" or not calls:
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


_BUILDERS = {
    "llama3_json": _llama3_json,
    "llama3_function": _llama3_function,
    "qwen": _qwen,
    "qwen3_coder": _qwen3_coder,
    "deepseek_v3": _deepseek_v3,
    "deepseek_v3_1": _deepseek_v3_1,
    "kimi_k2": _kimi_k2,
    "glm4": _glm4,
    "glm4_7": _glm4_7,
    "harmony": _harmony,
    "mistral": _mistral,
}


def get_model_structural_tag(
    family: str,
    tools: Sequence[Dict[str, Any]] = (),
    tool_choice: ToolChoice = "auto",
    reasoning: ReasoningMode = "disabled",
) -> StructuralTag:
    """The structural tag of `family` (one of ``MODEL_FAMILIES``) for these tools."""
    if family not in _BUILDERS:
        raise ValueError(f"unknown model family {family!r}; expected one of {', '.join(MODEL_FAMILIES)}")
    if reasoning not in ("enabled", "disabled", "auto"):
        raise ValueError(f"reasoning must be 'enabled', 'disabled' or 'auto', got {reasoning!r}")
    functions = _tool_functions(tools, tool_choice)
    return parse_structural_tag({"type": "structural_tag", "format": _BUILDERS[family](functions, tool_choice, reasoning)})
