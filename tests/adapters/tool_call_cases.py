"""Tool-calling requests shared by the vLLM and SGLang server tests, and the check of their answers.

The tools are strict (OpenAI's ``strict: true``), which is what makes both engines put each
tool's parameter schema into the grammar: without it vLLM and SGLang constrain only the call's
envelope and leave the arguments free (``json_schema: true``). The schemas are bounded (enums,
integer ranges), so under tool_choice "required" or a named function the grammar leaves a
random-weights model a finite set of complete calls: the call must end where the grammar lets
it, whatever the model prefers.
"""

from __future__ import annotations

import json
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
