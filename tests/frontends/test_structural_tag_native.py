"""The native structural-tag frontend (native/frontends/structural_tag): errors that name the
JSON path, malformed JSON, nesting bounds, input forms, and special-token splitting."""

from __future__ import annotations

import json

import pytest

import xg2_plugin as xg
from xg2_plugin import _native
from xg2_plugin.structural_tag import (
    ConstStringFormat,
    SequenceFormat,
    StructuralTag,
    StructuralTagError,
    TagFormat,
    AnyTextFormat,
    parse_structural_tag,
    structural_tag_to_ebnf,
)

from xg2_test_support import hf_compiler


def st(fmt):
    return {"type": "structural_tag", "format": fmt}


def const(value):
    return {"type": "const_string", "value": value}


def native_error(value, tokenizer_info=None):
    """The exception the native frontend raises for JSON text `value` (a dict is dumped)."""
    text = value if isinstance(value, (str, bytes)) else json.dumps(value)
    with pytest.raises(xg.XG2Error) as info:
        _native._structural_tag_to_ebnf(text, tokenizer_info)
    return info.value


# ---- shape errors name the JSON path ------------------------------------------------------

@pytest.mark.parametrize("value,message", [
    (st({"type": "sequence", "elements": [const("a"), {"type": "foo"}]}),
     "at /format/elements/1/type: unknown format 'foo'"),
    (st({"type": "tag", "begin": "a", "content": {"type": "const_string"}, "end": "b"}),
     "at /format/content/value: missing required field"),
    (st({"type": "const_string", "value": "a", "extra": 1}), "at /format/extra: unknown field"),
    (st({"type": "const_string", "value": 5}), "at /format/value: expected a string, got a number"),
    (st({"type": "repeat", "min": -1, "max": 2, "content": const("a")}), "at /format/min: integer -1 is outside"),
    (st({"type": "repeat", "min": 1.5, "max": 2, "content": const("a")}), "at /format/min: expected an integer"),
    (st({"type": "any_text", "excludes": ["a", 3]}), "at /format/excludes/1: expected a string"),
    (st({"type": "json_schema", "json_schema": 3}), "at /format/json_schema: expected a JSON Schema"),
    (st({"type": "json_schema", "json_schema": {}, "style": "yaml"}), "at /format/style: unknown json_schema style"),
    (st({"type": "triggered_tags", "triggers": ["<"], "tags": [{"begin": "<a>", "content": const("x"), "end": 1}]}),
     "at /format/tags/0/end: expected a string, a list of strings or a token format"),
    (st({"type": "triggered_tags", "triggers": ["<"], "tags": [{"type": "or", "begin": "<a>"}]}),
     "at /format/tags/0/type: expected 'tag'"),
    (st({"type": "dispatch", "rules": [["<a>"]]}), "at /format/rules/0: expected a [pattern, format] pair"),
    (st({"type": "optional", "content": []}), "at /format/content: a format must be an object, got an array"),
    (st({"type": "token", "token": None}), "at /format/token: expected a token id or a token's text"),
    ({"type": "structural_tag"}, "at /format: missing required field"),
    ({"type": "other", "format": const("a")}, "at /type: expected 'structural_tag'"),
    ({"structures": [{"begin": "<a>", "end": "</a>"}], "triggers": []}, "at /structures/0/schema: missing required field"),
    ({"structures": [{"begin": "<a>", "schema": "{nope", "end": "</a>"}], "triggers": []},
     "at /structures/0/schema: the schema text is not valid JSON"),
    ({"structures": [], "triggers": [], "at_least_one": True}, "at /at_least_one: unknown field"),
])
def test_shape_errors_name_the_json_path(value, message):
    error = native_error(value)
    assert type(error) is StructuralTagError, error
    assert message in str(error)
    assert isinstance(error, xg.SchemaError) and isinstance(error, ValueError)
    # The typed Python models reject the same input.
    with pytest.raises(StructuralTagError):
        parse_structural_tag(value)


@pytest.mark.parametrize("fmt,error_type,message", [
    ({"type": "sequence", "elements": [const("a"), {"type": "sequence", "elements": []}]}, StructuralTagError,
     "at /format/elements/1/elements: a sequence needs at least one element"),
    ({"type": "or", "elements": [{"type": "any_text", "max_tokens": 3, "max_chars": 4}]}, xg.UnsupportedSchemaError,
     "at /format/elements/0: any_text with both max_tokens and max_chars"),
    ({"type": "tag", "begin": "<a>", "content": const("x"), "end": []}, StructuralTagError,
     "at /format/end: a tag needs at least one end string"),
    ({"type": "dispatch", "rules": [["", const("x")]]}, StructuralTagError, "at /format/rules/0: the pattern must not be empty"),
    ({"type": "token", "token": 99}, StructuralTagError, "at /format/token: token id 99 is outside the vocabulary"),
    ({"type": "any_tokens", "exclude_tokens": [99]}, StructuralTagError,
     "at /format/exclude_tokens/0: token id 99 is outside the vocabulary"),
])
def test_lowering_errors_name_the_json_path(fmt, error_type, message):
    error = native_error(st(fmt))
    assert type(error) is error_type
    assert message in str(error)


def test_shape_errors_come_before_lowering_errors():
    # As with the pydantic models: the whole tag is validated before anything is lowered.
    error = native_error(st({"type": "sequence", "elements": [{"type": "any_tokens"}, {"type": "bad"}]}))
    assert type(error) is StructuralTagError and "/format/elements/1/type" in str(error)


# ---- malformed input ----------------------------------------------------------------------

@pytest.mark.parametrize("text,message", [
    ('{"type": "structural_tag", "format": ', "not valid JSON"),
    ('{"format": {"type": "const_string", "value": "a"}} trailing', "not valid JSON"),
    ("", "not valid JSON"),
    (b'{"format": {"type": "const_string", "value": "\xff"}}', "not valid JSON"),
    ("[1, 2]", "must be a JSON object, got an array"),
    ('"structural_tag"', "must be a JSON object, got a string"),
])
def test_malformed_json_is_a_structural_tag_error(text, message):
    error = native_error(text)
    assert type(error) is StructuralTagError
    assert message in str(error)
    with pytest.raises(StructuralTagError, match=message):
        hf_compiler("llama3.1").compile_structural_tag(text)


def test_compile_rejects_non_json_values():
    compiler = hf_compiler("llama3.1")
    with pytest.raises(StructuralTagError, match="must be a JSON object"):
        compiler.compile_structural_tag([1])
    with pytest.raises(StructuralTagError, match="cannot be serialised"):
        compiler.compile_structural_tag(st({"type": "const_string", "value": float("nan")}))


# ---- nesting is bounded with a typed error --------------------------------------------------

def nested_text(depth: int, kind: str) -> str:
    """`depth` nested formats as JSON text, built without recursion."""
    if kind == "sequence":
        head, tail = '{"type": "sequence", "elements": [', "]}"
    else:
        head, tail = '{"type": "optional", "content": ', "}"
    return '{"type": "structural_tag", "format": ' + head * depth + json.dumps(const("x")) + tail * depth + "}"


@pytest.mark.parametrize("depth,kind,fragment", [
    (100000, "sequence", "nest"),  # past the JSON parser's bound
    (300, "optional", "formats nest deeper than 200 levels"),  # within it, past the format bound
])
def test_deep_nesting_is_a_resource_limit_error(depth, kind, fragment):
    text = nested_text(depth, kind)
    with pytest.raises(xg.ResourceLimitError, match=fragment):
        _native._structural_tag_to_ebnf(text)
    with pytest.raises(xg.ResourceLimitError):
        hf_compiler("llama3.1").compile_structural_tag(text)


def test_deep_dict_is_a_resource_limit_error():
    deep: dict = const("x")
    for _ in range(5000):
        deep = {"type": "optional", "content": deep}
    with pytest.raises(xg.ResourceLimitError):
        hf_compiler("llama3.1").compile_structural_tag(st(deep))


def test_nesting_within_the_bound_compiles():
    grammar = structural_tag_to_ebnf(nested_text(150, "optional"))
    assert _native.ebnf_accepts(grammar, b"x") and _native.ebnf_accepts(grammar, b"")


# ---- input forms --------------------------------------------------------------------------

def test_str_bytes_dict_and_model_give_one_grammar():
    value = st({"type": "sequence", "elements": [
        {"type": "tag", "begin": "<a>", "content": {"type": "any_text"}, "end": "</a>"},
        {"type": "json_schema", "json_schema": {"type": "object", "properties": {"n": {"type": "integer", "default": None}}}},
    ]})
    text = json.dumps(value)
    grammars = {
        structural_tag_to_ebnf(text),
        structural_tag_to_ebnf(text.encode()),
        structural_tag_to_ebnf(value),
        structural_tag_to_ebnf(parse_structural_tag(value)),
    }
    assert len(grammars) == 1
    compiler = hf_compiler("llama3.1")
    assert compiler.compile_structural_tag(text) is compiler.compile_structural_tag(parse_structural_tag(value))


def test_model_builder_api_compiles():
    model = StructuralTag(format=SequenceFormat(elements=[
        TagFormat(begin="<think>", content=AnyTextFormat(), end="</think>"), ConstStringFormat(value="done")]))
    matcher = xg.GrammarMatcher(hf_compiler("llama3.1").compile_structural_tag(model))
    assert matcher.accept_string("<think>hmm</think>done") and matcher.is_completed()


# ---- special tokens -----------------------------------------------------------------------

# A small raw vocabulary whose special tokens overlap: "<x>" is a prefix of "<x><y>", and
# "<dup>" is the text of two special ids (so it names neither).
VOCAB = ["a", "b", "<x>", "<x><y>", "<y>", "<", "x", ">", "y", "<dup>", "<dup>", "z", "<y", "é", "<é>"]
SPECIAL = [2, 3, 4, 9, 10, 14]


@pytest.fixture(scope="module")
def small_info():
    return xg.TokenizerInfo(VOCAB, special_token_ids=SPECIAL, stop_token_ids=[1])


@pytest.mark.parametrize("text,pieces", [
    ("<x><y>", [3]),  # the longest special text wins
    ("<x><x><y>", [2, 3]),
    ("<y><x>", [4, 2]),
    ("z<x><yz", ["z", 2, "<yz"]),
    ("<x<x>>", ["<x", 2, ">"]),
    ("<dup>", ["<dup>"]),  # shared by two ids: plain text
    ("aé<é>é", ["aé", 14, "é"]),
    ("", []),
    ("plain", ["plain"]),
])
def test_split_longest_special_token_first(small_info, text, pieces):
    assert _native._split_special_tokens(small_info._handle, text) == pieces


def test_special_token_text_becomes_the_token(small_info):
    compiler = xg.GrammarCompiler(small_info)
    grammar = compiler.compile_structural_tag(st({"type": "sequence", "elements": [
        const("a<x><y>"), {"type": "tag", "begin": "<y>", "content": {"type": "any_text"}, "end": "<x>"}]}))
    assert "Token(3)" in grammar.ebnf and "Token(4)" in grammar.ebnf
    matcher = xg.GrammarMatcher(grammar)
    for token in [0, 3, 4, 0, 11, 2]:  # a <x><y> <y> a z <x>
        assert matcher.accept_token(token), token
    assert matcher.is_completed()
    # "<x>" then "<y>" is not the special token "<x><y>", and neither is the text spelled out.
    matcher = xg.GrammarMatcher(grammar)
    assert matcher.accept_token(0) and not matcher.accept_token(2)
    assert not xg.GrammarMatcher(grammar).accept_string("a<x><y>")


def test_token_format_resolves_special_and_ordinary_tokens(small_info):
    ok = structural_tag_to_ebnf(st({"type": "token", "token": "<x><y>"}), small_info)
    assert "Token(3)" in ok
    assert "Token(14)" in structural_tag_to_ebnf(st({"type": "token", "token": 14}), small_info)
    with pytest.raises(StructuralTagError, match="more than one token"):
        structural_tag_to_ebnf(st({"type": "token", "token": "<dup>"}), small_info)
    # An ordinary token is a one-token set (tests/frontends/test_token_level_formats.py).
    assert "TokenSet(0)" in structural_tag_to_ebnf(st({"type": "token", "token": 0}), small_info)
    assert "TokenSet(1)" in structural_tag_to_ebnf(st({"type": "token", "token": "b"}), small_info)
    with pytest.raises(StructuralTagError, match="outside the vocabulary"):
        structural_tag_to_ebnf(st({"type": "token", "token": len(VOCAB)}), small_info)


def test_special_tokens_in_tag_dispatch_strings(small_info):
    # Triggers, stop strings and excludes are split too.
    grammar = structural_tag_to_ebnf(st({"type": "triggered_tags", "triggers": ["a<x>"], "excludes": ["<y>"], "tags": [
        {"begin": "a<x>b", "content": {"type": "any_text"}, "end": ["<x><y>"]}]}), small_info)
    assert '("a" Token(2), ' in grammar
    assert "stop_str=(Token(3),)" in grammar
    assert "excludes=(Token(4),)" in grammar


def test_excluded_string_inside_the_tags_end_string():
    """Kimi-K3's free text excludes "<|close|>" and its end string starts with it: the end must
    still complete, and the excluded string must still be forbidden anywhere else."""
    compiler = hf_compiler("llama3.1")
    tag = {"type": "structural_tag", "format": {
        "type": "tag", "begin": "", "end": "<|close|>response<|sep|>",
        "content": {"type": "any_text", "excludes": ["<|open|>", "<|close|>"]}}}
    grammar = compiler.compile_structural_tag(json.dumps(tag))

    def accepts(text):
        matcher = xg.GrammarMatcher(grammar)
        return matcher.accept_string(text) and matcher.is_completed()

    assert accepts("hi<|close|>response<|sep|>")
    assert accepts("<|close|>response<|sep|>")
    assert not accepts("hi<|close|>x<|close|>response<|sep|>")
    assert not accepts("<|open|><|close|>response<|sep|>")


def test_self_overlapping_end_with_an_excluded_substring_is_refused():
    tag = {"type": "structural_tag", "format": {
        "type": "tag", "begin": "", "end": "abXab",
        "content": {"type": "any_text", "excludes": ["X"]}}}
    with pytest.raises(xg.UnsupportedSchemaError, match="overlaps itself"):
        hf_compiler("llama3.1").compile_structural_tag(json.dumps(tag))
