"""The model families xgrammar 0.2.8 registers, under its names, built from each family's
output format (what the model writes after the generation prompt). Where a family's chat
template and xgrammar's format disagree, the template wins; those places say so."""

from __future__ import annotations

from typing import List

from .formats import (Format, Options, Section, arguments, calls_in_section, calls_in_text, check_callable, const, either,
                      optional, reasoning_block, regex, separated, seq, tag, text, then, triggered)
from .registry import register_model_structural_tag
from .tools import Tool

THINK = ["<think>", "</think>"]


def _no_builtins(family: str, builtin_tools: List[Tool]) -> None:
    if builtin_tools:
        raise ValueError(f"{family} has no builtin tools; got {[t.type for t in builtin_tools]}")


@register_model_structural_tag("llama")
def llama(tools, builtin_tools, tool_choice, reasoning, **options):
    """Llama 3.x JSON calls, ``{"name": NAME, "parameters": ARGS}``, anywhere in the text (no
    reasoning block)."""
    o = Options(**options)
    calls = [tag(f'{{"name": "{t.name}", "parameters": ', arguments(t, o), "}") for t in tools]
    return calls_in_text(calls, '{"name": ', tool_choice, THINK, o)


def _hermes(tools, tool_choice, reasoning, o: Options, between: str, reasoning_excludes_enabled):
    calls = [tag(f'<tool_call>{between}{{"name": "{t.name}", "arguments": ', arguments(t, o),
                 f"}}{between}</tool_call>") for t in tools]
    body = calls_in_text(calls, "<tool_call>", tool_choice, THINK, o)
    excludes = reasoning_excludes_enabled if reasoning == "enabled" else THINK
    return then(reasoning_block(reasoning, "<think>", "</think>", o, excludes, suffix="\n\n"), body)


@register_model_structural_tag("qwen_3")
def qwen_3(tools, builtin_tools, tool_choice, reasoning, **options):
    """Qwen 3: ``<tool_call>\\n{"name": NAME, "arguments": ARGS}\\n</tool_call>``; the prompt
    opens ``<think>``, ``</think>\\n\\n`` closes it."""
    return _hermes(tools, tool_choice, reasoning, Options(**options), "\n", THINK)


@register_model_structural_tag("exaone")
def exaone(tools, builtin_tools, tool_choice, reasoning, **options):
    """EXAONE 4.0: ``<tool_call>{"name": NAME, "arguments": ARGS}</tool_call>``."""
    return _hermes(tools, tool_choice, reasoning, Options(**options), "", [])


def _qwen_xml(tools, tool_choice, reasoning, **options):
    o = Options(**options)
    calls = [tag(f"<tool_call>\n<function={t.name}>\n", arguments(t, o, "qwen_xml"), "\n</function>\n</tool_call>")
             for t in tools]
    body = calls_in_text(calls, "<tool_call>\n<function=", tool_choice, THINK, o)
    return then(reasoning_block(reasoning, "<think>", "</think>", o, THINK, suffix="\n\n"), body)


@register_model_structural_tag("qwen_3_coder")
def qwen_3_coder(tools, builtin_tools, tool_choice, reasoning, **options):
    """Qwen3-Coder: ``<tool_call>\\n<function=NAME>\\n`` XML parameters ``\\n</function>\\n</tool_call>``."""
    return _qwen_xml(tools, tool_choice, reasoning, **options)


@register_model_structural_tag("qwen_3_5")
def qwen_3_5(tools, builtin_tools, tool_choice, reasoning, **options):
    """Qwen 3.5: the Qwen3-Coder call format with a ``<think>`` block."""
    return _qwen_xml(tools, tool_choice, reasoning, **options)


@register_model_structural_tag("mimo")
def mimo(tools, builtin_tools, tool_choice, reasoning, **options):
    """MiMo: ``<tool_call><function=NAME>`` XML parameters ``</function></tool_call>``; the
    model writes the whole ``<think>`` block."""
    _no_builtins("mimo", builtin_tools)
    o = Options(**options)
    stray = THINK + ["</tool_call>", "<function="]
    calls = [tag(f"<tool_call><function={t.name}>", arguments(t, o, "qwen_xml"), "</function></tool_call>")
             for t in tools]
    body = calls_in_text(calls, "<tool_call>", tool_choice, stray, o, no_call_excludes=["<tool_call>"] + stray)
    block = reasoning_block(reasoning, "<think>", "</think>", o, ["<tool_call>"] + stray, prompt_opens=False)
    return then(block, body)


_GLM_MARKERS = ["</tool_call>", "<arg_key>", "</arg_key>", "<arg_value>", "</arg_value>"]


@register_model_structural_tag("glm_4_7")
def glm_4_7(tools, builtin_tools, tool_choice, reasoning, **options):
    """GLM 4.7: ``<tool_call>NAME<arg_key>K</arg_key><arg_value>V</arg_value>...</tool_call>``."""
    o = Options(**options)
    calls = [tag(f"<tool_call>{t.name}", arguments(t, o, "glm_xml"), "</tool_call>") for t in tools]
    every_marker = THINK + ["<tool_call>"] + _GLM_MARKERS
    body = calls_in_text(calls, "<tool_call>", tool_choice, THINK + _GLM_MARKERS, o, no_call_excludes=every_marker)
    return then(reasoning_block(reasoning, "<think>", "</think>", o, every_marker), body)


@register_model_structural_tag("kimi")
def kimi(tools, builtin_tools, tool_choice, reasoning, **options):
    """Kimi K2 / K2.5: ``<|tool_calls_section_begin|>`` then calls
    ``<|tool_call_begin|>functions.NAME:INDEX<|tool_call_argument_begin|>ARGS<|tool_call_end|>``."""
    o = Options(**options)
    calls = [tag(f"<|tool_call_begin|>functions.{t.name}:",
                 seq(regex(r"\d+"), const("<|tool_call_argument_begin|>"), arguments(t, o)), "<|tool_call_end|>")
             for t in tools]
    section = Section("<|tool_calls_section_begin|>", "<|tool_calls_section_end|>")
    body = calls_in_section(calls, section, tool_choice, THINK + ["<|tool_call_begin|>"], o, no_call_excludes=THINK)
    excludes = [] if reasoning == "enabled" else THINK
    return then(reasoning_block(reasoning, "<think>", "</think>", o, excludes), body)


def _deepseek(tools, tool_choice, reasoning, o: Options, calls: List[Format], section: Section,
              no_call_section=False):
    body = calls_in_section(calls, section, tool_choice, THINK, o, no_call_section=no_call_section)
    return then(reasoning_block(reasoning, "<think>", "</think>", o, THINK), body)


_DEEPSEEK_SECTION = Section("<｜tool▁calls▁begin｜>", "<｜tool▁calls▁end｜>")


@register_model_structural_tag("deepseek_r1")
def deepseek_r1(tools, builtin_tools, tool_choice, reasoning, **options):
    """DeepSeek R1 / V3: ``<｜tool▁call▁begin｜>function<｜tool▁sep｜>NAME`` and a json code
    block, one call a line, inside ``<｜tool▁calls▁begin｜>...<｜tool▁calls▁end｜>``."""
    o = Options(**options)
    calls = [tag(f"<｜tool▁call▁begin｜>function<｜tool▁sep｜>{t.name}\n```json\n", arguments(t, o),
                 "\n```<｜tool▁call▁end｜>") for t in tools]
    section = Section(_DEEPSEEK_SECTION.begin, _DEEPSEEK_SECTION.end, separator="\n")
    return _deepseek(tools, tool_choice, reasoning, o, calls, section)


@register_model_structural_tag("deepseek_v3_1")
def deepseek_v3_1(tools, builtin_tools, tool_choice, reasoning, **options):
    """DeepSeek V3.1: ``<｜tool▁call▁begin｜>NAME<｜tool▁sep｜>ARGS<｜tool▁call▁end｜>``."""
    o = Options(**options)
    calls = [tag(f"<｜tool▁call▁begin｜>{t.name}<｜tool▁sep｜>", arguments(t, o), "<｜tool▁call▁end｜>") for t in tools]
    return _deepseek(tools, tool_choice, reasoning, o, calls, _DEEPSEEK_SECTION)


def _dsml(tools, tool_choice, reasoning, options, block: str, invoke: str, style: str, exclude_block=False):
    o = Options(**options)
    calls = [tag(f'<｜DSML｜{invoke} name="{t.name}">\n', arguments(t, o, style), f"</｜DSML｜{invoke}>\n")
             for t in tools]
    section = Section(f"<｜DSML｜{block}>\n", f"</｜DSML｜{block}>", trigger=f"<｜DSML｜{block}>", lead="\n\n")
    return _deepseek(tools, tool_choice, reasoning, o, calls, section, no_call_section=exclude_block)


@register_model_structural_tag("deepseek_v3_2")
def deepseek_v3_2(tools, builtin_tools, tool_choice, reasoning, **options):
    """DeepSeek V3.2: DSML ``<｜DSML｜function_calls>`` with ``<｜DSML｜invoke name="NAME">`` XML parameters."""
    return _dsml(tools, tool_choice, reasoning, options, "function_calls", "invoke", "deepseek_xml")


@register_model_structural_tag("deepseek_v4")
def deepseek_v4(tools, builtin_tools, tool_choice, reasoning, **options):
    """DeepSeek V4: DSML ``<｜DSML｜tool_calls>`` with ``<｜DSML｜invoke name="NAME">`` XML parameters."""
    return _dsml(tools, tool_choice, reasoning, options, "tool_calls", "invoke", "deepseek_xml")


@register_model_structural_tag("deepseek_v4_1")
def deepseek_v4_1(tools, builtin_tools, tool_choice, reasoning, **options):
    """DeepSeek V4.1: DSML ``<｜DSML｜ calls>`` with ``<｜DSML｜ invoke name="NAME">``; without
    callable tools the calls block is kept out of the text."""
    return _dsml(tools, tool_choice, reasoning, options, " calls", " invoke", "deepseek_v4_1_xml", exclude_block=True)


@register_model_structural_tag("minimax")
def minimax(tools, builtin_tools, tool_choice, reasoning, **options):
    """MiniMax M2: ``<minimax:tool_call>\\n`` then ``<invoke name="NAME">\\n`` XML parameters
    ``</invoke>\\n``, then ``</minimax:tool_call>``. Reasoning disabled: the output starts with an
    empty think block's end, ``\\n</think>\\n\\n\\n\\n``."""
    o = Options(**options)
    calls = [tag(f'<invoke name="{t.name}">\n', arguments(t, o, "minimax_xml"), "</invoke>\n") for t in tools]
    section = Section("<minimax:tool_call>\n", "</minimax:tool_call>", trigger="<minimax:tool_call>", lead="\n")
    body = calls_in_section(calls, section, tool_choice, THINK, o)
    if reasoning == "disabled":
        return seq(const("\n</think>\n\n"), const("\n\n"), body)
    excludes = [] if reasoning == "enabled" else THINK
    return then(reasoning_block(reasoning, "<think>", "</think>", o, excludes, suffix="\n\n"), body)


_M3 = "]<]minimax[>["


@register_model_structural_tag("minimax_m3")
def minimax_m3(tools, builtin_tools, tool_choice, reasoning, **options):
    """MiniMax M3: namespaced ``]<]minimax[>[<tool_call>`` blocks of ``<invoke name="NAME">``
    calls, reasoning in ``<mm:think>``; with reasoning "auto" a lone ``</mm:think>`` may skip it."""
    _no_builtins("minimax_m3", builtin_tools)
    o = Options(**options)
    stray = ["<mm:think>", "</mm:think>", _M3 + "</tool_call>", _M3 + "<invoke", _M3 + "</invoke>"]
    trigger = _M3 + "<tool_call>"
    calls = [tag(f'{_M3}<invoke name="{t.name}">', arguments(t, o, "minimax_m3_xml"), _M3 + "</invoke>\n")
             for t in tools]
    check_callable(calls, tool_choice)
    if not calls:
        body = text(o.excludes([trigger] + stray))
    elif tool_choice == "forced":
        body = tag(trigger + "\n", calls[0], _M3 + "</tool_call>")
    else:
        block = tag(trigger + "\n", separated(calls, "", o), _M3 + "</tool_call>")
        body = triggered([trigger], [block], o.excludes(stray), o, at_least_one=tool_choice == "required")
    prefix = reasoning_block(reasoning, "<mm:think>", "</mm:think>", o, [trigger] + stray)
    if reasoning == "auto":
        prefix = optional(either(prefix["content"], const("</mm:think>")))
    return then(prefix, body)


@register_model_structural_tag("kimi_k3")
def kimi_k3(tools, builtin_tools, tool_choice, reasoning, **options):
    """Kimi K3: ``<|open|>NAME<|sep|>...<|close|>NAME<|sep|>`` blocks: think (opened by the
    prompt when enabled), response (opened by the prompt when reasoning is disabled), tools
    with ``call tool="NAME" index="N"`` calls, then ``<|close|>message<|sep|>``."""
    o = Options(**options)
    markers = ["<|open|>", "<|close|>"]
    calls = [tag(f'<|open|>call tool="{t.name}" index="',
                 seq(regex(r"\d+"), const('"<|sep|>'),
                     arguments(t, o, "kimi_k3_xml", excludes=o.excludes(markers + ["<|sep|>"]))),
                 "<|close|>call<|sep|>") for t in tools]
    check_callable(calls, tool_choice)
    begin, end = "<|open|>tools<|sep|>", "<|close|>tools<|sep|>"
    elements = []
    think = reasoning_block(reasoning, "<|open|>think<|sep|>", "<|close|>think<|sep|>", o, markers)
    if think is not None:
        elements.append(think)
    response_begin = "" if reasoning == "disabled" else "<|open|>response<|sep|>"
    elements.append(tag(response_begin, text(o.excludes(markers)), "<|close|>response<|sep|>"))
    if calls and tool_choice == "auto":
        elements.append(optional(tag(begin, separated(calls, "", o), end)))
    elif calls and tool_choice == "required":
        elements.append(seq(const(begin), separated(calls, "", o), const(end)))
    elif calls:
        elements.append(seq(const(begin), calls[0], const(end)))
    elements.append(const("<|close|>message<|sep|>"))
    return seq(*elements)


@register_model_structural_tag("cohere")
def cohere(tools, builtin_tools, tool_choice, reasoning, **options):
    """Cohere Command: ``<cofl:tool_calls>`` of ``<cofl:tool_call id="N" name="NAME">`` XML
    parameters ``</cofl:tool_call>``; reasoning between ``<|START_THINKING|>`` and ``<|END_THINKING|>``."""
    o = Options(**options)
    think = ["<|START_THINKING|>", "<|END_THINKING|>"]
    calls = [tag('<cofl:tool_call id="', seq(regex(r"\d+"), const(f'" name="{t.name}">'),
                                             arguments(t, o, "cohere_xml")), "</cofl:tool_call>") for t in tools]
    body = calls_in_section(calls, Section("<cofl:tool_calls>", "</cofl:tool_calls>"), tool_choice, think, o)
    excludes = [] if reasoning == "enabled" else think
    return then(reasoning_block(reasoning, think[0], think[1], o, excludes), body)


_HARMONY_END = ["<|end|>", "<|return|>"]
_NEXT_MESSAGE = "<|start|>assistant"


def _harmony_calls(tool: Tool, o: Options) -> List[Format]:
    args = arguments(tool, o)
    if tool.type == "function":
        recipient = f"functions.{tool.name}"
        # The first form is the one OpenAI's harmony format documents and gpt-oss writes
        # (" <|constrain|>json", with the space); xgrammar 0.2.8 has the three others only.
        heads = [f"<|channel|>commentary to={recipient} <|constrain|>json<|message|>",
                 f"<|channel|>commentary to={recipient}<|constrain|>json<|message|>",
                 f" to={recipient}<|channel|>commentary <|constrain|>json<|message|>",
                 f" to={recipient}<|channel|>commentary json<|message|>"]
    else:
        heads = [f"<|channel|>commentary to={tool.name} code<|message|>",
                 f" to={tool.name}<|channel|>commentary code<|message|>"]
    return [tag(head, args, "<|call|>") for head in heads]


@register_model_structural_tag("harmony")
def harmony(tools, builtin_tools, tool_choice, reasoning, **options):
    """gpt-oss (OpenAI Harmony): messages after the prompt's ``<|start|>assistant``, each a
    channel: ``analysis`` (reasoning), ``final`` (the answer; not under required / forced) or a
    ``commentary`` tool call ending in ``<|call|>``; ``<|start|>assistant`` between messages."""
    o = Options(**options)
    callable_tools = builtin_tools + tools if tool_choice == "required" else tools + builtin_tools
    calls = [c for t in callable_tools for c in _harmony_calls(t, o)]
    messages = []
    if tool_choice == "auto":
        messages.append(tag("<|channel|>final<|message|>", text(), _HARMONY_END))
    if reasoning != "disabled":
        messages.append(tag("<|channel|>analysis<|message|>", text(), _HARMONY_END))
    if o.parallel_tool_calls or not calls:
        return {"type": "tags_with_separator", "tags": calls + messages, "separator": _NEXT_MESSAGE}
    # One call at most, and it ends the turn: any number of other messages, then the call.
    one_call = {"type": "tags_with_separator", "tags": calls, "separator": _NEXT_MESSAGE, "at_least_one": True,
                "stop_after_first": True}
    if not messages:
        return optional(one_call)
    any_messages = {"type": "tags_with_separator", "tags": messages, "separator": _NEXT_MESSAGE}
    some_messages = dict(any_messages, at_least_one=True)
    return either(any_messages, one_call, seq(some_messages, const(_NEXT_MESSAGE), one_call))
