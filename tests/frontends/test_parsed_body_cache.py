"""The process-wide cache of parsed rule bodies (native/frontends/ebnf/parsed_body_cache.h).

A rule body of at least 4 KB whose text was parsed before (the second time it is seen, it is
stored) is appended from the cache instead of being parsed again. A hit must give exactly
the grammar a fresh parse gives. Every test checks that against a fresh parse of the same
grammar with a comment added to the last line of the body: a different text (so never served
from the cache) that parses to the same rules.

The cache is shared by the whole process, so each test builds bodies with its own tag.
"""

import json

import pytest

import xg2_plugin as xg
from xg2_plugin import _native
from xg2_test_support import hf_tokenizer_info

MIN_BODY_BYTES = 4096


def big_body(tag: str) -> str:
    """A rule body of more than MIN_BODY_BYTES that uses every kind of expression, refers to
    the rules `a` and `b`, and ends with a newline (the end of its last line is `"end"`)."""
    lines = []
    for i in range(120):
        lines.append(f'  "{tag}{i:03d}" a [x-z0-9]{{1,3}} ("p" | b "q")? b* "\\u00e9"+ |')
    lines.append('  "end"\n')
    text = "\n".join(lines)
    assert len(text) > MIN_BODY_BYTES
    return text


def grammar(body: str, before: str = "", after: str = 'a ::= "A"\nb ::= "B" | "C"\n') -> str:
    return f"root ::= big\n{before}big ::={body}{after}"


def fresh(body: str) -> str:
    """The same body with a comment at the end of its last line: never a cache hit."""
    assert body.endswith("\n")
    return body[:-1] + "  # not cached\n"


def hits() -> int:
    return _native._parsed_body_cache_stats()["hits"]


def prime(text: str) -> None:
    """Parses `text` until its bodies are stored (stored the second time they are seen)."""
    for _ in range(2):
        _native._ebnf_roundtrip(text)


def test_second_sighting_stores_and_the_third_hits():
    body = big_body("s")
    text = grammar(body)
    stats = _native._parsed_body_cache_stats()
    printed = _native._ebnf_roundtrip(text)
    assert _native._parsed_body_cache_stats()["stores"] == stats["stores"]
    assert _native._ebnf_roundtrip(text) == printed
    assert _native._parsed_body_cache_stats()["stores"] == stats["stores"] + 1
    assert _native._ebnf_roundtrip(text) == printed
    after = _native._parsed_body_cache_stats()
    assert after["hits"] == stats["hits"] + 1
    assert after["entries"] >= 1 and 0 < after["bytes"] <= after["limit_bytes"]
    assert printed == _native._ebnf_roundtrip(grammar(fresh(body)))


def test_short_bodies_are_not_stored():
    body = ' "x" a | b\n'
    stats = _native._parsed_body_cache_stats()
    for _ in range(3):
        _native._ebnf_roundtrip(grammar(body))
    assert _native._parsed_body_cache_stats()["stores"] == stats["stores"]


def test_hit_binds_references_to_the_new_grammars_rules():
    body = big_body("r")
    prime(grammar(body))
    # Other rule ids (rules before `big`), other definitions of `a` and `b`.
    before = 'z ::= "Z" a\nb ::= "bb" z\n'
    after = 'a ::= "aa" | b\n'
    count = hits()
    printed = _native._ebnf_roundtrip(grammar(body, before, after))
    assert hits() == count + 1
    assert printed == _native._ebnf_roundtrip(grammar(fresh(body), before, after))
    assert _native._ebnf_rule_names(grammar(body, before, after)) == ["root", "z", "b", "big", "a"]


@pytest.mark.parametrize("continuation", ['  | "extra"\n', '  "tail"\n', '  (= "look")\n', "  a\n"])
def test_a_body_that_goes_on_is_parsed_whole(continuation):
    body = big_body("c")
    prime(grammar(body))
    count = hits()
    printed = _native._ebnf_roundtrip(grammar(body + continuation))
    assert hits() == count
    assert printed == _native._ebnf_roundtrip(grammar(fresh(body + continuation)))
    assert printed != _native._ebnf_roundtrip(grammar(body))


def test_rule_start_on_the_same_line_after_the_body():
    body = big_body("l")
    prime(grammar(body))
    count = hits()
    text = f'root ::= big\nbig ::={body}a ::= "A" b ::= "B"\n'
    assert _native._ebnf_roundtrip(text) == _native._ebnf_roundtrip(f'root ::= big\nbig ::={fresh(body)}a ::= "A" b ::= "B"\n')
    assert hits() == count + 1


def test_body_at_the_end_of_the_grammar():
    body = big_body("e")
    text = f'root ::= big\na ::= "A"\nb ::= "B"\nbig ::={body}'
    prime(text)
    count = hits()
    assert _native._ebnf_roundtrip(text) == _native._ebnf_roundtrip(
        f'root ::= big\na ::= "A"\nb ::= "B"\nbig ::={fresh(body)}')
    assert hits() == count + 1


def test_undefined_reference_in_a_cached_body_reports_its_position():
    body = big_body("u")
    prime(grammar(body))
    messages = []
    for text in (grammar(body, after='a ::= "A"\n'), grammar(fresh(body), after='a ::= "A"\n')):
        with pytest.raises(_native.GrammarSyntaxError) as info:
            _native._ebnf_roundtrip(text)
        messages.append(str(info.value))
    assert messages[0] == messages[1]
    assert "undefined rule 'b'" in messages[0] and "line 2, column " in messages[0]


def test_duplicate_definition_of_a_cached_rule_is_reported():
    body = big_body("d")
    prime(grammar(body))
    with pytest.raises(_native.GrammarSyntaxError, match="'big' is already defined"):
        _native._ebnf_roundtrip(grammar(body) + f"big ::={body}")


def test_repetition_bound_is_checked_against_each_compiles_limit():
    body = big_body("b").replace('"end"', '"end" [a-z]{0,5000}')
    text = grammar(body)
    prime(text)
    count = hits()
    compiler = xg.GrammarCompiler(hf_tokenizer_info("llama3.1"), cache_enabled=False,
                                  limits=xg.CompileLimits(max_repetition_bound=1000))
    with pytest.raises(xg.ResourceLimitError, match="repetition bound exceeds the limit of 1000"):
        compiler.compile_grammar(text)
    assert hits() == count
    roomy = xg.GrammarCompiler(hf_tokenizer_info("llama3.1"), cache_enabled=False)
    roomy.compile_grammar(text)
    assert hits() == count + 1


def test_date_time_schema_compiles_without_a_parse_and_matches_exactly():
    """The JSON Schema frontend builds its grammar directly (issue 39): the leap-second rules come
    from the format's body lowered once per process (LastingBody), not from this cache."""
    info = hf_tokenizer_info("llama3.1")
    compiler = xg.GrammarCompiler(info, cache_enabled=False)
    schema = json.dumps({"type": "object", "properties": {"at": {"type": "string", "format": "date-time"}},
                         "required": ["at"]})
    for _ in range(2):
        compiler.compile_json_schema(schema)
    stats = _native._parsed_body_cache_stats()
    compiled = compiler.compile_json_schema(schema)
    after = _native._parsed_body_cache_stats()
    assert (after["hits"], after["stores"]) == (stats["hits"], stats["stores"])
    # The leap second exists only at 23:59:60 UTC: the offset depends on hour and minute.
    for text, valid in [('{"at": "1990-12-31T23:59:60Z"}', True), ('{"at": "1990-12-31T15:59:60-08:00"}', True),
                        ('{"at": "1990-12-31T23:58:60Z"}', False), ('{"at": "1990-12-31T15:59:60-07:00"}', False)]:
        matcher = xg.GrammarMatcher(compiled)
        accepted = matcher.accept_string(text) and matcher.is_completed()
        assert accepted == valid, text
