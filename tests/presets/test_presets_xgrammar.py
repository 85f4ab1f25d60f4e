"""Our presets build the tag xgrammar 0.2.8 builds (the test oracle, never a runtime
dependency), for every family it registers x tool_choice form x reasoning mode x
parallel_tool_calls x options, up to rewrites that keep the language: default fields
dropped, exclusion lists as sets, ``tag(b, X, e)`` as ``sequence[b, X, e]``, nested sequences
flattened and adjacent constant strings joined. The one deliberate difference, Harmony's
documented ``to=functions.NAME <|constrain|>json`` header, is taken out before comparing."""

from __future__ import annotations

import itertools

import pytest

from xg2_plugin.presets import get_model_structural_tag

import xgrammar as xgr  # the test oracle (test extras); a missing oracle must fail, not skip
from xgrammar.builtin_structural_tag import _structural_tag_registry as XGRAMMAR_FAMILIES  # noqa: E402

TOOLS = [
    {"type": "function", "function": {"name": "f", "parameters": {
        "type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]}}},
    {"type": "function", "function": {"name": "g", "strict": False, "parameters": {"type": "object"}}},
    {"type": "web_search_preview", "name": "browser.search", "parameters": {"type": "object"}},
]
CHOICES = ["auto", "required", "none", {"type": "function", "function": {"name": "f"}}, {"type": "web_search_preview"},
           {"type": "allowed_tools", "allowed_tools": {"mode": "required", "tools": [
               {"type": "function", "function": {"name": "g"}}]}}]
OPTIONS = [{}, {"any_order": True, "max_whitespace_cnt": 2, "exclude_special_tokens": False, "parallel_tool_calls": False}]
_DEFAULTS = {"excludes": [], "at_least_one": False, "stop_after_first": False, "any_order": False,
             "max_whitespace_cnt": None, "style": "json", "max_tokens": None, "max_chars": None}


def _harmony_documented_head(node) -> bool:
    head = node["elements"][0].get("value", "") if node.get("type") == "sequence" else ""
    return head.startswith("<|channel|>commentary to=functions.") and " <|constrain|>" in head


def canonical(node):
    if isinstance(node, list):
        return [canonical(n) for n in node]
    if not isinstance(node, dict):
        return node
    out = {k: (sorted(v) if k == "excludes" else canonical(v)) for k, v in node.items()
           if not (k in _DEFAULTS and v == _DEFAULTS[k])}
    if out.get("type") == "tags_with_separator":
        out["tags"] = [t for t in out["tags"] if not _harmony_documented_head(t)]
    if out.get("type") == "tag" and isinstance(out["end"], str) and out["begin"]:
        return canonical({"type": "sequence", "elements": [
            {"type": "const_string", "value": out["begin"]}, out["content"], {"type": "const_string", "value": out["end"]}]})
    if out.get("type") == "sequence":
        flat = [e for element in out["elements"]
                for e in (element["elements"] if element.get("type") == "sequence" else [element])]
        joined = []
        for e in flat:
            if joined and e.get("type") == joined[-1].get("type") == "const_string":
                joined[-1] = {"type": "const_string", "value": joined[-1]["value"] + e["value"]}
            else:
                joined.append(e)
        return joined[0] if len(joined) == 1 else dict(out, elements=joined)
    return out


def _build(build, *args, **kwargs):
    try:
        return canonical(build(*args, **kwargs).model_dump(mode="json")["format"])
    except (ValueError, AssertionError) as error:  # xgrammar asserts where a family has no callable tool
        return ("error", type(error).__name__ == "AssertionError" or isinstance(error, ValueError))


@pytest.mark.parametrize("family", sorted(XGRAMMAR_FAMILIES))
def test_same_tag_as_xgrammar(family):
    for tools, choice, reasoning, options in itertools.product(
            (TOOLS[:2], TOOLS), CHOICES, ("enabled", "disabled", "auto"), OPTIONS):
        theirs = _build(xgr.get_model_structural_tag, family, tools=tools, tool_choice=choice, reasoning=reasoning,
                        **options)
        ours = _build(get_model_structural_tag, family, tools, choice, reasoning, **options)
        assert ours == theirs, (family, len(tools), choice, reasoning, options)
