"""Shared helpers for the test suite: data location, real tokenizers, token-level checks."""

from __future__ import annotations

import functools
import json
import os
import re
import sys
import urllib.parse
from pathlib import Path
from typing import Any, Callable, Iterable, Optional

import numpy as np
import pytest

import xg2_plugin as xg
from xg2_plugin.bitmask import bitmask_to_bool_array

REPO_ROOT = Path(__file__).resolve().parents[1]


# The first line of a child that tests Ctrl-C: Python's own SIGINT handler, as an interactive
# session has it. A test run started in the background by a non-interactive shell (`cmd &`)
# leaves SIGINT ignored, children inherit that, and a compile then rightly ignores the signal.
CHILD_DEFAULT_SIGINT = "signal.signal(signal.SIGINT, signal.default_int_handler)\n"


def child_env() -> dict[str, str]:
    """The environment for a child Python process that imports the engine this process
    imported (an installed package, or the sanitizer stage's staged build; the source tree
    has no built module in CI) and the test helpers beside this file."""
    here = str(Path(__file__).resolve().parent)
    return dict(os.environ, PYTHONPATH=os.pathsep.join([here] + [os.path.abspath(p) for p in sys.path if p]))


def data_dir() -> Path:
    """$XG2_DATA_DIR, else ../shared/data beside the repository."""
    return Path(os.environ.get("XG2_DATA_DIR", REPO_ROOT.parent / "shared" / "data"))


def require_data(relative: str) -> Path:
    path = data_dir() / relative
    if not path.exists():
        pytest.skip(f"test data not found: {path} (set XG2_DATA_DIR)")
    return path


HF_TOKENIZERS = ["llama3.1", "qwen2.5", "qwen3", "gpt-oss", "gpt2", "phi-3"]


@functools.lru_cache(maxsize=None)
def hf_tokenizer(name: str) -> Any:
    tokenizers = pytest.importorskip("tokenizers")
    return tokenizers.Tokenizer.from_file(str(require_data(f"tokenizers/hf/{name}/tokenizer.json")))


@functools.lru_cache(maxsize=None)
def hf_tokenizer_info(name: str) -> xg.TokenizerInfo:
    return xg.TokenizerInfo.from_huggingface(hf_tokenizer(name))


@functools.lru_cache(maxsize=None)
def hf_compiler(name: str) -> xg.GrammarCompiler:
    return xg.GrammarCompiler(hf_tokenizer_info(name))


def unrolled_compiler(name: str, **kwargs: Any) -> xg.GrammarCompiler:
    """A fresh compiler that unrolls repetitions (compression off) and precomputes nothing, so
    that a grammar like ``[a-z]{0,N}`` compiles in time proportional to N: for tests of
    concurrent, cancelled and timed-out compiles. ``kwargs`` override those settings."""
    options: dict[str, Any] = dict(precompute_nodes=0, repetition_compression_threshold=0)
    options.update(kwargs)
    return xg.GrammarCompiler(hf_tokenizer_info(name), **options)


def encode_continuation(name: str, text: str) -> list[int]:
    """Token ids a model would emit for `text` in the middle of a sequence.

    Sentencepiece-style tokenizers prepend a space marker at the start of an encoding; encode
    after a newline anchor and drop the anchor's tokens so the ids spell exactly `text`.
    """
    tok = hf_tokenizer(name)
    info = hf_tokenizer_info(name)
    ids = tok.encode(text, add_special_tokens=False).ids
    if decode_bytes(info, ids) == text.encode("utf-8"):
        return ids
    anchor = "\n"
    anchored = tok.encode(anchor + text, add_special_tokens=False).ids
    for cut in range(1, len(anchored)):
        if decode_bytes(info, anchored[cut:]) == text.encode("utf-8"):
            return anchored[cut:]
    raise AssertionError(f"cannot tokenize {text!r} as a continuation with {name}")


def decode_bytes(info: xg.TokenizerInfo, ids: Iterable[int]) -> bytes:
    vocab = info.decoded_vocab
    return b"".join(vocab[i] for i in ids)


def allowed_tokens(matcher: xg.GrammarMatcher, bitmask: Any, vocab_size: int) -> np.ndarray:
    matcher.fill_next_token_bitmask(bitmask)
    row = bitmask[0]
    return bitmask_to_bool_array(row, vocab_size)


def check_tokens_accepted(grammar: xg.CompiledGrammar, ids: list[int], *, expect_stop: bool = True,
                          mask_every: int = 1) -> None:
    """Feeds `ids`: each must be in the mask (checked every `mask_every` steps and at the
    end) and accepted; afterwards a stop token must be allowed and accepted."""
    info = grammar.tokenizer_info
    matcher = xg.GrammarMatcher(grammar)
    bitmask = np.full(xg.get_bitmask_shape(1, info.vocab_size), -1, dtype=np.int32)
    for step, token in enumerate(ids):
        if step % mask_every == 0 or step == len(ids) - 1:
            allowed = allowed_tokens(matcher, bitmask, info.vocab_size)
            assert allowed[token], f"token {token} ({info.decoded_vocab[token]!r}) at step {step} not in mask"
        assert matcher.accept_token(token), f"token {token} ({info.decoded_vocab[token]!r}) at step {step} rejected"
    if expect_stop:
        allowed = allowed_tokens(matcher, bitmask, info.vocab_size)
        stops = matcher.stop_token_ids
        assert any(allowed[s] for s in stops), "no stop token allowed at the end"
        assert matcher.accept_token(stops[0])
        assert matcher.is_terminated()


def assert_same_compiled_grammar(first: xg.CompiledGrammar, second: xg.CompiledGrammar) -> None:
    """The two compiles (say a fast path's and the general path's) gave the same grammar: same
    Python attributes, tokenizer, EBNF view and FSMs."""
    assert type(first) is xg.CompiledGrammar and type(second) is xg.CompiledGrammar
    assert vars(first).keys() == vars(second).keys()
    assert first.tokenizer_info is second.tokenizer_info
    assert repr(first) == repr(second)
    assert first.ebnf == second.ebnf
    assert first._handle.fsm_dump() == second._handle.fsm_dump()


def string_accepted(grammar: xg.CompiledGrammar, text: str) -> bool:
    matcher = xg.GrammarMatcher(grammar)
    return matcher.accept_string(text) and matcher.is_completed()


def check_accepted_as_jsonschema_says(grammar: xg.CompiledGrammar, schema: Any, instances: Iterable[Any]) -> None:
    """Each instance (serialized with json.dumps) is accepted exactly when jsonschema (draft
    2020-12) says it is valid; the instances must include valid and invalid ones."""
    import jsonschema

    validator = jsonschema.Draft202012Validator(schema)
    verdicts = set()
    for instance in instances:
        expected = validator.is_valid(instance)
        verdicts.add(expected)
        text = json.dumps(instance, ensure_ascii=False)
        assert string_accepted(grammar, text) == expected, (text, expected)
    assert verdicts == {True, False}, "the instances need valid and invalid ones"


def _resolve(schema: Any, root: Any, depth: int = 0) -> Any:
    """Follows local $ref chains (for ordering only)."""
    while isinstance(schema, dict) and isinstance(schema.get("$ref"), str) and schema["$ref"].startswith("#") and depth < 50:
        target: Any = root
        for part in schema["$ref"][1:].split("/")[1:]:
            part = part.replace("~1", "/").replace("~0", "~")
            if isinstance(target, dict) and part in target:
                target = target[part]
            elif isinstance(target, list) and part.isdigit() and int(part) < len(target):
                target = target[int(part)]
            else:
                return {}
        schema, depth = target, depth + 1
    return schema


class SchemaOrderer:
    """Puts instance keys in the order the grammar enforces: declared properties in schema
    order, then required-but-undeclared names, then the rest. Records whether any object
    carries properties its schema does not declare (those need strict_mode=False)."""

    def __init__(self, root: Any) -> None:
        self.root = root
        import jsonschema

        cls = jsonschema.validators.validator_for(root, default=jsonschema.Draft202012Validator)
        self.validator = cls(root)
        self.has_undeclared = False

    def resolve(self, schema, depth=0):
        while isinstance(schema, dict) and isinstance(schema.get("$ref"), str) and depth < 50:
            ref = schema["$ref"]
            if not ref.startswith("#/") and ref != "#":
                return schema
            node = self.root
            for token in ref[2:].split("/") if ref != "#" else []:
                token = urllib.parse.unquote(token).replace("~1", "/").replace("~0", "~")
                if isinstance(node, list) and token.isdigit() and int(token) < len(node):
                    node = node[int(token)]
                elif isinstance(node, dict) and token in node:
                    node = node[token]
                else:
                    return schema
            schema = node
            depth += 1
        return schema

    def shapes(self, branch: Any, value: Any) -> bool:
        """Whether `branch` says something about the order of `value`'s members or items (a
        branch such as {"required": [...]} does not: the enclosing schema's order holds)."""
        branch = self.resolve(branch)
        if not isinstance(branch, dict):
            return False
        if isinstance(value, dict):
            keys = ("properties", "patternProperties", "additionalProperties", "anyOf", "oneOf", "allOf")
        elif isinstance(value, list):
            keys = ("items", "prefixItems", "anyOf", "oneOf", "allOf")
        else:
            return True
        return any(k in branch for k in keys)

    def branch_for(self, schema: Any, value: Any) -> Any:
        """The first branch of anyOf / oneOf / allOf that shapes `value` and validates it (else
        the first that shapes it); None when no branch shapes it."""
        for key in ("anyOf", "oneOf", "allOf"):
            branches = schema.get(key) if isinstance(schema, dict) else None
            if not isinstance(branches, list):
                continue
            shaping = [b for b in branches if self.shapes(b, value)]
            for branch in shaping:
                try:
                    if self.validator.evolve(schema=branch).is_valid(value):
                        return branch
                except Exception:  # noqa: BLE001 - an unresolvable branch is just not chosen
                    pass
            if shaping:
                return shaping[0]
        return None

    def order(self, value, schema, depth=0):
        if depth > 60:
            return value
        schema = self.resolve(schema)
        if not isinstance(schema, dict):
            return value
        branch = self.branch_for(schema, value)
        if branch is not None:
            ordered = self.order(value, branch, depth + 1)
            # anyOf / oneOf next to `properties` are distributed as allOf [siblings, branch],
            # whose merge keeps the siblings' declared members first.
            own = schema.get("properties")
            if isinstance(ordered, dict) and isinstance(own, dict) and branch not in (schema.get("allOf") or []):
                first = [k for k in own if k in ordered]
                theirs = self.resolve(branch).get("properties") if isinstance(self.resolve(branch), dict) else None
                theirs = theirs if isinstance(theirs, dict) else {}
                ordered = {**{k: ordered[k] if k in theirs else self.order(value[k], own[k], depth + 1) for k in first},
                           **{k: v for k, v in ordered.items() if k not in own}}
            return ordered
        if isinstance(value, dict):
            props = schema.get("properties") if isinstance(schema.get("properties"), dict) else {}
            required = [r for r in schema.get("required", []) if isinstance(r, str)] \
                if isinstance(schema.get("required"), list) else []
            keys = [k for k in props if k in value]
            keys += [k for k in required if k in value and k not in keys]
            extras = [k for k in value if k not in keys]
            if extras:
                self.has_undeclared = True
            additional = schema.get("additionalProperties", True)
            patterns = schema.get("patternProperties") if isinstance(schema.get("patternProperties"), dict) else {}

            def member_schema(key):
                if key in props:
                    return props[key]
                for pattern, sub in patterns.items():
                    try:
                        if re.search(pattern, key):
                            return sub  # the first matching pattern decides the key order inside
                    except re.error:
                        pass
                return additional

            return {k: self.order(value[k], member_schema(k), depth + 1) for k in keys + extras}
        if isinstance(value, list):
            prefix = schema.get("prefixItems")
            items = schema.get("items")
            if prefix is None and isinstance(items, list):
                prefix, items = items, schema.get("additionalItems", True)
            prefix = prefix if isinstance(prefix, list) else []
            return [self.order(v, prefix[i] if i < len(prefix) else items, depth + 1)
                    for i, v in enumerate(value)]
        return value



def ordered_like_schema(value: Any, schema: Any, root: Any = None) -> Any:
    """`value` with object keys in the order the grammar emits them (SchemaOrderer)."""
    root = schema if root is None else root
    return SchemaOrderer(root).order(value, schema)


def dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def compare_masks_along(grammar: xg.CompiledGrammar, ids: list[int], *, require_accept: bool = False) -> int:
    """Feeds `ids`, comparing the cached mask with the reference walk's before every token and
    after the last; returns the steps compared. A rejected token ends the walk, or fails the
    test with `require_accept`."""
    info = grammar.tokenizer_info
    matcher = xg.GrammarMatcher(grammar)
    cached = np.zeros(xg.get_bitmask_shape(1, info.vocab_size), dtype=np.int32)
    reference = np.zeros_like(cached)
    steps = 0
    for token in ids + [None]:
        assert matcher.fill_next_token_bitmask(cached) == matcher._fill_next_token_bitmask_reference(reference)
        if not np.array_equal(cached, reference):
            diff = np.flatnonzero(np.unpackbits((cached ^ reference).view(np.uint8), bitorder="little"))
            raise AssertionError(f"step {steps}: masks differ on tokens {[info.decoded_vocab[t] for t in diff[:10]]}")
        steps += 1
        if token is None:
            break
        accepted = matcher.accept_token(token)
        if require_accept:
            assert accepted, f"step {steps}: token {info.decoded_vocab[token]!r} rejected"
        elif not accepted:
            break
    return steps


def compare_masks_along_valid_instances(grammar: xg.CompiledGrammar, schema: Any, instances: Iterable[Any],
                                        tokenizer: str = "llama3.1") -> int:
    """compare_masks_along each instance that jsonschema (draft 2020-12) says is valid, serialized
    with json.dumps and tokenized with `tokenizer`; returns the steps compared."""
    import jsonschema

    validator = jsonschema.Draft202012Validator(schema)
    steps = 0
    for instance in instances:
        if validator.is_valid(instance):
            ids = encode_continuation(tokenizer, json.dumps(instance, ensure_ascii=False))
            steps += compare_masks_along(grammar, ids, require_accept=True)
    return steps


def sampled_walk(grammar: xg.CompiledGrammar, rng: Any, steps: int,
                 pick: Optional[Callable[[list], int]] = None) -> list[int]:
    """Token ids drawn at random from the reference mask (stop tokens excluded), so that a walk
    reaches states the corpus instances do not; each token must be accepted. `pick` chooses
    among the allowed ids instead of `rng.choice` (to bias a walk)."""
    info = grammar.tokenizer_info
    matcher = xg.GrammarMatcher(grammar)
    bitmask = np.zeros(xg.get_bitmask_shape(1, info.vocab_size), dtype=np.int32)
    stops = set(matcher.stop_token_ids)
    ids: list[int] = []
    for _ in range(steps):
        matcher._fill_next_token_bitmask_reference(bitmask)
        bits = np.unpackbits(bitmask[0].view(np.uint8), bitorder="little")[: info.vocab_size]
        allowed = [t for t in np.flatnonzero(bits) if t not in stops]
        if not allowed:
            break
        token = int(pick(allowed) if pick is not None else rng.choice(allowed))
        assert matcher.accept_token(token)
        ids.append(token)
    return ids



def compare_masks_on_sampled_walks(grammar: xg.CompiledGrammar, rng: Any, walks: int, steps: int) -> None:
    """Draws `walks` sampled walks of up to `steps` tokens and compares the fast mask with the
    reference at every step of each (the state before the first token and after the last
    included)."""
    for _ in range(walks):
        ids = sampled_walk(grammar, rng, steps)
        assert compare_masks_along(grammar, ids, require_accept=True) == len(ids) + 1

def fsm_rules(dump: str) -> dict[str, list[str]]:
    """The FSM dump as rule name -> the lines of its nodes."""
    rules: dict[str, list[str]] = {}
    current = None
    for line in dump.splitlines():
        if line.startswith("rule "):
            current = line.split()[1]
            rules[current] = []
        elif current is not None:
            rules[current].append(line)
    return rules


def fsm_calls(lines: list[str]) -> list[str]:
    """The rules called from these lines of an FSM dump."""
    return [call for line in lines for call in re.findall(r"<([^>]+)>", line)]


def emptied(lines: list[str]) -> bool:
    """One node, not accepting, without edges: the empty language."""
    return len(lines) == 1 and "*" not in lines[0] and "->" not in lines[0]


def check_schema_walks_and_counterexamples(grammar: xg.CompiledGrammar, schema: Any, invalid: Iterable[Any],
                                           seed: int, walks: int) -> None:
    """Each value of `invalid` is invalid for `schema` (jsonschema, draft 2020-12) and rejected
    by `grammar`; random walks drawn from `grammar`'s masks that finish give valid values, and
    at least one finishes."""
    import random

    import jsonschema

    from xg2_corpus import random_walk  # xg2_corpus imports this module

    validator = jsonschema.Draft202012Validator(schema)
    for value in invalid:
        assert not validator.is_valid(value), value
        assert not string_accepted(grammar, json.dumps(value, ensure_ascii=False)), value
    bitmask = np.full(xg.get_bitmask_shape(1, grammar.tokenizer_info.vocab_size), -1, dtype=np.int32)
    rng = random.Random(seed)
    finished = 0
    for _ in range(walks):
        out = random_walk(grammar, rng, bitmask, 48)
        if out is None:
            continue
        assert validator.is_valid(json.loads(out.decode("utf-8"))), out
        finished += 1
    assert finished > 0
