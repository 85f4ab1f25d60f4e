"""The regex frontend builds the grammar directly (frontends/regex/regex_converter.h,
RegexToGrammar; issue 39): for every pattern and option, the grammar it builds is node for
node the parse of the EBNF it prints (`_regex_to_ebnf`), so compiling a regex without the
text round trip changes nothing downstream (same FSMs, same masks, same cache keys)."""

from __future__ import annotations

import json
from typing import Any, Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from xg2_corpus import stratified_sample
from xg2_test_support import data_dir
from xg2_plugin import _native

_CORPUS = data_dir() / "jsonschemabench"

OPTIONS = [
    {},
    {"search": True},
    {"json_string_body": True},
    {"search": True, "json_string_body": True},
]
OPTION_IDS = ["full", "search", "json_body", "search_json_body"]

# Each exercises a different term of the emitter: merged literals, classes printed as `.`,
# [...] and [^...], alternations with an empty branch, nested and counted repeats (a repeat
# of a repeat is parenthesised), anchors inside alternations, escapes that JSON must spell,
# characters outside the BMP and the invisible ones printed as \u escapes.
PATTERNS = [
    "",
    "abc",
    ".",
    "a|b",
    "x|",
    "|x",
    "(a)|(b)c",
    "[a-c]+x?",
    "(?:ab){2,5}?",
    "(a|b)*",
    "((a|b)*)?",
    "(a*)*",
    "(a+){2,}",
    "(?:(?:ab)?c){0,3}",
    "\\d{3,}",
    "\\d{3}-\\d{4}",
    "^abc$",
    "^a|b$",
    "^$",
    "^(\\+|-)?[0-9]+(\\.[0-9]+)?([eE][+-]?[0-9]+)?$",
    "[^\\s]+@[^\\s]+\\.[a-z]{2,}",
    "\\w+(\\s\\w+)*",
    '"',
    "\\\\",
    "\\n\\r\\t",
    "\\x1b\\x01\\x7f",
    "[\\x00-\\x1f]",
    "[\\u00a0\\u2028\\ufeff]",
    "\u00e9t\u00e9|\U0001F600+",
    "[\\u0100-\\U0010FFFF]",
    "[\\s\\S]*",
    "[^a]",
    "[\\]\\[\\-\\^]",
    "a{0}b",
    "a{1}b{1,1}",
    "(?<year>\\d{4})-(?<month>\\d{2})",
    "^[a-zA-Z0-9._%+-]+@[a-zA-Z0-9.-]+\\.[a-zA-Z]{2,}$",
    "^([01]?\\d|2[0-3]):[0-5]\\d(:[0-5]\\d)?$",
]


def _check(pattern: str, **options: bool) -> None:
    try:
        printed = _native._regex_to_ebnf(pattern, **options)
    except (_native.RegexError, _native.ResourceLimitError):
        # Refused before any term is emitted, by the code both entries share: the direct
        # entry must refuse it too.
        with pytest.raises((_native.RegexError, _native.ResourceLimitError)):
            _native._regex_grammar_matches_parse(pattern, **options)
        return
    assert _native._regex_grammar_matches_parse(pattern, **options), (pattern, options, printed)


@pytest.mark.parametrize("options", OPTIONS, ids=OPTION_IDS)
@pytest.mark.parametrize("pattern", PATTERNS, ids=[str(i) for i in range(len(PATTERNS))])
def test_built_grammar_is_the_parse_of_the_printed_one(pattern: str, options: dict) -> None:
    _check(pattern, **options)


def _patterns_in(value: Any) -> Iterator[str]:
    if isinstance(value, dict):
        for key, child in value.items():
            if key == "pattern" and isinstance(child, str):
                yield child
            if key == "patternProperties" and isinstance(child, dict):
                yield from (name for name in child if isinstance(name, str))
            yield from _patterns_in(child)
    elif isinstance(value, list):
        for child in value:
            yield from _patterns_in(child)


def _corpus_patterns() -> list[str]:
    if not _CORPUS.is_dir():
        return []
    found: dict[str, None] = {}
    for path in stratified_sample(_CORPUS, 400, seed=39):
        for pattern in _patterns_in(json.loads(path.read_text())):
            found.setdefault(pattern)
    return list(found)


def test_corpus_patterns_build_the_parse_of_their_printed_grammar() -> None:
    patterns = _corpus_patterns()
    if not patterns:
        pytest.skip("JSONSchemaBench corpus not available")
    assert len(patterns) >= 50, "the sample should hold many patterns"
    for pattern in patterns:
        for options in OPTIONS:
            _check(pattern, **options)


_PIECES = ["a", "b", "\\d", "\\w", "\\s", ".", "[^a]", "[a-c\"]", "\\\\", "\u00e9", "^", "$", "\\n"]


@st.composite
def _patterns(draw, depth: int = 0) -> str:
    if depth >= 3 or draw(st.booleans()):
        return "".join(draw(st.lists(st.sampled_from(_PIECES), max_size=3)))
    parts = draw(st.lists(_patterns(depth + 1), min_size=1, max_size=3))
    joined = draw(st.sampled_from(["|", ""])).join(parts)
    group = draw(st.sampled_from(["(", "(?:"])) + joined + ")"
    return group + draw(st.sampled_from(["", "?", "*", "+", "{2}", "{0,3}", "{1,}"]))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pattern=_patterns(), options=st.sampled_from(OPTIONS))
def test_generated_patterns_build_the_parse_of_their_printed_grammar(pattern: str, options: dict) -> None:
    _check(pattern, **options)
