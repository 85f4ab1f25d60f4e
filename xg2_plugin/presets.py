"""Model presets: the structural tag of a model family's tool-call and reasoning format.

:func:`get_model_structural_tag` builds it from OpenAI-style ``tools`` and ``tool_choice``
(``"auto"``, ``"none"``, ``"required"`` or ``{"type": "function", "function": {"name": ...}}``)
and a reasoning mode (``"enabled"``, ``"disabled"``, ``"auto"``). Each format follows the
family's chat template (``../shared/data/chat_templates/``); special tokens written in these
strings (``<|channel|>``, ``<|call|>``, ``[TOOL_CALLS]``...) are matched as tokens by
``compile_structural_tag`` when the tokenizer marks them special.

Families: ``llama3_json`` (Llama 3.1/3.2/3.3, ``{"name", "parameters"}``), ``llama3_function``
(``<function=name>{...}</function>``), ``qwen`` (Qwen 2.5, Qwen 3 and Hermes: ``<tool_call>``
JSON), ``harmony`` (gpt-oss), ``mistral`` (``[TOOL_CALLS]name[ARGS]{...}``).
"""

from __future__ import annotations

from typing import Any, Dict, List, Literal, Optional, Sequence, Union

from .structural_tag import StructuralTag, parse_structural_tag

__all__ = ["MODEL_FAMILIES", "get_model_structural_tag"]

ReasoningMode = Literal["enabled", "disabled", "auto"]
ToolChoice = Union[str, Dict[str, Any]]

MODEL_FAMILIES = ("llama3_json", "llama3_function", "qwen", "harmony", "mistral")


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


def _with_reasoning(body: Dict[str, Any], reasoning: ReasoningMode,
                    begin: str = "<think>", end: str = "</think>") -> Dict[str, Any]:
    think = {"type": "tag", "begin": begin, "content": {"type": "any_text"}, "end": end}
    if reasoning == "enabled":
        return {"type": "sequence", "elements": [think, body]}
    if reasoning == "auto":
        return {"type": "sequence", "elements": [{"type": "optional", "content": think}, body]}
    return body


def _llama3_json(functions, tool_choice, reasoning):
    # {"name": "f", "parameters": {...}}: the whole reply is one call when a call is made.
    calls = [{"type": "tag", "begin": f'{{"name": "{f["name"]}", "parameters": ',
              "content": _json(f["parameters"]), "end": "}"} for f in functions]
    if tool_choice == "none" or not calls:
        return {"type": "any_text"}
    if tool_choice == "auto":
        return {"type": "or", "elements": calls + [{"type": "any_text", "excludes": ['{"name": ']}]}
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
    calls = [{"type": "tag",
              "begin": f"<|channel|>commentary to=functions.{f['name']} <|constrain|>json<|message|>",
              "content": _json(f["parameters"]), "end": "<|call|>"} for f in functions]
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
    if tool_choice == "none" or not tags:
        return {"type": "any_text"}
    one = {"type": "or", "elements": tags}
    if tool_choice == "auto":
        return {"type": "or", "elements": [{"type": "plus", "content": one}, {"type": "any_text"}]}
    return one if isinstance(tool_choice, dict) else {"type": "plus", "content": one}


_BUILDERS = {
    "llama3_json": _llama3_json,
    "llama3_function": _llama3_function,
    "qwen": _qwen,
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
