"""compile_lark against Lark's own Earley parser on real grammars: hand-picked strings, random
outputs of the compiled grammar (token walks with a real tokenizer, which Lark must accept),
and one-edit mutations of them (both engines must agree on each)."""

from __future__ import annotations

import random
import re

import pytest

from lark_oracle import lark_accepts, lark_parser, mutations, random_output, xg2_accepts
from xg2_test_support import hf_compiler

TOKENIZER = "llama3.1"

ARITHMETIC = r"""
start: expr
?expr: term (("+" | "-") term)*
?term: factor (("*" | "/") factor)*
?factor: NUMBER | "-" factor | "(" expr ")"
%import common.NUMBER
%import common.WS
%ignore WS
"""

JSON = r"""
?start: value
?value: object
      | array
      | string
      | SIGNED_NUMBER      -> number
      | "true"             -> true
      | "false"            -> false
      | "null"             -> null
array  : "[" [value ("," value)*] "]"
object : "{" [pair ("," pair)*] "}"
pair   : string ":" value
string : ESCAPED_STRING
%import common.ESCAPED_STRING
%import common.SIGNED_NUMBER
%import common.WS
%ignore WS
"""

SQL = r"""
start: select ";"?
select: "SELECT"i columns "FROM"i NAME where? limit?
columns: "*" | NAME ("," NAME)*
where: "WHERE"i condition
condition: comparison (("AND"i | "OR"i) comparison)*
comparison: NAME OP value
OP: "=" | "<>" | "<=" | ">=" | "<" | ">"
value: SIGNED_INT | STRING
STRING: "'" /[^'\n]/* "'"
NAME.2: /[a-z_][a-z0-9_]*/
limit: "LIMIT"i INT
%import common (SIGNED_INT, INT, WS)
%ignore WS
"""

# A config file: %import common with renaming, two %ignore'd terminals, newlines as tokens.
CONFIG = r"""
start: _NL* (line (_NL+ line)* _NL*)?
?line: section | entry
section: "[" CNAME "]"
entry: CNAME "=" value
value: SIGNED_NUMBER | ESCAPED_STRING | list
list: "[" [value ("," value)*] "]"
_NL: NEWLINE
%import common.CNAME
%import common.SIGNED_NUMBER
%import common.ESCAPED_STRING
%import common.NEWLINE
%import common.WS_INLINE -> SPACE
%import common.SH_COMMENT
%ignore SPACE
%ignore SH_COMMENT
"""

# The style of grammar OpenAI's custom tools send (`format: {"type": "grammar", "syntax":
# "lark"}`): literal spacing, no %ignore, regex terminals, bounded repetition.
TOOL_CFG = r"""
start: command (" && " command)*
command: "ls" (" " PATH)?
       | "cat " PATH
       | "grep " (FLAG " ")? PATTERN " " PATH
       | "head -n " COUNT " " PATH
FLAG: "-" /[inv]/~1..3
PATTERN: ESCAPED_STRING
PATH: /[A-Za-z0-9_.\/-]+/
COUNT: /[1-9]/ DIGIT~0..3
%import common.ESCAPED_STRING
%import common.DIGIT
"""

GRAMMARS = {
    "arithmetic": (ARITHMETIC, ["1", "1 + 2*3", " ( 4.5e3 -  -2 ) / 7 ", "1.", ".5"], ["", "1 +", "1 2", "(1", "e5", "1e"]),
    "json": (JSON, ['{"a": [1, true, null]}', '  []  ', '"x\\"y"', '-0.5E+3', '{}'],
             ['{"a" 1}', "[1,]", "tru", '"a\nb"', '{"a":1,}', "01x"]),
    "sql": (SQL, ["SELECT * FROM t;", "select a, b from t where a >= -3 and b = 'x' limit 5",
                  "SeLeCt x FrOm y", "SELECT from FROM t"],
            ["SELECT FROM t", "SELECT * FROM T", "SELECT * FROM t LIMIT", "SELECT a, FROM t", "SELECT * FROM t;;"]),
    "config": (CONFIG, ['a = 1', '# c\n[s]\nx = "y" # z\ny = [1, "a", []]\n', '\n\n', 'a=1 #c'],
               ['a 1\n', '[s]x = 1\n', 'a = [1,]\n', 'a = 1 b = 2', '#c\na = 1 2']),
    "tool_cfg": (TOOL_CFG, ['ls', 'ls /tmp && cat a.txt', 'grep -in "x y" ./src', 'head -n 120 f'],
                 ['ls  /tmp', 'grep -iiii "x" f', 'head -n 0 f', 'cat', 'ls&&ls', 'head -n 12345 f']),
}


@pytest.fixture(scope="module")
def compiler():
    return hf_compiler(TOKENIZER)


@pytest.mark.parametrize("name", sorted(GRAMMARS))
def test_hand_picked_strings_agree_with_lark(compiler, name):
    text, accepted, rejected = GRAMMARS[name]
    grammar = compiler.compile_lark(text)
    parser = lark_parser(text)
    for sample in accepted + rejected:
        expected = sample in accepted
        assert lark_accepts(parser, sample) == expected, f"the oracle itself disagrees on {sample!r}"
        assert xg2_accepts(grammar, sample) == expected, f"{name}: {sample!r}"


@pytest.mark.parametrize("name", sorted(GRAMMARS))
def test_random_outputs_parse_and_mutations_agree(compiler, name):
    text, accepted, rejected = GRAMMARS[name]
    grammar = compiler.compile_lark(text)
    parser = lark_parser(text)
    rng = random.Random(f"lark-{name}")
    alphabet = "".join(sorted(set("".join(accepted + rejected)))) or "a"
    outputs = []
    for _ in range(30):
        output = random_output(grammar, rng, max_tokens=48)
        if output is not None:
            outputs.append(output)
        if len(outputs) == 10:
            break
    assert len(outputs) >= 5, f"too few finished walks: {outputs}"
    for output in outputs:
        assert lark_accepts(parser, output), f"{name}: xg2 generated {output!r}, which Lark rejects"
    disagreements = []
    for sample in [m for output in outputs for m in mutations(output, alphabet, rng, 6)]:
        ours, theirs = xg2_accepts(grammar, sample), lark_accepts(parser, sample)
        if ours != theirs:
            disagreements.append((sample, ours, theirs))
    assert disagreements == []


def test_case_insensitive_literals_match_what_python_re_folds(compiler):
    # Lark compiles "text"i as a Python IGNORECASE regex, which folds i to U+0130/U+0131,
    # k to the Kelvin sign and s to the long s as well as to the other ASCII case.
    letters = "aiksz"
    grammar = compiler.compile_lark("start: " + " | ".join(f'"{c}"i' for c in letters))
    candidates = [chr(c) for c in range(0x3000) if not 0xD800 <= c <= 0xDFFF] + ["\u212a"]
    expected = {ch for ch in candidates if any(re.fullmatch(f"(?i){c}", ch) for c in letters)}
    assert {"\u0130", "\u0131", "\u212a", "\u017f", "Z"} <= expected
    ours = {ch for ch in candidates if (ch.isalpha() or ch in expected) and xg2_accepts(grammar, ch)}
    assert ours == expected


def test_ignore_goes_between_terminals_not_inside_them(compiler):
    text = 'start: "ab" NAME\nNAME: /[a-z]+/\n%ignore " "'
    grammar = compiler.compile_lark(text)
    parser = lark_parser(text)
    for sample, expected in [(" ab  xy ", True), ("abxy", True), ("a b xy", False), ("ab x y", False), ("  ", False)]:
        assert lark_accepts(parser, sample) == expected, sample
        assert xg2_accepts(grammar, sample) == expected, sample


@pytest.mark.parametrize("text, samples", [
    # Lark skips the whole greedy match of an ignored terminal: a comment runs to the end of
    # its line, a whitespace run to the next non-space, even where a shorter skip would parse.
    ('start: NAME "=" NAME\nNAME: /[a-z]+/\n%import common.SH_COMMENT\n%ignore SH_COMMENT\n%ignore " "',
     [("a=b#c", True), ("a #c", False), ("a#c=b", False), ("a = b #x", True)]),
    ('start: "a" " b"\n%import common.WS\n%ignore WS',
     [("a b", True), (" a b ", True), ("a  b", False), ("a\n b", False)]),
])
def test_ignored_text_is_skipped_greedily(compiler, text, samples):
    grammar = compiler.compile_lark(text)
    parser = lark_parser(text)
    for sample, expected in samples:
        assert lark_accepts(parser, sample) == expected, sample
        assert xg2_accepts(grammar, sample) == expected, sample


COMMON = ["DIGIT", "HEXDIGIT", "INT", "SIGNED_INT", "DECIMAL", "FLOAT", "SIGNED_FLOAT", "NUMBER",
          "SIGNED_NUMBER", "ESCAPED_STRING", "LCASE_LETTER", "UCASE_LETTER", "LETTER", "WORD", "CNAME",
          "WS_INLINE", "WS", "CR", "LF", "NEWLINE", "SH_COMMENT", "CPP_COMMENT", "C_COMMENT", "SQL_COMMENT"]
COMMON_SAMPLES = ["1", "f", "G", "-1", "+1.5", "1e5", "1.e3", ".5", "1.", "e5", "1e", "--1", "0x1", "-.5E-2",
                  '"a"', '"a\\"b"', '"a\nb"', '"\\\\"', '"a', '"a"b"', "abc", "_a1", "1a", "A_b", "a", "Z",
                  " ", "\t \t", " \n", "\r\n\n", "\n\r", "\r", "# x", "// x", "/* a */", "/* a */ */", "/**/",
                  "/* * */", "/* **/", "/*/", "-- x", "--", "#"]


@pytest.mark.parametrize("name", COMMON)
def test_common_terminals_match_larks_own_library(compiler, name):
    text = f"start: {name}\n%import common.{name}"
    grammar = compiler.compile_lark(text)
    parser = lark_parser(text)
    disagree = [s for s in COMMON_SAMPLES if xg2_accepts(grammar, s) != lark_accepts(parser, s)]
    assert disagree == []
