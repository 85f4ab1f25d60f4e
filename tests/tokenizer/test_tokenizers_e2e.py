"""Token-level matching on every real tokenizer: encodings of valid text pass the mask token by
token, invalid text is rejected, rollback restores identical masks, forks are independent."""

from __future__ import annotations

import json

import numpy as np
import pytest

import xg2_plugin as xg
from xg2_test_support import (
    HF_TOKENIZERS,
    allowed_tokens,
    check_tokens_accepted,
    encode_continuation,
    hf_compiler,
    hf_tokenizer_info,
    require_data,
)

JSON_TEXTS = [
    '{"name": "Ünïcødé ✓ 日本語 😀", "n": -12.5e3, "ok": true, "list": [1, 2, {"deep": null}]}',
    '{\n  "items": [\n    {\n      "id": 1,\n      "tags": ["a\\"b", "c\\\\d", "\\u00e9"]\n    }\n  ]\n}',
]
INVALID_JSON = ['{"a": 1,}', '{"a" 1}', "[1, 2", '{"a": tru}', '"unterminated']


def json_grammar(name: str) -> xg.CompiledGrammar:
    return hf_compiler(name).compile_grammar(require_data("grammars/json.gbnf").read_text())


@pytest.mark.parametrize("name", HF_TOKENIZERS)
def test_json_accepted_token_by_token(name: str) -> None:
    grammar = json_grammar(name)
    for text in JSON_TEXTS:
        json.loads(text)
        check_tokens_accepted(grammar, encode_continuation(name, text))


@pytest.mark.parametrize("name", HF_TOKENIZERS)
def test_invalid_json_rejected(name: str) -> None:
    grammar = json_grammar(name)
    info = hf_tokenizer_info(name)
    for text in INVALID_JSON:
        ids = encode_continuation(name, text)
        matcher = xg.GrammarMatcher(grammar)
        accepted = matcher.validate_tokens(ids + [info.stop_token_ids[0]])
        assert accepted <= len(ids), text  # never accepted through to the stop token


@pytest.mark.parametrize("name", HF_TOKENIZERS)
def test_rollback_and_fork(name: str) -> None:
    grammar = json_grammar(name)
    info = hf_tokenizer_info(name)
    ids = encode_continuation(name, JSON_TEXTS[0])
    matcher = xg.GrammarMatcher(grammar)
    bitmask = xg.allocate_token_bitmask(1, info.vocab_size)
    masks = []
    for t in ids[:25]:
        masks.append(allowed_tokens(matcher, bitmask, info.vocab_size).copy())
        assert matcher.accept_token(t)
    fork = matcher.fork()
    for k in range(len(masks) - 1, -1, -5):
        matcher.rollback(len(masks) - k if k == len(masks) - 1 else 5)
        assert np.array_equal(allowed_tokens(matcher, bitmask, info.vocab_size), masks[k])
    # The fork kept the advanced state and can finish the document alone.
    for t in ids[25:]:
        assert fork.accept_token(t)
    assert fork.is_completed()
    assert not matcher.is_completed()


def test_special_tokens_never_text() -> None:
    info = hf_tokenizer_info("qwen3")
    compiler = hf_compiler("qwen3")
    any_text = compiler.compile_grammar("root ::= .*")
    matcher = xg.GrammarMatcher(any_text)
    allowed = allowed_tokens(matcher, xg.allocate_token_bitmask(1, info.vocab_size), info.vocab_size)
    vocab = info.decoded_vocab
    # Non-special added tokens are ordinary text; special ones are not.
    think = [i for i, t in enumerate(vocab) if t == b"<think>"]
    assert think and allowed[think[0]]
    for special in info.special_token_ids:
        if special not in info.stop_token_ids:
            assert not allowed[special]
    # Padding ids beyond the tokenizer are never allowed.
    padded = xg.TokenizerInfo.from_huggingface(
        __import__("xg2_test_support").hf_tokenizer("qwen2.5"), vocab_size=151936
    )
    pm = xg.GrammarMatcher(xg.GrammarCompiler(padded).compile_grammar("root ::= .*"))
    mask = allowed_tokens(pm, xg.allocate_token_bitmask(1, 151936), 151936)
    assert not mask[151665:].any() or set(np.flatnonzero(mask[151665:]) + 151665) <= set(padded.stop_token_ids)


def test_sentencepiece_and_tekken() -> None:
    sentencepiece = pytest.importorskip("sentencepiece")
    text = '{"key": "välue with spaces", "n": [1, 2]}'
    for model in ["llama2.model", "mistral_v7.model"]:
        path = require_data(f"tokenizers/sentencepiece/{model}")
        sp = sentencepiece.SentencePieceProcessor(model_file=str(path))
        info = xg.TokenizerInfo.from_sentencepiece(str(path))
        grammar = xg.GrammarCompiler(info).compile_grammar(require_data("grammars/json.gbnf").read_text())
        ids = sp.encode("\n" + text)
        vocab = info.decoded_vocab
        for cut in range(len(ids)):
            if b"".join(vocab[i] for i in ids[cut:]) == text.encode():
                ids = ids[cut:]
                break
        else:
            pytest.fail(f"cannot align {model} encoding")
        check_tokens_accepted(grammar, ids)
    tekken = xg.TokenizerInfo.from_mistral_tekken(str(require_data("tokenizers/mistral/tekken_240718.json")))
    grammar = xg.GrammarCompiler(tekken).compile_grammar('root ::= "{" [a-z ]* "}"')
    matcher = xg.GrammarMatcher(grammar)
    assert matcher.accept_string("{abc de}") and matcher.is_completed()


SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "minLength": 1},
        "age": {"type": "integer", "minimum": 0, "maximum": 150},
        "email": {"type": "string", "format": "email"},
        "tags": {"type": "array", "items": {"enum": ["a", "b c", "ü"]}, "maxItems": 3},
        "address": {"anyOf": [{"type": "null"}, {"$ref": "#/$defs/address"}]},
    },
    "required": ["name", "age"],
    "$defs": {"address": {"type": "object", "properties": {"street": {"type": "string"}}, "required": ["street"]}},
}
VALID = [
    {"name": "Zoë 日本", "age": 42, "email": "zoe@example.com", "tags": ["b c", "ü"], "address": {"street": "Main \"St\""}},
    {"name": "x", "age": 0, "address": None},
]
INVALID = [
    {"name": "", "age": 1},
    {"name": "x", "age": 151},
    {"name": "x", "age": 1, "tags": ["d"]},
    {"name": "x"},
]
UNDECLARED = {"name": "x", "age": 1, "extra": 1}  # valid JSON Schema, refused by strict mode


@pytest.mark.parametrize("name", HF_TOKENIZERS)
def test_json_schema_instances_token_by_token(name: str) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    grammar = hf_compiler(name).compile_json_schema(SCHEMA)
    info = hf_tokenizer_info(name)
    for value in VALID:
        jsonschema.validate(value, SCHEMA)
        check_tokens_accepted(grammar, encode_continuation(name, json.dumps(value, ensure_ascii=False)))
    for value in INVALID:
        assert not jsonschema.Draft202012Validator(SCHEMA).is_valid(value)
        ids = encode_continuation(name, json.dumps(value, ensure_ascii=False))
        assert xg.GrammarMatcher(grammar).validate_tokens(ids + [info.stop_token_ids[0]]) <= len(ids)
    ids = encode_continuation(name, json.dumps(UNDECLARED))
    assert xg.GrammarMatcher(grammar).validate_tokens(ids + [info.stop_token_ids[0]]) <= len(ids)
    lenient = hf_compiler(name).compile_json_schema(SCHEMA, strict_mode=False)
    check_tokens_accepted(lenient, ids)
