"""EBNF frontend: parsing (docs/ebnf.md), printing back, and error reporting.

Goes through the debugging bindings `_ebnf_roundtrip` (ParseEbnf then PrintEbnf) and
`_ebnf_rule_names`. Printed output is canonical: classes are sorted and merged, escapes are
normalised, and printing it again gives the same text.
"""

import os
import pathlib
import random

import pytest

from xg2_plugin import _native

REPO_ROOT = pathlib.Path(__file__).resolve().parents[2]
DATA_DIR = pathlib.Path(os.environ.get("XG2_DATA_DIR", REPO_ROOT.parent / "shared" / "data"))
GBNF_FILES = sorted((DATA_DIR / "grammars").glob("*.gbnf"))

SyntaxError_ = _native.GrammarSyntaxError
LimitError = _native.ResourceLimitError


def roundtrip(text, root_rule_name="root"):
    """Parses and prints; also checks that printing is a fixpoint."""
    printed = _native._ebnf_roundtrip(text, root_rule_name)
    assert _native._ebnf_roundtrip(printed, root_rule_name) == printed
    return printed


def body(text):
    """The printed body of the single rule `root` of `text`."""
    printed = roundtrip(text)
    assert printed.startswith("root ::= ") and printed.count("\n") == 1, printed
    return printed[len("root ::= "):-1]


def expect_error(text, line, column, fragment, error=SyntaxError_):
    with pytest.raises(error) as info:
        _native._ebnf_roundtrip(text)
    message = str(info.value)
    assert f"line {line}, column {column}" in message, message
    assert fragment in message, message


# --- the grammars shipped with the data set ---------------------------------------------


@pytest.mark.skipif(not GBNF_FILES, reason=f"no .gbnf files under {DATA_DIR}")
@pytest.mark.parametrize("path", GBNF_FILES, ids=lambda p: p.name)
def test_data_grammar_parses_and_roundtrips(path):
    text = path.read_text(encoding="utf-8")
    printed = roundtrip(text)
    names = _native._ebnf_rule_names(text)
    assert "root" in names
    assert _native._ebnf_rule_names(printed) == names


def test_data_grammar_details():
    if not GBNF_FILES:
        pytest.skip("no data grammars")
    by_name = {p.name: p.read_text(encoding="utf-8") for p in GBNF_FILES}
    if "list.gbnf" in by_name:
        assert '[^\\n-\\r\\u0085\\u2028-\\u2029]+' in roundtrip(by_name["list.gbnf"])
    if "japanese.gbnf" in by_name:
        assert "[\\u3041-\\u309F]" in roundtrip(by_name["japanese.gbnf"])
    if "english.gbnf" in by_name:
        assert "punctuation ::= [!-/:-@\\[-`{-~]" in roundtrip(by_name["english.gbnf"])


# --- literals ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "source, printed",
    [
        ('"abc"', '"abc"'),
        ('""', '""'),
        ("'abc'", '"abc"'),
        ("'say \"hi\"'", '"say \\"hi\\""'),
        ('"it\'s"', '"it\'s"'),
        ('"\\n\\r\\t\\\\\\"\\\'"', '"\\n\\r\\t\\\\\\"\'"'),
        ('"\\[\\]\\-\\^"', '"[]-^"'),
        ('"\\x41\\x7f\\x00"', '"A\\x7F\\x00"'),
        ('"\\xe9"', '"\\u00E9"'),  # \xHH is a code point, encoded as UTF-8
        ('"\\u00e9\\U0001F600"', '"\\u00E9\\U0001F600"'),
        ('"é😀"', '"\\u00E9\\U0001F600"'),
        ('"#not a comment"', '"#not a comment"'),
        ('"a" "b"', '"a" "b"'),
    ],
)
def test_literal(source, printed):
    assert body(f"root ::= {source}") == printed


# --- character classes and `.` ----------------------------------------------------------


@pytest.mark.parametrize(
    "source, printed",
    [
        ("[abc]", "[a-c]"),
        ("[a-z0-9_]", "[0-9_a-z]"),
        ("[cba]", "[a-c]"),
        ("[a-cb-e]", "[a-e]"),
        ('[^"\\\\]', '[^"\\\\]'),
        ("[^\\n]", "[^\\n]"),
        ("[-a]", "[\\-a]"),
        ("[a-]", "[\\-a]"),
        ("[a\\-z]", "[\\-az]"),
        ("[a^]", "[\\^a]"),
        ("[\\^]", "[\\^]"),
        ("[[]", "[\\[]"),
        ("[\\]]", "[\\]]"),
        ("[\\x00-\\x1f]", "[\\x00-\\x1F]"),
        ("[\\u2028\\u2029]", "[\\u2028-\\u2029]"),
        ("[ぁ-ゟ]", "[\\u3041-\\u309F]"),
        ("[\\U0001F600-\\U0001F64F]", "[\\U0001F600-\\U0001F64F]"),
        (".", "."),
        ("[\\x00-\\U0010FFFF]", "."),
        ("[^a]", "[^a]"),
        ("[!-/]", "[!-/]"),
    ],
)
def test_char_class(source, printed):
    assert body(f"root ::= {source}") == printed


def test_negated_class_excludes_surrogates():
    # Everything but 'a' and the surrogates: printed as the short negated form.
    assert body("root ::= [^a]") == "[^a]"
    assert body("root ::= [\\x00-\\x60b-\\U0010FFFF]") == "[^a]"
    # A range over the surrogate block keeps only encodable code points.
    assert body("root ::= [\\uD000-\\uE000]") == "[\\uD000-\\uD7FF\\uE000]"


# --- structure: sequences, choices, groups, repetition -----------------------------------


@pytest.mark.parametrize(
    "source, printed",
    [
        ('"a" ("b" | "c") "d"', '"a" ("b" | "c") "d"'),
        ('"a" | "b" "c" | ""', '"a" | "b" "c" | ""'),
        ('(("a"))', '"a"'),
        ('("a" "b")', '"a" "b"'),
        ('"a" ("b" "c")', '"a" ("b" "c")'),
        ('()', '""'),
        ('"a"?', '"a"?'),
        ('"a"*', '"a"*'),
        ('"a"+', '"a"+'),
        ('"a"{3}', '"a"{3}'),
        ('"a"{2,}', '"a"{2,}'),
        ('"a"{2,5}', '"a"{2,5}'),
        ('"a"{,4}', '"a"{0,4}'),
        ('"a"{ 2 , 5 }', '"a"{2,5}'),
        ('"a" {2}', '"a"{2}'),
        ('"a"{0,1}', '"a"?'),
        ('"a"{0,}', '"a"*'),
        ('"a"{1,}', '"a"+'),
        ('"a"{1}', '"a"'),
        ('"a"{0}', '""'),
        ('"a"{1000000}', '"a"{1000000}'),
        ('"a"?*', '"a"?*'),
        ('("a"?)*', '"a"?*'),
        ('"a"{2}{3,}', '"a"{2}{3,}'),
        ('("a" "b")+', '("a" "b")+'),
        ('("a" | "b"){2,3}', '("a" | "b"){2,3}'),
        ('[0-9]{0,15}', '[0-9]{0,15}'),
    ],
)
def test_structure(source, printed):
    assert body(f"root ::= {source}") == printed


def test_empty_alternatives():
    printed = roundtrip('root ::= ws\nws ::= | " " | "\\n"')
    assert printed == 'root ::= ws\nws ::= "" | " " | "\\n"\n'
    assert body('root ::= "a" |') == '"a" | ""'
    assert body("root ::=") == '""'


# --- rules ------------------------------------------------------------------------------


def test_rule_bodies_span_lines_and_end_at_next_definition():
    text = """
    # leading comment
    root ::=
        "a"      # trailing comment
        | b-c    # names may contain dashes
        rule.x
    b-c ::= "b" rule.x ::= "x"
    rule.x
      ::= "y"
    """
    with pytest.raises(SyntaxError_, match="already defined"):
        _native._ebnf_roundtrip(text)
    text = text.replace("rule.x\n      ::= \"y\"", "")
    assert roundtrip(text) == 'root ::= "a" | b-c rule.x\nb-c ::= "b"\nrule.x ::= "x"\n'


def test_forward_references_and_recursion():
    text = 'root ::= expr\nexpr ::= expr "+" term | term\nterm ::= [0-9]+ | "(" expr ")"'
    assert _native._ebnf_rule_names(text) == ["root", "expr", "term"]
    assert roundtrip(text) == text + "\n"


def test_custom_root_rule_name():
    assert _native._ebnf_rule_names('main ::= "x"', root_rule_name="main") == ["main"]
    assert _native._ebnf_roundtrip('a ::= b\nb ::= "x"', "b") == 'a ::= b\nb ::= "x"\n'


def test_identifier_followed_by_paren_is_a_sequence():
    # c.gbnf writes `factor(("*" | "/") factor)*`, which llama.cpp reads as a sequence.
    assert roundtrip('root ::= a("b")\na ::= "x"') == 'root ::= a "b"\na ::= "x"\n'


def test_crlf_line_endings():
    assert roundtrip('root ::= a\r\na ::= "x"\r\n') == 'root ::= a\na ::= "x"\n'


# --- lookahead --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "source, printed",
    [
        ('root ::= "a" (= "b")', 'root ::= "a" (= "b")\n'),
        ('root ::= "a" (="b" | [0-9])', 'root ::= "a" (= "b" | [0-9])\n'),
        ('root ::= "a" | "b" ( = "c" )', 'root ::= "a" | "b" (= "c")\n'),
        ('root ::= x\nx ::= "a" (= "b")\ny ::= "c"', 'root ::= x\nx ::= "a" (= "b")\ny ::= "c"\n'),
    ],
)
def test_lookahead(source, printed):
    assert roundtrip(source) == printed


# --- errors -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, line, column, fragment",
    [
        ('root ::= "abc', 1, 10, "unterminated string literal"),
        ('root ::= "abc\n"', 1, 10, "unterminated string literal"),
        ("root ::= 'abc", 1, 10, "unterminated string literal"),
        ('root ::= "a\\q"', 1, 12, "invalid escape sequence '\\q'"),
        ('root ::= "a\\', 1, 12, "unterminated escape"),
        ('root ::= "\\x4"', 1, 11, "needs exactly 2 hex digits"),
        ('root ::= "\\u12g4"', 1, 11, "needs exactly 4 hex digits"),
        ('root ::= "\\U0011000"', 1, 11, "needs exactly 8 hex digits"),
        ('root ::= "\\U00110000"', 1, 11, "beyond U+10FFFF"),
        ('root ::= "\\uD800"', 1, 11, "surrogate"),
        ("root ::= [\\q]", 1, 11, "invalid escape sequence '\\q'"),
        ("root ::= foo", 1, 10, "undefined rule 'foo'"),
        ('root ::= "a"\n  x  ::= "b" missing', 2, 14, "undefined rule 'missing'"),
        ('root ::= "a"\nroot ::= "b"', 2, 1, "rule 'root' is already defined at line 1, column 1"),
        ('root ::= "a"\nroot ::= "b', 2, 1, "already defined"),  # reported before the body
        ('a ::= "x"', 1, 10, "no root rule 'root'"),
        ("", 1, 1, "no root rule 'root'"),
        ('root "a"', 1, 6, "expected '::=' after rule name 'root'"),
        ('root ::= "a"\nnext "b"', 2, 1, "undefined rule 'next'"),
        ('root : "a"', 1, 6, "expected '::='"),
        ('"a" ::= "b"', 1, 1, "expected a rule name"),
        ('root ::= "a"{3,1}', 1, 13, "lower bound 3 exceeds upper bound 1"),
        ('root ::= "a"{}', 1, 14, "expected a number"),
        ('root ::= "a"{,}', 1, 15, "expected a number"),
        ('root ::= "a"{x}', 1, 14, "expected a number"),
        ('root ::= "a"{2', 1, 15, "expected '}'"),
        ('root ::= "a"{2,3', 1, 17, "expected '}'"),
        ('root ::= "a"{-1}', 1, 14, "expected a number"),
        ("root ::= *", 1, 10, "'*' does not follow an expression"),
        ('root ::= "a" | +', 1, 16, "'+' does not follow an expression"),
        ("root ::= {2}", 1, 10, "does not follow an expression"),
        ("root ::= []", 1, 10, "empty character class"),
        ("root ::= [^]", 1, 10, "empty character class"),
        ("root ::= [abc", 1, 10, "unterminated character class"),
        ("root ::= [a-\n]", 1, 10, "unterminated character class"),
        ("root ::= [z-a]", 1, 11, "reversed"),
        ("root ::= [^\\x00-\\U0010FFFF]", 1, 10, "matches no character"),
        ('root ::= ("a"', 1, 14, "expected ')' to close the '(' at line 1, column 10"),
        ('root ::= "a")', 1, 13, "expected the end of rule 'root', found ')'"),
        ('root ::= "a" (= "b") "c"', 1, 22, "must be the last element of a rule body"),
        ('root ::= ("a" (= "b"))', 1, 15, "allowed only at the end of a rule body"),
        ('root ::= (= "b") | "a"', 1, 18, "must be the last element"),
        ('root ::= "a" = "b"', 1, 14, "expected the end of rule 'root', found '='"),
        ('root ::= TagDispatch("a")', 1, 22, "expected a (\"tag\", rule) pair or an option of TagDispatch"),
        ("root ::= 5", 1, 10, "unexpected character '5'"),
        ("root ::= é", 1, 10, "unexpected character U+00E9"),
        ('root ::= "é" ~', 1, 14, "unexpected character '~'"),  # columns count characters
        ("root ::= ::=", 1, 10, "expected the end of rule 'root', found '::='"),
    ],
)
def test_error_positions(text, line, column, fragment):
    expect_error(text, line, column, fragment)


@pytest.mark.parametrize(
    "raw, fragment",
    [
        (b'root ::= "\xff"', "0xFF"),
        (b'root ::= "\xc0\x80"', "0xC0"),  # overlong
        (b'root ::= "\xe2\x82"', "0xE2"),  # truncated
        (b'root ::= "\xed\xa0\x80"', "0xED"),  # encoded surrogate
        (b'root ::= "\xf4\x90\x80\x80"', "0xF4"),  # beyond U+10FFFF
        (b"root ::= [\x80]", "0x80"),
    ],
)
def test_invalid_utf8_is_rejected_with_position(raw, fragment):
    # pybind11 passes bytes through unchanged, which is the only way to hand the parser
    # text that is not valid UTF-8.
    with pytest.raises(SyntaxError_) as info:
        _native._ebnf_roundtrip(raw)
    message = str(info.value)
    assert "line 1, column 11" in message and "invalid UTF-8" in message and fragment in message


def test_errors_are_value_errors():
    with pytest.raises(ValueError):
        _native._ebnf_roundtrip("root ::= undefined")


# --- limits -----------------------------------------------------------------------------


def test_repetition_bound_limit():
    expect_error('root ::= "a"{1000001}', 1, 14, "exceeds the limit", LimitError)
    expect_error('root ::= "a"{0,99999999999999999999999}', 1, 16, "exceeds the limit", LimitError)


def test_nesting_depth_limit():
    stacked = "root ::= " + "(" * 1000 + '"a" "b"' + ")*" * 1000
    assert roundtrip(stacked) == 'root ::= ("a" "b")' + "*" * 1000 + "\n"
    nested = "root ::= " + '("x" ' * 1000 + '"a"' + ")" * 1000
    assert roundtrip(nested).startswith('root ::= "x" ("x" ("x" (')
    too_deep = "root ::= " + "(" * 1001 + '"a"' + ")" * 1001
    expect_error(too_deep, 1, 1010, "nest deeper than the limit", LimitError)
    # Far beyond the limit must fail the same way, not overflow the stack.
    with pytest.raises(LimitError):
        _native._ebnf_roundtrip("root ::= " + "(" * 200000)


def test_expression_height_limit():
    assert roundtrip('root ::= "a"' + "?" * 1999)
    with pytest.raises(LimitError, match="nests deeper"):
        _native._ebnf_roundtrip('root ::= "a"' + "?" * 5000)


def test_large_grammar_is_fast_enough():
    rules = "\n".join(f'r{i} ::= "x{i}" r{i + 1} | [a-z]{{1,3}}' for i in range(20000))
    text = "root ::= r0\n" + rules + '\nr20000 ::= "end"'
    assert len(_native._ebnf_rule_names(text)) == 20002


# --- robustness -------------------------------------------------------------------------

_FRAGMENTS = [
    "root", " ::= ", "::=", "a", "b-c", '"', "'", "\\", "\\x", "\\u", "[", "]", "^", "-",
    "(", ")", "(=", "|", "?", "*", "+", "{", "}", ",", "1", "0", ".", "#", "\n", " ", "é",
    '"x"', "[a-z]", "=", ":", "TagDispatch",
]


def test_fuzz_never_crashes_and_prints_a_fixpoint():
    rng = random.Random(20240611)
    for _ in range(3000):
        if rng.random() < 0.4:
            text = bytes(rng.randrange(256) for _ in range(rng.randrange(50)))
        else:
            text = "root ::= " + "".join(rng.choice(_FRAGMENTS) for _ in range(rng.randrange(25)))
        try:
            roundtrip(text)
        except (SyntaxError_, LimitError) as error:
            assert "line " in str(error) and ", column " in str(error)
