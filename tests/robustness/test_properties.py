"""Property tests of the matcher over real tokenizers and real grammars (hypothesis).

Random sequences of accept / rollback / fork / validate operations are drawn against JSON
schemas from JSONSchemaBench and EBNF grammars from the shared grammar collection. After
every operation the matcher must be indistinguishable from a fresh matcher fed the same
accepted prefix, and its mask must equal the reference mask (the uncached vocabulary walk).
Tokens inside the mask must be accepted and tokens outside it rejected.
"""

from __future__ import annotations

import functools
import os
import json
from typing import Any, Optional

import numpy as np
import pytest

import xg2_plugin as xg
from xg2_plugin.bitmask import bitmask_to_bool_array
from xg2_test_support import data_dir, hf_tokenizer_info

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

TOKENIZER = "gpt2"
# A fixed, varied set: small and nested objects, arrays, enums, numbers with bounds, patterns.
SCHEMA_FILES = [
    "Github_easy---o10008.json",
    "Glaiveai2K---*",
    "Kubernetes---*",
    "Github_medium---*",
    "Snowplow---*",
    "WashingtonPost---*",
]
EBNF_FILES = ["json.gbnf", "arithmetic.gbnf", "list.gbnf", "chess.gbnf"]

PROPERTY_SETTINGS = settings(
    max_examples=int(os.environ.get("XG2_PROPERTY_EXAMPLES", "25")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    derandomize=True,
)


@functools.lru_cache(maxsize=None)
def compiler() -> xg.GrammarCompiler:
    return xg.GrammarCompiler(hf_tokenizer_info(TOKENIZER))


@functools.lru_cache(maxsize=None)
def grammar_sources() -> list[tuple[str, str, str]]:
    """(name, kind, text) for the grammars under test; skips when the data is missing."""
    root = data_dir()
    sources: list[tuple[str, str, str]] = []
    corpus = root / "jsonschemabench"
    for pattern in SCHEMA_FILES:
        # The first file of the category (sorted) that compiles strictly: a fixed choice.
        for path in sorted(corpus.glob(pattern))[:20]:
            schema = json.loads(path.read_text())["schema"]
            try:
                compiler().compile_json_schema(schema)
            except xg.XG2Error:
                continue
            sources.append((path.name, "json_schema", json.dumps(schema)))
            break
    for name in EBNF_FILES:
        path = root / "grammars" / name
        if path.exists():
            sources.append((name, "ebnf", path.read_text()))
    if not sources:
        pytest.skip(f"no grammars found under {root}")
    return sources


@functools.lru_cache(maxsize=None)
def compiled(index: int) -> xg.CompiledGrammar:
    _, kind, text = grammar_sources()[index]
    if kind == "json_schema":
        return compiler().compile_json_schema(text)
    return compiler().compile_grammar(text)


def mask_of(matcher: xg.GrammarMatcher, reference: bool = False) -> np.ndarray:
    vocab = matcher.vocab_size
    bitmask = np.zeros(xg.get_bitmask_shape(1, vocab), dtype=np.int32)
    if reference:
        matcher._fill_next_token_bitmask_reference(bitmask)
    else:
        matcher.fill_next_token_bitmask(bitmask)
    return bitmask_to_bool_array(bitmask[0], vocab)


def fresh_matcher(grammar: xg.CompiledGrammar, prefix: list[int]) -> xg.GrammarMatcher:
    matcher = xg.GrammarMatcher(grammar)
    for step, token in enumerate(prefix):
        assert matcher.accept_token(token), f"fresh matcher rejects token {token} at step {step} of {prefix}"
    return matcher


def assert_same_state(matcher: xg.GrammarMatcher, grammar: xg.CompiledGrammar, prefix: list[int]) -> np.ndarray:
    """The matcher's mask equals a fresh matcher's on the same prefix and the reference mask."""
    mask = mask_of(matcher)
    fresh = fresh_matcher(grammar, prefix)
    assert np.array_equal(mask, mask_of(fresh)), f"mask differs from a fresh matcher after {prefix}"
    assert np.array_equal(mask, mask_of(matcher, reference=True)), f"mask differs from the reference after {prefix}"
    assert matcher.is_completed() == fresh.is_completed()
    assert matcher.num_accepted_steps == len(prefix)
    return mask


def pick(rng_value: int, candidates: np.ndarray) -> Optional[int]:
    return None if len(candidates) == 0 else int(candidates[rng_value % len(candidates)])


OPERATION = st.one_of(
    st.tuples(st.just("accept_allowed"), st.integers(0, 1 << 30)),
    st.tuples(st.just("accept_any"), st.integers(0, 1 << 30)),
    st.tuples(st.just("rollback"), st.integers(0, 4)),
    st.tuples(st.just("fork"), st.integers(0, 1)),
    st.tuples(st.just("validate"), st.integers(0, 6)),
)


@PROPERTY_SETTINGS
@given(grammar_index=st.integers(0, 63), operations=st.lists(OPERATION, min_size=1, max_size=18))
def test_random_operation_sequences_match_a_fresh_matcher(grammar_index: int, operations: list[Any]) -> None:
    sources = grammar_sources()
    grammar = compiled(grammar_index % len(sources))
    stops = set(grammar.tokenizer_info.stop_token_ids)
    matcher = xg.GrammarMatcher(grammar)
    prefix: list[int] = []
    mask = assert_same_state(matcher, grammar, prefix)
    for op, value in operations:
        if op == "accept_allowed":
            allowed = np.array([t for t in np.flatnonzero(mask) if t not in stops])
            token = pick(value, allowed)
            if token is None:
                continue
            assert matcher.accept_token(token), f"token {token} in the mask was rejected after {prefix}"
            prefix.append(token)
        elif op == "accept_any":
            token = value % grammar.tokenizer_info.vocab_size
            if token in stops:
                continue
            assert matcher.accept_token(token) == bool(mask[token]), f"accept of {token} disagrees with the mask"
            if mask[token]:
                prefix.append(token)
        elif op == "rollback":
            count = min(value, len(prefix))
            matcher.rollback(count)
            del prefix[len(prefix) - count:]
        elif op == "fork":
            forked = matcher.fork()
            if value:  # continue on the fork; the original must stay usable and unchanged
                original, matcher = matcher, forked
                assert_same_state(original, grammar, prefix)
            else:
                assert_same_state(forked, grammar, prefix)
        elif op == "validate":
            # validate_tokens agrees with accept-then-rollback and never changes state.
            allowed = np.array([t for t in np.flatnonzero(mask) if t not in stops])
            tokens = [pick(value * 7919 + i, allowed) or 0 for i in range(value)]
            tokens.append(value * 104729 % grammar.tokenizer_info.vocab_size)
            probe = matcher.fork()
            accepted = 0
            for token in tokens:
                if not probe.accept_token(token):
                    break
                accepted += 1
            assert matcher.validate_tokens(tokens) == accepted
        mask = assert_same_state(matcher, grammar, prefix)


@PROPERTY_SETTINGS
@given(grammar_index=st.integers(0, 63), walk=st.lists(st.integers(0, 1 << 30), max_size=12),
       probes=st.lists(st.integers(0, 1 << 30), min_size=1, max_size=40))
def test_mask_decides_acceptance(grammar_index: int, walk: list[int], probes: list[int]) -> None:
    """At a random reachable state, every probed token is accepted iff it is in the mask, and
    validate_tokens of that single token agrees without changing the state."""
    sources = grammar_sources()
    grammar = compiled(grammar_index % len(sources))
    vocab = grammar.tokenizer_info.vocab_size
    stops = set(grammar.tokenizer_info.stop_token_ids)
    matcher = xg.GrammarMatcher(grammar)
    prefix: list[int] = []
    for value in walk:
        allowed = np.array([t for t in np.flatnonzero(mask_of(matcher)) if t not in stops])
        token = pick(value, allowed)
        if token is None:
            break
        assert matcher.accept_token(token)
        prefix.append(token)
    mask = mask_of(matcher)
    assert np.array_equal(mask, mask_of(matcher, reference=True))
    inside = np.flatnonzero(mask)
    outside = np.flatnonzero(~mask)
    tokens = {pick(v, inside) for v in probes[: len(probes) // 2]} | {pick(v, outside) for v in probes[len(probes) // 2:]}
    tokens |= {int(s) for s in stops if s < vocab}
    for token in sorted(t for t in tokens if t is not None):
        assert matcher.validate_tokens([token]) == int(mask[token])
        accepted = matcher.accept_token(token)
        assert accepted == bool(mask[token]), f"token {token}: accepted={accepted}, in mask={bool(mask[token])}"
        if accepted:
            matcher.rollback(1)
        assert matcher.num_accepted_steps == len(prefix)
    assert np.array_equal(mask_of(matcher), mask)
