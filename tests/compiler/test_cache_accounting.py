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
