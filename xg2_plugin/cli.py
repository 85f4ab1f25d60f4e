"""``xg2-demo``: constrained decoding with the engine alone, on an embedded default.

Compiles a JSON Schema for a real tokenizer, then decodes with random logits (a stand-in for a
model's scores: the grammar, not the model, guarantees the structure) while applying the
engine's masks each step. Prints the output, whether it validates, and the grammar time per
token. The vLLM and SGLang adapters run the same loop inside the serving engines.
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


def default_data_dir() -> Path:
    """Test and demo data: $XG2_DATA_DIR, else ../shared/data next to the source checkout."""
    env = os.environ.get("XG2_DATA_DIR")
    if env:
        return Path(env)
    return Path(__file__).resolve().parents[2] / "shared" / "data"


def load_tokenizer(name: str, data_dir: Path):
    """Loads a tokenizer.json folder from the data directory (needs the `tokenizers` package)."""
    import tokenizers

    path = data_dir / "tokenizers" / "hf" / name / "tokenizer.json"
    if not path.exists():
        raise SystemExit(f"tokenizer not found: {path} (set XG2_DATA_DIR or pass --data-dir)")
    return tokenizers.Tokenizer.from_file(str(path))


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tokenizer", default="llama3.1", help="folder under tokenizers/hf/ (default llama3.1)")
    parser.add_argument("--data-dir", type=Path, default=None, help="data directory (default $XG2_DATA_DIR)")
    parser.add_argument("--schema", type=Path, default=None, help="JSON Schema file (default: an embedded schema)")
    parser.add_argument("--samples", type=int, default=3)
    parser.add_argument("--max-tokens", type=int, default=256)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    data_dir = args.data_dir or default_data_dir()
    tokenizer = load_tokenizer(args.tokenizer, data_dir)
    schema = json.loads(args.schema.read_text()) if args.schema else DEFAULT_SCHEMA

    t0 = time.perf_counter()
    info = TokenizerInfo.from_huggingface(tokenizer)
    t1 = time.perf_counter()
    compiler = GrammarCompiler(info)
    # Random logits would happily emit whitespace forever; fix the layout as a model would.
    grammar = compiler.compile_json_schema(schema, any_whitespace=False)
    t2 = time.perf_counter()
    print(f"tokenizer {args.tokenizer}: {info.vocab_size} tokens ({(t1 - t0) * 1e3:.0f} ms to load)")
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
