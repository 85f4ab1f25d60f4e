"""Serialized grammars that must not be read back: made for another tokenizer, by another
engine or format version, truncated, or corrupt (xg2_plugin/serialization.py). Each raises
DeserializationError naming what mismatched, and never crashes; a blob whose checksum is not
checked still meets the length and FSM structure checks before anything indexes with it.
Small vocabularies only, so the file runs fast under the sanitizers (scripts/sanitize.sh).
"""

from __future__ import annotations

import json
import random

import numpy as np
import pytest

import xg2_plugin as xg
from xg2_plugin import _native
from xg2_plugin.serialization import engine_version


def small_info(**overrides) -> xg.TokenizerInfo:
    arguments = dict(vocab_size=8, stop_token_ids=[7], special_token_ids=[6])
    arguments.update(overrides)
    return xg.TokenizerInfo([b"a", b"b", b"ab", b"{", b"}", b" ", b"<s>", b"</s>"], **arguments)


@pytest.mark.parametrize("other", [
    dict(), dict(stop_token_ids=[6], special_token_ids=[7]), dict(vocab_size=16), dict(special_token_ids=[]),
], ids=["vocabulary", "stop ids", "vocab size", "special ids"])
def test_grammar_for_another_tokenizer_is_refused(other) -> None:
    grammar = xg.GrammarCompiler(small_info()).compile_grammar('root ::= "a" "b"*')
    target = small_info(**other) if other else xg.TokenizerInfo([b"a", b"b", b"ab", b"{", b"}", b"  ", b"<s>", b"</s>"],
                                                                vocab_size=8, stop_token_ids=[7], special_token_ids=[6])
    with pytest.raises(xg.DeserializationError, match="another tokenizer"):
        xg.CompiledGrammar.deserialize_bytes(grammar.serialize_bytes(), target)
    with pytest.raises(xg.DeserializationError, match="another tokenizer"):
        xg.CompiledGrammar.deserialize_json(grammar.serialize_json(), target)


def test_other_engine_or_format_version_is_refused() -> None:
    info = small_info()
    grammar = xg.GrammarCompiler(info).compile_grammar('root ::= "a"')
    blob = _native._serialize_compiled_grammar(grammar._handle, info._handle, "0.0.0-other", True)
    with pytest.raises(xg.DeserializationError, match="engine version '0.0.0-other'"):
        xg.CompiledGrammar.deserialize_bytes(blob, info)
    document = json.loads(grammar.serialize_json())
    for field, value, message in [("engine_version", "9.9", "engine version"), ("format_version", 99, "format version"),
                                  ("format", "xg2.tokenizer_info", "not a xg2.compiled_grammar"),
                                  ("data", "***", "not base64")]:
        with pytest.raises(xg.DeserializationError, match=message):
            xg.CompiledGrammar.deserialize_json(json.dumps(dict(document, **{field: value})), info)
    with pytest.raises(xg.DeserializationError, match="not valid JSON"):
        xg.CompiledGrammar.deserialize_json(grammar.serialize_json()[:-3], info)
    with pytest.raises(xg.DeserializationError, match="other kind"):
        xg.CompiledGrammar.deserialize_bytes(info.serialize_bytes(), info)
    with pytest.raises(TypeError):
        xg.CompiledGrammar.deserialize_bytes("text", info)


def corrupt_variants(blob: bytes) -> list[bytes]:
    """The blob cut at every 1/16th of its length, and with single bytes flipped across it."""
    cuts = [blob[: len(blob) * k // 16] for k in range(16)]
    rng = random.Random(7)
    flips = []
    for position in sorted({0, 5, len(blob) - 1, *rng.sample(range(len(blob)), 24)}):
        flipped = bytearray(blob)
        flipped[position] ^= 1 << rng.randrange(8)
        flips.append(bytes(flipped))
    return cuts + flips + [blob + b"\0"]


def token_grammar_blob() -> tuple[xg.TokenizerInfo, bytes]:
    info = small_info()
    grammar = xg.GrammarCompiler(info).compile_grammar(
        'root ::= "{" item{0,70} "}" Token(7)\nitem ::= ("a" | "b")+ " "?', "root")
    matcher = xg.GrammarMatcher(grammar)
    matcher.fill_next_token_bitmask(np.zeros(xg.get_bitmask_shape(1, info.vocab_size), dtype=np.int32))
    return info, grammar.serialize_bytes()


def test_truncated_or_flipped_blobs_raise_the_typed_error() -> None:
    info, blob = token_grammar_blob()
    for bad in corrupt_variants(blob):
        with pytest.raises(xg.DeserializationError):
            xg.CompiledGrammar.deserialize_bytes(bad, info)
    tokenizer_blob = info.serialize_bytes()
    for bad in corrupt_variants(tokenizer_blob):
        with pytest.raises(xg.DeserializationError):
            xg.TokenizerInfo.deserialize_bytes(bad)


def test_structural_checks_stop_corrupt_blobs_that_pass_the_checksum() -> None:
    # Checksum off: every corrupt variant must reach the length and FSM checks, and what
    # passes them must be a grammar a matcher can run without going out of bounds.
    info, blob = token_grammar_blob()
    rng = random.Random(11)
    loaded = refused = 0
    variants = corrupt_variants(blob)
    for _ in range(150):
        flipped = bytearray(blob)
        for _ in range(rng.randrange(1, 4)):
            flipped[rng.randrange(len(blob))] = rng.randrange(256)
        variants.append(bytes(flipped))
    for bad in variants:
        try:
            handle = _native._deserialize_compiled_grammar(info._handle, bad, engine_version(), verify_checksum=False)
        except xg.DeserializationError:
            refused += 1
            continue
        loaded += 1
        grammar = xg.CompiledGrammar(handle, info, "corrupt")
        matcher = xg.GrammarMatcher(grammar)
        bitmask = np.zeros(xg.get_bitmask_shape(1, info.vocab_size), dtype=np.int32)
        for token in (3, 0, 1, 5, 4, 7):
            try:
                matcher.fill_next_token_bitmask(bitmask)
                matcher.accept_token(token)
            except xg.XG2Error:
                break
    assert refused > 0 and refused + loaded == len(variants)


def test_engine_version_of_raw_bytes_is_named_escaped() -> None:
    # The stored version is read from the blob: bytes that are not UTF-8 must come out escaped
    # in the message (they once made Python raise UnicodeDecodeError instead of the typed error).
    info = small_info()
    grammar = xg.GrammarCompiler(info).compile_grammar('root ::= "a"')
    blob = _native._serialize_compiled_grammar(grammar._handle, info._handle, "VVVV", True)
    damaged = blob.replace(b"VVVV", b"\xff\x9bV\x00", 1)
    with pytest.raises(xg.DeserializationError, match=r"engine version '\\xff\\x9bV\\x00'"):
        _native._deserialize_compiled_grammar(info._handle, damaged, engine_version(), verify_checksum=False)
