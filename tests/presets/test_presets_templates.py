"""Every model preset against its family's own chat template and a real tokenizer.

For BFCL tool sets (simple, multiple and, where the format has several calls per reply,
parallel), the reply the chat template renders for the ground-truth calls is accepted token by
token (each token also in the mask) under tool_choice auto, required and the named function,
and the family's parser reads the same calls back. Malformed replies are rejected: a wrong tool
name, schema-invalid arguments, a missing end tag, an excluded string in free text.

Tokenizers: the family's own where the data has it (llama3.1, qwen2.5, qwen3, gpt-oss, Mistral
tekken); otherwise the closest available, named in FAMILIES: DeepSeek V3.x / V4 -> llama3.1
(both 128K byte-level BPE), Kimi K2 -> gpt-oss (both tiktoken-style BPE), GLM 4.x, MiniMax and
Kimi K3 -> qwen3 (~151K-200K byte-level BPE). With those, the families' special tokens are
ordinary text.

The families whose arguments use the XML json_schema styles (minimax, minimax_m3, kimi_k3,
deepseek_v3_2, deepseek_v4) compile only once the native frontend has those styles.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any, Dict, Optional

import pytest

from xg2_plugin.presets import MODEL_FAMILIES, get_model_structural_tag

from preset_support import BfclCase, accepts, bfcl_cases, cut, parse_calls, render_reply, tokenizer


@dataclass
class Spec:
    family: str
    template: str
    tokenizer: str
    end: Optional[str]  # end-of-turn marker after the reply (a stop token), if any
    parallel: bool = True  # the template renders several calls in one reply
    kwargs: Dict[str, Any] = field(default_factory=dict)
    reasoning: str = "disabled"  # the mode the rendered reply is in
    thinking: Optional[str] = None  # reasoning text passed to the template
    prefix: str = ""  # what the model writes before the rendered reply (prompt-opened reasoning)
    none_allows_call_text: bool = False  # under tool_choice "none", free text may spell a call


# xgrammar's families whose free text under tool_choice="none" does not keep the call opener
# out (xgrammar 0.2.8's language, kept): a call spelled there is plain text.
_NONE_ALLOWS_CALL_TEXT = {"llama", "qwen_3", "qwen_3_coder", "qwen_3_5", "exaone", "kimi", "deepseek_r1",
                          "deepseek_v3_1", "deepseek_v3_2", "deepseek_v4", "minimax", "cohere"}


FAMILIES = [
    Spec("llama3_json", "meta-llama-Llama-3.1-8B-Instruct.jinja", "llama3.1", "<|eot_id|>", parallel=False),
    Spec("llama3_json", "meta-llama-Llama-3.3-70B-Instruct.jinja", "llama3.1", "<|eot_id|>", parallel=False),
    Spec("qwen", "Qwen-Qwen2.5-7B-Instruct.jinja", "qwen2.5", "<|im_end|>"),
    Spec("qwen", "Qwen-Qwen3-0.6B.jinja", "qwen3", "<|im_end|>", reasoning="enabled", thinking="The user asks."),
    Spec("qwen", "NousResearch-Hermes-3-Llama-3.1-8B-tool_use.jinja", "llama3.1", "<|im_end|>"),
    Spec("qwen3_coder", "Qwen3-Coder.jinja", "qwen3", "<|im_end|>"),
    Spec("deepseek_v3", "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja", "qwen2.5", "<｜end▁of▁sentence｜>"),
    Spec("deepseek_v3", "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja", "qwen2.5", "<｜end▁of▁sentence｜>",
         kwargs={"enable_thinking": True}, reasoning="enabled", prefix="Let me think.\n</think>\n\n"),
    Spec("deepseek_v3_1", "deepseek-ai-DeepSeek-V3.1.jinja", "llama3.1", "<｜end▁of▁sentence｜>"),
    Spec("deepseek_v3_1", "deepseek-ai-DeepSeek-V3.1.jinja", "llama3.1", "<｜end▁of▁sentence｜>",
         kwargs={"thinking": True}, reasoning="enabled", prefix="Let me think."),
    Spec("kimi_k2", "Kimi-K2-Instruct.jinja", "gpt-oss", "<|im_end|>"),
    Spec("kimi_k2", "Kimi-K2-Thinking.jinja", "gpt-oss", "<|im_end|>", reasoning="enabled", thinking="The user asks."),
    Spec("glm4", "GLM-4.6.jinja", "qwen3", None, kwargs={"enable_thinking": False}),
    Spec("glm4", "GLM-4.6.jinja", "qwen3", None, reasoning="enabled"),
    Spec("glm4_7", "GLM-4.7-Flash.jinja", "qwen3", None, kwargs={"enable_thinking": False}),
    Spec("glm4_7", "GLM-4.7-Flash.jinja", "qwen3", None, reasoning="enabled", prefix="Let me think."),
    Spec("harmony", "openai-gpt-oss-120b.jinja", "gpt-oss", None, parallel=False, reasoning="enabled",
         thinking="The user asks."),
    Spec("mistral", "unsloth-mistral-Devstral-Small-2507.jinja", "tekken", None),
    # xgrammar's families.
    Spec("llama", "meta-llama-Llama-3.1-8B-Instruct.jinja", "llama3.1", "<|eot_id|>", parallel=False),
    Spec("qwen_3", "Qwen-Qwen2.5-7B-Instruct.jinja", "qwen2.5", "<|im_end|>"),
    Spec("qwen_3", "Qwen-Qwen3-0.6B.jinja", "qwen3", "<|im_end|>", reasoning="auto", thinking="The user asks."),
    Spec("qwen_3", "Qwen-Qwen3-0.6B.jinja", "qwen3", "<|im_end|>", kwargs={"enable_thinking": False}),
    Spec("qwen_3_coder", "Qwen3-Coder.jinja", "qwen3", "<|im_end|>"),
    Spec("qwen_3_5", "Qwen3.5-4B.jinja", "qwen3", "<|im_end|>", reasoning="enabled", thinking="The user asks."),
    Spec("qwen_3_5", "Qwen3.5-4B.jinja", "qwen3", "<|im_end|>", kwargs={"enable_thinking": False}),
    Spec("glm_4_7", "GLM-4.7-Flash.jinja", "qwen3", None, reasoning="enabled", thinking="The user asks."),
    Spec("glm_4_7", "GLM-4.7-Flash.jinja", "qwen3", None, kwargs={"enable_thinking": False}),
    Spec("kimi", "Kimi-K2-Instruct.jinja", "gpt-oss", "<|im_end|>"),
    Spec("kimi", "Kimi-K2-Thinking.jinja", "gpt-oss", "<|im_end|>", reasoning="auto", thinking="The user asks."),
    Spec("deepseek_r1", "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja", "qwen2.5", "<｜end▁of▁sentence｜>"),
    # (xgrammar's deepseek_r1 puts nothing between </think> and a required call.)
    Spec("deepseek_r1", "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja", "qwen2.5", "<｜end▁of▁sentence｜>",
         kwargs={"enable_thinking": True}, reasoning="enabled", prefix="Let me think.\n</think>"),
    Spec("deepseek_v3_2", "deepseek-ai-DeepSeek-V3.2.jinja", "llama3.1", "<｜end▁of▁sentence｜>",
         kwargs={"thinking": True}, reasoning="enabled", thinking="The user asks."),
    Spec("deepseek_v4", "deepseek-ai-DeepSeek-V4.jinja", "llama3.1", "<｜end▁of▁sentence｜>"),
    Spec("minimax", "MiniMax-M2.jinja", "qwen3", "[e~[", reasoning="enabled", thinking="The user asks."),
    Spec("minimax_m3", "MiniMax-M3.jinja", "qwen3", "[e~[", reasoning="auto", thinking="The user asks."),
    Spec("kimi_k3", "Kimi-K3.jinja", "qwen3", "<|end_of_msg|>", reasoning="enabled", thinking="The user asks."),
]
for _spec in FAMILIES:
    _spec.none_allows_call_text = _spec.family in _NONE_ALLOWS_CALL_TEXT

# Families no chat template in the data renders: mimo (MiMo-VL.jinja writes Qwen's JSON calls,
# not MiMo V2.6's XML), exaone, cohere (Cohere2MoE.jinja writes <|START_ACTION|> JSON, not
# <cofl:tool_calls>), deepseek_v4_1 (V4-Flash-0731.jinja writes V4's DSML); and
# llama3_function, which no template renders in history. test_presets.py and
# test_presets_walks.py check them on hand-written replies and walks.
UNRENDERED = {"mimo", "exaone", "cohere", "deepseek_v4_1", "llama3_function"}


def _id(spec: Spec) -> str:
    return f"{spec.family}-{spec.template.replace('.jinja', '')}-{spec.reasoning}"


def _cases(spec: Spec):
    cases = bfcl_cases("simple", 2) + bfcl_cases("multiple", 2)
    if spec.parallel:
        cases += bfcl_cases("parallel", 1)
    return cases


PARAMS = [pytest.param(spec, i, id=f"{_id(spec)}-{i}") for spec in FAMILIES for i in range(5 if spec.parallel else 4)]


def reply_for(spec: Spec, case: BfclCase) -> str:
    reply = render_reply(spec.template, case, reasoning=spec.thinking, **spec.kwargs)
    return spec.prefix + cut(reply, spec.end)


def grammar_for(spec: Spec, case: BfclCase, tool_choice: Any, tools=None):
    tag = get_model_structural_tag(spec.family, tools if tools is not None else case.tools, tool_choice,
                                   reasoning=spec.reasoning)
    return tokenizer(spec.tokenizer).compiler.compile_structural_tag(tag)


def test_every_family_is_checked_here():
    assert {s.family for s in FAMILIES} | UNRENDERED == set(MODEL_FAMILIES)


@pytest.mark.parametrize("spec,index", PARAMS)
def test_rendered_reply_is_accepted_token_by_token(spec: Spec, index: int):
    case = _cases(spec)[index]
    tok = tokenizer(spec.tokenizer)
    reply = reply_for(spec, case)
    schemas = {t["function"]["name"]: t["function"]["parameters"] for t in case.tools}
    assert parse_calls(spec.family, reply, schemas) == [(n, a) for n, a in case.calls], reply
    choices = ["auto", "required"]
    if len(case.calls) == 1:
        choices.append({"type": "function", "function": {"name": case.calls[0][0]}})
    for choice in choices:
        assert accepts(tok, grammar_for(spec, case, choice), reply), (choice, reply)
    # No tool may be called under tool_choice="none" (where the format keeps calls out of text).
    if not spec.none_allows_call_text:
        assert not accepts(tok, grammar_for(spec, case, "none"), reply)


def _bad_arguments(case: BfclCase) -> Optional[BfclCase]:
    """The case with one argument of the wrong JSON type (a non-string member gets a string or
    a string member with an enum gets a value outside it); None when there is no such member."""
    name, args = case.calls[0]
    schema = next(t["function"]["parameters"] for t in case.tools if t["function"]["name"] == name)
    for key, value in args.items():
        member = schema["properties"][key]
        bad: Any = None
        if member.get("type") in ("integer", "number", "boolean"):
            bad = {"nested": "object"}
        elif member.get("type") == "string" and "enum" in member:
            bad = "not-one-of-the-enum-values"
        if bad is not None:
            broken = copy.deepcopy(case)
            broken.calls[0] = (name, {**args, key: bad})
            return broken
    return None


@pytest.mark.parametrize("spec", FAMILIES, ids=_id)
def test_malformed_replies_are_rejected(spec: Spec):
    tok = tokenizer(spec.tokenizer)
    cases = bfcl_cases("simple", 12)
    case = next(c for c in cases if _bad_arguments(c) is not None)
    name = case.calls[0][0]
    required = grammar_for(spec, case, "required")
    auto = grammar_for(spec, case, "auto")
    reply = reply_for(spec, case)
    assert accepts(tok, required, reply)

    # A tool that is not among the tools.
    renamed = copy.deepcopy(case)
    renamed.calls[0] = (name + "_unknown", case.calls[0][1])
    assert not accepts(tok, required, reply_for(spec, renamed))
    # Arguments the schema rejects.
    assert not accepts(tok, required, reply_for(spec, _bad_arguments(case)))
    # A required argument left out.
    schema = case.tools[0]["function"]["parameters"]
    missing = copy.deepcopy(case)
    dropped = schema["required"][0]
    missing.calls[0] = (name, {k: v for k, v in case.calls[0][1].items() if k != dropped})
    assert not accepts(tok, required, reply_for(spec, missing))
    # The call cut before its end tag (the last marker of the reply's format).
    ends = {"llama3_json": "}", "qwen": "</tool_call>", "qwen3_coder": "</tool_call>", "deepseek_v3": "<｜tool▁calls▁end｜>",
            "deepseek_v3_1": "<｜tool▁calls▁end｜>", "kimi_k2": "<|tool_calls_section_end|>", "glm4": "</tool_call>",
            "glm4_7": "</tool_call>", "harmony": "<|call|>", "mistral": "}", "llama": "}", "qwen_3": "</tool_call>",
            "qwen_3_coder": "</tool_call>", "qwen_3_5": "</tool_call>", "glm_4_7": "</tool_call>",
            "kimi": "<|tool_calls_section_end|>", "deepseek_r1": "<｜tool▁calls▁end｜>",
            "deepseek_v3_2": "</｜DSML｜function_calls>", "deepseek_v4": "</｜DSML｜tool_calls>",
            "minimax": "</minimax:tool_call>", "minimax_m3": "]<]minimax[>[</tool_call>",
            "kimi_k3": "<|close|>message<|sep|>"}
    end = ends[spec.family]
    assert reply.endswith(end), reply
    assert not accepts(tok, required, reply[: -len(end)])
    assert not accepts(tok, auto, reply[: -len(end)])
    # Excluded strings in free text: the think tags (and, for Llama JSON, the call opener).
    if spec.family in ("qwen", "qwen3_coder", "kimi_k2", "glm4") and spec.reasoning == "disabled":
        assert accepts(tok, grammar_for(spec, case, "none"), "Sure, no tool is needed.")
        assert not accepts(tok, grammar_for(spec, case, "none"), "Sure <think> no tool.")
        assert not accepts(tok, auto, "Calling it.</think>" + reply)
    if spec.family == "llama3_json":
        assert not accepts(tok, auto, 'I will call {"name": "x"}')
