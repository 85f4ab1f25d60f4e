"""Shared helpers for the test suite: data location, real tokenizers, token-level checks."""

from __future__ import annotations

import functools
import json
import os
from pathlib import Path
from typing import Any, Iterable, Optional

import numpy as np
import pytest

import xg2_plugin as xg
from xg2_plugin.bitmask import bitmask_to_bool_array

REPO_ROOT = Path(__file__).resolve().parents[1]


def data_dir() -> Path:
    """$XG2_DATA_DIR, else ../shared/data beside the repository."""
    return Path(os.environ.get("XG2_DATA_DIR", REPO_ROOT.parent / "shared" / "data"))


def require_data(relative: str) -> Path:
    path = data_dir() / relative
    if not path.exists():
        pytest.skip(f"test data not found: {path} (set XG2_DATA_DIR)")
    return path


HF_TOKENIZERS = ["llama3.1", "qwen2.5", "qwen3", "gpt-oss", "gpt2", "phi-3"]


@functools.lru_cache(maxsize=None)
def hf_tokenizer(name: str) -> Any:
    tokenizers = pytest.importorskip("tokenizers")
    return tokenizers.Tokenizer.from_file(str(require_data(f"tokenizers/hf/{name}/tokenizer.json")))


@functools.lru_cache(maxsize=None)
def hf_tokenizer_info(name: str) -> xg.TokenizerInfo:
    return xg.TokenizerInfo.from_huggingface(hf_tokenizer(name))


@functools.lru_cache(maxsize=None)
def hf_compiler(name: str) -> xg.GrammarCompiler:
    return xg.GrammarCompiler(hf_tokenizer_info(name))


def encode_continuation(name: str, text: str) -> list[int]:
    """Token ids a model would emit for `text` in the middle of a sequence.

    Sentencepiece-style tokenizers prepend a space marker at the start of an encoding; encode
    after a newline anchor and drop the anchor's tokens so the ids spell exactly `text`.
    """
    tok = hf_tokenizer(name)
    info = hf_tokenizer_info(name)
    ids = tok.encode(text, add_special_tokens=False).ids
    if decode_bytes(info, ids) == text.encode("utf-8"):
        return ids
    anchor = "\n"
    anchored = tok.encode(anchor + text, add_special_tokens=False).ids
    for cut in range(1, len(anchored)):
        if decode_bytes(info, anchored[cut:]) == text.encode("utf-8"):
            return anchored[cut:]
    raise AssertionError(f"cannot tokenize {text!r} as a continuation with {name}")


def decode_bytes(info: xg.TokenizerInfo, ids: Iterable[int]) -> bytes:
    vocab = info.decoded_vocab
    return b"".join(vocab[i] for i in ids)


def allowed_tokens(matcher: xg.GrammarMatcher, bitmask: Any, vocab_size: int) -> np.ndarray:
    matcher.fill_next_token_bitmask(bitmask)
    row = bitmask[0]
    return bitmask_to_bool_array(row, vocab_size)


def check_tokens_accepted(grammar: xg.CompiledGrammar, ids: list[int], *, expect_stop: bool = True,
                          mask_every: int = 1) -> None:
    """Feeds `ids`: each must be in the mask (checked every `mask_every` steps and at the
    end) and accepted; afterwards a stop token must be allowed and accepted."""
    info = grammar.tokenizer_info
    matcher = xg.GrammarMatcher(grammar)
    bitmask = np.full(xg.get_bitmask_shape(1, info.vocab_size), -1, dtype=np.int32)
    for step, token in enumerate(ids):
        if step % mask_every == 0 or step == len(ids) - 1:
            allowed = allowed_tokens(matcher, bitmask, info.vocab_size)
            assert allowed[token], f"token {token} ({info.decoded_vocab[token]!r}) at step {step} not in mask"
        assert matcher.accept_token(token), f"token {token} ({info.decoded_vocab[token]!r}) at step {step} rejected"
    if expect_stop:
        allowed = allowed_tokens(matcher, bitmask, info.vocab_size)
        stops = matcher.stop_token_ids
        assert any(allowed[s] for s in stops), "no stop token allowed at the end"
        assert matcher.accept_token(stops[0])
        assert matcher.is_terminated()


def string_accepted(grammar: xg.CompiledGrammar, text: str) -> bool:
    matcher = xg.GrammarMatcher(grammar)
    return matcher.accept_string(text) and matcher.is_completed()


def _resolve(schema: Any, root: Any, depth: int = 0) -> Any:
    """Follows local $ref chains (for ordering only)."""
    while isinstance(schema, dict) and isinstance(schema.get("$ref"), str) and schema["$ref"].startswith("#") and depth < 50:
        target: Any = root
        for part in schema["$ref"][1:].split("/")[1:]:
            part = part.replace("~1", "/").replace("~0", "~")
            if isinstance(target, dict) and part in target:
                target = target[part]
            elif isinstance(target, list) and part.isdigit() and int(part) < len(target):
                target = target[int(part)]
            else:
                return {}
        schema, depth = target, depth + 1
    return schema


def ordered_like_schema(value: Any, schema: Any, root: Any = None) -> Any:
    """Reorders object keys to the schema's declared property order (undeclared keys last),
    the order in which the grammar emits them. Follows local $ref; for anyOf/oneOf uses the
    first branch that declares every key of the value."""
    root = schema if root is None else root
    schema = _resolve(schema, root)
    if not isinstance(schema, dict):
        return value
    for keyword in ("anyOf", "oneOf"):
        branches = [_resolve(b, root) for b in schema.get(keyword, []) if isinstance(b, (dict, bool))]
        if isinstance(value, dict):
            for branch in branches:
                if isinstance(branch, dict) and set(value) <= set(branch.get("properties", {})):
                    return ordered_like_schema(value, branch, root)
        elif isinstance(value, list):
            for branch in branches:
                if isinstance(branch, dict) and ("items" in branch or "prefixItems" in branch):
                    return ordered_like_schema(value, branch, root)
    if isinstance(value, dict):
        props = schema.get("properties", {})
        props = props if isinstance(props, dict) else {}
        keys = [k for k in props if k in value] + [k for k in value if k not in props]
        return {k: ordered_like_schema(value[k], props.get(k, {}), root) for k in keys}
    if isinstance(value, list):
        prefix = schema.get("prefixItems", [])
        items = schema.get("items", {})
        out = []
        for i, v in enumerate(value):
            sub = prefix[i] if i < len(prefix) else (items[i] if isinstance(items, list) and i < len(items) else items)
            out.append(ordered_like_schema(v, sub if isinstance(sub, dict) else {}, root))
        return out
    return value


def dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)
