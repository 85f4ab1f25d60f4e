"""The process's background threads (matcher/mask_cache/precompute_worker.cc): the partial JIT
runs at the lowest priority, the tokenizer tables a classification asks for (a character
class's prefix table) at the default priority, so that on a loaded machine a table arrives
while its class is still being filled. Linux only: read from /proc."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import xg2_plugin as xg
from xg2_plugin import _native
from xg2_test_support import encode_continuation, hf_tokenizer

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="thread priorities read from /proc")

# A pattern whose hex digits run along a chain of one class: its nodes are class roots.
SCHEMA = {"type": "string", "pattern": "^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}$"}
VALUE = '"123e4567-e89b"'


def nice_by_thread_name() -> dict[str, set[int]]:
    """Thread name -> the nice values of the process's threads of that name."""
    found: dict[str, set[int]] = {}
    for task in Path("/proc/self/task").iterdir():
        try:
            name = (task / "comm").read_text().strip()
            stat = (task / "stat").read_text()
        except OSError:  # the thread ended meanwhile
            continue
        # Fields after the command's closing parenthesis start at field 3 (state); nice is 19.
        nice = int(stat[stat.rindex(")") + 2:].split()[16])
        found.setdefault(name, set()).add(nice)
    return found


def test_class_tables_build_at_default_priority_and_precompute_at_lowest():
    # A fresh TokenizerInfo has its own vocabulary index, so the class's table is requested
    # here even when another test of this process built it for the shared one.
    info = xg.TokenizerInfo.from_huggingface(hf_tokenizer("llama3.1"))
    grammar = xg.GrammarCompiler(info, cache_enabled=False, cross_grammar_cache=False).compile_json_schema(SCHEMA)
    matcher = xg.GrammarMatcher(grammar)
    bitmask = xg.allocate_token_bitmask(1, info.vocab_size)
    for token in encode_continuation("llama3.1", VALUE):
        matcher.fill_next_token_bitmask(bitmask)
        assert matcher.accept_token(token)
    _native._wait_for_background_work()
    threads = nice_by_thread_name()
    assert threads.get("xg2-tables") == {0}, threads
    assert threads.get("xg2-precompute") == {19}, threads
