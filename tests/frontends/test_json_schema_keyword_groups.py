"""Small keyword groups of issue 38, each an exact construction checked against an oracle.

- patternProperties: names split into the non-empty regions of the patterns (partition
  refinement) instead of all 2^n sets of patterns, so many overlapping patterns convert.
- dependencies that require names `properties` does not declare: placed as `required`
  places its own undeclared names, where no other undeclared member can appear.
- many schema dependencies that each constrain one listed member: split by its value.
- `format: iri` / `iri-reference` (RFC 3987): the URI grammar with ucschar, iprivate in the
  query.
- `not` next to an integer with both bounds: the integers listed, each value decided.
- The tempered token `^((?!X).)*$` in `pattern`: no occurrence of X, by the automaton product.

Languages are compared with `jsonschema` (draft 2020-12, strict_mode=False, where jsonschema's
open objects and the grammar's agree) or, for `iri` (jsonschema checks it only with the
rfc3987 package, not installed), with a reference written from RFC 3987 on top of
rfc3986-validator; engine walks with the Llama-3.1 tokenizer must validate.
"""

from __future__ import annotations

import itertools
import json
import random
import re

import numpy as np
import pytest

import xg2_plugin as xg
from xg2_plugin import _native
from schema_language import assert_schema_language
from xg2_corpus import random_walk
from test_json_schema_formats import finished_walks
from xg2_test_support import check_schema_walks_and_counterexamples, hf_compiler, string_accepted

jsonschema = pytest.importorskip("jsonschema")

TOKENIZER = "llama3.1"


def engine(schema: dict, **options) -> xg.CompiledGrammar:
    return hf_compiler(TOKENIZER).compile_json_schema(json.dumps(schema), any_whitespace=False, **options)


# ---------------------------------------------------------------------------------------
# patternProperties: regions of overlapping patterns

HASH_NAMES = {"^[a-zA-Z0-9_-]{1,}$": {"type": "string"}, "^MD5$": {"maxLength": 3},
              "^SHA-1$": {"minLength": 2}, "^SHA-256$": {"pattern": "^[0-9a-f]*$"}, "^SHA3-224$": {},
              "^ssdeep$": {"enum": ["a", "bb"]}, "^WHIRLPOOL$": {"const": "w"}}
SUBSTRINGS = {"name": {"type": "string"}, "tags": {"maxLength": 2}, "vars": {"minLength": 1},
              "when": {"enum": ["x", "yy", 1]}, "^(ansible\\.builtin\\.)?import_playbook$": {"type": "string"}}


def objects_over(names: list, values: list):
    yield {}
    for name, value in itertools.product(names, values):
        yield {name: value}
    for (n1, n2), v in itertools.product(itertools.combinations(names, 2), values[:2]):
        yield {n1: v, n2: "w"}


@pytest.mark.parametrize("patterns,names", [
    (HASH_NAMES, ["MD5", "SHA-1", "SHA-256", "SHA3-224", "ssdeep", "WHIRLPOOL", "other", "a b", ""]),
    (SUBSTRINGS, ["name", "nametags", "varswhen", "tagsnamevarswhen", "when", "x", "import_playbook",
                  "ansible.builtin.import_playbook", "ansible.import_playbook"]),
])
@pytest.mark.parametrize("additional", [False, {"type": "integer"}])
def test_many_overlapping_patterns_are_exact(patterns, names, additional):
    schema = {"type": "object", "patternProperties": patterns, "additionalProperties": additional}
    values = ["a", "bb", "0f", "w", "xyz", 1, "yy", "x", None]
    assert_schema_language(schema, objects_over(names, values), both_sides=True)


def test_more_than_64_pattern_regions_are_the_policy_error():
    # Seven unanchored letters: every set of them matches some name (2^7 regions).
    schema = {"type": "object", "patternProperties": {c: {"type": "integer"} for c in "abcdefg"}}
    with pytest.raises(_native.UnsupportedSchemaError, match="patternProperties.* at /: .*64 regions"):
        _native._json_schema_to_ebnf(json.dumps(schema))


def test_many_disjoint_patterns_need_no_bound():
    patterns = {f"^k{i}$": {"const": i} for i in range(80)}
    schema = {"type": "object", "patternProperties": patterns, "additionalProperties": False}
    instances = [{"k3": 3}, {"k3": 4}, {"k79": 79}, {"k80": 80}, {"k1": 1, "k2": 2}, {"k1": 1, "k2": 3}]
    assert_schema_language(schema, instances, both_sides=True)


def test_pattern_regions_engine_walks():
    schema = {"type": "object", "patternProperties": HASH_NAMES, "additionalProperties": False}
    invalid = [{"MD5": "abcd"}, {"ssdeep": "c"}, {"a b": "x"}, {"WHIRLPOOL": "v"}]
    check_schema_walks_and_counterexamples(engine(schema), schema, invalid, seed=1, walks=8)


# ---------------------------------------------------------------------------------------
# dependencies requiring undeclared names

AREA = {"$schema": "http://json-schema.org/draft-07/schema#", "type": "object", "properties": {"base": {"type": "number"}, "length": {"type": "number"}},
        "required": ["length"], "dependencies": {"base": ["triangle"], "radius": ["circle"]}}


def test_dependency_on_undeclared_names_of_a_closed_object_is_exact():
    # additionalProperties false: an undeclared required name fails, so the trigger is absent.
    closed = {**AREA, "properties": {**AREA["properties"], "circle": {"type": "integer"}},
              "additionalProperties": False}
    instances = [{}]
    for base, length in itertools.product([None, 2, "s"], [None, 1]):
        declared = {k: v for k, v in (("base", base), ("length", length)) if v is not None}
        for extra in [{}, {"circle": 2}, {"triangle": 3}, {"radius": 1}, {"circle": 2, "radius": 1}]:
            instances.append({**declared, **extra})
    assert_schema_language(closed, instances, both_sides=True)


def test_dependency_on_undeclared_names_next_to_other_undeclared_members_is_the_policy_error():
    # Non-strict: other undeclared members may appear, and a valid object may list the
    # required name anywhere among them.
    with pytest.raises(_native.UnsupportedSchemaError, match="dependencies.* at /: name 'triangle'"):
        _native._json_schema_to_ebnf(json.dumps(AREA), strict_mode=False)


def test_dependency_on_undeclared_names_in_strict_mode():
    # Strict mode: undeclared names only where required; a dependency requires them after
    # the declared members, as `required` does.
    grammar = engine(AREA)
    assert string_accepted(grammar, json.dumps({"base": 2, "length": 1, "triangle": 3}))
    assert not string_accepted(grammar, json.dumps({"base": 2, "length": 1}))
    assert string_accepted(grammar, json.dumps({"length": 1}))
    assert not string_accepted(grammar, json.dumps({"length": 1, "triangle": 3}))
    validator = jsonschema.Draft7Validator(AREA)
    bitmask = np.full(xg.get_bitmask_shape(1, grammar.tokenizer_info.vocab_size), -1, dtype=np.int32)
    rng = random.Random(2)
    walks = [random_walk(grammar, rng, bitmask, 48) for _ in range(8)]
    finished = [json.loads(out.decode("utf-8")) for out in walks if out is not None]
    assert finished and all(validator.is_valid(value) for value in finished), finished


# Seven schema dependencies that each constrain `type` (mongodb-atlas-search-index-definition):
# split by the value of `type` instead of 2^7 combinations.
KINDS = ["auto", "string", "number", "geo", "doc"]
BY_KIND = {"$schema": "http://json-schema.org/draft-07/schema#", "type": "object", "additionalProperties": False,
           "properties": {"type": {"type": "string", "enum": KINDS}, "analyzer": {"type": "string"},
                          "maxGrams": {"type": "integer"}, "minGrams": {"type": "integer"}, "dynamic": {"type": "boolean"},
                          "indexShapes": {"type": "boolean"}, "norms": {"enum": ["include", "omit"]},
                          "store": {"type": "boolean"}},
           "dependencies": {"analyzer": {"properties": {"type": {"enum": ["auto", "string"]}}},
                            "maxGrams": {"properties": {"type": {"enum": ["auto"]}}},
                            "minGrams": {"properties": {"type": {"enum": ["auto"]}}},
                            "dynamic": {"properties": {"type": {"enum": ["doc"]}}},
                            "indexShapes": {"properties": {"type": {"enum": ["geo"]}}},
                            "norms": {"properties": {"type": {"enum": ["string"]}}},
                            "store": {"properties": {"type": {"enum": ["string", "number"]}}}}}


def by_kind_instances():
    members = [("analyzer", "a"), ("maxGrams", 2), ("minGrams", 1), ("dynamic", True), ("indexShapes", False),
               ("norms", "omit"), ("store", True)]
    yield {}
    for kind in KINDS + [None, "other"]:
        head = {} if kind is None else {"type": kind}
        yield head
        for i, (name, value) in enumerate(members):
            yield {**head, name: value}
            j = (i + 3) % len(members)
            if j > i:
                yield {**head, name: value, members[j][0]: members[j][1]}


def test_dependencies_split_by_a_listed_member_are_exact():
    assert_schema_language(BY_KIND, by_kind_instances(), both_sides=True)


def test_dependencies_split_by_a_listed_member_engine_walks():
    grammar = engine(BY_KIND)
    validator = jsonschema.Draft7Validator(BY_KIND)
    bitmask = np.full(xg.get_bitmask_shape(1, grammar.tokenizer_info.vocab_size), -1, dtype=np.int32)
    rng = random.Random(6)
    walks = [random_walk(grammar, rng, bitmask, 64) for _ in range(8)]
    finished = [json.loads(out.decode("utf-8")) for out in walks if out is not None]
    assert finished and all(validator.is_valid(value) for value in finished), finished
    assert not string_accepted(grammar, json.dumps({"type": "geo", "maxGrams": 2}))
    assert string_accepted(grammar, json.dumps({"type": "auto", "analyzer": "a", "maxGrams": 2}))


def test_seven_dependencies_of_other_forms_stay_the_policy_error():
    schema = {**BY_KIND, "dependencies": {**BY_KIND["dependencies"], "store": ["norms"]}}
    with pytest.raises(_native.UnsupportedSchemaError, match="more than 6 dependencies"):
        _native._json_schema_to_ebnf(json.dumps(schema))


# ---------------------------------------------------------------------------------------
# format: iri, iri-reference

def _in_ranges(c: str, ranges) -> bool:
    return any(lo <= ord(c) <= hi for lo, hi in ranges)


UCSCHAR = [(0xA0, 0xD7FF), (0xF900, 0xFDCF), (0xFDF0, 0xFFEF)] + \
    [(plane << 16, (plane << 16) + 0xFFFD) for plane in range(1, 14)] + [(0xE1000, 0xEFFFD)]
IPRIVATE = [(0xE000, 0xF8FF), (0xF0000, 0xFFFFD), (0x100000, 0x10FFFD)]


def iri_by_rfc3987(value: str, rule: str) -> bool:
    """RFC 3987 section 3.1: an IRI maps to a URI by percent-encoding its non-ASCII
    characters; the mapping is valid exactly when the IRI is, given that ucschar stands only
    where a URI has unreserved characters (outside the scheme, port and IP literal, which the
    %XX of the mapping cannot satisfy either) and iprivate only in the query."""
    rfc3986_validator = pytest.importorskip("rfc3986_validator")
    query_start = value.find("?")
    fragment_start = value.find("#")
    if fragment_start != -1 and (query_start == -1 or query_start > fragment_start):
        query_start = -1  # a "?" inside the fragment starts no query
    for i, c in enumerate(value):
        if c.isascii():
            continue
        in_query = query_start != -1 and i > query_start and (fragment_start == -1 or i < fragment_start)
        if not (_in_ranges(c, UCSCHAR) or (in_query and _in_ranges(c, IPRIVATE))):
            return False
    mapped = "".join(c if c.isascii() else "".join(f"%{b:02X}" for b in c.encode("utf-8")) for c in value)
    return bool(rfc3986_validator.validate_rfc3986(mapped, rule="URI" if rule == "iri" else "URI_reference"))


IRI_CASES = [
    "http://ƒøø.ßår/?∂éœ=πîx#πîüx", "http://example.com/ä", "urn:é", "a:", "http://[::1]/é", "http://[é::1]",
    "é:x", "http://a:8é/", "http://a/?q=\U000f0000", "http://a/#\U000f0000", "http://a/\U000f0000",
    "http://a/\ue000", "http://a/?\ue000", "//ƒøø/x", "âππ", "/âππ", "#ƒrägmênt", "#ƒräg\\mênt", "a b:",
    "http://a/\ufdd0", "http://a/\ufffe", "x:\u00a0", "x:\u009f", "http://ü@é/", "mailto:é@ü",
]


@pytest.mark.parametrize("rule", ["iri", "iri-reference"])
def test_iri_matches_rfc3987(rule):
    grammar = engine({"type": "string", "format": rule})
    for value in IRI_CASES:
        expected = iri_by_rfc3987(value, rule)
        assert string_accepted(grammar, json.dumps(value, ensure_ascii=False)) == expected, (rule, value, expected)


@pytest.mark.parametrize("rule", ["iri", "iri-reference"])
def test_iri_walks_are_valid(rule):
    grammar = engine({"type": "string", "format": rule})
    texts = finished_walks(grammar, seed=5, max_tokens=24, tries=12)
    assert texts
    for text in texts:
        assert iri_by_rfc3987(json.loads(text), rule), text


# ---------------------------------------------------------------------------------------
# not next to a bounded integer

@pytest.mark.parametrize("schema", [
    {"type": "integer", "minimum": 3, "maximum": 7, "not": {"multipleOf": 2}},
    {"type": "integer", "exclusiveMinimum": 2.5, "exclusiveMaximum": 9, "not": {"anyOf": [{"multipleOf": 3}, {"const": 4}]}},
    {"anyOf": [{"const": 0}, {"type": "integer", "minimum": -4, "maximum": 250, "not": {"multipleOf": 2}}]},
])
def test_not_next_to_bounded_integers_is_exact(schema):
    instances = list(range(-6, 12)) + [249, 250, 251, 3.5, 5.0, "5", None]
    assert_schema_language(schema, instances, both_sides=True)


def test_not_next_to_a_wide_integer_range_stays_the_policy_error():
    schema = {"type": "integer", "minimum": 0, "maximum": 1000, "not": {"multipleOf": 2}}
    with pytest.raises(_native.UnsupportedSchemaError, match="'not' at /"):
        _native._json_schema_to_ebnf(json.dumps(schema))


def test_not_next_to_bounded_integers_engine_walks():
    schema = {"type": "integer", "minimum": 3, "maximum": 7, "not": {"multipleOf": 2}}
    check_schema_walks_and_counterexamples(engine(schema), schema, [4, 6, 2, 8, 9], seed=3, walks=8)


# ---------------------------------------------------------------------------------------
# the tempered token ^((?!X).)*$

ALPHABET = ["m", "o", "d", "e", "M", " ", "\t", "x"]


def strings_up_to(length: int):
    for n in range(length + 1):
        for chars in itertools.product(ALPHABET, repeat=n):
            yield "".join(chars)


@pytest.mark.parametrize("schema", [
    {"type": "string", "pattern": "^((?!mode)(?!Mode).)*$"},
    {"type": "string", "allOf": [{"pattern": "^[^ ]+$"}, {"pattern": "^((?!mode)(?!Mode).)*$"}]},
    {"type": "string", "pattern": "^(?:(?!de)[a-zM])+$", "maxLength": 4},
    {"type": "string", "pattern": "^((?!o.e).)*$"},
])
def test_tempered_token_is_exact(schema):
    # Python's `.` and `$` (jsonschema) and ECMAScript's differ on line terminators (`$`
    # before a final \n, `.` on \r, \u2028, \u2029): none is drawn.
    assert_schema_language(schema, strings_up_to(4), both_sides=True)


@pytest.mark.parametrize("pattern", ["^((?!a*).)*$", "^((?=a).)*$", "^x((?!a).)*$", "^((?!a)..)*$"])
def test_other_look_aheads_in_loops_stay_the_policy_error(pattern):
    with pytest.raises(_native.UnsupportedSchemaError, match="pattern"):
        _native._json_schema_to_ebnf(json.dumps({"type": "string", "pattern": pattern}))


def test_tempered_token_engine_walks():
    schema = {"type": "string", "allOf": [{"pattern": "^[^ ]+$"}, {"pattern": "^((?!mode)(?!Mode).)*$"}]}
    grammar = engine(schema)
    check_schema_walks_and_counterexamples(grammar, schema, ["a mode", "xmodex", "Mode", ""], seed=4, walks=8)
    # ECMAScript's `.` and `$` (Python's `$` also matches before a final newline).
    assert not string_accepted(grammar, json.dumps("m\n"))
    assert string_accepted(grammar, json.dumps("modMde"))
