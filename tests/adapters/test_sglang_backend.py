"""The xg2 SGLang backend driven through SGLang's own code paths (no engine, no mocks).

Registration goes through the real entry point and ``load_plugins``; backends come from
SGLang's ``create_grammar_backend``; grammars from its cache/future path; masks are applied
with its ``GrammarMask``; spec decoding uses its ``generate_token_bitmask`` /
``traverse_tree``; reasoning uses its ``ReasonerGrammarBackend``.
"""

from __future__ import annotations

import argparse
import json
from array import array
from pathlib import Path
from typing import Any, Iterator

import pytest

pytest.importorskip("sglang")

import torch  # noqa: E402
from sglang_fixtures import LLAMA3_EOS_IDS, llama_tokenizer, sglang_tiny_llama  # noqa: E402,F401

# Padded beyond the tokenizer's 128,256 ids, as model vocabularies often are.
LLAMA_VOCAB = 128_320
QWEN3_VOCAB = 151_936
SCHEMA = {
    "type": "object",
    "properties": {"name": {"type": "string", "enum": ["ada", "bob"]}, "age": {"type": "integer"}},
    "required": ["name", "age"],
    "additionalProperties": False,
}


def allowed(mask: torch.Tensor, row: int, token: int) -> bool:
    return bool((int(mask[row, token // 32]) >> (token % 32)) & 1)


def allowed_ids(mask: torch.Tensor, row: int, vocab_size: int) -> list[int]:
    bits = (mask[row].unsqueeze(-1) >> torch.arange(32, dtype=torch.int32)) & 1
    return torch.nonzero(bits.reshape(-1)[:vocab_size]).flatten().tolist()


def get_grammar(backend: Any, key: tuple[str, str], reasoning: bool = False) -> Any:
    """A request's grammar object, obtained the way SGLang's GrammarManager does."""
    value, cache_hit = backend.get_cached_or_future_value(key, reasoning)
    if not cache_hit:
        value = value.result(timeout=120)
        backend.set_cache(key, value.copy())
    return value


@pytest.fixture(scope="module")
def registered() -> None:
    from sglang.srt.plugins import load_plugins

    load_plugins()


@pytest.fixture()
def make_backend(registered: None, sglang_tiny_llama: Path) -> Iterator[Any]:  # noqa: F811
    """Builds backends through SGLang's ``create_grammar_backend`` under published server args."""
    from sglang.srt.constrained.base_grammar_backend import create_grammar_backend
    from sglang.srt.runtime_context import SpawnRanks, publish, reset_context
    from sglang.srt.server_args import ServerArgs

    def make(tokenizer: Any, vocab_size: int, eos_ids: set[int], **fields: Any) -> Any:
        args = ServerArgs(model_path=str(sglang_tiny_llama), grammar_backend="xg2", device="cpu", **fields)
        reset_context()
        publish(args, role="test", ranks=SpawnRanks(world_rank=0, dp_rank=None))
        return create_grammar_backend(args, tokenizer, vocab_size, eos_ids)

    yield make
    reset_context()


@pytest.fixture()
def backend(make_backend: Any, llama_tokenizer: Any) -> Any:  # noqa: F811
    return make_backend(llama_tokenizer, LLAMA_VOCAB, set(LLAMA3_EOS_IDS))


@pytest.fixture(scope="module")
def qwen3_tokenizer(data_dir: Path) -> Any:
    from sglang.srt.utils.hf_transformers.tokenizer import get_tokenizer

    return get_tokenizer(str(data_dir / "tokenizers" / "hf" / "qwen3"))


def test_sglang_without_the_backend_registry_gets_no_backend_and_one_warning(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """SGLang calls every installed plugin in every process: on an SGLang without the registry
    the adapter hooks, registering must raise nothing and register nothing."""
    from sglang.srt.constrained import base_grammar_backend

    from xg2_plugin.adapters.sglang import register

    registry_before = dict(base_grammar_backend.GRAMMAR_BACKEND_REGISTRY)
    monkeypatch.delattr(base_grammar_backend, "register_grammar_backend")
    with caplog.at_level("WARNING", logger="xg2_plugin.adapters.sglang"):
        register()
    (record,) = [r for r in caplog.records if r.name == "xg2_plugin.adapters.sglang"]
    assert "register_grammar_backend" in record.getMessage() and "not registered" in record.getMessage()
    assert base_grammar_backend.GRAMMAR_BACKEND_REGISTRY == registry_before


def walk(grammar: Any, tokens: list[int], vocab_size: int) -> torch.Tensor:
    """Checks that every token is allowed by the mask before it, accepts it; returns the last mask."""
    mask = grammar.allocate_vocab_mask(vocab_size, 1, "cpu")
    for token in tokens:
        grammar.fill_vocab_mask(mask, 0)
        assert allowed(mask, 0, token), token
        grammar.accept_token(token)
    grammar.fill_vocab_mask(mask, 0)
    return mask


def test_entry_point_registers_backend_and_cli_choice(registered: None) -> None:
    from sglang.srt.constrained.base_grammar_backend import GRAMMAR_BACKEND_REGISTRY
    from sglang.srt.plugins import load_plugins_by_group
    from sglang.srt.server_args import GRAMMAR_BACKEND_CHOICES, ServerArgs

    from xg2_plugin.adapters.sglang import register
    from xg2_plugin.adapters.sglang.backend import create_xg2_backend

    plugins = load_plugins_by_group("sglang.srt.plugins")
    assert plugins["xg2"][0] is register
    register()  # idempotent
    assert GRAMMAR_BACKEND_CHOICES.count("xg2") == 1
    assert GRAMMAR_BACKEND_REGISTRY["xg2"] is create_xg2_backend
    parser = argparse.ArgumentParser()
    ServerArgs.add_cli_args(parser)
    args = parser.parse_args(["--model-path", "m", "--grammar-backend", "xg2"])
    assert args.grammar_backend == "xg2"


def test_json_schema_walk_padding_and_every_eos(backend: Any, llama_tokenizer: Any) -> None:  # noqa: F811
    from xg2_plugin.adapters.sglang.backend import XG2Grammar, XG2GrammarBackend

    assert isinstance(backend, XG2GrammarBackend)
    grammar = get_grammar(backend, ("json", json.dumps(SCHEMA)))
    assert isinstance(grammar, XG2Grammar) and grammar
    mask = grammar.allocate_vocab_mask(LLAMA_VOCAB, 3, "cpu")
    assert mask.shape == (3, (LLAMA_VOCAB + 31) // 32) and mask.dtype == torch.int32
    assert bool((mask == -1).all())

    text = '{"name": "ada", "age": 42}'
    mask = walk(grammar, llama_tokenizer.encode(text, add_special_tokens=False), LLAMA_VOCAB)
    assert all(allowed(mask, 0, eos) for eos in LLAMA3_EOS_IDS)
    assert not any(allowed(mask, 0, t) for t in range(128_256, LLAMA_VOCAB))
    assert not grammar.is_terminated()
    grammar.accept_token(LLAMA3_EOS_IDS[1])
    assert grammar.is_terminated()
    grammar.accept_token(LLAMA3_EOS_IDS[0])  # after termination: ignored, as SGLang expects
    grammar.rollback(1)
    assert not grammar.is_terminated()


def test_restarted_backend_reads_grammars_from_the_cache_dir(
    make_backend: Any, llama_tokenizer: Any, tmp_path: Path, monkeypatch: Any  # noqa: F811
) -> None:
    monkeypatch.setenv("XG2_CACHE_DIR", str(tmp_path))
    key = ("json", json.dumps(SCHEMA))
    tokens = llama_tokenizer.encode('{"name": "bob", "age": 7}', add_special_tokens=False)
    first = make_backend(llama_tokenizer, LLAMA_VOCAB, set(LLAMA3_EOS_IDS))
    written = walk(get_grammar(first, key), tokens, LLAMA_VOCAB)
    assert first.compiler.disk_cache.stats["writes"] == 1
    restarted = make_backend(llama_tokenizer, LLAMA_VOCAB, set(LLAMA3_EOS_IDS))
    read_back = walk(get_grammar(restarted, key), tokens, LLAMA_VOCAB)
    assert restarted.compiler.disk_cache.stats["hits"] == 1
    assert restarted.compiler.disk_cache.stats["misses"] == 0
    assert torch.equal(read_back, written)


def test_rejected_token_raises_value_error(backend: Any, llama_tokenizer: Any) -> None:  # noqa: F811
    grammar = get_grammar(backend, ("regex", "[0-9]+"))
    with pytest.raises(ValueError, match="not allowed"):
        grammar.accept_token(llama_tokenizer.encode("abc", add_special_tokens=False)[0])
    with pytest.raises(ValueError):
        grammar.accept_token(LLAMA3_EOS_IDS[0])  # nothing generated yet


def test_cache_hit_is_a_fresh_copy(backend: Any, llama_tokenizer: Any) -> None:  # noqa: F811
    key = ("ebnf", 'root ::= "a" [0-9] "z"')
    first = get_grammar(backend, key)
    first.accept_token(llama_tokenizer.encode("a", add_special_tokens=False)[0])
    second, cache_hit = backend.get_cached_or_future_value(key, False)
    assert cache_hit and second is not first
    assert second.grammar_stats.is_cache_hit
    assert second.matcher.num_accepted_steps == 0 and first.matcher.num_accepted_steps == 1
    # SGLang's metrics read the grammar's EBNF size; the copy keeps the request's other statistics.
    first.grammar_stats.num_timeout = 2
    third = first.copy()
    assert third.grammar_stats.ebnf_size == len(first.compiled.ebnf) > 0
    assert (third.grammar_stats.dispatch_type, third.grammar_stats.num_timeout) == ("ebnf", 2)
    assert not first.grammar_stats.is_cache_hit and third.grammar_stats.tree_traversal_time == []


def test_lark_text_in_the_ebnf_field(backend: Any, llama_tokenizer: Any) -> None:  # noqa: F811
    # An OpenAI-style custom tool CFG: SGLang hands Lark text to the EBNF dispatch.
    lark = 'start: "add " NUMBER " to " NUMBER\n%import common.INT -> NUMBER'
    grammar = get_grammar(backend, ("ebnf", lark))
    mask = walk(grammar, llama_tokenizer.encode("add 12 to 3", add_special_tokens=False), LLAMA_VOCAB)
    assert all(allowed(mask, 0, eos) for eos in LLAMA3_EOS_IDS)
    assert not allowed(mask, 0, llama_tokenizer.encode(" to", add_special_tokens=False)[0])


@pytest.mark.parametrize(
    ("key", "message"),
    [
        (("json", '{"type": "object"'), "JSON"),
        (("json", json.dumps({"type": "strng"})), "SchemaError: keyword 'type'"),
        (("regex", "(ab"), "missing ')'"),
        (("ebnf", "root ::= ("), "line 1"),
        (("full_assistant_ebnf", "root ::= undefined_rule"), "undefined_rule"),
        (("ebnf", 'start: "a" @sub'), "line 1, column 12"),  # Lark text: compile_lark's error
    ],
)
def test_invalid_grammar_returns_sglang_invalid_object(backend: Any, key: tuple[str, str], message: str) -> None:
    from sglang.srt.constrained.base_grammar_backend import InvalidGrammarObject

    grammar = get_grammar(backend, key)
    assert isinstance(grammar, InvalidGrammarObject)
    assert message.lower() in grammar.error_message.lower()


def test_structural_tag(backend: Any, llama_tokenizer: Any) -> None:  # noqa: F811
    from sglang.srt.constrained.base_grammar_backend import InvalidGrammarObject

    from xg2_plugin import GrammarCompiler

    tag = {
        "type": "structural_tag",
        "format": {"type": "tag", "begin": "<f>", "content": {"type": "json_schema", "json_schema": SCHEMA}, "end": "</f>"},
    }
    grammar = get_grammar(backend, ("structural_tag", json.dumps(tag)))
    if not hasattr(GrammarCompiler, "compile_structural_tag"):
        assert isinstance(grammar, InvalidGrammarObject)
        assert "compile_structural_tag" in grammar.error_message
        return
    text = '<f>{"name": "bob", "age": 7}</f>'
    mask = walk(grammar, llama_tokenizer.encode(text, add_special_tokens=False), LLAMA_VOCAB)
    assert allowed(mask, 0, LLAMA3_EOS_IDS[0])

    # SGLang sends a null schema for a tool without parameters: any JSON value.
    tag["format"]["content"]["json_schema"] = None
    grammar = get_grammar(backend, ("structural_tag", json.dumps(tag)))
    mask = walk(grammar, llama_tokenizer.encode('<f>{"x": [1]}</f>', add_special_tokens=False), LLAMA_VOCAB)
    assert allowed(mask, 0, LLAMA3_EOS_IDS[0])


def test_legacy_structural_tag_with_null_schema(backend: Any, llama_tokenizer: Any) -> None:  # noqa: F811
    legacy = {
        "structures": [
            {"begin": "<f>", "schema": SCHEMA, "end": "</f>"},
            {"begin": "<g>", "schema": None, "end": "</g>"},  # SGLang sends null for no parameters
        ],
        "triggers": ["<f>", "<g>"],
    }
    grammar = get_grammar(backend, ("structural_tag", json.dumps(legacy)))
    text = 'Sure. <g>{}</g> and <f>{"name": "ada", "age": 3}</f>'
    mask = walk(grammar, llama_tokenizer.encode(text, add_special_tokens=False), LLAMA_VOCAB)
    assert allowed(mask, 0, LLAMA3_EOS_IDS[0])
    with pytest.raises(ValueError):
        for token in llama_tokenizer.encode('<f>{"name": "eve"', add_special_tokens=False):
            grammar.accept_token(token)


def test_batched_fill_matches_single_fills_and_skips_unlisted_rows(backend: Any, llama_tokenizer: Any) -> None:  # noqa: F811
    from sglang.srt.constrained.base_grammar_backend import GrammarMask, GrammarRow

    grammars = [get_grammar(backend, ("regex", r"[a-c]{3}")) for _ in range(2)]
    grammars.append(get_grammar(backend, ("json", json.dumps(SCHEMA))))
    grammars[1].accept_token(llama_tokenizer.encode("a", add_special_tokens=False)[0])
    rows = [0, 2, 3]
    batched = grammars[0].allocate_vocab_mask(LLAMA_VOCAB, 4, "cpu")
    type(grammars[0]).fill_vocab_mask_batched([GrammarRow(r, g) for r, g in zip(rows, grammars)], batched)
    single = grammars[0].allocate_vocab_mask(LLAMA_VOCAB, 4, "cpu")
    for row, grammar in zip(rows, grammars):
        grammar.fill_vocab_mask(single, row)
    assert torch.equal(batched, single)
    assert bool((batched[1] == -1).all())

    logits = torch.randn(4, LLAMA_VOCAB)
    GrammarMask(grammars[0], grammars[0].move_vocab_mask(batched, "cpu")).apply(logits)
    finite = torch.isfinite(logits)
    assert bool(finite[1].all())
    for row in rows:
        assert torch.nonzero(finite[row]).flatten().tolist() == allowed_ids(batched, row, LLAMA_VOCAB)


def test_spec_decode_tree_traversal_restores_state(backend: Any, llama_tokenizer: Any) -> None:  # noqa: F811
    from sglang.srt.managers.schedule_batch import Req
    from sglang.srt.sampling.sampling_params import SamplingParams
    from sglang.srt.speculative.spec_utils import generate_token_bitmask

    def token(text: str) -> int:
        ids = llama_tokenizer.encode(text, add_special_tokens=False)
        assert len(ids) == 1, (text, ids)
        return ids[0]

    grammar = get_grammar(backend, ("regex", "(cat|dog)s?"))
    # Draft tree: node 0 (last verified token) -> cat -> s ; siblings cat, dog, xyz.
    draft = [0, token("cat"), token("dog"), token("xyz"), token("s")]
    next_token = [1, 4, -1, -1, -1]
    next_sibling = [-1, 2, 3, -1, -1]
    reqs = []
    for rid, req_grammar in (("constrained", grammar), ("free", None)):
        req = Req(rid, "", array("i", [1]), SamplingParams())
        req.grammar = req_grammar
        reqs.append(req)
    as_batch = lambda values: torch.tensor([values, values], dtype=torch.int64)  # noqa: E731
    mask, mask_grammar = generate_token_bitmask(
        reqs, as_batch(next_token), as_batch(next_sibling), as_batch(draft), LLAMA_VOCAB
    )
    assert mask_grammar is grammar and mask.shape[0] == 2 * len(draft)

    expected = grammar.allocate_vocab_mask(LLAMA_VOCAB, 1, "cpu")
    for node, path in ((0, []), (1, ["cat"]), (2, ["dog"]), (4, ["cat", "s"])):
        fresh = grammar.copy()
        for piece in path:
            fresh.accept_token(token(piece))
        fresh.fill_vocab_mask(expected, 0)
        assert torch.equal(mask[node], expected[0]), node
    assert bool((mask[3] == -1).all())  # "xyz" is rejected: its row is never filled
    assert bool((mask[len(draft):] == -1).all())  # the unconstrained request's rows
    assert allowed(mask, 4, LLAMA3_EOS_IDS[0]) and not allowed(mask, 4, token("s"))

    assert grammar.matcher.num_accepted_steps == 0
    after = grammar.allocate_vocab_mask(LLAMA_VOCAB, 1, "cpu")
    grammar.fill_vocab_mask(after, 0)
    assert torch.equal(after[0], mask[0])
    for piece in ("cat", "s"):
        grammar.accept_token(token(piece))
    grammar.accept_token(LLAMA3_EOS_IDS[2])
    assert grammar.is_terminated()


def test_sglang_tree_traversal_equals_native_traversal(backend: Any, llama_tokenizer: Any) -> None:  # noqa: F811
    """After registration SGLang's ``traverse_tree`` is the native walk for xg2 grammars
    (adapters/sglang/speculative.py), with SGLang's rows exactly: every row equals the one
    SGLang's own per-node walk writes, including the rows it leaves alone. The grammar's
    native walk with xgrammar's convention zeroes the skipped rows instead."""
    import random

    from sglang.srt.speculative import spec_utils

    assert getattr(spec_utils.traverse_tree, "xg2_native", False)
    traverse_tree = spec_utils.traverse_tree.__wrapped__  # SGLang's per-node walk

    grammar = get_grammar(backend, ("json", json.dumps(SCHEMA)))
    grammar.accept_token(llama_tokenizer.encode('{"', add_special_tokens=False)[0])
    steps = grammar.matcher.num_accepted_steps
    rng = random.Random(40)
    probe = grammar.allocate_vocab_mask(LLAMA_VOCAB, 1, "cpu")
    sentinel = 0x5A5A5A5A
    filled = 0  # rows SGLang writes, over all trees: the comparison is not vacuous
    for num_nodes in (8, 32, 64):
        parents, tokens = [-1], [0]
        for node in range(1, num_nodes):
            parent = rng.randrange(max(0, node - 3), node)
            path, p = [], parent
            while p > 0:
                path.append(tokens[p])
                p = parents[p]
            fork = grammar.matcher.fork()
            allowed_here = []
            if all(fork.accept_token(t) for t in reversed(path)) and not fork.is_terminated():
                fork.fill_next_token_bitmask(probe, 0)
                allowed_here = allowed_ids(probe, 0, LLAMA_VOCAB)
            use_allowed = allowed_here and rng.random() < 0.85
            tokens.append(rng.choice(allowed_here) if use_allowed else rng.randrange(LLAMA_VOCAB))
            parents.append(parent)
        next_token, next_sibling, last = [-1] * num_nodes, [-1] * num_nodes, {}
        for node in range(1, num_nodes):
            if parents[node] in last:
                next_sibling[last[parents[node]]] = node
            else:
                next_token[parents[node]] = node
            last[parents[node]] = node
        tree = [torch.tensor(a, dtype=torch.int64) for a in (next_token, next_sibling, tokens)]
        by_sglang = torch.full((num_nodes, (LLAMA_VOCAB + 31) // 32), sentinel, dtype=torch.int32)
        native = by_sglang.clone()
        traverse_tree(*tree, grammar, by_sglang, vocab_size=LLAMA_VOCAB)
        fills_before = grammar.mask_fills
        spec_utils.traverse_tree(*tree, grammar, native, vocab_size=LLAMA_VOCAB)
        assert grammar.mask_fills == fills_before  # one native call, no per-node fill_vocab_mask
        assert torch.equal(native, by_sglang)
        native = torch.full_like(by_sglang, sentinel)
        assert grammar.traverse_draft_tree(*tree, native) is True
        for node in range(num_nodes):
            if bool((by_sglang[node] == sentinel).all()):
                assert bool((native[node] == sentinel).all()) or not bool(native[node].any()), node
            else:
                assert torch.equal(native[node], by_sglang[node]), node
                filled += 1
        assert grammar.matcher.num_accepted_steps == steps
    assert filled >= 12, filled


def test_reasoning_wrapper_applies_grammar_after_think(make_backend: Any, qwen3_tokenizer: Any) -> None:
    from sglang.srt.constrained.reasoner_grammar_backend import ReasonerGrammarBackend, ReasonerGrammarObject

    eos = qwen3_tokenizer.convert_tokens_to_ids("<|im_end|>")
    think_end = qwen3_tokenizer.convert_tokens_to_ids("</think>")
    backend = make_backend(qwen3_tokenizer, QWEN3_VOCAB, {eos}, reasoning_parser="qwen3")
    assert isinstance(backend, ReasonerGrammarBackend)
    grammar = get_grammar(backend, ("json", json.dumps(SCHEMA)), reasoning=True)
    assert isinstance(grammar, ReasonerGrammarObject)

    mask = grammar.allocate_vocab_mask(QWEN3_VOCAB, 1, "cpu")
    for piece in qwen3_tokenizer.encode("Let me think.", add_special_tokens=False):
        grammar.fill_vocab_mask(mask, 0)
        assert bool((mask == -1).all())  # free text while thinking
        grammar.accept_token(piece)
    grammar.accept_token(think_end)
    grammar.fill_vocab_mask(mask, 0)
    assert not allowed(mask, 0, qwen3_tokenizer.encode("Let", add_special_tokens=False)[0])
    answer = qwen3_tokenizer.encode('{"name": "bob", "age": 1}', add_special_tokens=False)
    mask = walk(grammar, answer, QWEN3_VOCAB)
    assert allowed(mask, 0, eos)
    grammar.accept_token(eos)
    assert grammar.is_terminated()

    logits = torch.zeros(1, QWEN3_VOCAB)
    grammar.apply_vocab_mask(logits=logits, vocab_mask=mask)
    assert torch.isfinite(logits[0, eos]) and int(torch.isfinite(logits).sum()) < 10


def test_strict_thinking_uses_token_filter(
    make_backend: Any, qwen3_tokenizer: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SGLANG_MAX_THINK_TOKENS", "2")
    eos = qwen3_tokenizer.convert_tokens_to_ids("<|im_end|>")
    think_end = qwen3_tokenizer.convert_tokens_to_ids("</think>")
    backend = make_backend(
        qwen3_tokenizer, QWEN3_VOCAB, {eos}, reasoning_parser="qwen3", enable_strict_thinking=True
    )
    assert backend.enable_strict_thinking
    grammar = get_grammar(backend, ("regex", "[0-9]"), reasoning=True)
    mask = grammar.allocate_vocab_mask(QWEN3_VOCAB, 1, "cpu")
    for piece in qwen3_tokenizer.encode("Hmm ok", add_special_tokens=False)[:2]:
        grammar.accept_token(piece)
    grammar.fill_vocab_mask(mask, 0)
    assert allowed_ids(mask, 0, QWEN3_VOCAB) == [think_end]  # budget spent: only the end of thinking


# Response-template framing: for reasoning formats whose answer is a native message (SGLang
# 0.5.23's Inkling format), SGLang's reasoning wrapper reserves the frame's control tokens and
# asks the backend to compile the answer grammar embedded in a frame structural tag.
INKLING_END_OF_TEXT, INKLING_MESSAGE_MODEL, INKLING_CONTENT_TEXT, INKLING_END_MESSAGE = 199999, 200001, 200004, 200010
GPT_OSS_VOCAB = 201_088
FREE_TEXT_SCHEMA = {
    "type": "object",
    "properties": {"note": {"type": "string", "maxLength": 40}},
    "required": ["note"],
    "additionalProperties": False,
}


@pytest.fixture(scope="module")
def gpt_oss_tokenizer(data_dir: Path) -> Any:
    # The o200k vocabulary: the only tokenizer here whose ids cover Inkling's control tokens.
    from sglang.srt.utils.hf_transformers.tokenizer import get_tokenizer

    return get_tokenizer(str(data_dir / "tokenizers" / "hf" / "gpt-oss"))


def test_inkling_answer_frame_through_sglang_reasoner(make_backend: Any, gpt_oss_tokenizer: Any) -> None:
    from sglang.srt.constrained.base_grammar_backend import InvalidGrammarObject
    from sglang.srt.constrained.reasoner_grammar_backend import ReasonerGrammarBackend

    backend = make_backend(gpt_oss_tokenizer, GPT_OSS_VOCAB, {INKLING_END_OF_TEXT}, reasoning_parser="inkling")
    assert isinstance(backend, ReasonerGrammarBackend)
    key = ("json", json.dumps(FREE_TEXT_SCHEMA))

    # The prompt already opened the answer message: SGLang picks the open-answer variant, and
    # the grammar is answer content, then <|end_message|>, then the end of text.
    prompt = gpt_oss_tokenizer.encode("hi", add_special_tokens=False)
    prompt += [INKLING_END_MESSAGE, INKLING_MESSAGE_MODEL, INKLING_CONTENT_TEXT]
    variant = backend.get_request_grammar_key(key, input_ids=prompt, thinking_budget=None)
    assert variant != key
    grammar = get_grammar(backend, variant, reasoning=True)
    assert not isinstance(grammar, InvalidGrammarObject), getattr(grammar, "error_message", "")
    answer = gpt_oss_tokenizer.encode('{"note": "see <|end_message|> here"}', add_special_tokens=False)
    mask = grammar.allocate_vocab_mask(GPT_OSS_VOCAB, 1, "cpu")
    for token in answer:
        grammar.fill_vocab_mask(mask, 0)
        assert allowed(mask, 0, token), token
        # Inside the answer (a JSON string included) the frame token is never text.
        assert not allowed(mask, 0, INKLING_END_MESSAGE)
        assert not allowed(mask, 0, INKLING_END_OF_TEXT)
        grammar.accept_token(token)
    grammar.fill_vocab_mask(mask, 0)
    assert allowed_ids(mask, 0, GPT_OSS_VOCAB) == [INKLING_END_MESSAGE]
    grammar.accept_token(INKLING_END_MESSAGE)
    grammar.fill_vocab_mask(mask, 0)
    assert allowed_ids(mask, 0, GPT_OSS_VOCAB) == [INKLING_END_OF_TEXT]
    grammar.accept_token(INKLING_END_OF_TEXT)
    assert grammar.is_terminated()

    # Without an open answer message the frame starts with an optional thinking message whose
    # body is `any_tokens` (every token but <|end_message|>), then the answer message.
    from sglang.srt.parser.inkling_tokenizer import CONTENT_THINKING, INKLING_SPECIAL_TOKEN_IDS

    thinking = INKLING_SPECIAL_TOKEN_IDS[CONTENT_THINKING]
    plain = backend.get_request_grammar_key(key, input_ids=prompt[:-3], thinking_budget=None)
    assert plain == key
    framed = get_grammar(backend, plain, reasoning=True)
    assert not isinstance(framed, InvalidGrammarObject), getattr(framed, "error_message", "")
    framed.fill_vocab_mask(mask, 0)
    assert allowed_ids(mask, 0, GPT_OSS_VOCAB) == [INKLING_MESSAGE_MODEL]
    framed.accept_token(INKLING_MESSAGE_MODEL)
    framed.fill_vocab_mask(mask, 0)
    assert allowed_ids(mask, 0, GPT_OSS_VOCAB) == sorted([thinking, INKLING_CONTENT_TEXT])
    framed.accept_token(thinking)
    for token in gpt_oss_tokenizer.encode("so {", add_special_tokens=False) + [INKLING_MESSAGE_MODEL]:
        framed.fill_vocab_mask(mask, 0)
        assert allowed(mask, 0, token) and allowed(mask, 0, INKLING_END_MESSAGE)
        framed.accept_token(token)
    framed.accept_token(INKLING_END_MESSAGE)
    framed.fill_vocab_mask(mask, 0)
    assert allowed_ids(mask, 0, GPT_OSS_VOCAB) == [INKLING_MESSAGE_MODEL]


def test_reserved_framing_tokens_match_only_as_frame_tokens(backend: Any, llama_tokenizer: Any) -> None:  # noqa: F811
    # The hooks SGLang's reasoning wrapper calls, here with an ordinary token as the frame
    # token, which is where reserving makes a difference.
    (marker,) = llama_tokenizer.encode("@@", add_special_tokens=False)
    plain = get_grammar(backend, ("json", json.dumps(FREE_TEXT_SCHEMA)))
    backend.reserve_framing_tokens([marker])

    def frame(content: dict) -> dict:
        elements = [{"type": "token", "token": marker}, content, {"type": "token", "token": marker}]
        return {"type": "structural_tag", "format": {"type": "sequence", "elements": elements}}

    framed = backend.compile_framed_grammar(plain, frame)
    assert framed.grammar_stats.dispatch_type == "structural_tag"
    mask = framed.allocate_vocab_mask(LLAMA_VOCAB, 1, "cpu")
    framed.fill_vocab_mask(mask, 0)
    assert allowed_ids(mask, 0, LLAMA_VOCAB) == [marker]
    framed.accept_token(marker)
    body = llama_tokenizer.encode('{"note": "x', add_special_tokens=False)
    walk(framed, body, LLAMA_VOCAB)
    framed.fill_vocab_mask(mask, 0)
    assert not allowed(mask, 0, marker)  # not text inside the JSON string any more
    plain.fill_vocab_mask(mask, 0)
    for token in body:
        plain.accept_token(token)
    plain.fill_vocab_mask(mask, 0)
    assert allowed(mask, 0, marker)  # ...while the unframed grammar still allows it there
    for token in llama_tokenizer.encode('"}', add_special_tokens=False) + [marker, LLAMA3_EOS_IDS[0]]:
        framed.accept_token(token)
    assert framed.is_terminated()
    # A grammar object that is not the backend's own cannot be embedded.
    from sglang.srt.constrained.base_grammar_backend import InvalidGrammarObject

    assert backend.compile_framed_grammar(InvalidGrammarObject("x"), frame) is None


WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "strict": True,
        "parameters": {
            "type": "object",
            "properties": {"city": {"enum": ["Paris", "Oslo"]}, "days": {"type": "integer", "minimum": 1, "maximum": 7}},
            "required": ["city", "days"],
            "additionalProperties": False,
        },
    },
}


@pytest.mark.parametrize("tool_choice", ["required", {"type": "function", "function": {"name": "get_weather"}}])
def test_tool_choice_constraint_built_by_sglang(backend: Any, llama_tokenizer: Any, tool_choice: Any) -> None:  # noqa: F811
    # The constraint SGLang's OpenAI layer builds for `--tool-call-parser llama3`: the Llama
    # detector has no model-native structural tag, so SGLang sends its legacy form with
    # at_least_one (the output must start with a tool call).
    from sglang.srt.entrypoints.openai.protocol import Tool, ToolChoice
    from sglang.srt.function_call.function_call_parser import FunctionCallParser

    choice = tool_choice if isinstance(tool_choice, str) else ToolChoice.model_validate(tool_choice)
    parser = FunctionCallParser([Tool.model_validate(WEATHER_TOOL)], "llama3")
    kind, constraint = parser.get_structure_constraint(choice)
    assert kind == "structural_tag"
    key_string = constraint if isinstance(constraint, str) else constraint.model_dump_json(by_alias=True)
    assert json.loads(key_string)["at_least_one"] is True
    grammar = get_grammar(backend, ("structural_tag", key_string))

    # This Llama-3.1 tokenizer (converted from the tiktoken release) names id 128010
    # <|reserved_special_token_5|>, so the trigger "<|python_tag|>" is plain text here.
    mask = grammar.allocate_vocab_mask(LLAMA_VOCAB, 1, "cpu")
    grammar.fill_vocab_mask(mask, 0)
    begin = '<|python_tag|>{"name":"get_weather", "arguments":'
    first = allowed_ids(mask, 0, LLAMA_VOCAB)
    assert first and all(begin.startswith(llama_tokenizer.decode([t])) for t in first)  # a call, no free text
    call = '{"name":"get_weather", "arguments":{"city": "Oslo", "days": 3}}'
    walk(grammar, llama_tokenizer.encode("<|python_tag|>" + call, add_special_tokens=False), LLAMA_VOCAB)
    grammar.accept_token(LLAMA3_EOS_IDS[2])
    assert grammar.is_terminated()
    # SGLang's own parser reads the call back.
    result = parser.detector.detect_and_parse("<|python_tag|>" + call, parser.tools)
    assert [(c.name, json.loads(c.parameters)) for c in result.calls] == [("get_weather", {"city": "Oslo", "days": 3})]

    bad = get_grammar(backend, ("structural_tag", key_string))
    with pytest.raises(ValueError):
        for token in llama_tokenizer.encode('<|python_tag|>{"name":"get_weather", "arguments":{"city": "Rome"', add_special_tokens=False):
            bad.accept_token(token)


# ---- the engines' options (issue 40, section 4) ------------------------------------------

XG2_ENV = ("XG2_MAX_WHITESPACE", "XG2_COMPILE_TIMEOUT_S", "XG2_LENIENT", "XG2_STATS_LOG_INTERVAL_S")


def space_allowed_after(backend: Any, tokenizer: Any, key: tuple[str, str], text: str) -> bool:
    grammar = get_grammar(backend, key)
    mask = walk(grammar, tokenizer.encode(text, add_special_tokens=False), LLAMA_VOCAB)
    return allowed(mask, 0, tokenizer.encode(" ", add_special_tokens=False)[0])


def test_whitespace_pattern_flag_is_enforced_exactly(
    make_backend: Any, llama_tokenizer: Any, monkeypatch: pytest.MonkeyPatch  # noqa: F811
) -> None:
    for name in XG2_ENV:
        monkeypatch.delenv(name, raising=False)
    # The pattern takes precedence over --constrained-json-disable-any-whitespace (as in
    # SGLang's llguidance backend) and bounds each gap; it reaches structural-tag JSON too.
    backend = make_backend(llama_tokenizer, LLAMA_VOCAB, set(LLAMA3_EOS_IDS),
                           constrained_json_disable_any_whitespace=True,
                           constrained_json_whitespace_pattern="[ \t\n\r]{0,2}")
    key = ("json", json.dumps(SCHEMA))
    assert space_allowed_after(backend, llama_tokenizer, key, "{ ")
    assert not space_allowed_after(backend, llama_tokenizer, key, "{  ")
    tag = {"type": "structural_tag", "format": {"type": "tag", "begin": "<call>", "end": "</call>",
                                                 "content": {"type": "json_schema", "json_schema": SCHEMA}}}
    tag_key = ("structural_tag", json.dumps(tag))
    assert space_allowed_after(backend, llama_tokenizer, tag_key, "<call>{ ")
    assert not space_allowed_after(backend, llama_tokenizer, tag_key, "<call>{  ")
    # The max-whitespace flag caps a pattern without a bound.
    capped = make_backend(llama_tokenizer, LLAMA_VOCAB, set(LLAMA3_EOS_IDS),
                          constrained_json_whitespace_pattern="[ \t\n\r]*", constrained_json_max_whitespace_cnt=1)
    assert space_allowed_after(capped, llama_tokenizer, key, "{")
    assert not space_allowed_after(capped, llama_tokenizer, key, "{ ")
    compact = make_backend(llama_tokenizer, LLAMA_VOCAB, set(LLAMA3_EOS_IDS), constrained_json_whitespace_pattern="")
    assert not space_allowed_after(compact, llama_tokenizer, key, "{")


@pytest.mark.parametrize("pattern", [r"\s*", "[\n\t ]*", "[ \t\n\r]+"])
def test_whitespace_pattern_the_engine_cannot_enforce_stops_the_start(
    make_backend: Any, llama_tokenizer: Any, pattern: str  # noqa: F811
) -> None:
    with pytest.raises(ValueError, match="--constrained-json-whitespace-pattern"):
        make_backend(llama_tokenizer, LLAMA_VOCAB, set(LLAMA3_EOS_IDS), constrained_json_whitespace_pattern=pattern)


def test_timeout_leniency_and_statistics(
    make_backend: Any, llama_tokenizer: Any, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture  # noqa: F811
) -> None:
    from sglang.srt.constrained.base_grammar_backend import InvalidGrammarObject

    from xg2_plugin.adapters.sglang.backend import XG2Grammar
    from xg2_plugin.stats import grammar_stats

    for name in XG2_ENV:
        monkeypatch.delenv(name, raising=False)
    refused = json.dumps({"type": "object", "properties": {"code": {"type": "string", "pattern": "(?<=x)y"}}})
    exact = make_backend(llama_tokenizer, LLAMA_VOCAB, set(LLAMA3_EOS_IDS))
    assert exact.compiler.limits.timeout_s == 30.0
    assert "look-behind" in get_grammar(exact, ("json", refused)).error_message

    monkeypatch.setenv("XG2_LENIENT", "1")
    lenient = make_backend(llama_tokenizer, LLAMA_VOCAB, set(LLAMA3_EOS_IDS))
    before = grammar_stats()
    with caplog.at_level("WARNING", logger="xg2_plugin.adapters.sglang.backend"), pytest.warns(UserWarning):
        grammars = [lenient.dispatch_json(refused) for _ in range(2)]
    (record,) = [r for r in caplog.records if "leniently" in r.getMessage()]
    assert "look-behind" in record.getMessage()
    assert all(isinstance(g, XG2Grammar) for g in grammars)
    # Statistics: SGLang's per-request metrics, the grammar's own fill counters, the process's.
    assert grammars[0].grammar_stats.ebnf_size == len(grammars[0].compiled.ebnf) > 0
    walk(grammars[0], llama_tokenizer.encode('{"code": "x"', add_special_tokens=False), LLAMA_VOCAB)
    after = grammar_stats()
    assert grammars[0].mask_fills > 0 and grammars[0].mask_seconds > 0
    assert after["mask_fills"] - before["mask_fills"] == grammars[0].mask_fills
    assert after["compile_calls"] - before["compile_calls"] == 2
    # Compiles run: the exact attempt that refused, then the lenient one; the second request hits.
    assert after["cache_hits"] - before["cache_hits"] == 1 and after["cache_misses"] - before["cache_misses"] == 2

    monkeypatch.setenv("XG2_COMPILE_TIMEOUT_S", "1e-9")  # a deadline already past when a compile starts
    hurried = make_backend(llama_tokenizer, LLAMA_VOCAB, set(LLAMA3_EOS_IDS))
    timed_out = get_grammar(hurried, ("json", json.dumps(SCHEMA)))
    assert isinstance(timed_out, InvalidGrammarObject) and "CompilationTimeoutError" in timed_out.error_message
