"""The AST-side rule analyses (native/grammar/ast_rule_analyses.h) against the rule DFAs, over
the bench's JSONSchemaBench sample and grammars with the rule kinds the build policy treats
apart (lookahead, token budget, JSON character count, unique items, TagDispatch).

Where the engine is built with its invariant checks (a Debug build, and the ASan build of
``scripts/sanitize.sh``, which runs this file), every compile ends with CheckAstAnalyses
(native/grammar/ast_analysis_checks.h): AST nullability equal to the DFA fixpoint, every
node's leave set within the bound from the AST's FIRST and FOLLOW bytes, right-linear groups
equal to the merging pass's, and every rule left to first use within its node bound. A
disagreement is an InternalError ("internal error: the AST's ... disagrees ..."), which fails
here. In a Release build the checks compile to nothing and the compiles below only have to
succeed or be refused with an ordinary error. The native unit tests (native/tests/
ast_analyses_tests.cc) cover each analysis on hand-written grammars.
"""

from __future__ import annotations

import json
import warnings

import pytest

import xg2_plugin as xg
from xg2_corpus import stratified_sample
from xg2_test_support import data_dir, hf_tokenizer_info

_CORPUS = data_dir() / "jsonschemabench"
# The first schemas of bench/compile_fsm_digest.py's sample (same seed), three per category.
SAMPLE = stratified_sample(_CORPUS, 3, seed=0) if _CORPUS.is_dir() else []

GRAMMARS = {
    "lookahead": 'root ::= word " " word "."\nword ::= [a-z]+ (= [ .])\n',
    "budget": 'root ::= "<" body ">"\nbody[max_tokens=4] ::= [a-z]*\n',
    "json_chars": 'root ::= "\\"" chars "\\""\nchars[json_chars=2..5] ::= ([a-z] | "\\\\n")*\n',
    "unique_items": ('root ::= "[" items "]"\nitems[unique_items] ::= (item ("," item)*)?\n'
                     'item[unique_item] ::= digit digit?\ndigit ::= [0-9]\n'),
    "tag_dispatch": ('root ::= TagDispatch(("<call>", call), stop_eos=true, loop_after_dispatch=true)\n'
                     'call ::= "{" [a-z]* "}" "</call>"\n'),
    "right_linear_chain": 'root ::= "a" r2\nr2 ::= "b" r3 | "c"\nr3 ::= "d" r3 | "e"\n',
}


@pytest.fixture(scope="module")
def compiler() -> xg.GrammarCompiler:
    return xg.GrammarCompiler(hf_tokenizer_info("llama3.1"), cache_enabled=False, max_threads=1)


def _compiles_or_refuses_cleanly(compile_one, text: str) -> None:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            compile_one(text)
    except xg.XG2Error as error:
        assert "internal error" not in str(error), str(error)
    except ValueError:
        pass  # a schema the frontend refuses (its own checks ran; the analyses never did)


@pytest.mark.skipif(not SAMPLE, reason="JSONSchemaBench not found (set XG2_DATA_DIR)")
@pytest.mark.parametrize("path", SAMPLE, ids=lambda p: p.name)
def test_sample_schema_agrees_with_its_rule_dfas(compiler, path):
    schema = json.loads(path.read_text())["schema"]
    _compiles_or_refuses_cleanly(compiler.compile_json_schema, json.dumps(schema))


@pytest.mark.parametrize("name", sorted(GRAMMARS))
def test_rule_kinds_agree_with_their_rule_dfas(compiler, name):
    compiled = compiler.compile_grammar(GRAMMARS[name])
    assert compiled is not None
