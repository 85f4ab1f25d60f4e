"""The json_schema styles of structural tags against xgrammar 0.2.8 (the test oracle): the same
strings accepted and rejected, whitespace variants included; every tag xgrammar's builders
produce for its registered models compiles; schema errors inside a tag name the tool and the
property."""

from __future__ import annotations

import json
from typing import Any

import pytest

import xg2_plugin as xg
from xg2_plugin.structural_tag import structural_tag_to_ebnf
from xg2_plugin.testing import ebnf_accepts, json_schema_to_ebnf

from xg2_test_support import hf_compiler

import xgrammar as xgr  # the test oracle (test extras); a missing oracle must fail, not skip
from xgrammar.testing import _is_grammar_accept_string  # noqa: E402

SCHEMA = {
    "type": "object",
    "properties": {
        "city": {"type": "string"},
        "days": {"type": "integer"},
        "unit": {"type": "string", "enum": ["c", "f"]},
        "where": {"type": "object", "properties": {"lat": {"type": "number"}}, "required": ["lat"]},
        "tags": {"type": "array", "items": {"type": "string"}},
    },
    "required": ["city", "days"],
}

DS = "\uff5cDSML\uff5c"
M3 = "]<]minimax[>["

# One instance of SCHEMA per style, written without optional whitespace.
INSTANCES = {
    "json": '{"city": "Paris", "days": 3, "unit": "c", "where": {"lat": 1.5}, "tags": ["a", "b"]}',
    "qwen_xml": "<parameter=city>Paris</parameter><parameter=days>3</parameter><parameter=unit>c</parameter>"
    '<parameter=where>{"lat": 1.5}</parameter><parameter=tags>["a"]</parameter>',
    "glm_xml": "<arg_key>city</arg_key><arg_value>Paris</arg_value><arg_key>days</arg_key><arg_value>3</arg_value>"
    '<arg_key>where</arg_key><arg_value>{"lat": 1}</arg_value>',
    "minimax_xml": '<parameter name="city">Paris</parameter><parameter name="days">3</parameter>'
    '<parameter name="unit">f</parameter><parameter name="tags">[]</parameter>',
    "deepseek_xml": f'<{DS}parameter name="city" string="true">Paris</{DS}parameter>'
    f'<{DS}parameter name="days" string="false">3</{DS}parameter>'
    f'<{DS}parameter name="unit" string="true">c</{DS}parameter>'
    f'<{DS}parameter name="where" string="false">{{"lat": 2}}</{DS}parameter>',
    "deepseek_v4_1_xml": f'<{DS} parameter name="city" string="true">Paris</{DS} parameter>'
    f'<{DS} parameter name="days" string="false">3</{DS} parameter>'
    f'<{DS} parameter name="tags" string="false">["x"]</{DS} parameter>',
    "kimi_k3_xml": '<|open|>argument key="city" type="string"<|sep|>Paris<|close|>argument<|sep|>'
    '<|open|>argument key="days" type="number"<|sep|>3<|close|>argument<|sep|>'
    '<|open|>argument key="unit" type="string"<|sep|>c<|close|>argument<|sep|>'
    '<|open|>argument key="where" type="object"<|sep|>{"lat": 1}<|close|>argument<|sep|>',
    "minimax_m3_xml": f"{M3}<city>Paris{M3}</city>{M3}<days>3{M3}</days>{M3}<unit>c{M3}</unit>"
    f"{M3}<where>{M3}<lat>1.5{M3}</lat>{M3}</where>{M3}<tags>{M3}<item>a{M3}</item>{M3}<item>b{M3}</item>{M3}</tags>",
    "cohere_xml": '<cofl:value name="city" type="raw">Paris</cofl:value>'
    '<cofl:value name="days" type="json">3</cofl:value>'
    '<cofl:value name="unit" type="raw">c</cofl:value>'
    '<cofl:value name="where" type="dict"><cofl:value name="lat" type="json">1.5</cofl:value></cofl:value>'
    '<cofl:value name="tags" type="list"><cofl:value type="raw">a</cofl:value></cofl:value>',
}


# Members out of schema order (any_order accepts them, declared order does not).
REORDERED = {
    "glm_xml": "<arg_key>days</arg_key><arg_value>3</arg_value><arg_key>city</arg_key><arg_value>P</arg_value>"
    "<arg_key>days</arg_key><arg_value>4</arg_value>",
    "minimax_xml": '<parameter name="unit">f</parameter><parameter name="city">P</parameter>'
    '<parameter name="days">3</parameter>',
}


def _both(fmt: dict[str, Any], texts: list[str]) -> list[tuple[str, bool, bool]]:
    tag = {"type": "structural_tag", "format": fmt}
    theirs = xgr.Grammar.from_structural_tag(json.dumps(tag))
    ours = structural_tag_to_ebnf(tag)
    return [(t, _is_grammar_accept_string(theirs, t), ebnf_accepts(ours, t)) for t in texts]


def _variants(text: str, spaces: tuple[str, ...] = (" ", "\t\r", "\n")) -> list[str]:
    """`text`, and at each position next to markup punctuation (where the styles' whitespace
    rules differ): the deletion of that character and the insertion of whitespace (space,
    tab, LF, CR; two at once as well)."""
    marks = set('<>"[]{},:|=')
    positions = [i for i in range(len(text) + 1)
                 if i in (0, len(text)) or text[i - 1] in marks or text[i] in marks]
    out = [text]
    out += [text[:i] + text[i + 1 :] for i in positions if i < len(text)]
    for ws in spaces:
        out += [text[:i] + ws + text[i:] for i in positions]
    return out


@pytest.mark.parametrize("style", sorted(INSTANCES))
def test_style_agrees_with_xgrammar(style: str) -> None:
    fmt = {"type": "json_schema", "json_schema": SCHEMA, "style": style}
    results = _both(fmt, _variants(INSTANCES[style]))
    assert results[0][1] and results[0][2], f"{style}: the instance itself must be accepted"
    disagreements = [(t, theirs, ours) for t, theirs, ours in results if theirs != ours]
    assert not disagreements, disagreements[:5]
    # The variants must exercise both outcomes, or the comparison says little.
    assert any(ours for _, _, ours in results[1:]) and not all(ours for _, _, ours in results[1:])


@pytest.mark.parametrize(
    "style,options",
    [
        ("qwen_xml", {"max_whitespace_cnt": 1}),
        ("kimi_k3_xml", {"max_whitespace_cnt": 2}),
        ("glm_xml", {"any_order": True}),
        ("minimax_xml", {"any_order": True, "max_whitespace_cnt": 1}),
        ("qwen_xml", {"excludes": ["ar", "b\""]}),
        ("kimi_k3_xml", {"excludes": ["<|open|>", "a"]}),
        ("json", {"excludes": ["ar", "\\u"]}),
    ],
)
def test_style_options_agree_with_xgrammar(style: str, options: dict[str, Any]) -> None:
    fmt = {"type": "json_schema", "json_schema": SCHEMA, "style": style, **options}
    base = INSTANCES[style]
    texts = _variants(base, ("  ", "\r"))
    if style in REORDERED:
        texts += _variants(REORDERED[style], ("  ", "\r"))
    results = _both(fmt, texts)
    disagreements = [(t, theirs, ours) for t, theirs, ours in results if theirs != ours]
    assert not disagreements, disagreements[:5]


def test_untyped_and_free_objects_agree_with_xgrammar() -> None:
    schema = {"type": "object", "properties": {"u": {}, "o": {"type": "object"}}}
    cases = {
        "qwen_xml": ['<parameter=u>hi</parameter><parameter=o><parameter=k>[1]</parameter></parameter>',
                     '<parameter=u> [1, 2] </parameter>', '<parameter=o>{"a": 1}</parameter>'],
        "deepseek_xml": [f'<{DS}parameter name="u" string="false"> null </{DS}parameter>',
                         f'<{DS}parameter name="u" string="false">"s"</{DS}parameter>',
                         f'<{DS}parameter name="u" string="true">s</{DS}parameter>'],
        "kimi_k3_xml": ['<|open|>argument key="u" type="null"<|sep|>x<|close|>argument<|sep|>'],
        "cohere_xml": ['<cofl:value name="u" type="list"><cofl:value type="json">1</cofl:value></cofl:value>',
                       '<cofl:value name="o" type="dict"> <cofl:value name="a&amp;b" type="raw">x</cofl:value> '
                       "</cofl:value>",
                       '<cofl:value name="o" type="dict"><cofl:value name="a&b" type="raw">x</cofl:value></cofl:value>'],
    }
    for style, texts in cases.items():
        fmt = {"type": "json_schema", "json_schema": schema, "style": style}
        all_texts = [v for t in texts for v in _variants(t)[:40]]
        disagreements = [r for r in _both(fmt, all_texts) if r[1] != r[2]]
        assert not disagreements, (style, disagreements[:5])


def test_json_whitespace_is_rfc_8259() -> None:
    # Carriage return is JSON whitespace (RFC 8259 section 2); vertical tab and NBSP are not.
    ebnf = json_schema_to_ebnf(json.dumps({"type": "object", "properties": {"a": {"type": "integer"}}}))
    assert ebnf_accepts(ebnf, '{\r\n\t "a" :\r1 }')
    assert not ebnf_accepts(ebnf, '{\x0b"a": 1}')
    assert not ebnf_accepts(ebnf, '{\u00a0"a": 1}')
    from xg2_plugin import _native

    builtin = _native._builtin_json_ebnf()
    assert ebnf_accepts(builtin, '{\r\n"a":\r[1,\rtrue]\r}')
    assert not ebnf_accepts(builtin, '{\x0c"a": 1}')
    tag = {"type": "structural_tag", "format": {"type": "json_schema", "json_schema": True}}
    assert ebnf_accepts(structural_tag_to_ebnf(tag), '[\r1,\r\n{"x":\rnull}]')


TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Weather for a city.",
            "parameters": {
                "type": "object",
                "properties": {
                    "city": {"type": "string"},
                    "days": {"type": "integer"},
                    "unit": {"type": "string", "enum": ["c", "f"]},
                    "where": {
                        "type": "object",
                        "properties": {"lat": {"type": "number"}, "lon": {"type": "number"}},
                        "required": ["lat", "lon"],
                    },
                    "tags": {"type": "array", "items": {"type": "string"}},
                },
                "required": ["city", "days"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "ping",
            "parameters": {"type": "object", "properties": {"host": {"type": "string"}}, "required": ["host"]},
        },
    },
]
CHOICES = ["auto", "required", {"type": "function", "function": {"name": "get_weather"}}, "none"]


def test_every_builtin_model_tag_compiles() -> None:
    from xgrammar import builtin_structural_tag

    models = sorted(builtin_structural_tag._structural_tag_registry)
    assert len(models) == 18
    compiler = hf_compiler("llama3.1")
    failures = []
    count = 0
    for model in models:
        for choice in CHOICES:
            for reasoning in ("enabled", "disabled", "auto"):
                tag = xgr.get_model_structural_tag(model, tools=TOOLS, tool_choice=choice, reasoning=reasoning)
                count += 1
                try:
                    compiler.compile_structural_tag(tag.model_dump_json())
                except xg.SchemaError as error:
                    failures.append((model, choice, reasoning, str(error)[:200]))
    assert count == 216
    assert not failures, failures[:5]


BAD_TOOL = {
    "type": "function",
    "function": {
        "name": "pick_day",
        "parameters": {
            "type": "object",
            "properties": {
                "note": {"type": "string"},
                "x": {"type": "integer", "enum": [str(i) for i in range(1, 10)]},
            },
            "required": ["x"],
        },
    },
}


@pytest.mark.parametrize("model", ["llama", "qwen_3_coder", "deepseek_v3_2", "minimax_m3", "cohere", "harmony"])
def test_unsatisfiable_tool_schema_names_tool_and_property(model: str) -> None:
    tag = xgr.get_model_structural_tag(model, tools=[TOOLS[1], BAD_TOOL], tool_choice="required")
    with pytest.raises(xg.SchemaError) as caught:
        hf_compiler("llama3.1").compile_structural_tag(tag.model_dump_json())
    message = str(caught.value)
    assert message.startswith("tool 'pick_day' (structural tag at /format/"), message
    assert "the schema at /properties/x accepts no JSON value" in message, message


def test_unsupported_tool_schema_names_tool_and_property() -> None:
    tool = {
        "type": "function",
        "function": {
            "name": "sized",
            "parameters": {"type": "object", "properties": {"n": {"type": "string", "format": "date", "minLength": 3}}},
        },
    }
    tag = xgr.get_model_structural_tag("qwen_3_coder", tools=[tool], tool_choice="required")
    with pytest.raises(xg.UnsupportedSchemaError) as caught:
        hf_compiler("llama3.1").compile_structural_tag(tag.model_dump_json())
    message = str(caught.value)
    assert message.startswith("tool 'sized' (structural tag at /format/"), message
    assert "/properties/n" in message, message


# A call to `ping` in each XML-style family whose whitespace after `<function=NAME>`,
# `<tool_call>NAME` and `<parameter=...>` used to be fixed.
CALLS = {
    "qwen_3_coder": "<tool_call>\n<function=ping>\n<parameter=host>\nh\n</parameter>\n</function>\n</tool_call>",
    "qwen_3_5": "<tool_call>\n<function=ping>\n<parameter=host>\nh\n</parameter>\n</function>\n</tool_call>",
    "glm_4_7": "<tool_call>ping<arg_key>host</arg_key><arg_value>h</arg_value></tool_call>",
    "mimo": "<tool_call><function=ping><parameter=host>h</parameter></function></tool_call>",
}


@pytest.mark.parametrize("model", sorted(CALLS))
def test_builder_tag_whitespace_agrees_with_xgrammar(model: str) -> None:
    tag = json.loads(
        xgr.get_model_structural_tag(model, tools=[TOOLS[1]], tool_choice="required", reasoning="disabled")
        .model_dump_json()
    )
    theirs = xgr.Grammar.from_structural_tag(json.dumps(tag))
    ours = structural_tag_to_ebnf(tag)
    call = CALLS[model]
    positions = [i for i in range(1, len(call)) if call[i - 1] in ">=" or call[i] == "<"]
    texts = [call] + [call[:i] + ws + call[i:] for i in positions for ws in (" ", "\n\r")]
    results = [(t, _is_grammar_accept_string(theirs, t), ebnf_accepts(ours, t)) for t in texts]
    assert results[0][1] and results[0][2]
    assert any(not ours for _, _, ours in results)
    disagreements = [r for r in results if r[1] != r[2]]
    assert not disagreements, disagreements[:5]


# One argument value on its own (SGLang's Kimi-K3 tags give qwen_xml a string schema per
# argument), between two constant strings so that the value's own boundaries are tested.
ROOT_VALUE_TEXTS = ["<a b>", "<c>", '<"c">', "< c >", "<c\n>", "<>", "<12>", "<x<y>", "<\n1\n>",
                    "<[1, 2]>", "<true>", "<x</parameter>>", "< [1]>", '<"">']


@pytest.mark.parametrize("schema", [
    {"type": "string", "enum": ["a b", "c"]}, {"type": "string"}, {"type": "string", "pattern": "^[0-9]+$"},
    {"type": "integer"}, {"type": "array", "items": {"type": "integer"}}, {"type": "boolean"},
], ids=lambda s: json.dumps(s))
def test_flat_style_value_without_an_object_agrees_with_xgrammar(schema: dict[str, Any]) -> None:
    fmt = {"type": "sequence", "elements": [
        {"type": "const_string", "value": "<"}, {"type": "json_schema", "json_schema": schema, "style": "qwen_xml"},
        {"type": "const_string", "value": ">"}]}
    results = _both(fmt, ROOT_VALUE_TEXTS)
    assert [(t, theirs, ours) for t, theirs, ours in results if theirs != ours] == []
    assert any(ours for _, _, ours in results) and not all(ours for _, _, ours in results)
