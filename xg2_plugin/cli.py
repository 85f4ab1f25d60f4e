"""``xg2-demo``: constrained decoding with the engine alone, on an embedded default.

Compiles a JSON Schema for a tokenizer (by default the project's own small byte-level BPE,
trained offline at first run, see ``xg2_plugin.demo_tokenizer``; ``--tokenizer DIR`` for any
Hugging Face tokenizer folder), then decodes with random logits (a stand-in for a model's
scores: the grammar, not the model, guarantees the structure) while applying the engine's
masks each step. Prints the output, whether it validates, and the grammar time per token. The
vLLM and SGLang adapters run the same loop inside the serving engines.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Optional, Sequence

import numpy as np

from . import GrammarCompiler, GrammarMatcher, TokenizerInfo, allocate_token_bitmask, apply_token_bitmask_inplace

DEFAULT_SCHEMA = {
    "type": "object",
    "properties": {
        "city": {"type": "string", "minLength": 1, "maxLength": 20},
        "country_code": {"type": "string", "pattern": "^[A-Z]{2}$"},
        "population": {"type": "integer", "minimum": 0, "maximum": 40000000},
        "climate": {"enum": ["arid", "temperate", "tropical", "polar"]},
        "landmarks": {"type": "array", "items": {"type": "string", "maxLength": 12}, "maxItems": 3},
    },
    "required": ["city", "country_code", "population", "climate", "landmarks"],
}


def tokenizer_file(value: Optional[str], data_dir: Optional[Path]) -> Path:
    """The ``tokenizer.json`` to use: the demo's own by default, else the one ``value`` names.

    ``value`` is a Hugging Face tokenizer folder, a ``tokenizer.json`` file, or the name of a
    folder under ``DATA_DIR/tokenizers/hf/`` (``--data-dir``, else $XG2_DATA_DIR).
    """
    from .demo_tokenizer import MissingDependencyError, build_demo_tokenizer

    if value is None:
        try:
            return build_demo_tokenizer() / "tokenizer.json"
        except MissingDependencyError as error:
            raise SystemExit(f"xg2-demo: {error}") from None
    path = Path(value)
    if path.is_dir():
        path = path / "tokenizer.json"
    data_dir = data_dir or (Path(os.environ["XG2_DATA_DIR"]) if os.environ.get("XG2_DATA_DIR") else None)
    if not path.is_file() and data_dir is not None:
        path = data_dir / "tokenizers" / "hf" / value / "tokenizer.json"
    if not path.is_file():
        raise SystemExit(f"xg2-demo: --tokenizer {value}: no tokenizer.json there (looked for {path}); pass a "
                         "Hugging Face tokenizer folder or file, or leave --tokenizer out for the demo's own tokenizer")
    return path


def load_tokenizer(path: Path):
    """Loads ``tokenizer.json`` with the `tokenizers` package."""
    try:
        import tokenizers
    except ImportError:
        raise SystemExit("xg2-demo: loading a tokenizer needs the `tokenizers` package: "
                         "pip install 'xg2-plugin[hf]' (or pip install tokenizers)") from None
    return tokenizers.Tokenizer.from_file(str(path))


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tokenizer", default=None, metavar="DIR",
                        help="Hugging Face tokenizer folder or tokenizer.json, or a folder name under "
                             "DATA_DIR/tokenizers/hf/ (default: the demo's own tokenizer, built offline at first run)")
    parser.add_argument("--data-dir", type=Path, default=None,
                        help="test data directory for --tokenizer NAME (default $XG2_DATA_DIR)")
    parser.add_argument("--schema", type=Path, default=None, help="JSON Schema file (default: an embedded schema)")
    parser.add_argument("--samples", type=int, default=3)
    parser.add_argument("--max-tokens", type=int, default=256)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    path = tokenizer_file(args.tokenizer, args.data_dir)
    tokenizer = load_tokenizer(path)
    schema = json.loads(args.schema.read_text()) if args.schema else DEFAULT_SCHEMA

    t0 = time.perf_counter()
    info = TokenizerInfo.from_huggingface(tokenizer)
    t1 = time.perf_counter()
    compiler = GrammarCompiler(info)
    # Random logits would happily emit whitespace forever; fix the layout as a model would.
    grammar = compiler.compile_json_schema(schema, any_whitespace=False)
    t2 = time.perf_counter()
    print(f"tokenizer {path.parent if args.tokenizer is None else args.tokenizer}: {info.vocab_size} tokens "
          f"({(t1 - t0) * 1e3:.0f} ms to load)")
    print(f"schema compiled in {(t2 - t1) * 1e3:.1f} ms: {grammar}")

    rng = np.random.default_rng(args.seed)
    bitmask = allocate_token_bitmask(1, info.vocab_size)
    bitmask_np = bitmask.numpy() if hasattr(bitmask, "numpy") else bitmask
    failures = 0
    for sample in range(args.samples):
        matcher = GrammarMatcher(grammar)
        ids: list[int] = []
        grammar_seconds: list[float] = []
        while not matcher.is_terminated() and len(ids) < args.max_tokens:
            logits = rng.standard_normal(info.vocab_size).astype(np.float32)
            start = time.perf_counter()
            matcher.fill_next_token_bitmask(bitmask_np)
            grammar_seconds.append(time.perf_counter() - start)
            apply_token_bitmask_inplace(logits, bitmask_np[0])
            token = int(np.argmax(logits))
            start = time.perf_counter()
            if not matcher.accept_token(token):
                raise AssertionError(f"sampled token {token} was in the mask but rejected")
            grammar_seconds[-1] += time.perf_counter() - start
            ids.append(token)
        text = tokenizer.decode([i for i in ids if i not in info.stop_token_ids])
        verdict = _validate(text, schema)
        failures += verdict != "valid"
        per_token = np.array(grammar_seconds) * 1e3
        print(f"\nsample {sample + 1}: {len(ids)} tokens, grammar time per token "
              f"p50 {np.median(per_token):.3f} ms, max {per_token.max():.3f} ms")
        print(f"  output: {text}")
        print(f"  schema validation: {verdict}")
    return 1 if failures else 0


def _validate(text: str, schema: dict) -> str:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as error:
        return f"not JSON ({error}) - unfinished within --max-tokens?"
    try:
        import jsonschema
    except ImportError:
        return "valid JSON (install jsonschema to validate against the schema)"
    errors = list(jsonschema.Draft202012Validator(schema, format_checker=jsonschema.FormatChecker()).iter_errors(value))
    return "valid" if not errors else f"INVALID: {errors[0].message}"


if __name__ == "__main__":
    sys.exit(main())
