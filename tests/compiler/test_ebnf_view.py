"""A compiled grammar's EBNF is a view printed on first use (support/lazy_text.h): the compile
builds the grammar and prints nothing, and ``CompiledGrammar.ebnf`` prints the text from the
source the grammar was compiled from. The text is the one the frontend prints for that source,
whichever the frontend; reading it from many threads at once prints it once and gives every
reader the same text; serialization carries it; memory accounting counts what is held."""

from __future__ import annotations

import json
import threading

import pytest

import xg2_plugin as xg
from xg2_plugin import _native
from xg2_plugin.compiler import ebnf_string_literal
from xg2_plugin.structural_tag import structural_tag_to_ebnf
from xg2_plugin.testing import json_schema_to_ebnf, regex_to_ebnf
from xg2_test_support import hf_tokenizer_info

TOKENIZER = "llama3.1"

SCHEMAS = [
    {"type": "object", "properties": {"name": {"type": "string", "maxLength": 12}, "age": {"type": "integer"}},
     "required": ["name"]},
    {"type": "array", "items": {"enum": ["red", "green", 3, None]}, "minItems": 1, "maxItems": 4},
    {"$defs": {"node": {"type": "object", "properties": {"next": {"$ref": "#/$defs/node"}}}},
     "$ref": "#/$defs/node"},
    {"type": "string", "pattern": "^[a-f0-9]{4,8}$"},
]

TAG = {
    "type": "structural_tag",
    "format": {
        "type": "triggered_tags",
        "triggers": ["<call>"],
        "tags": [{"begin": "<call>", "content": {"type": "json_schema", "json_schema": SCHEMAS[0]},
                  "end": "</call>"}],
    },
}


@pytest.fixture(scope="module")
def compiler() -> xg.GrammarCompiler:
    return xg.GrammarCompiler(hf_tokenizer_info(TOKENIZER), cache_enabled=False)


@pytest.mark.parametrize("schema", SCHEMAS, ids=range(len(SCHEMAS)))
@pytest.mark.parametrize("options", [{}, {"any_whitespace": False}, {"indent": 2}], ids=["default", "compact", "indent"])
def test_a_schema_grammar_shows_the_text_its_conversion_prints(compiler, schema, options):
    text = json.dumps(schema)
    assert compiler.compile_json_schema(text, **options).ebnf == json_schema_to_ebnf(text, **options)


def test_a_lenient_schema_grammar_prints_the_lenient_conversion(compiler):
    text = json.dumps({"type": "object", "properties": {"pattern": {"type": "string", "format": "regex"}}})
    with pytest.warns(UserWarning, match="format 'regex'"):
        grammar = compiler.compile_json_schema(text, lenient=True)
    assert grammar.ebnf == json_schema_to_ebnf(text, lenient=True)


def test_every_frontend_shows_the_text_it_prints(compiler):
    info = hf_tokenizer_info(TOKENIZER)
    pattern = r"(ab|c+)[0-9]{2,3}\.x?"
    assert compiler.compile_regex(pattern).ebnf == "root ::= " + regex_to_ebnf(pattern)
    assert compiler.compile_builtin_json_grammar().ebnf == _native._builtin_json_ebnf()
    choices = ["yes", 'say "no"', "mañana\n"]
    assert compiler.compile_choice(choices).ebnf == "root ::= " + " | ".join(
        ebnf_string_literal(c) for c in choices)
    lark = 'start: NAME ("," NAME)*\nNAME: /[a-z]+/\n%import common.WS\n%ignore WS'
    assert compiler.compile_lark(lark).ebnf == _native._lark_to_ebnf(lark, info._handle)
    ebnf = 'root ::= "a" b*\nb ::= [0-9]'
    assert compiler.compile_grammar(ebnf).ebnf == ebnf
    for any_whitespace in (True, False):
        tag = compiler.compile_structural_tag(json.dumps(TAG), any_whitespace=any_whitespace)
        assert tag.ebnf == structural_tag_to_ebnf(TAG, info, any_whitespace=any_whitespace)


def test_concurrent_first_readers_get_one_text(compiler):
    schema = json.dumps(SCHEMAS[0])
    expected = json_schema_to_ebnf(schema)
    for _ in range(5):
        grammar = compiler.compile_json_schema(schema)
        barrier = threading.Barrier(4)
        texts = []

        def read() -> None:
            barrier.wait()
            texts.append(grammar.ebnf)

        threads = [threading.Thread(target=read) for _ in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert texts == [expected] * 4


def test_serialization_carries_the_printed_text(compiler):
    grammar = compiler.compile_json_schema(json.dumps(SCHEMAS[1]))
    restored = xg.CompiledGrammar.deserialize_bytes(grammar.serialize_bytes(), hf_tokenizer_info(TOKENIZER))
    assert restored.ebnf == grammar.ebnf == json_schema_to_ebnf(json.dumps(SCHEMAS[1]))


def test_memory_counts_the_source_then_the_text(compiler):
    # Before printing the grammar holds the schema text (and the options and limits, a few
    # hundred bytes); after it, the printed text (here some 60 KB) and not the schema. The
    # compile itself printed nothing: the text was not counted before it was read.
    schema = json.dumps({"type": "object",
                         "properties": {f"p{i}": {"type": "string", "format": "date-time"} for i in range(3)}})
    grammar = compiler.compile_json_schema(schema)
    before = grammar._handle.built_memory_bytes
    text = grammar.ebnf
    after = grammar._handle.built_memory_bytes
    assert len(text) > len(schema) + 4096
    assert after - before >= len(text) - len(schema) - 1024
    assert grammar.memory_size_bytes >= after
