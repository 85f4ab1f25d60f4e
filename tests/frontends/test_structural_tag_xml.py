"""json_schema's XML argument styles (qwen_xml, glm_xml), exact tag ends, and any_whitespace."""

from __future__ import annotations

import pytest

import xg2_plugin as xg

from xg2_test_support import hf_compiler

SCHEMA = {"type": "object", "properties": {
    "city": {"type": "string"},
    "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
    "days": {"type": "integer"},
    "opts": {"type": "object", "properties": {"hourly": {"type": "boolean"}}, "required": ["hourly"]},
}, "required": ["city", "days"]}


def accepts(tag, text, **kwargs):
    grammar = hf_compiler("llama3.1").compile_structural_tag(tag, **kwargs)
    matcher = xg.GrammarMatcher(grammar)
    return matcher.accept_string(text) and matcher.is_completed()


def xml(style, schema=SCHEMA):
    return {"type": "structural_tag", "format": {"type": "json_schema", "json_schema": schema, "style": style}}


@pytest.mark.parametrize("text,ok", [
    ("<parameter=city>\nParis, FR\n</parameter>\n<parameter=days>\n3\n</parameter>\n", True),
    # Raw text, quotes and markup included; JSON for non-strings.
    ('<parameter=city>\n"a" <b> </parameter\n</parameter>\n<parameter=days>\n-2\n</parameter>\n', True),
    ("<parameter=city>\nX\n</parameter>\n<parameter=unit>\ncelsius\n</parameter>\n<parameter=days>\n1\n</parameter>\n"
     '<parameter=opts>\n{"hourly": true}\n</parameter>\n', True),
    ("<parameter=city>\nX\n</parameter>\n<parameter=unit>\nkelvin\n</parameter>\n<parameter=days>\n1\n</parameter>\n", False),
    ("<parameter=city>\nX\n</parameter>\n<parameter=days>\n1.5\n</parameter>\n", False),  # integer
    ("<parameter=city>\nX\n</parameter>\n", False),  # days is required
    ("<parameter=days>\n1\n</parameter>\n<parameter=city>\nX\n</parameter>\n", False),  # schema order
    ("<parameter=city>\nX\n</parameter>\n<parameter=days>\n1\n</parameter>\n<parameter=other>\n1\n</parameter>\n", False),
    ('<parameter=city>\nX\n</parameter>\n<parameter=days>\n1\n</parameter>\n<parameter=opts>\n{}\n</parameter>\n', False),
    # The value ends at the first close: a value cannot contain "\n</parameter>\n".
    ("<parameter=city>\nX\n</parameter>\n</parameter>\n<parameter=days>\n1\n</parameter>\n", False),
])
def test_qwen_xml(text, ok):
    assert accepts(xml("qwen_xml"), text) == ok


def test_qwen_xml_parameter_is_the_deprecated_spelling():
    tag = {"type": "structural_tag", "format": {"type": "qwen_xml_parameter", "json_schema": SCHEMA}}
    assert accepts(tag, "<parameter=city>\nX\n</parameter>\n<parameter=days>\n1\n</parameter>\n")


@pytest.mark.parametrize("text,ok", [
    ("<arg_key>city</arg_key>\n<arg_value>Paris</arg_value>\n<arg_key>days</arg_key>\n<arg_value>3</arg_value>\n", True),
    ("<arg_key>city</arg_key><arg_value>Paris</arg_value><arg_key>days</arg_key><arg_value>3</arg_value>", True),
    ("<arg_key>city</arg_key><arg_value>Paris</arg_value><arg_key>days</arg_key><arg_value>x</arg_value>", False),
    ("<arg_key>days</arg_key><arg_value>3</arg_value>", False),
])
def test_glm_xml(text, ok):
    assert accepts(xml("glm_xml"), text) == ok


def test_object_without_properties_takes_any_members():
    tag = xml("qwen_xml", {"type": "object"})
    assert accepts(tag, "")
    assert accepts(tag, "<parameter=a>\nfree text\n</parameter>\n<parameter=b>\n1\n</parameter>\n")


@pytest.mark.parametrize("style,schema,message", [
    # A flat style (qwen_xml...) takes a lone value (test_structural_tag_styles.py); the
    # nesting styles do not.
    ("minimax_m3_xml", {"type": "array"}, "object schema"),
    ("qwen_xml", {"type": "object", "properties": {"s": {"type": "string", "minLength": 2}}}, "minLength"),
    ("qwen_xml", {"type": "object", "properties": {}, "required": ["x"]}, "required"),
    ("qwen_xml", {"type": "object", "anyOf": [{}]}, "anyOf"),
])
def test_unsupported_xml_schemas_are_typed_errors(style, schema, message):
    with pytest.raises(xg.UnsupportedSchemaError, match=message):
        hf_compiler("llama3.1").compile_structural_tag(xml(style, schema))


def test_tag_end_that_overlaps_itself_is_exact():
    # "\n</p>\n" overlaps itself: free text ends at its first occurrence, even when the text so
    # far ends in "\n</p>".
    tag = {"type": "structural_tag", "format": {"type": "tag", "begin": "<p>", "content": {"type": "any_text"},
                                                 "end": "\n</p>\n"}}
    assert accepts(tag, "<p>x\n</p>\n")
    assert accepts(tag, "<p>x\n</p \n</p>\n")
    assert not accepts(tag, "<p>x\n</p>\n</p>\n")


def test_any_whitespace_reaches_json_schema_contents():
    tag = {"type": "structural_tag", "format": {"type": "tag", "begin": "<f>", "end": "</f>", "content": {
        "type": "json_schema", "json_schema": {"type": "object", "properties": {"a": {"type": "integer"}}}}}}
    loose = '<f>{ "a" :\n 1 }</f>'
    assert accepts(tag, loose) and accepts(tag, '<f>{"a": 1}</f>')
    assert not accepts(tag, loose, any_whitespace=False)
    assert accepts(tag, '<f>{"a": 1}</f>', any_whitespace=False)
    # The same in XML-style arguments' JSON values, and through the async variant.
    nested = xml("qwen_xml")
    text = '<parameter=city>\nX\n</parameter>\n<parameter=days>\n1\n</parameter>\n<parameter=opts>\n{ "hourly": true }\n</parameter>\n'
    assert accepts(nested, text) and not accepts(nested, text, any_whitespace=False)
    grammar = hf_compiler("llama3.1").compile_structural_tag_async(tag, any_whitespace=False).result()
    assert not xg.GrammarMatcher(grammar).accept_string(loose)
