"""The xg2 backend under vLLM's own ``StructuredOutputManager`` (engine-core code, no model).

The manager is what vLLM's scheduler drives: ``grammar_init`` (our patched hook constructs
the backend, the compile pool builds grammars) and ``grammar_bitmask``, which above
``fill_bitmask_parallel_threshold`` (128 in vLLM 0.32 and 0.33) structured requests fills
rows from a thread pool in chunks of 16 instead of one by one. These tests reach both paths
with real requests and compare their masks row by row with each other and with the
engine's reference fill.

This module needs no CPU kernels, so it also runs against vLLM 0.33's Python sources (see
``test_vllm_033_sources.py``), for which no CPU build exists.
"""

from __future__ import annotations

import json
import os
import re
import time
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("vllm")

import numpy as np  # noqa: E402
from jsonschema import validate as jsonschema_validate  # noqa: E402
import torch  # noqa: E402
import vllm  # noqa: E402
from vllm import SamplingParams  # noqa: E402
from vllm.engine.arg_utils import EngineArgs  # noqa: E402
from vllm.sampling_params import StructuredOutputsParams  # noqa: E402
from vllm.v1.request import Request  # noqa: E402
from vllm.v1.structured_output import StructuredOutputManager  # noqa: E402

from xg2_plugin.adapters.vllm.backend import XG2Backend, XG2Grammar  # noqa: E402
from xg2_plugin.testing import ebnf_accepts  # noqa: E402

from vllm_helpers import offline_llm  # noqa: E402

MAX_NUM_SEQS = 160
NUM_REQUESTS = 150  # above vLLM's threshold of 128, below max_num_seqs
SCHEMA = {
    "type": "object",
    "properties": {
        "id": {"type": "integer", "minimum": 0, "maximum": 999},
        "tag": {"enum": ["red", "green"]},
        "note": {"type": "string", "maxLength": 4},
    },
    "required": ["id", "tag", "note"],
    "additionalProperties": False,
}
# (constraint, a valid output): request i takes constraint i % 4 and has accepted the first
# i % len(tokens) tokens of its output, so the batch covers many different states.
CONSTRAINTS: list[tuple[dict[str, Any], str]] = [
    ({"json": SCHEMA}, '{"id":42,"tag":"green","note":"a b"}'),
    ({"regex": r"[a-z]{2,6}@[a-z]{2,5}\.(com|org)"}, "alice@host.org"),
    ({"choice": ["yes", "no", "not sure"]}, "not sure"),
    ({"grammar": 'root ::= "(" [0-9]{1,3} ("+" [0-9]{1,3}){0,2} ")"'}, "(12+345+6)"),
]


@pytest.fixture(scope="module")
def vllm_config(tiny_llama: Path, xg2_registered: None) -> Any:
    args = EngineArgs(
        model=str(tiny_llama),
        dtype="float32",
        max_model_len=512,
        max_num_seqs=MAX_NUM_SEQS,
        enforce_eager=True,
        structured_outputs_config={"backend": "xg2", "disable_any_whitespace": True},
    )
    return args.create_engine_config()


def make_request(config: Any, tokenizer: Any, index: int, structured: dict[str, Any]) -> Request:
    params = SamplingParams(max_tokens=32, structured_outputs=StructuredOutputsParams(**structured))
    # The frontend check (patched): validates the constraint and routes it to xg2.
    params._validate_structured_outputs(config.model_config, config.structured_outputs_config, tokenizer)
    assert params.structured_outputs._backend == "xg2"
    return Request(f"req-{index}", prompt_token_ids=[1, 2, 3], sampling_params=params, pooling_params=None)


def wait_for_grammars(requests: dict[str, Request], timeout_s: float = 300.0) -> None:
    deadline = time.monotonic() + timeout_s
    for request in requests.values():
        while not request.structured_output_request.is_grammar_ready:
            assert time.monotonic() < deadline, f"grammar of {request.request_id} not compiled in {timeout_s}s"
            time.sleep(0.01)
        assert isinstance(request.structured_output_request.grammar, XG2Grammar)


@pytest.fixture(scope="module")
def manager_and_requests(vllm_config: Any) -> Any:
    manager = StructuredOutputManager(vllm_config)
    tokenizer = manager.tokenizer
    requests: dict[str, Request] = {}
    for i in range(NUM_REQUESTS):
        structured, _ = CONSTRAINTS[i % len(CONSTRAINTS)]
        request = make_request(vllm_config, tokenizer, i, structured)
        manager.grammar_init(request)
        requests[request.request_id] = request
    wait_for_grammars(requests)
    for i, request in enumerate(requests.values()):
        _, output = CONSTRAINTS[i % len(CONSTRAINTS)]
        tokens = tokenizer.encode(output, add_special_tokens=False)
        assert manager.accept_tokens(request, tokens[: i % len(tokens)])
    yield manager, requests
    manager.clear_backend()


def test_grammar_init_constructs_the_xg2_backend(manager_and_requests: Any, vllm_config: Any) -> None:
    manager, _ = manager_and_requests
    assert isinstance(manager.backend, XG2Backend)
    assert manager.backend.vocab_size == vllm_config.model_config.get_vocab_size()
    if hasattr(manager, "backend_name"):  # vLLM 0.33 checks every request against it
        assert manager.backend_name == "xg2"


def reference_row(grammar: XG2Grammar, vocab_size: int) -> np.ndarray:
    row = torch.full((1, (vocab_size + 31) // 32), -1, dtype=torch.int32)
    grammar.matcher._fill_next_token_bitmask_reference(row, 0)
    return row[0].numpy()


def test_parallel_fill_path_matches_serial_and_reference(manager_and_requests: Any) -> None:
    manager, requests = manager_and_requests
    ids = list(requests)
    assert len(ids) > manager.fill_bitmask_parallel_threshold

    # Count the pool submissions: the path taken is vLLM's parallel one.
    submitted = []
    submit = manager._async_submit_fill_bitmask

    def counting_submit(batch: list[Any]) -> Any:
        submitted.append(len(batch))
        return submit(batch)

    manager._async_submit_fill_bitmask = counting_submit
    try:
        parallel = np.array(manager.grammar_bitmask(requests, ids, {}), copy=True)
    finally:
        del manager._async_submit_fill_bitmask
    assert sum(submitted) == len(ids) and max(submitted) == manager.fill_bitmask_parallel_batch_size

    threshold = manager.fill_bitmask_parallel_threshold
    manager.fill_bitmask_parallel_threshold = len(ids)  # the same batch, filled serially
    try:
        serial = np.array(manager.grammar_bitmask(requests, ids, {}), copy=True)
    finally:
        manager.fill_bitmask_parallel_threshold = threshold

    assert parallel.shape == serial.shape == (len(ids), manager.backend.allocate_token_bitmask(1).shape[1])
    assert np.array_equal(parallel, serial)
    vocab_size = manager.backend.vocab_size
    for row, request_id in enumerate(ids):
        grammar = requests[request_id].structured_output_request.grammar
        assert np.array_equal(parallel[row], reference_row(grammar, vocab_size)), request_id
    # Constrained rows, not all-allowed ones.
    assert not (parallel == -1).all(axis=1).any()


def test_terminated_request_rows_are_all_allowed(manager_and_requests: Any, vllm_config: Any) -> None:
    manager, requests = manager_and_requests
    tokenizer = manager.tokenizer
    request = make_request(vllm_config, tokenizer, 999, {"choice": ["ok"]})
    manager.grammar_init(request)
    wait_for_grammars({request.request_id: request})
    eos = tokenizer.eos_token_id
    assert manager.accept_tokens(request, tokenizer.encode("ok", add_special_tokens=False) + [eos])
    assert request.structured_output_request.grammar.is_terminated()
    everything = dict(requests, **{request.request_id: request})
    mask = manager.grammar_bitmask(everything, list(everything), {})
    assert (mask[-1] == -1).all()


def test_vllm_version_is_supported() -> None:
    from xg2_plugin.adapters.vllm._patch import SUPPORTED_VLLM_VERSIONS, vllm_version

    text, major_minor = vllm_version()
    assert text == vllm.__version__ and major_minor in SUPPORTED_VLLM_VERSIONS
    # Set by test_vllm_overlay.py, which runs this suite on another vLLM's sources.
    expected = os.environ.get("XG2_EXPECT_VLLM_VERSION")
    if expected:
        assert text == expected


def test_offline_engine_batch_above_the_parallel_threshold(tiny_llama: Path, xg2_registered: None) -> None:
    # A real engine step with more than 128 structured requests: every time vLLM fills the
    # batch in its thread pool, the same batch is filled again serially and must match.
    config = {"backend": "xg2", "disable_any_whitespace": True}
    with offline_llm(tiny_llama, max_num_seqs=MAX_NUM_SEQS, structured_outputs_config=config) as engine:
        manager = engine.llm_engine.engine_core.engine_core.scheduler.structured_output_manager
        vllm_fill = manager.grammar_bitmask
        parallel_steps: list[tuple[int, bool]] = []

        def fill_and_compare(requests: dict[str, Any], ids: list[str], spec: dict[str, list[int]]) -> Any:
            mask = vllm_fill(requests, ids, spec)
            if len(ids) > manager.fill_bitmask_parallel_threshold:
                parallel = np.array(mask, copy=True)
                threshold = manager.fill_bitmask_parallel_threshold
                manager.fill_bitmask_parallel_threshold = len(ids)
                try:
                    serial = np.array(vllm_fill(requests, ids, spec), copy=True)
                finally:
                    manager.fill_bitmask_parallel_threshold = threshold
                parallel_steps.append((len(ids), bool(np.array_equal(parallel, serial))))
            return mask

        manager.grammar_bitmask = fill_and_compare
        params = [
            SamplingParams(
                temperature=1.0,
                max_tokens=40,
                seed=i,
                structured_outputs=StructuredOutputsParams(**CONSTRAINTS[i % len(CONSTRAINTS)][0]),
            )
            for i in range(NUM_REQUESTS)
        ]
        outputs = engine.generate([f"Item {i}:" for i in range(NUM_REQUESTS)], params, use_tqdm=False)
    assert parallel_steps, "no engine step had more than 128 structured requests"
    assert all(same for _, same in parallel_steps), parallel_steps
    assert max(size for size, _ in parallel_steps) >= 129
    for i, output in enumerate(outputs):
        completion = output.outputs[0]
        constraint = CONSTRAINTS[i % len(CONSTRAINTS)][0]
        assert completion.finish_reason == "stop", (constraint, completion.text)
        if "json" in constraint:
            jsonschema_validate(json.loads(completion.text), SCHEMA)
        elif "regex" in constraint:
            assert re.fullmatch(constraint["regex"], completion.text), completion.text
        elif "choice" in constraint:
            assert completion.text in constraint["choice"], completion.text
        else:
            assert ebnf_accepts(constraint["grammar"], completion.text), completion.text
