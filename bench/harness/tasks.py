"""The measurements a worker runs for one item (a schema, a grammar, or a batch configuration).

Each measurement reports through ``emit``: ``emit("set", {...})`` records scalar fields and
``emit("add", key, value)`` appends to a list, as soon as they are known, so the driver keeps
what was measured before a timeout or a crash.

Definitions (also printed in the report):

* compile time: schema/grammar text to a matcher ready for its first mask (the engine's
  compile call plus matcher construction);
* time to first mask: schema/grammar text to the first mask filled (compile time + first fill);
* fill time: one ``fill_next_token_bitmask`` call through the engine's Python API, per token
  along a valid instance (the stop token's mask at the end included);
* accept time: one ``accept_token`` call, per token;
* random walk: tokens sampled from the engine's own masks with a fixed seed until the stop
  token or a cap; the text is then checked with ``jsonschema`` (with ``FormatChecker``).
"""

from __future__ import annotations

import gc
import hashlib
import random
import re
import time
from typing import Any, Callable, Optional

import numpy as np

from .config import WorkOptions
from .corpus import load_schema_item, grammar_dir, serialize_instance
from .engines import Engine, EngineRejected
from .vocab import Vocab

Emit = Callable[..., None]

# Bytes that close JSON structures; the walk sampler prefers tokens made only of these so
# that walks end within the cap instead of growing strings forever.
_CLOSING_BYTES = frozenset(b'"]},')


def _now() -> int:
    return time.perf_counter_ns()


class MaskReader:
    """Reads a torch int32 bitmask row without copying it."""

    def __init__(self, vocab: Vocab, rows: int = 1) -> None:
        import torch

        self.vocab_size = vocab.vocab_size
        self.tensor = torch.full((rows, (vocab.vocab_size + 31) // 32), -1, dtype=torch.int32)
        self.words = self.tensor.numpy()

    def allows(self, token_id: int, row: int = 0) -> bool:
        return bool((int(self.words[row, token_id >> 5]) >> (token_id & 31)) & 1)

    def allowed_ids(self, row: int = 0) -> np.ndarray:
        bits = np.unpackbits(self.words[row].view(np.uint8), bitorder="little")[: self.vocab_size]
        return np.flatnonzero(bits)


class WalkSampler:
    """Deterministic token sampling from a mask, biased towards ending the output.

    With the stop token allowed, stop with probability 1/2. Otherwise, with probability 1/2,
    pick uniformly among allowed tokens spelled only with closing bytes (``"]},``); else
    uniformly among the allowed tokens that are not whitespace only (whitespace-only tokens
    are taken with probability 1/20, or when nothing else is allowed; flexible whitespace
    would otherwise fill most walks). Identical masks and seeds give identical walks, so
    walks of exact engines on the same grammar coincide unless their masks differ.
    """

    def __init__(self, vocab: Vocab, closing_bias: bool) -> None:
        self.eos = vocab.eos_id
        self.closing = np.zeros(vocab.vocab_size, dtype=bool)
        self.blank = np.zeros(vocab.vocab_size, dtype=bool)
        for i, spelled in enumerate(vocab.token_bytes):
            self.blank[i] = bool(spelled) and not spelled.strip()
            if closing_bias:
                self.closing[i] = bool(spelled) and all(b in _CLOSING_BYTES for b in spelled)

    def choose(self, allowed: np.ndarray, rng: random.Random) -> int:
        if self.eos in allowed and rng.random() < 0.5:
            return self.eos
        if rng.random() < 0.5:
            closing = allowed[self.closing[allowed]]
            if len(closing):
                return int(closing[rng.randrange(len(closing))])
        if rng.random() >= 0.05:
            visible = allowed[~self.blank[allowed]]
            if len(visible):
                return int(visible[rng.randrange(len(visible))])
        return int(allowed[rng.randrange(len(allowed))])


def _compile(engine: Engine, compile_fn: Callable[[], Any], mask: MaskReader, emit: Emit) -> Optional[Any]:
    """Compiles, builds a matcher and fills its first mask; emits status and timings."""
    gc.collect()
    start = _now()
    try:
        compiled = compile_fn()
        matcher = engine.new_matcher(compiled)
    except EngineRejected as error:
        emit("set", {"status": "rejected", "error": str(error)[:500], "compile_s": (_now() - start) / 1e9})
        return None
    except Exception as error:  # an engine failing in a way it does not document still rejected the item
        emit("set", {"status": "rejected", "error": f"{type(error).__name__}: {error}"[:500],
                     "compile_s": (_now() - start) / 1e9})
        return None
    compiled_at = _now()
    engine.fill(matcher, mask.tensor)
    first_mask_at = _now()
    emit("set", {
        "status": "ok",
        "compile_s": (compiled_at - start) / 1e9,
        "first_mask_s": (first_mask_at - start) / 1e9,
        "grammar_bytes": engine.grammar_memory_bytes(compiled),
    })
    return compiled


def _walk_instance(engine: Engine, compiled: Any, tokens: list[int], mask: MaskReader, eos: int) -> dict[str, Any]:
    """Fills and accepts along ``tokens`` then the stop token; times each call."""
    matcher = engine.new_matcher(compiled)
    fill_ns: list[int] = []
    accept_ns: list[int] = []
    for position, token in enumerate([*tokens, eos]):
        t0 = _now()
        engine.fill(matcher, mask.tensor)
        t1 = _now()
        fill_ns.append(t1 - t0)
        if not mask.allows(token):
            return {"accepted": False, "reject_at": position, "why": "masked", "fill_ns": fill_ns, "accept_ns": accept_ns}
        t2 = _now()
        ok = engine.accept(matcher, token)
        accept_ns.append(_now() - t2)
        if not ok:
            return {"accepted": False, "reject_at": position, "why": "accept_token refused a masked-in token",
                    "fill_ns": fill_ns, "accept_ns": accept_ns}
    terminated = engine.is_terminated(matcher)
    return {"accepted": terminated, "reject_at": None if terminated else len(tokens),
            "why": None if terminated else "not terminated after stop token", "fill_ns": fill_ns, "accept_ns": accept_ns}


def _check_invalid(engine: Engine, compiled: Any, tokens: list[int], eos: int) -> dict[str, Any]:
    """Feeds an invalid instance with accept_token only; it should be refused somewhere."""
    matcher = engine.new_matcher(compiled)
    for position, token in enumerate([*tokens, eos]):
        if not engine.accept(matcher, token):
            return {"rejected": True, "reject_at": position}
    return {"rejected": not engine.is_terminated(matcher), "reject_at": None}


def _random_walk(engine: Engine, compiled: Any, mask: MaskReader, sampler: WalkSampler, rng: random.Random,
                 cap: int, eos: int) -> tuple[str, list[int], list[int]]:
    """Returns (end: "stop" | "cap" | "dead_end", tokens, fill_ns)."""
    matcher = engine.new_matcher(compiled)
    tokens: list[int] = []
    fill_ns: list[int] = []
    for _ in range(cap):
        t0 = _now()
        engine.fill(matcher, mask.tensor)
        fill_ns.append(_now() - t0)
        allowed = mask.allowed_ids()
        if len(allowed) == 0:
            return "dead_end", tokens, fill_ns
        token = sampler.choose(allowed, rng)
        if not engine.accept(matcher, token):
            return "dead_end", tokens, fill_ns
        if token == eos:
            return ("stop" if engine.is_terminated(matcher) else "dead_end"), tokens, fill_ns
        tokens.append(token)
    return "cap", tokens, fill_ns


# RFC 3339 (section 5.6) allows second 60 in a leap second, i.e. when the time converted to UTC is 23:59:60.
# The `rfc3339-validator` package behind jsonschema's "date-time" and "time" checks rejects every leap second,
# which would count valid engine output as a violation.
_LEAP_SECOND = re.compile(r"(?P<head>.*?)(?P<hour>\d\d):(?P<minute>\d\d):60(?P<tail>(?:\.\d+)?(?P<offset>[zZ]|[+-]\d\d:\d\d))$")


def _leap_second_as_59(text: str) -> Optional[str]:
    """``text`` with second 60 replaced by 59 if it is a well-placed leap second, else None."""
    match = _LEAP_SECOND.fullmatch(text)
    if match is None:
        return None
    minutes = int(match["hour"]) * 60 + int(match["minute"])
    offset = match["offset"]
    if offset not in ("z", "Z"):
        sign = 1 if offset[0] == "+" else -1
        minutes -= sign * (int(offset[1:3]) * 60 + int(offset[4:6]))
    if minutes % (24 * 60) != 23 * 60 + 59:
        return None
    return f"{match['head']}{match['hour']}:{match['minute']}:59{match['tail']}"


def _with_leap_seconds(checker: Any) -> Any:
    """A copy of a jsonschema ``FormatChecker`` whose "date-time" and "time" checks accept RFC 3339 leap seconds."""
    import copy

    patched = copy.copy(checker)
    patched.checkers = dict(checker.checkers)
    for name in ("date-time", "time"):
        if name not in checker.checkers:
            continue
        original, raises = checker.checkers[name]

        def check(instance: Any, original: Any = original) -> bool:
            if isinstance(instance, str):
                as_59 = _leap_second_as_59(instance)
                if as_59 is not None:
                    return bool(original(as_59))
            return bool(original(instance))

        patched.checkers[name] = (check, raises)
    return patched


class SchemaValidator:
    """``jsonschema`` validation with format checking, built once per schema."""

    def __init__(self, schema: Any) -> None:
        self.error: Optional[str] = None
        try:
            import jsonschema

            cls = jsonschema.validators.validator_for(schema)
            self._validator = cls(schema, format_checker=_with_leap_seconds(cls.FORMAT_CHECKER))
        except Exception as error:
            self._validator = None
            self.error = f"{type(error).__name__}: {error}"[:300]

    def check(self, text: bytes) -> tuple[str, Optional[str]]:
        """("valid" | "violation" | "validator_error", detail)."""
        import json

        try:
            value = json.loads(text.decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as error:
            return "violation", f"not JSON: {error}"[:300]
        if self._validator is None:
            return "validator_error", self.error
        try:
            first = next(iter(self._validator.iter_errors(value)), None)
        except Exception as error:  # unresolvable $ref, non-Python regex syntax...
            return "validator_error", f"{type(error).__name__}: {error}"[:300]
        if first is None:
            return "valid", None
        return "violation", f"{first.message} at {list(first.absolute_path)}"[:300]


def _digest(tokens: list[int]) -> str:
    return hashlib.sha1(np.asarray(tokens, dtype=np.int64).tobytes()).hexdigest()[:12]


def run_schema_task(engine: Engine, vocab: Vocab, task: dict[str, Any], options: WorkOptions, emit: Emit) -> None:
    """All measurements for one JSONSchemaBench entry on one engine."""
    item = load_schema_item(task["item"])
    mask = MaskReader(vocab)
    emit("set", {"category": item.category, "n_valid": len(item.valid), "n_invalid": len(item.invalid)})
    compiled = _compile(engine, lambda: engine.compile_json_schema(item.schema_text), mask, emit)
    if compiled is None:
        return
    eos = vocab.eos_id
    gc.disable()
    try:
        for index, value in enumerate(item.valid[: options.max_valid_instances]):
            tokens = vocab.encode(serialize_instance(value, item.schema))
            if len(tokens) > options.max_instance_tokens:
                emit("add", "valid", {"index": index, "n_tokens": len(tokens), "skipped": "too long"})
                continue
            result = _walk_instance(engine, compiled, tokens, mask, eos)
            emit("add", "valid", {"index": index, "n_tokens": len(tokens), **result})
        for index, value in enumerate(item.invalid[: options.max_invalid_instances]):
            tokens = vocab.encode(serialize_instance(value, item.schema))
            emit("add", "invalid", {"index": index, "n_tokens": len(tokens), **_check_invalid(engine, compiled, tokens, eos)})
    finally:
        gc.enable()
    validator = SchemaValidator(item.schema)
    sampler = WalkSampler(vocab, closing_bias=True)
    for walk in range(options.walks):
        rng = random.Random(f"{options.seed}:{item.name}:{walk}")
        end, tokens, _ = _random_walk(engine, compiled, mask, sampler, rng, options.walk_token_cap, eos)
        record: dict[str, Any] = {"walk": walk, "end": end, "n_tokens": len(tokens), "digest": _digest(tokens)}
        if end == "stop":
            text = vocab.decode_bytes(tokens)
            verdict, detail = validator.check(text)
            record.update(verdict=verdict, detail=detail)
            if verdict == "violation":
                record["text"] = text[:400].decode("utf-8", "replace")
        emit("add", "walks", record)


def run_grammar_task(engine: Engine, vocab: Vocab, task: dict[str, Any], options: WorkOptions, emit: Emit) -> None:
    """Compile, first mask and random walks (with per-token fill times) for one GBNF grammar."""
    text = (grammar_dir() / task["item"]).read_text(encoding="utf-8")
    mask = MaskReader(vocab)
    emit("set", {"category": "grammar"})
    compiled = _compile(engine, lambda: engine.compile_gbnf(text), mask, emit)
    if compiled is None:
        return
    sampler = WalkSampler(vocab, closing_bias=False)
    gc.disable()
    try:
        for walk in range(options.grammar_walks):
            rng = random.Random(f"{options.seed}:{task['item']}:{walk}")
            end, tokens, fill_ns = _random_walk(engine, compiled, mask, sampler, rng, options.grammar_walk_token_cap, vocab.eos_id)
            emit("add", "walks", {"walk": walk, "end": end, "n_tokens": len(tokens), "digest": _digest(tokens), "fill_ns": fill_ns})
    finally:
        gc.enable()


class BatchState:
    """Compiled grammars kept by a worker across batch tasks (compiled once, untimed)."""

    def __init__(self) -> None:
        self.compiled: dict[str, Any] = {}


def run_batch_task(engine: Engine, vocab: Vocab, task: dict[str, Any], state: BatchState, emit: Emit) -> None:
    """Masks per second for ``batch`` matchers filled together with ``threads`` threads.

    Matchers cycle over the given schemas and start at spread-out positions of a valid
    instance; after each timed batch fill every matcher accepts its next token (untimed) and
    restarts at the end of its instance.
    """
    batch, threads, rounds = int(task["batch"]), int(task["threads"]), int(task["rounds"])
    filler = engine.batch_filler(threads)
    if filler is None:
        emit("set", {"status": "unsupported"})
        return
    items = [dict(entry) for entry in task["items"]]  # [{"item": name, "index": valid instance}, ...]
    for entry in items:
        schema_item = load_schema_item(entry["item"])
        entry["tokens"] = vocab.encode(serialize_instance(schema_item.valid[entry["index"]], schema_item.schema))
        if entry["item"] not in state.compiled:
            state.compiled[entry["item"]] = engine.compile_json_schema(schema_item.schema_text)
    matchers, positions = [], []
    for i in range(batch):
        entry = items[i % len(items)]
        tokens = entry["tokens"]
        matcher = engine.new_matcher(state.compiled[entry["item"]])
        start = (i * 7919) % len(tokens)
        for token in tokens[:start]:
            engine.accept(matcher, token)
        matchers.append(matcher)
        positions.append(start)
    mask = MaskReader(vocab, rows=batch)
    filler(matchers, mask.tensor)  # warm-up (thread pools, lazy caches)
    times: list[int] = []
    gc.disable()
    try:
        for _ in range(rounds):
            t0 = _now()
            filler(matchers, mask.tensor)
            times.append(_now() - t0)
            for i, matcher in enumerate(matchers):
                tokens = items[i % len(items)]["tokens"]
                if positions[i] < len(tokens) and engine.accept(matcher, tokens[positions[i]]):
                    positions[i] += 1
                else:
                    engine.reset(matcher)
                    positions[i] = 0
    finally:
        gc.enable()
    total = sum(times) / 1e9
    emit("set", {"status": "ok", "batch": batch, "threads": threads, "rounds": rounds,
                 "masks_per_s": batch * rounds / total if total > 0 else None,
                 "batch_ns": times})
