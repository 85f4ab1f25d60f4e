"""Compiled grammars and tokenizer tables to bytes or JSON text and back.

The bytes are the engine's versioned binary format (native/matcher/grammar_serialization.h):
format version, engine version and a fingerprint of the tokenizer (vocabulary bytes, size,
stop and special ids), then the grammar's automaton and metadata and the token
classifications its mask cache had built, under a checksum. A grammar is read back against a
``TokenizerInfo`` whose fingerprint must match. The JSON form (``serialize_json``, the name
xgrammar uses) wraps the same bytes in base64 with the versions readable in clear.

Anything that cannot be read back -- truncated, corrupt, another format or engine version,
another tokenizer -- raises ``DeserializationError`` naming what mismatched.
"""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any, Optional

from . import _native
from .exceptions import DeserializationError

_GRAMMAR_FORMAT = "xg2.compiled_grammar"
_TOKENIZER_FORMAT = "xg2.tokenizer_info"


def engine_version() -> str:
    """The version written into every blob; a blob of another version is refused."""
    from . import __version__

    return __version__


def _check_bytes(data: Any, what: str) -> bytes:
    if isinstance(data, (bytearray, memoryview)):
        return bytes(data)
    if not isinstance(data, bytes):
        raise TypeError(f"{what} must be bytes, got {type(data).__name__}")
    return data


def grammar_to_bytes(grammar: Any, *, with_classifications: bool = True) -> bytes:
    """The compiled grammar's blob (``grammar`` is an ``xg2_plugin.CompiledGrammar``)."""
    return _native._serialize_compiled_grammar(
        grammar._handle, grammar.tokenizer_info._handle, engine_version(), with_classifications
    )


def grammar_from_bytes(data: Any, tokenizer_info: Any, *, compiler: Optional[Any] = None) -> Any:
    """The compiled grammar of ``data`` for ``tokenizer_info``. With ``compiler`` (a
    ``GrammarCompiler`` of that tokenizer) the grammar shares the compiler's mask-cache pool,
    derived vocabularies and cache options, as one it compiled would."""
    from .compiler import CompiledGrammar
    from .tokenizer_info import TokenizerInfo

    data = _check_bytes(data, "data")
    if not isinstance(tokenizer_info, TokenizerInfo):
        raise TypeError(f"tokenizer_info must be a TokenizerInfo, got {type(tokenizer_info).__name__}")
    if compiler is None:
        handle = _native._deserialize_compiled_grammar(tokenizer_info._handle, data, engine_version())
    else:
        handle = _native._deserialize_compiled_grammar(
            tokenizer_info._handle, data, engine_version(), compiler._token_literal_vocabs, compiler._mask_pool,
            compiler._mask_cache, compiler._cross_grammar_cache, compiler._precompute_nodes,
        )
    return CompiledGrammar(handle, tokenizer_info, "deserialized")


def _wrap_json(kind: str, blob: bytes) -> str:
    return json.dumps({
        "format": kind,
        "format_version": int(_native.serialization_format_version),
        "engine_version": engine_version(),
        "data": base64.b64encode(blob).decode("ascii"),
    })


def _unwrap_json(text: Any, kind: str) -> bytes:
    if not isinstance(text, str):
        raise TypeError(f"json_str must be a str, got {type(text).__name__}")
    try:
        document = json.loads(text)
    except ValueError as error:
        raise DeserializationError(f"serialized {kind} is not valid JSON: {error}") from None
    if not isinstance(document, dict) or document.get("format") != kind:
        found = document.get("format") if isinstance(document, dict) else type(document).__name__
        raise DeserializationError(f"serialized JSON is not a {kind} (format {found!r})"[:200])
    if document.get("format_version") != _native.serialization_format_version:
        raise DeserializationError(
            f"serialized {kind} has format version {document.get('format_version')!r}, "
            f"this engine reads version {_native.serialization_format_version}"[:200]
        )
    if document.get("engine_version") != engine_version():
        raise DeserializationError(
            f"serialized {kind} was written by engine version {document.get('engine_version')!r}, "
            f"this is {engine_version()!r}"[:200]
        )
    data = document.get("data")
    if not isinstance(data, str):
        raise DeserializationError(f"serialized {kind} has no 'data' string")
    try:
        return base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError) as error:
        raise DeserializationError(f"serialized {kind} 'data' is not base64: {error}") from None


def grammar_to_json(grammar: Any) -> str:
    return _wrap_json(_GRAMMAR_FORMAT, grammar_to_bytes(grammar))


def grammar_from_json(text: Any, tokenizer_info: Any) -> Any:
    return grammar_from_bytes(_unwrap_json(text, _GRAMMAR_FORMAT), tokenizer_info)


def tokenizer_to_bytes(tokenizer_info: Any) -> bytes:
    return _native._serialize_tokenizer_info(tokenizer_info._handle, engine_version())


def tokenizer_from_bytes(data: Any) -> Any:
    from .tokenizer_info import TokenizerInfo

    info = TokenizerInfo.__new__(TokenizerInfo)
    info._handle = _native._deserialize_tokenizer_info(_check_bytes(data, "data"), engine_version())
    info._decoded_vocab = None
    return info


def tokenizer_to_json(tokenizer_info: Any) -> str:
    return _wrap_json(_TOKENIZER_FORMAT, tokenizer_to_bytes(tokenizer_info))


def tokenizer_from_json(text: Any) -> Any:
    return tokenizer_from_bytes(_unwrap_json(text, _TOKENIZER_FORMAT))


def tokenizer_fingerprint(tokenizer_info: Any) -> str:
    """Hex digest naming the vocabulary (computed once per table)."""
    return _native._tokenizer_fingerprint(tokenizer_info._handle).hex()
