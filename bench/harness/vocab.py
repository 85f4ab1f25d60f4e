"""Tokenizers for the benchmark, loaded from the shared data folder only (never from a hub).

Every engine builds its own tokenizer table from the same Hugging Face tokenizer object, with
the same vocabulary size (the bitmask width) and the same single stop token (the tokenizer's
``eos_token``), so masks are comparable bit for bit.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from .config import TOKENIZERS, data_dir

# Never reach a hub: the tokenizers are local files.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


@lru_cache(maxsize=1)
def _byte_level_table() -> dict[str, int]:
    """The byte-level BPE alphabet: each byte is spelled as one printable code point.

    Printable Latin-1 bytes stand for themselves; the remaining bytes (controls, space,
    DEL, NBSP, soft hyphen...) are spelled by code points 256, 257, ... in byte order.
    """
    printable = [*range(0x21, 0x7F), *range(0xA1, 0xAD), *range(0xAE, 0x100)]
    table = {chr(b): b for b in printable}
    extra = 0
    for b in range(256):
        if b not in table.values():
            table[chr(256 + extra)] = b
            extra += 1
    return table


def byte_level_decode(piece: str) -> bytes | None:
    """Bytes of a byte-level BPE token string, or None if it is not spelled in that alphabet."""
    table = _byte_level_table()
    try:
        return bytes(table[ch] for ch in piece)
    except KeyError:
        return None


@dataclass
class Vocab:
    """A tokenizer as the harness uses it."""

    name: str
    path: Path
    hf: Any  # transformers.PreTrainedTokenizerFast
    vocab_size: int
    eos_id: int
    token_bytes: list[bytes]  # what each id appends to the text; b"" for special tokens
    special_ids: frozenset[int]

    def encode(self, text: str) -> list[int]:
        """Token ids of ``text`` without BOS/EOS."""
        return list(self.hf.backend_tokenizer.encode(text, add_special_tokens=False).ids)

    def decode_bytes(self, ids: list[int]) -> bytes:
        """The bytes a sequence of (non-special) ids spells."""
        return b"".join(self.token_bytes[i] for i in ids if 0 <= i < len(self.token_bytes))


def load_vocab(name: str) -> Vocab:
    """Loads one of :data:`~harness.config.TOKENIZERS` from ``tokenizers/hf/``."""
    if name not in TOKENIZERS:
        raise ValueError(f"unknown tokenizer {name!r}; choose one of {sorted(TOKENIZERS)}")
    import transformers

    path = data_dir() / "tokenizers" / "hf" / TOKENIZERS[name]
    hf = transformers.PreTrainedTokenizerFast.from_pretrained(str(path), local_files_only=True)
    vocab_size = len(hf)
    eos_id = hf.eos_token_id
    if eos_id is None:
        raise ValueError(f"tokenizer {name} has no eos_token")
    specials = set(hf.all_special_ids)
    added = {tok.content: idx for idx, tok in hf.added_tokens_decoder.items()}
    id_to_piece = hf.convert_ids_to_tokens(list(range(vocab_size)))
    token_bytes: list[bytes] = []
    for idx, piece in enumerate(id_to_piece):
        if piece is None or idx in specials:
            token_bytes.append(b"")
        elif piece in added and added[piece] == idx:
            token_bytes.append(piece.encode("utf-8"))
        else:
            decoded = byte_level_decode(piece)
            token_bytes.append(decoded if decoded is not None else hf.decode([idx]).encode("utf-8"))
    special_ids = frozenset(idx for idx, tok in hf.added_tokens_decoder.items() if tok.special)
    return Vocab(name, path, hf, vocab_size, int(eos_id), token_bytes, special_ids)
