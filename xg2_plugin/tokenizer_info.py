"""Tokenizer vocabularies as the engine sees them.

A :class:`TokenizerInfo` records, for every token id of a model, the bytes the token appends to
the generated text, which ids are special (never grammar text), which ids stop generation, and
how many ids the model has (its logits may be padded beyond the tokenizer). Constructors read
Hugging Face, tiktoken, sentencepiece and Mistral tekken tokenizers; the vocabulary spelling is
detected from the tokens themselves rather than trusted from metadata.

The API follows xgrammar's ``TokenizerInfo`` so that serving engines can switch with little
friction.
"""

from __future__ import annotations

import base64
import binascii
import enum
import json
import os
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from xg2_plugin import _native

__all__ = ["TokenizerInfo", "VocabType"]


class VocabType(enum.IntEnum):
    """How a tokenizer's vocabulary strings encode bytes (same numbering as xgrammar)."""

    RAW = 0
    """The strings are the bytes themselves (tiktoken, Mistral tekken)."""
    BYTE_FALLBACK = 1
    """Sentencepiece style: ``"▁"`` is a space and ``"<0xAB>"`` is the single byte 0xAB."""
    BYTE_LEVEL = 2
    """GPT-2 byte-level BPE: every byte is spelled as one printable code point (``"Ġ"`` = space)."""


# Tokenizers without model metadata (a bare `tokenizers.Tokenizer`, a tiktoken Encoding) do not
# say which tokens end generation; these are the end-of-text / end-of-turn tokens of common
# model families, used only when the caller passes no stop_token_ids.
_WELL_KNOWN_STOP_TOKENS = (
    "</s>",
    "<|endoftext|>",
    "<|end_of_text|>",
    "<|eot_id|>",
    "<|eom_id|>",
    "<|im_end|>",
    "<|return|>",
    "<|call|>",
    "<eos>",
    "<end_of_turn>",
)

# Mistral's fixed control-token layout in tekken files that do not list their special tokens.
_TEKKEN_DEFAULT_EOS_ID = 2


class TokenizerInfo:
    """The vocabulary table shared by every compiled grammar and matcher of one model.

    Invariants the engine relies on:

    * ``decoded_vocab[i]`` is what token ``i`` appends to the output *mid-sequence*. For
      sentencepiece tokenizers with :attr:`add_prefix_space`, the first token of an encoded text
      carries a leading space that the tokenizer's own ``decode`` drops; the decoded bytes keep it.
    * Special ids, stop ids, ids that decode to nothing, and padding ids (from the tokenizer's size
      up to :attr:`vocab_size`) are never allowed inside grammar text. Stop ids are allowed only
      where the grammar may end.

    Instances are immutable. Build them with the constructor (from a raw vocabulary) or with
    :meth:`from_huggingface`, :meth:`from_tiktoken`, :meth:`from_sentencepiece` or
    :meth:`from_mistral_tekken`.
    """

    _handle: _native.TokenizerInfo
    _decoded_vocab: list[bytes] | None

    def __init__(
        self,
        encoded_vocab: Sequence[bytes | str],
        vocab_type: VocabType | int = VocabType.RAW,
        *,
        vocab_size: int | None = None,
        stop_token_ids: Iterable[int] | int | None = None,
        add_prefix_space: bool = False,
        special_token_ids: Iterable[int] | None = None,
    ) -> None:
        """Build the table from a vocabulary listed by token id.

        Args:
            encoded_vocab: ``encoded_vocab[i]`` spells token ``i`` in the tokenizer's own form:
                the bytes for ``RAW`` (``str`` is taken as UTF-8), or the ``tokenizer.json`` /
                sentencepiece string for ``BYTE_LEVEL`` and ``BYTE_FALLBACK``. Empty entries are
                tokens that never appear in text.
            vocab_type: How the strings encode bytes.
            vocab_size: The model's vocabulary size (its logits width); defaults to
                ``len(encoded_vocab)``. Larger values add padding ids that are never allowed.
            stop_token_ids: Ids that end generation.
            add_prefix_space: Whether the tokenizer prepends a space to the text it encodes
                (sentencepiece's dummy prefix), so the first token's leading space is not output.
            special_token_ids: Ids that are never grammar text (control tokens, chat markers).

        Raises:
            TypeError: An argument has the wrong type.
            ValueError: An id is outside ``[0, vocab_size)``, ``vocab_size`` is smaller than the
                vocabulary, or ``vocab_type`` is unknown.
        """
        vocab_type = _as_vocab_type(vocab_type)
        _check_token_sequence(encoded_vocab, "encoded_vocab")
        if vocab_type == VocabType.RAW:
            decoded: Sequence[bytes | str] = encoded_vocab
        else:
            decoded = _native.decode_vocabulary(list(encoded_vocab), int(vocab_type))
        self._init_native(
            decoded,
            vocab_type,
            vocab_size=vocab_size,
            stop_token_ids=stop_token_ids,
            special_token_ids=special_token_ids,
            add_prefix_space=add_prefix_space,
        )

    def _init_native(
        self,
        decoded_vocab: Sequence[bytes | str],
        vocab_type: VocabType,
        *,
        vocab_size: int | None,
        stop_token_ids: Iterable[int] | int | None,
        special_token_ids: Iterable[int] | None,
        add_prefix_space: bool,
    ) -> None:
        if vocab_size is None:
            vocab_size = len(decoded_vocab)
        elif not isinstance(vocab_size, int) or isinstance(vocab_size, bool):
            raise TypeError(f"vocab_size must be an int, not {type(vocab_size).__name__}")
        _check_tokenizer_size(vocab_size, "vocab_size")
        if not isinstance(add_prefix_space, bool):
            raise TypeError(f"add_prefix_space must be a bool, not {type(add_prefix_space).__name__}")
        self._handle = _native.TokenizerInfo(
            decoded_vocab if isinstance(decoded_vocab, list) else list(decoded_vocab),
            int(vocab_type),
            vocab_size,
            _as_id_list(stop_token_ids, "stop_token_ids"),
            _as_id_list(special_token_ids, "special_token_ids"),
            add_prefix_space,
        )
        self._decoded_vocab = None

    @classmethod
    def _from_decoded(
        cls,
        decoded_vocab: list[bytes],
        vocab_type: VocabType,
        *,
        vocab_size: int | None,
        stop_token_ids: Iterable[int] | int | None,
        special_token_ids: Iterable[int],
        add_prefix_space: bool,
    ) -> TokenizerInfo:
        info = cls.__new__(cls)
        info._init_native(
            decoded_vocab,
            vocab_type,
            vocab_size=vocab_size,
            stop_token_ids=stop_token_ids,
            special_token_ids=special_token_ids,
            add_prefix_space=add_prefix_space,
        )
        return info

    # ----------------------------------------------------------------------------------------
    # Constructors from tokenizer libraries

    @classmethod
    def from_huggingface(
        cls,
        tokenizer: Any,
        vocab_size: int | None = None,
        stop_token_ids: Iterable[int] | int | None = None,
    ) -> TokenizerInfo:
        """Build the table from a Hugging Face tokenizer.

        Args:
            tokenizer: A ``transformers`` tokenizer (fast or slow) or a ``tokenizers.Tokenizer``.
            vocab_size: The model's vocabulary size when it is padded beyond the tokenizer (e.g.
                151,936 for Qwen2.5); padding ids are never allowed.
            stop_token_ids: Ids that end generation. Defaults to the tokenizer's eos id plus the
                eos ids listed in ``generation_config.json`` / ``tokenizer_config.json`` next to a
                locally loaded tokenizer; for a bare ``tokenizers.Tokenizer``, to the well-known
                end-of-text tokens it contains.

        The vocabulary type is detected from the model vocabulary. Added tokens marked special,
        and a ``transformers`` tokenizer's declared special tokens (bos, eos, unk, pad, ...), are
        special; added tokens not marked special (Qwen's ``<tool_call>``, ``<think>``) are
        ordinary text that decodes to their content.
        """
        backend = _huggingface_backend(tokenizer)
        if backend is not None:
            vocab: Mapping[str | bytes, int] = backend.get_vocab(with_added_tokens=True)
            added_tokens = dict(backend.get_added_tokens_decoder())
        elif callable(getattr(tokenizer, "get_vocab", None)):
            vocab = tokenizer.get_vocab()
            added_tokens = {}
        else:
            raise TypeError(
                "from_huggingface expects a transformers tokenizer or a tokenizers.Tokenizer, "
                f"not {type(tokenizer).__name__}"
            )
        # A transformers tokenizer may know added tokens (and their special flag) that its
        # backend does not; its flags take precedence.
        added_tokens.update(getattr(tokenizer, "added_tokens_decoder", None) or {})
        if not vocab:
            raise ValueError("the tokenizer's vocabulary is empty")

        _check_vocabulary_ids(vocab.items(), "the tokenizer's vocabulary")
        _check_vocabulary_ids(((added.content, i) for i, added in added_tokens.items()), "added token")
        tokenizer_size = max(max(vocab.values()), max(added_tokens, default=-1)) + 1
        encoded: list[str | bytes] = [""] * tokenizer_size
        for token, token_id in vocab.items():
            encoded[token_id] = token
        if backend is None and any(isinstance(token, bytes) for token in encoded):
            vocab_type = VocabType.RAW  # custom tokenizers (e.g. tiktoken-backed) map bytes to ids
        else:
            model_tokens = [
                token for token_id, token in enumerate(encoded) if token_id not in added_tokens
            ]
            vocab_type = VocabType(_native.detect_vocab_type(model_tokens))
        decoded = _native.decode_vocabulary(encoded, int(vocab_type))
        # Added tokens are matched in raw text before the model runs, so their text is their
        # content, whatever spelling the model vocabulary uses.
        special_ids = set()
        for token_id, added in added_tokens.items():
            decoded[token_id] = added.content.encode("utf-8")
            if added.special:
                special_ids.add(token_id)
        declared_special_ids = getattr(tokenizer, "all_special_ids", None) or []
        special_ids.update(i for i in declared_special_ids if 0 <= i < tokenizer_size)

        if stop_token_ids is None:
            if backend is tokenizer:
                stop_token_ids = _well_known_stop_ids(
                    {added.content: i for i, added in added_tokens.items() if added.special}
                )
            else:
                stop_token_ids = _transformers_stop_ids(tokenizer, vocab)
            if not stop_token_ids:
                warnings.warn(
                    "could not determine the tokenizer's stop tokens; pass stop_token_ids",
                    stacklevel=2,
                )

        encoder = backend if backend is not None else tokenizer
        add_prefix_space = _adds_prefix_space(decoded, lambda text: _huggingface_encode(encoder, text))
        return cls._from_decoded(
            decoded,
            vocab_type,
            vocab_size=vocab_size,
            stop_token_ids=stop_token_ids,
            special_token_ids=sorted(special_ids),
            add_prefix_space=add_prefix_space,
        )

    @classmethod
    def from_tiktoken(
        cls,
        encoding: Any,
        vocab_size: int | None = None,
        stop_token_ids: Iterable[int] | int | None = None,
    ) -> TokenizerInfo:
        """Build the table from a ``tiktoken.Encoding`` (a raw bytes vocabulary).

        Every special token of the encoding is special. ``stop_token_ids`` defaults to the
        well-known end-of-text tokens among them (``<|endoftext|>``, ``<|eot_id|>``,
        ``<|im_end|>``, ``<|return|>``, ...); pass it explicitly for other encodings.
        """
        if not all(hasattr(encoding, name) for name in ("n_vocab", "encode", "decode_single_token_bytes")):
            raise TypeError(f"from_tiktoken expects a tiktoken.Encoding, not {type(encoding).__name__}")
        tokenizer_size = _check_tokenizer_size(encoding.n_vocab, "the encoding's n_vocab")
        decoded: list[bytes] = [b""] * tokenizer_size
        mergeable_ranks: Mapping[bytes, int] | None = getattr(encoding, "_mergeable_ranks", None)
        special_tokens: Mapping[str, int] = getattr(encoding, "_special_tokens", None) or {}
        _check_vocabulary_ids(special_tokens.items(), "special token", tokenizer_size)
        if mergeable_ranks is not None:
            _check_vocabulary_ids(mergeable_ranks.items(), "mergeable rank", tokenizer_size)
            for token_bytes, rank in mergeable_ranks.items():
                decoded[rank] = token_bytes
        else:
            for token_id in range(tokenizer_size):
                try:
                    decoded[token_id] = encoding.decode_single_token_bytes(token_id)
                except KeyError:
                    pass  # a gap in the id space: never allowed
        for text, token_id in special_tokens.items():
            decoded[token_id] = text.encode("utf-8")
        if stop_token_ids is None:
            stop_token_ids = _well_known_stop_ids(special_tokens)
            if not stop_token_ids:
                warnings.warn(
                    f"tiktoken encoding {getattr(encoding, 'name', '?')!r} has no well-known stop "
                    "token; pass stop_token_ids",
                    stacklevel=2,
                )
        return cls._from_decoded(
            decoded,
            VocabType.RAW,
            vocab_size=vocab_size,
            stop_token_ids=stop_token_ids,
            special_token_ids=sorted(special_tokens.values()),
            add_prefix_space=False,
        )

    @classmethod
    def from_sentencepiece(
        cls,
        model_path_or_processor: str | os.PathLike[str] | Any,
        vocab_size: int | None = None,
        stop_token_ids: Iterable[int] | int | None = None,
    ) -> TokenizerInfo:
        """Build the table from a sentencepiece model (byte-fallback spelling).

        Args:
            model_path_or_processor: Path of a ``.model`` file or a loaded
                ``sentencepiece.SentencePieceProcessor``.
            vocab_size: The model's vocabulary size when padded beyond the tokenizer.
            stop_token_ids: Defaults to the model's eos id.

        Control, unknown and unused pieces are special.
        """
        processor = _sentencepiece_processor(model_path_or_processor)
        tokenizer_size = _check_tokenizer_size(processor.get_piece_size(), "the model's piece count")
        pieces = processor.id_to_piece(list(range(tokenizer_size)))
        decoded = _native.decode_vocabulary(pieces, int(VocabType.BYTE_FALLBACK))
        special_ids = [
            i
            for i in range(tokenizer_size)
            if processor.is_control(i) or processor.is_unknown(i) or processor.is_unused(i)
        ]
        if stop_token_ids is None:
            eos_id = processor.eos_id()
            stop_token_ids = [eos_id] if eos_id >= 0 else []
        add_prefix_space = _adds_prefix_space(decoded, lambda text: processor.encode(text))
        return cls._from_decoded(
            decoded,
            VocabType.BYTE_FALLBACK,
            vocab_size=vocab_size,
            stop_token_ids=stop_token_ids,
            special_token_ids=special_ids,
            add_prefix_space=add_prefix_space,
        )

    @classmethod
    def from_mistral_tekken(
        cls,
        path_or_dict: str | os.PathLike[str] | Mapping[str, Any],
        vocab_size: int | None = None,
        stop_token_ids: Iterable[int] | int | None = None,
    ) -> TokenizerInfo:
        """Build the table from Mistral's tekken JSON (``tekken.json``, a raw bytes vocabulary).

        The first ``config.default_num_special_tokens`` ids are special tokens; BPE rank ``r``
        is id ``num_special + r``, up to ``config.default_vocab_size`` ids in all.
        ``stop_token_ids`` defaults to ``</s>`` (id 2 in files that do not list their special
        tokens).
        """
        data = _load_tekken(path_or_dict)
        config = data["config"]
        listed_specials: list[Mapping[str, Any]] = list(data.get("special_tokens") or [])
        num_special = _tekken_int(config.get("default_num_special_tokens", len(listed_specials)),
                                  "config.default_num_special_tokens")
        tokenizer_size = _tekken_int(config.get("default_vocab_size", num_special + len(data["vocab"])),
                                     "config.default_vocab_size")
        if num_special < 0 or tokenizer_size < num_special:
            raise ValueError(
                f"tekken config is inconsistent: {num_special} special tokens, vocab size {tokenizer_size}"
            )
        _check_tokenizer_size(tokenizer_size, "tekken config.default_vocab_size")
        decoded: list[bytes] = [b""] * tokenizer_size
        for index, entry in enumerate(data["vocab"]):
            rank = _tekken_entry(entry, "rank", f"vocab[{index}]")
            if rank < 0:
                raise ValueError(f"tekken vocab[{index}] has a negative rank {rank}")
            token_id = num_special + rank
            if token_id < tokenizer_size:
                try:
                    decoded[token_id] = base64.b64decode(entry["token_bytes"], validate=True)
                except (binascii.Error, TypeError, KeyError) as error:
                    raise ValueError(f"tekken rank {entry['rank']} has invalid token_bytes") from error
        eos_id = _TEKKEN_DEFAULT_EOS_ID
        for index, entry in enumerate(listed_specials):
            token_id = _tekken_entry(entry, "rank", f"special_tokens[{index}]")
            if 0 <= token_id < num_special:
                if not isinstance(entry.get("token_str"), str):
                    raise ValueError(f"tekken special_tokens[{index}] must have a string 'token_str'")
                decoded[token_id] = entry["token_str"].encode("utf-8")
                if entry["token_str"] == "</s>":
                    eos_id = token_id
        return cls._from_decoded(
            decoded,
            VocabType.RAW,
            vocab_size=vocab_size,
            stop_token_ids=[eos_id] if stop_token_ids is None else stop_token_ids,
            special_token_ids=range(num_special),
            add_prefix_space=False,
        )

    # ----------------------------------------------------------------------------------------
    # Properties

    @property
    def vocab_size(self) -> int:
        """The model's vocabulary size (width of its logits), padding included."""
        return self._handle.vocab_size

    @property
    def vocab_type(self) -> VocabType:
        """How the tokenizer's vocabulary strings encode bytes."""
        return VocabType(int(self._handle.vocab_type))

    @property
    def stop_token_ids(self) -> list[int]:
        """Ids that end generation (allowed only where the grammar may end)."""
        return list(self._handle.stop_token_ids)

    @property
    def special_token_ids(self) -> list[int]:
        """Ids that never match grammar text."""
        return list(self._handle.special_token_ids)

    @property
    def add_prefix_space(self) -> bool:
        """Whether the tokenizer prepends a space to the text it encodes (sentencepiece style)."""
        return self._handle.add_prefix_space

    @property
    def decoded_vocab(self) -> list[bytes]:
        """The bytes each tokenizer id appends to the output mid-sequence (padding excluded)."""
        if self._decoded_vocab is None:
            self._decoded_vocab = self._handle.decoded_tokens()
        return self._decoded_vocab

    @property
    def prepend_space_in_tokenization(self) -> bool:
        """Deprecated spelling of :attr:`add_prefix_space` (xgrammar's); warns."""
        warnings.warn("prepend_space_in_tokenization is deprecated; use add_prefix_space", DeprecationWarning,
                      stacklevel=2)
        return self.add_prefix_space

    def dump_metadata(self) -> str:
        """Everything but the vocabulary, as JSON text, for :meth:`from_vocab_and_metadata` to
        rebuild the same table elsewhere from the same vocabulary. The keys are xgrammar's
        (``vocab_type``, ``vocab_size``, ``add_prefix_space``, ``stop_token_ids``) plus
        ``special_token_ids``, which a rebuilt table needs to keep the same masks."""
        return json.dumps({"vocab_type": int(self.vocab_type), "vocab_size": self.vocab_size,
                           "add_prefix_space": self.add_prefix_space, "stop_token_ids": self.stop_token_ids,
                           "special_token_ids": self.special_token_ids}, separators=(",", ":"))

    @staticmethod
    def from_vocab_and_metadata(encoded_vocab: Sequence[bytes | str], metadata: str) -> TokenizerInfo:
        """The table of ``encoded_vocab`` (as for the constructor) with :meth:`dump_metadata`'s
        settings; xgrammar's metadata (no ``special_token_ids``) is read too. Anything else
        raises ``InvalidArgumentError``."""
        try:
            fields = json.loads(metadata)
        except (TypeError, ValueError) as error:
            raise _native.InvalidArgumentError(f"tokenizer metadata is not JSON: {error}") from None
        required = {"vocab_type", "vocab_size", "add_prefix_space", "stop_token_ids"}
        if not isinstance(fields, dict) or not required <= set(fields) <= required | {"special_token_ids"}:
            raise _native.InvalidArgumentError(
                f"tokenizer metadata must be a JSON object with the keys {sorted(required)} "
                "and optionally special_token_ids")
        return TokenizerInfo(encoded_vocab, fields["vocab_type"], vocab_size=fields["vocab_size"],
                             stop_token_ids=fields["stop_token_ids"], add_prefix_space=fields["add_prefix_space"],
                             special_token_ids=fields.get("special_token_ids"))

    def memory_bytes(self) -> int:
        """Byte size of the native tables."""
        return self._handle.memory_bytes()

    def serialize_json(self) -> str:
        """The table as JSON text (xg2_plugin/serialization.py), read back by :meth:`deserialize_json`."""
        from . import serialization

        return serialization.tokenizer_to_json(self)

    @staticmethod
    def deserialize_json(json_string: str) -> TokenizerInfo:
        """The table of :meth:`serialize_json`; ``DeserializationError`` for corrupt text or another
        engine version."""
        from . import serialization

        return serialization.tokenizer_from_json(json_string)

    def serialize_bytes(self) -> bytes:
        """Like :meth:`serialize_json`, as the compact binary blob."""
        from . import serialization

        return serialization.tokenizer_to_bytes(self)

    @staticmethod
    def deserialize_bytes(data: bytes) -> TokenizerInfo:
        """Like :meth:`deserialize_json`, from :meth:`serialize_bytes`' blob."""
        from . import serialization

        return serialization.tokenizer_from_bytes(data)

    def __repr__(self) -> str:
        return (
            f"TokenizerInfo(vocab_size={self.vocab_size}, vocab_type={self.vocab_type.name}, "
            f"stop_token_ids={self.stop_token_ids}, "
            f"special_token_ids=<{len(self._handle.special_token_ids)} ids>, "
            f"add_prefix_space={self.add_prefix_space})"
        )


# --------------------------------------------------------------------------------------------
# Argument checking


def _as_vocab_type(value: VocabType | int) -> VocabType:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"vocab_type must be a VocabType, not {type(value).__name__}")
    try:
        return VocabType(value)
    except ValueError:
        raise ValueError(
            f"vocab_type must be one of {[f'{t.name}={t.value}' for t in VocabType]}, got {value}"
        ) from None


def _check_tokenizer_size(size: Any, what: str) -> int:
    """A vocabulary size within the engine's cap (``_native.MAX_VOCAB_SIZE``, a few million),
    checked before any per-id table is built."""
    if isinstance(size, bool) or not isinstance(size, int):
        raise TypeError(f"{what} must be an int, not {type(size).__name__}")
    if not 0 < size <= _native.MAX_VOCAB_SIZE:
        raise ValueError(f"{what} must be in [1, {_native.MAX_VOCAB_SIZE}], got {size}")
    return size


def _check_vocabulary_ids(
    tokens_and_ids: Iterable[tuple[Any, Any]], what: str, limit: int | None = None
) -> None:
    """Every id an int in ``[0, limit)`` (default: the vocabulary cap), checked before a
    table indexed by id is allocated: a negative id would index from the end, and one huge
    id would size the table."""
    limit = _native.MAX_VOCAB_SIZE if limit is None else limit
    pairs = list(tokens_and_ids)
    ids = [token_id for _, token_id in pairs]
    if not ids or (all(type(i) is int for i in ids) and 0 <= min(ids) and max(ids) < limit):
        return
    for token, token_id in pairs:
        if isinstance(token_id, bool) or not isinstance(token_id, int):
            raise TypeError(f"{what} {token!r} has a non-integer id {token_id!r}")
        if not 0 <= token_id < limit:
            raise ValueError(f"{what} {token!r} has id {token_id}, outside [0, {limit})")


def _tekken_int(value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"tekken {what} must be an integer, got {value!r}")
    return value


def _tekken_entry(entry: Any, key: str, what: str) -> int:
    if not isinstance(entry, Mapping) or key not in entry:
        raise ValueError(f"tekken {what} must be an object with a {key!r}")
    return _tekken_int(entry[key], f"{what}.{key}")


def _check_token_sequence(tokens: object, name: str) -> None:
    if isinstance(tokens, (str, bytes)) or not isinstance(tokens, Sequence):
        raise TypeError(f"{name} must be a list of bytes or str, not {type(tokens).__name__}")


def _as_id_list(ids: Iterable[int] | int | None, name: str) -> list[int]:
    if ids is None:
        return []
    if isinstance(ids, int) and not isinstance(ids, bool):
        return [ids]
    if isinstance(ids, (str, bytes)) or not isinstance(ids, Iterable):
        raise TypeError(f"{name} must be a list of ints, not {type(ids).__name__}")
    result: list[int] = []
    for token_id in ids:
        if isinstance(token_id, bool) or not isinstance(token_id, int):
            raise TypeError(f"{name} must contain ints, found {type(token_id).__name__}")
        result.append(int(token_id))
    return list(dict.fromkeys(result))  # drop duplicates, keep order


# --------------------------------------------------------------------------------------------
# Tokenizer-library helpers


def _adds_prefix_space(decoded: Sequence[bytes], encode: Callable[[str], Sequence[int]]) -> bool:
    """Whether encoding "a" yields tokens that spell " a": the tokenizer prepends a space."""
    try:
        ids = encode("a")
        return b"".join(decoded[i] for i in ids) == b" a"
    except Exception:  # an exotic tokenizer that cannot encode plain text: assume no prefix
        return False


def _well_known_stop_ids(special_tokens: Mapping[str, int]) -> list[int]:
    return [special_tokens[name] for name in _WELL_KNOWN_STOP_TOKENS if name in special_tokens]


def _huggingface_backend(tokenizer: Any) -> Any | None:
    """The `tokenizers.Tokenizer` behind a Hugging Face tokenizer (itself if it is one)."""
    try:
        from tokenizers import Tokenizer
    except ImportError:  # then the tokenizer is a slow transformers one
        return None
    if isinstance(tokenizer, Tokenizer):
        return tokenizer
    backend = getattr(tokenizer, "backend_tokenizer", None)
    return backend if isinstance(backend, Tokenizer) else None


def _huggingface_encode(encoder: Any, text: str) -> list[int]:
    encoded = encoder.encode(text, add_special_tokens=False)
    return list(getattr(encoded, "ids", encoded))


def _transformers_stop_ids(tokenizer: Any, vocab: Mapping[Any, int]) -> list[int]:
    """The eos id of a transformers tokenizer plus the eos lists of its local config files."""
    stop_ids: list[int] = []
    eos_id = getattr(tokenizer, "eos_token_id", None)
    if isinstance(eos_id, int):
        stop_ids.append(eos_id)
    directory = Path(str(getattr(tokenizer, "name_or_path", "") or ""))
    if str(directory) and directory.is_dir():
        generation_config = _read_json_object(directory / "generation_config.json")
        stop_ids.extend(_ids_of(generation_config.get("eos_token_id")))
        tokenizer_config = _read_json_object(directory / "tokenizer_config.json")
        for eos_token in _as_list(tokenizer_config.get("eos_token")):
            content = eos_token.get("content") if isinstance(eos_token, dict) else eos_token
            if isinstance(content, str) and content in vocab:
                stop_ids.append(vocab[content])
    return list(dict.fromkeys(stop_ids))


def _read_json_object(path: Path) -> dict[str, Any]:
    try:
        with open(path, encoding="utf-8") as file:
            data = json.load(file)
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _as_list(value: Any) -> list[Any]:
    if value is None:
        return []
    return list(value) if isinstance(value, list) else [value]


def _ids_of(value: Any) -> list[int]:
    return [v for v in _as_list(value) if isinstance(v, int) and not isinstance(v, bool)]


def _sentencepiece_processor(model_path_or_processor: Any) -> Any:
    if isinstance(model_path_or_processor, (str, os.PathLike)):
        path = Path(model_path_or_processor)
        if not path.is_file():
            raise ValueError(f"no sentencepiece model file at {str(path)!r}")
        import sentencepiece

        return sentencepiece.SentencePieceProcessor(model_file=str(path))
    required = ("get_piece_size", "id_to_piece", "is_control", "is_unknown", "is_unused", "eos_id")
    if all(hasattr(model_path_or_processor, name) for name in required):
        return model_path_or_processor
    raise TypeError(
        "from_sentencepiece expects a model path or a sentencepiece.SentencePieceProcessor, "
        f"not {type(model_path_or_processor).__name__}"
    )


def _load_tekken(path_or_dict: str | os.PathLike[str] | Mapping[str, Any]) -> Mapping[str, Any]:
    if isinstance(path_or_dict, (str, os.PathLike)):
        path = Path(path_or_dict)
        if not path.is_file():
            raise ValueError(f"no tekken file at {str(path)!r}")
        with open(path, encoding="utf-8") as file:
            data = json.load(file)
    elif isinstance(path_or_dict, Mapping):
        data = path_or_dict
    else:
        raise TypeError(
            f"from_mistral_tekken expects a path or a dict, not {type(path_or_dict).__name__}"
        )
    if not isinstance(data, Mapping) or not isinstance(data.get("config"), Mapping) or not isinstance(
        data.get("vocab"), list
    ):
        raise ValueError("not a tekken tokenizer: expected an object with 'config' and 'vocab'")
    return data
