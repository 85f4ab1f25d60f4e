"""Assertions the regex subset once refused, where the language is still regular (issue 38):
look-aheads at the start of a `pattern` or a patternProperties key, and `$` before the end.

At position 0, `^(?!B)R` keeps the strings of `^R` that have no prefix matching B, and
`^(?=B)R` those that have one, built through the code-point automaton product
(frontends/regex/leading_lookaheads.h). A `$` inside the pattern, as in `^(/?[a-z]*($|/))*$`,
ends the match: the regex frontend splits the pattern into the matches that pass no `$` and
those that end at one. Languages are compared with Python's `re` (through `jsonschema` for
search semantics) on random strings, which reads these constructs as ECMA-262 does; engine
walks with a real tokenizer must validate. Look-aheads anywhere else stay refused.
"""

from __future__ import annotations

import json
import random
import re

import jsonschema
import numpy as np
import pytest

import xg2_plugin as xg
from xg2_plugin import _native
from xg2_plugin.testing import ebnf_accepts
from xg2_corpus import random_walk
from xg2_test_support import hf_compiler, string_accepted


def to_ebnf(schema, strict_mode=False):
    ebnf, _ = _native._json_schema_to_ebnf(json.dumps(schema), strict_mode=strict_mode)
    return ebnf


def validator(schema):
    return jsonschema.Draft202012Validator(schema)


def random_strings(alphabet, words, count, seed):
    """Random strings over `alphabet`, some starting with one of `words` (the assertions'
    bodies, so that both sides of each assertion are exercised)."""
    rng = random.Random(seed)
    found = {""} | set(words)
    while len(found) < count:
        head = rng.choice(words) if words and rng.random() < 0.5 else ""
        found.add(head + "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 6))))
    return sorted(found)


def assert_same_strings(schema, strings):
    ebnf, check = to_ebnf(schema), validator(schema)
    wrong = [(s, check.is_valid(s)) for s in strings
             if ebnf_accepts(ebnf, json.dumps(s, ensure_ascii=False)) != check.is_valid(s)]
    assert not wrong, f"{len(wrong)} disagreements, e.g. {wrong[:5]}"
    return ebnf


# (pattern, alphabet, words): shapes from JSONSchemaStore (browser.i18n, hugo, vars,
# web-types, mongodb-atlas, airlock, ci, paper-plugin) and synthesized combinations.
CASES = {
    "negative_prefix": ("^(?!@@)[@a-z_]+$", "@a_z", ["@@", "@a"]),
    "negative_whole_word": ("^(?!(False|None|if)$)[a-zA-Z_]\\w*$", "FalsNoenif_1", ["False", "None", "if", "Falsey"]),
    "negative_then_end_only": ("^(?!tag|category)$", "tagcory", ["tag", "category"]),
    "negative_with_dollar_body": ("^(?!pattern$).*$", "patern", ["pattern", "patterns"]),
    "negative_alternatives_one_anchored": ("^(?!^lucene\\.|builtin\\.).*", "lucenbuilt.x", ["lucene.", "builtin.", "xbuiltin."]),
    "negative_anywhere_in_body": ("^(?!.*--)[a-z-]*$", "ab-", ["--", "a--", "a-b"]),
    "negative_escaped_paren": ("^(?![ \\t]*\\(default(.*)\\))[\\s\\S]*", " \t(default)x", ["(default)", " (default(x))", "(defaul"]),
    "repeated_caret": ("^(?!.*\\/)^(.*[^.]+.*)$", "a./", ["/", "..", "a/"]),
    "positive_then_negative": ("^(?=.{2,4}$)(?!.*--)[a-z-]*$", "ab-", ["--", "ab", "abcde"]),
    "positive_prefix_unanchored_rest": ("^(?=ab)[a-c]+", "abcx", ["ab", "ba"]),
    "escaped_quote_and_backslash": ("^(?!\"\\\\)[\"\\\\a]+$", "\"\\a", ["\"\\", "\"a", "\\\""]),
    "non_ascii": ("^(?!é)[a-zé1а]+$", "éeа1", ["é", "ée"]),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_leading_lookahead_is_exact(name):
    pattern, alphabet, words = CASES[name]
    assert_same_strings({"type": "string", "pattern": pattern}, random_strings(alphabet, words, 200, name))


@pytest.mark.parametrize("name", ["negative_prefix", "negative_whole_word", "positive_then_negative"])
def test_leading_lookahead_next_to_length_and_another_pattern(name):
    pattern, alphabet, words = CASES[name]
    schema = {"type": "string", "minLength": 2, "maxLength": 5, "allOf": [{"pattern": pattern}, {"pattern": "[a-z]"}]}
    assert_same_strings(schema, random_strings(alphabet, words, 200, name + "_length"))


def test_lookahead_key_patterns_decide_members():
    schema = {"type": "object", "patternProperties": {"^(?!@@)[@a-z]+$": {"type": "integer"},
                                                      "^(?!x-)[a-z-]+$": {"type": "string"}},
              "additionalProperties": False}
    check = validator(schema)
    ebnf = to_ebnf(schema)
    for value in [{}, {"a": 1}, {"@a": 2}, {"@@": 1}, {"x-a": "s"}, {"a-b": 1}, {"a-b": "s"}, {"ab": "s"},
                  {"@@a": 3}, {"x-": "s"}, {"-": "s"}, {"a": 1, "b-": "t"}]:
        assert ebnf_accepts(ebnf, json.dumps(value)) == check.is_valid(value), value


def test_engine_walks_validate_and_counterexamples_are_rejected():
    schema = {"type": "object",
              "properties": {"name": {"type": "string", "pattern": "^(?!org\\.x\\.)([a-z]+\\.)*[a-z]+$", "maxLength": 12},
                             "tags": {"type": "object", "patternProperties": {"^(?!@@)[@a-z]+$": {"type": "integer"}},
                                      "additionalProperties": False}},
              "required": ["name", "tags"], "additionalProperties": False}
    grammar = hf_compiler("llama3.1").compile_json_schema(schema, any_whitespace=False)
    check = validator(schema)
    for value in [{"name": "org.x.y", "tags": {}}, {"name": "a", "tags": {"@@b": 1}}, {"name": "a.", "tags": {}}]:
        assert not check.is_valid(value), value
        assert not string_accepted(grammar, json.dumps(value)), value
    for value in [{"name": "org.y.x", "tags": {"@b": 1}}, {"name": "orgx", "tags": {"a": 2}}]:
        assert check.is_valid(value), value
        assert string_accepted(grammar, json.dumps(value)), value
    info = grammar.tokenizer_info
    bitmask = np.full(xg.get_bitmask_shape(1, info.vocab_size), -1, dtype=np.int32)
    rng = random.Random(38)
    finished = 0
    for _ in range(8):
        out = random_walk(grammar, rng, bitmask, 60)
        if out is not None:
            assert check.is_valid(json.loads(out.decode("utf-8"))), out
            finished += 1
    assert finished > 0


@pytest.mark.parametrize("pattern", ["a(?!b)", "^a(?!b)", "(?!b)a", "^(?!b)a|c", "^x((?!mode).)*$", "^(?<!a)b"])
def test_lookahead_elsewhere_stays_the_policy_error(pattern):
    with pytest.raises(_native.UnsupportedSchemaError, match="look-"):
        to_ebnf({"type": "string", "pattern": pattern})


def test_regex_frontend_alone_still_refuses_lookahead():
    # compile_regex matches the whole output; the product is only taken for schema patterns.
    with pytest.raises(xg.RegexError, match="look-ahead"):
        _native._regex_to_ebnf("^(?!a)b")


END_ANCHOR_CASES = {
    # JSONSchemaBench's pathType (Github_hard o60770 and four more): `$` inside a repeated group.
    "path_segments": ("^(\\/?((\\.{2})|([a-z0-9\\-]*))($|\\/))*$", "ab/.-", ["a/b", "../a", "a//", "/a/"]),
    "dollar_then_more": ("^$[a-z$_]*$", "a_$", ["", "a"]),
    "end_inside_alternative": ("a($|b)c?", "abc", ["a", "ab", "abc", "ac", "xa"]),
    "end_in_bounded_repeat": ("^(x$|y){2,3}", "xy", ["yx", "yyx", "x", "yy", "yyyx"]),
    "unanchored_start": ("b(c|$)", "abc", ["ab", "abc", "ba"]),
}


@pytest.mark.parametrize("name", sorted(END_ANCHOR_CASES))
def test_end_anchor_before_the_end_is_exact(name):
    pattern, alphabet, words = END_ANCHOR_CASES[name]
    strings = random_strings(alphabet, words, 200, name)
    assert_same_strings({"type": "string", "pattern": pattern}, strings)
    # compile_regex semantics: the whole text matches.
    ebnf = "root ::= " + _native._regex_to_ebnf(pattern)
    wrong = [s for s in strings if ebnf_accepts(ebnf, s) != bool(re.fullmatch(pattern, s))]
    assert not wrong, wrong[:5]


@pytest.mark.parametrize("pattern", ["a$b", "(a$)b", "a$^", "x(^a|$)b"])
def test_end_anchor_that_matches_nothing_or_meets_a_caret_stays_refused(pattern):
    with pytest.raises(xg.RegexError, match="'\\$'|'\\^'"):
        _native._regex_to_ebnf(pattern, search=True)
