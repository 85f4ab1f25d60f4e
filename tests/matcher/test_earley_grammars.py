"""Grammar semantics of the Earley matcher (string level) and the EBNF corpus (token level)."""

from __future__ import annotations

import itertools
import random

import pytest

import xg2_plugin as xg
from xg2_plugin.testing import ebnf_accepts
from xg2_test_support import check_tokens_accepted, encode_continuation, hf_compiler, require_data


@pytest.mark.parametrize(
    "grammar, accepted, rejected",
    [
        # Left recursion.
        ('root ::= root "+" n | n\nn ::= [0-9]+', ["1", "1+22+3"], ["", "+", "1+", "1++2"]),
        # Right recursion and mutual recursion.
        ('root ::= a\na ::= "(" b ")" | "x"\nb ::= a ("," a)*', ["x", "(x)", "((x),x)"], ["()", "(x", "x,x"]),
        # Nullable chains and empty alternatives.
        ('root ::= a b c "!"\na ::= "" | "a"\nb ::= a a\nc ::= b | "c"', ["!", "a!", "aaa!", "aaaa!", "ac!"], ["aaaaaaa!", "cc!"]),
        # Bounded repetition.
        ('root ::= "x"{2,4} [0-9]{3} "y"{0,1}', ["xx123", "xxxx000y"], ["x123", "xxxxx123", "xx12", "xx123yy"]),
        # Unicode classes and negation.
        ('root ::= [α-ω]+ [^a-z]', ["αβ1", "ω日"], ["αa", "a1", "α"]),
        ('root ::= .{2}', ["ab", "日本", "😀x"], ["a", "abc"]),
        # Highly ambiguous grammar (Catalan many parses) stays polynomial.
        ('root ::= root root | "a"', ["a", "a" * 40], ["", "b"]),
    ],
)
def test_string_acceptance(grammar: str, accepted: list[str], rejected: list[str]) -> None:
    for text in accepted:
        assert ebnf_accepts(grammar, text), text
    for text in rejected:
        assert not ebnf_accepts(grammar, text), text


def test_ambiguity_is_polynomial() -> None:
    # Exponentially many parses; an Earley parser handles it in polynomial time (a backtracking
    # parser would not finish). Its cost is measured in bench/, not asserted here.
    grammar = 'root ::= s\ns ::= s s s | s s | "a" | ""'
    assert ebnf_accepts(grammar, "a" * 60)


def test_lookahead_is_enforced() -> None:
    g = 'root ::= a [a-z]*\na ::= "x"+ (= "y")'
    assert ebnf_accepts(g, "xy") and ebnf_accepts(g, "xxyz")
    assert not ebnf_accepts(g, "x") and not ebnf_accepts(g, "xz")
    g2 = 'root ::= a b\na ::= "k" (= c)\nb ::= "xy" | "zz"\nc ::= "x" "y"'
    assert ebnf_accepts(g2, "kxy") and not ebnf_accepts(g2, "kzz")
    # The assertion is checked against text produced by enclosing rules.
    g3 = 'root ::= item ("," item)* ";"\nitem ::= [0-9]+ (= [,;])'
    assert ebnf_accepts(g3, "1,22;") and not ebnf_accepts(g3, "1")
    with pytest.raises(xg.GrammarSyntaxError, match="regular"):
        ebnf_accepts('root ::= a\na ::= "k" (= c)\nc ::= "x" c', "k")
    with pytest.raises(xg.GrammarSyntaxError, match="empty"):
        ebnf_accepts('root ::= a "x"\na ::= "k"? (= "x")', "x")


def test_language_matches_brute_force() -> None:
    """Every string up to length 6 over {a, b}: the matcher agrees with a direct recogniser."""
    grammar = 'root ::= "a" root "b" | root root | ""'  # balanced a/b (Dyck) language

    def dyck(s: str) -> bool:
        depth = 0
        for ch in s:
            depth += 1 if ch == "a" else -1
            if depth < 0:
                return False
        return depth == 0

    for n in range(7):
        for chars in itertools.product("ab", repeat=n):
            s = "".join(chars)
            assert ebnf_accepts(grammar, s) == dyck(s), s


CORPUS_SAMPLES = {
    "arithmetic.gbnf": ["x = 1\n", "(a +2) *b = c3\n"],
    "chess.gbnf": ["1. e4 e5\n2. Nf3 Nc6\n"],
    "english.gbnf": None,
    "japanese.gbnf": None,
    "json.gbnf": ['{"a": [1, 2.5, "x"], "b": {"c": null}}'],
    "json_arr.gbnf": ['[\n{"a": 1},\n{"b": [true, false]}]'],
    "list.gbnf": ["- item one\n- item two\n"],
    "c.gbnf": ["int main(){return 0;}", "int f(int x){x = x+1;return x;}"],
    "sql.gbnf": None,
}


@pytest.mark.parametrize("name", sorted(CORPUS_SAMPLES))
def test_ebnf_corpus_token_level(name: str) -> None:
    text = require_data(f"grammars/{name}").read_text()
    compiler = hf_compiler("llama3.1")
    grammar = compiler.compile_grammar(text)
    samples = CORPUS_SAMPLES[name]
    if samples is None:
        samples = [_random_sentence(grammar, seed) for seed in range(3)]
    for sample in samples:
        ids = encode_continuation("llama3.1", sample)
        check_tokens_accepted(grammar, ids, expect_stop=True)


def _random_sentence(grammar: xg.CompiledGrammar, seed: int, max_steps: int = 60) -> str:
    """A sentence of the grammar built by random constrained token choice (short tokens
    preferred so walks terminate); the token-level check then re-reads it from scratch."""
    import numpy as np

    info = grammar.tokenizer_info
    rng = random.Random(seed)
    matcher = xg.GrammarMatcher(grammar)
    bitmask = np.full(xg.get_bitmask_shape(1, info.vocab_size), -1, dtype=np.int32)
    from xg2_test_support import allowed_tokens

    stop_ids = set(info.stop_token_ids)  # the property builds a new list per read
    out = b""
    for _ in range(max_steps):
        allowed = np.flatnonzero(allowed_tokens(matcher, bitmask, info.vocab_size))
        stops = [t for t in allowed if t in stop_ids]
        if stops and (len(out) > 8 or len(stops) == len(allowed)):
            break
        choices = [t for t in allowed if t not in stop_ids]
        token = int(rng.choice(choices))
        assert matcher.accept_token(token)
        out += info.decoded_vocab[token]
    else:
        pytest.skip("random walk did not finish")
    return out.decode("utf-8")
