"""``sgl.Engine(grammar_backend="xg2")`` on the CPU with a tiny random-weights Llama.

Random weights make the model's choices arbitrary, so every grammar here is bounded: the
output is then a complete sentence of the grammar whatever the model prefers, and each check
is that SGLang's output validates and ended on an EOS token.
"""

from __future__ import annotations

import asyncio
import json
import re
from typing import Any

import pytest

pytest.importorskip("sglang")

from sglang_fixtures import LLAMA3_EOS_IDS, sglang_engine, sglang_tiny_llama  # noqa: E402,F401

from xg2_plugin import GrammarCompiler  # noqa: E402
from xg2_plugin.testing import ebnf_accepts  # noqa: E402

SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "enum": ["ada", "bob"]},
        "age": {"type": "integer", "minimum": 0, "maximum": 99},
        "ok": {"type": "boolean"},
    },
    "required": ["name", "age", "ok"],
    "additionalProperties": False,
}
REGEX = r"(red|green|blue)-[0-9]{2}"
EBNF = 'root ::= "(" item ("," item)? ")"\nitem ::= "yes" | "no"'
# Tag content is a regex: JSON inside structural tags always allows free whitespace, which a
# random model would pick forever (the backend tests walk JSON tag content token by token).
STRUCTURAL_TAG = {
    "type": "structural_tag",
    "format": {"type": "tag", "begin": "<call>", "content": {"type": "regex", "pattern": REGEX}, "end": "</call>"},
}


def params(**constraint: Any) -> dict[str, Any]:
    return {"max_new_tokens": 40, "temperature": 0, **constraint}


def assert_valid_json(text: str) -> None:
    value = json.loads(text)
    assert set(value) == {"name", "age", "ok"}
    assert value["name"] in ("ada", "bob") and 0 <= value["age"] <= 99 and isinstance(value["ok"], bool)


def assert_stopped_on_eos(output: dict[str, Any]) -> None:
    finish = output["meta_info"]["finish_reason"]
    assert finish["type"] == "stop" and finish["matched"] in LLAMA3_EOS_IDS, finish


def test_json_regex_and_ebnf_requests_produce_valid_output(sglang_engine: Any) -> None:  # noqa: F811
    outputs = sglang_engine.generate(
        ["A person:", "A color code:", "Answer:"],
        [params(json_schema=json.dumps(SCHEMA)), params(regex=REGEX), params(ebnf=EBNF)],
    )
    json_out, regex_out, ebnf_out = outputs
    assert_valid_json(json_out["text"])
    assert re.fullmatch(REGEX, regex_out["text"]), regex_out["text"]
    assert ebnf_accepts(EBNF, ebnf_out["text"]), ebnf_out["text"]
    for output in outputs:
        assert_stopped_on_eos(output)


def test_mixed_batch_leaves_unconstrained_requests_free(sglang_engine: Any) -> None:  # noqa: F811
    prompts = ["One", "Two", "Three", "Four"]
    outputs = sglang_engine.generate(
        prompts,
        [params(regex=REGEX), {"max_new_tokens": 12, "temperature": 0}, params(json_schema=json.dumps(SCHEMA)),
         {"max_new_tokens": 12, "temperature": 0}],
    )
    assert re.fullmatch(REGEX, outputs[0]["text"])
    assert_valid_json(outputs[2]["text"])
    for free in (outputs[1], outputs[3]):
        # The random model never picks an EOS on its own within 12 tokens: it runs to the
        # length limit, and its text is not forced into any grammar.
        assert free["meta_info"]["finish_reason"]["type"] == "length"
        assert free["meta_info"]["completion_tokens"] == 12
        assert not re.fullmatch(REGEX, free["text"])


def test_invalid_grammar_fails_only_its_request(sglang_engine: Any) -> None:  # noqa: F811
    async def run() -> list[Any]:
        return await asyncio.gather(
            sglang_engine.async_generate("a", params(regex=REGEX)),
            sglang_engine.async_generate("b", params(regex="(unclosed")),
            sglang_engine.async_generate("c", params(json_schema='{"type": "object", "properties": 3}')),
            sglang_engine.async_generate("d", {"max_new_tokens": 4, "temperature": 0}),
            return_exceptions=True,
        )

    good, bad_regex, bad_schema, free = sglang_engine.loop.run_until_complete(run())
    assert isinstance(bad_regex, ValueError) and "RegexError" in str(bad_regex)
    assert isinstance(bad_schema, ValueError) and "SchemaError" in str(bad_schema)
    assert re.fullmatch(REGEX, good["text"])
    assert free["meta_info"]["completion_tokens"] == 4
    # The engine keeps serving after the failures.
    assert re.fullmatch(REGEX, sglang_engine.generate("e", params(regex=REGEX))["text"])


@pytest.mark.skipif(
    not hasattr(GrammarCompiler, "compile_structural_tag"), reason="structural tags are not in this engine yet"
)
def test_structural_tag_request_produces_valid_output(sglang_engine: Any) -> None:  # noqa: F811
    output = sglang_engine.generate("Call:", params(structural_tag=json.dumps(STRUCTURAL_TAG)))
    match = re.fullmatch(r"<call>(.*)</call>", output["text"], re.S)
    assert match and re.fullmatch(REGEX, match.group(1)), output["text"]
    assert_stopped_on_eos(output)


@pytest.mark.skipif(
    hasattr(GrammarCompiler, "compile_structural_tag"), reason="the engine supports structural tags"
)
def test_structural_tag_without_engine_support_fails_clearly(sglang_engine: Any) -> None:  # noqa: F811
    with pytest.raises(ValueError, match="compile_structural_tag is missing"):
        sglang_engine.generate("Call:", params(structural_tag=json.dumps(STRUCTURAL_TAG)))
