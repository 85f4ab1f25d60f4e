"""The registry of model families and the entry point that builds a family's structural tag."""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional, Sequence, Union

from ..structural_tag import StructuralTag, parse_structural_tag
from .tools import normalize_tools

Builder = Callable[..., Any]
_FAMILIES: Dict[str, Builder] = {}


def register_model_structural_tag(name: str) -> Callable[[Builder], Builder]:
    """Decorator: register a family builder under `name` (replacing one of the same name).

    The builder is called as ``builder(tools, builtin_tools, tool_choice, reasoning, *,
    any_order, exclude_special_tokens, max_whitespace_cnt, parallel_tool_calls)``, where
    ``tools`` and ``builtin_tools`` are lists of :class:`~xg2_plugin.presets.tools.Tool`
    (``type``, ``name``, ``parameters``) left callable by the request's ``tool_choice``,
    ``tool_choice`` is ``"auto"`` (no tools: text only), ``"required"`` or ``"forced"``
    (exactly one tool), and ``reasoning`` is ``"enabled"``, ``"disabled"`` or ``"auto"``. It
    returns a :class:`StructuralTag` or the JSON of one or of its ``format``."""
    if not isinstance(name, str) or not name:
        raise ValueError(f"a model family name must be a non-empty string, got {name!r}")

    def register(builder: Builder) -> Builder:
        if not callable(builder):
            raise TypeError(f"register_model_structural_tag({name!r}) must decorate a callable")
        _FAMILIES[name] = builder
        return builder

    return register


def model_families() -> List[str]:
    """The registered family names, in registration order."""
    return list(_FAMILIES)


def _reasoning_mode(reasoning: Any) -> str:
    if isinstance(reasoning, bool):
        return "enabled" if reasoning else "disabled"
    if reasoning in ("enabled", "disabled", "auto"):
        return reasoning
    raise ValueError(f"reasoning must be a bool or 'enabled', 'disabled' or 'auto', got {reasoning!r}")


def _as_tag(family: str, built: Any) -> StructuralTag:
    if isinstance(built, StructuralTag):
        return built
    if isinstance(built, dict):
        return parse_structural_tag(built if built.get("type") == "structural_tag"
                                    else {"type": "structural_tag", "format": built})
    raise TypeError(f"the builder of model family {family!r} returned {type(built).__name__}, "
                    "expected a StructuralTag or its JSON")


def get_model_structural_tag(
    model: str,
    tools: Optional[Sequence[Dict[str, Any]]] = None,
    tool_choice: Union[str, Dict[str, Any], None] = "auto",
    reasoning: Union[bool, str] = "enabled",
    force_reasoning: bool = False,
    any_order: bool = False,
    exclude_special_tokens: bool = True,
    max_whitespace_cnt: Optional[int] = None,
    parallel_tool_calls: bool = True,
) -> StructuralTag:
    """The structural tag of family `model`'s tool calls and reasoning, as xgrammar's function
    of the same name takes its arguments.

    ``tools``: Chat Completions function tools ``{"type": "function", "function": {"name",
    "parameters", "strict"}}`` and builtin tools ``{"type": TYPE, "name": NAME, "parameters":
    SCHEMA}`` (``name`` defaults to ``type``). ``tool_choice``: ``"auto"`` / ``None``,
    ``"none"``, ``"required"``, ``{"type": "function", "function": {"name": ...}}``,
    ``{"type": TYPE}`` (a builtin tool), or ``{"type": "allowed_tools", "allowed_tools":
    {"mode": "auto" | "required", "tools": [refs]}}``. ``reasoning``: ``"enabled"``,
    ``"disabled"``, ``"auto"`` (``True`` / ``False`` mean enabled / disabled).
    ``force_reasoning``: accepted and ignored (deprecated in xgrammar too). ``any_order`` and
    ``max_whitespace_cnt`` apply to every argument schema. ``exclude_special_tokens=False``
    lets the family's special strings appear in free text. ``parallel_tool_calls=False``: at
    most one call, which ends the output.
    """
    builder = _FAMILIES.get(model)
    if builder is None:
        raise ValueError(f"unknown model family {model!r}; expected one of {', '.join(_FAMILIES)}")
    functions, builtins, choice = normalize_tools(tools, tool_choice)
    mode = _reasoning_mode(reasoning)
    for flag, value in (("force_reasoning", force_reasoning), ("any_order", any_order),
                        ("exclude_special_tokens", exclude_special_tokens),
                        ("parallel_tool_calls", parallel_tool_calls)):
        if not isinstance(value, bool):
            raise TypeError(f"{flag} must be a bool, got {type(value).__name__}")
    if max_whitespace_cnt is not None and (isinstance(max_whitespace_cnt, bool) or not isinstance(max_whitespace_cnt, int)):
        raise TypeError(f"max_whitespace_cnt must be None or an int, got {type(max_whitespace_cnt).__name__}")
    built = builder(functions, builtins, choice, mode, any_order=any_order, exclude_special_tokens=exclude_special_tokens,
                    max_whitespace_cnt=max_whitespace_cnt, parallel_tool_calls=parallel_tool_calls)
    return _as_tag(model, built)
