"""The cached mask equals the reference mask (uncached vocabulary walk) at every step of many
documents, with every cache mechanism on and with each one off."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest

import xg2_plugin as xg
from xg2_corpus import random_walk, stratified_sample
from xg2_test_support import (
    compare_masks_along,
    data_dir,
    dumps,
    encode_continuation,
    hf_tokenizer_info,
    ordered_like_schema,
    require_data,
)

# (compiler options, schemas per category, tokens compared per document)
CONFIGS = {
    "all": ({}, 2, 60),
    "no_cross_grammar": ({"cross_grammar_cache": False}, 1, 40),
}


@pytest.mark.parametrize("config", sorted(CONFIGS))
def test_corpus_sample_masks_match_reference(config: str) -> None:
    pytest.importorskip("jsonschema")
    corpus = data_dir() / "jsonschemabench"
    if not corpus.is_dir():
        pytest.skip("JSONSchemaBench not available")
    info = hf_tokenizer_info("llama3.1")
    options, per_category, max_tokens = CONFIGS[config]
    compiler = xg.GrammarCompiler(info, **options)
    rng = random.Random(7)
    checked = 0
    for path in stratified_sample(corpus, per_category, seed=11):
        data = json.loads(path.read_text())
        try:
            grammar = compiler.compile_json_schema(data["schema"], strict_mode=False)
        except (xg.SchemaError, xg.ResourceLimitError):
            continue
        valid = [t["data"] for t in data.get("tests", []) if t.get("valid")]
        for value in valid[:1]:
            text = dumps(ordered_like_schema(value, data["schema"]))
            checked += compare_masks_along(grammar, encode_continuation("llama3.1", text)[:max_tokens])
        # A random walk visits states the instances do not.
        bitmask = np.zeros(xg.get_bitmask_shape(1, info.vocab_size), dtype=np.int32)
        walk = random_walk(grammar, rng, bitmask, 40)
        if walk:
            checked += compare_masks_along(grammar, encode_continuation("llama3.1", walk.decode("utf-8"))[:max_tokens])
    assert checked > 50


GRAMMARS = ["json.gbnf", "arithmetic.gbnf", "c.gbnf", "chess.gbnf", "list.gbnf"]


@pytest.mark.parametrize("name", GRAMMARS)
def test_ebnf_corpus_random_walks_match_reference(name: str) -> None:
    info = hf_tokenizer_info("llama3.1")
    grammar = xg.GrammarCompiler(info).compile_grammar(require_data(f"grammars/{name}").read_text())
    rng = random.Random(3)
    bitmask = np.zeros(xg.get_bitmask_shape(1, info.vocab_size), dtype=np.int32)
    stops = set(info.stop_token_ids)  # the property builds a new list per read
    for _ in range(3):
        matcher = xg.GrammarMatcher(grammar)
        ids = []
        for _ in range(30):
            matcher.fill_next_token_bitmask(bitmask)
            allowed = [t for t in np.flatnonzero(np.unpackbits(bitmask[0].view(np.uint8), bitorder="little")[: info.vocab_size])
                       if t not in stops]
            if not allowed:
                break
            ids.append(int(rng.choice(allowed)))
            matcher.accept_token(ids[-1])
        compare_masks_along(grammar, ids)


def test_lookahead_grammar_masks_match_reference() -> None:
    info = hf_tokenizer_info("llama3.1")
    grammar = xg.GrammarCompiler(info).compile_grammar(
        'root ::= item ("," item)* ";"\nitem ::= [a-z]+ (= [,;])'
    )
    compare_masks_along(grammar, encode_continuation("llama3.1", "abc,de,fgh;"))


# One rule FSM (`item`, recursive so it is never inlined) under two lookaheads: what may follow
# it is ")" in one grammar and "]" in the other.
SHARED_RULE = 'item ::= [a-z]+ "-" item | [a-z]+ | [0-9]+ "." item'
LOOKAHEAD_GRAMMARS = {
    "paren": 'root ::= "(" item ")" | "(" item "," item ")"\n' + SHARED_RULE,
    "bracket": 'root ::= "[" item "]" ";"?\n' + SHARED_RULE,
}
LOOKAHEAD_TEXTS = {
    "paren": ["(ab-cd-ef)", "(x1.y,zz)", "(hello-world-again)"],
    "bracket": ["[ab-cd]", "[12.ab-c];", "[hello-world]"],
}


@pytest.mark.parametrize("order", [("paren", "bracket"), ("bracket", "paren")])
def test_partial_hits_match_reference(order: tuple[str, str]) -> None:
    """The second grammar finds the first one's FSM-only entries (partial hits), re-checks only
    their uncertain tokens against its own lookahead, and its masks still equal the reference."""
    info = hf_tokenizer_info("llama3.1")
    compiler = xg.GrammarCompiler(info, precompute_nodes=0, cache_enabled=False)
    first, second = order
    stats_between = None
    for name in order:
        grammar = compiler.compile_grammar(LOOKAHEAD_GRAMMARS[name])
        for text in LOOKAHEAD_TEXTS[name]:
            compare_masks_along(grammar, encode_continuation("llama3.1", text))
        if name == first:
            stats_between = compiler.mask_cache_stats
    stats = compiler.mask_cache_stats
    assert stats_between is not None and stats_between["partial_hits"] == 0
    assert stats["partial_hits"] > 0, stats
    assert stats["hits"] == stats["perfect_hits"] + stats["partial_hits"]

    # A third grammar equal to the second: every lookup of the nodes filled above is a
    # perfect hit now, and the masks are unchanged.
    before = compiler.mask_cache_stats
    again = compiler.compile_grammar(LOOKAHEAD_GRAMMARS[second])
    for text in LOOKAHEAD_TEXTS[second]:
        compare_masks_along(again, encode_continuation("llama3.1", text))
    after = compiler.mask_cache_stats
    assert after["perfect_hits"] > before["perfect_hits"]
    assert after["misses"] == before["misses"]


def test_pool_is_byte_limited_and_observable() -> None:
    info = hf_tokenizer_info("llama3.1")
    limit = 200_000
    compiler = xg.GrammarCompiler(info, mask_cache_limit_bytes=limit, precompute_nodes=0, cache_enabled=False)
    for name in LOOKAHEAD_GRAMMARS:
        grammar = compiler.compile_grammar(LOOKAHEAD_GRAMMARS[name])
        for text in LOOKAHEAD_TEXTS[name]:
            compare_masks_along(grammar, encode_continuation("llama3.1", text))
    stats = compiler.mask_cache_stats
    assert 0 < stats["bytes"] <= limit
    assert stats["entries"] > 0 and stats["misses"] > 0
    compiler.clear_cache()
    assert compiler.mask_cache_stats["bytes"] == 0 and compiler.mask_cache_stats["entries"] == 0


# The classification walk on every tokenizer (byte-level BPE, tiktoken-style, phi-3's
# sentencepiece byte fallback), with each mechanism on and off.
MECHANISMS = {
    "all": {},
    "no_cross_grammar": {"cross_grammar_cache": False},
    "pure_jit": {"precompute_nodes": 0},
    "ahead_of_time": {"precompute_nodes": -1, "cross_grammar_cache": False},
}
TOKENIZER_GRAMMARS = ["json.gbnf", "arithmetic.gbnf"]


# Every mechanism on llama3.1 and phi-3 (byte fallback); the default and ahead-of-time
# classification of every node on the others.
TOKENIZER_CASES = [(t, m) for t in ["llama3.1", "phi-3"] for m in sorted(MECHANISMS)] + [
    (t, m) for t in ["qwen2.5", "qwen3", "gpt-oss", "gpt2"] for m in ["all", "ahead_of_time"]
]


@pytest.mark.parametrize(("tokenizer", "mechanism"), TOKENIZER_CASES)
def test_every_tokenizer_masks_match_reference(tokenizer: str, mechanism: str) -> None:
    pytest.importorskip("jsonschema")
    corpus = data_dir() / "jsonschemabench"
    if not corpus.is_dir():
        pytest.skip("JSONSchemaBench not available")
    info = hf_tokenizer_info(tokenizer)
    compiler = xg.GrammarCompiler(info, **MECHANISMS[mechanism])
    rng = random.Random(5)
    bitmask = np.zeros(xg.get_bitmask_shape(1, info.vocab_size), dtype=np.int32)
    checked = 0
    grammars = []
    for path in stratified_sample(corpus, 1, seed=23)[:4]:
        data = json.loads(path.read_text())
        try:
            grammars.append(compiler.compile_json_schema(data["schema"], strict_mode=False))
        except (xg.SchemaError, xg.ResourceLimitError):
            continue
        valid = [t["data"] for t in data.get("tests", []) if t.get("valid")]
        if valid:
            text = dumps(ordered_like_schema(valid[0], data["schema"]))
            checked += compare_masks_along(grammars[-1], encode_continuation(tokenizer, text)[:25])
    for name in TOKENIZER_GRAMMARS:
        grammars.append(compiler.compile_grammar(require_data(f"grammars/{name}").read_text()))
    for grammar in grammars:
        checked += compare_masks_along(grammar, sampled_ids(grammar, rng, bitmask, 20))
    assert checked > 20


def sampled_ids(grammar: xg.CompiledGrammar, rng: random.Random, bitmask: np.ndarray, steps: int) -> list[int]:
    """Token ids drawn uniformly from the mask (without stop tokens) for up to `steps` steps."""
    info = grammar.tokenizer_info
    matcher = xg.GrammarMatcher(grammar)
    stops = set(info.stop_token_ids)  # the property builds a new list per read
    ids: list[int] = []
    for _ in range(steps):
        matcher.fill_next_token_bitmask(bitmask)
        allowed = np.flatnonzero(np.unpackbits(bitmask[0].view(np.uint8), bitorder="little")[: info.vocab_size])
        allowed = [int(t) for t in allowed if t not in stops]
        if not allowed:
            break
        ids.append(rng.choice(allowed))
        assert matcher.accept_token(ids[-1])
    return ids


# Bounded repetitions are chains of DFA copies rather than self-loops; the classification
# accepts whole token subtrees along such chains (matcher/token_mask_cache.cc,
# ChainConsumes). Texts end at, near and inside the bound, with escapes and multi-byte
# characters, so chains are entered at every copy and left by each kind of byte.
BOUNDED_CASES = [
    ({"type": "string", "maxLength": 16}, ["abcdefghijklmnop", "short", "é€😀 mixed", "a\\\"b\\u00e9c", ""]),
    ({"type": "string", "minLength": 3, "maxLength": 40}, ["The quick brown fox jumps over the dog", "xyz"]),
    (
        {"type": "object", "properties": {"name": {"type": "string", "maxLength": 24},
                                          "tag": {"type": "string", "maxLength": 4}},
         "required": ["name", "tag"], "additionalProperties": False},
        ['{"name": "Grace Hopper, admiral", "tag": "ab"}', '{"name": "", "tag": "wxyz"}'],
    ),
]


@pytest.mark.parametrize("tokenizer", ["llama3.1", "phi-3"])
@pytest.mark.parametrize("mechanism", ["all", "ahead_of_time"])
def test_bounded_string_masks_match_reference(tokenizer: str, mechanism: str) -> None:
    info = hf_tokenizer_info(tokenizer)
    compiler = xg.GrammarCompiler(info, **MECHANISMS[mechanism])
    for schema, texts in BOUNDED_CASES:
        grammar = compiler.compile_json_schema(schema)
        for text in texts:
            document = text if text.startswith("{") else json.dumps(text, ensure_ascii=False)
            assert compare_masks_along(grammar, encode_continuation(tokenizer, document)) > 1
    ebnf = compiler.compile_grammar('root ::= [a-z ]{0,20} "." [a-z]{2,6} ";"')
    for text in ["hello world is here.abc;", ".ab;", "abcdefghij klmnopqrs.abcdef;"]:
        compare_masks_along(ebnf, encode_continuation(tokenizer, text))


# UTF-8 regions (matcher/token_mask_cache.cc, Utf8RegionConsumes and the region-root token
# sets of VocabularyIndex::Utf8RegionTokens): string bodies whose loop consumes every
# multi-byte character accept whole trie subtrees of non-ASCII tokens, and a body's loop
# node starts from the tokenizer's shared set of tokens it consumes wholesale. Texts mix
# multi-byte characters with quotes, backslash escapes and control characters; random walks
# drawn uniformly from the mask stop inside characters (partial UTF-8 tokens) and leave the
# body mid-token. Classes that exclude some code points (CJK, the Latin-1 block) are not
# regions and must fall back to the plain walk.
UTF8_SCHEMAS = [
    ({"type": "string"}, ["日本語のテキスト", "emoji 😀🎉 and \"quotes\" and \\ back\\slash", "tab\there\nnewline"]),
    (
        {"type": "object", "properties": {"名前": {"type": "string"}, "note": {"type": "string"}},
         "required": ["名前"], "additionalProperties": True},
        ['{"名前": "José Ñúñez — 東京", "note": "é€😀", "extra": "Ωmega"}', '{"名前": "", "ключ": "значение"}'],
    ),
    ({"type": "array", "items": {"type": "string", "maxLength": 300}}, ['["ä", "ß\\u00e9", "中文字符", "\\"x\\""]']),
]
UTF8_GRAMMARS = [
    'root ::= "\\"" ([^"\\\\\\x00-\\x1F] | "\\\\" ["\\\\nt])* "\\"" "," [ ]* "\\"end\\""',
    'root ::= "<" [^<>\\u4e00-\\u9fff]* ">"',
    'root ::= "[" [a-z\\u0080-\\u00ff]* "]"',
    'root ::= "(" ([^()] | [\\U0001F600-\\U0001F64F])* ")" ")"?',
]


@pytest.mark.parametrize("tokenizer", ["llama3.1", "phi-3", "qwen3", "gpt-oss"])
@pytest.mark.parametrize("mechanism", ["all", "pure_jit", "ahead_of_time"])
def test_utf8_region_masks_match_reference(tokenizer: str, mechanism: str) -> None:
    info = hf_tokenizer_info(tokenizer)
    compiler = xg.GrammarCompiler(info, **MECHANISMS[mechanism])
    rng = random.Random(11)
    bitmask = np.zeros(xg.get_bitmask_shape(1, info.vocab_size), dtype=np.int32)
    grammars = []
    for schema, texts in UTF8_SCHEMAS:
        grammar = compiler.compile_json_schema(schema, strict_mode=False)
        grammars.append(grammar)
        for text in texts:
            document = text if text[:1] in "{[" else json.dumps(text, ensure_ascii=False)
            assert compare_masks_along(grammar, encode_continuation(tokenizer, document)) > 1
    for ebnf in UTF8_GRAMMARS:
        grammars.append(compiler.compile_grammar(ebnf))
    for grammar in grammars:
        for _ in range(3):
            compare_masks_along(grammar, sampled_ids(grammar, rng, bitmask, 12))


# A string body whose DFA remembers, character by character, which of many declared words it
# may still be spelling (a digit may follow a whole word only), the shape of a property-name
# position with declared and undeclared keys. Its UTF-8 region (every non-ASCII character keeps
# the body going) has more nodes than the region closure admits, so classification walks it
# without the region shortcut at the root but with it at nodes of smaller regions met on the
# way; the masks must stay exact inside and outside the words, with multi-byte characters and
# partial characters in the tokens.
REGION_WORDS = [f"{first}{middle}word{last}" for first in "abcdefgh" for middle in "xyz" for last in "pq"]
REGION_GRAMMAR = (
    'root ::= "{\\"" body "\\":" [0-9]+ "}"\n'
    "body ::= (" + " | ".join(f'"{w}"' for w in REGION_WORDS) + ') [0-9] | [^"\\\\0-9\\x00-\\x1f]*'
)
REGION_TEXTS = ['{"axwordp7":1}', '{"bywordq":22}', '{"czwo\u00efrd\u65e5\u672c":3}', '{"h\U0001f600xwordp":4}',
                '{"gzwordqgzwordq":5}']


@pytest.mark.parametrize("mechanism", sorted(MECHANISMS))
def test_large_utf8_region_masks_match_reference(mechanism: str) -> None:
    info = hf_tokenizer_info("llama3.1")
    grammar = xg.GrammarCompiler(info, **MECHANISMS[mechanism]).compile_grammar(REGION_GRAMMAR)
    for text in REGION_TEXTS:
        assert compare_masks_along(grammar, encode_continuation("llama3.1", text)) > 3


# Short-token reuse (matcher/token_mask_cache.h, kShortTokenBytes): the copies of a bounded
# repetition share one classification for their tokens of at most 16 bytes (the same DFA
# within 16 bytes), and only the longer tokens are walked per copy. The strings here are
# long enough that most copies are reached with more than 16 characters to go, and the
# texts hold long tokens (runs of dashes, spaces, '=' and long words) inside the string, at
# its bound and across its closing quote; exact-length strings leave only at the bound, and
# random walks drawn from the mask pick long tokens at every copy.
SHORT_TOKEN_CASES = [
    ({"type": "string", "maxLength": 128},
     ["-" * 48 + " spaces:" + " " * 24 + "end", "=" * 64 + "x" * 60 + "ab", "internationalization " * 5]),
    ({"type": "string", "minLength": 50, "maxLength": 50}, ["a1b2c3d4e5f6g7h8i9j0" * 2 + "-" * 10, "-" * 50]),
    ({"type": "object", "properties": {"title": {"type": "string", "minLength": 20, "maxLength": 90},
                                       "tag": {"type": "string", "maxLength": 40}},
      "required": ["title", "tag"], "additionalProperties": False},
     ['{"title": "' + "-" * 32 + ' a title of some length", "tag": "' + "=" * 24 + '"}',
      '{"title": "Responsibilities and internationalization", "tag": ""}']),
]


@pytest.mark.parametrize("tokenizer", ["llama3.1", "qwen3"])
def test_short_token_reuse_masks_match_reference(tokenizer: str) -> None:
    info = hf_tokenizer_info(tokenizer)
    compiler = xg.GrammarCompiler(info, precompute_nodes=0, cache_enabled=False)
    rng = random.Random(13)
    bitmask = np.zeros(xg.get_bitmask_shape(1, info.vocab_size), dtype=np.int32)
    for schema, texts in SHORT_TOKEN_CASES:
        grammar = compiler.compile_json_schema(schema)
        for text in texts:
            document = text if text.startswith("{") else json.dumps(text)
            assert compare_masks_along(grammar, encode_continuation(tokenizer, document), require_accept=True) > 2
        for _ in range(3):
            compare_masks_along(grammar, sampled_ids(grammar, rng, bitmask, 60))
    stats = compiler.mask_cache_stats
    assert stats["short_token_hits"] > 20, stats
    assert stats["partial_hits"] >= stats["short_token_hits"]


# The last copies of a bounded string (matcher/token_mask_cache.cc, ChainConsumes and
# Utf8ChainConsumes): near the bound a trie subtree is accepted by one subset test against
# the intersection of the masks along the chain, and a subtree of multi-byte characters by
# characters (each copy of json_char has its own continuation nodes). Every string below is
# within kShortTokenBytes of its bound from its first copy, so every copy is classified by the
# trie walk. Its values take every length from empty to the bound, so each copy is met at
# every distance from the bound, with characters of one to four bytes, escapes, and (inside
# an object) tokens that cross the closing quote; random walks drawn from the mask add long
# multi-byte tokens and tokens that end inside a character.
CHAIN_BOUND_SCHEMAS = [
    {"type": "string", "maxLength": 12},
    {"type": "string", "minLength": 10, "maxLength": 10},
    {"type": "object", "properties": {"s": {"type": "string", "maxLength": 9},
                                      "t": {"type": "string", "minLength": 6, "maxLength": 6}},
     "required": ["s", "t"], "additionalProperties": False},
]
CHAIN_BOUND_CHARACTERS = 'aé€😀 "\\\nz日b'


def chain_bound_documents(schema: dict, shift: int) -> list[str]:
    """Documents of `schema` whose strings take every length up to their bound."""

    def value(length: int, offset: int) -> str:
        return "".join(CHAIN_BOUND_CHARACTERS[(k + offset) % len(CHAIN_BOUND_CHARACTERS)] for k in range(length))

    if schema["type"] == "string":
        lengths = range(schema.get("minLength", 0), schema["maxLength"] + 1)
        return [json.dumps(value(n, shift + n), ensure_ascii=False) for n in lengths]
    bound = schema["properties"]["s"]["maxLength"]
    exact = schema["properties"]["t"]["maxLength"]
    return [
        json.dumps({"s": value(n, shift + n), "t": value(exact, shift + 2 * n)}, ensure_ascii=False)
        for n in range(bound + 1)
    ]


@pytest.mark.parametrize("tokenizer", ["llama3.1", "qwen3"])
@pytest.mark.parametrize("mechanism", ["all", "no_cross_grammar"])
def test_chain_bound_masks_match_reference(tokenizer: str, mechanism: str) -> None:
    info = hf_tokenizer_info(tokenizer)
    compiler = xg.GrammarCompiler(info, **MECHANISMS[mechanism])
    rng = random.Random(17)
    bitmask = np.zeros(xg.get_bitmask_shape(1, info.vocab_size), dtype=np.int32)
    for index, schema in enumerate(CHAIN_BOUND_SCHEMAS):
        grammar = compiler.compile_json_schema(schema)
        for document in chain_bound_documents(schema, index):
            assert compare_masks_along(grammar, encode_continuation(tokenizer, document), require_accept=True) > 1
        for _ in range(4):
            compare_masks_along(grammar, sampled_ids(grammar, rng, bitmask, 16))


# Chains whose copies can leave the rule: after each copy of [^<>]{0,6} the parser may call
# `tail` (recursive, so not inlined), which takes one character of the class, so a token
# longer than the copies left is not rejected at the chain's end (the chain-root shortcut
# must not apply); and a bounded body followed by more of its class in the same rule.
CHAIN_BOUND_GRAMMARS = [
    ('root ::= "<" [^<>]{0,6} tail ">"\ntail ::= "" | "x" tail', ["<abcdefxxxx>", "<é€😀日本xx>", "<abcxyz>", "<>"]),
    ('root ::= "(" [^()]{0,8} ")" [^()]{2,4} ";"', ["(abcdefgh)xyz;", "(é€😀 日本)ab;", "()日本;"]),
]


@pytest.mark.parametrize("tokenizer", ["llama3.1", "qwen3"])
def test_chain_bound_grammar_masks_match_reference(tokenizer: str) -> None:
    info = hf_tokenizer_info(tokenizer)
    compiler = xg.GrammarCompiler(info, **MECHANISMS["no_cross_grammar"])
    rng = random.Random(19)
    bitmask = np.zeros(xg.get_bitmask_shape(1, info.vocab_size), dtype=np.int32)
    for ebnf, texts in CHAIN_BOUND_GRAMMARS:
        grammar = compiler.compile_grammar(ebnf)
        for text in texts:
            assert compare_masks_along(grammar, encode_continuation(tokenizer, text), require_accept=True) > 1
        for _ in range(4):
            compare_masks_along(grammar, sampled_ids(grammar, rng, bitmask, 10))


# The time formats' leap-second table calls one shared rule (":60" and the fraction, with a
# lookahead for the offset) from each of its 1,440 local minutes, next to the byte edges of
# ordinary seconds (string_formats.cc, LeapSecondTime): tokens at that node are decided partly
# by the node's bytes and partly through the call.
LEAP_SECOND_TEXTS = ['"2016-12-31T23:59:60Z"', '"1998-12-31T15:59:60.123-08:00"', '"2016-12-31T00:00:60+00:01"',
                     '"2024-02-29T12:34:56.789+05:30"', '"2016-12-31T12:29:60.5+12:30"', '"2016-12-31T23:58:60Z"']


@pytest.mark.parametrize("tokenizer", ["llama3.1", "phi-3"])
@pytest.mark.parametrize("mechanism", ["all", "ahead_of_time"])
def test_leap_second_masks_match_reference(tokenizer: str, mechanism: str) -> None:
    compiler = xg.GrammarCompiler(hf_tokenizer_info(tokenizer), **MECHANISMS[mechanism])
    schema = {"type": "object", "properties": {"at": {"type": "string", "format": "date-time"},
                                               "clock": {"type": "string", "format": "time"}}}
    grammar = compiler.compile_json_schema(schema, any_whitespace=False)
    checked = 0
    for text in LEAP_SECOND_TEXTS:
        valid = text != '"2016-12-31T23:58:60Z"'
        for key, value in (("at", text), ("clock", '"' + text.split("T")[1])):
            document = '{"' + key + '": ' + value + "}"
            checked += compare_masks_along(grammar, encode_continuation(tokenizer, document), require_accept=valid)
    assert checked > 100
