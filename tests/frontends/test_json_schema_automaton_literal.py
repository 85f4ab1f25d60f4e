"""A large regular language of the JSON Schema frontend (a pattern under length bounds, the
product automaton; frontends/json_schema/regular_language.h) reaches the grammar as one
automaton literal (grammar/automaton_literal.h), which the FSM builder copies as its DFA. The
printed EBNF spells the same automaton as right-linear rules, and compiling that text takes the
other path (rules lowered, determinised, minimised and merged): the masks of the two compiled
grammars must be equal at every step of walks through them."""

from __future__ import annotations

import json
import random
import re
import warnings

import numpy as np
import pytest

import xg2_plugin as xg
from xg2_corpus import stratified_sample
from xg2_plugin import _native
from xg2_plugin.testing import json_schema_to_ebnf
from xg2_test_support import data_dir, hf_tokenizer_info

_CORPUS = data_dir() / "jsonschemabench"
# The bench's sample (bench/compile_profile.py, bench/compile_fsm_digest.py).
_SAMPLE = stratified_sample(_CORPUS, 10, seed=0) if _CORPUS.is_dir() else []
# A state rule of a printed automaton literal (AutomatonStateRuleName).
_STATE_RULE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*__s[0-9]+ ::= ", re.MULTILINE)

# sp_335's pattern under its maxLength, and a pattern whose product holds multi-byte classes.
SCHEMAS = [
    {"type": "string", "pattern": "^(\\d+\\.\\d+\\.\\d+.*)$", "maxLength": 32},
    {"type": "string", "pattern": "^[a-zé-ÿ一-龥][0-9a-zé-ÿ一-龥_.-]*[0-9]{2}$", "minLength": 4, "maxLength": 20},
]


def _schema_text(path) -> str:
    return json.dumps(json.loads(path.read_text())["schema"])


def _with_literal(schema_text: str) -> str | None:
    """The printed EBNF when the conversion writes an automaton literal, else None."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ebnf = json_schema_to_ebnf(schema_text)
    except (_native.SchemaError, _native.ResourceLimitError, _native.UnsupportedSchemaError):
        return None
    return ebnf if _STATE_RULE.search(ebnf) else None


_SP_335 = _CORPUS / "Snowplow---sp_335_Normalized.json"
_SAMPLE_WITH_LITERALS = [path for path in _SAMPLE if _with_literal(_schema_text(path)) is not None]
if _SP_335.is_file() and _SP_335 not in _SAMPLE_WITH_LITERALS:
    _SAMPLE_WITH_LITERALS.append(_SP_335)


@pytest.fixture(scope="module")
def compiler() -> xg.GrammarCompiler:
    return xg.GrammarCompiler(hf_tokenizer_info("llama3.1"), cache_enabled=False)


def _compare_walks(compiler: xg.GrammarCompiler, schema_text: str, ebnf: str, walks: int = 4, steps: int = 48) -> int:
    """Random walks through the literal's grammar; at each step both grammars' masks agree and
    both accept the drawn token. Returns the steps compared."""
    literal = compiler.compile_json_schema(schema_text)
    rules = compiler.compile_grammar(ebnf)
    vocab_size = literal.tokenizer_info.vocab_size
    shape = xg.get_bitmask_shape(1, vocab_size)
    rng = random.Random(335)
    compared = 0
    for _ in range(walks):
        a, b = xg.GrammarMatcher(literal), xg.GrammarMatcher(rules)
        stops = set(a.stop_token_ids)
        mask_a, mask_b = np.zeros(shape, dtype=np.int32), np.zeros(shape, dtype=np.int32)
        for _ in range(steps):
            a.fill_next_token_bitmask(mask_a)
            b.fill_next_token_bitmask(mask_b)
            assert np.array_equal(mask_a, mask_b), f"masks differ after {compared} steps"
            compared += 1
            bits = np.unpackbits(mask_a[0].view(np.uint8), bitorder="little")[:vocab_size]
            allowed = [int(t) for t in np.flatnonzero(bits) if int(t) not in stops]
            if not allowed:
                break
            token = rng.choice(allowed)
            assert a.accept_token(token) and b.accept_token(token)
    return compared


@pytest.mark.parametrize("schema", SCHEMAS, ids=["sp_335_version", "multibyte_classes"])
def test_literal_masks_equal_the_right_linear_rules(compiler: xg.GrammarCompiler, schema: dict) -> None:
    text = json.dumps(schema)
    ebnf = _with_literal(text)
    assert ebnf is not None, "the conversion writes this language as an automaton literal"
    assert _native._json_schema_grammar_matches_parse(text)
    assert _compare_walks(compiler, text, ebnf) > 10


@pytest.mark.skipif(not _SAMPLE, reason="JSONSchemaBench corpus not available")
def test_the_sample_has_automaton_literals() -> None:
    assert len(_SAMPLE_WITH_LITERALS) > 1
    assert _with_literal(_schema_text(_SP_335)) is not None


@pytest.mark.parametrize("path", _SAMPLE_WITH_LITERALS, ids=[p.stem for p in _SAMPLE_WITH_LITERALS])
def test_sample_literal_masks_equal_the_right_linear_rules(compiler: xg.GrammarCompiler, path) -> None:
    text = _schema_text(path)
    assert _native._json_schema_grammar_matches_parse(text)
    assert _compare_walks(compiler, text, _with_literal(text)) > 0
