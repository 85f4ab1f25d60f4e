"""GrammarMatcher.traverse_draft_tree (native DFS over a speculative draft tree) against a plain
Python traversal with the public per-node API (accept, fill, rollback), on random trees over
real tokenizers and grammars; and its refusal of malformed trees."""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest
import torch

import xg2_plugin as xg
from xg2_test_support import hf_compiler, hf_tokenizer_info

SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "maxLength": 12},
        "tags": {"type": "array", "items": {"enum": ["a", "bc", "def"]}, "maxItems": 3},
        "n": {"type": "integer"},
    },
    "required": ["name", "n"],
    "additionalProperties": False,
}
TOOL_TAG = {
    "type": "structural_tag",
    "format": {
        "type": "triggered_tags",
        "triggers": ["<tool_call>"],
        "tags": [{
            "type": "tag",
            "begin": "<tool_call>",
            "content": {"type": "json_schema", "json_schema": {
                "type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
                "required": ["city"], "additionalProperties": False}},
            "end": "</tool_call>",
        }],
        "at_least_one": True,
    },
}


def grammar(tokenizer: str, kind: str) -> xg.CompiledGrammar:
    compiler = hf_compiler(tokenizer)
    if kind == "json":
        return compiler.compile_json_schema(SCHEMA)
    return compiler.compile_structural_tag(TOOL_TAG)


def reference_traversal(matcher: xg.GrammarMatcher, next_token: list[int], next_sibling: list[int],
                        draft: list[int], bitmask: torch.Tensor) -> None:
    """The traversal spelled out with public calls, one per node (SGLang's traverse_tree, with
    the all-zero rows of rejected and terminal nodes)."""
    words = bitmask.shape[1]

    def visit(node: int, parent: int) -> None:
        token = draft[node]
        allowed = node == 0 or (
            0 <= token < min(matcher.vocab_size, words * 32)
            and (int(bitmask[parent, token // 32]) >> (token % 32)) & 1 == 1
        )
        stepped = allowed and node != 0 and matcher.accept_token(token)
        if allowed and (node == 0 or stepped) and not matcher.is_terminated():
            matcher.fill_next_token_bitmask(bitmask, node)
            if next_token[node] != -1:
                visit(next_token[node], node)
        else:
            bitmask[node].zero_()
        if stepped:
            matcher.rollback(1)
        if next_sibling[node] != -1:
            visit(next_sibling[node], parent)

    visit(0, -1)


def random_tree(rng: random.Random, base: xg.GrammarMatcher, num_nodes: int) -> tuple[list[int], list[int], list[int]]:
    """A random draft tree whose tokens mostly follow the grammar (so paths get deep), with
    some forbidden tokens, stop tokens and padding ids mixed in; node ids are shuffled."""
    vocab = base.vocab_size
    mask = xg.allocate_token_bitmask(1, vocab)
    parents, tokens, valid = [-1], [0], [True]
    for node in range(1, num_nodes):
        parent = rng.choice(range(max(0, node - 4), node)) if rng.random() < 0.8 else rng.randrange(node)
        path, p = [], parent
        while p > 0:
            path.append(tokens[p])
            p = parents[p]
        token = rng.randrange(vocab + 64) - 32  # occasionally negative or past the vocabulary
        if valid[parent] and rng.random() < 0.8:
            probe = base.fork()
            for t in reversed(path):
                assert probe.accept_token(t)
            if not probe.is_terminated():
                probe.fill_next_token_bitmask(mask)
                choices = np.flatnonzero(xg.bitmask.bitmask_to_bool_array(mask[0], vocab))
                if len(choices):
                    token = int(rng.choice(list(choices)))
        parents.append(parent)
        tokens.append(token)
        valid.append(valid[parent] and 0 <= token < vocab and _follows(base, [*reversed(path), token]))
    order = [0] + rng.sample(range(1, num_nodes), num_nodes - 1)  # tree node -> array index
    next_token, next_sibling, draft = [-1] * num_nodes, [-1] * num_nodes, [0] * num_nodes
    last_child: dict[int, int] = {}
    for node in range(1, num_nodes):
        parent = parents[node]
        if parent in last_child:
            next_sibling[order[last_child[parent]]] = order[node]
        else:
            next_token[order[parent]] = order[node]
        last_child[parent] = node
        draft[order[node]] = tokens[node]
    return next_token, next_sibling, draft


def _follows(base: xg.GrammarMatcher, tokens: list[int]) -> bool:
    probe = base.fork()
    return all(probe.accept_token(t) for t in tokens) and not probe.is_terminated()


def as_tensors(*arrays: list[int]) -> list[torch.Tensor]:
    return [torch.tensor(a, dtype=torch.int64) for a in arrays]


@pytest.mark.parametrize("tokenizer,kind,prefix", [
    ("llama3.1", "json", '{"name": "a'),
    ("llama3.1", "tag", "<tool_call>{\"city\": \""),
    ("qwen3", "tag", ""),
])
def test_native_traversal_equals_python_reference(tokenizer: str, kind: str, prefix: str) -> None:
    compiled = grammar(tokenizer, kind)
    vocab = compiled.tokenizer_info.vocab_size
    native = xg.GrammarMatcher(compiled)
    if prefix:
        assert native.accept_string(prefix)
    reference = native.fork()
    rng = random.Random(f"{tokenizer}-{kind}")
    masked_rows = 0  # rows that got a real mask (not skipped, not zero): the test is not vacuous
    for trial in range(6):
        num_nodes = rng.choice([1, 2, 8, 17, 32])
        next_token, next_sibling, draft = random_tree(rng, native, num_nodes)
        fill = rng.randrange(-2**31, 2**31)  # rows the walk never reaches keep this
        got = torch.full((num_nodes, (vocab + 31) // 32), fill, dtype=torch.int32)
        want = got.clone()
        steps = native.num_accepted_steps
        assert native.traverse_draft_tree(*as_tensors(next_token, next_sibling, draft), got) is True
        reference_traversal(reference, next_token, next_sibling, draft, want)
        for node in range(num_nodes):
            assert torch.equal(got[node], want[node]), (trial, node, draft)
            masked_rows += int(bool((got[node] != fill).any()) and bool(got[node].any()))
        assert native.num_accepted_steps == steps
    assert masked_rows >= 20
    # The state is the one before the traversals: same mask, same continuation.
    after, before = xg.allocate_token_bitmask(1, vocab), xg.allocate_token_bitmask(1, vocab)
    native.fill_next_token_bitmask(after)
    reference.fill_next_token_bitmask(before)
    assert torch.equal(after, before)


def test_chain_masks_are_the_masks_along_the_path_and_numpy_works() -> None:
    compiled = grammar("llama3.1", "json")
    info = compiled.tokenizer_info
    text_ids = [i for i in range(info.vocab_size) if info.decoded_vocab[i] in (b'{"', b"name", b'":', b' "', b"x")]
    tokens = {info.decoded_vocab[i]: i for i in text_ids}
    chain = [0, tokens[b'{"'], tokens[b"name"], tokens[b'":'], tokens[b' "'], tokens[b"x"]]
    n = len(chain)
    matcher = xg.GrammarMatcher(compiled)
    rows = np.zeros((n, (info.vocab_size + 31) // 32), dtype=np.int32)
    next_token = np.array(list(range(1, n)) + [-1], dtype=np.int64)
    assert matcher.traverse_draft_tree(next_token, np.full(n, -1, dtype=np.int64), np.array(chain), rows)
    walker = xg.GrammarMatcher(compiled)
    expected = np.zeros_like(rows[:1])
    for node, token in enumerate(chain):
        if node:
            assert walker.accept_token(token)
        walker.fill_next_token_bitmask(expected)
        assert np.array_equal(rows[node], expected[0]), node


def test_time_limit_stops_after_the_root_and_restores_state() -> None:
    compiled = grammar("llama3.1", "json")
    matcher = xg.GrammarMatcher(compiled)
    rng = random.Random(7)
    tree = random_tree(rng, matcher, 8)
    rows = torch.full((8, (matcher.vocab_size + 31) // 32), 5, dtype=torch.int32)
    # Any elapsed time exceeds 1e-15 s: the walk stops at the first node past the root.
    assert matcher.traverse_draft_tree(*as_tensors(*tree), rows, time_threshold=1e-15) is False
    expected = xg.allocate_token_bitmask(1, matcher.vocab_size)
    matcher.fill_next_token_bitmask(expected)
    assert torch.equal(rows[0], expected[0])
    assert matcher.num_accepted_steps == 0


def test_terminated_root_gets_a_zero_row() -> None:
    compiled = hf_compiler("llama3.1").compile_regex("ab")
    matcher = xg.GrammarMatcher(compiled)
    assert matcher.accept_string("ab")
    stop = matcher.stop_token_ids[0]
    assert matcher.accept_token(stop) and matcher.is_terminated()
    rows = torch.full((2, (matcher.vocab_size + 31) // 32), 3, dtype=torch.int32)
    assert matcher.traverse_draft_tree(*as_tensors([1, -1], [-1, -1], [stop, 5]), rows)
    assert bool((rows[0] == 0).all()) and bool((rows[1] == 3).all())
    assert matcher.is_terminated() and matcher.num_accepted_steps == 2


def _bad(next_token: Any = None, next_sibling: Any = None, draft: Any = None, rows: Any = None,
         n: int = 4) -> tuple:
    words = (hf_tokenizer_info("llama3.1").vocab_size + 31) // 32
    default = torch.tensor([1, 2, 3, -1], dtype=torch.int64)
    return (default if next_token is None else next_token,
            torch.full((n,), -1, dtype=torch.int64) if next_sibling is None else next_sibling,
            torch.zeros(n, dtype=torch.int64) if draft is None else draft,
            torch.zeros((n, words), dtype=torch.int32) if rows is None else rows)


I64 = lambda *v: torch.tensor(v, dtype=torch.int64)  # noqa: E731


@pytest.mark.parametrize("args,error,names", [
    (_bad(next_token=I64(1, 2, 1, -1)), ValueError, "retrieve_next_token"),  # 1 -> 2 -> 1
    (_bad(next_token=I64(-1, 2, 3, 1)), ValueError, "cycle"),  # a cycle cut off from the root
    (_bad(next_token=I64(1, 1, -1, -1)), ValueError, "retrieve_next_token[1] = 1"),  # self loop
    (_bad(next_token=I64(1, 2, 3, 0)), ValueError, "root"),
    (_bad(next_token=I64(1, 9, -1, -1)), ValueError, "retrieve_next_token[1] = 9 is out of range"),
    (_bad(next_token=I64(1, -2, -1, -1)), ValueError, "retrieve_next_token[1] = -2 is out of range"),
    (_bad(next_sibling=I64(1, -1, -1, -1)), ValueError, "retrieve_next_sibling[0]"),
    (_bad(next_sibling=I64(-1, 2, -1, -1)), ValueError, "already linked"),  # node 2: child and sibling
    (_bad(next_sibling=I64(-1, -1, -1)), ValueError, "retrieve_next_sibling"),
    (_bad(draft=torch.zeros(5, dtype=torch.int64)), ValueError, "draft_tokens"),
    (_bad(rows=torch.zeros((3, 4008), dtype=torch.int32)), ValueError, "one row per node"),
    (_bad(rows=torch.zeros((4, 100), dtype=torch.int32)), ValueError, "words"),
    (_bad(rows=torch.zeros((4, 4008), dtype=torch.int64)), ValueError, "int32"),
    (_bad(next_token=I64(1, 2, 3, -1).int()), ValueError, "retrieve_next_token must be a 1-D int64"),
    (_bad(next_sibling=torch.full((4,), -1, dtype=torch.int32)), ValueError, "retrieve_next_sibling"),
    (_bad(draft=torch.zeros(4, dtype=torch.float32)), ValueError, "draft_tokens"),
    (_bad(next_token=I64(1, 2, 3, -1).reshape(2, 2)), ValueError, "retrieve_next_token"),
    (_bad(next_token=I64(), next_sibling=I64(), draft=I64(), rows=torch.zeros((0, 4008), dtype=torch.int32)),
     ValueError, "at least one node"),
    (_bad(next_token=[1, 2, 3, -1]), TypeError, "retrieve_next_token"),
])
def test_malformed_trees_are_refused_naming_the_argument(args: tuple, error: type, names: str) -> None:
    matcher = xg.GrammarMatcher(grammar("llama3.1", "json"))
    before = args[3].clone()
    with pytest.raises(error) as info:
        matcher.traverse_draft_tree(*args)
    assert names in str(info.value)
    assert torch.equal(args[3], before) and matcher.num_accepted_steps == 0
