"""The adapter against vLLM's own classes: registration, config, CLI, and the backend interface.

No engine runs here; the backend is driven directly through vLLM's abstract interface the
way ``StructuredOutputManager`` drives it.
"""

from __future__ import annotations

import importlib.metadata as md
import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("vllm")

import numpy as np  # noqa: E402
import torch  # noqa: E402
import vllm  # noqa: E402
from vllm.config import StructuredOutputsConfig, VllmConfig  # noqa: E402
from vllm.engine.arg_utils import AsyncEngineArgs  # noqa: E402
from vllm.tokenizers import get_tokenizer  # noqa: E402
from vllm.utils.argparse_utils import FlexibleArgumentParser  # noqa: E402
from vllm.v1.structured_output.backend_types import (  # noqa: E402
    StructuredOutputBackend,
    StructuredOutputGrammar,
    StructuredOutputOptions,
)

from xg2_plugin import GrammarCompiler  # noqa: E402
from xg2_plugin.adapters.vllm import BACKEND_NAME, _patch  # noqa: E402
from xg2_plugin.adapters.vllm.backend import XG2Backend, XG2Grammar  # noqa: E402

PADDED_VOCAB = 128_512  # the Llama-3.1 tokenizer has 128,256 tokens; models pad their logits
SCHEMA = {
    "type": "object",
    "properties": {"id": {"type": "integer", "minimum": 0, "maximum": 99}, "ok": {"type": "boolean"}},
    "required": ["id", "ok"],
}


def allowed(bitmask: torch.Tensor, row: int = 0) -> np.ndarray:
    """Allowed token ids of one bitmask row."""
    bits = np.unpackbits(bitmask[row].numpy().view(np.uint8), bitorder="little")
    return np.flatnonzero(bits)


def test_plugin_entry_point_and_packaging() -> None:
    (entry,) = [e for e in md.entry_points(group="vllm.general_plugins") if e.name == BACKEND_NAME]
    assert entry.value == "xg2_plugin.adapters.vllm:register"
    files = [str(f) for f in md.files("xg2-plugin") or []]
    assert any(f.startswith("xg2_plugin/adapters/vllm/") for f in files)
    assert not any(f.startswith("adapters/") for f in files), "adapters must not install as a top-level package"


def test_config_accepts_backend(xg2_registered: None) -> None:
    config = StructuredOutputsConfig(backend="xg2", disable_any_whitespace=True, disable_additional_properties=True)
    assert VllmConfig(structured_outputs_config=config).structured_outputs_config.backend == "xg2"
    with pytest.raises(ValueError, match="disable_any_whitespace"):
        StructuredOutputsConfig(backend="outlines", disable_any_whitespace=True)
    with pytest.raises(ValueError):
        StructuredOutputsConfig(backend="no-such-backend")


@pytest.mark.parametrize(
    "flags",
    [
        ["--structured-outputs-config.backend", "xg2", "--structured-outputs-config.disable_any_whitespace", "true"],
        ["--structured-outputs-config", '{"backend": "xg2", "disable_any_whitespace": true}'],
    ],
)
def test_cli_flags(xg2_registered: None, flags: list[str]) -> None:
    parser = AsyncEngineArgs.add_cli_args(FlexibleArgumentParser())
    args = parser.parse_args(["--model", "unused", *flags])
    assert args.structured_outputs_config.backend == "xg2"
    assert args.structured_outputs_config.disable_any_whitespace is True


def test_vllm_without_a_hooked_internal_gets_no_backend_and_one_warning(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """vLLM calls every installed plugin in every process: on a vLLM the adapter cannot hook,
    registering must change nothing and raise nothing (vLLM starts as if we were absent)."""
    from vllm.config import structured_outputs as so_module
    from vllm.sampling_params import SamplingParams
    from vllm.v1.structured_output import StructuredOutputManager

    from xg2_plugin.adapters.vllm import register

    monkeypatch.setattr(vllm, "__version__", "0.99.0")
    monkeypatch.setattr(_patch, "_installed", set())
    monkeypatch.delattr(StructuredOutputManager, "grammar_init")
    backends_before = so_module.StructuredOutputsBackend
    validate_before = SamplingParams._validate_structured_outputs
    with caplog.at_level("WARNING", logger="xg2_plugin.adapters.vllm"):
        register()
    (record,) = [r for r in caplog.records if r.name == "xg2_plugin.adapters.vllm"]
    assert "StructuredOutputManager.grammar_init" in record.getMessage()
    assert "supports vLLM 0.32, 0.33" in record.getMessage() and "vLLM 0.99.0" in record.getMessage()
    assert so_module.StructuredOutputsBackend is backends_before
    assert SamplingParams._validate_structured_outputs is validate_before
    assert _patch._installed == set()
    with pytest.raises(_patch.UnsupportedVLLMError, match="grammar_init"):
        _patch.install("xg2-missing-internal-probe")


def test_untested_vllm_release_with_the_internals_is_hooked_with_a_warning(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The check is on the internals, not the version string: a release we have not tested
    that has them gets the backend, and the log says it is untested."""
    from vllm.sampling_params import SamplingParams
    from vllm.v1.structured_output import StructuredOutputManager

    monkeypatch.setattr(vllm, "__version__", "0.99.0")
    # install() wraps these two for the probe name; restored after the test.
    monkeypatch.setattr(SamplingParams, "_validate_structured_outputs", SamplingParams._validate_structured_outputs)
    monkeypatch.setattr(StructuredOutputManager, "grammar_init", StructuredOutputManager.grammar_init)
    assert _patch.missing_internals() == []
    with caplog.at_level("WARNING", logger="xg2_plugin.adapters.vllm"):
        _patch.install("xg2-untested-release-probe")
    assert "xg2-untested-release-probe" in _patch._installed
    assert StructuredOutputsConfig(backend="xg2-untested-release-probe").backend == "xg2-untested-release-probe"
    (record,) = [r for r in caplog.records if r.name == "xg2_plugin.adapters.vllm"]
    assert "untested" in record.getMessage() and "0.99.0" in record.getMessage()


@pytest.fixture(scope="module")
def make_backend(tiny_llama: Path, xg2_registered: None) -> Any:
    tokenizer = get_tokenizer(str(tiny_llama))

    def make(**so_options: Any) -> XG2Backend:
        config = VllmConfig(structured_outputs_config=StructuredOutputsConfig(backend="xg2", **so_options))
        return XG2Backend(config, tokenizer=tokenizer, vocab_size=PADDED_VOCAB)

    return make


@pytest.fixture(scope="module")
def backend(make_backend: Any) -> XG2Backend:
    return make_backend(disable_any_whitespace=True)


@pytest.fixture(scope="module")
def eos(tiny_llama: Path) -> int:
    return get_tokenizer(str(tiny_llama)).eos_token_id


def encode(backend: XG2Backend, text: str) -> list[int]:
    return backend.tokenizer.encode(text, add_special_tokens=False)


def test_is_a_vllm_backend(backend: XG2Backend) -> None:
    assert isinstance(backend, StructuredOutputBackend)
    assert backend.tokenizer_info.vocab_size == PADDED_VOCAB
    bitmask = backend.allocate_token_bitmask(4)
    assert bitmask.dtype == torch.int32 and bitmask.device.type == "cpu"
    assert tuple(bitmask.shape) == (4, (PADDED_VOCAB + 31) // 32)
    assert bool((bitmask == -1).all())


@pytest.mark.parametrize(
    "request_type, spec, text",
    [
        (StructuredOutputOptions.JSON, json.dumps(SCHEMA), '{"id":42,"ok":true}'),
        (StructuredOutputOptions.JSON_OBJECT, "", '{"any":[1,2]}'),
        (StructuredOutputOptions.REGEX, r"\d{3}-[a-z]+", "123-abc"),
        (StructuredOutputOptions.CHOICE, json.dumps(["left", "right"]), "right"),
        (StructuredOutputOptions.GRAMMAR, 'root ::= "x" [0-9]+', "x2024"),
    ],
)
def test_each_request_type(backend: XG2Backend, eos: int, request_type: Any, spec: str, text: str) -> None:
    grammar = backend.compile_grammar(request_type, spec, stop_token_ids={eos})
    assert isinstance(grammar, StructuredOutputGrammar)
    tokens = encode(backend, text)
    bitmask = backend.allocate_token_bitmask(1)
    grammar.fill_bitmask(bitmask, 0)
    assert eos not in allowed(bitmask), "the stop token is masked until the grammar may end"
    for token in tokens:
        grammar.fill_bitmask(bitmask, 0)
        assert token in allowed(bitmask), (text, token)
        assert grammar.accept_tokens("req", [token])
    grammar.fill_bitmask(bitmask, 0)
    assert eos in allowed(bitmask) and allowed(bitmask).max() < PADDED_VOCAB
    assert not grammar.is_terminated()
    assert grammar.accept_tokens("req", [eos]) and grammar.is_terminated()
    assert grammar.accept_tokens("req", [tokens[0]]), "tokens after termination are ignored"
    grammar.reset()
    assert not grammar.is_terminated() and grammar.validate_tokens(tokens) == tokens


def test_compact_json_when_whitespace_disabled(make_backend: Any, backend: XG2Backend) -> None:
    space = encode(backend, " ")[0]
    strict, relaxed = backend, make_backend(disable_any_whitespace=False)
    bitmask = strict.allocate_token_bitmask(2)
    for row, engine in enumerate((strict, relaxed)):
        grammar = engine.compile_grammar(StructuredOutputOptions.JSON, json.dumps(SCHEMA))
        assert grammar.accept_tokens("req", encode(engine, "{"))
        grammar.fill_bitmask(bitmask, row)
    assert space not in allowed(bitmask, 0) and space in allowed(bitmask, 1)


def test_structural_tag_json_honours_whitespace_setting(make_backend: Any, backend: XG2Backend) -> None:
    tag = json.dumps({
        "type": "structural_tag",
        "format": {"type": "tag", "begin": "<call>", "content": {"type": "json_schema", "json_schema": SCHEMA},
                   "end": "</call>"},
    })
    space = encode(backend, " ")[0]
    strict, relaxed = backend, make_backend(disable_any_whitespace=False)
    bitmask = strict.allocate_token_bitmask(2)
    for row, engine in enumerate((strict, relaxed)):
        grammar = engine.compile_grammar(StructuredOutputOptions.STRUCTURAL_TAG, tag)
        assert grammar.accept_tokens("req", encode(engine, "<call>{"))
        grammar.fill_bitmask(bitmask, row)
    assert space not in allowed(bitmask, 0) and space in allowed(bitmask, 1)


def test_validate_rollback_and_atomic_accept(backend: XG2Backend, eos: int) -> None:
    grammar = backend.compile_grammar(StructuredOutputOptions.JSON, json.dumps(SCHEMA), stop_token_ids={eos})
    tokens = encode(backend, '{"id":7,"ok":false}') + [eos]
    bitmask = backend.allocate_token_bitmask(3)
    grammar.fill_bitmask(bitmask, 0)
    # validate_tokens from the initial state, never moving the grammar.
    assert grammar.validate_tokens(tokens) == tokens
    prefix = encode(backend, '{"id":7')
    assert grammar.validate_tokens(prefix + encode(backend, "]") + prefix) == prefix
    assert grammar.validate_tokens(encode(backend, "[")) == []
    grammar.fill_bitmask(bitmask, 1)
    assert torch.equal(bitmask[0], bitmask[1])
    # The manager's draft walk: accept one token per row, then roll everything back.
    head = tokens[:4]
    for token in head:
        assert grammar.accept_tokens("req", [token])
    grammar.rollback(len(head))
    grammar.fill_bitmask(bitmask, 2)
    assert torch.equal(bitmask[0], bitmask[2])
    # Rejection leaves the state as it was.
    assert not grammar.accept_tokens("req", head + encode(backend, "]"))
    assert grammar.validate_tokens(tokens) == tokens
    # Rolling back over the stop token un-terminates.
    assert grammar.accept_tokens("req", tokens) and grammar.is_terminated()
    grammar.rollback(1)
    assert not grammar.is_terminated()


def test_grammars_share_the_compiled_cache(backend: XG2Backend) -> None:
    first = backend.compile_grammar(StructuredOutputOptions.REGEX, "[a-z]{2}[0-9]")
    second = backend.compile_grammar(StructuredOutputOptions.REGEX, "[a-z]{2}[0-9]")
    assert isinstance(first, XG2Grammar) and first.matcher is not second.matcher
    assert first.matcher.compiled_grammar is second.matcher.compiled_grammar


def test_bad_requests_raise_engine_errors(backend: XG2Backend) -> None:
    with pytest.raises(ValueError, match="look"):
        backend.compile_grammar(StructuredOutputOptions.REGEX, "(?<=a)b")
    with pytest.raises(ValueError, match="Lark"):
        backend.compile_grammar(StructuredOutputOptions.GRAMMAR, 'start: "a"')
    if not hasattr(GrammarCompiler, "compile_structural_tag"):
        with pytest.raises(ValueError, match="structural-tag requests"):
            backend.compile_grammar(StructuredOutputOptions.STRUCTURAL_TAG, '{"type": "structural_tag"}')
