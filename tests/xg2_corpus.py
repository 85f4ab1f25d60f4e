"""JSONSchemaBench evaluation shared by the CI corpus test and bench/corpus_report.py.

For one schema: compile (strict unless a valid instance carries undeclared properties), check
that every valid instance is accepted (string level always; token by token with a full mask
at every step when asked) and every invalid instance rejected, and run random walks that
sample tokens from the mask until a stop token, validating each finished output.
"""

from __future__ import annotations

import json
import random
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

import numpy as np

import xg2_plugin as xg
from xg2_test_support import allowed_tokens, dumps, ordered_like_schema

CATEGORIES = [
    "Github_trivial", "Github_easy", "Github_medium", "Github_hard", "Github_ultra",
    "Glaiveai2K", "Kubernetes", "JsonSchemaStore", "Snowplow", "WashingtonPost",
]


def category_of(path: Path) -> str:
    return path.name.split("---")[0]


def stratified_sample(corpus_dir: Path, per_category: Optional[int], seed: int = 0) -> list[Path]:
    """A fixed sample: `per_category` files per category (all when None), chosen by seed."""
    by_category: dict[str, list[Path]] = {}
    for path in sorted(corpus_dir.glob("*.json")):
        by_category.setdefault(category_of(path), []).append(path)
    rng = random.Random(seed)
    chosen: list[Path] = []
    for category in sorted(by_category):
        files = by_category[category]
        chosen.extend(files if per_category is None else rng.sample(files, min(per_category, len(files))))
    return chosen


def make_validator(schema: Any) -> Any:
    import jsonschema

    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    return cls(schema, format_checker=cls.FORMAT_CHECKER)


def has_undeclared_properties(value: Any, schema: Any, root: Any, depth: int = 0) -> bool:
    """True when an object in `value` has a key its (resolved) schema does not declare."""
    from xg2_test_support import _resolve

    if depth > 64:
        return False
    schema = _resolve(schema, root)
    if not isinstance(schema, dict):
        return False
    branches = [schema] + [b for k in ("anyOf", "oneOf", "allOf") for b in schema.get(k, []) if isinstance(b, dict)]
    if isinstance(value, dict):
        declared: set[str] = set()
        extra_allowed = False
        for b in branches:
            b = _resolve(b, root)
            if not isinstance(b, dict):
                continue
            declared |= set(b.get("properties", {}) or {})
            extra_allowed |= b.get("additionalProperties") not in (None, False) or "patternProperties" in b
        if set(value) - declared and not extra_allowed:
            return True
        for key, sub in value.items():
            for b in branches:
                b = _resolve(b, root)
                if isinstance(b, dict) and key in (b.get("properties") or {}):
                    if has_undeclared_properties(sub, b["properties"][key], root, depth + 1):
                        return True
        return False
    if isinstance(value, list):
        for b in branches:
            b = _resolve(b, root)
            items = b.get("items") if isinstance(b, dict) else None
            if isinstance(items, dict) and any(has_undeclared_properties(v, items, root, depth + 1) for v in value):
                return True
    return False


@dataclass
class SchemaResult:
    path: str
    category: str
    status: str = "ok"  # ok | unsupported | invalid_schema | error
    message: str = ""
    compile_seconds: float = 0.0
    valid_total: int = 0
    valid_accepted: int = 0
    invalid_total: int = 0
    invalid_rejected: int = 0
    token_checked: int = 0
    token_failures: list[str] = field(default_factory=list)
    walks: int = 0
    walks_finished: int = 0
    walk_violations: list[str] = field(default_factory=list)
    acceptance_failures: list[str] = field(default_factory=list)


def _string_accepted(grammar: xg.CompiledGrammar, text: str) -> bool:
    matcher = xg.GrammarMatcher(grammar)
    return matcher.accept_string(text) and matcher.is_completed()


def _token_level_ok(grammar: xg.CompiledGrammar, ids: list[int], bitmask: np.ndarray) -> Optional[str]:
    info = grammar.tokenizer_info
    matcher = xg.GrammarMatcher(grammar)
    for step, token in enumerate(ids):
        if not allowed_tokens(matcher, bitmask, info.vocab_size)[token]:
            return f"token {step} {info.decoded_vocab[token]!r} not in mask"
        if not matcher.accept_token(token):
            return f"token {step} {info.decoded_vocab[token]!r} rejected"
    allowed = allowed_tokens(matcher, bitmask, info.vocab_size)
    if not any(allowed[s] for s in matcher.stop_token_ids):
        return "stop token not allowed at the end"
    return None


def random_walk(grammar: xg.CompiledGrammar, rng: random.Random, bitmask: np.ndarray, max_tokens: int) -> Optional[bytes]:
    """Samples tokens from the mask until a stop token; None if `max_tokens` ran out.

    Token choice is uniform over the mask, but half of the time restricted to one-byte tokens
    and stop tokens are taken when allowed, so walks through unbounded strings still end.
    """
    info = grammar.tokenizer_info
    vocab = info.decoded_vocab
    one_byte = _one_byte_tokens(info)
    matcher = xg.GrammarMatcher(grammar)
    # Read once: the property builds a new list per call, and a wide mask has 10^5 tokens.
    stop_ids = np.array(matcher.stop_token_ids, dtype=np.int64)
    out = bytearray()
    for _ in range(max_tokens):
        allowed = np.flatnonzero(allowed_tokens(matcher, bitmask, info.vocab_size))
        assert len(allowed) > 0, "empty mask before termination"
        is_stop = np.isin(allowed, stop_ids)
        stops = allowed[is_stop]
        if len(stops) and (rng.random() < 0.7 or len(stops) == len(allowed)):
            assert matcher.accept_token(int(stops[0]))
            return bytes(out)
        text_tokens = allowed[~is_stop]
        short = text_tokens[one_byte[text_tokens]]
        pool = short if len(short) and rng.random() < 0.5 else text_tokens
        token = int(pool[rng.randrange(len(pool))])
        assert matcher.accept_token(token), f"token {token} in mask but rejected"
        out += vocab[token]
    return None


_ONE_BYTE_TOKENS: dict[int, tuple[xg.TokenizerInfo, np.ndarray]] = {}


def _one_byte_tokens(info: xg.TokenizerInfo) -> np.ndarray:
    """Per token id: whether its decoded bytes are one byte (kept per tokenizer; the entry
    holds the tokenizer so its id is not reused)."""
    entry = _ONE_BYTE_TOKENS.get(id(info))
    if entry is None:
        lengths = np.fromiter((len(piece) for piece in info.decoded_vocab), dtype=np.int64)
        entry = _ONE_BYTE_TOKENS[id(info)] = (info, lengths == 1)
    return entry[1]


def evaluate_schema(
    path: Path,
    compiler: xg.GrammarCompiler,
    encode: Any,
    *,
    token_level_instances: int = 1,
    walks: int = 2,
    walk_max_tokens: int = 200,
    seed: int = 0,
) -> SchemaResult:
    """Evaluates one corpus file; `encode(text) -> ids` tokenizes as a continuation."""
    import time

    data = json.loads(path.read_text())
    schema = data["schema"]
    result = SchemaResult(path=path.name, category=category_of(path))
    tests = data.get("tests", [])
    valid = [t["data"] for t in tests if t.get("valid")]
    invalid = [t["data"] for t in tests if not t.get("valid")]
    strict = not any(has_undeclared_properties(v, schema, schema) for v in valid)
    start = time.perf_counter()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            grammar = compiler.compile_json_schema(schema, strict_mode=strict)
    except xg.UnsupportedSchemaError as error:
        result.status, result.message = "unsupported", str(error)
        return result
    except (xg.SchemaError, xg.ResourceLimitError) as error:
        result.status, result.message = "invalid_schema", str(error)
        return result
    except Exception as error:  # noqa: BLE001 - recorded; the corpus test fails on it
        result.status, result.message = "error", f"{type(error).__name__}: {error}"
        return result
    result.compile_seconds = time.perf_counter() - start

    info = compiler.tokenizer_info
    bitmask = np.full(xg.get_bitmask_shape(1, info.vocab_size), -1, dtype=np.int32)
    for i, value in enumerate(valid):
        text = dumps(ordered_like_schema(value, schema))
        result.valid_total += 1
        if _string_accepted(grammar, text):
            result.valid_accepted += 1
        else:
            result.acceptance_failures.append(f"valid instance {i} rejected: {text[:200]}")
            continue
        if i < token_level_instances:
            result.token_checked += 1
            problem = _token_level_ok(grammar, encode(text), bitmask)
            if problem:
                result.token_failures.append(f"valid instance {i}: {problem}")
    for i, value in enumerate(invalid):
        text = dumps(ordered_like_schema(value, schema))
        result.invalid_total += 1
        if not _string_accepted(grammar, text):
            result.invalid_rejected += 1
        else:
            result.acceptance_failures.append(f"invalid instance {i} accepted: {text[:200]}")

    if walks:
        validator = make_validator(schema)
        rng = random.Random(seed)
        for _ in range(walks):
            result.walks += 1
            out = random_walk(grammar, rng, bitmask, walk_max_tokens)
            if out is None:
                continue
            result.walks_finished += 1
            try:
                value = json.loads(out.decode("utf-8"))
            except (UnicodeDecodeError, json.JSONDecodeError) as error:
                result.walk_violations.append(f"not JSON ({error}): {out[:200]!r}")
                continue
            errors = list(validator.iter_errors(value))
            if errors:
                result.walk_violations.append(f"{errors[0].message[:200]} in {out[:200]!r}")
    return result
