"""``sglang serve --grammar-backend xg2``, started with the command the README documents.

The CLI must accept the name (the plugin adds it to the argparse choices), and the native
``/generate`` endpoint and the OpenAI endpoints must return constrained output. Every wait
is bounded; the server's process group is terminated afterwards.
"""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path
from typing import Any, Iterator

import pytest

pytest.importorskip("sglang")
requests = pytest.importorskip("requests")
jsonschema = pytest.importorskip("jsonschema")

from sglang_fixtures import sglang_server, sglang_tiny_llama  # noqa: E402,F401

# The README's SGLang CPU command, verbatim, with MODEL replaced by the tiny model's path (the
# test adds only `--port`). On a CPU-only install SGLang needs SGLANG_USE_CPU_ENGINE=1 (without
# it the scheduler imports vLLM's CUDA ops) and a CPU attention and sampling backend.
DOCUMENTED_ENV = {"SGLANG_USE_CPU_ENGINE": "1"}
DOCUMENTED_COMMAND = (
    "sglang serve --model-path MODEL --grammar-backend xg2 --device cpu --attention-backend torch_native"
    " --sampling-backend pytorch --disable-cuda-graph --disable-overlap-schedule --max-total-tokens 4096"
    " --constrained-json-disable-any-whitespace --tool-call-parser llama3"
)
REQUEST_TIMEOUT_S = 120
SCHEMA = {
    "type": "object",
    "properties": {"color": {"type": "string", "enum": ["red", "blue"]}, "n": {"type": "integer", "minimum": 1, "maximum": 9}},
    "required": ["color", "n"],
    "additionalProperties": False,
}
REGEX = r"(yes|no), [0-9]"
LLAMA3_EOT = 128009  # <|eot_id|>, one of the model's EOS ids
TOOLS = [
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


@pytest.fixture(scope="module")
def server(sglang_tiny_llama: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:  # noqa: F811
    """Base URL of a running ``sglang serve`` with the xg2 backend."""
    words = shlex.split(DOCUMENTED_COMMAND)
    assert words[:2] == ["sglang", "serve"]
    arguments = [str(sglang_tiny_llama) if word == "MODEL" else word for word in words[2:]]
    log_path = tmp_path_factory.mktemp("sglang-serve") / "server.log"
    with sglang_server(arguments, log_path, env=DOCUMENTED_ENV) as base:
        yield base


def test_cli_selects_xg2(server: str) -> None:
    info = requests.get(server + "/get_server_info", timeout=REQUEST_TIMEOUT_S).json()
    assert info["grammar_backend"] == "xg2"


def test_generate_endpoint_is_constrained(server: str) -> None:
    response = requests.post(
        server + "/generate",
        json={"text": "Answer:", "sampling_params": {"max_new_tokens": 16, "temperature": 0, "regex": REGEX}},
        timeout=REQUEST_TIMEOUT_S,
    )
    assert response.status_code == 200, response.text
    assert re.fullmatch(REGEX, response.json()["text"]), response.json()


def test_generate_endpoint_reports_an_invalid_grammar(server: str) -> None:
    response = requests.post(
        server + "/generate",
        json={"text": "x", "sampling_params": {"max_new_tokens": 8, "ebnf": "root ::= ("}},
        timeout=REQUEST_TIMEOUT_S,
    )
    assert response.status_code == 400, response.text
    assert "GrammarSyntaxError" in response.text


def test_openai_chat_json_schema(server: str) -> None:
    response = requests.post(
        server + "/v1/chat/completions",
        json={
            "model": "default",
            "messages": [{"role": "user", "content": "Pick a color."}],
            "max_tokens": 32,
            "temperature": 0,
            "response_format": {"type": "json_schema", "json_schema": {"name": "pick", "schema": SCHEMA}},
        },
        timeout=REQUEST_TIMEOUT_S,
    )
    assert response.status_code == 200, response.text
    value = json.loads(response.json()["choices"][0]["message"]["content"])
    assert value["color"] in ("red", "blue") and 1 <= value["n"] <= 9 and set(value) == {"color", "n"}


def test_openai_completions_regex(server: str) -> None:
    response = requests.post(
        server + "/v1/completions",
        json={"model": "default", "prompt": "Answer:", "max_tokens": 16, "temperature": 0, "regex": REGEX},
        timeout=REQUEST_TIMEOUT_S,
    )
    assert response.status_code == 200, response.text
    assert re.fullmatch(REGEX, response.json()["choices"][0]["text"]), response.json()


@pytest.fixture(scope="module")
def whitespace_token_ids(sglang_tiny_llama: Path) -> list[int]:  # noqa: F811
    """Ids of the tokens that are only whitespace."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(sglang_tiny_llama))
    texts = tokenizer.batch_decode([[i] for i in range(len(tokenizer))])
    return [i for i, text in enumerate(texts) if text and text.isspace()]


@pytest.mark.parametrize("tool_choice", ["required", {"type": "function", "function": {"name": "get_time"}}])
def test_openai_tool_call(server: str, whitespace_token_ids: list[int], tool_choice: Any) -> None:
    # With --tool-call-parser llama3, SGLang constrains tool_choice "required" and a named
    # function with its legacy structural tag (at_least_one; strict tools carry their schema).
    # Biases steer the random model without loosening the grammar: <|eot_id|> up, so it ends
    # right after the call where the grammar first allows it; whitespace-only tokens down,
    # since structural-tag JSON keeps flexible whitespace and a random model pads with it.
    bias = {str(i): -100 for i in whitespace_token_ids}
    bias[str(LLAMA3_EOT)] = 100
    response = requests.post(
        server + "/v1/chat/completions",
        json={
            "model": "default",
            "messages": [{"role": "user", "content": "What is the weather in Oslo?"}],
            "tools": TOOLS,
            "tool_choice": tool_choice,
            "max_tokens": 48,
            "temperature": 0,
            "logit_bias": bias,
        },
        timeout=REQUEST_TIMEOUT_S,
    )
    assert response.status_code == 200, response.text
    message = response.json()["choices"][0]["message"]
    assert message.get("tool_calls"), response.json()
    schemas = {tool["function"]["name"]: tool["function"]["parameters"] for tool in TOOLS}
    for call in message["tool_calls"]:
        name = call["function"]["name"]
        assert name in schemas, call
        jsonschema.validate(json.loads(call["function"]["arguments"]), schemas[name])


def test_readme_shows_the_command_this_module_starts() -> None:
    """The README's SGLang CPU command is the one the server fixture runs (env, words, order)."""
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    flat = " ".join(readme.replace("\\\n", " ").replace(".venv-sglang/bin/", "").split())
    env = " ".join(f"{name}={value}" for name, value in DOCUMENTED_ENV.items())
    assert f"{env} {DOCUMENTED_COMMAND}" in flat
