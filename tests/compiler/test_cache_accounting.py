"""Byte accounting of the compiler's caches (issue #5: memory under the default limits)."""

from __future__ import annotations

import xg2_plugin as xg
from xg2_test_support import hf_tokenizer_info

SMALL = {"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"}}}
LARGE = {"type": "string", "format": "date-time"}


def test_evicting_a_grown_grammar_takes_back_what_was_charged() -> None:
    info = hf_tokenizer_info("llama3.1")
    large_size = xg.GrammarCompiler(info, precompute_nodes=0).compile_json_schema(LARGE).memory_size_bytes
    compiler = xg.GrammarCompiler(info, precompute_nodes=0, cache_limit_bytes=large_size + 1024)
    small = compiler.compile_json_schema(SMALL)
    charged = compiler.cache_stats["bytes"]
    assert charged == small.memory_size_bytes
    bitmask = xg.allocate_token_bitmask(1, info.vocab_size)
    xg.GrammarMatcher(small).fill_next_token_bitmask(bitmask)
    assert small.memory_size_bytes > charged  # its own classifications grew it after caching
    large = compiler.compile_json_schema(LARGE)
    stats = compiler.cache_stats
    assert stats["evictions"] == 1 and stats["entries"] == 1
    assert stats["bytes"] == large.memory_size_bytes == large_size



def test_a_grammar_is_charged_what_its_compile_built() -> None:
    # The background precompute (on by default) adds classifications to a fresh grammar while
    # the compile returns, and fills add more: the charge leaves them out, so it does not
    # depend on how far they got.
    info = hf_tokenizer_info("llama3.1")
    compiler = xg.GrammarCompiler(info)
    grammar = compiler.compile_json_schema(SMALL)
    bitmask = xg.allocate_token_bitmask(1, info.vocab_size)
    xg.GrammarMatcher(grammar).fill_next_token_bitmask(bitmask)
    charged = compiler.cache_stats["bytes"]
    assert charged == grammar._handle.built_memory_bytes
    assert grammar.memory_size_bytes > charged


# A grammar whose rules after the first bytes are left unbuilt by the compile (rule DFAs are
# built on first use, docs/lazy_rule_dfas.md): a matcher builds them as it predicts them.
LAZY_GRAMMAR = r'''
root ::= "begin " statement (";" statement)*
statement ::= assign | print | loop
assign ::= "let " ident " = " literal
print ::= "print " (ident | literal)
loop ::= "while " ident " do " statement " end"
ident ::= [a-z]+
literal ::= [0-9]+ | "\"" [a-z ]* "\""
'''
LAZY_TEXT = 'begin let x = 1;print "a b";while y do print x end'


def _walk(grammar: xg.CompiledGrammar) -> None:
    assert xg.GrammarMatcher(grammar).accept_string(LAZY_TEXT)


def test_the_charge_follows_the_rule_dfas_built_after_caching() -> None:
    info = hf_tokenizer_info("llama3.1")
    compiler = xg.GrammarCompiler(info, precompute_nodes=0)
    grammar = compiler.compile_grammar(LAZY_GRAMMAR)
    charged = compiler.cache_stats["bytes"]
    assert charged == grammar._handle.built_memory_bytes
    _walk(grammar)  # builds the statement rules: new snapshots, mask-cache tables
    grown = grammar._handle.built_memory_bytes
    assert grown > charged
    assert compiler.cache_stats["bytes"] == grown
    # The eager build of the same grammar is charged once and never grows.
    compiler._use_eager_rule_dfas()
    eager = compiler.compile_grammar(LAZY_GRAMMAR)
    eager_charge = compiler.cache_stats["bytes"]
    _walk(eager)
    assert eager._handle.built_memory_bytes == eager_charge == compiler.cache_stats["bytes"]


def test_a_grammar_that_grows_past_the_bound_is_evicted_at_the_next_use() -> None:
    info = hf_tokenizer_info("llama3.1")
    probe = xg.GrammarCompiler(info, precompute_nodes=0, cache_enabled=False)
    probe_grammar = probe.compile_grammar(LAZY_GRAMMAR)
    before = probe_grammar._handle.built_memory_bytes
    _walk(probe_grammar)
    after = probe_grammar._handle.built_memory_bytes
    assert after > before + 2

    compiler = xg.GrammarCompiler(info, precompute_nodes=0, cache_limit_bytes=(before + after) // 2)
    grammar = compiler.compile_grammar(LAZY_GRAMMAR)
    assert compiler.cache_stats["entries"] == 1
    _walk(grammar)
    stats = compiler.cache_stats
    assert stats["entries"] == 0 and stats["evictions"] == 1 and stats["bytes"] == 0
    assert compiler.compile_grammar(LAZY_GRAMMAR) is not grammar  # compiled anew
