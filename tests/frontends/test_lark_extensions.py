"""The llguidance extensions compile_lark enforces (%json, special tokens, token ids,
max_tokens, {m,n} repetition, %llguidance {}), and the errors for everything it refuses: a
typed exception naming the construct with its line and column."""

from __future__ import annotations

import json

import numpy as np
import pytest

import xg2_plugin as xg
from lark_oracle import xg2_accepts
from xg2_test_support import encode_continuation, hf_compiler

TOKENIZER = "llama3.1"
EOT = 128009  # <|eot_id|> in llama3.1


@pytest.fixture(scope="module")
def compiler():
    return hf_compiler(TOKENIZER)


def test_inline_json_schema_is_a_nonterminal(compiler):
    schema = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
    grammar = compiler.compile_lark('start: TEXT | "call " fun\nTEXT: /[^{c][^\\n]*/\nfun: %json ' + json.dumps(schema, indent=2))
    assert xg2_accepts(grammar, 'call {"city": "Oslo"}')
    assert xg2_accepts(grammar, 'call {"city": "Oslo", "extra": 1}')  # JSON Schema: extra members allowed
    assert xg2_accepts(grammar, "no call")
    assert not xg2_accepts(grammar, 'call {"town": "Oslo"}')
    assert not xg2_accepts(grammar, 'call {"city": 3}')


def test_special_tokens_and_token_ids_are_whole_tokens(compiler):
    for text in ['start: "done" <|eot_id|>', f'start: "done" <[{EOT}]>']:
        grammar = compiler.compile_lark(text)
        matcher = xg.GrammarMatcher(grammar)
        for token in encode_continuation(TOKENIZER, "done"):
            assert matcher.accept_token(token)
        bitmask = np.zeros(xg.get_bitmask_shape(1, grammar.tokenizer_info.vocab_size), dtype=np.int32)
        matcher.fill_next_token_bitmask(bitmask)
        assert (bitmask[0][EOT // 32] >> (EOT % 32)) & 1
        assert matcher.accept_token(EOT)
        assert not xg2_accepts(grammar, "done<|eot_id|>")  # the text is not the token


def test_max_tokens_bounds_a_rule(compiler):
    # (A budgeted rule at the very end of the grammar is not bounded by the engine today; see
    # the lead's note. Here the rule is followed by a terminal.)
    grammar = compiler.compile_lark('start: "a:" gen "."\ngen[max_tokens=3]: /[a-z ]+/')
    matcher = xg.GrammarMatcher(grammar)
    ids = encode_continuation(TOKENIZER, "a: one two three four five")
    accepted = [matcher.accept_token(token) for token in ids[:6]]
    assert accepted == [True] * 5 + [False]  # "a", ":", then three tokens inside gen


def test_brace_repetition_and_header(compiler):
    grammar = compiler.compile_lark('%llguidance {}\nstart: "x"{2,3} "y"{,1} DIGITS\nDIGITS: /[0-9]/{2}')
    assert xg2_accepts(grammar, "xx12") and xg2_accepts(grammar, "xxxy00")
    assert not xg2_accepts(grammar, "x12") and not xg2_accepts(grammar, "xx1")


@pytest.mark.parametrize("text, error, where, what", [
    ('start: a', xg.GrammarSyntaxError, "line 1, column 8", "undefined rule 'a'"),
    ('start: "a"\n\nstart: "b"', xg.GrammarSyntaxError, "line 3, column 1", "defined more than once"),
    ('start: A\nA: /a*/', xg.GrammarSyntaxError, "line 2, column 1", "empty string"),
    ('start: "a"\n  | /b$/', xg.RegexError, "line 2, column 5", "anchor $"),
    ('start: /a/i', xg.RegexError, "line 1, column 8", "i flag"),
    ('start{x}: "a"', xg.GrammarSyntaxError, "line 1, column 6", "templates"),
    ('start: x{"a"}', xg.GrammarSyntaxError, "line 1, column 9", "templates"),
    ('start: @sub', xg.GrammarSyntaxError, "line 1, column 8", "@name"),
    ('start: "a"\n%declare B', xg.GrammarSyntaxError, "line 2, column 1", "%declare"),
    ('start: "a"\n%override start: "b"', xg.GrammarSyntaxError, "line 2, column 1", "%override"),
    ('start: "a"\n%import .other.X', xg.GrammarSyntaxError, "line 2, column 9", "only the common library"),
    ('start: X\n%import common.NOPE -> X', xg.GrammarSyntaxError, "line 2, column 9", "common.NOPE"),
    ('start: A\nA: b\nb: "x"', xg.GrammarSyntaxError, "line 2, column 4", "cannot use the rule 'b'"),
    ('start: A\nA: "x" A', xg.GrammarSyntaxError, "line 2, column 1", "recursive"),
    ("start: 'a'", xg.GrammarSyntaxError, "line 1, column 8", "single-quoted"),
    ('start: "a"+ ~ 2', xg.GrammarSyntaxError, "line 1, column 13", "misplaced operator"),
    ('start: "a"~3..2', xg.GrammarSyntaxError, "line 1, column 11", "above its maximum"),
    ('start: "abc', xg.GrammarSyntaxError, "line 1, column 8", "unterminated string"),
    ('start: "é"i', xg.GrammarSyntaxError, "line 1, column 8", "ASCII"),
    ('start: "a"\nFooBar: "x"', xg.GrammarSyntaxError, "line 2, column 1", "mixes cases"),
    ('start[lazy]: "a"', xg.GrammarSyntaxError, "line 1, column 7", "attribute 'lazy'"),
    ('start: <|not_a_token|>', xg.GrammarSyntaxError, "line 1, column 8", "not a special token"),
    ('start: <[99999999]>', xg.GrammarSyntaxError, "line 1, column 8", "outside the vocabulary"),
    ('start: A\nA: "x" %json {}', xg.GrammarSyntaxError, "line 2, column 8", "inside a terminal"),
    ('start: %json {"type": "strin"}', xg.SchemaError, "line 1, column 8", "%json"),
    ('start: "a"\n%ignore /a+?b|c+/', xg.GrammarSyntaxError, "line 2, column 9", "%ignore"),
    ('start: "a"\n%llguidance {"no_forcing": true}', xg.GrammarSyntaxError, "line 2, column 13", "%llguidance"),
    ('a: "x"', xg.GrammarSyntaxError, "", "no 'start' rule"),
])
def test_refused_constructs_name_their_place(compiler, text, error, where, what):
    with pytest.raises(error) as raised:
        compiler.compile_lark(text)
    message = str(raised.value)
    assert where in message and what in message, message


def test_named_grammars_are_refused_as_an_argument(compiler):
    with pytest.raises(xg.InvalidArgumentError, match="named_grammars"):
        compiler.compile_lark('start: "a"', named_grammars={"sub": 'start: "b"'})
    assert xg2_accepts(compiler.compile_lark('start: "a"', named_grammars={}), "a")


def test_hostile_sizes_are_typed_errors(compiler):
    chain = "start: T0\n" + "".join(f'T{i}: T{i + 1} "x"\n' for i in range(3000)) + 'T3000: "y"'
    with pytest.raises(xg.ResourceLimitError, match="terminals refer to terminals more than 1000 deep"):
        compiler.compile_lark(chain)
    with pytest.raises(xg.GrammarSyntaxError, match="nested deeper than 200"):
        compiler.compile_lark("start: " + "(" * 5000 + '"a"' + ")" * 5000)
    with pytest.raises(TypeError, match="lark_string must be a str"):
        compiler.compile_lark(b'start: "a"')
