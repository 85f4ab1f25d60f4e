"""Building blocks of the preset formats (structural-tag JSON as dicts) and the options every
family honours the same way."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence

from .tools import Tool

Format = Dict[str, Any]


@dataclass(frozen=True)
class Options:
    """The per-request switches of ``get_model_structural_tag`` (see its docstring)."""

    any_order: bool = False
    exclude_special_tokens: bool = True
    max_whitespace_cnt: Optional[int] = None
    parallel_tool_calls: bool = True

    def excludes(self, strings: Sequence[str]) -> List[str]:
        """`strings` kept out of free text, or nothing when special tokens may appear there."""
        return list(strings) if self.exclude_special_tokens else []


def const(value: str) -> Format:
    return {"type": "const_string", "value": value}


def text(excludes: Sequence[str] = ()) -> Format:
    return {"type": "any_text", "excludes": list(excludes)}


def regex(pattern: str) -> Format:
    return {"type": "regex", "pattern": pattern}


def seq(*elements: Format) -> Format:
    return {"type": "sequence", "elements": list(elements)}


def either(*elements: Format) -> Format:
    return {"type": "or", "elements": list(elements)}


def optional(content: Format) -> Format:
    return {"type": "optional", "content": content}


def tag(begin: str, content: Format, end: Any) -> Format:
    return {"type": "tag", "begin": begin, "content": content, "end": end}


def arguments(tool: Tool, options: Options, style: str = "json", excludes: Sequence[str] = ()) -> Format:
    """The tool's arguments, spelled in `style`."""
    value: Format = {"type": "json_schema", "json_schema": tool.parameters, "style": style,
                     "any_order": options.any_order, "max_whitespace_cnt": options.max_whitespace_cnt}
    if excludes:
        value["excludes"] = list(excludes)
    return value


def separated(calls: List[Format], separator: str, options: Options, at_least_one: bool = True) -> Format:
    """One or more calls (one only without parallel tool calls) joined by `separator`."""
    return {"type": "tags_with_separator", "tags": calls, "separator": separator, "at_least_one": at_least_one,
            "stop_after_first": not options.parallel_tool_calls}


def triggered(triggers: List[str], tags: List[Format], excludes: Sequence[str], options: Options,
              at_least_one: bool = False) -> Format:
    """Free text (without `excludes`) in which a trigger starts one of `tags`."""
    return {"type": "triggered_tags", "triggers": triggers, "tags": tags, "at_least_one": at_least_one,
            "stop_after_first": not options.parallel_tool_calls, "excludes": list(excludes)}


def check_callable(calls: List[Format], choice: str) -> None:
    """A required or forced choice needs a tool this family can call (a family without builtin
    tools leaves none when the request's tools are all builtin)."""
    if choice != "auto" and not calls:
        raise ValueError(f"tool_choice {choice!r} leaves no tool this model family can call "
                         "(its builtin tools, if any, are not supported by the family)")


def calls_in_text(calls: List[Format], trigger: str, choice: str, text_excludes: Sequence[str],
                  options: Options, no_call_excludes: Optional[Sequence[str]] = None) -> Format:
    """Calls standing alone in free text: each call opens with `trigger`. Forced: the call is
    the whole output. No callable tool: free text without `no_call_excludes` (default
    `text_excludes`)."""
    check_callable(calls, choice)
    if not calls:
        return text(options.excludes(text_excludes if no_call_excludes is None else no_call_excludes))
    if choice == "forced":
        return calls[0]
    return triggered([trigger], calls, options.excludes(text_excludes), options, at_least_one=choice == "required")


@dataclass(frozen=True)
class Section:
    """A block that holds the calls: ``begin`` (its trigger is ``trigger``, default ``begin``),
    the calls joined by ``separator``, then ``end``. ``lead``: what a required or forced
    output writes before ``begin`` (the template's line breaks)."""

    begin: str
    end: str
    separator: str = ""
    trigger: Optional[str] = None
    lead: str = ""


def calls_in_section(calls: List[Format], section: Section, choice: str, text_excludes: Sequence[str],
                     options: Options, no_call_excludes: Optional[Sequence[str]] = None,
                     no_call_section: bool = False) -> Format:
    """Calls inside a section. Auto: free text in which the section may open. Required: the
    output is the section. Forced: the section with the one call. No callable tool: free
    text, kept from opening the section (whatever exclude_special_tokens says) when
    `no_call_section`."""
    check_callable(calls, choice)
    if not calls:
        excludes = options.excludes(text_excludes if no_call_excludes is None else no_call_excludes)
        return text(excludes + [section.trigger or section.begin] if no_call_section else excludes)
    if choice == "forced":
        return seq(const(section.lead + section.begin), calls[0], const(section.end))
    if choice == "required":
        return seq(const(section.lead + section.begin), separated(calls, section.separator, options),
                   const(section.end))
    block = tag(section.begin, separated(calls, section.separator, options), section.end)
    return triggered([section.trigger or section.begin], [block], options.excludes(text_excludes), options)


def reasoning_block(mode: str, begin: str, end: str, options: Options, excludes: Sequence[str],
                    prompt_opens: bool = True, suffix: str = "") -> Optional[Format]:
    """The leading reasoning block. "enabled": required, and when `prompt_opens` the prompt has
    already written `begin`, so the output is the reasoning text up to `end`; "auto": a whole
    block (`begin` included) or nothing; "disabled": none (None). `suffix` follows `end`."""
    if mode == "disabled":
        return None
    opener = "" if mode == "enabled" and prompt_opens else begin
    block = tag(opener, text(options.excludes(excludes)), end)
    if suffix:
        block = seq(block, const(suffix))
    return optional(block) if mode == "auto" else block


def then(prefix: Optional[Format], body: Format) -> Format:
    return body if prefix is None else seq(prefix, body)
