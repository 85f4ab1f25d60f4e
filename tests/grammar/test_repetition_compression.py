"""Repetition state compression (XGrammar 2, section 3.5; native/grammar/grammar_fsm.h).

A long repetition ``x{lo,hi}`` is lowered as a counted loop (the count rides in the Earley
item) plus an explicit tail. These tests check that the language stays exact at and around
the bounds, that cached masks equal the reference mask with compression on and off, that
rollback and fork across the folded region are exact, that large JSON Schema bounds compile
to a small FSM and match instances token by token, and that compression really bounds the
FSM size."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest

import xg2_plugin as xg
from xg2_plugin import _native
from xg2_test_support import encode_continuation, hf_tokenizer_info

# A JSON-string character: multi-byte UTF-8 and escapes are alternatives of different lengths.
JSON_CHAR = r'''char ::= [^"\\\x00-\x1f] | "\\" (["\\/bfnrt] | "u" [0-9a-fA-F]{4})'''
PIECES = ["a", "é", "漢", "😀", r"\n", r"\"", r"\u00e9", " ", "Z"]


def accepts(ebnf: str, text: str, threshold: int = 256, max_token_bytes: int = 128) -> bool:
    return _native.ebnf_accepts(ebnf, text.encode("utf-8"), "root", threshold, max_token_bytes)


def json_chars(count: int, rng: random.Random) -> str:
    """`count` JSON-string characters (each piece is one character), as escaped source."""
    return "".join(rng.choice(PIECES) for _ in range(count))


# ---- language exactness ----------------------------------------------------------------------

@pytest.mark.parametrize("lo,hi", [(0, 5000), (5000, 65536), (0, 65536), (4000, 4000)])
def test_byte_body_bounds_are_exact(lo: int, hi: int) -> None:
    ebnf = f'root ::= "\\"" char{{{lo},{hi}}} "\\""\n{JSON_CHAR}'
    rng = random.Random(lo * 7 + hi)
    for count in sorted({max(lo - 1, 0), lo, lo + 1, hi - 1, hi, hi + 1}):
        text = '"' + json_chars(count, rng) + '"'
        assert accepts(ebnf, text) == (lo <= count <= hi), count
    # A broken escape deep inside the folded region is still rejected.
    assert not accepts(ebnf, '"' + "a" * (lo + 10) + "\\x" + '"')


@pytest.mark.parametrize("lo,hi", [(0, 10000), (5000, 10000)])
def test_rule_body_bounds_are_exact(lo: int, hi: int) -> None:
    # `item` is recursive, so it stays a rule call: the repeated body is a call.
    ebnf = f'root ::= "[" item ("," item){{{lo},{hi - 1}}} "]"\nitem ::= "{{" "\\"a\\":" ([0-9]+ | item) "}}"'
    for count in sorted({max(lo - 1, 1), lo, lo + 1, hi - 1, hi, hi + 1} - {0}):
        text = "[" + ",".join('{"a":%d}' % (i % 97) if i % 5 else '{"a":{"a":1}}' for i in range(count)) + "]"
        assert accepts(ebnf, text) == (lo + 1 <= count <= hi), count


def test_unbounded_repetition_with_large_minimum() -> None:
    ebnf = 'root ::= [a-z]{3000,} "."'
    for count, expected in [(2999, False), (3000, True), (3001, True), (9000, True)]:
        assert accepts(ebnf, "q" * count + ".") == expected


def test_nested_repetitions() -> None:
    # Outer body holds a compressible repetition: it becomes a rule of its own.
    ebnf = 'root ::= ("(" [a-z]{0,3000} ")"){0,400}'
    assert accepts(ebnf, "(ab)" * 400)
    assert not accepts(ebnf, "(ab)" * 401)
    assert accepts(ebnf, "()" * 10 + "(" + "k" * 3000 + ")")
    assert not accepts(ebnf, "()" * 10 + "(" + "k" * 3001 + ")")
    assert accepts(ebnf, "")


def test_adjacent_repetitions_share_no_counter() -> None:
    # One item carries one counter: the second loop is lifted into a rule of its own.
    ebnf = 'root ::= [a-z]{0,600} [0-9a-z]{0,600} "!"'
    assert accepts(ebnf, "a" * 1200 + "!")
    assert not accepts(ebnf, "a" * 1201 + "!")
    assert accepts(ebnf, "a" * 600 + "1" * 600 + "!")
    assert not accepts(ebnf, "a" * 600 + "1" * 601 + "!")
    assert accepts(ebnf, "a" * 601 + "1" + "!")
    assert not accepts(ebnf, "a" * 601 + "1" * 600 + "!")


def test_nullable_bodies() -> None:
    # A nullable body is not compressed (empty iterations would run the counter); it is
    # expanded, and the language is still exact.
    assert accepts('root ::= ("a"?){0,1500} "."', "a" * 1500 + ".")
    assert not accepts('root ::= ("a"?){0,1500} "."', "a" * 1501 + ".")
    # Nullable outer body around a compressible inner repetition.
    ebnf = 'root ::= ("(" [a-c]{0,3000} ")" | ""){0,300} "."'
    assert accepts(ebnf, ".")
    assert accepts(ebnf, "(ab)" * 300 + ".")
    assert not accepts(ebnf, "(ab)" * 301 + ".")
    assert accepts(ebnf, "()" * 299 + "(" + "c" * 3000 + ").")
    assert not accepts(ebnf, "(" + "c" * 3001 + ").")
    ebnf = 'root ::= ("x" [a-c]{0,3000} | ""){200,300} "."'
    assert accepts(ebnf, ".")
    assert accepts(ebnf, "x" * 300 + ".")
    assert not accepts(ebnf, "x" * 301 + ".")
    assert accepts(ebnf, "x" + "a" * 3000 + ".")
    assert not accepts(ebnf, "x" + "a" * 3001 + ".")


def test_lookahead_with_long_repetitions() -> None:
    # The rule's body is compressed (its items carry guards and counts); the assertion itself
    # is a byte-only DFA for the guards and stays expanded.
    ebnf = 'root ::= a [a-z0-9]*\na ::= [a-z]{0,3000} "." (= [a-z]{0,300} "0")'
    assert accepts(ebnf, "q" * 3000 + "." + "b" * 300 + "0")
    assert not accepts(ebnf, "q" * 3001 + "." + "0")
    assert not accepts(ebnf, "q" * 10 + "." + "b" * 301 + "0")
    assert not accepts(ebnf, "q" * 10 + "." + "b" * 20)
    assert accepts(ebnf, "." + "0" + "zz")


def _random_expr(rng: random.Random, depth: int) -> str:
    atoms = ['"a"', '"ab"', '("a" | "ab")', "[a-c]", '"a"? "b"', "item", '"é"', '("b" | "")']
    if depth == 0 or rng.random() < 0.3:
        return rng.choice(atoms)
    kind = rng.random()
    if kind < 0.5:
        lo = rng.randint(0, 6)
        hi = rng.choice([-1, lo + rng.randint(0, 9)])
        bound = f"{{{lo},}}" if hi < 0 else f"{{{lo},{hi}}}"
        return f"({_random_expr(rng, depth - 1)}){bound}"
    if kind < 0.8:
        return " ".join(_random_expr(rng, depth - 1) for _ in range(rng.randint(2, 3)))
    return "(" + " | ".join(_random_expr(rng, depth - 1) for _ in range(2)) + ")"


def test_random_grammars_compressed_equals_expanded() -> None:
    """With a tiny threshold nearly every repetition is compressed (and many conflict and are
    lifted into rules); the language must equal the plain expansion's on random strings."""
    rng = random.Random(20240611)
    compared = 0
    for _ in range(120):
        ebnf = f'root ::= {_random_expr(rng, 3)}\nitem ::= "c" | "c" item'
        for _ in range(25):
            text = "".join(rng.choice(["a", "b", "c", "é"]) for _ in range(rng.randint(0, 24)))
            expanded = accepts(ebnf, text, threshold=0)
            for threshold, token_bytes in [(1, 1), (2, 3)]:
                assert accepts(ebnf, text, threshold, token_bytes) == expanded, (ebnf, text, threshold)
            compared += 1
    assert compared == 3000


# ---- FSM size --------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def llama() -> xg.TokenizerInfo:
    return hf_tokenizer_info("llama3.1")


def test_fsm_size_does_not_grow_with_the_bound(llama: xg.TokenizerInfo) -> None:
    compiler = xg.GrammarCompiler(llama, precompute_nodes=0)
    sizes = [compiler.compile_json_schema({"type": "string", "maxLength": n})._handle.num_nodes
             for n in (4096, 65536, 100000)]
    assert sizes[0] == sizes[1] == sizes[2]
    items = [compiler.compile_json_schema({"type": "array", "items": {"type": "integer"}, "maxItems": n})._handle.num_nodes
             for n in (1000, 10000)]
    assert items[0] == items[1]
    off = xg.GrammarCompiler(llama, precompute_nodes=0, repetition_compression_threshold=0)
    assert off.compile_json_schema({"type": "string", "maxLength": 65536})._handle.num_nodes > 10 * sizes[1]
    dump = compiler.compile_json_schema({"type": "string", "maxLength": 65536})._handle.fsm_dump()
    assert "gate of loop" in dump


# ---- masks equal the reference ---------------------------------------------------------------

def _check_masks(matcher: xg.GrammarMatcher, info: xg.TokenizerInfo) -> None:
    cached = np.zeros(xg.get_bitmask_shape(1, info.vocab_size), dtype=np.int32)
    reference = np.zeros_like(cached)
    assert matcher.fill_next_token_bitmask(cached) == matcher._fill_next_token_bitmask_reference(reference)
    if not np.array_equal(cached, reference):
        diff = np.flatnonzero(np.unpackbits((cached ^ reference).view(np.uint8), bitorder="little"))
        raise AssertionError(f"masks differ on {[info.decoded_vocab[t] for t in diff[:10]]}")


def _string_instance(count: int, seed: int) -> str:
    return json.dumps(json.loads('"' + json_chars(count, random.Random(seed)) + '"'), ensure_ascii=False)


@pytest.mark.parametrize("threshold", [256, 0])
def test_string_masks_match_reference_along_a_long_string(llama: xg.TokenizerInfo, threshold: int) -> None:
    compiler = xg.GrammarCompiler(llama, repetition_compression_threshold=threshold, precompute_nodes=0)
    grammar = compiler.compile_json_schema({"type": "string", "maxLength": 600})
    text = _string_instance(600, 5)
    ids = encode_continuation("llama3.1", text)
    matcher = xg.GrammarMatcher(grammar)
    checked = 0
    for i, token in enumerate(ids):
        # Every step near both ends (the explicit tail), every 13th in the folded middle.
        if i < 12 or i > len(ids) - 40 or i % 13 == 0:
            _check_masks(matcher, llama)
            checked += 1
        assert matcher.accept_token(token), i
    _check_masks(matcher, llama)
    assert matcher.is_completed()
    assert checked > 50


def test_masks_at_the_bound_forbid_one_more_character(llama: xg.TokenizerInfo) -> None:
    compiler = xg.GrammarCompiler(llama, precompute_nodes=0)
    grammar = compiler.compile_json_schema({"type": "string", "minLength": 4000, "maxLength": 5000})
    for count in (3999, 4000, 5000):
        matcher = xg.GrammarMatcher(grammar)
        assert matcher.accept_string('"' + "x" * (count - 1))
        _check_masks(matcher, llama)
        assert matcher.accept_string("x")
        _check_masks(matcher, llama)
        closing = llama.decoded_vocab.index(b'"')
        assert matcher.accept_token(closing) == (count >= 4000)
        if count == 5000:
            matcher.rollback(1)
            assert not matcher.accept_string("x")


def test_rule_body_masks_match_reference(llama: xg.TokenizerInfo) -> None:
    schema = {"type": "array", "maxItems": 400,
              "items": {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "array", "items": {"type": "string"}}},
                        "required": ["a"]}}
    for threshold in (256, 4):
        compiler = xg.GrammarCompiler(llama, repetition_compression_threshold=threshold, precompute_nodes=0)
        grammar = compiler.compile_json_schema(schema)
        value = [{"a": i, "b": ["x"] if i % 3 == 0 else []} for i in range(400)]
        ids = encode_continuation("llama3.1", json.dumps(value))
        matcher = xg.GrammarMatcher(grammar)
        for i, token in enumerate(ids):
            if i % 11 == 0 or i > len(ids) - 30:
                _check_masks(matcher, llama)
            assert matcher.accept_token(token), i
        assert matcher.is_completed()
        # One more item is refused.
        matcher.rollback(1)
        assert not matcher.accept_string(', {"a": 1}]')


# ---- rollback and fork -----------------------------------------------------------------------

def test_rollback_and_fork_across_the_folded_region(llama: xg.TokenizerInfo) -> None:
    compiler = xg.GrammarCompiler(llama, precompute_nodes=0, repetition_compression_threshold=16)
    grammar = compiler.compile_json_schema({"type": "string", "maxLength": 3000})
    text = _string_instance(3000, 9)
    ids = encode_continuation("llama3.1", text[:-1])  # the opening quote and 3000 characters
    matcher = xg.GrammarMatcher(grammar)
    for token in ids:
        assert matcher.accept_token(token)
    rng = random.Random(1)
    bitmask = np.zeros(xg.get_bitmask_shape(1, llama.vocab_size), dtype=np.int32)
    fresh_mask = np.zeros_like(bitmask)
    for _ in range(6):
        back = rng.randint(1, len(ids) - 1)
        fork = matcher.fork()
        matcher.rollback(back)
        position = len(ids) - back
        fresh = xg.GrammarMatcher(grammar)
        for token in ids[:position]:
            assert fresh.accept_token(token)
        matcher.fill_next_token_bitmask(bitmask)
        fresh.fill_next_token_bitmask(fresh_mask)
        assert np.array_equal(bitmask, fresh_mask)
        _check_masks(matcher, llama)
        # The fork kept the later state: at the bound, it refuses one more character.
        assert not fork.accept_string("a")
        assert fork.accept_string('"') and fork.is_completed()
        for token in ids[position:]:
            assert matcher.accept_token(token)
    # At the bound, one more character is refused, before and after a rollback.
    assert not matcher.accept_string("a")
    matcher.rollback(3)
    fresh = xg.GrammarMatcher(grammar)
    for token in ids[:-3]:
        assert fresh.accept_token(token)
    took = matcher.accept_string("a")
    assert took == fresh.accept_string("a")
    if took:
        matcher.rollback(1)
    for token in ids[-3:]:
        assert matcher.accept_token(token)
    assert not matcher.accept_string("a")
    assert matcher.accept_string('"') and matcher.is_completed()


# ---- JSON Schema with large bounds, token by token ---------------------------------------------

def test_json_schema_max_length_65536_token_by_token(llama: xg.TokenizerInfo) -> None:
    compiler = xg.GrammarCompiler(llama)
    grammar = compiler.compile_json_schema({"type": "object", "properties": {"s": {"type": "string", "maxLength": 65536}},
                                            "required": ["s"]})
    assert grammar._handle.num_nodes < 20000
    body = _string_instance(65536, 3)
    text = '{"s": ' + body + "}"
    ids = encode_continuation("llama3.1", text)
    matcher = xg.GrammarMatcher(grammar)
    bitmask = np.zeros(xg.get_bitmask_shape(1, llama.vocab_size), dtype=np.int32)
    bits = bitmask.view(np.uint32)
    for i, token in enumerate(ids):
        matcher.fill_next_token_bitmask(bitmask)
        assert bits[0, token >> 5] >> (token & 31) & 1, i
        if i % 4000 == 0 or i > len(ids) - 8:
            _check_masks(matcher, llama)
        assert matcher.accept_token(token), i
    assert matcher.is_completed()
    # 65537 characters are refused.
    longer = xg.GrammarMatcher(grammar)
    assert longer.accept_string('{"s": ' + body[:-1])
    assert not longer.accept_string("a")


def test_json_schema_max_items_10000_token_by_token(llama: xg.TokenizerInfo) -> None:
    compiler = xg.GrammarCompiler(llama)
    schema = {"type": "array", "maxItems": 10000,
              "items": {"type": "object", "properties": {"id": {"type": "integer"}, "tag": {"type": "string", "maxLength": 8}},
                        "required": ["id", "tag"]}}
    grammar = compiler.compile_json_schema(schema)
    value = [{"id": i, "tag": "t%d" % (i % 10)} for i in range(10000)]
    text = json.dumps(value)
    ids = encode_continuation("llama3.1", text)
    matcher = xg.GrammarMatcher(grammar)
    bitmask = np.zeros(xg.get_bitmask_shape(1, llama.vocab_size), dtype=np.int32)
    bits = bitmask.view(np.uint32)
    for i, token in enumerate(ids):
        if i % 3 == 0 or i > len(ids) - 40:
            matcher.fill_next_token_bitmask(bitmask)
            assert bits[0, token >> 5] >> (token & 31) & 1, i
        if i % 5000 == 0 or i > len(ids) - 20:
            _check_masks(matcher, llama)
        assert matcher.accept_token(token), i
    assert matcher.is_completed()
    matcher.rollback(1)
    assert not matcher.accept_string(', {"id": 1, "tag": "x"}')
    assert matcher.accept_string("]")
