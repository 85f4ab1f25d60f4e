"""Mistral tokenizers through vLLM (``tokenizer_mode="mistral"``): tekken and sentencepiece.

vLLM loads these with its own ``MistralTokenizer`` (mistral_common underneath), not with
transformers; the backend builds its vocabulary table from that object. Checked here: the
table spells every token exactly as mistral_common decodes it, and a real offline engine with
a tiny random-weights model on each tokenizer produces constrained output that validates.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("vllm")
pytest.importorskip("mistral_common")

import jsonschema  # noqa: E402
from vllm import SamplingParams  # noqa: E402
from vllm.sampling_params import StructuredOutputsParams  # noqa: E402

from xg2_plugin import GrammarCompiler, GrammarMatcher  # noqa: E402
from xg2_plugin.adapters.vllm.backend import tokenizer_info_from_vllm  # noqa: E402

from vllm_helpers import offline_llm  # noqa: E402

# name -> (file under tokenizers/, vocabulary size, sentencepiece version or 0 for tekken)
MISTRAL_TOKENIZERS = {
    "tekken": ("mistral/tekken_240718.json", 131_072, 0),
    "spm-v1": ("sentencepiece/mistral_v1.model", 32_000, 1),
    "spm-v7": ("sentencepiece/mistral_v7.model", 32_768, 7),
}
SCHEMA = {
    "type": "object",
    "properties": {"name": {"type": "string", "maxLength": 8}, "n": {"type": "integer", "minimum": 0, "maximum": 99}},
    "required": ["name", "n"],
    "additionalProperties": False,
}
REGEX = r"[a-z]{2,6}-[0-9]{1,3}"
TEXTS = ['{"name": "Zoë", "n": 42}', "naïve café — 東京 ✓", "  leading spaces\tand\nnewlines", "a-12"]


@pytest.fixture(scope="module", params=sorted(MISTRAL_TOKENIZERS))
def mistral_model(request: pytest.FixtureRequest, data_dir: Path, model_cache_dir: Path) -> tuple[str, Path]:
    from xg2_plugin.adapters.vllm.tiny_model import build_tiny_mistral

    relative, vocab_size, version = MISTRAL_TOKENIZERS[request.param]
    folder = build_tiny_mistral(
        data_dir / "tokenizers" / relative,
        model_cache_dir / f"mistral-{request.param}",
        vocab_size=vocab_size,
        sentencepiece_version=version,
    )
    return request.param, folder


def test_table_from_vllm_mistral_tokenizer(mistral_model: tuple[str, Path]) -> None:
    from mistral_common.tokens.tokenizers.base import SpecialTokenPolicy
    from vllm.tokenizers.mistral import MistralTokenizer

    name, folder = mistral_model
    tokenizer = MistralTokenizer.from_pretrained(str(folder))
    assert tokenizer.is_tekken == (name == "tekken")
    padded = tokenizer.vocab_size + 64  # a model vocabulary wider than the tokenizer's
    info = tokenizer_info_from_vllm(tokenizer, padded)
    assert info.vocab_size == padded
    assert info.stop_token_ids == [tokenizer.eos_token_id]
    assert set(tokenizer.all_special_ids) <= set(info.special_token_ids)

    # Every encoded text is spelled by the table's bytes (sentencepiece adds its dummy
    # prefix space to the first token, which the table keeps).
    inner = tokenizer.tokenizer
    vocab = info.decoded_vocab
    for text in TEXTS:
        ids = tokenizer.encode(text, add_special_tokens=False)
        spelled = b"".join(vocab[i] for i in ids).decode("utf-8")
        expected = text if tokenizer.is_tekken else " " + text
        assert spelled == expected, (name, text, spelled)
        assert inner.decode(ids, special_token_policy=SpecialTokenPolicy.IGNORE) == text

    # Walking encoded text through a grammar: every token is allowed, EOS at the end (the
    # optional space is sentencepiece's dummy prefix on the first token).
    compiler = GrammarCompiler(info, max_threads=1)
    matcher = GrammarMatcher(compiler.compile_regex(r' ?\{"name": "[^"]{0,8}", "n": [0-9]+\}'))
    for token in tokenizer.encode(TEXTS[0], add_special_tokens=False):
        assert matcher.accept_token(token), token
    assert matcher.accept_token(tokenizer.eos_token_id) and matcher.is_terminated()


def test_offline_engine_with_mistral_tokenizer(mistral_model: tuple[str, Path], xg2_registered: None) -> None:
    name, folder = mistral_model
    config = {"backend": "xg2", "disable_any_whitespace": True}
    with offline_llm(folder, tokenizer_mode="mistral", structured_outputs_config=config) as engine:
        from vllm.utils.mistral import is_mistral_tokenizer

        assert is_mistral_tokenizer(engine.get_tokenizer())
        backend_so = SamplingParams(
            temperature=1.0, max_tokens=48, structured_outputs=StructuredOutputsParams(json=SCHEMA)
        )
        regex_so = SamplingParams(temperature=1.0, max_tokens=16, structured_outputs=StructuredOutputsParams(regex=REGEX))
        outputs = engine.generate(["A record:", "An id:", "Another record:"], [backend_so, regex_so, backend_so], use_tqdm=False)
    texts = [o.outputs[0].text for o in outputs]
    for index in (0, 2):
        assert outputs[index].outputs[0].finish_reason == "stop", (name, texts[index])
        jsonschema.validate(json.loads(texts[index]), SCHEMA)
    assert re.fullmatch(REGEX, texts[1]), (name, texts[1])
