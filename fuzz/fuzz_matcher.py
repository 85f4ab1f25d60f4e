"""Fuzzes the matcher: byte-driven token sequences with rollbacks, forks and validation on
real grammars; every mask is checked against the reference mask and against acceptance."""

from __future__ import annotations

import functools

import atheris
import numpy as np

with atheris.instrument_imports():
    import fuzz_common as common
    import xg2_plugin as xg
    from xg2_plugin.bitmask import bitmask_to_bool_array

GRAMMARS = [
    ("json_schema", '{"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "array", '
                    '"items": {"type": "string", "maxLength": 5}}}, "required": ["a"]}'),
    ("ebnf", 'root ::= expr\nexpr ::= term (("+" | "-") term)*\nterm ::= [0-9]+ | "(" expr ")"'),
    ("regex", "(ab|a)*c{2,4}[x-z]?"),
    ("builtin_json", ""),
]


@functools.lru_cache(maxsize=None)
def grammar(index: int) -> xg.CompiledGrammar:
    kind, text = GRAMMARS[index]
    c = common.compiler()
    if kind == "json_schema":
        return c.compile_json_schema(text)
    if kind == "ebnf":
        return c.compile_grammar(text)
    if kind == "regex":
        return c.compile_regex(text)
    return c.compile_builtin_json_grammar()


def masks(matcher: xg.GrammarMatcher, vocab: int) -> np.ndarray:
    fast = np.zeros(xg.get_bitmask_shape(1, vocab), dtype=np.int32)
    reference = np.zeros_like(fast)
    matcher.fill_next_token_bitmask(fast)
    matcher._fill_next_token_bitmask_reference(reference)
    if not np.array_equal(fast, reference):
        raise AssertionError("cached mask differs from the reference mask")
    return bitmask_to_bool_array(fast[0], vocab)


def test_one_input(data: bytes) -> None:
    fdp = atheris.FuzzedDataProvider(data)
    g = grammar(fdp.ConsumeIntInRange(0, len(GRAMMARS) - 1))
    vocab = g.tokenizer_info.vocab_size
    stops = set(g.tokenizer_info.stop_token_ids)
    matcher = xg.GrammarMatcher(g)
    accepted = 0
    for _ in range(fdp.ConsumeIntInRange(0, 12)):
        op = fdp.ConsumeIntInRange(0, 4)
        if op <= 1:
            allowed = masks(matcher, vocab)
            candidates = np.flatnonzero(allowed)
            if op == 0 and len(candidates):
                token = int(candidates[fdp.ConsumeIntInRange(0, len(candidates) - 1)])
            else:
                token = fdp.ConsumeIntInRange(0, vocab - 1)
            if token in stops:
                continue
            ok = matcher.accept_token(token)
            if ok != bool(allowed[token]):
                raise AssertionError(f"accept_token({token}) = {ok} but the mask says {bool(allowed[token])}")
            accepted += ok
        elif op == 2 and accepted:
            count = fdp.ConsumeIntInRange(1, accepted)
            matcher.rollback(count)
            accepted -= count
        elif op == 3:
            matcher = matcher.fork()
        else:
            tokens = [fdp.ConsumeIntInRange(0, vocab - 1) for _ in range(fdp.ConsumeIntInRange(0, 3))]
            before = masks(matcher, vocab)
            matcher.validate_tokens(tokens)
            if not np.array_equal(before, masks(matcher, vocab)):
                raise AssertionError("validate_tokens changed the matcher state")
    masks(matcher, vocab)


if __name__ == "__main__":
    common.main(test_one_input)
