"""A small rule referenced at many places of one caller stays a call there
(grammar/inline_rules.cc, kMaxInlinedFanoutSize). Inlined, each place gets its own copy in the
caller's DFA, and the copies do not merge when each is followed by something else: the object
rule of a schema with hundreds of optional properties held one copy of the value grammar per
property (JSONSchemaBench Github_ultra o13934: 11,672 DFA states for 230 properties)."""

from __future__ import annotations

import json
import re

import xg2_plugin as xg
from xg2_plugin.testing import ebnf_accepts
from xg2_test_support import compare_masks_along, encode_continuation, hf_tokenizer_info

# A value rule of a few dozen expression nodes: an array of one or two JSON strings.
VALUE = '"[" [ ]* str ([ ]* "," [ ]* str)? [ ]* "]"'
STRING = 'str ::= "\\"" ([^"\\\\] | "\\\\" ["\\\\/bfnrt])* "\\""'


def _object_grammar(properties: int) -> str:
    # Each member is followed by something of its own (here a tag; in the JSON Schema
    # frontend's objects, the rest of the members after it), so the copies of `value` cannot
    # share states.
    members = " | ".join(f'"\\"k{i}\\":" value "/{i}"' for i in range(properties))
    return f'root ::= "{{" ({members})? "}}"\nvalue ::= {VALUE}\n{STRING}\n'


def _rule_sizes(grammar: xg.CompiledGrammar) -> dict[str, int]:
    sizes: dict[str, int] = {}
    rule = None
    for line in grammar._handle.fsm_dump().splitlines():
        header = re.match(r"rule (\S+)", line)
        if header:
            rule = header.group(1)
            sizes[rule] = 0
        elif rule is not None and line.startswith("  "):
            sizes[rule] += 1
    return sizes


def _compiler() -> xg.GrammarCompiler:
    return xg.GrammarCompiler(hf_tokenizer_info("llama3.1"), precompute_nodes=0, cache_enabled=False)


def test_a_rule_used_at_few_places_is_inlined() -> None:
    sizes = _rule_sizes(_compiler().compile_grammar(_object_grammar(4)))
    assert "value" not in sizes and "str" not in sizes


def test_a_rule_used_at_many_places_of_one_caller_stays_a_call() -> None:
    properties = 200
    sizes = _rule_sizes(_compiler().compile_grammar(_object_grammar(properties)))
    assert "value" in sizes
    # Inlined, each property brought a copy of the value's ~20 states into the root rule;
    # as a call it costs the key and a few states.
    assert sizes["root"] < 12 * properties


def test_the_language_is_unchanged() -> None:
    grammar = _object_grammar(60)
    assert ebnf_accepts(grammar, '{"k3":["a"]/3}')
    assert ebnf_accepts(grammar, '{"k59":[ "b", "c\\n"]/59}')
    assert ebnf_accepts(grammar, "{}")
    assert not ebnf_accepts(grammar, '{"k4":["a"]/3}')
    assert not ebnf_accepts(grammar, '{"k3":["a","b","c"]/3}')
    assert not ebnf_accepts(grammar, '{"k3":[]/3}')


def test_masks_match_the_reference_across_the_calls() -> None:
    grammar = _compiler().compile_grammar(_object_grammar(200))
    checked = 0
    for document in ('{"k7":["alpha", "beta"]/7}', '{"k150":[ "x\\ty", "\\"q\\"" ]/150}', '{"k199":["z"]/199}'):
        checked += compare_masks_along(grammar, encode_continuation("llama3.1", document))
    assert checked > 20


def test_a_schema_with_many_array_valued_properties() -> None:
    # The JSON Schema shape of the motivating case; the object rule stays linear in the
    # number of properties.
    properties = {f"field_{i:03d}": {"type": "array", "items": {"type": "string"}, "maxItems": 2}
                  for i in range(150)}
    schema = {"type": "object", "properties": properties, "additionalProperties": False}
    grammar = _compiler().compile_json_schema(schema)
    sizes = _rule_sizes(grammar)
    object_rule = max(sizes, key=sizes.get)
    assert sizes[object_rule] < 30 * len(properties)
    document = json.dumps({"field_010": ["a", "b"], "field_149": []})
    assert compare_masks_along(grammar, encode_continuation("llama3.1", document)) > 10
