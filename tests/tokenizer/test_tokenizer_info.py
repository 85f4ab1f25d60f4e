"""TokenizerInfo on every real tokenizer in the shared data, and on small raw vocabularies.

The central check: for a set of texts, encode with the real tokenizer, concatenate the bytes our
table gives for those ids, and compare with the text itself. That is exactly the property the
matcher relies on (a token is allowed iff its bytes continue the grammar).
"""

from __future__ import annotations

import base64
import json
import os
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from xg2_plugin import _native
from xg2_plugin.tokenizer_info import TokenizerInfo, VocabType

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

TEXTS = [
    "Hello, world!",
    '{"name": "Ada", "age": 36, "tags": ["x", "y"], "ok": true, "nothing": null}',
    '{\n  "nested": {\n    "list": [1, 2.5, -3e10]\n  }\n}',
    " one leading space",
    "   three leading spaces and two trailing  ",
    "line one\nline two\r\n\ttabbed\n\n\nend",
    "naïve café déjà vu — “quotes” ‘single’ «guillemets»",
    "emoji 😀👍🏽 🇫🇷 family 👨‍👩‍👧 done",
    "中文测试，日本語のテキスト、한국어 텍스트",
    "math ∑ x² ≤ ∞; ÆØÅ ß ΩΨ Жж",
    "\u00a0no-break space, zero\u200bwidth, soft\u00adhyphen, \x7f del",
    "<tool_call>{\"name\": \"f\"}</tool_call> <think>hmm</think>",
    "\n",
    "x",
]

# The tiktoken pre-split pattern only chooses among valid tokenizations of a text; the decoding
# property under test holds for any of them, so one pattern serves every encoding.
TIKTOKEN_PATTERN = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}"
    r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)

# tiktoken files: name -> (ranks file, specials file or inline specials)
TIKTOKEN_FILES: dict[str, tuple[str, str | dict[str, int]]] = {
    "llama3.1": ("llama3.1.tiktoken", "llama3.1_specials.json"),
    "qwen2.5": ("qwen.tiktoken", "qwen2.5_specials.json"),
    "qwen3": ("qwen.tiktoken", "qwen3_specials.json"),
    "o200k_harmony": ("o200k_base.tiktoken", "o200k_harmony_specials.json"),
    "cl100k_base": ("cl100k_base.tiktoken", {"<|endoftext|>": 100257, "<|endofprompt|>": 100276}),
    "r50k_base": ("r50k_base.tiktoken", {"<|endoftext|>": 50256}),
}

HF_NAMES = ["llama3.1", "qwen2.5", "qwen3", "gpt-oss", "gpt2", "phi-3"]
SENTENCEPIECE_NAMES = ["llama2", "mistral_v1", "mistral_v7"]


@dataclass(frozen=True)
class LoadedTokenizer:
    """A real tokenizer's encoder and the table built from it."""

    info: TokenizerInfo
    encode: Callable[[str], list[int]]
    token_id: Callable[[str], int]  # id of a (special or added) token given by its text
    expected_vocab_type: VocabType
    expected_prefix_space: bool
    source: object  # the tokenizer object the table was built from


def _load_hf(data_dir: Path, name: str, via_transformers: bool) -> LoadedTokenizer:
    path = data_dir / "tokenizers" / "hf" / name
    if via_transformers:
        transformers = pytest.importorskip("transformers")
        tokenizer = transformers.AutoTokenizer.from_pretrained(str(path))

        def encode(text: str) -> list[int]:
            return tokenizer.encode(text, add_special_tokens=False)

        token_id = tokenizer.convert_tokens_to_ids
    else:
        tokenizers = pytest.importorskip("tokenizers")
        tokenizer = tokenizers.Tokenizer.from_file(str(path / "tokenizer.json"))

        def encode(text: str) -> list[int]:
            return tokenizer.encode(text, add_special_tokens=False).ids

        token_id = tokenizer.token_to_id
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # every shipped tokenizer has detectable stop tokens
        info = TokenizerInfo.from_huggingface(tokenizer)
    sentencepiece_style = name == "phi-3"
    return LoadedTokenizer(
        info,
        encode,
        token_id,
        VocabType.BYTE_FALLBACK if sentencepiece_style else VocabType.BYTE_LEVEL,
        expected_prefix_space=sentencepiece_style,
        source=tokenizer,
    )


def _tiktoken_encoding(data_dir: Path, name: str):
    tiktoken = pytest.importorskip("tiktoken")
    from tiktoken.load import load_tiktoken_bpe

    ranks_file, specials = TIKTOKEN_FILES[name]
    directory = data_dir / "tokenizers" / "tiktoken"
    if isinstance(specials, str):
        specials = json.loads((directory / specials).read_text(encoding="utf-8"))
    ranks = load_tiktoken_bpe(str(directory / ranks_file))
    return tiktoken.Encoding(
        name, pat_str=TIKTOKEN_PATTERN, mergeable_ranks=ranks, special_tokens=specials
    )


def _load_tiktoken(data_dir: Path, name: str) -> LoadedTokenizer:
    encoding = _tiktoken_encoding(data_dir, name)
    info = TokenizerInfo.from_tiktoken(encoding)
    return LoadedTokenizer(
        info,
        lambda text: encoding.encode(text, disallowed_special=()),
        lambda text: encoding.encode_single_token(text),
        VocabType.RAW,
        expected_prefix_space=False,
        source=encoding,
    )


def _load_sentencepiece(data_dir: Path, name: str) -> LoadedTokenizer:
    sentencepiece = pytest.importorskip("sentencepiece")
    path = data_dir / "tokenizers" / "sentencepiece" / f"{name}.model"
    processor = sentencepiece.SentencePieceProcessor(model_file=str(path))
    # Loading from the path and from the processor must agree.
    info = TokenizerInfo.from_sentencepiece(path)
    assert info.decoded_vocab == TokenizerInfo.from_sentencepiece(processor).decoded_vocab
    return LoadedTokenizer(
        info,
        processor.encode,
        processor.piece_to_id,
        VocabType.BYTE_FALLBACK,
        expected_prefix_space=True,
        source=processor,
    )


TEKKEN_SPECIALS = {"<unk>": 0, "<s>": 1, "</s>": 2}


def _tekken_encoding(data_dir: Path):
    """A tiktoken Encoding over tekken's ranks: the encoder Mistral's own tokenizer uses."""
    tiktoken = pytest.importorskip("tiktoken")
    data = json.loads((data_dir / "tokenizers" / "mistral" / "tekken_240718.json").read_text())
    config = data["config"]
    rank_count = config["default_vocab_size"] - config["default_num_special_tokens"]
    ranks = {
        base64.b64decode(entry["token_bytes"]): entry["rank"]
        for entry in data["vocab"]
        if entry["rank"] < rank_count
    }
    encoding = tiktoken.Encoding("tekken", pat_str=config["pattern"], mergeable_ranks=ranks, special_tokens={})
    return data, encoding, config["default_num_special_tokens"]


def _load_tekken(data_dir: Path) -> LoadedTokenizer:
    data, encoding, num_special = _tekken_encoding(data_dir)
    info = TokenizerInfo.from_mistral_tekken(data_dir / "tokenizers" / "mistral" / "tekken_240718.json")
    assert info.decoded_vocab == TokenizerInfo.from_mistral_tekken(data).decoded_vocab
    return LoadedTokenizer(
        info,
        lambda text: [num_special + i for i in encoding.encode(text, disallowed_special=())],
        TEKKEN_SPECIALS.__getitem__,
        VocabType.RAW,
        expected_prefix_space=False,
        source=data,
    )


CASES = (
    [f"hf:{name}" for name in HF_NAMES]
    + [f"hf-tokenizers:{name}" for name in HF_NAMES]
    + [f"tiktoken:{name}" for name in TIKTOKEN_FILES]
    + [f"sentencepiece:{name}" for name in SENTENCEPIECE_NAMES]
    + ["tekken:240718"]
)
_LOADED: dict[str, LoadedTokenizer] = {}


def _load_case(data_dir: Path, case: str) -> LoadedTokenizer:
    if case not in _LOADED:
        kind, name = case.split(":")
        if kind == "hf":
            _LOADED[case] = _load_hf(data_dir, name, via_transformers=True)
        elif kind == "hf-tokenizers":
            _LOADED[case] = _load_hf(data_dir, name, via_transformers=False)
        elif kind == "tiktoken":
            _LOADED[case] = _load_tiktoken(data_dir, name)
        elif kind == "sentencepiece":
            _LOADED[case] = _load_sentencepiece(data_dir, name)
        else:
            _LOADED[case] = _load_tekken(data_dir)
    return _LOADED[case]


@pytest.fixture(params=CASES)
def loaded(request: pytest.FixtureRequest, data_dir: Path) -> LoadedTokenizer:
    return _load_case(data_dir, request.param)


def load(data_dir: Path, case: str) -> LoadedTokenizer:
    assert case in CASES
    return _load_case(data_dir, case)


# ---------------------------------------------------------------------------------------------
# Every real tokenizer


def test_detected_vocab_type(loaded: LoadedTokenizer) -> None:
    assert loaded.info.vocab_type == loaded.expected_vocab_type
    assert loaded.info.add_prefix_space == loaded.expected_prefix_space


@pytest.mark.parametrize("text", TEXTS, ids=range(len(TEXTS)))
def test_decoded_tokens_spell_the_encoded_text(loaded: LoadedTokenizer, text: str) -> None:
    ids = loaded.encode(text)
    spelled = b"".join(loaded.info.decoded_vocab[i] for i in ids)
    # Sentencepiece prepends a space to the text it encodes; the decoded bytes keep it, since
    # they are what each token appends mid-sequence.
    expected = (" " + text if loaded.info.add_prefix_space else text).encode("utf-8")
    assert spelled == expected
    # Ordinary text must stay reachable: none of its tokens may be special, stop or empty.
    for token_id in ids:
        assert loaded.info._handle.is_text_token(token_id), (token_id, loaded.info.decoded_vocab[token_id])


def test_stop_tokens_are_never_text(loaded: LoadedTokenizer) -> None:
    assert loaded.info.stop_token_ids
    for token_id in loaded.info.stop_token_ids + loaded.info.special_token_ids:
        assert not loaded.info._handle.is_text_token(token_id)


@pytest.mark.parametrize(
    "hf_name, tiktoken_name",
    [("llama3.1", "llama3.1"), ("qwen2.5", "qwen2.5"), ("gpt-oss", "o200k_harmony"), ("gpt2", "r50k_base")],
)
def test_byte_level_vocab_matches_tiktoken_bytes(data_dir: Path, hf_name: str, tiktoken_name: str) -> None:
    """The HF files were converted from these tiktoken vocabularies with identical ids, so every
    byte-level token must decode to exactly the tiktoken token's bytes."""
    info = load(data_dir, f"hf-tokenizers:{hf_name}").info
    encoding = _tiktoken_encoding(data_dir, tiktoken_name)
    mismatches = [
        rank
        for token_bytes, rank in encoding._mergeable_ranks.items()
        if info.decoded_vocab[rank] != token_bytes
    ]
    assert mismatches == []


@pytest.mark.parametrize("name", SENTENCEPIECE_NAMES)
def test_sentencepiece_pieces_match_processor_decode(data_dir: Path, name: str) -> None:
    """Every text piece decodes as sentencepiece decodes it after another piece."""
    sentencepiece = pytest.importorskip("sentencepiece")
    processor = sentencepiece.SentencePieceProcessor(
        model_file=str(data_dir / "tokenizers" / "sentencepiece" / f"{name}.model")
    )
    info = load(data_dir, f"sentencepiece:{name}").info
    anchor = processor.piece_to_id("▁a")
    for token_id in range(processor.get_piece_size()):
        if processor.is_byte(token_id):
            assert len(info.decoded_vocab[token_id]) == 1
        elif processor.is_control(token_id) or processor.is_unknown(token_id):
            assert token_id in info.special_token_ids
        else:
            expected = "a" + processor.decode([anchor, token_id])[1:]
            assert b"a" + info.decoded_vocab[token_id] == expected.encode("utf-8"), token_id


# ---------------------------------------------------------------------------------------------
# Special, added, stop and padding ids


@pytest.mark.parametrize(
    "case, special, text",
    [
        ("llama3.1", ["<|begin_of_text|>", "<|eot_id|>", "<|start_header_id|>", "<|end_header_id|>"], []),
        ("qwen2.5", ["<|im_start|>", "<|im_end|>", "<|endoftext|>"], ["<tool_call>", "</tool_call>"]),
        ("qwen3", ["<|im_start|>", "<|im_end|>"], ["<think>", "</think>", "<tool_call>", "<tool_response>"]),
        ("gpt-oss", ["<|channel|>", "<|message|>", "<|call|>", "<|constrain|>", "<|return|>", "<|start|>"], []),
        ("gpt2", ["<|endoftext|>"], []),
        ("phi-3", ["<s>", "<unk>", "<|endoftext|>", "<|assistant|>", "<|end|>"], []),
    ],
)
@pytest.mark.parametrize("kind", ["hf", "hf-tokenizers"])
def test_hf_special_and_added_tokens(
    data_dir: Path, kind: str, case: str, special: list[str], text: list[str]
) -> None:
    loaded = load(data_dir, f"{kind}:{case}")
    for token in special:
        token_id = loaded.token_id(token)
        assert token_id in loaded.info.special_token_ids, token
        assert not loaded.info._handle.is_text_token(token_id)
    for token in text:
        token_id = loaded.token_id(token)
        assert token_id not in loaded.info.special_token_ids, token
        assert loaded.info.decoded_vocab[token_id] == token.encode()
        assert loaded.info._handle.is_text_token(token_id)


@pytest.mark.parametrize(
    "case, special",
    [
        ("tiktoken:llama3.1", ["<|begin_of_text|>", "<|eot_id|>"]),
        ("tiktoken:qwen3", ["<|im_end|>", "<think>", "<tool_call>"]),  # every tiktoken special is special
        ("tiktoken:o200k_harmony", ["<|channel|>", "<|message|>", "<|constrain|>"]),
        ("sentencepiece:llama2", ["<s>", "</s>", "<unk>"]),
        ("sentencepiece:mistral_v7", ["[INST]", "[/INST]", "[TOOL_CALLS]"]),
        ("tekken:240718", ["<unk>", "<s>", "</s>"]),
    ],
)
def test_other_special_tokens(data_dir: Path, case: str, special: list[str]) -> None:
    loaded = load(data_dir, case)
    for token in special:
        assert loaded.token_id(token) in loaded.info.special_token_ids, token


@pytest.mark.parametrize(
    "case, stop_tokens",
    [
        ("hf:llama3.1", ["<|eot_id|>"]),
        ("hf:qwen2.5", ["<|im_end|>"]),
        ("hf:qwen3", ["<|im_end|>"]),
        ("hf:gpt-oss", ["<|return|>"]),
        ("hf:gpt2", ["<|endoftext|>"]),
        ("hf:phi-3", ["<|endoftext|>"]),
        ("hf-tokenizers:llama3.1", ["<|end_of_text|>", "<|eot_id|>"]),
        ("hf-tokenizers:qwen3", ["<|endoftext|>", "<|im_end|>"]),
        ("hf-tokenizers:gpt-oss", ["<|endoftext|>", "<|return|>", "<|call|>"]),
        ("tiktoken:llama3.1", ["<|end_of_text|>", "<|eot_id|>"]),
        ("tiktoken:o200k_harmony", ["<|endoftext|>", "<|return|>", "<|call|>"]),
        ("tiktoken:r50k_base", ["<|endoftext|>"]),
        ("sentencepiece:mistral_v7", ["</s>"]),
        ("tekken:240718", ["</s>"]),
    ],
)
def test_default_stop_tokens(data_dir: Path, case: str, stop_tokens: list[str]) -> None:
    loaded = load(data_dir, case)
    assert sorted(loaded.info.stop_token_ids) == sorted(loaded.token_id(t) for t in stop_tokens)


def test_model_vocab_padding_is_never_allowed(data_dir: Path) -> None:
    tokenizer = load(data_dir, "hf:qwen2.5").source
    info = TokenizerInfo.from_huggingface(tokenizer, vocab_size=151_936, stop_token_ids=[151643, 151645])
    assert info.vocab_size == 151_936
    assert len(info.decoded_vocab) == len(tokenizer) == 151_665
    assert info.stop_token_ids == [151643, 151645]
    for token_id in (151_665, 151_800, 151_935):
        assert info._handle.decoded_token(token_id) == b""
        assert not info._handle.is_text_token(token_id)
    with pytest.raises(ValueError, match="smaller than the tokenizer"):
        TokenizerInfo.from_huggingface(tokenizer, vocab_size=151_000)
    with pytest.raises(ValueError, match="outside the vocabulary"):
        TokenizerInfo.from_huggingface(tokenizer, stop_token_ids=[151_665])


def test_tekken_layout(data_dir: Path) -> None:
    data, encoding, num_special = _tekken_encoding(data_dir)
    info = load(data_dir, "tekken:240718").info
    assert num_special == 1000 and info.vocab_size == 131_072
    assert info.special_token_ids == list(range(1000))
    assert info.decoded_vocab[1000 + 0] == base64.b64decode(data["vocab"][0]["token_bytes"])
    last = 131_072 - 1000 - 1
    assert info.decoded_vocab[1000 + last] == base64.b64decode(data["vocab"][last]["token_bytes"])
    padded = TokenizerInfo.from_mistral_tekken(data, vocab_size=131_200, stop_token_ids=[2, 4])
    assert padded.vocab_size == 131_200 and padded.stop_token_ids == [2, 4]


# ---------------------------------------------------------------------------------------------
# Raw vocabularies and the decoding rules


def _gpt2_bytes_to_unicode() -> dict[int, str]:
    """GPT-2's byte alphabet, written from its definition: printable Latin-1 bytes stand for
    themselves, the remaining bytes take code points 256, 257, ... in byte order."""
    printable = [*range(0x21, 0x7F), *range(0xA1, 0xAD), *range(0xAE, 0x100)]
    mapping = {b: chr(b) for b in printable}
    extra = 0
    for b in range(256):
        if b not in mapping:
            mapping[b] = chr(256 + extra)
            extra += 1
    return mapping


def test_byte_level_alphabet_decodes_every_byte() -> None:
    mapping = _gpt2_bytes_to_unicode()
    encoded = [mapping[b] for b in range(256)]
    assert _native.decode_vocabulary(encoded, int(VocabType.BYTE_LEVEL)) == [bytes([b]) for b in range(256)]
    assert mapping[ord(" ")] == "Ġ" and mapping[ord("\n")] == "Ċ"
    # A whole-word token and tokens spelled outside the alphabet (plain added text) decode as is.
    assert _native.decode_vocabulary(["ĠhelloĊ", "<tool_call>", "a b", "中"], 2) == [
        b" hello\n",
        b"<tool_call>",
        b"a b",
        "中".encode(),
    ]


def test_byte_fallback_rules() -> None:
    assert _native.decode_vocabulary(["<0x0A>", "<0xFF>", "▁Hello", "a▁▁b", "<0xff>", "<s>", "▁"], 1) == [
        b"\n",
        b"\xff",
        b" Hello",
        b"a  b",
        b"<0xff>",  # only the exact uppercase form is a byte token
        b"<s>",
        b" ",
    ]


@pytest.mark.parametrize(
    "vocab, expected",
    [
        (["a", "Ġb", "Ċ", "ĠĠ"], VocabType.BYTE_LEVEL),
        (["<0x0A>", "▁a", "b", "<s>"], VocabType.BYTE_FALLBACK),
        (["a", " b", "\n", "Ġ"], VocabType.RAW),
        (["a", "b", "c"], VocabType.RAW),
        ([], VocabType.RAW),
        (["▁a", "▁b", "c"], VocabType.RAW),  # no byte tokens: not a byte-fallback vocabulary
    ],
)
def test_detect_vocab_type_small(vocab: list[str], expected: VocabType) -> None:
    assert _native.detect_vocab_type(vocab) == expected


def test_raw_constructor() -> None:
    info = TokenizerInfo([b"a", "é", b"", b"</s>"], vocab_size=6, stop_token_ids=3, special_token_ids=[3])
    assert info.vocab_type == VocabType.RAW
    assert info.vocab_size == 6
    assert info.decoded_vocab == [b"a", "é".encode(), b"", b"</s>"]
    assert info.stop_token_ids == [3] and info.special_token_ids == [3]
    assert [info._handle.is_text_token(i) for i in range(6)] == [True, True, False, False, False, False]

    byte_level = TokenizerInfo(["Ġa", "Ċ"], VocabType.BYTE_LEVEL)
    assert byte_level.decoded_vocab == [b" a", b"\n"] and byte_level.vocab_type == VocabType.BYTE_LEVEL
    prefixed = TokenizerInfo(["▁a", "<0x0A>"], 1, add_prefix_space=True)
    assert prefixed.decoded_vocab == [b" a", b"\n"] and prefixed.add_prefix_space


@pytest.mark.parametrize(
    "call, error",
    [
        (lambda: TokenizerInfo("abc"), TypeError),
        (lambda: TokenizerInfo([b"a", 5]), TypeError),
        (lambda: TokenizerInfo([b"a"], vocab_type=7), ValueError),
        (lambda: TokenizerInfo([b"a"], vocab_type="raw"), TypeError),
        (lambda: TokenizerInfo([b"a"], vocab_size=0), ValueError),
        (lambda: TokenizerInfo([b"a"], vocab_size=2.0), TypeError),
        (lambda: TokenizerInfo([b"a"], stop_token_ids=[1]), ValueError),
        (lambda: TokenizerInfo([b"a"], stop_token_ids=["0"]), TypeError),
        (lambda: TokenizerInfo([b"a"], special_token_ids=[-1]), ValueError),
        (lambda: TokenizerInfo.from_huggingface(object()), TypeError),
        (lambda: TokenizerInfo.from_tiktoken(object()), TypeError),
        (lambda: TokenizerInfo.from_sentencepiece("/nonexistent/x.model"), ValueError),
        (lambda: TokenizerInfo.from_sentencepiece(3), TypeError),
        (lambda: TokenizerInfo.from_mistral_tekken({"vocab": []}), ValueError),
        (lambda: TokenizerInfo.from_mistral_tekken(1.5), TypeError),
    ],
)
def test_bad_input_is_a_clear_error(call: Callable[[], object], error: type[Exception]) -> None:
    with pytest.raises(error):
        call()
