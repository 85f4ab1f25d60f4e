"""The demos' own tokenizer: a small byte-level BPE trained offline, at first use, on our text.

``xg2-demo`` and ``scripts/demo.sh`` must run on a fresh clone with nothing beside it, so they
cannot depend on a downloaded tokenizer (nor ship someone else's). Instead this module trains
a byte-level BPE of ``VOCAB_SIZE`` tokens with the ``tokenizers`` library on text that ships
with this package (its own Python sources and docstrings, plus a few JSON samples below), adds
ChatML-style special tokens and a chat template whose tool-call format is the one vLLM's
``pythonic`` tool parser reads, and saves the result as a Hugging Face tokenizer folder
(``tokenizer.json``, ``tokenizer_config.json``, ``special_tokens_map.json``).

Byte-level BPE covers every byte, so any JSON, regex or grammar output can be spelled. The
folder is rebuilt only when its inputs change (the corpus, the settings or the ``tokenizers``
version); the training is single-threaded over a fixed, sorted corpus, so the same inputs give
the same tokenizer.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Optional, Union

__all__ = ["VOCAB_SIZE", "EOS_TOKEN", "build_demo_tokenizer", "default_demo_tokenizer_dir", "MissingDependencyError"]

# A target: training stops earlier when no pair occurs twice more (a few thousand on this corpus).
VOCAB_SIZE = 4096
# Ids 0, 1, 2 in this order (the trainer puts special tokens first).
PAD_TOKEN, BOS_TOKEN, EOS_TOKEN = "<|endoftext|>", "<|im_start|>", "<|im_end|>"
SPECIAL_TOKENS = (PAD_TOKEN, BOS_TOKEN, EOS_TOKEN)

# ChatML turns. Tools are listed in the system turn as JSON; a call is answered in the
# pythonic form `[name(arg=value, ...)]` that vLLM's `--tool-call-parser pythonic` extracts;
# tool results come back as `tool` turns. (Renderers trim a newline right after a block tag,
# so every newline here comes before one.)
CHAT_TEMPLATE = (
    "{% if tools %}<|im_start|>system\n"
    "{% for message in messages if message.role == 'system' %}{{ message.content }}\n{% endfor %}"
    "You can call these functions:\n"
    "{% for tool in tools %}{{ tool | tojson }}\n{% endfor %}"
    "To call them, answer with a Python list of calls only, e.g. [name(arg=\"value\")].<|im_end|>\n"
    "{% endif %}"
    "{% for message in messages %}"
    "{% if not (tools and message.role == 'system') %}"
    "<|im_start|>{{ message.role }}\n"
    "{% if message.content is string %}{{ message.content }}{% endif %}"
    "{% if message.tool_calls %}["
    "{% for call in message.tool_calls %}{{ ', ' if not loop.first }}{{ call.function.name }}("
    "{% if call.function.arguments is mapping %}"
    "{% for name, value in call.function.arguments.items() %}{{ ', ' if not loop.first }}{{ name }}={{ value | tojson }}"
    "{% endfor %}{% endif %})"
    "{% endfor %}]{% endif %}<|im_end|>\n"
    "{% endif %}"
    "{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)

# A few JSON documents of the kinds the demos constrain to, so that JSON punctuation and
# keys have tokens of their own.
JSON_SAMPLES = (
    {"city": "Paris", "country_code": "FR", "population": 2102650, "climate": "temperate", "landmarks": ["Louvre"]},
    {"city": "Lima", "country_code": "PE", "population": 9751000, "climate": "arid", "landmarks": []},
    {"city": "Oslo", "country_code": "NO", "population": 717710, "climate": "polar", "landmarks": ["Opera"]},
    {"name": "get_weather", "arguments": {"city": "Paris", "unit": "celsius"}},
    {"name": "get_time", "arguments": {"zone": "UTC"}},
    {"date": "2024-03-17", "ok": True, "count": 12, "ratio": 0.5, "tags": ["a", "b"], "next": None},
)


class MissingDependencyError(RuntimeError):
    """A package the demo needs is not installed; the message says which and how to get it."""


def default_demo_tokenizer_dir() -> Path:
    """Where the tokenizer is kept between runs: $XG2_DEMO_DIR, else the temp dir."""
    base = os.environ.get("XG2_DEMO_DIR") or Path(tempfile.gettempdir()) / "xg2-demo"
    return Path(base) / "tokenizer"


def _corpus() -> list[str]:
    """The training text: this package's Python sources in path order, then the JSON samples."""
    package = Path(__file__).resolve().parent
    texts = [path.read_text(encoding="utf-8") for path in sorted(package.rglob("*.py"))]
    texts += [json.dumps(sample) for sample in JSON_SAMPLES]
    texts += [json.dumps(sample, indent=2) for sample in JSON_SAMPLES]
    return texts


def _import_tokenizers():
    try:
        import tokenizers
    except ImportError as error:
        raise MissingDependencyError(
            "the demo tokenizer is trained with the `tokenizers` package, which is not installed: "
            "pip install 'xg2-plugin[hf]' (or pip install tokenizers)"
        ) from error
    return tokenizers


def build_demo_tokenizer(out_dir: Optional[Union[str, Path]] = None) -> Path:
    """Trains (or reuses) the demo tokenizer and returns its Hugging Face folder.

    Args:
        out_dir: the folder to write; default ``default_demo_tokenizer_dir()``.

    Returns:
        ``out_dir``, loadable by ``tokenizers.Tokenizer.from_file(out_dir / "tokenizer.json")``
        and ``transformers.AutoTokenizer.from_pretrained(out_dir)``.

    Raises:
        MissingDependencyError: ``tokenizers`` is not installed.
    """
    tokenizers = _import_tokenizers()
    out_dir = Path(out_dir) if out_dir is not None else default_demo_tokenizer_dir()
    corpus = _corpus()
    digest = hashlib.sha256()
    for text in corpus:
        digest.update(text.encode("utf-8") + b"\0")
    stamp_value = {"corpus": digest.hexdigest(), "vocab": VOCAB_SIZE, "specials": list(SPECIAL_TOKENS),
                   "template": hashlib.sha256(CHAT_TEMPLATE.encode()).hexdigest(), "tokenizers": tokenizers.__version__}
    stamp = out_dir / "xg2_demo_tokenizer.json"
    if stamp.exists() and json.loads(stamp.read_text()) == stamp_value:
        return out_dir

    # One thread: the trainer's merge order must not depend on scheduling.
    previous = os.environ.get("RAYON_NUM_THREADS")
    os.environ["RAYON_NUM_THREADS"] = "1"
    try:
        tokenizer = _train(tokenizers, corpus)
    finally:
        if previous is None:
            os.environ.pop("RAYON_NUM_THREADS", None)
        else:
            os.environ["RAYON_NUM_THREADS"] = previous
    out_dir.mkdir(parents=True, exist_ok=True)
    tokenizer.save(str(out_dir / "tokenizer.json"))
    specials = {"bos_token": BOS_TOKEN, "eos_token": EOS_TOKEN, "pad_token": PAD_TOKEN}
    config = {
        "tokenizer_class": "PreTrainedTokenizerFast",
        **specials,
        "add_bos_token": False,
        "clean_up_tokenization_spaces": False,
        "model_max_length": 2048,
        "chat_template": CHAT_TEMPLATE,
    }
    (out_dir / "tokenizer_config.json").write_text(json.dumps(config, indent=1))
    (out_dir / "special_tokens_map.json").write_text(json.dumps(specials, indent=1))
    stamp.write_text(json.dumps(stamp_value))
    return out_dir


def _train(tokenizers, corpus: list[str]):
    from tokenizers import decoders, models, pre_tokenizers, processors, trainers

    tokenizer = tokenizers.Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    tokenizer.post_processor = processors.ByteLevel(trim_offsets=False)
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB_SIZE,
        min_frequency=2,
        special_tokens=list(SPECIAL_TOKENS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator(corpus, trainer=trainer, length=len(corpus))
    return tokenizer
