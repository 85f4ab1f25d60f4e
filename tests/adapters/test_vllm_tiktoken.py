"""A tiktoken tokenizer through vLLM: vLLM 0.32's own tiktoken tokenizer class
(``tokenizer_mode="kimi_audio"``, ``KimiAudioTokenizer``) over the Qwen tiktoken ranks.

Its string vocabulary (``get_vocab``) replaces the bytes of partial UTF-8 tokens with U+FFFD;
the backend must read the exact bytes from the ``tiktoken.Encoding`` inside it.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("vllm")
pytest.importorskip("tiktoken")

import jsonschema  # noqa: E402
from vllm import SamplingParams  # noqa: E402
from vllm.sampling_params import StructuredOutputsParams  # noqa: E402

from xg2_plugin import GrammarCompiler, GrammarMatcher  # noqa: E402
from xg2_plugin.adapters.vllm.backend import tokenizer_info_from_vllm  # noqa: E402

from vllm_helpers import offline_llm  # noqa: E402

# KimiAudioTokenizer's default EOS id is 151644 (and it adds specials of its own at 151645+).
SPECIALS = {"<|endoftext|>": 151643, "<|im_end|>": 151644}
SCHEMA = {
    "type": "object",
    "properties": {"city": {"type": "string", "maxLength": 6}, "ok": {"type": "boolean"}},
    "required": ["city", "ok"],
    "additionalProperties": False,
}
REGEX = r"[A-Z][a-z]{1,5} [0-9]{2}"


@pytest.fixture(scope="module")
def tiktoken_model(data_dir: Path, model_cache_dir: Path) -> Path:
    from xg2_plugin.adapters.vllm.tiny_model import build_tiny_tiktoken

    return build_tiny_tiktoken(
        data_dir / "tokenizers" / "tiktoken" / "qwen.tiktoken", SPECIALS, model_cache_dir / "tiktoken-qwen", eos_token="<|im_end|>"
    )


def test_table_from_vllm_tiktoken_tokenizer(tiktoken_model: Path) -> None:
    from vllm.tokenizers.kimi_audio import KimiAudioTokenizer

    tokenizer = KimiAudioTokenizer.from_pretrained(str(tiktoken_model))
    info = tokenizer_info_from_vllm(tokenizer, tokenizer.vocab_size)
    assert info.stop_token_ids == [tokenizer.eos_token_id] == [151644]
    lossy = [token for token in tokenizer.get_vocab() if "\ufffd" in token]
    assert lossy, "expected tokens that are partial UTF-8 in the string vocabulary"
    for text in ["naïve café — 東京 ✓ 😀", '{"city": "Zürich", "ok": true}']:
        ids = tokenizer.encode(text, add_special_tokens=False)
        assert b"".join(info.decoded_vocab[i] for i in ids).decode("utf-8") == text
    matcher = GrammarMatcher(GrammarCompiler(info, max_threads=1).compile_regex(r"[^a-z]* caf. .*"))
    for token in tokenizer.encode("ÏÑ café — 東京 😀", add_special_tokens=False):
        assert matcher.accept_token(token), token
    assert matcher.accept_token(151644) and matcher.is_terminated()


def test_offline_engine_with_tiktoken_tokenizer(tiktoken_model: Path, xg2_registered: None) -> None:
    config = {"backend": "xg2", "disable_any_whitespace": True}
    with offline_llm(tiktoken_model, tokenizer_mode="kimi_audio", structured_outputs_config=config) as engine:
        json_params = SamplingParams(temperature=1.0, max_tokens=40, structured_outputs=StructuredOutputsParams(json=SCHEMA))
        regex_params = SamplingParams(temperature=1.0, max_tokens=16, structured_outputs=StructuredOutputsParams(regex=REGEX))
        outputs: Any = engine.generate(["A city:", "A code:"], [json_params, regex_params], use_tqdm=False)
    assert outputs[0].outputs[0].finish_reason == "stop", outputs[0].outputs[0].text
    jsonschema.validate(json.loads(outputs[0].outputs[0].text), SCHEMA)
    assert re.fullmatch(REGEX, outputs[1].outputs[0].text), outputs[1].outputs[0].text
