"""GrammarMatcher and bitmask API on a small raw vocabulary, checked against the reference walk."""

from __future__ import annotations

import numpy as np
import pytest

import xg2_plugin as xg
from xg2_plugin.bitmask import bitmask_to_bool_array

# Token ids: 0..N-1 text tokens, then a stop token and a special token.
TEXT_TOKENS = [b"a", b"b", b"ab", b"ba", b"abc", b"c", b"{", b"}", b'"', b'{"', b'":', b"1", b"12", b"x", b" ", b"\xc3", b"\xa9", b"\xc3\xa9"]
STOP = len(TEXT_TOKENS)
SPECIAL = STOP + 1
VOCAB = TEXT_TOKENS + [b"</s>", b"<special>"]


@pytest.fixture(scope="module")
def info() -> xg.TokenizerInfo:
    return xg.TokenizerInfo(VOCAB, xg.VocabType.RAW, stop_token_ids=[STOP], special_token_ids=[SPECIAL])


@pytest.fixture(scope="module")
def compiler(info: xg.TokenizerInfo) -> xg.GrammarCompiler:
    return xg.GrammarCompiler(info)


def allowed_ids(matcher: xg.GrammarMatcher, vocab_size: int) -> set[int]:
    mask = xg.allocate_token_bitmask(1, vocab_size)
    matcher.fill_next_token_bitmask(mask)
    return set(np.flatnonzero(bitmask_to_bool_array(mask[0], vocab_size)).tolist())


def test_masks_follow_grammar(compiler: xg.GrammarCompiler, info: xg.TokenizerInfo) -> None:
    g = compiler.compile_grammar('root ::= "a"+ "b" | "abc"')
    m = xg.GrammarMatcher(g)
    ids = {t: i for i, t in enumerate(VOCAB)}
    assert allowed_ids(m, info.vocab_size) == {ids[b"a"], ids[b"ab"], ids[b"abc"]}
    assert m.accept_token(ids[b"a"])
    assert allowed_ids(m, info.vocab_size) == {ids[b"a"], ids[b"b"], ids[b"ab"]}
    assert m.accept_token(ids[b"b"])
    assert m.is_completed()
    assert allowed_ids(m, info.vocab_size) == {STOP, ids[b"c"]}  # "ab" may still become "abc"
    assert not m.is_terminated()
    assert m.accept_token(STOP)
    assert m.is_terminated()
    assert not m.accept_token(ids[b"a"])


def test_special_and_padding_never_allowed() -> None:
    info = xg.TokenizerInfo(VOCAB, xg.VocabType.RAW, vocab_size=len(VOCAB) + 30, stop_token_ids=[STOP], special_token_ids=[SPECIAL])
    compiler = xg.GrammarCompiler(info)
    m = xg.GrammarMatcher(compiler.compile_grammar("root ::= [^z]*"))
    allowed = allowed_ids(m, info.vocab_size)
    assert SPECIAL not in allowed
    assert all(i < len(VOCAB) for i in allowed)
    assert STOP in allowed
    assert not m.accept_token(SPECIAL)
    assert not m.accept_token(len(VOCAB) + 3)


def test_partial_utf8_tokens(compiler: xg.GrammarCompiler, info: xg.TokenizerInfo) -> None:
    g = compiler.compile_grammar('root ::= "é" | "x"')
    m = xg.GrammarMatcher(g)
    ids = {t: i for i, t in enumerate(VOCAB)}
    assert allowed_ids(m, info.vocab_size) == {ids[b"\xc3"], ids[b"\xc3\xa9"], ids[b"x"]}
    assert m.accept_token(ids[b"\xc3"])
    assert allowed_ids(m, info.vocab_size) == {ids[b"\xa9"]}


def test_rollback_restores_identical_masks(compiler: xg.GrammarCompiler, info: xg.TokenizerInfo) -> None:
    g = compiler.compile_grammar('root ::= "{" ("\\"" [a-c]* "\\":" [0-9]+)? "}"')
    m = xg.GrammarMatcher(g)
    ids = {t: i for i, t in enumerate(VOCAB)}
    seq = [ids[b'{"'], ids[b"ab"], ids[b"c"], ids[b'":'], ids[b"12"], ids[b"}"], STOP]
    masks = [allowed_ids(m, info.vocab_size)]
    for t in seq:
        assert m.accept_token(t), VOCAB[t]
        masks.append(allowed_ids(m, info.vocab_size))
    assert m.is_terminated()
    for k in range(len(seq), 0, -1):
        m.rollback(1)
        assert allowed_ids(m, info.vocab_size) == masks[k - 1]
    for t in seq:
        assert m.accept_token(t)
    m.rollback(len(seq))
    assert allowed_ids(m, info.vocab_size) == masks[0]
    with pytest.raises(xg.InvalidArgumentError):
        m.rollback(1)


def test_fork_is_independent(compiler: xg.GrammarCompiler, info: xg.TokenizerInfo) -> None:
    g = compiler.compile_grammar('root ::= ("a" | "b")* "c"')
    m = xg.GrammarMatcher(g)
    ids = {t: i for i, t in enumerate(VOCAB)}
    m.accept_token(ids[b"a"])
    f = m.fork()
    assert f.accept_token(ids[b"c"])
    assert f.is_completed()
    assert not m.is_completed()
    assert allowed_ids(m, info.vocab_size) != allowed_ids(f, info.vocab_size)
    assert m.num_accepted_steps == 1 and f.num_accepted_steps == 2


def test_jump_forward_inside_a_character(compiler: xg.GrammarCompiler) -> None:
    m = xg.GrammarMatcher(compiler.compile_grammar('root ::= "a" ("\u00e9" | "\u00e8") "z"'))
    # The forced bytes stop before a character they only begin.
    assert m.find_jump_forward_bytes() == b"a"
    assert m.find_jump_forward_string() == "a"
    assert m.accept_string(b"a\xc3\xa9")
    assert m.find_jump_forward_string() == "z"
    m = xg.GrammarMatcher(compiler.compile_grammar('root ::= "\u00e9x"'))
    assert m.accept_string(b"\xc3")
    # Inside a character the continuation cannot be written as text.
    assert m.find_jump_forward_bytes() == b"\xa9x"
    assert m.find_jump_forward_string() == ""


def test_validate_tokens_keeps_state(compiler: xg.GrammarCompiler) -> None:
    g = compiler.compile_grammar('root ::= "ab" "c"')
    m = xg.GrammarMatcher(g)
    ids = {t: i for i, t in enumerate(VOCAB)}
    assert m.validate_tokens([ids[b"a"], ids[b"b"], ids[b"a"]]) == 2
    assert m.validate_tokens([ids[b"abc"], STOP]) == 2
    assert m.num_accepted_steps == 0
    assert m.accept_token(ids[b"ab"])


def test_accept_string_and_jump_forward(compiler: xg.GrammarCompiler) -> None:
    g = compiler.compile_grammar('root ::= "{\\"name\\": \\"" [a-z]+ "\\"}"')
    m = xg.GrammarMatcher(g)
    assert m.find_jump_forward_string() == '{"name": "'
    assert m.accept_string('{"name": "')
    assert m.find_jump_forward_string() == ""
    assert not m.accept_string("1")
    assert m.accept_string(b"abc")
    m.rollback(1)
    assert m.accept_string("x\"}")
    assert m.is_completed()


def test_terminate_without_stop_token(compiler: xg.GrammarCompiler, info: xg.TokenizerInfo) -> None:
    g = compiler.compile_grammar('root ::= "ab"')
    m = xg.GrammarMatcher(g, terminate_without_stop_token=True)
    assert m.accept_string("ab")
    assert m.is_terminated()
    assert not m.accept_token(STOP)


def test_custom_stop_tokens(compiler: xg.GrammarCompiler, info: xg.TokenizerInfo) -> None:
    g = compiler.compile_grammar('root ::= "a"')
    m = xg.GrammarMatcher(g, stop_token_ids=[SPECIAL])
    m.accept_string("a")
    assert allowed_ids(m, info.vocab_size) == {SPECIAL}
    assert not m.accept_token(STOP)
    assert m.accept_token(SPECIAL)


def test_bitmask_validation(compiler: xg.GrammarCompiler, info: xg.TokenizerInfo) -> None:
    m = xg.GrammarMatcher(compiler.compile_grammar('root ::= "a"'))
    words = (info.vocab_size + 31) // 32
    with pytest.raises(ValueError, match="int32"):
        m.fill_next_token_bitmask(np.zeros((1, words), dtype=np.int64))
    with pytest.raises(ValueError, match="out of range"):
        m.fill_next_token_bitmask(np.zeros((2, words), dtype=np.int32), index=2)
    with pytest.raises(ValueError, match="out of range"):
        m.fill_next_token_bitmask(np.zeros((2, words), dtype=np.int32), index=-1)
    with pytest.raises(ValueError, match="contiguous"):
        m.fill_next_token_bitmask(np.zeros((2, words * 2), dtype=np.int32)[:, ::2])
    with pytest.raises(ValueError, match="1-D or 2-D"):
        m.fill_next_token_bitmask(np.zeros((1, 1, words), dtype=np.int32))
    with pytest.raises(ValueError, match="needs"):
        m.fill_next_token_bitmask(np.zeros((1, 0), dtype=np.int32))
    with pytest.raises(TypeError):
        m.fill_next_token_bitmask([[0] * words])
    with pytest.raises(xg.InvalidArgumentError):
        m.accept_token(10**6)
    with pytest.raises(xg.InvalidArgumentError):
        m.accept_token(-1)


def test_bitmask_validation_edge_cases(compiler: xg.GrammarCompiler, info: xg.TokenizerInfo) -> None:
    """The engine validates the buffer itself: every layout the Python checks accepted still
    works, and every one they rejected is still a typed error."""
    m = xg.GrammarMatcher(compiler.compile_grammar('root ::= "a" | "b"'))
    words = (info.vocab_size + 31) // 32
    expected = xg.allocate_token_bitmask(1, info.vocab_size)
    m._fill_next_token_bitmask_reference(expected)
    expected_row = np.asarray(expected[0])
    one_d = np.zeros(words, dtype=np.int32)  # a 1-D buffer is one row
    assert m.fill_next_token_bitmask(one_d)
    assert np.array_equal(one_d, expected_row)
    wide = np.zeros((3, words + 5), dtype=np.int32)  # wider rows, row index as a numpy int
    assert m.fill_next_token_bitmask(wide, index=np.int64(2))
    assert np.array_equal(wide[2, :words], expected_row) and not wide[:2].any()
    strided_rows = np.zeros((4, words), dtype=np.int32)[::2]  # rows apart, each contiguous
    assert m.fill_next_token_bitmask(strided_rows, index=1)
    assert np.array_equal(strided_rows[1], expected_row)
    readonly = np.zeros((1, words), dtype=np.int32)
    readonly.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        m.fill_next_token_bitmask(readonly)
    with pytest.raises(ValueError, match="int32"):
        m.fill_next_token_bitmask(np.zeros((1, words), dtype=">i4"))
    with pytest.raises(TypeError, match="bool"):
        m.fill_next_token_bitmask(np.zeros((2, words), dtype=np.int32), index=True)
    with pytest.raises(TypeError):
        m.fill_next_token_bitmask(np.zeros((2, words), dtype=np.int32), index=1.0)
    with pytest.raises(TypeError, match="numpy array or a torch tensor"):
        m.fill_next_token_bitmask("not a buffer")
    with pytest.raises(TypeError, match="numpy array or a torch tensor"):
        m.fill_next_token_bitmask(bytearray(4 * words))  # a writable buffer, but not a bitmask
    torch = pytest.importorskip("torch")
    t_one_d = torch.zeros(words, dtype=torch.int32)
    assert m.fill_next_token_bitmask(t_one_d)
    assert np.array_equal(t_one_d.numpy(), expected_row)
    t_rows = torch.zeros(4, words, dtype=torch.int32)[1::2]  # offset view: data_ptr is not the storage's
    assert m._fill_next_token_bitmask_reference(t_rows, index=1)
    assert np.array_equal(t_rows[1].numpy(), expected_row) and not t_rows[0].any()
    with pytest.raises(ValueError, match="contiguous"):
        m.fill_next_token_bitmask(torch.zeros(1, words * 2, dtype=torch.int32)[:, ::2])
    with pytest.raises(ValueError, match="CPU"):
        m.fill_next_token_bitmask(torch.zeros(1, words, dtype=torch.int32, device="meta"))
    with pytest.raises(ValueError, match="1-D or 2-D"):
        m.fill_next_token_bitmask(torch.zeros(1, 1, words, dtype=torch.int32))
    with pytest.raises(ValueError, match="needs"):
        m.fill_next_token_bitmask(torch.zeros(1, words - 1, dtype=torch.int32))


def test_fill_arguments_positional_and_keyword(compiler: xg.GrammarCompiler, info: xg.TokenizerInfo) -> None:
    """The native fill parses its own arguments (a METH_FASTCALL method): bitmask and index by
    position or by name, with Python's errors for a missing, repeated, unknown or extra one."""
    m = xg.GrammarMatcher(compiler.compile_grammar('root ::= "a" | "b"'))
    words = (info.vocab_size + 31) // 32
    expected = np.zeros((1, words), dtype=np.int32)
    m._fill_next_token_bitmask_reference(expected)
    for call in (lambda b: m.fill_next_token_bitmask(b, 1), lambda b: m.fill_next_token_bitmask(b, index=1),
                 lambda b: m.fill_next_token_bitmask(bitmask=b, index=1),
                 lambda b: m.fill_next_token_bitmask(index=1, bitmask=b),
                 lambda b: m._handle.fill_next_token_bitmask(b, 1)):
        rows = np.zeros((2, words), dtype=np.int32)
        assert call(rows)
        assert np.array_equal(rows[1], expected[0]) and not rows[0].any()
    rows = np.zeros((2, words), dtype=np.int32)
    assert m.fill_next_token_bitmask(bitmask=rows)  # index defaults to the first row
    assert np.array_equal(rows[0], expected[0]) and not rows[1].any()
    with pytest.raises(TypeError, match="missing required argument 'bitmask'"):
        m.fill_next_token_bitmask()
    with pytest.raises(TypeError, match="missing required argument 'bitmask'"):
        m.fill_next_token_bitmask(index=0)
    with pytest.raises(TypeError, match="multiple values for argument 'bitmask'"):
        m.fill_next_token_bitmask(rows, bitmask=rows)
    with pytest.raises(TypeError, match="multiple values for argument 'index'"):
        m.fill_next_token_bitmask(rows, 0, index=0)
    with pytest.raises(TypeError, match="unexpected keyword argument 'row'"):
        m.fill_next_token_bitmask(rows, row=0)
    with pytest.raises(TypeError, match="at most 2 arguments"):
        m.fill_next_token_bitmask(rows, 0, 0)
    with pytest.raises(TypeError):
        type(m._handle).fill_next_token_bitmask(object(), rows)  # not a matcher


def test_accept_token_arguments(compiler: xg.GrammarCompiler, info: xg.TokenizerInfo) -> None:
    """The native accept parses its own argument (a METH_FASTCALL method): the id by position or
    by name, numpy integers as ints, with the errors the Python checks gave (TypeError naming
    token_id, InvalidArgumentError outside the vocabulary, also beyond int32)."""
    grammar = compiler.compile_grammar('root ::= "a" "b"')
    ids = {tok: i for i, tok in enumerate(VOCAB)}
    m = xg.GrammarMatcher(grammar)
    assert m.accept_token(token_id=ids[b"a"]) is True
    assert m.accept_token(np.int64(ids[b"a"])) is False  # refused, state unchanged
    assert m._handle.accept_token(np.int32(ids[b"b"])) is True and m.is_completed()
    m = xg.GrammarMatcher(grammar)
    for bad, error, message in ((True, TypeError, "token_id must be an int, got bool"),
                                (1.0, TypeError, "token_id must be an int, got float"),
                                ("90", TypeError, "token_id must be an int, got str"),
                                (-1, xg.InvalidArgumentError, r"token id -1 is outside the vocabulary \[0, "),
                                (info.vocab_size, xg.InvalidArgumentError, "outside the vocabulary"),
                                (2 ** 31, xg.InvalidArgumentError, f"token id {2 ** 31} is outside"),
                                (-(2 ** 70), xg.InvalidArgumentError, f"token id {-(2 ** 70)} is outside")):
        with pytest.raises(error, match=message):
            m.accept_token(bad)
    with pytest.raises(TypeError, match="missing required argument 'token_id'"):
        m.accept_token()
    with pytest.raises(TypeError, match="at most 1 argument "):
        m.accept_token(1, 2)
    with pytest.raises(TypeError, match="multiple values for argument 'token_id'"):
        m.accept_token(1, token_id=1)
    with pytest.raises(TypeError, match="unexpected keyword argument 'token'"):
        m.accept_token(token=1)
    with pytest.raises(TypeError):
        type(m._handle).accept_token(object(), 1)  # not a matcher
    assert m.num_accepted_steps == 0  # no failed call changed the state
    assert m.accept_token(ids[b"a"]) and m.accept_token(ids[b"b"])


def test_long_accepts_release_and_retake_the_gil(compiler: xg.GrammarCompiler, info: xg.TokenizerInfo) -> None:
    """An accept whose parser work passes a few hundred operations releases the GIL mid-token
    (EarleyParser::kShortWork) and must hold it again before it returns: on a grammar whose work
    per byte grows with the output, the later accepts take that path, and their results, the
    mask beside them and the other threads' calls stay right."""
    import threading

    ids = {tok: i for i, tok in enumerate(VOCAB)}
    grammar = compiler.compile_grammar('root ::= s\ns ::= s s | "a" | "b"')  # ambiguous: O(n) items per byte
    m = xg.GrammarMatcher(grammar)
    stop = threading.Event()
    ticks = []

    def other_thread() -> None:
        while not stop.is_set():
            ticks.append(len(ticks))

    helper = threading.Thread(target=other_thread)
    helper.start()
    try:
        for step in range(60):
            assert m.accept_token(ids[b"a"] if step % 2 else ids[b"b"]) is True
            assert m.accept_token(ids[b"c"]) is False
        assert allowed_ids(m, len(VOCAB)) == {ids[b"a"], ids[b"b"], ids[b"ab"], ids[b"ba"], STOP}
    finally:
        stop.set()
        helper.join()
    assert m.num_accepted_steps == 60 and m.is_completed()


def test_torch_bitmask_and_apply(compiler: xg.GrammarCompiler, info: xg.TokenizerInfo) -> None:
    torch = pytest.importorskip("torch")
    m = xg.GrammarMatcher(compiler.compile_grammar('root ::= "a" | "b"'))
    mask = xg.allocate_token_bitmask(2, info.vocab_size)
    assert isinstance(mask, torch.Tensor) and mask.dtype == torch.int32
    assert m.fill_next_token_bitmask(mask, index=1)
    assert (mask[0] == -1).all()  # row 0 untouched
    logits = torch.zeros(2, info.vocab_size)
    xg.apply_token_bitmask_inplace(logits, mask)
    allowed = torch.isfinite(logits[1]).nonzero().flatten().tolist()
    assert allowed == [0, 1]
    assert torch.isfinite(logits[0]).all()
    with pytest.raises(ValueError, match="int32"):
        m.fill_next_token_bitmask(torch.zeros(1, 1, dtype=torch.int64))
    np_logits = np.zeros((1, info.vocab_size), dtype=np.float32)
    xg.apply_token_bitmask_inplace(np_logits, mask[1:].numpy())
    assert np.flatnonzero(np.isfinite(np_logits[0])).tolist() == [0, 1]


def test_batch_fill_matches_single(compiler: xg.GrammarCompiler, info: xg.TokenizerInfo) -> None:
    grammars = ['root ::= "a"', 'root ::= "b"*', 'root ::= [a-c]+ "}"', 'root ::= "é"']
    matchers = [xg.GrammarMatcher(compiler.compile_grammar(g)) for g in grammars] * 1
    batch = xg.allocate_token_bitmask(6, info.vocab_size)
    xg.batch_fill_next_token_bitmask(matchers, batch, indices=[5, 0, 3, 1], max_threads=2)
    for m, row in zip(matchers, [5, 0, 3, 1]):
        single = xg.allocate_token_bitmask(1, info.vocab_size)
        m.fill_next_token_bitmask(single)
        assert (batch[row] == single[0]).all()
    with pytest.raises(ValueError, match="distinct"):
        xg.batch_fill_next_token_bitmask([matchers[0], matchers[0]], batch)


def test_compile_errors_are_typed(compiler: xg.GrammarCompiler) -> None:
    with pytest.raises(xg.GrammarSyntaxError, match="line 1"):
        compiler.compile_grammar('root ::= "a')
    with pytest.raises(xg.GrammarSyntaxError):
        compiler.compile_grammar('root ::= undefined_rule')
    with pytest.raises(ValueError):
        compiler.compile_grammar('start ::= "a"')
    with pytest.raises(TypeError):
        compiler.compile_grammar(b'root ::= "a"')  # type: ignore[arg-type]


def test_async_compile_shares_futures(compiler: xg.GrammarCompiler) -> None:
    text = 'root ::= "async" [0-9]*'
    f1 = compiler.compile_grammar_async(text)
    f2 = compiler.compile_grammar_async(text)
    g1, g2 = f1.result(), f2.result()
    assert g1 is g2
    assert compiler.compile_grammar(text) is g1  # cached
    bad = compiler.compile_grammar_async('root ::= "')
    with pytest.raises(xg.GrammarSyntaxError):
        bad.result()


def test_cache_limit_evicts() -> None:
    info = xg.TokenizerInfo(VOCAB, xg.VocabType.RAW, stop_token_ids=[STOP])
    compiler = xg.GrammarCompiler(info, cache_limit_bytes=1)
    compiler.compile_grammar('root ::= "a"')
    assert compiler.cache_size_bytes == 0
    unlimited = xg.GrammarCompiler(info)
    unlimited.compile_grammar('root ::= "a"')
    assert unlimited.cache_size_bytes > 0
    unlimited.clear_cache()
    assert unlimited.cache_size_bytes == 0


def test_choice(compiler: xg.GrammarCompiler) -> None:
    g = compiler.compile_choice(["ab", "ba", 'a"b\\'])
    for text, ok in [("ab", True), ("ba", True), ('a"b\\', True), ("a", False), ("abc", False)]:
        m = xg.GrammarMatcher(g)
        assert (m.accept_string(text) and m.is_completed()) == ok, text
    with pytest.raises(ValueError):
        compiler.compile_choice([])


def test_matcher_without_stop_tokens_terminates_at_a_dead_end(compiler: xg.GrammarCompiler, info: xg.TokenizerInfo) -> None:
    """With no stop token to end on, a complete output that no token can extend terminates
    (instead of an all-zero mask forever); a complete output that can grow does not."""
    ids = {t: i for i, t in enumerate(VOCAB)}
    m = xg.GrammarMatcher(compiler.compile_grammar('root ::= "ab"'), stop_token_ids=[])
    assert not m.is_terminated()
    assert m.accept_string("ab")
    assert m.is_terminated() and m.is_completed()
    assert allowed_ids(m, info.vocab_size) == set()
    assert not m.accept_token(ids[b"a"])
    m.rollback(1)
    assert not m.is_terminated()
    assert m.accept_token(ids[b"ab"])
    assert m.is_terminated()

    growing = xg.GrammarMatcher(compiler.compile_grammar('root ::= "a"+'), stop_token_ids=[])
    assert growing.accept_token(ids[b"a"])
    assert growing.is_completed() and not growing.is_terminated()
    assert ids[b"a"] in allowed_ids(growing, info.vocab_size)


def test_dead_end_counts_tokens_not_bytes(compiler: xg.GrammarCompiler, info: xg.TokenizerInfo) -> None:
    """A byte the grammar allows but no token spells is no way on: still a dead end."""
    m = xg.GrammarMatcher(compiler.compile_grammar('root ::= "x" | "xq"'), stop_token_ids=[])  # no token has a q
    assert m.accept_string("x")
    assert m.is_terminated()
    assert allowed_ids(m, info.vocab_size) == set()


def test_tokenizer_without_eos_terminates_at_a_dead_end() -> None:
    bare = xg.TokenizerInfo(TEXT_TOKENS, xg.VocabType.RAW, stop_token_ids=[])
    m = xg.GrammarMatcher(xg.GrammarCompiler(bare).compile_grammar('root ::= "{" "}"'))
    assert m.stop_token_ids == []
    assert m.accept_string("{}")
    assert m.is_terminated()


def test_stop_tokens_keep_the_matcher_open_at_a_dead_end(compiler: xg.GrammarCompiler, info: xg.TokenizerInfo) -> None:
    """With a stop token the end is the stop token's to make (no change for the usual case)."""
    m = xg.GrammarMatcher(compiler.compile_grammar('root ::= "ab"'))
    assert m.accept_string("ab")
    assert not m.is_terminated()
    assert allowed_ids(m, info.vocab_size) == {STOP}
    assert m.accept_token(STOP) and m.is_terminated()
