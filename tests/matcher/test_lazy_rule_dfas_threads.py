"""Several matchers of one cached grammar, on several threads, while its rule DFAs are built on
first use (docs/lazy_rule_dfas.md): the threads interleave their calls on the shared grammar, so
one thread's matchers start on snapshots that another thread's builds have since extended, and
read a mask cache those builds grew. Every thread must get, step by step, the masks of the
eagerly built grammar. Builds themselves overlap another thread's work only where the call gave
the GIL away (accept_token does before a build; a fill mostly does not): the native tests
(native/tests/lazy_rule_build_tests.cc, mask_cache_snapshot_tests.cc) run builds truly in
parallel. Removing the build mutex did not make this test fail (seen once).
"""

from __future__ import annotations

import json
import random
import threading
import warnings

import numpy as np
import pytest

import xg2_plugin as xg
from xg2_corpus import stratified_sample
from xg2_test_support import data_dir, hf_tokenizer_info

THREADS = 4
WALKS = 8
STEPS = 40

# Each root begins with bytes, so the compile leaves the rules after them unbuilt.
GRAMMARS = {
    "json_like": r'''
root ::= "{" ws pair (ws "," ws pair)* ws "}"
pair ::= key ws ":" ws value
key ::= "\"" [a-z]+ "\""
value ::= number | string | boolean | list | root
number ::= "-"? [0-9]+ ("." [0-9]+)?
string ::= "\"" [a-zA-Z ]* "\""
boolean ::= "true" | "false"
list ::= "[" ws (value (ws "," ws value)*)? ws "]"
ws ::= [ \n]*
''',
    "keywords": r'''
root ::= "begin " statement (";" statement)*
statement ::= assign | print | loop
assign ::= "let " ident " = " literal
print ::= "print " (ident | literal)
loop ::= "while " ident " do " statement " end"
ident ::= [a-z]+
literal ::= [0-9]+ | "\"" [a-z ]* "\""
''',
}

_CORPUS = data_dir() / "jsonschemabench"
SCHEMAS = stratified_sample(_CORPUS, 1, seed=0)[:6] if _CORPUS.is_dir() else []


@pytest.fixture(scope="module")
def info() -> xg.TokenizerInfo:
    return hf_tokenizer_info("llama3.1")


def _eager_walks(grammar: xg.CompiledGrammar, vocab_size: int) -> list[list[tuple[np.ndarray, int]]]:
    """WALKS random walks of the eager grammar: per step its mask and the token taken (-1: end)."""
    walks = []
    mask = xg.allocate_token_bitmask(1, vocab_size)
    for seed in range(WALKS):
        rng = random.Random(seed)
        matcher = xg.GrammarMatcher(grammar)
        walk = []
        for _ in range(STEPS):
            matcher.fill_next_token_bitmask(mask)
            words = np.asarray(mask)[0].copy()
            allowed = np.flatnonzero(np.unpackbits(words.view(np.uint8), bitorder="little")[:vocab_size])
            if len(allowed) == 0 or matcher.is_terminated():
                walk.append((words, -1))
                break
            token = int(rng.choice(list(allowed)))
            walk.append((words, token))
            assert matcher.accept_token(token)
        walks.append(walk)
    return walks


def _replay_on_threads(grammar: xg.CompiledGrammar, walks, vocab_size: int) -> list[str]:
    """Replays the walks on THREADS threads, each with its own matchers of `grammar`, started
    together; returns what differed."""
    failures: list[str] = []
    barrier = threading.Barrier(THREADS)

    def run(first: int) -> None:
        mask = xg.allocate_token_bitmask(1, vocab_size)
        try:
            barrier.wait()
            # Every thread replays every walk, each from another one first, so that threads
            # meet the same unbuilt rules at about the same time.
            for k in range(len(walks)):
                index = (first + k) % len(walks)
                matcher = xg.GrammarMatcher(grammar)
                for step, (expected, token) in enumerate(walks[index]):
                    matcher.fill_next_token_bitmask(mask)
                    if not np.array_equal(np.asarray(mask)[0], expected):
                        failures.append(f"walk {index} step {step}: masks differ")
                        break
                    if token >= 0 and not matcher.accept_token(token):
                        failures.append(f"walk {index} step {step}: token {token} refused")
                        break
        except Exception as error:  # noqa: BLE001 - reported by the test
            failures.append(f"thread {first}: {type(error).__name__}: {error}")

    threads = [threading.Thread(target=run, args=(t * WALKS // THREADS,)) for t in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return failures


def _compile_both(info, compile_one):
    lazy_compiler = xg.GrammarCompiler(info)  # the default: rule DFAs built on first use, cached
    eager_compiler = xg.GrammarCompiler(info, cache_enabled=False)
    eager_compiler._use_eager_rule_dfas()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        lazy = compile_one(lazy_compiler)
        assert compile_one(lazy_compiler) is lazy  # every thread shares the cached grammar
        eager = compile_one(eager_compiler)
    return lazy, eager


@pytest.mark.parametrize("name", sorted(GRAMMARS))
def test_threads_sharing_a_lazy_grammar_get_the_eager_masks(info, name):
    lazy, eager = _compile_both(info, lambda compiler: compiler.compile_grammar(GRAMMARS[name]))
    assert lazy._handle.num_nodes < eager._handle.num_nodes  # rules are left for the threads
    walks = _eager_walks(eager, info.vocab_size)
    assert _replay_on_threads(lazy, walks, info.vocab_size) == []


@pytest.mark.skipif(not SCHEMAS, reason="JSONSchemaBench not found (set XG2_DATA_DIR)")
@pytest.mark.parametrize("path", SCHEMAS, ids=lambda p: p.name)
def test_threads_sharing_a_lazy_schema_grammar_get_the_eager_masks(info, path):
    text = json.dumps(json.loads(path.read_text())["schema"])
    try:
        lazy, eager = _compile_both(info, lambda compiler: compiler.compile_json_schema(text))
    except (xg.XG2Error, ValueError):
        pytest.skip("refused by both modes (tests/matcher/test_lazy_rule_dfas.py checks that)")
    walks = _eager_walks(eager, info.vocab_size)
    assert _replay_on_threads(lazy, walks, info.vocab_size) == []
