"""``sglang serve --grammar-backend xg2``, started with the command the README documents.

The CLI must accept the name (the plugin adds it to the argparse choices), and the native
``/generate`` endpoint and the OpenAI endpoints must return constrained output. Every wait
is bounded; the server's process group is terminated afterwards.

The server runs the tiny Qwen3 model with ``--tool-call-parser qwen3_coder``: for tool_choice
"required" and a named function, SGLang's ``FunctionCallParser.get_structure_constraint`` asks
the Qwen3-Coder detector for a model-native structural tag, which it builds with xgrammar's
``get_model_structural_tag("qwen_3_coder", ...)`` and sends as the request's ``structural_tag``:
the call's arguments are a ``json_schema`` content of style ``qwen_xml``. The response's
``tool_calls`` are what SGLang's Qwen3-Coder detector parses back from the generated text, so a
valid call shows the backend enforced the XML format and the tool's schema at every step. The
tokenizer's own (Qwen3) chat template renders the prompt; the grammar sets the output format.
"""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path
from typing import Iterator

import pytest

pytest.importorskip("sglang")
requests = pytest.importorskip("requests")
pytest.importorskip("jsonschema")  # tool_call_cases validates the arguments with it

from sglang_fixtures import sglang_server, sglang_tiny_qwen3  # noqa: E402,F401
from tool_call_cases import MAX_TOKENS, MESSAGES, TOOL_CHOICES, TOOLS, check_tool_call, whitespace_bias  # noqa: E402

# The README's SGLang CPU command, verbatim, with MODEL replaced by the tiny model's path (the
# test adds only `--port`). On a CPU-only install SGLang needs SGLANG_USE_CPU_ENGINE=1 (without
# it the scheduler imports vLLM's CUDA ops) and a CPU attention and sampling backend.
DOCUMENTED_ENV = {"SGLANG_USE_CPU_ENGINE": "1"}
DOCUMENTED_COMMAND = (
    "sglang serve --model-path MODEL --grammar-backend xg2 --device cpu --attention-backend torch_native"
    " --sampling-backend pytorch --disable-cuda-graph --disable-overlap-schedule --max-total-tokens 4096"
    " --constrained-json-disable-any-whitespace --tool-call-parser qwen3_coder"
)
# Added to the documented command for this module's server only: the whitespace pattern
# (over --constrained-json-disable-any-whitespace, as in SGLang's llguidance backend) and the
# operator's leniency switch.
TEST_ARGUMENTS = ["--constrained-json-whitespace-pattern", "[ \t\n\r]{0,2}"]
TEST_ENV = {"XG2_LENIENT": "1"}
REQUEST_TIMEOUT_S = 120
SCHEMA = {
    "type": "object",
    "properties": {"color": {"type": "string", "enum": ["red", "blue"]}, "n": {"type": "integer", "minimum": 1, "maximum": 9}},
    "required": ["color", "n"],
    "additionalProperties": False,
}
REGEX = r"(yes|no), [0-9]"


@pytest.fixture(scope="module")
def server_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("sglang-serve") / "server.log"


@pytest.fixture(scope="module")
def server(sglang_tiny_qwen3: Path, server_log: Path) -> Iterator[str]:  # noqa: F811
    """Base URL of a running ``sglang serve`` with the xg2 backend."""
    words = shlex.split(DOCUMENTED_COMMAND)
    assert words[:2] == ["sglang", "serve"]
    arguments = [str(sglang_tiny_qwen3) if word == "MODEL" else word for word in words[2:]] + TEST_ARGUMENTS
    with sglang_server(arguments, server_log, env={**DOCUMENTED_ENV, **TEST_ENV}) as base:
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
            "max_tokens": 64,
            "temperature": 0,
            "response_format": {"type": "json_schema", "json_schema": {"name": "pick", "schema": SCHEMA}},
        },
        timeout=REQUEST_TIMEOUT_S,
    )
    assert response.status_code == 200, response.text
    value = json.loads(response.json()["choices"][0]["message"]["content"])
    assert value["color"] in ("red", "blue") and 1 <= value["n"] <= 9 and set(value) == {"color", "n"}


def test_whitespace_pattern_flag_bounds_each_gap(server: str, sglang_tiny_qwen3: Path) -> None:  # noqa: F811
    """Whitespace tokens pushed up fill every gap to the pattern's bound of 2, never past it."""
    from transformers import AutoTokenizer

    # Whitespace-only tokens: Qwen3's byte-level BPE spells space, LF, tab, CR "Ġ", "Ċ", "ĉ", "č".
    vocab = AutoTokenizer.from_pretrained(str(sglang_tiny_qwen3)).get_vocab()
    bias = {str(i): 30 for token, i in vocab.items() if token and set(token) <= set("ĠĊĉč")}
    response = requests.post(
        server + "/v1/chat/completions",
        json={
            "model": "default",
            "messages": [{"role": "user", "content": "Pick a color."}],
            "max_tokens": 64,
            "temperature": 0,
            "logit_bias": bias,
            "response_format": {"type": "json_schema", "json_schema": {"name": "pick", "schema": SCHEMA}},
        },
        timeout=REQUEST_TIMEOUT_S,
    )
    assert response.status_code == 200, response.text
    (choice,) = response.json()["choices"]
    content = choice["message"]["content"]
    assert choice["finish_reason"] == "stop", choice
    assert set(json.loads(content)) == {"color", "n"}
    outside_strings = re.sub(r'"(?:[^"\\]|\\.)*"', '""', content)
    assert max(len(run) for run in re.findall(r"[ \t\n\r]+", outside_strings) or [""]) == 2, content


def test_lenient_server_ignores_a_refused_keyword_with_one_warning(server: str, server_log: Path) -> None:
    refused = {"type": "object", "properties": {"code": {"type": "string", "maxLength": 6, "pattern": "(?<=x)y"}},
               "required": ["code"], "additionalProperties": False}
    for _ in range(2):
        response = requests.post(
            server + "/generate",
            json={"text": "x", "sampling_params": {"max_new_tokens": 48, "temperature": 0, "json_schema": json.dumps(refused)}},
            timeout=REQUEST_TIMEOUT_S,
        )
        assert response.status_code == 200, response.text
        assert set(json.loads(response.json()["text"])) == {"code"}
    warnings = [line for line in server_log.read_text().splitlines() if "compiled leniently" in line]
    assert len(warnings) == 1 and "look-behind" in warnings[0], warnings


def test_openai_completions_regex(server: str) -> None:
    response = requests.post(
        server + "/v1/completions",
        json={"model": "default", "prompt": "Answer:", "max_tokens": 16, "temperature": 0, "regex": REGEX},
        timeout=REQUEST_TIMEOUT_S,
    )
    assert response.status_code == 200, response.text
    assert re.fullmatch(REGEX, response.json()["choices"][0]["text"]), response.json()


@pytest.mark.parametrize("case", sorted(TOOL_CHOICES))
def test_qwen3_coder_tool_call(server: str, sglang_tiny_qwen3: Path, case: str) -> None:  # noqa: F811
    response = requests.post(
        server + "/v1/chat/completions",
        json={
            "model": "default",
            "messages": MESSAGES,
            "tools": TOOLS,
            "tool_choice": TOOL_CHOICES[case],
            "parallel_tool_calls": False,
            "max_tokens": MAX_TOKENS,
            "temperature": 1.0,
            "logit_bias": whitespace_bias(sglang_tiny_qwen3),
        },
        timeout=REQUEST_TIMEOUT_S,
    )
    assert response.status_code == 200, response.text
    (choice,) = response.json()["choices"]
    check_tool_call(choice["message"], case)
    # SGLang reports "tool_calls" for a parsed call only when generation stopped on EOS (where
    # the grammar allowed it); a call cut off by max_tokens keeps "length".
    assert choice["finish_reason"] == "tool_calls", choice


def test_readme_shows_the_command_this_module_starts() -> None:
    """The README's SGLang CPU command is the one the server fixture runs (env, words, order)."""
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    flat = " ".join(readme.replace("\\\n", " ").replace(".venv-sglang/bin/", "").split())
    env = " ".join(f"{name}={value}" for name, value in DOCUMENTED_ENV.items())
    assert f"{env} {DOCUMENTED_COMMAND}" in flat
