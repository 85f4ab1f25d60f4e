"""Tools and tool_choice as the presets take them: OpenAI Chat Completions function tools,
compact builtin tools, and every tool_choice form, reduced to the tools that may be called
and one of three choices: "auto" (text or calls; no tools means text only), "required"
(at least one call) and "forced" (exactly one tool left, which must be called)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, List, Sequence, Tuple, Union

Schema = Union[bool, Dict[str, Any]]


@dataclass(frozen=True)
class Tool:
    """One callable tool: ``type`` is ``"function"`` or the builtin tool's provider type;
    ``name`` is what the model writes; ``parameters`` is the argument schema (``True``: any
    JSON, for a tool without parameters or with ``strict=False``)."""

    type: str
    name: str
    parameters: Schema


def _tool(index: int, tool: Any) -> Tool:
    where = f"tools[{index}]"
    if not isinstance(tool, dict):
        raise TypeError(f"{where} must be a dict, got {type(tool).__name__}")
    kind = tool.get("type", "function")
    if not isinstance(kind, str):
        raise ValueError(f"{where}.type must be a string, got {kind!r}")
    if kind == "function":
        # Chat Completions shape; a bare {"name", "parameters"} is read the same way.
        function = tool.get("function", tool)
        if not isinstance(function, dict) or not isinstance(function.get("name"), str):
            raise ValueError(f"{where} must be {{'type': 'function', 'function': {{'name': ..., 'parameters': ...}}}}")
        parameters = function.get("parameters")
        if function.get("strict") is False or parameters is None:
            parameters = True
        elif not isinstance(parameters, (dict, bool)):
            raise ValueError(f"{where}.function.parameters must be a JSON schema, got {type(parameters).__name__}")
        return Tool("function", function["name"], parameters)
    name = tool.get("name") or kind
    if not isinstance(name, str):
        raise ValueError(f"{where}.name must be a string, got {name!r}")
    parameters = tool.get("parameters")
    if parameters is None:
        parameters = True
    elif not isinstance(parameters, (dict, bool)):
        raise ValueError(f"{where}.parameters must be a JSON schema, got {type(parameters).__name__}")
    return Tool(kind, name, parameters)


def _allowed(functions: List[Tool], builtins: List[Tool], spec: Any) -> Tuple[List[Tool], List[Tool], str]:
    if not isinstance(spec, dict) or not isinstance(spec.get("tools"), list):
        raise ValueError("tool_choice.allowed_tools must be {'mode': 'auto' | 'required', 'tools': [...]}")
    mode = spec.get("mode", "auto")
    if mode not in ("auto", "required"):
        raise ValueError(f"tool_choice.allowed_tools.mode must be 'auto' or 'required', got {mode!r}")
    names, types = set(), set()
    for i, ref in enumerate(spec["tools"]):
        if not isinstance(ref, dict) or not isinstance(ref.get("type"), str):
            raise ValueError(f"tool_choice.allowed_tools.tools[{i}] must be a dict with a 'type'")
        if ref["type"] == "function":
            name = (ref.get("function") or {}).get("name")
            if not isinstance(name, str):
                raise ValueError(f"tool_choice.allowed_tools.tools[{i}] must name its function")
            names.add(name)
        else:
            types.add(ref["type"])
    missing = sorted(names - {t.name for t in functions}) + sorted(types - {t.type for t in builtins})
    if missing:
        raise ValueError(f"tool_choice.allowed_tools names tools that are not among the tools: {missing}")
    return [t for t in functions if t.name in names], [t for t in builtins if t.type in types], mode


def normalize_tools(tools: Sequence[Any] = None, tool_choice: Any = "auto") -> Tuple[List[Tool], List[Tool], str]:
    """(function tools, builtin tools, choice) for `tools` under `tool_choice`."""
    if tools is None:
        tools = []
    if not isinstance(tools, (list, tuple)):
        raise TypeError(f"tools must be a list, got {type(tools).__name__}")
    parsed = [_tool(i, t) for i, t in enumerate(tools)]
    functions = [t for t in parsed if t.type == "function"]
    builtins = [t for t in parsed if t.type != "function"]
    if tool_choice is None or tool_choice == "auto":
        choice = "auto"
    elif tool_choice == "none":
        functions, builtins, choice = [], [], "auto"
    elif tool_choice == "required":
        choice = "required"
    elif isinstance(tool_choice, dict) and tool_choice.get("type") == "function":
        name = (tool_choice.get("function") or {}).get("name")
        functions, builtins, choice = [t for t in functions if t.name == name], [], "forced"
        if not functions:
            raise ValueError(f"tool_choice names {name!r}, which is not among the tools")
    elif isinstance(tool_choice, dict) and tool_choice.get("type") == "allowed_tools":
        functions, builtins, choice = _allowed(functions, builtins, tool_choice.get("allowed_tools"))
    elif isinstance(tool_choice, dict) and isinstance(tool_choice.get("type"), str):
        kind = tool_choice["type"]
        functions, builtins, choice = [], [t for t in builtins if t.type == kind], "forced"
        if len(builtins) != 1:
            raise ValueError(f"tool_choice {{'type': {kind!r}}} must match exactly one builtin tool, "
                             f"got {len(builtins)}")
    else:
        raise ValueError("tool_choice must be 'auto', 'none', 'required', None, {'type': 'function', 'function': "
                         f"{{'name': ...}}}}, {{'type': 'allowed_tools', ...}} or {{'type': BUILTIN}}, got {tool_choice!r}")
    if choice == "required" and not functions and not builtins:
        raise ValueError("tool_choice 'required' needs at least one tool")
    if choice == "forced" and len(functions) + len(builtins) != 1:
        raise ValueError("a forced tool_choice must leave exactly one tool")
    return functions, builtins, choice
