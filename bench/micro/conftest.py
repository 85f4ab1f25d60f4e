"""Fixtures for the hot-path micro-benchmarks (pytest-benchmark; not part of the test suite).

Run with the benchmark environment (``bash bench/run.sh --help`` creates it):

    bench/.venv/bin/pytest bench/micro --benchmark-only

The fixtures use the Llama-3.1 tokenizer from the shared data folder (``$XG2_DATA_DIR``)
and a small JSON Schema; until the JSON Schema frontend is available they fall back to an
equivalent EBNF grammar so the benchmarks still run.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Callable

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from harness.config import data_dir  # noqa: E402

xg2 = pytest.importorskip("xg2_plugin")
tokenizers = pytest.importorskip("tokenizers")

SMALL_SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "age": {"type": "integer", "minimum": 0},
        "email": {"type": "string"},
        "tags": {"type": "array", "items": {"type": "string"}},
        "active": {"type": "boolean"},
    },
    "required": ["name", "age"],
    "additionalProperties": False,
}

# The same language (flexible whitespace, fixed property order) for the EBNF fallback.
SMALL_EBNF = r'''
root ::= "{" ws "\"name\"" ws ":" ws string ws "," ws "\"age\"" ws ":" ws integer
         (ws "," ws "\"email\"" ws ":" ws string)? (ws "," ws "\"tags\"" ws ":" ws tags)?
         (ws "," ws "\"active\"" ws ":" ws boolean)? ws "}"
tags ::= "[" ws (string (ws "," ws string)*)? ws "]"
boolean ::= "true" | "false"
integer ::= "0" | [1-9] [0-9]*
string ::= "\"" char* "\""
char ::= [^"\\\x00-\x1f] | "\\" (["\\/bfnrt] | "u" [0-9a-fA-F]{4})
ws ::= [ \t\n\r]*
'''

# A prefix that ends inside a JSON string (dense mask: almost every token is allowed) and one
# that ends between JSON tokens (sparse mask: a key or a closing brace must follow).
DENSE_PREFIX = '{"name": "Alice Johnson, who lives in'
SPARSE_PREFIX = '{"name": "Alice", "age": 42'


@pytest.fixture(scope="session")
def tokenizer() -> Any:
    path = data_dir() / "tokenizers" / "hf" / "llama3.1" / "tokenizer.json"
    if not path.is_file():
        pytest.skip(f"no tokenizer at {path} (set XG2_DATA_DIR)")
    return tokenizers.Tokenizer.from_file(str(path))


@pytest.fixture(scope="session")
def info(tokenizer: Any) -> Any:
    return xg2.TokenizerInfo.from_huggingface(tokenizer)


def compile_small(compiler: Any) -> Any:
    """The small schema through the JSON Schema frontend, or its EBNF twin without one."""
    try:
        return compiler.compile_json_schema(SMALL_SCHEMA)
    except AttributeError:  # the native JSON Schema converter is not built in yet
        return compiler.compile_grammar(SMALL_EBNF)


@pytest.fixture(scope="session")
def grammar(info: Any) -> Any:
    return compile_small(xg2.GrammarCompiler(info))


@pytest.fixture(scope="session")
def matcher_at(grammar: Any, tokenizer: Any) -> Callable[[str], Any]:
    """A fresh matcher that has accepted the tokens of ``text``."""

    def make(text: str) -> Any:
        matcher = xg2.GrammarMatcher(grammar)
        for token in tokenizer.encode(text, add_special_tokens=False).ids:
            assert matcher.accept_token(token), f"prefix {text!r} refused at token {token}"
        return matcher

    return make


@pytest.fixture()
def bitmask(info: Any) -> Any:
    return xg2.allocate_token_bitmask(1, info.vocab_size)
