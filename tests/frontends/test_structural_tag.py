"""Structural tags: validation errors, lowering (string semantics compared with xgrammar 0.2.8
on the same formats), special tokens as tokens, unsupported token-level forms."""

from __future__ import annotations

import json

import pytest

import xg2_plugin as xg
from xg2_plugin import _native
from xg2_plugin.structural_tag import StructuralTagError, parse_structural_tag, structural_tag_to_ebnf

from xg2_test_support import hf_compiler, hf_tokenizer


def st(fmt):
    return {"type": "structural_tag", "format": fmt}


def tag(name, schema=None):
    return {"type": "tag", "begin": f"<f={name}>",
            "content": {"type": "json_schema", "json_schema": schema or {"type": "integer"}}, "end": "</f>"}


# Expectations are xgrammar 0.2.8's answers on the same structural tags.
CASES = [
    ({"type": "triggered_tags", "triggers": ["<f="], "tags": [tag("a"), tag("b")], "at_least_one": True},
     {"": False, "x": False, "<f=a>1</f>": True, "x<f=a>1</f>": False, "<f=a>1</f>x<f=b>2</f>": True}),
    ({"type": "triggered_tags", "triggers": ["<f="], "tags": [tag("a"), tag("b")], "stop_after_first": True},
     {"": True, "x<f=a>1</f>": True, "<f=a>1</f>x": False, "<f=a>1</f><f=b>2</f>": False, "<f=c>": False}),
    ({"type": "tag", "begin": "<t>", "content": {"type": "any_text"}, "end": "</t>"},
     {"<t>ab</t>": True, "<t>a</t>b</t>": False, "<t></t>": True}),
    ({"type": "sequence", "elements": [{"type": "any_text", "excludes": ["x"]}, {"type": "const_string", "value": "END"}]},
     {"abEND": True, "axEND": False, "aENDbEND": True, "END": True}),
    ({"type": "tags_with_separator", "tags": [tag("a")], "separator": ","},
     {"": True, "<f=a>1</f>,<f=a>2</f>": True, "<f=a>1</f>,": False}),
    ({"type": "any_text", "max_chars": 3}, {"abc": True, "abcd": False}),
    ({"type": "regex", "pattern": "a+b"}, {"aab": True, "b": False}),
    ({"type": "grammar", "grammar": 'root ::= x x\nx ::= "q"'}, {"qq": True, "q": False}),
    ({"type": "dispatch", "rules": [["<a>", {"type": "const_string", "value": "1"}]], "loop": False, "excludes": ["zz"]},
     {"xx<a>1": True, "<a>1x": False, "zz": False}),
    ({"type": "repeat", "min": 1, "max": 2, "content": {"type": "const_string", "value": "a"}},
     {"a": True, "aa": True, "aaa": False, "": False}),
    ({"type": "or", "elements": [{"type": "const_string", "value": "a"}, {"type": "optional", "content": {"type": "const_string", "value": "b"}}]},
     {"a": True, "b": True, "": True, "ab": False}),
    ({"type": "tag", "begin": "<r>", "content": {"type": "any_text"}, "end": ["</r>", "</a>"]},
     {"<r>x</a>": True, "<r>x</r>": True, "<r>x</a>y</r>": False}),
]


@pytest.mark.parametrize("fmt,expected", CASES)
def test_lowering_semantics(fmt, expected):
    grammar = structural_tag_to_ebnf(st(fmt))
    for text, want in expected.items():
        assert _native.ebnf_accepts(grammar, text.encode()) == want, (text, grammar)


def test_legacy_form_is_triggered_tags():
    legacy = {"structures": [{"begin": "<f=a>", "schema": {"type": "integer"}, "end": "</f>"}], "triggers": ["<f="]}
    grammar = structural_tag_to_ebnf(legacy)
    assert _native.ebnf_accepts(grammar, b"hi <f=a>12</f> bye")
    assert not _native.ebnf_accepts(grammar, b'hi <f=a>"x"</f>')
    assert parse_structural_tag(json.dumps(legacy)).format.type == "triggered_tags"


@pytest.mark.parametrize("triggers", [[""], ["<f=", ""]])
def test_empty_trigger_is_refused_with_its_path(triggers):
    legacy = {"structures": [{"begin": "<f=a>", "schema": {"type": "integer"}, "end": "</f>"}], "triggers": triggers}
    with pytest.raises(StructuralTagError, match=rf"/triggers/{len(triggers) - 1}.*must not be empty"):
        structural_tag_to_ebnf(legacy)


@pytest.mark.parametrize(
    "value,fragment",
    [
        ('{"type": "structural_tag"', "not valid JSON"),
        ([1], "must be a JSON object"),
        (st({"type": "nope"}), "/format: Input tag 'nope'"),
        (st({"type": "tag", "begin": "a", "content": {"type": "const_string"}, "end": "b"}),
         "/format/tag/content/const_string/value: Field required"),
        (st({"type": "const_string", "value": "a", "extra": 1}), "extra"),
        (st({"type": "repeat", "min": -1, "max": 2, "content": {"type": "const_string", "value": "a"}}), "/format/repeat/min"),
        ({"structures": [{"begin": "<a>", "end": "</a>"}], "triggers": []}, "/structures/0/schema"),
    ],
)
def test_validation_errors_name_the_path(value, fragment):
    with pytest.raises(StructuralTagError, match=None) as info:
        parse_structural_tag(value)
    assert fragment in str(info.value)
    assert isinstance(info.value, ValueError)


@pytest.mark.parametrize(
    "fmt,fragment",
    [
        ({"type": "triggered_tags", "triggers": ["<f=", "<f"], "tags": [tag("a")]}, "exactly one trigger"),
        ({"type": "repeat", "min": 3, "max": 2, "content": {"type": "const_string", "value": "a"}}, "below min"),
        ({"type": "sequence", "elements": []}, "at least one element"),
    ],
)
def test_semantic_errors(fmt, fragment):
    with pytest.raises(StructuralTagError, match=fragment):
        structural_tag_to_ebnf(st(fmt))


@pytest.mark.parametrize(
    "fmt",
    [
        {"type": "any_text", "max_tokens": 5, "max_chars": 10},
    ],
)
def test_inexpressible_forms_are_unsupported_not_approximated(fmt):
    with pytest.raises(xg.UnsupportedSchemaError):
        hf_compiler("gpt-oss").compile_structural_tag(st(fmt))


def test_special_token_text_matches_only_the_token():
    compiler = hf_compiler("gpt-oss")
    fmt = {"type": "sequence", "elements": [
        {"type": "const_string", "value": "<|channel|>analysis<|message|>"},
        {"type": "any_text"},
        {"type": "token", "token": "<|end|>"},
    ]}
    grammar = compiler.compile_structural_tag(st(fmt))
    assert "Token(200005)" in grammar.ebnf and "Token(200007)" in grammar.ebnf
    tok = hf_tokenizer("gpt-oss")
    ids = tok.encode("<|channel|>analysis<|message|>Let me think.<|end|>", add_special_tokens=False).ids
    matcher = xg.GrammarMatcher(grammar)
    assert all(matcher.accept_token(t) for t in ids)
    assert matcher.is_completed()
    # The same text from ordinary tokens is not the special token.
    assert not xg.GrammarMatcher(grammar).accept_string("<|channel|>")


def test_compile_structural_tag_async_and_cache():
    compiler = hf_compiler("llama3.1")
    value = st({"type": "triggered_tags", "triggers": ["<function="], "tags": [
        {"type": "tag", "begin": "<function=get_weather>", "content": {"type": "json_schema", "json_schema": {
            "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}, "end": "</function>"}]})
    first = compiler.compile_structural_tag_async(value).result()
    assert compiler.compile_structural_tag(json.dumps(value)) is first
    assert xg.GrammarMatcher(first).accept_string('ok <function=get_weather>{"city": "Paris"}</function>')
    assert not xg.GrammarMatcher(first).accept_string('<function=get_weather>{"town": "Paris"}</function>')
