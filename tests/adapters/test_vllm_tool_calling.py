"""Tool calling in the Qwen3-Coder XML format through vLLM's own tool parser, on the xg2 backend.

With ``--tool-call-parser qwen3_coder``, vLLM's serving layer builds the request's grammar with
xgrammar's ``get_model_structural_tag("qwen_3_coder", ...)`` (``parallel_tool_calls`` false
stops it after the first call) and sends it to the backend as a STRUCTURAL_TAG spec: the
call's arguments are a ``json_schema`` content of style ``qwen_xml``. The response's
``tool_calls`` are what vLLM's Qwen3-Coder parser reads back from the generated text, so a
valid call shows the backend enforced the XML format and the tool's schema at every step.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("vllm")
openai = pytest.importorskip("openai")

from tool_call_cases import MAX_TOKENS, MESSAGES, QWEN3_CODER_TEMPLATE, TOOL_CHOICES, TOOLS, check_tool_call  # noqa: E402
from vllm_helpers import openai_server  # noqa: E402

REQUEST_TIMEOUT_S = 120
# How vLLM reports a call that ended on EOS where the grammar allowed it ("length" would mean
# the grammar never let the call end): "tool_calls" for "required", and "stop" for a named
# function, as OpenAI reports a forced function.
FINISH_REASONS = {"required": "tool_calls", "named": "stop"}


@pytest.fixture(scope="module")
def client(tiny_qwen3: Path, data_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    arguments = [
        "--model", str(tiny_qwen3), "--structured-outputs-config.backend", "xg2",
        "--enable-auto-tool-choice", "--tool-call-parser", "qwen3_coder",
        "--chat-template", str(data_dir / QWEN3_CODER_TEMPLATE),
        "--dtype", "float32", "--enforce-eager", "--max-model-len", "2048",
    ]  # fmt: skip
    log = tmp_path_factory.mktemp("server") / "vllm-qwen3-coder.log"
    with openai_server(arguments, log, env={"VLLM_CPU_KVCACHE_SPACE": "1"}) as base:
        yield openai.OpenAI(base_url=base + "/v1", api_key="unused", timeout=REQUEST_TIMEOUT_S, max_retries=0)


@pytest.mark.parametrize("case", sorted(TOOL_CHOICES))
def test_qwen3_coder_tool_call(client: Any, case: str) -> None:
    (model,) = client.models.list().data
    response = client.chat.completions.create(
        model=model.id,
        messages=MESSAGES,
        tools=TOOLS,
        tool_choice=TOOL_CHOICES[case],
        parallel_tool_calls=False,
        max_tokens=MAX_TOKENS,
        temperature=1.0,
        seed=0,
    )
    (choice,) = response.choices
    check_tool_call(choice.message.model_dump(), case)
    assert choice.finish_reason == FINISH_REASONS[case], choice
