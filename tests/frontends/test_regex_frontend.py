"""Regex frontend: RegexToEbnf (exposed as _native._regex_to_ebnf).

Acceptance is checked by running the emitted expression as `root ::= <expr>` through
xg2_plugin.testing.ebnf_accepts (full-match acceptance), and compared with Python's `re` on
the subset where Python and ECMAScript agree. See native/frontends/regex/regex_converter.cc
for the dialect choices (\\d \\w ASCII, \\s ECMAScript whitespace, . excludes only \\n,
$ only at the very end).
"""

import json
import random
import re

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from xg2_plugin import _native

RegexError = _native.RegexError
ResourceLimitError = _native.ResourceLimitError


def to_ebnf(pattern, search=False, json_string_body=False):
    return _native._regex_to_ebnf(pattern, search=search, json_string_body=json_string_body)


def accepts(expr, text):
    from xg2_plugin.testing import ebnf_accepts

    return ebnf_accepts("root ::= " + expr, text)


def json_body(text):
    return json.dumps(text, ensure_ascii=False)[1:-1]


# ---------------------------------------------------------------------------------------
# Exact output for small cases (independent of the matcher).

GOLDEN = [
    ("abc", {}, '"abc"'),
    ("", {}, '""'),
    (".", {}, "[^\\n]"),
    ("a|b", {}, '("a" | "b")'),
    ("[a-c]+x?", {}, '[a-c]+ "x"?'),
    ("(?:ab){2,5}?", {}, '"ab"{2,5}'),
    ("(a|b)*", {}, '("a" | "b")*'),
    ("\\d{3,}", {}, "[0-9]{3,}"),
    ("^abc$", {}, '"abc"'),
    ("abc", {"search": True}, '.* "abc" .*'),
    ("^abc", {"search": True}, '"abc" .*'),
    ("^a|b$", {"search": True}, '("a" .* | .* "b")'),
    ("", {"search": True}, ".*"),
    ("^$", {"search": True}, '""'),
    ('"', {"json_string_body": True}, '"\\\\\\""'),
    ("\\\\", {"json_string_body": True}, '"\\\\\\\\"'),
    ("\\n", {"json_string_body": True}, '"\\\\n"'),
    ("\\x1b", {"json_string_body": True}, '"\\\\u001" [Bb]'),
    ("\\x01", {"json_string_body": True}, '"\\\\u0001"'),
    (
        ".",
        {"json_string_body": True},
        '([^\\x00-\\x1f"\\\\] | "\\\\" ["\\\\bfrt] | "\\\\u000" [0-7BEFbef] | "\\\\u001" [0-9A-Fa-f])',
    ),
]


@pytest.mark.parametrize("pattern,options,expected", GOLDEN)
def test_golden_output(pattern, options, expected):
    assert to_ebnf(pattern, **options) == expected


def test_output_is_one_term_safe_to_embed():
    # Embedded as the body of a JSON string rule: alternations come parenthesised.
    for pattern in ["a|b", "^a|b$", "x|", "(a)|(b)c"]:
        expr = to_ebnf(pattern)
        assert expr.startswith("(") and expr.endswith(")")


# ---------------------------------------------------------------------------------------
# Accept / reject tables (full match unless stated).

CASES = [
    # literals and escapes
    ("abc", ["abc"], ["ab", "abcd", "", "ABC"]),
    ("a\\.b", ["a.b"], ["axb"]),
    ("\\n\\r\\t\\f\\v\\0", ["\n\r\t\f\v\0"], ["nrtfv0"]),
    ("\\x41\\u00e9\\u{1F600}\\U0001F601", ["Aé😀😁"], ["A\\u00e9"]),
    ("\\uD83D\\uDE00", ["😀"], [""]),
    ("\\*\\+\\?\\(\\)\\[\\]\\{\\}\\|\\^\\$\\\\\\/\\-", ["*+?()[]{}|^$\\/-"], []),
    ("héllo wörld", ["héllo wörld"], ["hello world"]),
    ("日本+", ["日本", "日本本本"], ["日"]),
    ("a{", ["a{"], ["a"]),
    ("a{x}", ["a{x}"], ["ax"]),
    ("}]", ["}]"], []),
    # dot
    (".", ["a", " ", "é", "😀", "\r", "\u2028"], ["\n", "", "ab"]),
    # classes
    ("[abc]", ["a", "b", "c"], ["d", "", "ab"]),
    ("[a-cx-z]", ["a", "b", "y"], ["d", "w"]),
    ("[^abc]", ["d", "\n", "é"], ["a", "c", ""]),
    ("[-a]", ["-", "a"], ["b"]),
    ("[a-]", ["-", "a"], ["b"]),
    ("[\\]\\\\^]", ["]", "\\", "^"], ["a"]),
    ("[a^]", ["^", "a"], ["b"]),
    ("[\\b]", ["\b"], ["b"]),
    ("[\\d_]", ["5", "_"], ["a"]),
    ("[^\\d\\s]", ["a", "é"], ["1", " ", "\n"]),
    ("[é-ë]", ["é", "ê", "ë"], ["e", "ì"]),
    ("[\\u0041-\\u0043]", ["A", "C"], ["D"]),
    ("[(|)]", ["(", "|", ")"], ["a"]),
    ("[.]", ["."], ["a"]),
    # class escapes
    ("\\d", [str(d) for d in range(10)], ["a", "٣", ""]),
    ("\\D", ["a", "٣", "\n"], ["5"]),
    ("\\w", ["a", "Z", "0", "_"], ["-", "é", " "]),
    ("\\W", ["-", "é", " "], ["a", "_"]),
    ("\\s", [" ", "\t", "\n", "\r", "\f", "\v", "\u00a0", "\u2003", "\u3000", "\ufeff"], ["a", "\x1c", "\x85"]),
    ("\\S", ["a", "\x1c"], [" ", "\u00a0", "\n"]),
    # groups
    ("(ab)+", ["ab", "abab"], ["", "aba"]),
    ("(?:ab)+", ["ab", "abab"], ["a"]),
    ("(?P<word>ab)c", ["abc"], ["ab"]),
    ("(?<word>ab)c", ["abc"], ["ab"]),
    ("()", [""], ["a"]),
    ("((a)(b(c)))", ["abc"], ["ab"]),
    # alternation
    ("cat|dog", ["cat", "dog"], ["catdog", "ca"]),
    ("a|", ["a", ""], ["b"]),
    ("|a", ["a", ""], ["b"]),
    ("a(b|c|)d", ["abd", "acd", "ad"], ["abcd"]),
    # quantifiers
    ("a*", ["", "a", "aaaa"], ["b"]),
    ("a+", ["a", "aaa"], [""]),
    ("a?", ["", "a"], ["aa"]),
    ("a{3}", ["aaa"], ["aa", "aaaa"]),
    ("a{2,}", ["aa", "aaaaa"], ["a"]),
    ("a{1,3}", ["a", "aaa"], ["", "aaaa"]),
    ("a{0}b", ["b"], ["ab"]),
    ("a{0,0}", [""], ["a"]),
    ("a*?b+?c??d{1,2}?", ["bd", "aabbcdd"], ["ac"]),
    ("(a|b){2}", ["ab", "ba", "aa"], ["a", "abc"]),
    ("(a*)*", ["", "aaa"], ["b"]),
    ("(a?){3}", ["", "a", "aaa"], ["aaaa"]),
    # anchors are redundant in full-match mode
    ("^abc$", ["abc"], ["xabc"]),
    ("^a|b$", ["a", "b"], ["ab"]),
    ("(^a|b)c", ["ac", "bc"], ["c"]),
    ("^^a$$", ["a"], [""]),
    ("^$", [""], ["a"]),
]


@pytest.mark.parametrize("pattern,good,bad", CASES)
def test_full_match(pattern, good, bad):
    expr = to_ebnf(pattern)
    for text in good:
        assert accepts(expr, text), (pattern, expr, text)
    for text in bad:
        assert not accepts(expr, text), (pattern, expr, text)


SEARCH_CASES = [
    ("abc", ["abc", "xxabcyy", "\nabc\n"], ["ab", "", "acb"]),
    ("^abc", ["abc", "abcxx"], ["xabc", "\nabc"]),
    ("abc$", ["abc", "xxabc"], ["abcx", "abc\n"]),
    ("^abc$", ["abc"], ["xabc", "abcx"]),
    ("^a|b$", ["a", "axx", "xxb", "b"], ["xa", "bx", ""]),
    ("(^a|b)c", ["ac", "acx", "xbcx"], ["xac"]),
    ("", ["", "anything"], []),
    ("^", ["", "x"], []),
    ("$", ["", "x"], []),
    ("^$", [""], ["x"]),
    ("a*", ["", "bbb"], []),
    ("\\d{3}", ["abc123def"], ["12"]),
]


@pytest.mark.parametrize("pattern,good,bad", SEARCH_CASES)
def test_search(pattern, good, bad):
    expr = to_ebnf(pattern, search=True)
    for text in good:
        assert accepts(expr, text), (pattern, expr, text)
    for text in bad:
        assert not accepts(expr, text), (pattern, expr, text)


# (pattern, options, JSON string bodies accepted, bodies rejected)
JSON_CASES = [
    ('a"b', {}, ['a\\"b'], ['a"b']),
    ("a\\\\b", {}, ["a\\\\b"], ["a\\b"]),
    ("\\n", {}, ["\\n"], ["\n", "\\u000a", "\\u000A"]),
    ("\\x08\\x0c\\r\\t", {}, ["\\b\\f\\r\\t"], ["\\u0008\\f\\r\\t", "\b\f\r\t"]),
    ("\\x1b", {}, ["\\u001b", "\\u001B"], ["\x1b", "\\u1b"]),
    ("\\x00\\x1f", {}, ["\\u0000\\u001f", "\\u0000\\u001F"], ["\\u0000\x1f"]),
    ("/", {}, ["/"], ["\\/"]),
    ("a", {}, ["a"], ["\\u0061"]),
    ("é\\x7f", {}, ["é\x7f"], ["\\u00e9\\u007f"]),
    (".", {}, ["a", '\\"', "\\\\", "\\t", "\\u0001", "\\u001F", "é"], ["\\n", '"', "\\", "\t", "\x01", "\\u000a"]),
    ("[^a]", {}, ["b", '\\"', "\\\\", "\\n", "\\u0007"], ["a", '"', "\n", "\\u0061"]),
    ("\\S+", {}, ['x\\"\\\\y'], ["\\t", " "]),
    ("\\W", {}, ['\\"', "\\\\", "\\b", "\\u0000", "-"], ["a", '"']),
    ("\\D", {}, ["\\u001e", "\\n"], ["1"]),
    ('["\\\\a]', {}, ['\\"', "\\\\", "a"], ['"', "\\"]),
    ("x", {"search": True}, ['\\"x\\\\', "\\u0001x\\n", "x"], ['"x', "\\x", "x\n", "y"]),
    ("^x", {"search": True}, ["x\\t"], ["\\tx", "x\t"]),
]


@pytest.mark.parametrize("pattern,options,good,bad", JSON_CASES)
def test_json_string_body(pattern, options, good, bad):
    expr = to_ebnf(pattern, json_string_body=True, **options)
    for text in good:
        assert accepts(expr, text), (pattern, expr, text)
    for text in bad:
        assert not accepts(expr, text), (pattern, expr, text)


# ---------------------------------------------------------------------------------------
# Errors: every unsupported or malformed construct names its offset.

ERRORS = [
    # unsupported
    ("(a)\\1", 3, "back-reference"),
    ("(?P<n>a)\\k<n>", 8, "back-reference"),
    ("(?P<n>a)(?P=n)", 8, "back-reference"),
    ("a(?=b)", 1, "look-ahead"),
    ("a(?!b)", 1, "look-ahead"),
    ("a(?<=b)", 1, "look-behind"),
    ("a(?<!b)", 1, "look-behind"),
    ("a^b", 1, "'^'"),
    ("a$b", 1, "'$'"),
    ("x(^a)", 2, "'^'"),
    ("(a$)b", 2, "'$'"),
    ("(^a)*", 1, "'^'"),
    ("a\\b", 1, "word boundary"),
    ("\\Ba", 0, "word boundary"),
    ("a*+", 1, "possessive"),
    ("a{2}+", 1, "possessive"),
    ("(?i)abc", 0, "inline flags"),
    ("(?i:abc)", 0, "inline flags"),
    ("x(?>a)", 1, "atomic"),
    ("x(?#c)", 1, "comment"),
    ("\\p{L}", 0, "Unicode property"),
    ("ab\\P{L}", 2, "Unicode property"),
    ("\\cA", 0, "control escape"),
    ("a\\A", 1, "anchor escape"),
    ("a\\Z", 1, "anchor escape"),
    ("a\\q", 1, "unknown escape"),
    ("\\01", 0, "octal"),
    ("[\\1]", 1, "octal"),
    ("a{,3}", 1, "{0,n}"),
    ("[]a]", 0, "escape the ']'"),
    ("[^]", 0, "escape the ']'"),
    ("(?Q)", 0, "unknown group"),
    # malformed
    ("(ab", 0, "missing ')'"),
    ("a(b(c)", 1, "missing ')'"),
    ("ab)", 2, "unbalanced ')'"),
    ("[abc", 0, "unterminated character class"),
    ("x[z-a]", 2, "bad character range"),
    ("[\\d-z]", 1, "cannot bound a range"),
    ("[a-\\w]", 1, "cannot bound a range"),
    ("*a", 0, "nothing to repeat"),
    ("a|+", 2, "nothing to repeat"),
    ("(?:?)", 3, "nothing to repeat"),
    ("{3}", 0, "nothing to repeat"),
    ("^*", 1, "nothing to repeat"),
    ("a**", 2, "multiple repeat"),
    ("a{2}{3}", 4, "multiple repeat"),
    ("a*??", 3, "multiple repeat"),
    ("a{3,1}", 1, "min greater than max"),
    ("ab\\", 2, "trailing backslash"),
    ("\\x4", 0, "hexadecimal"),
    ("\\u12", 0, "hexadecimal"),
    ("\\u{110000}", 0, "\\u{"),
    ("\\u{}", 0, "\\u{"),
    ("(?P<1a>x)", 0, "group name"),
    ("(?P<a>x)(?P<a>y)", 8, "duplicate group name"),
    ("[^\\s\\S]", 0, "matches no string"),
    ("\\uD800", 0, "matches no string"),
]


@pytest.mark.parametrize("pattern,offset,phrase", ERRORS)
def test_errors_name_offset_and_construct(pattern, offset, phrase):
    with pytest.raises(RegexError) as info:
        to_ebnf(pattern)
    message = str(info.value)
    assert f"at offset {offset}" in message, message
    assert phrase in message, message


def test_regex_error_is_a_value_error():
    with pytest.raises(ValueError):
        to_ebnf("(")


def test_lone_surrogate_branch_is_dropped():
    # No UTF-8 text contains a surrogate, so this branch can never match.
    assert to_ebnf("a|\\uD800") == '"a"'


@pytest.mark.parametrize("pattern", ["a{100001}", "a{1,100001}", "a{99999999999999999999}"])
def test_repetition_bound_limit(pattern):
    with pytest.raises(ResourceLimitError, match="offset 1"):
        to_ebnf(pattern)


def test_repetition_bound_at_limit_is_fine():
    assert to_ebnf("a{100000}") == '"a"{100000}'


def test_deep_nesting_is_a_resource_limit():
    with pytest.raises(ResourceLimitError):
        to_ebnf("(" * 10000 + "a" + ")" * 10000)
    assert to_ebnf("(" * 200 + "a" + ")" * 200) == '"a"'


def test_long_patterns_stay_linear():
    pattern = "|".join("[a-z%d]x" % (i % 10) for i in range(20000))
    assert len(to_ebnf(pattern, search=True, json_string_body=True)) < 60 * len(pattern)
    big_class = "[" + "".join(chr(0x4E00 + 2 * i) for i in range(8000)) + "]"
    assert to_ebnf(big_class).startswith("[")


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="ab()[]{}|^$*+?.\\-,:=!<>P0123dswbkuxn^é", max_size=16), st.booleans(), st.booleans())
def test_fuzz_never_crashes(pattern, search, json_string_body):
    try:
        out = to_ebnf(pattern, search=search, json_string_body=json_string_body)
    except (RegexError, ResourceLimitError):
        return
    assert isinstance(out, str) and out


def test_fuzz_random_bytes_like_patterns():
    rng = random.Random(1234)
    alphabet = "ab()[]{}|^$*+?.\\-,:0123456789dDwWsSbBxuU<>=!P\u00e9\U0001F600 \n"
    for _ in range(3000):
        pattern = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 24)))
        try:
            to_ebnf(pattern, search=rng.random() < 0.5, json_string_body=rng.random() < 0.5)
        except (RegexError, ResourceLimitError):
            pass


# ---------------------------------------------------------------------------------------
# Property tests against Python's re on the subset where Python and ECMAScript agree.

# Characters whose \s membership differs between our ECMAScript set and re.ASCII's.
_DIALECT_DIFFERENCES = set("\u00a0\u1680\u2028\u2029\u202f\u205f\u3000\ufeff") | {
    chr(c) for c in range(0x2000, 0x200B)
}
ALPHABET = "ab0 \n\"\\é"

_LITERALS = ["a", "b", "0", " ", "\\n", '"', "\\\\", "é", "\\.", "\\t"]
_CLASSES = ["[ab]", "[^a]", "[a-c]", "[^\\s]", '[\\d"]', "\\d", "\\w", "\\s", "\\D", "\\W", "\\S", "."]


def _regex_trees():
    """Random regex ASTs: ("lit", s) | ("seq", [..]) | ("alt", [..]) | ("rep", x, q) | ("grp", kind, x)."""
    leaf = st.sampled_from(_LITERALS).map(lambda s: ("atom", s)) | st.sampled_from(_CLASSES).map(
        lambda s: ("atom", s)
    )
    quantifier = st.sampled_from(["*", "+", "?", "{2}", "{1,}", "{0,2}", "{1,3}", "*?", "+?", "??", "{1,2}?"])

    def extend(children):
        return (
            st.lists(children, min_size=2, max_size=4).map(lambda xs: ("seq", xs))
            | st.lists(children, min_size=2, max_size=3).map(lambda xs: ("alt", xs))
            | st.tuples(children, quantifier).map(lambda t: ("rep", t[0], t[1]))
            | st.tuples(st.sampled_from(["(", "(?:"]), children).map(lambda t: ("grp", t[0], t[1]))
        )

    return st.recursive(leaf, extend, max_leaves=8)


def _render(tree):
    kind = tree[0]
    if kind == "atom":
        return tree[1]
    if kind == "seq":
        return "".join(
            "(?:%s)" % _render(x) if x[0] == "alt" else _render(x) for x in tree[1]
        )
    if kind == "alt":
        return "|".join(_render(x) for x in tree[1])
    if kind == "rep":
        inner = _render(tree[1])
        if tree[1][0] != "atom" and tree[1][0] != "grp":
            inner = "(?:%s)" % inner
        return inner + tree[2]
    return tree[1] + _render(tree[2]) + ")"


@st.composite
def patterns(draw, anchors):
    """(our pattern, Python pattern): top-level alternatives, each optionally anchored."""
    branches = draw(st.lists(_regex_trees(), min_size=1, max_size=3))
    ours, python = [], []
    for tree in branches:
        body = _render(tree)
        start = anchors and draw(st.booleans())
        end = anchors and draw(st.booleans())
        ours.append(("^" if start else "") + "(?:%s)" % body + ("$" if end else ""))
        python.append(("^" if start else "") + "(?:%s)" % body + ("\\Z" if end else ""))
    return "|".join(ours), re.compile("|".join(python), re.ASCII)


def _texts(compiled, draw, fullmatch):
    """Random strings over ALPHABET plus one string drawn to match (mostly) the pattern."""
    texts = draw(st.lists(st.text(alphabet=ALPHABET, max_size=8), min_size=1, max_size=4))
    # hypothesis cannot generate from re.ASCII patterns with non-ASCII literals; the Unicode
    # twin only biases the draw, the ASCII pattern decides.
    unicode_twin = re.compile(compiled.pattern)
    matching = draw(st.from_regex(unicode_twin, fullmatch=fullmatch))
    if not any(0xD800 <= ord(c) <= 0xDFFF or c in _DIALECT_DIFFERENCES for c in matching):
        texts.append(matching)
    return texts


# Derandomized: Python's backtracking `re` (the oracle, and hypothesis' own padding of
# `from_regex` draws) can take exponential time on a random pattern with nested repetitions;
# one random draw hung a run for minutes. The fixed examples stay the same run to run.
_PROPERTY_SETTINGS = settings(
    max_examples=200, deadline=None, derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)


@_PROPERTY_SETTINGS
@given(patterns(anchors=True), st.data())
def test_property_full_match_agrees_with_re(pattern_pair, data):
    ours, python = pattern_pair
    expr = to_ebnf(ours)
    for text in _texts(python, data.draw, fullmatch=True):
        assert accepts(expr, text) == bool(python.fullmatch(text)), (ours, expr, text)


@_PROPERTY_SETTINGS
@given(patterns(anchors=True), st.data())
def test_property_search_agrees_with_re(pattern_pair, data):
    ours, python = pattern_pair
    expr = to_ebnf(ours, search=True)
    for text in _texts(python, data.draw, fullmatch=False):
        assert accepts(expr, text) == bool(python.search(text)), (ours, expr, text)


@_PROPERTY_SETTINGS
@given(patterns(anchors=True), st.booleans(), st.data())
def test_property_json_string_body_agrees_with_re(pattern_pair, search, data):
    ours, python = pattern_pair
    expr = to_ebnf(ours, search=search, json_string_body=True)
    match = python.search if search else python.fullmatch
    for text in _texts(python, data.draw, fullmatch=not search):
        assert accepts(expr, json_body(text)) == bool(match(text)), (ours, expr, text)
