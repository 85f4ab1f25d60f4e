"""The names code written for xgrammar reaches for, on our package: each exists, takes
xgrammar's parameters (names and kinds), and does the same thing, checked on the real engine
(xgrammar itself is only read for its signatures and, where noted, as an oracle)."""

from __future__ import annotations

import inspect
import sys
import subprocess
from typing import Any

import pytest
from pydantic import BaseModel

import xg2_plugin as xg
from xg2_plugin.structural_tag import StructuralTagItem, legacy_structural_tag
from xg2_test_support import child_env, hf_compiler, string_accepted

TOKENIZER = "gpt2"

# (our object, xgrammar's dotted name): the parameters of xgrammar's must all be ours too.
CALLABLES = [
    (lambda: xg.Grammar.from_json_schema, "Grammar.from_json_schema"),
    (lambda: xg.Grammar.from_ebnf, "Grammar.from_ebnf"),
    (lambda: xg.Grammar.from_regex, "Grammar.from_regex"),
    (lambda: xg.Grammar.union, "Grammar.union"),
    (lambda: xg.GrammarMatcher.__init__, "GrammarMatcher.__init__"),
    (lambda: xg.GrammarCompiler.__init__, "GrammarCompiler.__init__"),
    (lambda: xg.GrammarCompiler.compile_json_schema, "GrammarCompiler.compile_json_schema"),
    (lambda: xg.GrammarCompiler.compile_grammar, "GrammarCompiler.compile_grammar"),
    (lambda: xg.TokenizerInfo.from_vocab_and_metadata, "TokenizerInfo.from_vocab_and_metadata"),
    (lambda: xg.get_model_structural_tag, "get_model_structural_tag"),
    (lambda: xg.StructuralTagItem, "StructuralTagItem"),
]

IGNORED_PARAMETERS = {
    # xgrammar's compile_grammar(grammar, *, root_rule_name): ours names its first parameter
    # ebnf (it takes EBNF text or a Grammar) and takes root_rule_name positionally too.
    ("GrammarCompiler.compile_grammar", "grammar"),
    ("GrammarCompiler.compile_grammar", "root_rule_name"),
    # xgrammar >= 0.2: a per-rule sampling temperature, not part of constrained decoding's masks.
    ("GrammarMatcher.__init__", "default_temperature"),
}


def _xgrammar_object(xgr: Any, dotted: str) -> Any:
    value = xgr
    for part in dotted.split("."):
        value = getattr(value, part)
    return value


@pytest.mark.parametrize("ours, dotted", CALLABLES, ids=[dotted for _, dotted in CALLABLES])
def test_takes_xgrammars_parameters(ours: Any, dotted: str) -> None:
    xgr = pytest.importorskip("xgrammar")
    their_parameters = inspect.signature(_xgrammar_object(xgr, dotted)).parameters
    our_parameters = inspect.signature(ours()).parameters
    for name, parameter in their_parameters.items():
        if (dotted, name) in IGNORED_PARAMETERS:
            continue
        assert name in our_parameters, f"{dotted} lacks {name}"
        assert our_parameters[name].kind == parameter.kind, f"{dotted}({name}): {our_parameters[name].kind}"


def test_top_level_structural_tag_names_load_lazily() -> None:
    # A JSON-only user does not pay for the presets' and structural tags' pydantic models.
    code = ("import sys, xg2_plugin as xg; assert 'xg2_plugin.presets' not in sys.modules; "
            "assert xg.get_builtin_structural_tag is xg.get_model_structural_tag; "
            "assert 'xg2_plugin.presets' in sys.modules; print(xg.StructuralTag.__name__)")
    out = subprocess.run([sys.executable, "-c", code], env=child_env(), capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "StructuralTag"
    with pytest.raises(AttributeError, match="no_such_name"):
        getattr(xg, "no_such_name")


class Weather(BaseModel):
    city: str


def test_legacy_tags_and_triggers_compile_to_the_structures_form() -> None:
    tags = [StructuralTagItem(begin="<w>", schema=Weather, end="</w>"),
            StructuralTagItem(begin="<n>", schema='{"type": "integer"}', end="</n>")]
    legacy = legacy_structural_tag(tags, ["<w>", "<n>"])
    assert legacy["structures"][0]["schema"] == Weather.model_json_schema()
    grammar = hf_compiler(TOKENIZER).compile_structural_tag(legacy)
    assert string_accepted(grammar, 'a <w>{"city": "Oslo"}</w> b <n>42</n>')
    assert not string_accepted(grammar, "<w>42</w>")
    assert not string_accepted(grammar, '<n>{"city": "Oslo"}</n>')


@pytest.mark.parametrize("tags, triggers", [
    ("<w>", ["<w>"]),
    ([{"begin": "<w>", "schema": {}, "end": "</w>"}], ["<w>"]),
    ([StructuralTagItem(begin="<w>", schema={}, end="</w>")], "<w>"),
    ([StructuralTagItem(begin="<w>", schema={}, end="</w>")], [1]),
])
def test_legacy_pair_of_the_wrong_shape_is_refused(tags: Any, triggers: Any) -> None:
    with pytest.raises(xg.StructuralTagError, match="legacy structural tag"):
        legacy_structural_tag(tags, triggers)


def test_compile_grammar_takes_root_rule_name_by_keyword() -> None:
    grammar = hf_compiler(TOKENIZER).compile_grammar('start ::= "x"', root_rule_name="start")
    assert string_accepted(grammar, "x")


def test_max_whitespace_cnt_is_max_whitespace() -> None:
    compiler = xg.GrammarCompiler(hf_compiler(TOKENIZER).tokenizer_info)
    schema = {"type": "array", "items": {"type": "integer"}}
    capped = compiler.compile_json_schema(schema, max_whitespace=2)
    before = compiler.cache_stats
    again = compiler.compile_json_schema(schema, max_whitespace_cnt=2)
    assert compiler.cache_stats["misses"] == before["misses"] and compiler.cache_stats["hits"] == before["hits"] + 1
    assert compiler.compile_json_schema_async(schema, max_whitespace_cnt=2).result() is not None
    assert compiler.cache_stats["misses"] == before["misses"]
    for grammar in (capped, again):
        assert string_accepted(grammar, "[1,  2]") and not string_accepted(grammar, "[1,   2]")
    with pytest.raises(xg.InvalidArgumentError, match="max_whitespace_cnt"):
        compiler.compile_json_schema(schema, max_whitespace=1, max_whitespace_cnt=2)
    with pytest.raises(xg.InvalidArgumentError, match="max_whitespace_cnt"):
        compiler.compile_json_schema_async(schema, max_whitespace=1, max_whitespace_cnt=2)


def test_deprecated_tags_and_triggers_pair_compiles_as_the_structures_form() -> None:
    compiler = xg.GrammarCompiler(hf_compiler(TOKENIZER).tokenizer_info)
    tags = [StructuralTagItem(begin="<w>", schema=Weather, end="</w>")]
    direct = compiler.compile_structural_tag(legacy_structural_tag(tags, ["<w>"]))
    before = compiler.cache_stats
    with pytest.warns(DeprecationWarning, match="deprecated"):
        pair = compiler.compile_structural_tag(tags, ["<w>"])
    with pytest.warns(DeprecationWarning, match="deprecated"):
        from_future = compiler.compile_structural_tag_async(tags, ["<w>"]).result()
    assert compiler.cache_stats["misses"] == before["misses"]
    for grammar in (direct, pair, from_future):
        assert string_accepted(grammar, 'say <w>{"city": "Rome"}</w>')
    with pytest.raises(xg.StructuralTagError):
        with pytest.warns(DeprecationWarning):
            compiler.compile_structural_tag("<w>", ["<w>"])


def test_cache_size_names() -> None:
    compiler = xg.GrammarCompiler(hf_compiler(TOKENIZER).tokenizer_info, cache_limit_bytes=1 << 26)
    assert compiler.cache_limit_bytes == 1 << 26
    compiler.compile_regex("[a-z]+")
    assert compiler.get_cache_size_bytes() == compiler.cache_size_bytes > 0


def test_compiled_grammar_gives_back_its_grammar() -> None:
    compiler = hf_compiler(TOKENIZER)
    compiled = compiler.compile_json_schema({"type": "object", "properties": {"a": {"type": "integer"}}})
    grammar = compiled.grammar
    assert isinstance(grammar, xg.Grammar) and str(grammar) == str(xg.Grammar.from_ebnf(compiled.ebnf))
    again = compiler.compile_grammar(grammar)
    for text in ['{"a": 1}', "{}", '{"a": "x"}', '{"b": 1}']:
        assert string_accepted(again, text) == string_accepted(compiled, text), text
