"""Tool calling in the Qwen3-Coder XML format through SGLang's own tool parser, on the xg2 backend.

With ``--tool-call-parser qwen3_coder``, SGLang's ``FunctionCallParser.get_structure_constraint``
asks the Qwen3-Coder detector for a model-native structural tag, which it builds with
xgrammar's ``get_model_structural_tag("qwen_3_coder", ...)``, and sends as the request's
``structural_tag`` (``json.dumps(tag.model_dump(by_alias=True))``): the call's arguments are a
``json_schema`` content of style ``qwen_xml``. The response's ``tool_calls`` are what SGLang's
Qwen3-Coder detector parses back from the generated text, so a valid call shows the backend
enforced the XML format and the tool's schema at every step.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

import pytest

pytest.importorskip("sglang")
requests = pytest.importorskip("requests")

from sglang_fixtures import sglang_server, sglang_tiny_qwen3  # noqa: E402,F401
from tool_call_cases import MAX_TOKENS, MESSAGES, QWEN3_CODER_TEMPLATE, TOOL_CHOICES, TOOLS, check_tool_call  # noqa: E402

REQUEST_TIMEOUT_S = 120


@pytest.fixture(scope="module")
def server(sglang_tiny_qwen3: Path, data_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:  # noqa: F811
    arguments = [
        "--model-path", str(sglang_tiny_qwen3), "--grammar-backend", "xg2", "--device", "cpu",
        "--attention-backend", "torch_native", "--sampling-backend", "pytorch", "--disable-cuda-graph",
        "--disable-overlap-schedule", "--max-total-tokens", "4096", "--context-length", "2048",
        "--tool-call-parser", "qwen3_coder", "--chat-template", str(data_dir / QWEN3_CODER_TEMPLATE),
        "--random-seed", "0",
    ]  # fmt: skip
    log_path = tmp_path_factory.mktemp("sglang-serve") / "qwen3-coder.log"
    with sglang_server(arguments, log_path, env={"SGLANG_USE_CPU_ENGINE": "1"}) as base:
        yield base


@pytest.mark.parametrize("case", sorted(TOOL_CHOICES))
def test_qwen3_coder_tool_call(server: str, case: str) -> None:
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
        },
        timeout=REQUEST_TIMEOUT_S,
    )
    assert response.status_code == 200, response.text
    (choice,) = response.json()["choices"]
    check_tool_call(choice["message"], case)
    # SGLang reports "tool_calls" for a parsed call only when generation stopped on EOS (where
    # the grammar allowed it); a call cut off by max_tokens keeps "length".
    assert choice["finish_reason"] == "tool_calls", choice
