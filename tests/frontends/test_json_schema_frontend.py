"""JSON Schema frontend: schema -> EBNF, checked at the string level with ebnf_accepts.

Every table row is also checked against the `jsonschema` library (with its FormatChecker):
instances a grammar must accept are valid, and instances it must reject are invalid unless
they are marked `Raw` (text that is rejected for its spelling, e.g. keys out of the declared
order or an integer written as 1.0, not for its value).
"""

import json
import os
import pathlib
import random
import re
import urllib.parse

import jsonschema
import pytest

from xg2_plugin import _native
from xg2_test_support import SchemaOrderer as _Reorderer

REPO_ROOT = pathlib.Path(__file__).resolve().parents[2]
DATA_DIR = pathlib.Path(os.environ.get("XG2_DATA_DIR", REPO_ROOT.parent / "shared" / "data"))
BENCH_DIR = DATA_DIR / "jsonschemabench"

SchemaError = _native.SchemaError
Unsupported = _native.UnsupportedSchemaError
LimitError = _native.ResourceLimitError
HAS_REGEX = hasattr(_native, "_regex_to_ebnf")


def ebnf_accepts(ebnf, text):
    from xg2_plugin.testing import ebnf_accepts as accepts

    return accepts(ebnf, text)


def to_ebnf(schema, **options):
    text = schema if isinstance(schema, str) else json.dumps(schema)
    ebnf, warnings = _native._json_schema_to_ebnf(text, **options)
    return ebnf


class Raw(str):
    """Literal instance text, rejected for its spelling (not checked with jsonschema)."""


def dumps(value):
    return value if isinstance(value, Raw) else json.dumps(value, ensure_ascii=False)


def is_valid(schema, instance):
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    return cls(schema, format_checker=cls.FORMAT_CHECKER).is_valid(instance)


def check(schema, accepted=(), rejected=(), **options):
    ebnf = to_ebnf(schema, **options)
    for value in accepted:
        if not isinstance(value, Raw):
            assert is_valid(schema, value), f"table error: {value!r} is invalid"
        assert ebnf_accepts(ebnf, dumps(value)), f"rejected {dumps(value)!r}\n{ebnf}"
    for value in rejected:
        if not isinstance(value, Raw) and options.get("strict_mode", True) is False:
            assert not is_valid(schema, value), f"table error: {value!r} is valid"
        assert not ebnf_accepts(ebnf, dumps(value)), f"accepted {dumps(value)!r}\n{ebnf}"


# --------------------------------------------------------------------------------------
# Keyword tables: (schema, accepted, rejected), checked with strict_mode=False so that the
# grammar's language is exactly the schema's (serialised in declared order).

CASES = {
    "type_null": ({"type": "null"}, [None], [0, "", False, [], {}]),
    "type_boolean": ({"type": "boolean"}, [True, False], [None, 0, "true"]),
    "type_integer": ({"type": "integer"}, [0, -1, 10**30], [1.5, "1", None, Raw("01"), Raw("-0.5")]),
    "type_number": ({"type": "number"}, [0, -1.5, 1e300, 2.5e-8, 10**20],
                    [Raw("01"), Raw("1."), Raw(".5"), Raw("+1"), Raw("1e"), "1", None]),
    "type_string": ({"type": "string"}, ["", "a\"b\\c\n\t\u0001", "é😀", "/"],
                    [1, None, Raw('"\n"'), Raw('"\\x"'), Raw('"\\ud800"'), Raw('"abc')]),
    "type_array_form": ({"type": ["string", "integer"]}, ["a", 3], [1.5, None, [], {}]),
    "type_nullable_array": ({"type": ["integer", "null"]}, [None, 7], ["7", 1.5]),
    "nullable_openapi": ({"type": "string", "nullable": True}, [Raw("null"), "x"], [1]),
    "anyof_null": ({"anyOf": [{"type": "string"}, {"type": "null"}]}, [None, "x"], [1, []]),
    "true_schema": (True, [None, 1, "a", [1, {"a": []}], {"k": {"n": None}}], [Raw("{"), Raw("tru")]),
    "empty_schema": ({}, [None, 1.5, "a", [[]], {"a": {}}], [Raw("[1,]")]),
    "untyped_properties": ({"properties": {"a": {"type": "integer"}}},
                           [1, "s", None, [], {"a": 1}, {}], [{"a": "x"}]),
    "enum": ({"enum": ["a", 1, None, [1, "x"], {"k": True}, "é\"\n"]},
             ["a", 1, None, [1, "x"], {"k": True}, "é\"\n"], ["b", 2, [1], {"k": False}, Raw('"\\u00e9\\"\\n"')]),
    "enum_number_spellings": ({"enum": [1, 2.0, 2.5]}, [1, 1.0, 2, 2.0, 2.5], [3, 2.25]),
    "enum_filtered_by_type": ({"type": "string", "enum": ["a", 1, None]}, ["a"], [1, None]),
    "enum_with_length": ({"type": "string", "enum": ["ab", "abcd"], "maxLength": 3}, ["ab"], ["abcd"]),
    "const": ({"const": {"a": [1, 2], "b": "x"}}, [{"a": [1, 2], "b": "x"}], [{"a": [1, 2]}, {"a": [1, 2], "b": "y"}]),
    "const_and_enum": ({"const": "a", "enum": ["a", "b"]}, ["a"], ["b"]),
    "anyof": ({"anyOf": [{"type": "integer", "minimum": 10}, {"type": "string", "maxLength": 1}]},
              [10, 99, "", "x"], [9, "xy", None]),
    "allof_merged": ({"allOf": [{"type": ["integer", "string"], "minimum": 2}, {"type": ["number", "null"], "maximum": 5},
                                {"minimum": 3}]}, [3, 5], [2, 6, 4.5, "3", None]),
    "allof_objects": ({"allOf": [{"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]},
                                 {"properties": {"a": {"minimum": 0}, "b": {"type": "string"}}, "required": ["b"]}]},
                      [{"a": 0, "b": ""}, {"a": 1, "b": "x", "c": None}], [{"a": -1, "b": ""}, {"a": 1}, {"b": "x"}]),
    "allof_additional_false": ({"allOf": [{"properties": {"a": {}}, "additionalProperties": False},
                                          {"properties": {"b": {}}}]}, [{}, {"a": 1}], [{"b": 1}, {"a": 1, "b": 2}]),
    "allof_items": ({"allOf": [{"prefixItems": [{"type": "integer"}], "items": {"type": "string"}},
                               {"items": {"maxLength": 1}, "maxItems": 2}]},
                    [[], [1], [1, "a"]], [["a"], [1, "ab"], [1, "a", "b"]]),
    "type_next_to_anyof": ({"type": "string", "anyOf": [{"maxLength": 1}, {"minLength": 3}]},
                           ["", "a", "abc"], ["ab", 1, None]),
    "ref_with_siblings": ({"$defs": {"n": {"type": "integer"}}, "$ref": "#/$defs/n", "maximum": 2}, [2, -1], [3, "1"]),
    "anyof_in_allof": ({"allOf": [{"anyOf": [{"type": "integer"}, {"type": "string"}]}, {"anyOf": [{"type": "string"}, {"type": "null"}]}]},
                       ["x"], [1, None]),
    "oneof_disjoint_types": ({"oneOf": [{"type": "string"}, {"type": "integer"}]}, ["a", 1], [1.5, None]),
    "oneof_disjoint_tags": ({"oneOf": [
        {"type": "object", "properties": {"kind": {"const": "a"}, "x": {"type": "integer"}}, "required": ["kind"]},
        {"type": "object", "properties": {"kind": {"enum": ["b", "c"]}}, "required": ["kind"]}]},
        [{"kind": "a", "x": 1}, {"kind": "b"}], [{"kind": "d"}, {"kind": "a", "x": "1"}]),
    "allof_single": ({"allOf": [{"type": "integer", "maximum": 3}], "description": "d"}, [3, -4], [4, "3"]),
    "properties_order": ({"type": "object",
                          "properties": {"a": {"type": "integer"}, "b": {"type": "string"}, "c": {"type": "boolean"}},
                          "required": ["b"]},
                         [{"b": "x"}, {"a": 1, "b": "x"}, {"b": "x", "c": True}, {"a": 1, "b": "x", "c": False},
                          {"b": "x", "z": [1]}, {"a": 1, "b": "", "c": True, "zz": None, "y": {}}],
                         [{}, {"a": 1}, {"a": "1", "b": "x"}, Raw('{"b": "x", "a": 1}'),
                          Raw('{"a": 1, "b": "x", "a": 2}'), Raw('{"b": "x", "b": "y"}'),
                          Raw('{"b": "x", "c": true, "b": "y"}'), Raw('{"b": "x",}')]),
    "properties_all_optional": ({"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
                                 "additionalProperties": False},
                                [{}, {"a": 1}, {"b": 2}, {"a": 1, "b": 2}], [{"c": 1}, {"a": "x"}, Raw('{"b": 2, "a": 1}')]),
    "additional_properties_schema": ({"type": "object", "properties": {"a": {"type": "integer"}},
                                      "additionalProperties": {"type": "string"}},
                                     [{}, {"a": 1, "b": "x"}, {"ab": "y", "": "z", "A": "w"}, {"b/c": "x"}],
                                     # canonical member names by default (any_key_spelling=False)
                                     [{"b": 1}, Raw('{"a": 1, "a": "x"}'), Raw('{"a": 1, "\\u0062": "x"}'),
                                      Raw('{"a": 1, "\\u0061": "x"}')]),
    "additional_key_never_repeats_declared": (
        {"type": "object", "properties": {"a/b": {"type": "integer"}, "é": {"type": "integer"}, "q\"": {"type": "null"}},
         "additionalProperties": True},
        [{"a/b": 1, "a/": 2, "a/bc": 3, "é1": 4, "q": None, "x": 1}],
        [Raw('{"a/b": 1, "a\\/b": 2}'), Raw('{"a/b": 1, "a/b": 2}'), Raw('{"é": 1, "é": 2}'),
         Raw('{"q\\"": null, "q\\"": null}')]),
    "required_not_declared": ({"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a", "z"]},
                              [{"a": 1, "z": [1, "x"]}, {"a": 1, "z": None}],
                              [{"a": 1}, Raw('{"z": 1, "a": 1}')]),
    "false_property": ({"type": "object", "properties": {"a": False, "b": {"type": "integer"}}},
                       [{}, {"b": 1}, {"b": 1, "c": 2}], [{"a": 1}, {"a": 1, "b": 1}, Raw('{"b": 1, "a": 1}')]),
    "items": ({"type": "array", "items": {"type": "integer"}}, [[], [1], [1, 2, 3]], [[1.5], ["a"], Raw("[1,]")]),
    "min_max_items": ({"type": "array", "items": {"type": "integer"}, "minItems": 2, "maxItems": 3},
                      [[1, 2], [1, 2, 3]], [[], [1], [1, 2, 3, 4]]),
    "prefix_items": ({"type": "array", "prefixItems": [{"type": "integer"}, {"type": "string"}],
                      "items": {"type": "boolean"}},
                     [[], [1], [1, "a"], [1, "a", True, False]], [["a"], [1, 2], [1, "a", 3]]),
    "prefix_items_closed_min": ({"type": "array", "prefixItems": [{"type": "integer"}, {"type": "string"}],
                                 "items": False, "minItems": 1},
                                [[1], [1, "a"]], [[], [1, "a", True]]),
    "tuple_items_draft4": ({"$schema": "http://json-schema.org/draft-04/schema#", "type": "array",
                            "items": [{"type": "integer"}, {"type": "null"}], "additionalItems": False},
                           [[], [1], [1, None]], [[None], [1, None, 2]]),
    "tuple_items_additional_schema": ({"$schema": "http://json-schema.org/draft-07/schema#", "type": "array",
                                       "items": [{"type": "integer"}], "additionalItems": {"type": "string"},
                                       "maxItems": 3},
                                      [[1], [1, "a", "b"]], [[1, 2], [1, "a", "b", "c"]]),
    "min_max_length": ({"type": "string", "minLength": 2, "maxLength": 3},
                       ["ab", "abc", "é😀", "\n\"", "a😀c"],
                       ["a", "abcd", "", "😀"]),
    "length_escapes_count_once": ({"type": "string", "maxLength": 1},
                                  [Raw('"\\u00e9"'), Raw('"\\ud83d\\ude00"'), Raw('"\\n"'), "😀"],
                                  [Raw('"\\u00e9\\u00e9"'), Raw('"ab"')]),
    "integer_bounds": ({"type": "integer", "minimum": -3, "maximum": 12}, [-3, 0, 12], [-4, 13, Raw("-0")]),
    "integer_huge_bounds": ({"type": "integer", "minimum": 10**25, "exclusiveMaximum": 10**25 + 3},
                            [10**25, 10**25 + 2], [10**25 - 1, 10**25 + 3, 0]),
    "integer_fractional_bounds": ({"type": "integer", "minimum": -2.5, "maximum": 3.99}, [-2, 3], [-3, 4]),
    "integer_draft4_exclusive": ({"$schema": "http://json-schema.org/draft-04/schema#", "type": "integer",
                                  "minimum": 0, "exclusiveMinimum": True, "maximum": 5, "exclusiveMaximum": True},
                                 [1, 4], [0, 5]),
    "number_non_negative": ({"type": "number", "minimum": 0}, [0, 0.5, 3, 1e10], [-1, -0.5]),
    "ref_defs": ({"$defs": {"pos": {"type": "integer", "minimum": 1}}, "type": "array", "items": {"$ref": "#/$defs/pos"}},
                 [[], [1, 2]], [[0], [1, -1]]),
    "ref_definitions_escaped": ({"definitions": {"a b": {"type": "string"}, "c/d": {"type": "integer"}},
                                 "anyOf": [{"$ref": "#/definitions/a%20b"}, {"$ref": "#/definitions/c~1d"}]},
                                ["s", 3], [None, 1.5]),
    "ref_recursive_tree": ({"$ref": "#/$defs/node", "$defs": {"node": {
        "type": "object", "properties": {"value": {"type": "integer"},
                                         "children": {"type": "array", "items": {"$ref": "#/$defs/node"}}},
        "required": ["value"], "additionalProperties": False}}},
        [{"value": 1}, {"value": 1, "children": [{"value": 2, "children": []}, {"value": 3}]}],
        [{"value": 1, "children": [{}]}, {"children": []}, {"value": 1, "children": [{"value": "x"}]}]),
    "ref_root_recursion": ({"type": "object", "properties": {"next": {"$ref": "#"}, "v": {"type": "integer"}},
                            "additionalProperties": False},
                           [{}, {"next": {"next": {"v": 1}}}], [{"next": {"w": 1}}, {"next": 1}]),
    "ref_anchor": ({"$defs": {"x": {"$anchor": "num", "type": "number"}}, "items": {"$ref": "#num"}, "type": "array"},
                   [[1.5, 2]], [["a"]]),
    # the same $ref texts from several places, each resolved once per conversion
    "ref_targets_named_again": ({"$defs": {"n": {"type": "integer"}, "s": {"type": "string"}}, "type": "object",
                                 "properties": {"p": {"$ref": "#/$defs/n"}, "q": {"$ref": "#/$defs/s"},
                                                "r": {"$ref": "#/$defs/n"},
                                                "t": {"type": "array", "items": {"$ref": "#/$defs/s"}}}},
                                [{"p": 1, "q": "x", "r": 2, "t": ["y"]}, {}],
                                [{"p": "x"}, {"q": 1}, {"r": "x"}, {"t": [1]}]),
    "format_date": ({"type": "string", "format": "date"},
                    ["2024-02-29", "2000-02-29", "1999-12-31", "0001-01-01", "2023-04-30"],
                    ["2023-02-29", "1900-02-29", "2023-04-31", "2023-13-01", "0000-01-01", "2023-1-01", "20230101"]),
    "format_time": ({"type": "string", "format": "time"},
                    ["12:34:56Z", "23:59:59.123+05:30", "00:00:00-23:59", "12:00:00z"],
                    ["24:00:00Z", "12:60:00Z", "12:00:60Z", "12:00:00", "12:00Z"]),
    "format_date_time": ({"type": "string", "format": "date-time"},
                         ["2024-02-29T12:34:56Z", "2023-01-01t00:00:00.5+01:00"],
                         ["2023-02-29T12:34:56Z", "2024-01-01 12:00:00Z", "2024-01-01T12:00:00"]),
    "format_ipv4": ({"type": "string", "format": "ipv4"}, ["0.0.0.0", "255.255.255.255", "192.168.1.10"],
                    ["256.1.1.1", "01.1.1.1", "1.1.1", "1.1.1.1.1", "a.b.c.d"]),
    "format_uuid": ({"type": "string", "format": "uuid"},
                    ["123e4567-e89b-12d3-a456-426614174000", "123E4567-E89B-12D3-A456-426614174000"],
                    ["123e4567e89b12d3a456426614174000", "123e4567-e89b-12d3-a456-42661417400", "g23e4567-e89b-12d3-a456-426614174000"]),
    "format_email": ({"type": "string", "format": "email"}, ["a@b.co", "first.last+tag@example-mail.org"],
                     ["no-at-sign", Raw('"a@"'), Raw('"@b.co"')]),  # a sound subset
    "format_uri": ({"type": "string", "format": "uri"},
                   ["https://example.com/a/b?c=d#e", "mailto:a@b.co", "urn:isbn:0451450523", "file:///tmp/x", "http://h:8080/%20"],
                   [Raw('"example.com"'), Raw('"/relative/path"'), Raw('"http://a b"'), Raw('"1http://x"')]),
    "format_unknown_is_annotation": ({"type": "string", "format": "path"}, ["a/b", "", "é"], [1, None]),
    # pattern / format / length: intersected automata
    "pattern_with_lengths": ({"type": "string", "pattern": "^[a-z]+$", "minLength": 2, "maxLength": 4},
                             ["ab", "abcd"], ["a", "abcde", "AB", "a1"]),
    "pattern_unanchored_with_max": ({"type": "string", "pattern": "[0-9]", "maxLength": 3},
                                    ["1", "a1", "x\"9", "é1é"], ["", "abc", "abcd1", "1234"]),
    "format_with_pattern": ({"type": "string", "format": "ipv4", "pattern": "^10\\."},
                            ["10.0.0.1", "10.255.1.2"], ["11.0.0.1", "10.0.0", "10.0.0.256"]),
    "format_with_max_length": ({"type": "string", "format": "date", "maxLength": 10}, ["2020-01-01"], ["2020-1-1", "x"]),
    "format_with_max_length_empty": ({"type": ["string", "null"], "format": "uuid", "maxLength": 8}, [None],
                                     ["123e4567-e89b-12d3-a456-426614174000", ""]),
    # numbers: exact decimal bounds
    "number_minimum_fraction": ({"type": "number", "minimum": 2.5}, [2.5, 2.51, 3, 100, 2.500001],
                                [2.4999, 2, -3, 0, Raw("2.5e0")]),
    "number_exclusive_negative": ({"type": "number", "exclusiveMinimum": -1.25, "maximum": 3.5},
                                  [-1.2, -1.249, 0, 3.5, 3.49], [-1.25, -1.3, 3.51, 4]),
    "number_exclusive_zero": ({"type": "number", "exclusiveMaximum": 0}, [-0.001, -5, -1e10],
                              [0, 0.0, Raw("-0"), Raw("-0.0"), 0.5]),
    "number_maximum_small_fraction": ({"type": "number", "maximum": 0.0905}, [0.09, 0.0905, -1, 0, 0.09049],
                                      [0.0906, 0.091, 1]),
    "number_lower_side_keeps_exponents": ({"type": "number", "minimum": -2}, [1e300, 2.5e-8, -2, -1.5, 0], [-2.1, -3]),
    "number_draft4_exclusive": ({"$schema": "http://json-schema.org/draft-04/schema#", "type": "number",
                                 "minimum": 1.5, "exclusiveMinimum": True}, [1.6, 2], [1.5, 1]),
    "multiple_of_integer": ({"type": "integer", "multipleOf": 7, "minimum": -20, "maximum": 50},
                            [-14, 0, 7, 49], [-21, 56, 8, 3.5]),
    "multiple_of_decimal": ({"type": "number", "multipleOf": 0.25}, [0.25, 1, -2.75, 10.5, 0.5000],
                            [0.1, 1.3, Raw("1e2")]),
    "multiple_of_with_bounds": ({"type": "number", "multipleOf": 0.5, "minimum": -1, "exclusiveMaximum": 2.5},
                                [-1, -0.5, 0, 2, 2.0], [-1.5, 2.5, 0.25, 3]),
    "multiple_of_enum_filter": ({"enum": [1, 2, 3, 4, "x"], "multipleOf": 2}, [2, 4, "x"], [1, 3]),
    # objects: patternProperties / propertyNames / member counts
    "pattern_properties_closed": ({"type": "object", "patternProperties": {"^x-": {"type": "integer"}},
                                   "additionalProperties": False},
                                  [{}, {"x-a": 1, "x-b": 2}], [{"x-a": "s"}, {"y": 1}]),
    "pattern_properties_with_properties": (
        {"type": "object", "properties": {"x-a": {"minimum": 5}, "b": {"type": "string"}},
         "patternProperties": {"^x-": {"type": "integer"}}, "additionalProperties": {"type": "boolean"}},
        [{}, {"x-a": 5}, {"x-a": 6, "b": "s", "x-c": 1, "z": True}, {"zz": False}],
        [{"x-a": 4}, {"x-a": 5.5}, {"x-c": "s"}, {"z": 1}, {"b": 1}]),
    "pattern_properties_overlap": ({"type": "object", "patternProperties": {"a": {"type": "integer"}, "b": {"minimum": 3}}},
                                   [{"a": 1, "b": 3, "ab": 4, "c": None}], [{"ab": 2}, {"ab": "x"}, {"b": 1}]),
    "pattern_properties_escaped_names": ({"type": "object", "patternProperties": {"^\\w+$": {"type": "null"}},
                                          "additionalProperties": {"type": "integer"}},
                                         [{"ab_1": None, "a\"b": 1, "a\nb": 2, "": 3}],
                                         [{"ab": 1}, {"a-b": None}]),
    "pattern_properties_one_spelling_per_name": (
        {"type": "object", "properties": {"\x1f": {"type": "string"}}, "patternProperties": {"x": {}},
         "additionalProperties": {"type": "integer"}},
        [{"\x1f": "s"}, {"y": 1}, {"x\x1e": None}], [Raw('{"\\u001F": 1}'), Raw('{"\\u001f": 1}')]),
    "property_names_length": ({"type": "object", "propertyNames": {"maxLength": 2}}, [{}, {"ab": 1}], [{"abc": 1}]),
    "property_names_enum": ({"type": "object", "propertyNames": {"enum": ["a", "b"]}, "properties": {"c": {}}},
                            [{"a": 1, "b": []}], [{"c": 1}, {"d": 1}]),
    "property_names_false": ({"type": "object", "propertyNames": False}, [{}], [{"a": 1}]),
    "min_properties_one": ({"type": "object", "minProperties": 1}, [{"a": 1}, {"a": 1, "b": 2}], [{}]),
    "min_max_properties_closed": ({"type": "object", "properties": {"a": {}, "b": {}, "c": {}}, "minProperties": 2,
                                   "maxProperties": 2, "additionalProperties": False},
                                  [{"a": 1, "b": 1}, {"a": 1, "c": 1}, {"b": 1, "c": 2}],
                                  [{}, {"a": 1}, {"a": 1, "b": 1, "c": 1}]),
    "max_properties_open": ({"type": "object", "properties": {"a": {}}, "maxProperties": 2},
                            [{}, {"a": 1, "x": 2}, {"x": 1, "y": 2}], [{"a": 1, "x": 2, "y": 3}, {"x": 1, "y": 2, "z": 3}]),
    "min_properties_with_patterns": ({"type": "object", "patternProperties": {"^x": {"type": "integer"}},
                                      "minProperties": 1, "additionalProperties": False}, [{"xa": 1}], [{}, {"y": 1}]),
    "min_properties_enum_filter": ({"enum": [{"a": 1}, {}], "minProperties": 1}, [{"a": 1}], [{}]),
    # not: the forms whose complement is a schema
    "not_always_true": ({"type": "object", "properties": {"a": {"not": {}}, "b": {}}}, [{}, {"b": 1}], [{"a": 1}]),
    "not_false": ({"type": "integer", "not": False}, [1], ["x"]),
    "not_required": ({"type": "object", "properties": {"a": {}, "b": {}}, "not": {"required": ["a", "b"]}},
                     [{}, {"a": 1}, {"b": 1}], [{"a": 1, "b": 1}]),
    "not_required_rejects_non_objects": ({"not": {"required": ["a"]}}, [{}, {"b": 1}], [{"a": 1}, 1, "x", None]),
    "not_anyof_required": ({"type": "object", "properties": {"a": {}, "b": {}, "c": {}},
                            "not": {"anyOf": [{"required": ["a"]}, {"required": ["b"]}]}}, [{}, {"c": 1}], [{"a": 1}, {"b": 1}]),
    "not_allof_required": ({"type": "object", "properties": {"a": {}, "b": {}},
                            "not": {"allOf": [{"required": ["a"]}, {"required": ["b"]}]}}, [{"a": 1}, {"b": 1}], [{"a": 1, "b": 1}]),
    "not_type": ({"not": {"type": ["array", "object", "null"]}}, [1, 1.5, "x", True], [None, [], {}]),
    "not_type_with_enum": ({"enum": ["a", 1, None], "not": {"type": "string"}}, [1, None], ["a"]),
    # dependencies: `name absent` or `name present and the dependency holds`
    "dependent_required": ({"type": "object", "properties": {"a": {}, "b": {}, "c": {}}, "dependentRequired": {"a": ["b"]}},
                           [{}, {"b": 1}, {"a": 1, "b": 2}, {"c": 1}], [{"a": 1}, {"a": 1, "c": 1}]),
    "dependent_required_open_object": ({"type": "object", "properties": {"a": {}, "b": {}}, "dependentRequired": {"a": ["b"]}},
                                       [{}, {"x": 1}, {"a": 1, "b": 1}], [{"a": 1}, {"a": 1, "x": 1}]),
    "dependent_schemas": ({"type": "object", "properties": {"a": {}, "b": {"type": "integer"}},
                           "dependentSchemas": {"a": {"properties": {"b": {"minimum": 5}}, "required": ["b"]}}},
                          [{}, {"b": 1}, {"a": 1, "b": 5}], [{"a": 1}, {"a": 1, "b": 4}]),
    "dependencies_draft7": ({"$schema": "http://json-schema.org/draft-07/schema#", "type": "object",
                             "properties": {"a": {}, "b": {}, "c": {}}, "dependencies": {"a": ["b"], "c": {"required": ["a"]}}},
                            [{}, {"a": 1, "b": 1}, {"a": 1, "b": 1, "c": 1}], [{"a": 1}, {"c": 1}, {"b": 1, "c": 1}]),
    "dependencies_ignore_non_objects": ({"properties": {"a": {}, "b": {}}, "dependentRequired": {"a": ["b"]}},
                                        [1, "x", [1], {"b": 1}], [{"a": 1}]),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_keyword_table(name):
    schema, accepted, rejected = CASES[name]
    check(schema, accepted, rejected, strict_mode=False)


# --------------------------------------------------------------------------------------
# strict_mode

@pytest.mark.parametrize("members_before", [0, 3, 15, 16, 40])
def test_repeated_schema_key_keeps_first_position_and_last_value(members_before):
    # As Python's json module reads it: the later value wins, at the first key's position.
    # Objects of 16 members and more find duplicates through an index, smaller ones by a scan.
    names = [f"p{i}" for i in range(members_before)]
    head = ", ".join(f'"{name}": {{"type": "null"}}' for name in names)
    text = ('{"type": "object", "required": ["dup"], "properties": {'
            + (head + ", " if head else "")
            + '"dup": {"type": "string"}, "tail": {"type": "null"}, "dup": {"type": "integer"}}}')
    schema = json.loads(text)
    assert list(schema["properties"]) == [*names, "dup", "tail"]
    ebnf = to_ebnf(text, strict_mode=True)
    assert ebnf_accepts(ebnf, '{"dup": 7}')
    assert not ebnf_accepts(ebnf, '{"dup": "seven"}')
    assert ebnf_accepts(ebnf, '{"dup": 7, "tail": null}')
    assert not ebnf_accepts(ebnf, '{"tail": null, "dup": 7}')
    jsonschema.validate({"dup": 7, "tail": None}, schema)


def test_strict_mode_rejects_undeclared_properties():
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}}
    check(schema, [{}, {"a": 1}], [{"b": 1}, {"a": 1, "b": 2}], strict_mode=True)
    check(schema, [{"a": 1, "b": 2}, {"b": 1}], [], strict_mode=False)


def test_strict_mode_honours_additional_properties():
    allowing = {"type": "object", "properties": {"a": {"type": "integer"}}, "additionalProperties": {"type": "integer"}}
    check(allowing, [{"a": 1, "b": 2}], [{"a": 1, "b": "x"}], strict_mode=True)
    check({"type": "object", "additionalProperties": True}, [{"x": [1]}], [], strict_mode=True)


def test_strict_mode_required_but_undeclared_accepts_any_value():
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a", "b"]}
    check(schema, [{"a": 1, "b": {"any": [None]}}], [{"a": 1}, {"a": 1, "b": 1, "c": 2}], strict_mode=True)


def test_explicitly_closed_object_with_undeclared_required_accepts_nothing():
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["b"],
              "additionalProperties": False}
    with pytest.raises(SchemaError, match="accepts no JSON value"):
        to_ebnf(schema)


# --------------------------------------------------------------------------------------
# Whitespace and layout

NESTED = {"a": [1, {"b": None, "c": []}], "d": {}, "e": "x"}
NESTED_SCHEMA = {"type": "object", "properties": {
    "a": {"type": "array", "items": {"anyOf": [{"type": "integer"}, {"type": "object", "properties": {
        "b": {"type": "null"}, "c": {"type": "array"}}}]}},
    "d": {"type": "object"}, "e": {"type": "string"}}}


@pytest.mark.parametrize("schema", [NESTED_SCHEMA, True], ids=["schema", "any"])
@pytest.mark.parametrize("indent", [0, 2, 4])
def test_indent_matches_json_dumps(schema, indent):
    ebnf = to_ebnf(schema, indent=indent)
    assert ebnf_accepts(ebnf, json.dumps(NESTED, indent=indent))
    assert not ebnf_accepts(ebnf, json.dumps(NESTED, indent=indent + 1))
    assert not ebnf_accepts(ebnf, json.dumps(NESTED))


@pytest.mark.parametrize("separators", [(",", ":"), (", ", ": "), (" ,", " : ")])
def test_separators_match_json_dumps(separators):
    for schema in (NESTED_SCHEMA, True):
        ebnf = to_ebnf(schema, separators=separators)
        assert ebnf_accepts(ebnf, json.dumps(NESTED, separators=separators))
        other = (",", ":") if separators != (",", ":") else (", ", ": ")
        assert not ebnf_accepts(ebnf, json.dumps(NESTED, separators=other))
    ebnf = to_ebnf(NESTED_SCHEMA, indent=2, separators=(", ", " = "))
    assert ebnf_accepts(ebnf, json.dumps(NESTED, indent=2, separators=(", ", " = ")))


def test_no_whitespace_option_uses_json_dumps_defaults():
    ebnf = to_ebnf(NESTED_SCHEMA, any_whitespace=False)
    assert ebnf_accepts(ebnf, json.dumps(NESTED))
    assert not ebnf_accepts(ebnf, json.dumps(NESTED, separators=(",", ":")))
    assert not ebnf_accepts(ebnf, json.dumps(NESTED, indent=1))


def test_any_whitespace_and_cap():
    ebnf = to_ebnf(NESTED_SCHEMA)
    for text in (json.dumps(NESTED), json.dumps(NESTED, indent=3), json.dumps(NESTED, separators=(",", ":")),
                 '{ \n"a"\t:[ 1 ,{ } ] }'):
        assert ebnf_accepts(ebnf, text), text
    assert not ebnf_accepts(ebnf, ' {"a": []}')  # no whitespace before the value
    assert ebnf_accepts(ebnf, '{"a":\r\n[]}')  # RFC 8259: space, tab, LF and CR
    assert not ebnf_accepts(ebnf, '{"a":\x0b[]}')
    capped = to_ebnf(NESTED_SCHEMA, max_whitespace=2)
    assert ebnf_accepts(capped, '{  "a":  [1,  {  }]}')
    assert not ebnf_accepts(capped, '{   "a": []}')
    none = to_ebnf(NESTED_SCHEMA, max_whitespace=0)
    assert ebnf_accepts(none, json.dumps(NESTED, separators=(",", ":")))
    assert not ebnf_accepts(none, json.dumps(NESTED))


def test_empty_containers():
    schema = {"type": "object", "properties": {"a": {"type": "array"}, "o": {"type": "object"}}}
    assert ebnf_accepts(to_ebnf(schema), '{ "a" : [ ] , "o" : { \n } }')
    fixed = to_ebnf(schema, indent=2)
    assert ebnf_accepts(fixed, json.dumps({"a": [], "o": {}}, indent=2))
    assert not ebnf_accepts(fixed, '{\n  "a": [\n  ],\n  "o": {}\n}')


def test_invalid_layout_options():
    with pytest.raises(ValueError):
        to_ebnf(True, indent=-1)
    with pytest.raises(ValueError):
        to_ebnf(True, max_whitespace=-1)


def test_builtin_json_grammar():
    rng = random.Random(7)

    def value(depth):
        makers = [lambda: None, lambda: True, lambda: rng.uniform(-1e6, 1e6),
                  lambda: rng.randrange(-10**9, 10**9),
                  lambda: "".join(rng.choice("ab\"\\\n😀é/ ") for _ in range(rng.randrange(5))),
                  lambda: [value(depth + 1) for _ in range(rng.randrange(4))],
                  lambda: {f"k{i}\"": value(depth + 1) for i in range(rng.randrange(4))}]
        return makers[rng.randrange(7 if depth < 4 else 5)]()

    flexible = _native._builtin_json_ebnf()
    pretty = _native._builtin_json_ebnf(indent=2)
    compact = _native._builtin_json_ebnf(separators=(",", ":"))
    for _ in range(60):
        v = value(0)
        assert ebnf_accepts(flexible, json.dumps(v, indent=rng.choice([None, 1, 3])))
        assert ebnf_accepts(pretty, json.dumps(v, indent=2, ensure_ascii=False))
        assert ebnf_accepts(compact, json.dumps(v, separators=(",", ":")))
    for bad in ["", "nul", "[1,]", '{"a"}', "01", '"\\x"', "{'a': 1}", "[1] [2]", "NaN"]:
        assert not ebnf_accepts(flexible, bad), bad


# --------------------------------------------------------------------------------------
# Integer ranges, exhaustively over a window

WINDOW = range(-1200, 1201)


@pytest.mark.parametrize("bounds", [
    {"minimum": 0}, {"minimum": 1}, {"maximum": -1}, {"maximum": 0}, {"minimum": -1000, "maximum": 999},
    {"minimum": -37, "exclusiveMaximum": 1000}, {"exclusiveMinimum": -101, "exclusiveMaximum": 101},
    {"minimum": 7, "maximum": 7}, {"minimum": 8, "maximum": 7}, {"minimum": 99, "maximum": 1001},
    {"minimum": -1099, "maximum": -10}, {"exclusiveMinimum": 9.5}, {"maximum": -0.5},
    {"minimum": 5, "exclusiveMinimum": 10, "maximum": 300, "exclusiveMaximum": 200},
], ids=lambda b: json.dumps(b))
def test_integer_range_exhaustive(bounds):
    schema = {"type": "integer", **bounds}
    try:
        ebnf = to_ebnf(schema)
    except SchemaError:
        assert not any(is_valid(schema, i) for i in WINDOW)
        return
    for i in WINDOW:
        assert ebnf_accepts(ebnf, str(i)) == is_valid(schema, i), i
    assert not ebnf_accepts(ebnf, "-0")
    assert not ebnf_accepts(ebnf, "007")


def test_integer_range_random_big_bounds():
    rng = random.Random(3)
    for _ in range(20):
        low = rng.randrange(-10**40, 10**40)
        high = low + rng.randrange(0, 10**rng.randrange(1, 41))
        ebnf = to_ebnf({"type": "integer", "minimum": low, "maximum": high})
        for value in (low, high, low - 1, high + 1, (low + high) // 2, rng.randrange(-10**41, 10**41)):
            assert ebnf_accepts(ebnf, str(value)) == (low <= value <= high), (low, high, value)


# --------------------------------------------------------------------------------------
# Policy: unsupported keywords, lenient warnings, invalid schemas

@pytest.mark.parametrize("schema,keyword,pointer", [
    ({"oneOf": [{"type": "string", "format": "email"}, {"maxLength": 2}]}, "oneOf", "/"),
    ({"type": "object", "properties": {"a": {"not": {"format": "email"}}}}, "not", "/properties/a"),
    ({"not": {"multipleOf": 2}}, "not", "/"),
    ({"allOf": [{"type": "string", "format": "date"}, {"format": "email"}]}, "format", "/"),
    ({"if": {"type": "string", "format": "email"}, "then": {"maxLength": 1}}, "if", "/"),
    ({"type": "object", "patternProperties": {f"{c}": {"maxLength": i} for i, c in enumerate("abcdefg")}},
     "patternProperties", "/"),
    ({"$defs": {"n": {"anyOf": [{"const": "a"}, {"$ref": "#/$defs/n"}]}}, "type": "object",
      "propertyNames": {"$ref": "#/$defs/n"}}, "propertyNames", "/"),
    ({"type": "array", "items": {"type": "array", "uniqueItems": True}}, "uniqueItems", "/items"),
    ({"type": "array", "contains": {"type": "string", "format": "email"}}, "contains", "/"),
    ({"type": "integer", "multipleOf": 1001}, "multipleOf", "/"),
    ({"type": "number", "multipleOf": 0.1234, "minimum": 0.5}, "multipleOf", "/"),
    ({"type": "object", "minProperties": 2}, "minProperties", "/"),
    ({"type": "object", "maxProperties": 2147483648}, "maxProperties", "/"),
    ({"type": "object", "dependentRequired": {"a": ["b"]}}, "dependentRequired", "/"),
    ({"$defs": {"d": {"type": "string", "format": "hostname"}}, "$ref": "#/$defs/d"}, "hostname", "/$defs/d"),
    ({"type": "number", "maximum": float("1e250")}, "maximum", "/"),
    # 50-character blocks: gaps of 49 lengths, wider than the window of 10 the matcher would count.
    ({"type": "object", "properties": {"a~b/c": {"type": "string", "pattern": "^(?:[a-z]{50})*$", "minLength": 29990,
                                                 "maxLength": 30000}}},
     "minLength", "/properties/a~0b~1c"),
    ({"type": "object", "properties": {"a~b/c": {"type": "string", "format": "uuid", "pattern": "^[ab]{15000}"}}},
     "pattern", "/properties/a~0b~1c"),
    ({"$ref": "#/$defs/a", "format": "email", "$defs": {"a": {"format": "date"}}}, "format", "/"),
])
def test_unsupported_keywords_name_keyword_and_pointer(schema, keyword, pointer):
    with pytest.raises(Unsupported) as info:
        to_ebnf(schema)
    message = str(info.value)
    assert keyword in message and f"at {pointer}" in message, message
    ebnf, warnings = _native._json_schema_to_ebnf(json.dumps(schema), lenient=True)
    assert any(keyword in w and f"at {pointer}" in w for w in warnings), warnings
    assert ebnf.startswith("root ::= ")


def test_lenient_ignores_only_the_unsupported_keyword():
    schema = {"type": "object", "properties": {"a": {"type": "integer", "multipleOf": 2002, "maximum": 9}},
              "required": ["a"]}
    ebnf, warnings = _native._json_schema_to_ebnf(json.dumps(schema), lenient=True)
    assert len(warnings) == 1 and warnings[0].startswith("unsupported keyword 'multipleOf' at /properties/a: ")
    assert ebnf_accepts(ebnf, '{"a": 3}')
    assert not ebnf_accepts(ebnf, '{"a": 10}')
    _, none = _native._json_schema_to_ebnf(json.dumps({"type": "string"}), lenient=True)
    assert none == []


def test_annotations_and_no_op_forms_are_accepted():
    schema = {"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": "https://x.test/s",
              "title": "t", "description": "d", "default": 1, "examples": [1], "$comment": "c",
              "deprecated": False, "readOnly": True, "writeOnly": False, "x-vendor": {"oneOf": 1},
              "contentMediaType": "text/plain", "contentEncoding": "base64", "type": "array",
              "uniqueItems": False, "minItems": 0, "additionalItems": False, "items": {"type": "integer"},
              "unknownKeyword": 3}
    check(schema, [[], [1, 1]], ["x", [1.5]])
    check({"type": "object", "minProperties": 0, "dependentRequired": {}}, [{}], [])


@pytest.mark.parametrize("schema,fragment", [
    ({"type": "strng"}, "'type' at /"),
    ({"type": 3}, "'type' at /"),
    ({"properties": {"a": {"minLength": -1}}}, "'minLength' at /properties/a"),
    ({"properties": {"a": {"maxItems": 1.5}}}, "'maxItems' at /properties/a"),
    ({"properties": []}, "'properties' at /"),
    ({"required": "a"}, "'required' at /"),
    ({"items": {"$ref": "#/$defs/missing"}}, "#/$defs/missing"),
    ({"properties": {"a": {"$ref": "#/$defs/x"}, "b": {"$ref": "#/$defs/x/missing"}}, "$defs": {"x": {}}},
     "'#/$defs/x/missing' at /properties/b"),
    ({"$ref": "https://example.com/schema.json"}, "remote $ref"),
    ({"$ref": "other.json#/a"}, "unresolvable $ref"),
    ({"anyOf": []}, "'anyOf' at /"),
    ({"enum": 3}, "'enum' at /"),
    ({"properties": {"a": 3}}, "/properties/a"),
    (False, "accepts no JSON value"),
    ({"type": "integer", "minimum": 3, "maximum": 2}, "accepts no JSON value"),
])
def test_invalid_schemas_are_schema_errors(schema, fragment):
    with pytest.raises(SchemaError) as info:
        to_ebnf(schema)
    assert not isinstance(info.value, Unsupported)
    assert fragment in str(info.value), str(info.value)


def test_malformed_json_names_line_and_column():
    with pytest.raises(SchemaError, match="line 2, column 6"):
        to_ebnf('{"type":\n "a" "b"}')
    for bad in ["", "{", '{"a": 01}', '{"a": "\\ud800"}', "[1,]", '{"a" 1}', "nan", b"\xff".decode("latin-1")]:
        with pytest.raises(SchemaError):
            to_ebnf(bad)


def test_resource_limits():
    with pytest.raises(LimitError):
        to_ebnf("[" * 100000 + "]" * 100000)
    deep = {}
    node = deep
    for _ in range(400):
        node["items"] = {}
        node = node["items"]
    to_ebnf(deep)  # deep but within limits
    chain = {"$defs": {f"d{i}": {"$ref": f"#/$defs/d{i + 1}"} for i in range(3000)}, "$ref": "#/$defs/d0"}
    chain["$defs"]["d3000"] = {"type": "integer"}
    with pytest.raises(LimitError):
        to_ebnf(chain)


def test_empty_recursion_is_an_error_not_a_hang():
    with pytest.raises(SchemaError):
        to_ebnf({"$ref": "#"})
    with pytest.raises(SchemaError):
        to_ebnf({"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}}, "$ref": "#/$defs/a"})


def test_productivity_decided_through_chains_and_cycles():
    # RuleSet::UnproductiveRules settles most rules by propagation (all named rules productive)
    # and the rest by their trees: a cycle with no way out must be found behind a chain and
    # dropped from an alternative, while a cycle with a base case stays.
    loop = {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}}
    chain = {f"c{i}": {"$ref": f"#/$defs/c{i + 1}"} for i in range(5)}
    dead_behind_chain = {"$defs": {**loop, **chain, "c5": {"$ref": "#/$defs/a"}},
                         "anyOf": [{"type": "integer"}, {"$ref": "#/$defs/c0"}]}
    check(dead_behind_chain, [1, -4], ["x", [], None])
    with pytest.raises(SchemaError):
        to_ebnf({"$defs": dead_behind_chain["$defs"], "$ref": "#/$defs/c0"})
    tree = {"$defs": {**chain, "c5": {"type": "object", "properties": {"kids": {
        "type": "array", "items": {"$ref": "#/$defs/c0"}}}, "required": ["kids"]}}, "$ref": "#/$defs/c0"}
    check(tree, [{"kids": []}, {"kids": [{"kids": []}]}], [{}, {"kids": [1]}])


def test_rule_names_are_valid_and_bodies_shared():
    schema = {"type": "object", "properties": {
        "weird name!": {"type": "string", "maxLength": 2}, "9x": {"type": "string", "maxLength": 2},
        "ünï": {"type": "integer", "minimum": 1}}}
    ebnf = to_ebnf(schema)
    names = [line.split(" ::= ")[0] for line in ebnf.splitlines()]
    assert len(names) == len(set(names))
    assert all(name[0].isalpha() or name[0] == "_" for name in names)
    assert sum('json_char{0,2}' in line for line in ebnf.splitlines()) == 1  # shared rule
    assert ebnf_accepts(ebnf, '{"weird name!": "ab", "9x": "", "ünï": 4}')


@pytest.mark.skipif(not HAS_REGEX, reason="regex frontend not merged yet")
def test_pattern():
    check({"type": "string", "pattern": "^[a-z]+[0-9]?$"}, ["abc", "a1"], ["", "A", "a12"])
    check({"type": "string", "pattern": "b+"}, ["b", "abba", 'x"b'], ["", "a"])


# --------------------------------------------------------------------------------------
# JSONSchemaBench corpus: a fixed stratified sample

SAMPLE_PER_CATEGORY = 15


def corpus_sample():
    if not BENCH_DIR.is_dir():
        return []
    by_category = {}
    for path in sorted(BENCH_DIR.glob("*.json")):
        by_category.setdefault(path.name.split("---")[0], []).append(path)
    rng = random.Random(20240601)
    sample = []
    for category in sorted(by_category):
        files = by_category[category]
        sample.extend(rng.sample(files, min(SAMPLE_PER_CATEGORY, len(files))))
    return sample


def _ground_truth(schema, instance, label):
    """The label when jsonschema (with format checks) agrees with it, else None."""
    try:
        cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
        verdict = cls(schema, format_checker=cls.FORMAT_CHECKER).is_valid(instance)
    except Exception:
        return None
    return label if verdict == label else None


class _Acceptor:
    """Full-match acceptance against one grammar compiled once (ebnf_accepts rebuilds the
    grammar on every call, which dominates for large schemas)."""

    _compiled = {}

    def __init__(self, ebnf):
        from xg2_plugin import GrammarCompiler, TokenizerInfo

        if ebnf not in self._compiled:
            compiler = GrammarCompiler(TokenizerInfo([b"a"]), cache_enabled=False)
            self._compiled.clear()
            self._compiled[ebnf] = compiler.compile_grammar(ebnf)
        self.grammar = self._compiled[ebnf]

    def __call__(self, text):
        from xg2_plugin import GrammarMatcher

        matcher = GrammarMatcher(self.grammar)
        return matcher.accept_string(text) and matcher.is_completed()


@pytest.mark.parametrize("path", corpus_sample(), ids=lambda p: p.name)
def test_corpus_sample(path):
    data = json.loads(path.read_text())
    schema = data["schema"]
    try:
        loose_ebnf = to_ebnf(schema, strict_mode=False)
        strict_ebnf = to_ebnf(schema, strict_mode=True)
    except (Unsupported, SchemaError):
        return
    loose = _Acceptor(loose_ebnf)
    strict = loose if strict_ebnf == loose_ebnf else None
    failures = []
    for test in data.get("tests", []):
        label = _ground_truth(schema, test["data"], test["valid"])
        if label is None:
            continue
        reorder = _Reorderer(schema)
        instance = reorder.order(test["data"], schema)
        text = json.dumps(instance, ensure_ascii=False)
        if label:
            if not loose(text):
                failures.append(f"valid instance rejected: {text[:300]}")
            if not reorder.has_undeclared:
                strict = strict or _Acceptor(strict_ebnf)
                if not strict(text):
                    failures.append(f"valid instance rejected in strict mode: {text[:300]}")
        elif loose(text):
            failures.append(f"invalid instance accepted: {text[:300]}")
    assert not failures, "\n".join(failures)


def test_strict_mode_object_without_declared_properties_accepts_any_members():
    check({"type": "object"}, [{}, {"a": 1, "b": [None]}], [[]], strict_mode=True)
    check({"type": "object", "required": ["a"]}, [{"a": 1, "z": 2}], [{"z": 2}], strict_mode=True)
    check({"type": "object", "properties": {}}, [{}], [{"a": 1}], strict_mode=True)


def test_support_matrix_in_docs_matches_the_keyword_table():
    import importlib.util

    spec = importlib.util.spec_from_file_location("gen", REPO_ROOT / "scripts" / "gen_schema_support.py")
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    doc = (REPO_ROOT / "docs" / "json_schema_support.md").read_text()
    assert gen.replace_section(doc, "MATRIX", gen.matrix()) == doc, "run scripts/gen_schema_support.py"


# --------------------------------------------------------------------------------------
# Automaton-built languages against exact oracles on random instances

def _exactly_valid_number(schema, text):
    """Exact decimal semantics (jsonschema divides floats, which misjudges e.g. 203.2 / 0.05)."""
    from decimal import Decimal

    x = Decimal(text)
    bound = lambda key: Decimal(repr(schema[key]))  # noqa: E731
    if schema.get("type") == "integer" and x != x.to_integral_value():
        return False
    return (("minimum" not in schema or x >= bound("minimum"))
            and ("maximum" not in schema or x <= bound("maximum"))
            and ("exclusiveMinimum" not in schema or x > bound("exclusiveMinimum"))
            and ("exclusiveMaximum" not in schema or x < bound("exclusiveMaximum"))
            and ("multipleOf" not in schema or (x / bound("multipleOf")) % 1 == 0))


@pytest.mark.parametrize("schema", [
    {"type": "number", "minimum": 2.5}, {"type": "number", "exclusiveMinimum": -2.5},
    {"type": "number", "maximum": -0.125}, {"type": "number", "exclusiveMaximum": 0},
    {"type": "number", "minimum": -1.25, "maximum": 3.5}, {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1},
    {"type": "number", "multipleOf": 0.05}, {"type": "number", "multipleOf": 3},
    {"type": "integer", "multipleOf": 7, "minimum": -20, "maximum": 50},
    {"type": "number", "multipleOf": 0.5, "minimum": -1, "exclusiveMaximum": 2.5},
    {"type": "number", "minimum": 123.456}, {"type": "integer", "multipleOf": 2.5},
    {"type": "number", "multipleOf": 0.01, "maximum": 1},
])
def test_number_languages_match_decimal_arithmetic(schema):
    """Every plain decimal spelling (no exponent) is accepted iff the value satisfies the schema."""
    rng = random.Random(json.dumps(schema))
    ebnf = to_ebnf(schema)
    texts = {"0", "0.0", "1.5", "2.5", "-2.5", "2.50", "2.499", "2.5001", "-2.5001", "10", "-10", "0.05", "100.000"}
    for _ in range(300):
        digits = rng.choice([0, 1, 2, 3, 4])
        value = rng.randint(-40000, 40000)
        texts.add(f"{value / 10 ** digits:.{digits}f}")
    for text in sorted(texts):
        if (text.startswith("-0") and float(text) == 0) or (schema["type"] == "integer" and "." in text):
            continue  # integers are generated as integers ("-0" and "2.0" are spelling choices)
        expected = _exactly_valid_number(schema, text)
        assert ebnf_accepts(ebnf, text) == expected, (schema, text, expected)


def test_pattern_properties_partition_names_exactly():
    """Random member names against jsonschema: declared names, two overlapping patterns and
    additionalProperties each get exactly the schemas that apply to them."""
    schema = {"type": "object",
              "properties": {"ab": {"type": "string"}, "b1": {"type": "integer", "minimum": 0}},
              "patternProperties": {"^a": {"type": "integer"}, "[0-9]$": {"maximum": 5}},
              "additionalProperties": {"type": "boolean"}}
    ebnf = to_ebnf(schema, strict_mode=False)
    rng = random.Random(7)
    names = ["ab", "b1", "a", "a1", "a9", "z", "z3", "", "a\"", "\\9", "é1", "ab1", "b10"]
    values = [True, 1, 7, -1, "s", None, 2.5]
    for _ in range(400):
        name = rng.choice(names)
        value = rng.choice(values)
        instance = {name: value}
        expected = is_valid(schema, instance)
        assert ebnf_accepts(ebnf, dumps(instance)) == expected, (instance, expected)
