"""``Grammar`` (xgrammar's uncompiled grammar object): each constructor checks its input with the
frontend's typed errors, prints EBNF, and compiles through ``compile_grammar`` to the very grammar
the matching ``compile_*`` call gives (one cache entry, so the same masks); the printed EBNF,
compiled as text, has the same sentences; ``union`` / ``concat`` accept what their parts say;
serialization reads back an equal grammar; the names and parameters cover xgrammar's."""

from __future__ import annotations

import inspect
import json
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable

import pytest

import xg2_plugin as xg
from xg2_plugin import Grammar
from xg2_test_support import hf_tokenizer_info, string_accepted

TOKENIZER = "gpt2"

SCHEMA = {"type": "object", "properties": {"name": {"type": "string", "maxLength": 8}, "n": {"type": "integer"}},
          "required": ["name"]}
TAG = {
    "type": "structural_tag",
    "format": {"type": "triggered_tags", "triggers": ["<call>"],
               "tags": [{"begin": "<call>", "content": {"type": "json_schema", "json_schema": SCHEMA},
                         "end": "</call>"}]},
}
EBNF = 'start ::= "id-" digits\ndigits ::= [0-9]+'
LARK = 'start: WORD ("," WORD)*\nWORD: /[a-z]+/'

# (grammar, the direct compile of the same source, sentences, non-sentences)
CASES: dict[str, tuple[Callable[[], Grammar], Callable[[xg.GrammarCompiler], xg.CompiledGrammar], list[str], list[str]]] = {
    "ebnf": (lambda: Grammar.from_ebnf(EBNF, root_rule_name="start"),
             lambda c: c.compile_grammar(EBNF, "start"), ["id-7", "id-0042"], ["id-", "7", "id-7x"]),
    "json_schema": (lambda: Grammar.from_json_schema(SCHEMA, any_whitespace=False, separators=(",", ":")),
                    lambda c: c.compile_json_schema(SCHEMA, any_whitespace=False, separators=(",", ":")),
                    ['{"name":"ab"}', '{"name":"","n":-3}'],
                    ['{"n":1}', '{"name": "ab"}', '{"name":"abcdefghi"}']),
    "json_schema_pretty": (lambda: Grammar.from_json_schema(json.dumps(SCHEMA), indent=2, strict_mode=False),
                           lambda c: c.compile_json_schema(json.dumps(SCHEMA), indent=2, strict_mode=False),
                           ['{\n  "name": "x"\n}'], ['{"name": "x"}']),
    "regex": (lambda: Grammar.from_regex(r"[a-c]{2}\d+"), lambda c: c.compile_regex(r"[a-c]{2}\d+"),
              ["ab1", "cc123"], ["a1", "ab", "abc1"]),
    "structural_tag": (lambda: Grammar.from_structural_tag(TAG), lambda c: c.compile_structural_tag(TAG),
                       ['hi <call>{"name": "a"}</call> bye', "plain text"], ['<call>{"n": 1}</call>']),
    "lark": (lambda: Grammar.from_lark(LARK), lambda c: c.compile_lark(LARK), ["ab", "ab,cd"], ["ab,", ",ab", "AB"]),
    "builtin_json": (Grammar.builtin_json_grammar, lambda c: c.compile_builtin_json_grammar(),
                     ['{"a": [1, true, null]}', "3.5"], ["{", "[1,]"]),
}


@pytest.fixture()
def compiler() -> xg.GrammarCompiler:
    return xg.GrammarCompiler(hf_tokenizer_info(TOKENIZER))


@pytest.mark.parametrize("case", sorted(CASES))
def test_compiles_to_the_direct_compile(compiler: xg.GrammarCompiler, case: str) -> None:
    make, direct, sentences, others = CASES[case]
    direct(compiler)
    before = compiler.cache_stats
    compiled = compiler.compile_grammar(make())
    after = compiler.cache_stats
    # One cache entry for both: the Grammar's compile is a hit on the direct compile's key.
    assert (after["hits"] - before["hits"], after["misses"] - before["misses"]) == (1, 0)
    assert after["entries"] == before["entries"]
    for text in sentences:
        assert string_accepted(compiled, text), text
    for text in others:
        assert not string_accepted(compiled, text), text


@pytest.mark.parametrize("case", sorted(CASES))
def test_printed_ebnf_has_the_same_sentences(compiler: xg.GrammarCompiler, case: str) -> None:
    make, direct, sentences, others = CASES[case]
    grammar = make()
    assert str(grammar) == grammar.to_string() and str(grammar).startswith("root ::= ")
    from_text = compiler.compile_grammar(str(grammar))
    reference = direct(compiler)
    for text in sentences + others:
        assert string_accepted(from_text, text) == string_accepted(reference, text), text


@pytest.mark.parametrize("case", sorted(CASES))
def test_serialization_reads_back_an_equal_grammar(compiler: xg.GrammarCompiler, case: str) -> None:
    grammar = CASES[case][0]()
    again = Grammar.deserialize_json(grammar.serialize_json())
    assert again == grammar and hash(again) == hash(grammar) and str(again) == str(grammar)
    compiler.compile_grammar(grammar)
    before = compiler.cache_stats
    compiler.compile_grammar(again)
    assert compiler.cache_stats["misses"] == before["misses"]


def test_union_and_concat_accept_what_their_parts_say(compiler: xg.GrammarCompiler) -> None:
    parts = [CASES[name][0]() for name in ("ebnf", "regex", "json_schema")]
    compiled_parts = [compiler.compile_grammar(part) for part in parts]
    samples = [text for name in ("ebnf", "regex", "json_schema") for text in CASES[name][2] + CASES[name][3]]
    union = compiler.compile_grammar(Grammar.union(*parts))
    for text in samples:
        assert string_accepted(union, text) == any(string_accepted(p, text) for p in compiled_parts), text
    concat = compiler.compile_grammar(Grammar.concat(parts[0], parts[1]))
    for first in CASES["ebnf"][2] + CASES["ebnf"][3]:
        for second in CASES["regex"][2] + CASES["regex"][3]:
            # The two parts' languages cannot split one string two ways (digits end the first
            # and a letter starts the second), so the concatenation accepts exactly the pairs.
            expected = string_accepted(compiled_parts[0], first) and string_accepted(compiled_parts[1], second)
            assert string_accepted(concat, first + second) == expected, (first, second)
    nested = compiler.compile_grammar(Grammar.union(Grammar.union(parts[0], parts[1]), parts[2]))
    for text in samples:
        assert string_accepted(nested, text) == string_accepted(union, text), text


def test_union_with_a_structural_tag_keeps_its_dispatch(compiler: xg.GrammarCompiler) -> None:
    tag = Grammar.from_structural_tag(TAG)
    combined = compiler.compile_grammar(Grammar.concat(Grammar.from_regex("ok: "), tag))
    assert string_accepted(combined, 'ok: text <call>{"name": "a"}</call>')
    assert not string_accepted(combined, 'text <call>{"name": "a"}</call>')
    assert not string_accepted(combined, 'ok: <call>{"n": 1}</call>')


def test_async_and_threads(compiler: xg.GrammarCompiler) -> None:
    grammar = Grammar.from_json_schema(SCHEMA)
    first = compiler.compile_grammar_async(grammar).result()
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda _: compiler.compile_grammar(grammar), range(8)))
    for compiled in [first] + results:
        assert string_accepted(compiled, '{"name": "ab"}')
    assert compiler.cache_stats["misses"] == 1


def test_print_converted_ebnf(capsys: pytest.CaptureFixture[str]) -> None:
    grammar = Grammar.from_regex("a+", print_converted_ebnf=True)
    assert capsys.readouterr().out.strip() == str(grammar).strip()
    Grammar.from_json_schema({"type": "integer"}, print_converted_ebnf=False)
    assert capsys.readouterr().out == ""


@pytest.mark.parametrize("build, error", [
    (lambda: Grammar.from_json_schema({"type": "nonsense"}), xg.SchemaError),
    (lambda: Grammar.from_json_schema({"type": "object", "unevaluatedProperties": False}), xg.UnsupportedSchemaError),
    (lambda: Grammar.from_regex("(ab"), xg.RegexError),
    (lambda: Grammar.from_ebnf("root ::= missing"), xg.GrammarSyntaxError),
    (lambda: Grammar.from_ebnf('a ::= "x"', root_rule_name="b"), xg.GrammarSyntaxError),
    (lambda: Grammar.from_structural_tag({"type": "structural_tag", "format": {"type": "nope"}}),
     xg.StructuralTagError),
    (lambda: Grammar.from_lark("start: a"), xg.GrammarSyntaxError),
    (lambda: Grammar.from_lark("start: a", named_grammars={"a": "x"}), xg.InvalidArgumentError),
    (lambda: Grammar.from_regex(3), TypeError),
    (lambda: Grammar.union(), xg.InvalidArgumentError),
    (lambda: Grammar.concat(Grammar.from_regex("a"), "b"), TypeError),
    (lambda: Grammar.deserialize_json("{"), xg.DeserializationError),
    (lambda: Grammar.deserialize_json('{"format": "other"}'), xg.DeserializationError),
    (lambda: Grammar.deserialize_json(json.dumps({"format": "xg2_plugin.Grammar", "version": 99})),
     xg.DeserializationError),
    (lambda: Grammar.deserialize_json(json.dumps({"format": "xg2_plugin.Grammar", "version": 1, "kind": "regex",
                                                  "source": "a", "options": {"evil": 1}})),
     xg.DeserializationError),
])
def test_bad_input_raises_a_typed_error(build: Callable[[], Any], error: type) -> None:
    with pytest.raises(error):
        build()


def test_a_grammar_has_its_own_root(compiler: xg.GrammarCompiler) -> None:
    with pytest.raises(xg.InvalidArgumentError, match="root_rule_name"):
        compiler.compile_grammar(Grammar.from_regex("a"), "start")
    with pytest.raises(xg.InvalidArgumentError, match="root_rule_name"):
        compiler.compile_grammar_async(Grammar.from_regex("a"), root_rule_name="start")


def test_lenient_schema_warns_for_a_dropped_keyword() -> None:
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}, "unevaluatedProperties": False}
    with pytest.raises(xg.UnsupportedSchemaError):
        Grammar.from_json_schema(schema)
    with pytest.warns(UserWarning):
        Grammar.from_json_schema(schema, lenient=True)


def test_covers_xgrammars_names_and_parameters() -> None:
    xgr = pytest.importorskip("xgrammar")
    for name, theirs in vars(xgr.Grammar).items():
        if name.startswith("_") or not callable(getattr(xgr.Grammar, name)):
            continue
        ours = getattr(Grammar, name, None)
        assert ours is not None, f"Grammar.{name} missing"
        their_params = inspect.signature(getattr(xgr.Grammar, name)).parameters
        our_params = inspect.signature(ours).parameters
        if any(p.kind is p.VAR_POSITIONAL or p.kind is p.VAR_KEYWORD for p in their_params.values()):
            continue  # from_structural_tag(*args, **kwargs): its overloads are the documented forms
        for param_name, param in their_params.items():
            assert param_name in our_params or any(p.kind is p.VAR_POSITIONAL for p in our_params.values()), \
                f"Grammar.{name} lacks parameter {param_name}"
            if param_name in our_params:
                assert our_params[param_name].kind == param.kind, f"Grammar.{name}({param_name}) kind differs"
    compile_params = inspect.signature(xg.GrammarCompiler.compile_grammar).parameters
    assert "root_rule_name" in compile_params
