"""Token-level structural-tag forms (token on ordinary tokens, exclude_token, any_tokens,
token_triggered_tags, token_dispatch) and the EBNF token sets under them (TokenSet,
ExcludeToken): accept/reject and masks compared token by token with xgrammar 0.2.8 on the same
tag (a fresh, uncached xgrammar compiler per tag: its cache mixes up ExcludeToken sets), the
reference mask path against the cached one, history (rollback, fork), and typed errors."""

from __future__ import annotations

import json

import numpy as np
import pytest

import xg2_plugin as xg
from xg2_plugin.structural_tag import StructuralTagError

from xg2_test_support import allowed_tokens, hf_compiler, hf_tokenizer_info, require_data

TOKENIZER = "llama3.1"
EOT, EOS, HEADER_START, HEADER_END = 128009, 128001, 128006, 128007  # EOT, EOS: stop tokens
HELLO, A, B, C, D, AB, X, BYTE_FF = 15339, 64, 65, 66, 67, 370, 87, 187  # BYTE_FF decodes to b"\xff"
BANG, QUOTE = 0, 1  # "!" and '"': ids equal to the indices of a grammar's first token sets


def const(text):
    return {"type": "const_string", "value": text}


def st(fmt):
    return json.dumps({"type": "structural_tag", "format": fmt})


def seq(*elements):
    return {"type": "sequence", "elements": list(elements)}


TRIGGERED = {"type": "token_triggered_tags", "trigger_tokens": [HEADER_START],
             "tags": [{"type": "tag", "begin": {"type": "token", "token": HEADER_START}, "content": const("x"),
                       "end": {"type": "token", "token": HEADER_END}}],
             "exclude_tokens": ["hello"]}

# (format, a token path every engine accepts); masks are compared before each token and after.
CASES = [
    ({"type": "exclude_token", "exclude_tokens": [HELLO, "<|eot_id|>"]}, [HEADER_START]),
    ({"type": "exclude_token"}, [BYTE_FF]),
    ({"type": "any_tokens", "exclude_tokens": [HELLO], "max_tokens": 3}, [A, HEADER_START, B]),
    (seq({"type": "any_tokens", "max_tokens": 2}, const("b")), [AB, A, B]),
    (seq({"type": "any_tokens", "max_tokens": 100}, const("b")), [AB, AB, B]),
    (seq(const("a"), {"type": "exclude_token"}, const("b")), [A, AB, B]),
    # Token sets 0 and 1 beside text spelled by tokens 0 and 1: the sets' markers name no token.
    (seq({"type": "exclude_token", "exclude_tokens": [HELLO]}, {"type": "exclude_token", "exclude_tokens": [A]},
         const("!\"")), [B, C, BANG, QUOTE]),
    ({"type": "token", "token": HELLO}, [HELLO]),
    ({"type": "token", "token": "hello"}, [HELLO]),
    (TRIGGERED, [C, HEADER_START, X, HEADER_END, D]),
    (dict(TRIGGERED, at_least_one=True), [HEADER_START, X, HEADER_END, D]),
    (dict(TRIGGERED, stop_after_first=True), [C, HEADER_START, X, HEADER_END]),
    ({"type": "token_dispatch", "rules": [[HEADER_START, const("x")]], "exclude_tokens": [A], "loop": False},
     [C, HEADER_START, X]),
    ({"type": "token_dispatch", "rules": [[HEADER_START, const("x")]]}, [C, HEADER_START, X, HEADER_START, X, A]),
    (seq({"type": "token_dispatch", "rules": [[HEADER_START, const("x")]], "loop": False}, const("b")), [C, B]),
]


@pytest.fixture(scope="module")
def oracle():
    xgr = pytest.importorskip("xgrammar")
    transformers = pytest.importorskip("transformers")
    path = require_data(f"tokenizers/hf/{TOKENIZER}/tokenizer.json")
    hf = transformers.PreTrainedTokenizerFast(tokenizer_file=str(path))
    info = xgr.TokenizerInfo.from_huggingface(hf, stop_token_ids=hf_tokenizer_info(TOKENIZER).stop_token_ids)
    return xgr, info


def oracle_mask(xgr, matcher, vocab_size):
    bitmask = xgr.allocate_token_bitmask(1, vocab_size)
    matcher.fill_next_token_bitmask(bitmask)
    return np.unpackbits(bitmask[0].numpy().view(np.uint8), bitorder="little")[:vocab_size].astype(bool)


def masks(matcher, vocab_size):
    cached = np.zeros(xg.get_bitmask_shape(1, vocab_size), dtype=np.int32)
    reference = np.zeros_like(cached)
    allowed = allowed_tokens(matcher, cached, vocab_size).copy()
    matcher._fill_next_token_bitmask_reference(reference)
    assert np.array_equal(cached, reference), "cached and reference masks differ"
    return allowed


def both_matchers(oracle, fmt):
    """(xgrammar module, our matcher, xgrammar's matcher, vocabulary size) for the tag `fmt`.
    xgrammar's compiler cache confuses ExcludeToken sets across tags: a fresh one each time."""
    xgr, xinfo = oracle
    ours = xg.GrammarMatcher(hf_compiler(TOKENIZER).compile_structural_tag(st(fmt)))
    theirs = xgr.GrammarMatcher(xgr.GrammarCompiler(xinfo, cache_enabled=False).compile_structural_tag(st(fmt)))
    return xgr, ours, theirs, hf_tokenizer_info(TOKENIZER).vocab_size


@pytest.mark.parametrize("fmt,path", CASES, ids=[f"{i}-{c[0]['type']}" for i, c in enumerate(CASES)])
def test_masks_and_acceptance_match_xgrammar(oracle, fmt, path):
    xgr, ours, theirs, vocab_size = both_matchers(oracle, fmt)
    for step, token in enumerate(path + [None]):
        mine, expected = masks(ours, vocab_size), oracle_mask(xgr, theirs, vocab_size)
        differ = np.flatnonzero(mine != expected)
        assert differ.size == 0, f"step {step}: masks differ on {differ[:10]} (ours {mine.sum()}, xgrammar {expected.sum()})"
        if token is None:
            break
        assert ours.accept_token(token) and theirs.accept_token(token), f"step {step}: token {token}"
    assert ours.is_completed()


def matcher(ebnf):
    return xg.GrammarMatcher(hf_compiler(TOKENIZER).compile_grammar(ebnf))


def test_token_sets_take_whole_tokens_at_boundaries_and_never_stop_tokens():
    vocab_size = hf_tokenizer_info(TOKENIZER).vocab_size
    m = matcher('root ::= "a" ExcludeToken() "b"')
    assert not m.accept_token(AB)  # straddles into the set: not a boundary
    assert m.accept_token(A)
    assert not m.accept_token(EOT) and not m.accept_token(EOS)
    allowed = masks(m, vocab_size)
    assert allowed.sum() == vocab_size - 2 and not allowed[EOT] and allowed[HEADER_START] and allowed[BYTE_FF]
    assert m.accept_token(HEADER_START) and m.accept_token(B)
    # A text-less special token taken by a set is a chart step of its own.
    m = matcher("root ::= TokenSet(128006) TokenSet(128007)")
    assert m.accept_token(HEADER_START) and m.accept_token(HEADER_END) and m.is_completed()


def test_model_padding_is_never_a_token_set_member():
    """Ids past the tokenizer's tokens (the model's padded vocabulary) are never allowed, by a
    complement set's mask or by accept_token; accepting one once read past the vocabulary."""
    from xg2_test_support import hf_tokenizer

    real = hf_tokenizer_info(TOKENIZER).vocab_size
    padded = xg.TokenizerInfo.from_huggingface(hf_tokenizer(TOKENIZER), vocab_size=real + 40)
    grammar = xg.GrammarCompiler(padded).compile_grammar("root ::= ExcludeToken(1) ExcludeToken()")
    m = xg.GrammarMatcher(grammar)
    bitmask = xg.allocate_token_bitmask(1, padded.vocab_size)
    allowed = allowed_tokens(m, bitmask, padded.vocab_size)
    assert allowed[: real].sum() > 0 and not allowed[real:].any()
    assert not m.accept_token(real + 3) and not m.accept_token(real + 39)
    assert m.accept_token(A) and m.accept_token(B) and m.is_completed()


def test_a_byte_token_cannot_spell_a_token_set():
    # b"\xff" is the first byte of every token-set marker: only the derived vocabulary (which
    # drops such tokens from text) keeps it from entering one byte by byte.
    vocab_size = hf_tokenizer_info(TOKENIZER).vocab_size
    for ebnf in ["root ::= TokenSet(15339)", "root ::= ExcludeToken(187) | TokenSet(15339)"]:
        allowed = masks(matcher(ebnf), vocab_size)
        assert not allowed[BYTE_FF], ebnf
    assert np.flatnonzero(masks(matcher("root ::= TokenSet(15339)"), vocab_size)).tolist() == [HELLO]


def test_token_set_keeps_the_token_usable_as_text_elsewhere():
    m = matcher('root ::= TokenSet(15339) "hello"')
    assert m.accept_token(HELLO) and m.accept_token(HELLO) and m.is_completed()


def test_a_large_any_tokens_budget_is_exact():
    # max_tokens past the repetition-compression threshold: a counted loop of one-token iterations.
    vocab_size = hf_tokenizer_info(TOKENIZER).vocab_size
    m = xg.GrammarMatcher(hf_compiler(TOKENIZER).compile_structural_tag(
        st(seq({"type": "any_tokens", "max_tokens": 200}, const("b")))))
    for _ in range(199):
        assert m.accept_token(AB)
    assert masks(m, vocab_size).sum() == vocab_size - 2
    assert m.accept_token(HEADER_START)
    assert np.flatnonzero(masks(m, vocab_size)).tolist() == [B]
    assert not m.accept_token(A) and m.accept_token(B) and m.is_completed()


def test_any_tokens_budget_counts_tokens_and_history_restores_it():
    vocab_size = hf_tokenizer_info(TOKENIZER).vocab_size
    m = xg.GrammarMatcher(hf_compiler(TOKENIZER).compile_structural_tag(
        st(seq({"type": "any_tokens", "max_tokens": 3}, const("b")))))
    for token in [C, D, AB]:
        assert m.accept_token(token)
    full = masks(m, vocab_size)
    assert np.flatnonzero(full).tolist() == [B]  # three tokens used: only the "b" may follow
    m.rollback(1)
    one_left = masks(m, vocab_size)
    assert one_left.sum() == vocab_size - 2  # any token but the stop tokens
    fork = m.fork()
    assert fork.accept_token(C) and np.flatnonzero(masks(fork, vocab_size)).tolist() == [B]
    assert np.array_equal(masks(m, vocab_size), one_left)  # the fork did not touch the original
    assert m.accept_token(C) and not m.accept_token(C) and m.accept_token(B)


@pytest.mark.parametrize("fmt,path,message", [
    ({"type": "exclude_token", "exclude_tokens": [1, 999999]}, "/format/exclude_tokens/1", "outside the vocabulary"),
    ({"type": "exclude_token", "exclude_tokens": [-1]}, "/format/exclude_tokens/0", "outside the vocabulary"),
    ({"type": "any_tokens", "exclude_tokens": ["no such token text"]}, "/format/exclude_tokens/0", "not the text of a token"),
    ({"type": "token", "token": "no such token text"}, "/format/token", "not the text of a token"),
    ({"type": "token_dispatch", "rules": [["no such token text", const("x")]]}, "/format/rules/0/0", "not the text"),
    (dict(TRIGGERED, tags=[dict(TRIGGERED["tags"][0], begin={"type": "token", "token": HEADER_END})]),
     "/format/tags/0/begin", "not a trigger token"),
    (dict(TRIGGERED, tags=[dict(TRIGGERED["tags"][0], begin="<x>")]), "/format/tags/0/begin", "token begins"),
    (dict(TRIGGERED, trigger_tokens=[]), "/format/trigger_tokens", "at least one trigger"),
])
def test_bad_tokens_are_typed_errors_naming_the_path(fmt, path, message):
    with pytest.raises(StructuralTagError, match=f"at {path}: .*{message}"):
        hf_compiler(TOKENIZER).compile_structural_tag(st(fmt))


def test_ebnf_token_set_syntax_errors():
    with pytest.raises(xg.GrammarSyntaxError, match="TokenSet\\(\\) needs at least one token id"):
        matcher("root ::= TokenSet()")
    with pytest.raises(xg.GrammarSyntaxError, match="exceeds the limit"):
        matcher("root ::= ExcludeToken(99999999)")


def test_printed_grammar_keeps_token_sets():
    from xg2_plugin import _native
    printed = _native._ebnf_roundtrip("root ::= ExcludeToken(5, 3) TokenSet(7)")
    assert "ExcludeToken(3, 5)" in printed and "TokenSet(7)" in printed


# ---- any_text.max_tokens: token budgets of a byte-level region ---------------------------

SPECIAL = np.zeros(128256, dtype=bool)
SPECIAL[128000:] = True  # never free text in xg2 (free text in this xgrammar TokenizerInfo)
SPECIAL[[EOS, EOT]] = False


def any_text(max_tokens):
    return {"type": "any_text", "max_tokens": max_tokens}


BUDGET_CASES = [
    (seq(any_text(1), const("b")), [AB]),                # a token running on past the end counts once
    (seq(any_text(0), const("b")), [B]),
    (seq(any_text(2), const("b")), [C, D, B]),           # spent: only what follows the region
    (seq(any_text(2), const("b")), [C, AB]),
    (seq(const("a"), any_text(1), const("c")), [AB, D, C]),  # "ab" runs into the region: not counted
    (seq(const("a"), any_text(1), const("c")), [A, B, C]),
    (seq(any_text(1), const("bc")), [AB, C]),
    (any_text(1), [C]),
    (seq(any_text(1), any_text(1)), [C, D]),
]


@pytest.mark.parametrize("fmt,path", BUDGET_CASES, ids=[str(i) for i in range(len(BUDGET_CASES))])
def test_any_text_budget_masks_match_xgrammar(oracle, fmt, path):
    xgr, ours, theirs, vocab_size = both_matchers(oracle, fmt)
    for step, token in enumerate(path + [None]):
        mine, expected = masks(ours, vocab_size) & ~SPECIAL, oracle_mask(xgr, theirs, vocab_size) & ~SPECIAL
        differ = np.flatnonzero(mine != expected)
        assert differ.size == 0, f"step {step}: masks differ on {differ[:10]} (ours {mine.sum()}, xgrammar {expected.sum()})"
        if token is None:
            break
        assert ours.accept_token(token) and theirs.accept_token(token), f"step {step}: token {token}"


def test_any_text_budget_is_enforced_by_accept_and_restored_by_rollback_and_fork():
    vocab_size = hf_tokenizer_info(TOKENIZER).vocab_size
    m = xg.GrammarMatcher(hf_compiler(TOKENIZER).compile_structural_tag(st(seq(any_text(2), const("b")))))
    assert m.accept_token(C) and m.accept_token(D)
    assert not m.accept_token(C)  # a third token in the region (xgrammar accepts it; its mask does not)
    assert np.flatnonzero(masks(m, vocab_size)).tolist() == [B]
    m.rollback(1)
    one_left = masks(m, vocab_size)
    assert one_left[C] and one_left[AB]
    fork = m.fork()
    assert fork.accept_token(C) and not fork.accept_token(C)
    assert np.array_equal(masks(m, vocab_size), one_left)
    # accept_string is one step, as in xgrammar.
    assert m.accept_string("dd") and np.flatnonzero(masks(m, vocab_size)).tolist() == [B]


@pytest.mark.parametrize("grammar", ['root ::= think\nthink[max_tokens=2] ::= [a-z]*',
                                     'root ::= "b" think\nthink[max_tokens=2] ::= [a-z]*'])
def test_token_budget_of_a_rule_called_last(grammar):
    # A budgeted rule in tail position stays a rule of its own (right-linear merging would
    # fold its language into the caller's and drop the budget).
    m = matcher(grammar)
    if '"b"' in grammar:
        assert m.accept_token(B)
    assert m.accept_token(C) and m.accept_token(D) and not m.accept_token(C)
    assert not masks(m, hf_tokenizer_info(TOKENIZER).vocab_size)[C]


def test_ebnf_token_budget_attribute():
    vocab_size = hf_tokenizer_info(TOKENIZER).vocab_size
    m = matcher('root ::= think "b"\nthink[max_tokens=2] ::= [a-z]*')
    assert m.accept_token(C) and m.accept_token(D) and not m.accept_token(C)
    assert np.flatnonzero(masks(m, vocab_size)).tolist() == [B]
    from xg2_plugin import _native
    assert "think[max_tokens=2] ::=" in _native._ebnf_roundtrip('root ::= think "b"\nthink[max_tokens=2] ::= [a-z]*')
    with pytest.raises(xg.GrammarSyntaxError, match="belongs on a rule definition"):
        matcher('root ::= think[max_tokens=2]\nthink ::= "a"')
    with pytest.raises(xg.GrammarSyntaxError, match="calls no other rule"):
        matcher('root ::= think "b"\nthink[max_tokens=2] ::= "(" x ")"\nx ::= "a" | "(" x ")"')
