"""String formats (duration, uri-reference, uri-template, json-pointer, relative-json-pointer,
and, in lenient mode, the regex subset) with the real engine and the llama3.1 tokenizer.

Each format is checked three ways: the JSON-Schema-Test-Suite's optional/format cases (valid
strings accepted token by token, invalid ones rejected), random walks over the token mask
whose outputs must pass jsonschema's FormatChecker, and the format intersected with pattern
and min/maxLength. The checker needs the packages of pyproject's `test` extra (isoduration,
uri-template, rfc3986-validator, jsonpointer); without one, the walks of that format skip.

Where the checker itself is wrong the walk uses an oracle written from the specification:
relative-json-pointer's checker rejects any number with an inner zero ("100", "20/a") that
the draft allows, so those walks check the draft's grammar with a regex and the pointer part
with jsonpointer.
"""

from __future__ import annotations

import json
import random
import re
import warnings
from typing import Any, Callable, Optional

import numpy as np
import pytest

import xg2_plugin as xg
from xg2_plugin import _native
from xg2_test_support import (allowed_tokens, check_tokens_accepted, encode_continuation, hf_compiler,
                              require_data, string_accepted)

jsonschema = pytest.importorskip("jsonschema")

TOKENIZER = "llama3.1"
NEW_FORMATS = ["duration", "uri-reference", "uri-template", "json-pointer", "relative-json-pointer", "regex"]
CHECKER = jsonschema.Draft202012Validator.FORMAT_CHECKER


def compile_schema(schema: dict) -> xg.CompiledGrammar:
    """Compiles `schema`; format regex only leniently (its grammar is a sound subset, see
    test_regex_is_the_policy_error_unless_lenient)."""
    if schema.get("format") == "regex":
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            return hf_compiler(TOKENIZER).compile_json_schema(json.dumps(schema), lenient=True)
    return hf_compiler(TOKENIZER).compile_json_schema(json.dumps(schema))


def suite_strings(format_name: str) -> list:
    path = require_data(f"json_schema_test_suite/tests/draft2020-12/optional/format/{format_name}.json")
    cases = []
    for group in json.loads(path.read_text()):
        for test in group["tests"]:
            if isinstance(test["data"], str):
                cases.append((test["data"], test["valid"], test["description"]))
    return cases


@pytest.mark.parametrize("format_name", NEW_FORMATS)
def test_suite_cases_token_by_token(format_name: str) -> None:
    grammar = compile_schema({"type": "string", "format": format_name})
    cases = suite_strings(format_name)
    assert cases
    for data, valid, description in cases:
        text = json.dumps(data, ensure_ascii=False)
        if valid:
            check_tokens_accepted(grammar, encode_continuation(TOKENIZER, text))
        else:
            assert not string_accepted(grammar, text), f"{format_name}: accepted invalid {data!r} ({description})"


def _relative_json_pointer_by_the_draft(value: str) -> bool:
    import jsonpointer

    found = re.fullmatch(r"(0|[1-9][0-9]*)(.*)", value, re.DOTALL)
    if not found:
        return False
    rest = found.group(2)
    if rest == "#":
        return True
    try:
        jsonpointer.JsonPointer(rest)
    except jsonpointer.JsonPointerException:
        return False
    return True


def _regex_compiles(value: str) -> bool:
    try:
        re.compile(value)
    except re.error:
        return False
    # The ECMA-262 side: the engine's own regex frontend follows ECMAScript syntax, so it
    # must read the pattern too, unless it refuses a construct it cannot make regular
    # (anchors inside the pattern), which is a limit of that frontend and not a syntax error.
    try:
        _native._regex_to_ebnf(value)
    except _native.RegexError as error:
        return "only supported" in str(error)
    return True


def oracle(format_name: str) -> Callable[[str], bool]:
    packages = {"duration": "isoduration", "uri-template": "uri_template", "uri-reference": "rfc3986_validator",
                "json-pointer": "jsonpointer", "relative-json-pointer": "jsonpointer"}
    if format_name in packages:
        pytest.importorskip(packages[format_name])
    if format_name == "relative-json-pointer":
        return _relative_json_pointer_by_the_draft
    if format_name == "regex":
        return _regex_compiles
    return lambda value: CHECKER.conforms(value, format_name)


def walk(grammar: xg.CompiledGrammar, rng: random.Random, max_tokens: int) -> Optional[str]:
    """One random walk: tokens drawn uniformly from the mask, but one time in four from the
    mask's tokens that contain a quote and about one in three from its one-byte tokens, so
    that strings end within `max_tokens` and syntax characters are drawn often."""
    info = grammar.tokenizer_info
    vocab = info.decoded_vocab
    bitmask = np.full(xg.get_bitmask_shape(1, info.vocab_size), -1, dtype=np.int32)
    matcher = xg.GrammarMatcher(grammar)
    stops = np.array(matcher.stop_token_ids)
    out = bytearray()
    for _ in range(max_tokens):
        allowed = np.flatnonzero(allowed_tokens(matcher, bitmask, info.vocab_size))
        assert len(allowed) > 0, "empty mask before termination"
        allowed_stops = allowed[np.isin(allowed, stops)]
        if len(allowed_stops):  # the string is complete: stop here
            assert matcher.accept_token(int(allowed_stops[0]))
            return out.decode("utf-8")
        pool = allowed
        draw = rng.random()
        if draw < 0.25:
            closing = [t for t in allowed if b'"' in vocab[t]]
            pool = np.array(closing) if closing else allowed
        elif draw < 0.6:
            single = [t for t in allowed if len(vocab[t]) == 1]
            pool = np.array(single) if single else allowed
        token = int(pool[rng.randrange(len(pool))])
        assert matcher.accept_token(token), f"token {token} in the mask but rejected"
        out += vocab[token]
    return None


def finished_walks(grammar: xg.CompiledGrammar, *, seed: int, max_tokens: int, tries: int = 30) -> list[str]:
    """The texts of the walks (see `walk`) that finish within `max_tokens`, out of `tries`."""
    rng = random.Random(seed)
    return [text for text in (walk(grammar, rng, max_tokens) for _ in range(tries)) if text is not None]


@pytest.mark.parametrize("format_name", NEW_FORMATS)
def test_random_walks_are_valid(format_name: str) -> None:
    is_valid = oracle(format_name)
    grammar = compile_schema({"type": "string", "format": format_name})
    texts = finished_walks(grammar, seed=7, max_tokens=32)
    for text in texts:
        value = json.loads(text)
        assert isinstance(value, str)
        assert is_valid(value), f"{format_name}: the grammar produced {text}"
    assert len(texts) >= 10


# (schema, accepted values, rejected values) beyond the suite.
CASES: dict = {
    "duration": ({"format": "duration"},
                 ["P1Y", "P1Y2M3DT4H5M6S", "PT0S", "P3W", "P12M31D", "PT100H"],
                 ["P1.5D", "P1Y2D", "PT1H2S", "P1W2D", "P", "PT", "p1d", "P1DT"]),
    "json_pointer_escapes": ({"format": "json-pointer"},
                             ["", "/", "/a~0b~1c", "/\"q\"/\\\\/\n", "/é/😀"],
                             ["a", "/~", "/~2", "#/a"]),
    "relative_json_pointer": ({"format": "relative-json-pointer"}, ["0", "1#", "10/a", "100/~0"],
                              ["00", "-1", "1/~", "#", "1##"]),
    "uri_template_levels": ({"format": "uri-template"},
                            ["{var}", "{+path}/here", "x{?a,b*,c:3}", "{.dom*}", "%20{;x}"],
                            ["{", "}", "{=x}", "{a:0}", "{a:10000}", "%2", "{a b}"]),
    "uri_reference_relative": ({"format": "uri-reference"},
                               ["", "a/b:c", "../x?y#z", "//host:80/p", "#", "http://[v1.a:b]/", "//[::1]"],
                               ["a:b c", ":x", "/%g0", "http://a/b\\c", "//[1::2::3]"]),
    "regex_subset": ({"format": "regex"},
                     ["", "a|b", "^[a-z0-9_]+$", "(?:ab)*?c{2,5}", "\\d+\\.\\d*", "[^\\]x]", "\\bword\\b", "(a)(b|)"],
                     ["(", "a)", "[a", "*a", "a**", "^*", "a{3,2}"]),
    "duration_with_max_length": ({"format": "duration", "maxLength": 4}, ["P1D", "PT1S", "P12Y"],
                                 ["P1Y2M", "PT10S"]),
    "json_pointer_with_pattern": ({"format": "json-pointer", "pattern": "^/items/"}, ["/items/", "/items/0/a"],
                                  ["/item", "/items", "items/0"]),
    "uri_reference_with_lengths": ({"format": "uri-reference", "minLength": 2, "maxLength": 6},
                                   ["a/b", "#frag", "//h"], ["a", "", "abcdefg", "a b"]),
}


def _checker_agrees(format_name: str, value: Any) -> Optional[bool]:
    """The FormatChecker's verdict where it is a real check (its package is installed)."""
    if format_name not in CHECKER.checkers:
        return None
    return CHECKER.conforms(value, format_name)


@pytest.mark.parametrize("name", sorted(CASES))
def test_cases(name: str) -> None:
    schema, accepted, rejected = CASES[name]
    schema = {"type": "string", **schema}
    grammar = compile_schema(schema)
    validator = jsonschema.Draft202012Validator(schema, format_checker=CHECKER)
    for value in accepted:
        if schema["format"] not in ("relative-json-pointer",) and _checker_agrees(schema["format"], value) is not None:
            assert validator.is_valid(value), f"table error: {value!r}"
        check_tokens_accepted(grammar, encode_continuation(TOKENIZER, json.dumps(value, ensure_ascii=False)))
    for value in rejected:
        assert not string_accepted(grammar, json.dumps(value, ensure_ascii=False)), f"{name}: accepted {value!r}"


@pytest.mark.parametrize("format_name", ["hostname", "idn-hostname", "idn-email"])
def test_formats_without_an_exact_grammar_are_the_policy_error(format_name: str) -> None:
    # hostname: IDNA A-labels ("xn--...") are valid only when their punycode decodes to a
    # valid U-label, which no grammar here checks (its grammar is a subset, for lenient mode
    # only); the others need Unicode tables (IDNA 2008).
    with pytest.raises(_native.UnsupportedSchemaError, match=format_name):
        compile_schema({"type": "string", "format": format_name})


# hostname in lenient mode: the sound subset of string_formats.cc HostnameSubset.
_LDH_LABEL = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?")


def _hostname_by_rfc1123(value: str) -> bool:
    """RFC 1123 host names without IDNA labels, written from the RFCs: LDH labels of 1-63
    characters that neither start nor end with a hyphen, 253 characters in all; a label with
    "--" at positions 3-4 is an IDNA label (RFC 5891 4.2.3.1), valid only as a checked A-label,
    so it counts as invalid here; the last label is alphabetic at its start (RFC 1123 2.1)."""
    labels = value.split(".")
    return (0 < len(value) <= 253 and value.isascii()
            and all(_LDH_LABEL.fullmatch(label) and label[2:4] != "--" for label in labels)
            and labels[-1][0].isalpha())


def compile_lenient(schema: dict) -> xg.CompiledGrammar:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return hf_compiler(TOKENIZER).compile_json_schema(json.dumps(schema), lenient=True)


def test_hostname_subset_in_lenient_mode_keeps_the_suite_invalid_strings_out() -> None:
    grammar = compile_lenient({"type": "string", "format": "hostname"})
    for data, valid, description in suite_strings("hostname"):
        text = json.dumps(data, ensure_ascii=False)
        if _hostname_by_rfc1123(data):
            assert valid, f"oracle error: {data!r}"
            check_tokens_accepted(grammar, encode_continuation(TOKENIZER, text))
        else:
            # Invalid ones, and valid ones outside the subset (A-labels, "1host").
            assert not string_accepted(grammar, text), f"accepted {data!r} ({description})"
    excluded_valid = [d for d, valid, _ in suite_strings("hostname") if valid and not _hostname_by_rfc1123(d)]
    assert excluded_valid and all(d.lower().startswith("xn--") or d[0].isdigit() for d in excluded_valid)


def test_hostname_subset_lengths_and_random_walks() -> None:
    grammar = compile_lenient({"type": "string", "format": "hostname"})
    label = "a" * 63
    longest = ".".join([label, label, label, "b" * 61])
    assert len(longest) == 253 and _hostname_by_rfc1123(longest)
    assert string_accepted(grammar, json.dumps(longest))
    assert not string_accepted(grammar, json.dumps(longest + "c"))
    assert not string_accepted(grammar, json.dumps("a" * 64 + ".com"))
    for value in ("a", "a-b", "a--b.com", "ab-c.d", "A1.B2-c", "x.y.z.example"):
        assert string_accepted(grammar, json.dumps(value)), value
    for value in ("ab--c.com", "xn--ll-0ea", "1.2.3.4", "a.1b", "a_b.com", "a..b", "a.", ".a", "-a", "a-"):
        assert not string_accepted(grammar, json.dumps(value)), value
    texts = finished_walks(grammar, seed=11, max_tokens=40)
    for text in texts:
        assert _hostname_by_rfc1123(json.loads(text)), text
    assert len(texts) >= 10


def test_hostname_subset_next_to_lengths_and_patterns() -> None:
    grammar = compile_lenient({"type": "string", "format": "hostname", "maxLength": 5, "pattern": "^[a-z.]+$"})
    for value, expected in [("a.bc", True), ("abcde", True), ("abcdef", False), ("A.bc", False), ("a-b", False)]:
        assert string_accepted(grammar, json.dumps(value)) == expected, value


# Draft 3's format names (color, host-name, ip-address, utc-millisec, style, phone) are formats
# only under draft 3; elsewhere the draft's FormatChecker does not know them: annotations.
@pytest.mark.parametrize("dialect", ["http://json-schema.org/draft-04/schema#",
                                     "http://json-schema.org/draft-07/schema#", None])
@pytest.mark.parametrize("format_name", ["color", "utc-millisec", "host-name", "ip-address", "style", "phone"])
def test_draft3_format_names_are_annotations_in_later_drafts(dialect: Optional[str], format_name: str) -> None:
    schema: dict = {"type": "object", "properties": {"v": {"type": "string", "format": format_name}}}
    if dialect:
        schema["$schema"] = dialect
    grammar = compile_schema(schema)
    validator = jsonschema.validators.validator_for(schema)(schema, format_checker=jsonschema.validators.validator_for(
        schema).FORMAT_CHECKER)
    for value in ("not a color", "#fff", "", "1.2.3.4", "-x-"):
        assert validator.is_valid({"v": value})
        assert string_accepted(grammar, json.dumps({"v": value})), (format_name, value)


DRAFT3 = "http://json-schema.org/draft-03/schema#"


def test_draft3_ip_address_is_ipv4() -> None:
    schema = {"$schema": DRAFT3, "type": "string", "format": "ip-address"}
    grammar = compile_schema(schema)
    checker = jsonschema.Draft3Validator.FORMAT_CHECKER
    for value in ("0.0.0.0", "192.168.1.255", "256.1.1.1", "1.2.3", "01.2.3.4", "::1", "a"):
        assert string_accepted(grammar, json.dumps(value)) == checker.conforms(value, "ip-address"), value


@pytest.mark.parametrize("format_name", ["color", "time", "utc-millisec", "style", "phone"])
def test_draft3_formats_without_a_grammar_are_the_policy_error(format_name: str) -> None:
    # color: jsonschema checks it with webcolors (names by version); time: strptime
    # "%H:%M:%S" (one-digit fields, Unicode digits), not RFC 3339; the others have no checker
    # and no grammar that draft 3's prose pins down.
    with pytest.raises(_native.UnsupportedSchemaError, match=f"format '{format_name}' at /"):
        compile_schema({"$schema": DRAFT3, "type": "string", "format": format_name})


def test_draft3_host_name_is_the_hostname_subset() -> None:
    with pytest.raises(_native.UnsupportedSchemaError, match="format 'host-name' at /"):
        compile_schema({"$schema": DRAFT3, "type": "string", "format": "host-name"})
    grammar = compile_lenient({"$schema": DRAFT3, "type": "string", "format": "host-name"})
    assert string_accepted(grammar, json.dumps("www.example.com"))
    assert not string_accepted(grammar, json.dumps("xn--ll-0ea"))


# Lengths next to a pattern or format (regular_language.h LengthImplied / LengthBoundedFragment).

def test_large_max_length_after_a_plain_loop_is_a_counted_repetition() -> None:
    schema = {"type": "string", "maxLength": 32767,
              "pattern": "^data:image/(jpg|jpeg|png|svg\\+xml);base64,[0-9a-zA-Z+/=]*$"}
    grammar = compile_schema(schema)
    check_tokens_accepted(grammar, encode_continuation(TOKENIZER, json.dumps("data:image/png;base64,iVBORw0K=")))
    for prefix in ("data:image/png;base64,", "data:image/svg+xml;base64,"):
        longest = prefix + "A" * (32767 - len(prefix))
        assert string_accepted(grammar, json.dumps(longest))
        assert not string_accepted(grammar, json.dumps(longest + "A"))
    assert not string_accepted(grammar, json.dumps("data:image/gif;base64,AA"))
    assert not string_accepted(grammar, json.dumps("data:image/png;base64,A-A"))


def test_large_max_length_after_a_loop_with_escapes_is_a_counted_repetition() -> None:
    # From the corpus (Github_ultra---o358): the loop class admits `"`, `\\` and control
    # characters, which the JSON spelling writes as escapes of several characters; each is
    # still one unit of maxLength (the grammar spells other characters raw, as json.dumps
    # does without ensure_ascii).
    schema = {"type": "string", "maxLength": 260, "pattern": "^[A-Za-z0-9_][^<>*#.%&:\\\\+?/]*$"}
    ebnf, _ = _native._json_schema_to_ebnf(json.dumps(schema))
    assert "{0,259}" in ebnf and len(ebnf) < 2000, ebnf  # no layered automaton
    grammar = compile_schema(schema)
    body = "q\"\n\u0001\u00e9 \U0001F600" * 40
    for length in (1, 2, 259, 260):
        value = "x" + body[:length - 1]
        assert len(value) == length
        assert string_accepted(grammar, json.dumps(value, ensure_ascii=False)), length
    assert not string_accepted(grammar, json.dumps("x" + body[:260], ensure_ascii=False))
    for bad in ("", "-abc", "ab<c", "a\\b", "a/b"):
        assert not string_accepted(grammar, json.dumps(bad)), bad
    check_tokens_accepted(grammar, encode_continuation(TOKENIZER, json.dumps("name_with \"quotes\"\ttab")))


# Each pattern with prefixes that make its matches likely among random strings.
REFERENCE_PATTERNS = {"^[A-Za-z0-9_][^<>]*$": ["a", "_"], "^ab[^x]*$": ["ab"], "^(foo|b)[^\"]*$": ["foo", "b"],
                      "^[^a]*$": [""], "^a": ["a"], "^(x|yz)?[^\\\\]*$": ["x", "yz", ""]}


@pytest.mark.parametrize("pattern", list(REFERENCE_PATTERNS))
# Small bounds take the layered automaton; from 64 length steps a loop that takes escapes is a
# counted repetition of its units (regular_language.cc, LoopTailFragment).
@pytest.mark.parametrize("min_length,max_length", [(0, 3), (2, 5), (4, None), (1, 2), (0, 70), (66, None), (64, 67)])
def test_length_bounded_pattern_matches_a_reference(pattern: str, min_length: int,
                                                     max_length: Optional[int]) -> None:
    # Random strings over characters that are raw, escaped or outside the classes, of lengths
    # near 0 and near each bound, against Python's re (the patterns mean the same there; `$`
    # is written `\Z`, which Python's `$` is not) and the code point count.
    schema: dict = {"type": "string", "pattern": pattern, "minLength": min_length}
    if max_length is not None:
        schema["maxLength"] = max_length
    grammar = compile_schema(schema)
    reference = re.compile(pattern.replace("$", "\\Z"))
    alphabet = ["a", "b", "x", "y", "z", "f", "o", "_", "1", "<", "\"", "\\", "\n", "\u0001", "\u00e9"]
    rng = random.Random(hash((pattern, min_length, max_length)) & 0xFFFF)
    lengths = [n for bound in (0, min_length, max_length) if bound is not None
               for n in range(max(0, bound - 3), bound + 4)]
    matched = 0
    for _ in range(300):
        length = rng.choice(lengths)
        letters = rng.sample(alphabet, rng.randint(1, len(alphabet)))  # some leave out a class's exclusions
        value = (rng.choice(REFERENCE_PATTERNS[pattern]) +
                 "".join(rng.choice(letters) for _ in range(length)))[:length]
        expected = bool(reference.search(value)) and min_length <= len(value) <= (max_length if max_length is not None
                                                                                  else len(value))
        matched += expected
        assert string_accepted(grammar, json.dumps(value, ensure_ascii=False)) == expected, (value, expected)
    assert matched > 0


def test_pattern_matching_every_string_leaves_only_the_length() -> None:
    grammar = compile_schema({"type": "string", "maxLength": 4096, "pattern": "([0-9a-zA-Z]+)?"})
    assert string_accepted(grammar, json.dumps("é\"\n" * 1365))
    assert not string_accepted(grammar, json.dumps("x" * 4097))
    check_tokens_accepted(grammar, encode_continuation(TOKENIZER, json.dumps("any text at all!")))


@pytest.mark.parametrize("schema,accepted,rejected", [
    ({"format": "date-time", "minLength": 1}, ["2024-01-01T00:00:00Z"], ["", "2024-01-01"]),
    ({"pattern": "^(?:\\S+\\s+){0,99}\\S+$", "minLength": 1}, ["a b c", "x"], ["", " a", "a "]),
    ({"format": "uuid", "maxLength": 36, "minLength": 36}, ["123e4567-e89b-12d3-a456-426614174000"], ["x"]),
])
def test_implied_lengths_are_dropped(schema: dict, accepted: list, rejected: list) -> None:
    grammar = compile_schema({"type": "string", **schema})
    for value in accepted:
        check_tokens_accepted(grammar, encode_continuation(TOKENIZER, json.dumps(value)))
    for value in rejected:
        assert not string_accepted(grammar, json.dumps(value))


# The shortest strings of each format (string_formats.cc StringFormatMinLength), and that
# nothing shorter exists where the format's automaton can be built (time and date-time have
# the leap-second table, too large for it).
SHORTEST = {"date": "0001-01-01", "time": "00:00:00Z", "date-time": "0001-01-01T00:00:00Z", "ipv4": "0.0.0.0",
            "ipv6": "::", "uuid": "00000000-0000-0000-0000-000000000000", "email": "a@b.c", "uri": "a:", "iri": "a:",
            "duration": "P0D", "relative-json-pointer": "0"}


@pytest.mark.parametrize("format_name", sorted(SHORTEST))
def test_format_minimum_lengths(format_name: str) -> None:
    shortest = SHORTEST[format_name]
    grammar = compile_schema({"type": "string", "format": format_name, "minLength": len(shortest)})
    assert string_accepted(grammar, json.dumps(shortest))
    if format_name in ("time", "date-time"):
        return
    shorter = compile_schema({"anyOf": [{"type": "string", "format": format_name, "maxLength": len(shortest) - 1},
                                        {"type": "null"}]})
    assert string_accepted(shorter, "null")
    rng = random.Random(3)
    for _ in range(5):
        assert walk(shorter, rng, 8) == "null"


def test_regex_is_the_policy_error_unless_lenient() -> None:
    # ECMA-262 and Python's re disagree ("[]", "(?<n>x)" are ECMA only), so no grammar is
    # exact for both the suite and jsonschema's checker: strict mode refuses the format and
    # lenient mode keeps the subset that both compile, with a warning.
    schema = {"type": "string", "format": "regex", "title": "lenient regex check"}
    with pytest.raises(_native.UnsupportedSchemaError, match="regex"):
        hf_compiler(TOKENIZER).compile_json_schema(json.dumps(schema))
    with pytest.warns(UserWarning, match="subset"):
        grammar = hf_compiler(TOKENIZER).compile_json_schema(json.dumps(schema), lenient=True)
    assert string_accepted(grammar, json.dumps("^a+$")) and not string_accepted(grammar, json.dumps("(?<n>x)"))


@pytest.mark.parametrize("format_name", ["time", "date-time"])
def test_leap_seconds_exactly_at_utc_midnight(format_name: str) -> None:
    """RFC 3339: second 60 only where the time is 23:59:60 UTC. Every local hh:mm with both
    offsets that make it so is accepted (and Z/z at 23:59), and the neighbouring offsets
    (one minute or one hour off, either sign) are rejected."""
    grammar = compile_schema({"type": "string", "format": format_name})
    prefix = '"2016-12-31T' if format_name == "date-time" else '"'
    base = xg.GrammarMatcher(grammar)
    assert base.accept_string(prefix)

    def accepted(text: str) -> bool:
        matcher = base.fork()
        return matcher.accept_string(text + '"') and matcher.is_completed()

    def zone(offset: int) -> str:
        sign = "+" if offset >= 0 else "-"
        offset = abs(offset) % 1440
        return f"{sign}{offset // 60:02d}:{offset % 60:02d}"

    utc_midnight_minus_one = 23 * 60 + 59
    for local in range(24 * 60):
        time = f"{local // 60:02d}:{local % 60:02d}:60"
        plus = (local - utc_midnight_minus_one) % 1440    # local = UTC + offset
        minus = (utc_midnight_minus_one - local) % 1440   # local = UTC - offset
        good = {zone(plus), "-" + zone(minus)[1:]}
        if local == utc_midnight_minus_one:
            good |= {"Z", "z"}
        for text in sorted(good):
            assert accepted(time + text) and accepted(time + ".25" + text), time + text
        bad = {zone((plus + d) % 1440) for d in (1, -1, 60, -60)}
        bad |= {"-" + zone((minus + d) % 1440)[1:] for d in (1, -1, 60, -60)}
        if local != utc_midnight_minus_one:
            bad.add("Z")
        for text in sorted(bad - good):
            assert not accepted(time + text), time + text
