"""Lark grammars lower to a grammar built directly through GrammarBuilder, with no EBNF text
round trip (frontends/lark/lark_lowering.h; issue 39): rules, terminals, regexes (the regex
frontend's nodes), %ignore with its lookaheads and %json conversions (embedded as the JSON Schema
frontend built them). For every grammar, what is built is node for node the parse of the EBNF it
prints, so the compiled grammar and its masks are what a parse of that text gives."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import xg2_plugin as xg
from xg2_plugin import _native
from xg2_test_support import hf_compiler, hf_tokenizer_info

TOKENIZER = "llama3.1"
_HERE = Path(__file__).parent


def _test_module_grammars() -> list[str]:
    import importlib.util

    spec = importlib.util.spec_from_file_location("_lark_direct_grammars", _HERE / "test_lark_grammars.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    texts = [text for text, _, _ in module.GRAMMARS.values()]
    texts += [f"start: {name}\n%import common.{name}" for name in module.COMMON]
    return texts


EXTENSIONS = [
    'start: TEXT | "call " fun\nTEXT: /[^{c][^\\n]*/\nfun: %json ' + json.dumps(
        {"type": "object", "properties": {"city": {"type": "string", "maxLength": 8}}, "required": ["city"]}),
    'start: "done" <|eot_id|> | "id" <[128009]>',
    'start: "a:" gen "."\ngen[max_tokens=3]: /[a-z ]+/',
    '%llguidance {}\nstart: "x"{2,3} "y"{,1} DIGITS\nDIGITS: /[0-9]/{2}',
    'start: "SeLeCt"i "a".."f"+ /(?:x|y)*z/s /./s',
    'start: A B\nA: "x"\nB: /y+/\n%ignore " "\n%ignore /\\t+/\n%import common.NEWLINE\n%ignore NEWLINE',
    'start: A\nA: "x"\n%import common.C_COMMENT\n%ignore C_COMMENT\n%import common.WS\n%ignore WS',
    'start: A* %json {"type": "integer"}\nA: "ab"\n%ignore "--" /[a-c]+/',
]


@pytest.mark.parametrize("text", _test_module_grammars() + EXTENSIONS)
def test_built_grammar_is_the_parse_of_its_print(text):
    handle = hf_tokenizer_info(TOKENIZER)._handle
    assert _native._lark_grammar_matches_parse(text, handle), text


def test_printed_view_is_the_compiled_grammars_text():
    text = 'start: NAME ("," NAME)*\nNAME: /[a-z]+/\n%import common.WS\n%ignore WS'
    printed = _native._lark_to_ebnf(text, hf_tokenizer_info(TOKENIZER)._handle)
    assert printed.startswith("root ::= r_start lark_ignore_end*\n")
    assert _native._ebnf_roundtrip(printed, "root") == printed
    assert hf_compiler(TOKENIZER).compile_lark(text).ebnf == printed


@pytest.mark.parametrize("text, where", [
    ('start: "a"~2000000', "line 1, column 8"),
    ('start: "x"\n  | A\nA: "a"{0,2000000}', "line 3, column 4"),
])
def test_repetition_bound_over_the_limit_names_the_lark_place(text, where):
    with pytest.raises(xg.ResourceLimitError) as raised:
        hf_compiler(TOKENIZER).compile_lark(text)
    message = str(raised.value)
    assert where in message and "repetition bound exceeds the limit" in message, message
