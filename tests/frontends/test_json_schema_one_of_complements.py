"""oneOf and `not` constructions of issue 38's second round, each exact:

- types that two oneOf branches accept whole leave the oneOf before any complement is built
  (OneOfWithoutSharedTypes: hand-written object branches without `type` overlap on every
  non-object);
- const / enum of objects and arrays complemented member by member and item by item;
- `format`: one the draft does not define adds nothing to a complement;
- a closed branch's complement of a branch with patternProperties (ComplementWithin reads
  every schema that applies to each of the closed branch's finitely many names);
- listed branches (enum / const) decided value by value;
- a pattern with leading look-aheads next to another one inside allOf.

Languages are compared with the `jsonschema` library on enumerated instances (string level,
strict_mode=False, formats asserted where the schema has one); then compiled for a real
tokenizer: random walks must validate and hand-written counterexamples must be rejected.
"""

from __future__ import annotations

import json

import jsonschema
import pytest

from xg2_plugin import _native
from xg2_plugin.testing import ebnf_accepts
from schema_language import assert_schema_language, schema_ebnf
from xg2_test_support import check_schema_walks_and_counterexamples, hf_compiler, string_accepted

Unsupported = _native.UnsupportedSchemaError

SCALARS = [None, True, False, 0, 1, -1, 0.5, 2.5, "", "a", "ab", "abc"]


def _assert_language_with_formats(schema, instances, **options):
    """As assert_schema_language, with formats asserted by jsonschema's format checker."""
    options.setdefault("strict_mode", False)
    ebnf = schema_ebnf(schema, **options)
    validator = jsonschema.Draft202012Validator(schema, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)
    verdicts = [(value, validator.is_valid(value)) for value in instances]
    assert any(ok for _, ok in verdicts) and not all(ok for _, ok in verdicts), verdicts
    wrong = [(json.dumps(value), ok) for value, ok in verdicts if ebnf_accepts(ebnf, json.dumps(value)) != ok]
    assert not wrong, f"{len(wrong)} disagreements, e.g. {wrong[:5]}\n{ebnf}"


# --- types two branches accept whole -------------------------------------------------------

def _asserts(count: int) -> dict:
    """Github_hard o17529's shape: object branches without `type`, told apart by one member."""
    return {"required": ["assert"],
            "oneOf": [{"properties": {"assert": {"enum": [f"A{i}"]}, "message": {"type": "string"}}}
                      for i in range(count)]}


@pytest.mark.parametrize("schema", [
    _asserts(3),
    {"oneOf": [{"properties": {"k": {"const": "a"}}, "required": ["k"]},
               {"properties": {"k": {"const": "b"}}, "required": ["k"]}]},
    # Numbers: only the first branch may fail; strings: the first and third always hold.
    {"oneOf": [{"minimum": 1}, {"minLength": 2}, {"type": "string"}]},
    # Every type accepted whole by two branches: no value at all is left (checked below).
    {"oneOf": [{"minimum": 1}, {"minLength": 2}, {"type": "string"}, {"maximum": 0}]},
])
def test_types_two_branches_accept_whole_leave_the_one_of(schema):
    instances = SCALARS + [[], [1], {}, {"k": "a"}, {"k": "b"}, {"k": "c"}, {"k": "a", "x": 1},
                           {"assert": "A0"}, {"assert": "A1", "message": "m"}, {"assert": "A2", "message": 3},
                           {"assert": "A9"}, {"message": "m"}]
    assert_schema_language(schema, instances)


def test_many_untyped_object_branches_convert_without_combining_complements():
    # Thirty-three branches (o17529): the complements would each carry every non-object
    # type, and their combinations passed the 256 bound.
    schema = _asserts(33)
    instances = [{"assert": "A7", "message": "m"}, {"assert": "A32"}, {"assert": "A7", "message": 1},
                 {"assert": "B"}, {}, "A7", 7, None, []]
    assert_schema_language(schema, instances, both_sides=True)


def test_a_one_of_whose_types_are_all_shared_accepts_nothing():
    with pytest.raises(_native.SchemaError, match="accepts no JSON value"):
        schema_ebnf({"oneOf": [{"minLength": 1}, {"minItems": 1}, {"required": ["a"]}]})


# --- const / enum of objects and arrays ----------------------------------------------------

STRUCTURED = [{}, {"type": "void"}, {"type": "void", "x": 1}, {"type": "other"}, {"x": "void"}, {"type": None},
              [], ["deleted"], ["deleted", "x"], ["other"], [1, 2], [1, 3], [2], [[1], {}], [[1], {"b": 1}],
              [[1, [2]], "x"], [[1, [3]], "x"], [[1, [2]], "y"], {"a": [1, {"b": None}]},
              {"x": 0, "a": [1, {"b": None}]}, {"a": [1, {}]}, {"a": [1]}]


def test_open_object_other_than_a_named_constant_keeps_the_policy_error():
    # "All of C's names and one more" needs a member count next to undeclared members.
    with pytest.raises(Unsupported, match="'not' at /"):
        schema_ebnf({"not": {"const": {"type": "void"}}}, strict_mode=False)


@pytest.mark.parametrize("schema", [
    {"not": {"const": {}}},
    {"not": {"enum": [["deleted"], [1, 2], []]}},
    {"not": {"enum": [{}, ["deleted"], "a", 1, None]}},
    {"not": {"const": [[1], {}]}},
    {"not": {"const": [[1, [2]], "x"]}},
    {"oneOf": [{"type": "array"}, {"enum": [{}, ["deleted"]]}]},
    {"type": "object", "properties": {"changes": {"not": {"enum": [["deleted"]]}}}},
    # Objects with names: exact where no undeclared member may appear.
    {"type": "object", "properties": {"type": {}, "x": {}, "a": {}}, "additionalProperties": False,
     "not": {"enum": [{"type": "void"}, {"a": [1, {}]}]}},
])
def test_structured_values_complement_exactly(schema):
    assert_schema_language(schema, SCALARS + STRUCTURED + [{"changes": ["deleted"]}, {"changes": ["added"]}],
                           both_sides=True)


# A branch that lists its values keeps those no other branch accepts (decided value by
# value), and is disjoint from a branch that accepts none of them.
@pytest.mark.parametrize("schema", [
    {"oneOf": [{"const": {"t": "void"}}, {"required": ["r"]}]},
])
def test_listed_branches_are_decided_value_by_value(schema):
    instances = SCALARS + [5, 6, 5.5, "s", "r", {"t": "void"}, {"t": "void", "n": 1}, {"t": "x", "n": 1}, {"t": "x"},
                           {"n": 1}, {}, {"r": "a"}, {"t": "a"}, {"r": "a", "t": "void"}]
    assert_schema_language(schema, instances, both_sides=True)


def test_structured_complement_in_strict_mode_stays_within_declared_members():
    # Merged into a branch that declares its members, the complement's objects stay closed.
    schema = {"oneOf": [{"type": "object", "properties": {"t": {"type": "string"}, "n": {"type": "integer"}}},
                        {"const": {"t": "void"}}]}
    ebnf = schema_ebnf(schema)
    assert ebnf_accepts(ebnf, '{"t": "x"}') and ebnf_accepts(ebnf, '{"t": "void", "n": 1}')
    assert not ebnf_accepts(ebnf, '{"t": "void"}') and not ebnf_accepts(ebnf, '{"t": "x", "z": 1}')


# --- formats ----------------------------------------------------------------------------

@pytest.mark.parametrize("schema", [
    # A format the draft does not define asserts nothing, so it adds nothing to a complement.
    {"not": {"format": "path", "minimum": 3}},
    {"oneOf": [{"format": "path", "maxLength": 1}, {"type": "string"}]},
])
def test_unknown_format_complements_to_nothing(schema):
    _assert_language_with_formats(schema, SCALARS + [3, 4, "abcd", [], {}])


def test_format_without_a_string_language_keeps_the_policy_error():
    # Complementing a defined format needs its automaton as a string language.
    with pytest.raises(Unsupported, match="'oneOf' at /"):
        schema_ebnf({"oneOf": [{"format": "hostname"}, {"format": "ipv4"}]})


# --- a closed branch against one with patternProperties -----------------------------------

def _rows() -> dict:
    """Github_trivial o9817's shape: a row with pattern-named cells, or a summary object."""
    return {"oneOf": [
        {"type": "object", "properties": {"id": {"type": "string"}, "createdAt": {"type": "string"}},
         "patternProperties": {"^[a-z]{1,8}$": {"type": ["string", "number", "boolean", "null"]}}},
        {"type": "object", "properties": {"createdAt": {"type": "string"}, "count": {"type": "number"},
                                          "rowids": {"type": "array", "items": {"type": "string"}}}}]}


def test_closed_branch_against_pattern_properties_in_strict_mode():
    # Strict mode closes the second branch to its three names, so its complement of the
    # first is built from them: a member the first branch's patterns give another type.
    schema = _rows()
    ebnf = schema_ebnf(schema)
    validator = jsonschema.Draft202012Validator(schema)
    generated_forms = ['{"createdAt": "t", "count": 1, "rowids": ["a"]}',  # rowids: an array, not a cell
                       '{"count": 2}', '{"createdAt": "t"}', '{}', '{"id": "x", "abc": 1}', '{"id": "x"}',
                       '{"createdAt": "t", "count": 1}']
    for text in generated_forms:
        assert ebnf_accepts(ebnf, text) == validator.is_valid(json.loads(text)), text
    # Strict mode generates a subset of the valid values: nothing invalid is accepted (both
    # branches hold, or neither).
    for text in ['{"id": 1, "count": "x"}', '{"createdAt": "t"}', '{}', '[]', '"s"']:
        assert not validator.is_valid(json.loads(text)) and not ebnf_accepts(ebnf, text), text


# --- patterns with leading look-aheads inside allOf ----------------------------------------

LOOKAHEAD_STRINGS = ["", "a", "ab", "x-a", "x-ab", "abcdef", "abcdefg", "ab-c", "-", "X", 1, None]


@pytest.mark.parametrize("schema", [
    # The same patterns alone convert; inside allOf they meet as they would in one schema.
    {"allOf": [{"pattern": "^[a-z-]{2,}"}, {"pattern": "^(?!x-)[a-z-]+$"}]},
    {"allOf": [{"pattern": "^(?!x-)[a-z-]+$"}, {"pattern": "^[a-z-]{2,}"}]},
    {"type": "string", "pattern": "^[a-z-]+$", "allOf": [{"pattern": "^(?=.{1,6}$)(?!.*--)"}]},
])
def test_leading_lookahead_patterns_meet_inside_all_of(schema):
    assert_schema_language(schema, LOOKAHEAD_STRINGS, both_sides=True)


# --- token level ------------------------------------------------------------------------

ENGINE_CASES = [
    (_asserts(33) | {"type": "object"},
     [{"assert": "A1", "message": 2}, {"assert": "Q"}, {}]),
    ({"type": "object", "additionalProperties": False, "required": ["changes"],
      "properties": {"changes": {"oneOf": [{"type": "array", "items": {"type": "string"}},
                                           {"enum": [["deleted"]]}]}}},
     [{"changes": ["deleted"]}, {"changes": [1]}]),
    (_rows(), [{"id": 1, "count": "x"}, {"createdAt": "t"}]),
]


@pytest.mark.parametrize("case", range(len(ENGINE_CASES)))
def test_engine_walks_validate_and_counterexamples_are_rejected(case):
    schema, invalid = ENGINE_CASES[case]
    grammar = hf_compiler("llama3.1").compile_json_schema(schema, any_whitespace=False)
    check_schema_walks_and_counterexamples(grammar, schema, invalid, seed=case, walks=6)
    assert string_accepted(grammar, json.dumps(invalid[0])) is False


# --- defined formats in complements (third round) ------------------------------------------

# Strings in and out of each format whose grammar is the format's whole syntax. Left out on
# purpose: strings where jsonschema's checkers read the RFCs differently from the grammars
# (uuid spellings that Python's int() takes,
# such as "+2345678-..."), where the spec, not the checker, is what the grammar follows.
FORMAT_STRINGS = {
    "date": ["2020-01-31", "2020-02-29", "2021-02-29", "2020-1-01", "2020-01-01T", "\u0662020-01-01", "x"],
    "ipv4": ["1.2.3.4", "255.255.255.255", "01.2.3.4", "256.1.1.1", "1.2.3", "\u0661.2.3.4", "1.2.3.4 "],
    "uuid": ["12345678-1234-1234-1234-123456789abc", "12345678-1234-1234-1234-123456789ABC",
             "12345678123412341234123456789abc", "g2345678-1234-1234-1234-123456789abc", "1234"],
    "uri": ["http://example.org/a?b#c", "a:b", "urn:x:y", "/relative", "http://x y", "http://[::1]:8/", "%41:b",
            "\u00e9:x", "http://h/%zz"],
    "uri-reference": ["/relative", "", "#frag", "a b", "http://x/%41", "%zz", "//host/p", "\u00e9"],
}


def _assert_formats_language(schema, instances):
    """The grammar (lenient, objects open) accepts exactly what jsonschema accepts with its
    format checker, strings written raw (the canonical spelling the complements keep)."""
    ebnf = schema_ebnf(schema, strict_mode=False)
    validator = jsonschema.Draft202012Validator(schema, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)
    verdicts = [(value, validator.is_valid(value)) for value in instances]
    assert any(ok for _, ok in verdicts) and not all(ok for _, ok in verdicts), verdicts
    wrong = [(json.dumps(value, ensure_ascii=False), ok) for value, ok in verdicts
             if ebnf_accepts(ebnf, json.dumps(value, ensure_ascii=False)) != ok]
    assert not wrong, f"{len(wrong)} disagreements, e.g. {wrong[:5]}"


@pytest.mark.parametrize("format_name", sorted(FORMAT_STRINGS))
def test_defined_format_complements_exactly(format_name):
    # `not` over the format: every non-string and the strings outside its automaton.
    _assert_formats_language({"not": {"format": format_name}}, FORMAT_STRINGS[format_name] + [None, 1, [], {}])


@pytest.mark.parametrize("format_name", sorted(FORMAT_STRINGS))
def test_one_of_a_format_and_a_pattern_is_exact(format_name):
    # Sp_209's shape: a format or a pattern, never both; non-strings satisfy both branches.
    schema = {"oneOf": [{"format": format_name}, {"pattern": "^[0-9a-f]"}]}
    _assert_formats_language(schema, FORMAT_STRINGS[format_name] + ["0", "a:b", "zz", None, 1])


@pytest.mark.parametrize("dialect", ["http://json-schema.org/draft-07/schema#", "http://json-schema.org/draft-04/schema#"])
def test_format_complement_under_older_drafts_keeps_the_policy_error(dialect):
    # Drafts 3-7's checkers may leave the format unchecked (uuid under draft 7): a string
    # outside the grammar could pass both branches there, so no complement is built.
    schema = {"$schema": dialect, "oneOf": [{"format": "uuid"}, {"pattern": "^[0-9a-f]"}]}
    with pytest.raises(Unsupported, match="keyword 'oneOf' at /: branches are not provably disjoint"):
        schema_ebnf(schema)


def test_format_subsets_keep_the_policy_error():
    # email, hostname and duration are sound subsets: their complements would hold valid
    # strings; the automata of time and date-time are past the state limit.
    for format_name in ("email", "hostname", "duration", "time", "date-time"):
        with pytest.raises(Unsupported, match="keyword 'oneOf' at /"):
            schema_ebnf({"oneOf": [{"format": format_name}, {"pattern": "^[0-9a-f]"}]})


def test_format_complement_walks_validate():
    # Snowplow sp_209's member: a uuid API key or a `$`-named variable; walks are checked
    # with the format checker (check_schema_walks_and_counterexamples leaves formats out).
    import random

    import numpy as np

    import xg2_plugin as xg
    from xg2_corpus import random_walk

    schema = {"type": "object", "additionalProperties": False, "required": ["apikey"],
              "properties": {"apikey": {"oneOf": [{"format": "uuid"}, {"pattern": "^\\$[A-Z0-9-_]+"}]}}}
    grammar = hf_compiler("llama3.1").compile_json_schema(schema, any_whitespace=False)
    validator = jsonschema.Draft202012Validator(schema, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)
    for invalid in [{"apikey": 1}, {"apikey": "x"}, {"apikey": "$"}]:
        assert not validator.is_valid(invalid) and string_accepted(grammar, json.dumps(invalid)) is False, invalid
    for valid in [{"apikey": "12345678-1234-1234-1234-123456789abc"}, {"apikey": "$KEY"}]:
        assert validator.is_valid(valid) and string_accepted(grammar, json.dumps(valid)) is True, valid
    bitmask = np.full(xg.get_bitmask_shape(1, grammar.tokenizer_info.vocab_size), -1, dtype=np.int32)
    rng = random.Random(7)
    finished = 0
    for _ in range(8):
        out = random_walk(grammar, rng, bitmask, 64)
        if out is None:
            continue
        assert validator.is_valid(json.loads(out.decode("utf-8"))), out
        finished += 1
    assert finished > 0


# --- errors at the user's pointers ---------------------------------------------------------

@pytest.mark.parametrize("schema, pointer", [
    # ExactlyOneOf: branch 2 is its own disjunct (/anyOf/2 in the rewrite).
    ({"oneOf": [{"type": "string", "pattern": "^a"}, {"type": "string", "pattern": "b$"},
                {"type": "object", "properties": {"h": {"type": "string", "format": "hostname"}}}]},
     "/oneOf/2/properties/h"),
    # The same when the branch is also narrowed by its shared types; the `not` inside it is
    # rewritten again, so only the branch's own pointer is asserted.
    ({"oneOf": [{"properties": {"k": {"const": "a"}}, "required": ["k"],
                 "not": {"properties": {"h": {"type": "string", "format": "hostname"}}}},
                {"properties": {"k": {"const": "b"}}, "required": ["k"]}]},
     "/oneOf/0"),
])
def test_refusals_inside_rewritten_one_of_name_the_users_pointer(schema, pointer):
    with pytest.raises(Unsupported) as refusal:
        schema_ebnf(schema)
    assert f"at {pointer}" in str(refusal.value), str(refusal.value)
    assert f"at {pointer.replace('/oneOf/', '/anyOf/')}" not in str(refusal.value)
