"""minLength / maxLength next to a pattern or format, counted by the matcher (issue 38 step 1).

Where the product of a pattern's or format's automaton with the length range passes the state
limit, the string body becomes a rule `name[json_chars=M..N]` (grammar/grammar_fsm.h, "JSON
character counts"): the FSM holds the pattern once and the Earley items count the decoded
characters, so any bound up to 2^31-1 is exact. `jsonschema` (with its format checker) is the
oracle; masks from the cache are compared with the reference walk where the count decides.
"""

from __future__ import annotations

import json
import random

import jsonschema
import pytest

import xg2_plugin as xg
from xg2_plugin import _native
from xg2_plugin.testing import ebnf_accepts
from xg2_corpus import random_walk
from xg2_test_support import compare_masks_along, encode_continuation, hf_compiler, string_accepted

import numpy as np

WORDS = "^(?:\\S+\\s+){0,29}\\S+$"  # from the JSONSchemaBench schemas that were refused


def to_ebnf(schema):
    ebnf, _ = _native._json_schema_to_ebnf(json.dumps(schema))
    return ebnf


def validator(schema):
    return jsonschema.Draft202012Validator(schema, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)


# --- the grammar construct --------------------------------------------------------------------

COUNTED = 'root ::= "\\"" body "\\""\nbody[json_chars=2..3] ::= ([a-z] | "\\\\u00e9" | "\\\\n" | "\\\\ud83d\\\\ude00" | "\\u00e9")*\n'


@pytest.mark.parametrize("text, accepted", [
    ('"ab"', True), ('"abc"', True), ('"a"', False), ('"abcd"', False), ('""', False),
    # An escape is one character, a raw two-byte character is one, a surrogate pair is one.
    ('"\\u00e9a"', True), ('"\\u00e9"', False), ('"\\n\\n\\n"', True), ('"\\n\\n\\n\\n"', False),
    ('"\u00e9\u00e9"', True), ('"\u00e9"', False),
    ('"\\ud83d\\ude00a"', True), ('"\\ud83d\\ude00"', False), ('"\\ud83d\\ude00ab"', True),
    ('"\\ud83d\\ude00abc"', False),
])
def test_json_chars_counts_decoded_characters(text, accepted):
    assert ebnf_accepts(COUNTED, text) == accepted
    if accepted:
        assert 2 <= len(json.loads(text)) <= 3


def test_json_chars_unbounded_maximum_and_large_bounds():
    grammar = 'root ::= body\nbody[json_chars=3..] ::= [a-z]*\n'
    assert not ebnf_accepts(grammar, "ab")
    assert ebnf_accepts(grammar, "abc") and ebnf_accepts(grammar, "a" * 500)
    big = 'root ::= body\nbody[json_chars=0..2147483647] ::= [a-z]*\n'
    assert ebnf_accepts(big, "a" * 1000)


def test_json_chars_grammar_round_trips_through_the_printer():
    printed = _native._ebnf_roundtrip(COUNTED)
    assert "[json_chars=2..3]" in printed
    assert _native._ebnf_roundtrip(printed) == printed
    assert ebnf_accepts(printed, '"ab"') and not ebnf_accepts(printed, '"a"')


@pytest.mark.parametrize("grammar, message", [
    ('root ::= body\nbody[json_chars=1..2] ::= [a-z"]*\n', "JSON string characters"),
    ('root ::= body\nbody[json_chars=1..2] ::= "\\\\" [a-z]\n', "JSON string characters"),
    ('root ::= body\nbody[json_chars=3..2] ::= [a-z]*\n', "below the minimum"),
    ('root ::= body\nbody[json_chars=1..2147483648] ::= [a-z]*\n', "exceeds 2147483647"),
    ('root ::= body[json_chars=1..2]\nbody ::= [a-z]*\n', "belongs on a rule definition"),
    ('root ::= body\nbody[json_chars=1..2] ::= "a" body | "b"\n', "recursively"),
])
def test_json_chars_misuse_is_a_grammar_error(grammar, message):
    with pytest.raises(xg.GrammarSyntaxError, match=message):
        ebnf_accepts(grammar, "ab")


# --- JSON Schema -------------------------------------------------------------------------------

SCHEMAS = {
    "email_max": {"type": "string", "format": "email", "maxLength": 40},
    "email_min_max": {"type": "string", "format": "email", "minLength": 20, "maxLength": 30},
    "words_max": {"type": "string", "pattern": WORDS, "maxLength": 50},
    "words_huge": {"type": "string", "pattern": WORDS, "maxLength": 2147483647, "minLength": 3},
    "uri_min": {"type": "string", "format": "uri", "minLength": 30},
}


@pytest.mark.parametrize("name", sorted(SCHEMAS))
def test_length_next_to_a_large_language_is_counted(name):
    assert "[json_chars=" in to_ebnf(SCHEMAS[name])


def candidate_strings(seed):
    rng = random.Random(seed)
    out = []
    for length in range(0, 60):
        local = "".join(rng.choice("abc.\u00e9") for _ in range(length))
        out += [f"{local}@ex.com", f"x{local}@a.io", local, f"http://h/{local}", local.replace(".", " ")]
        out += ["a" * length + "@ex.com", "http://h/" + "a" * length, "w " * (length // 2) + "w", "w\t" * (length // 2) + "\u00e9", "\u00e9" * length + "@a.b", "\\" * length]
    return out


@pytest.mark.parametrize("name", sorted(SCHEMAS))
def test_counted_lengths_are_exact(name):
    # The oracle: the schema without its lengths (the pattern or format grammar, which
    # test_json_schema_formats checks on its own) and the length in code points; for the
    # patterns (exact languages) jsonschema as well.
    schema = SCHEMAS[name]
    unbounded = {k: v for k, v in schema.items() if k not in ("minLength", "maxLength")}
    ebnf, ebnf_unbounded = to_ebnf(schema), to_ebnf(unbounded)
    least, most = schema.get("minLength", 0), schema.get("maxLength", 2**31 - 1)
    texts = candidate_strings(38)
    accepted = {t: ebnf_accepts(ebnf, json.dumps(t, ensure_ascii=False)) for t in texts}
    wrong = [t for t in texts
             if accepted[t] != (ebnf_accepts(ebnf_unbounded, json.dumps(t, ensure_ascii=False)) and least <= len(t) <= most)]
    assert not wrong, wrong[:5]
    assert any(accepted.values()) and not all(accepted.values())
    if "pattern" in schema:
        check = validator(schema)
        assert [t for t in texts if accepted[t] != check.is_valid(t)] == []


def test_no_string_of_the_counted_lengths_is_an_empty_schema():
    # Lengths 0, 50, 100 and 150 only: none between 51 and 99 (and the product is too large).
    schema = {"type": "string", "pattern": "^(?:[a-z]{50}){0,3}$", "minLength": 51, "maxLength": 99}
    with pytest.raises(xg.SchemaError, match="accepts no JSON value"):
        to_ebnf(schema)
    schema["maxLength"] = 100
    assert ebnf_accepts(to_ebnf(schema), json.dumps("a" * 100))


def test_masks_and_walks_are_exact_near_the_bounds():
    schema = {"type": "object", "properties": {"e": SCHEMAS["email_min_max"], "w": SCHEMAS["words_max"]},
              "required": ["e", "w"]}
    compiler = hf_compiler("llama3.1")
    grammar = compiler.compile_json_schema(schema, any_whitespace=False)
    check = jsonschema.Draft202012Validator(schema)  # email: the format grammar is a sound subset
    for value in [{"e": "a" * 18 + "@ex.com", "w": "w " * 24 + "w"}, {"e": "abcdefghijklm@x.io", "w": "x" * 50}]:
        text = json.dumps(value, ensure_ascii=False)
        assert check.is_valid(value) == string_accepted(grammar, text), value
        assert compare_masks_along(grammar, encode_continuation("llama3.1", text)) > 5
    for bad in [{"e": "a" * 24 + "@ex.com", "w": "w"}, {"e": "a@ex.com", "w": "w"}, {"e": "a" * 15 + "@ex.com", "w": "x" * 51}]:
        assert not check.is_valid(bad)
        assert not string_accepted(grammar, json.dumps(bad))
    bitmask = np.full(xg.get_bitmask_shape(1, grammar.tokenizer_info.vocab_size), -1, dtype=np.int32)
    rng, finished = random.Random(7), 0
    for _ in range(6):
        out = random_walk(grammar, rng, bitmask, 80)
        if out is None:
            continue
        value = json.loads(out.decode("utf-8"))
        assert check.is_valid(value) and "@" in value["e"], out
        finished += 1
    assert finished > 0


def test_counted_grammar_serializes_with_its_counts():
    grammar = hf_compiler("llama3.1").compile_json_schema(SCHEMAS["email_min_max"])
    restored = xg.CompiledGrammar.deserialize_json(grammar.serialize_json(), grammar.tokenizer_info)
    assert string_accepted(restored, json.dumps("a" * 18 + "@ex.com"))
    assert not string_accepted(restored, json.dumps("a" * 10 + "@ex.com"))
