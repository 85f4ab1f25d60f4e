"""TagDispatch (docs/ebnf.md): EBNF syntax, string-level semantics (compared with xgrammar
0.2.8 on the same grammars), token literals, and token-level masks with a real tokenizer."""

from __future__ import annotations

import numpy as np
import pytest

import xg2_plugin as xg
from xg2_plugin import _native
from xg2_plugin.bitmask import bitmask_to_bool_array

from xg2_test_support import hf_compiler, hf_tokenizer, hf_tokenizer_info


def accepts(grammar: str, text) -> bool:
    return _native.ebnf_accepts(grammar, text.encode() if isinstance(text, str) else text)


# (grammar, {text: accepted}); the expectations are xgrammar 0.2.8's answers where it has the
# same options (it has no stop_eos / stop_str).
CASES = [
    (
        'root ::= TagDispatch(("tag1", rule1), ("tag2", rule2))\nrule1 ::= "abcd"\nrule2 ::= "efg"',
        {"": True, "x": True, "tag1abcd": True, "tag1abcdqqtag2efg": True, "tag1abc": False,
         "xtag1abcdy": True, "ttag1abd": False},
    ),
    (
        'root ::= TagDispatch(("tag1", rule1), loop_after_dispatch=false)\nrule1 ::= "abcd"',
        {"": True, "tag1abcd": True, "tag1abcdxx": False, "tag1abcdtag1abcd": False},
    ),
    (
        'root ::= TagDispatch(("tag1", rule1), excludes=("bad", "END"))\nrule1 ::= "abcd"',
        {"ba": True, "bad": False, "xbadx": False, "tag1abcdba": True, "tag1abcdbad": False,
         "EN": True, "ENDx": False},
    ),
    (
        'root ::= TagDispatch(("tag1", rule1), excludes=("END")) "END" "!"\nrule1 ::= "abcd"',
        {"END!": True, "xxEND!": True, "tag1abcdEND!": True, "EN": False},
    ),
    (  # a completed tag that prefixes a longer one: dispatch, or keep spelling the longer tag
        'root ::= TagDispatch(("a", rule1), ("ab", rule1))\nrule1 ::= "X"',
        {"aX": True, "abX": True, "aXbX": True, "aY": False, "aaX": False, "a": False},
    ),
    (  # same end position: the longest tag wins
        'root ::= TagDispatch(("ab", rule1), ("b", rule2))\nrule1 ::= "X"\nrule2 ::= "Y"',
        {"abX": True, "abY": False},
    ),
    (  # same end position: an excluded string beats a tag
        'root ::= TagDispatch(("ab", rule1), excludes=("b"))\nrule1 ::= "X"',
        {"abX": False, "a": True, "ab": False},
    ),
    (  # free text is valid UTF-8 only
        'root ::= TagDispatch(("é", rule1))\nrule1 ::= "X"',
        {"éX": True, "ÿ": True, "aé": False, "aéX": True, b"\xff": False, b"\xc3": False},
    ),
    (
        'root ::= TagDispatch(("<f>", r), stop_eos=false, stop_str=("</s>",))\nr ::= "1"',
        {"": False, "x</s>": True, "<f>1</s>": True, "<f>1": False, "<f>2</s>": False,
         "</s>x": False},
    ),
    (  # a stop string beats a tag ending at the same position
        'root ::= TagDispatch(("<s>", r), stop_eos=false, stop_str="s>")\nr ::= "1"',
        {"<s>": True, "<s>1": False},
    ),
]


@pytest.mark.parametrize("grammar,expected", CASES)
def test_string_semantics(grammar, expected):
    for text, want in expected.items():
        assert accepts(grammar, text) == want, (grammar, text)


def test_roundtrip_prints_parameters_and_lifts_nested_dispatch():
    source = 'root ::= "x" TagDispatch(("<a>", r), stop_str=("e",), excludes="q")\nr ::= "1"'
    printed = _native._ebnf_roundtrip(source)
    assert "root ::= \"x\" root_tag_dispatch_1" in printed
    assert ('root_tag_dispatch_1 ::= TagDispatch(("<a>", r), stop_eos=true, stop_str=("e",), '
            'loop_after_dispatch=true, excludes=("q",))') in printed
    assert _native._ebnf_roundtrip(printed) == printed


@pytest.mark.parametrize(
    "grammar,message",
    [
        ('root ::= TagDispatch(("a", nope))', "undefined rule 'nope'"),
        ('root ::= TagDispatch(("", r))\nr ::= "x"', "must not be empty"),
        ('root ::= TagDispatch(foo=true)', "unknown TagDispatch option 'foo'"),
        ('root ::= TagDispatch(stop_eos=maybe)', "true or false"),
        ('root ::= TagDispatch(stop_eos=true, stop_eos=false)', "given twice"),
        ('root ::= TagDispatch(("a", r), ("a", r))\nr ::= "x"', "lists the tag 'a' twice"),
        ('root ::= TagDispatch(("a", r), stop_eos=false)\nr ::= "x"', "can never end"),
        ('root ::= "a" (= TagDispatch())', "lookahead"),
        ('root ::= Token()', "at least one token id"),
        ('root ::= Token(99999999)', "exceeds the limit"),
    ],
)
def test_errors(grammar, message):
    with pytest.raises(xg.GrammarSyntaxError, match=message):
        _native.ebnf_accepts(grammar, b"")


def test_token_literal_only_matches_its_token():
    info = hf_tokenizer_info("gpt-oss")
    compiler = hf_compiler("gpt-oss")
    channel, message, call = 200005, 200008, 200012
    grammar = compiler.compile_grammar(
        f'root ::= TagDispatch((Token({channel}) "commentary" Token({message}), call))\n'
        f'call ::= "{{}}" Token({call})'
    )
    matcher = xg.GrammarMatcher(grammar)
    # The special token starts the tag; its text spelled by ordinary tokens is only free text.
    ids = hf_tokenizer("gpt-oss").encode("hi <|channel|>commentary<|message|>{}<|call|>").ids
    assert channel in ids and call in ids
    for token in ids:
        assert matcher.accept_token(token), token
    assert matcher.is_completed()
    # <|call|> is a stop token of the tokenizer and a terminal here: accepted as the terminal
    # that completes the grammar, it terminates the matcher; rollback undoes that.
    assert call not in matcher.stop_token_ids
    assert matcher.is_terminated()
    matcher.rollback(1)
    assert not matcher.is_terminated() and not matcher.is_completed()
    assert matcher.accept_token(call) and matcher.is_terminated()

    matcher = xg.GrammarMatcher(grammar)
    assert not matcher.accept_token(message)  # a special token alone is never free text
    text_ids = hf_tokenizer("gpt-oss").encode("<|channel|>", add_special_tokens=False).ids
    assert text_ids == [channel]
    assert matcher.accept_string(b"<|channel|>commentary<|message|>")  # ordinary text
    assert matcher.accept_string(b"{}")  # ... so no dispatch happened: "{}" is text too
    assert not matcher.accept_token(call)
    matcher.reset()
    assert matcher.accept_string(_native._token_literal_bytes(channel) + b"commentary"
                                 + _native._token_literal_bytes(message) + b"{}")


def test_token_literal_spelled_with_space_and_comment_before_its_arguments():
    # The compiler looks for token literals only in a grammar whose text can name one
    # (`Token`, then spaces or comments, then `(`); the parser accepts these spellings.
    compiler = hf_compiler("gpt-oss")
    message = 200008
    for spelling in (f"Token ({message})", f"Token # the message token\n  ({message})"):
        grammar = compiler.compile_grammar(f'root ::= "x" {spelling}')
        matcher = xg.GrammarMatcher(grammar)
        assert matcher.accept_string(b"x")
        assert matcher.accept_token(message), spelling
        assert matcher.is_completed()


def test_the_word_token_in_a_literal_is_text():
    compiler = hf_compiler("gpt-oss")
    grammar = compiler.compile_grammar('root ::= "\\"serviceAccountToken\\"" | "Token(1)"')
    for text in (b'"serviceAccountToken"', b"Token(1)"):
        matcher = xg.GrammarMatcher(grammar)
        assert matcher.accept_string(text) and matcher.is_completed()


def test_dispatch_masks_with_real_tokenizer():
    info = hf_tokenizer_info("llama3.1")
    compiler = hf_compiler("llama3.1")
    grammar = compiler.compile_grammar(
        'root ::= TagDispatch(("<function=", call), excludes=("<|python_tag|>",))\n'
        'call ::= ("get_weather" | "search") ">" "{}" "</function>"'
    )
    matcher = xg.GrammarMatcher(grammar)
    bitmask = xg.allocate_token_bitmask(1, info.vocab_size)
    tok = hf_tokenizer("llama3.1")
    ids = tok.encode("Sure. <function=get_weather>{}</function>", add_special_tokens=False).ids
    dense_checked = 0
    for step, token in enumerate(ids):
        text_so_far = b"".join(info.decoded_vocab[t] for t in ids[:step])
        if step in (0, len(ids) - 1) or text_so_far.endswith(b"<function="):
            matcher.fill_next_token_bitmask(bitmask)
            allowed = bitmask_to_bool_array(bitmask[0], info.vocab_size)
            assert allowed[token]
            dense_checked += 1
            if text_so_far.endswith(b"<function="):
                names = [t for t in np.nonzero(allowed)[0]]
                assert all(info.decoded_vocab[t] and (b"get_weather".startswith(info.decoded_vocab[t])
                           or b"search".startswith(info.decoded_vocab[t])
                           or info.decoded_vocab[t].startswith((b"get_weather", b"search")))
                           for t in names)
        assert matcher.accept_token(token)
    assert dense_checked >= 2
    assert matcher.is_completed()
    assert not xg.GrammarMatcher(grammar).accept_string("<function=delete>{}</function>")
    assert not xg.GrammarMatcher(grammar).accept_string("x <|python_tag|>")
