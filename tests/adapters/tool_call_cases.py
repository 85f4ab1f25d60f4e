"""Tool-calling requests shared by the vLLM and SGLang server tests, and the check of their answers.

The tools are strict (OpenAI's ``strict: true``), which is what makes both engines put each
tool's parameter schema into the grammar: without it vLLM and SGLang constrain only the call's
envelope and leave the arguments free (``json_schema: true``). The schemas are bounded (enums,
integer ranges), so under tool_choice "required" or a named function the grammar leaves a
random-weights model a finite set of calls up to whitespace: the call must end where the
grammar lets it, whatever the model prefers. The grammar lets whitespace surround each XML
argument value (as xgrammar's qwen_xml does), which the engines' Qwen3-Coder parsers keep in
the value, and a random model pads with it; so the requests bias every token that contains
whitespace down. That steers the model without loosening the grammar: where every allowed
token contains whitespace (the format's own newlines), one of them is still chosen.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

import jsonschema

TOOLS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Weather forecast for a city.",
            "strict": True,
            "parameters": {
                "type": "object",
                "properties": {
                    "city": {"type": "string", "enum": ["Paris", "Oslo"]},
                    "days": {"type": "integer", "minimum": 1, "maximum": 7},
                },
                "required": ["city", "days"],
                "additionalProperties": False,
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "get_time",
            "description": "Local time in a time zone.",
            "strict": True,
            "parameters": {
                "type": "object",
                "properties": {"zone": {"type": "string", "enum": ["UTC", "CET"]}},
                "required": ["zone"],
                "additionalProperties": False,
            },
        },
    },
]
NAMED_TOOL = "get_time"
MESSAGES = [{"role": "user", "content": "What is the weather in Oslo, and the time there?"}]
# tool_choice values: "required" (any one of TOOLS; parallel_tool_calls false, so the grammar
# ends after one call) and one named function.
TOOL_CHOICES = {
    "required": "required",
    "named": {"type": "function", "function": {"name": NAMED_TOOL}},
}
# Generous: a call is about 60 tokens; the grammar, not the budget, must end the output.
MAX_TOKENS = 256


@functools.lru_cache(maxsize=None)
def whitespace_bias(tokenizer_dir: Path) -> dict[str, int]:
    """A ``logit_bias`` that pushes down every token of the model's tokenizer that contains whitespace."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(tokenizer_dir))
    texts = tokenizer.batch_decode([[i] for i in range(len(tokenizer))])
    return {str(i): -100 for i, text in enumerate(texts) if any(c.isspace() for c in text)}


def check_tool_call(message: dict[str, Any], case: str) -> None:
    """The message holds exactly one call, to an allowed tool, with arguments valid for it.

    Args:
        message: the response's ``choices[0].message`` as JSON.
        case: a key of ``TOOL_CHOICES``.
    """
    calls = message.get("tool_calls") or []
    assert len(calls) == 1, message
    function = calls[0]["function"]
    schemas = {tool["function"]["name"]: tool["function"]["parameters"] for tool in TOOLS}
    if case == "named":
        assert function["name"] == NAMED_TOOL, function
    assert function["name"] in schemas, function
    jsonschema.validate(json.loads(function["arguments"]), schemas[function["name"]])
