"""Structural tags lower to a grammar built directly through GrammarBuilder, with no EBNF text
round trip (frontends/structural_tag/tag_expr.h; issue 39): the tag's own rules are composed and
emitted as nodes, each JSON Schema conversion is embedded as the frontend built it. For every
tag, that grammar is node for node the parse of the EBNF it prints, so the compiled grammar, its
masks and its cache key (the printed text) are what a parse of the text would give."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any, Iterator

import pytest

from xg2_plugin import _native
from xg2_plugin.presets import MODEL_FAMILIES, get_model_structural_tag
from xg2_test_support import hf_tokenizer_info

_HERE = Path(__file__).parent


def _module(name: str) -> Any:
    spec = importlib.util.spec_from_file_location(f"_direct_grammar_{name}", _HERE / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _check(tag: str, tokenizer_info: Any = None, any_whitespace: bool = True) -> None:
    handle = tokenizer_info._handle if tokenizer_info is not None else None
    assert _native._structural_tag_grammar_matches_parse(tag, handle, any_whitespace), tag


def _format_cases() -> list[Any]:
    cases = _module("test_structural_tag").CASES
    return [{"type": "structural_tag", "format": fmt} for fmt, _ in cases]


@pytest.mark.parametrize("any_whitespace", [True, False], ids=["any_ws", "compact"])
def test_format_types_lower_to_the_parse_of_their_printed_grammar(any_whitespace: bool) -> None:
    for tag in _format_cases():
        _check(json.dumps(tag), any_whitespace=any_whitespace)


def _preset_tags() -> Iterator[str]:
    tools = _module("test_structural_tag_styles").TOOLS
    choices = _module("test_structural_tag_styles").CHOICES
    for family in MODEL_FAMILIES:
        for choice in choices:
            for reasoning in ("enabled", "disabled"):
                try:
                    tag = get_model_structural_tag(family, tools, choice, reasoning)
                except ValueError:
                    continue
                yield tag.model_dump_json() if hasattr(tag, "model_dump_json") else json.dumps(tag)


@pytest.mark.parametrize("tokenizer", [None, "llama3.1", "gpt-oss"])
def test_preset_tags_lower_to_the_parse_of_their_printed_grammar(tokenizer: Any) -> None:
    info = hf_tokenizer_info(tokenizer) if tokenizer else None
    tags = list(_preset_tags())
    assert len(tags) >= len(MODEL_FAMILIES)
    for tag in tags:
        _check(tag, info)
        _check(tag, info, any_whitespace=False)


def test_xgrammar_format_tags_lower_to_the_parse_of_their_printed_grammar() -> None:
    from preset_support import bfcl_cases
    from xgrammar_oracle import build_tags

    info = hf_tokenizer_info("llama3.1")
    for case in bfcl_cases("multiple", 3):
        for built in build_tags(case.tools):
            _check(built.tag_json, info)
            _check(built.tag_json)



@pytest.mark.parametrize(
    ("schema", "attribute"),
    [
        ({"type": "array", "items": {"type": "string"}, "uniqueItems": True}, "[unique_items]"),
        ({"type": "array", "items": {"type": "integer"}, "uniqueItems": True}, "[unique_item]"),
        ({"type": "string", "format": "email", "maxLength": 40}, "[json_chars="),
    ],
    ids=["unique_items", "unique_item", "json_chars"],
)
def test_embedded_rule_attributes_survive(schema: dict, attribute: str) -> None:
    # The rule attributes of an embedded JSON schema's grammar stay on its rules in the tag's
    # grammar (a lost [unique_items] would let a tag repeat items its schema forbids).
    tag = json.dumps({"type": "structural_tag", "format": {"type": "json_schema", "json_schema": schema}})
    assert attribute in _native._structural_tag_to_ebnf(tag)
    _check(tag)


def test_embedded_unique_items_are_enforced() -> None:
    import xg2_plugin as xg
    from xg2_test_support import hf_compiler

    schema = {"type": "array", "items": {"type": "string"}, "uniqueItems": True}
    tag = {"type": "structural_tag", "format": {"type": "json_schema", "json_schema": schema}}
    grammar = hf_compiler("llama3.1").compile_structural_tag(json.dumps(tag))
    assert xg.GrammarMatcher(grammar).accept_string('["a", "b"]')
    assert not xg.GrammarMatcher(grammar).accept_string('["a", "a"]')


def test_lowered_tags_are_keyed_by_their_grammar():
    # The lowered-tag key is the grammar's structure (hash and node-for-node equality), not its
    # printed text: spellings of one grammar are one key and share one compiled grammar; tags
    # whose grammars differ anywhere (a literal, a schema bound, a rule's place) are different keys.
    import xg2_plugin as xg

    compiler = xg.GrammarCompiler(hf_tokenizer_info("llama3.1"))
    native = compiler._native
    schema = {"type": "object", "properties": {"n": {"type": "integer", "maximum": 5}}, "required": ["n"]}
    tag = {"type": "structural_tag", "format": {"type": "tag", "begin": "<f>", "content": {
        "type": "json_schema", "json_schema": schema}, "end": "</f>"}}
    spellings = [json.dumps(tag), json.dumps(tag, indent=2, sort_keys=True)]
    lowered = [native.lower_structural_tag(text, True) for text in spellings]
    assert lowered[0] == lowered[1] and hash(lowered[0]) == hash(lowered[1])
    first = compiler.compile_structural_tag(spellings[0])
    before = compiler.cache_stats["hits"]
    assert compiler.compile_structural_tag(spellings[1]) is first
    assert compiler.cache_stats["hits"] == before + 1
    variants = [
        json.dumps({**tag, "format": {**tag["format"], "end": "</g>"}}),
        json.dumps({**tag, "format": {**tag["format"], "content": {
            "type": "json_schema", "json_schema": {**schema, "properties": {"n": {"type": "integer", "maximum": 6}}}}}}),
        json.dumps({"type": "structural_tag", "format": {"type": "sequence", "elements": [
            {"type": "const_string", "value": "x"}, tag["format"]]}}),
    ]
    for text in variants:
        other = native.lower_structural_tag(text, True)
        assert other != lowered[0]
        assert _native._structural_tag_to_ebnf(text, hf_tokenizer_info("llama3.1")._handle) != \
            _native._structural_tag_to_ebnf(spellings[0], hf_tokenizer_info("llama3.1")._handle)
    assert native.lower_structural_tag(spellings[0], False) != lowered[0]  # compact JSON whitespace
