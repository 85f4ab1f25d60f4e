"""Overlapping oneOfs whose exactly-one rewrite distributes complements over listed strings
(the address schema of JSONSchemaBench's Github_medium---o35868: one branch per country,
each listing its states, and a last branch listing every country) are refused with the same
typed error as before, after a bounded amount of work; without the last branch the synthetic
one below compiles, also after a bounded amount of work.

Work is counted in safe-point checks (a token armed with ``_cancel_after_checks(n)`` cancels
at the n-th): the conversion must finish, with its refusal or its grammar, within a budget.
Two causes made it large. The string-disjointness tests of a distribution repeat the same
pairs on every level and in every combined branch, each rebuilding both automata (the
synthetic refusal below took about 250,000 checks and its compile 640,000; with each pair's
answer kept, 17,000 and 107,000). And the disjuncts before an oversized one were each
distributed up to the bound before it was refused (o35868 took over 200,000 checks even with
the answers kept; refused before any disjunct is converted, about 24,000). No test here reads
a clock."""

from __future__ import annotations

import json

import pytest

import xg2_plugin as xg
from xg2_plugin import _native
from xg2_test_support import require_data

# Safe-point checks each conversion may take: a few times what it takes now, a fraction of
# what it took before (figures in the module's docstring).
REFUSAL_BUDGET = 60_000
COMPILE_BUDGET = 250_000
CORPUS_REFUSAL_BUDGET = 100_000
CORPUS_SCHEMA = "jsonschemabench/Github_medium---o35868.json"
REFUSAL = r"'anyOf' / 'oneOf' at /properties/address/oneOf/9: more than 256 combined branches"


def address_schema(countries: int = 40, states: int = 10, listed_countries: int = 9, catch_all: bool = True) -> dict:
    """oneOf over `listed_countries` branches (one country each, with its `states` states) and,
    with `catch_all`, a last branch that lists all `countries` countries; no member is required,
    so every pair of branches overlaps (an object without members matches all of them)."""
    codes = [f"C{i:02d}" for i in range(countries)]
    branches: list[dict] = [
        {
            "properties": {
                "country": {"type": "string", "enum": [codes[i]]},
                "state": {"type": "string", "enum": [f"S{i}{j:02d}" for j in range(states)]},
                "postalCode": {"type": "string", "maxLength": 10},
            }
        }
        for i in range(listed_countries)
    ]
    if catch_all:
        branches.append(
            {"properties": {"country": {"type": "string", "enum": codes}, "postalCode": {"type": "string", "maxLength": 51}}}
        )
    return {"type": "object", "properties": {"address": {"type": "object", "oneOf": branches}}}


def _convert(schema: dict, checks: int = -1, lenient: bool = False) -> tuple[str, list[str]]:
    token = _native.CancellationToken()
    if checks >= 0:
        token._cancel_after_checks(checks)
    return _native._json_schema_to_ebnf(json.dumps(schema), lenient=lenient, cancel=token)


def _refused_within(schema: dict, budget: int) -> None:
    try:
        _convert(schema, checks=budget)
    except xg.CompilationCancelledError:
        pytest.fail(f"the refusal took more than {budget} safe-point checks")
    except xg.UnsupportedSchemaError as error:
        assert "more than 256 combined branches" in str(error)
    else:
        pytest.fail("the schema compiled; it has more than 256 combined branches")


def test_the_overlapping_address_one_of_is_refused_with_its_typed_error() -> None:
    with pytest.raises(xg.UnsupportedSchemaError, match=REFUSAL):
        _convert(address_schema())


def test_the_refusal_takes_a_bounded_number_of_safe_points() -> None:
    _refused_within(address_schema(), REFUSAL_BUDGET)


def test_the_corpus_address_schema_is_refused_before_its_disjuncts_are_distributed() -> None:
    schema = json.loads(require_data(CORPUS_SCHEMA).read_text())["schema"]
    with pytest.raises(xg.UnsupportedSchemaError, match=r"at /definitions/address/oneOf/9: more than 256 combined"):
        _convert(schema)
    _refused_within(schema, CORPUS_REFUSAL_BUDGET)


def test_the_address_one_of_without_its_catch_all_branch_compiles_in_a_bounded_number_of_safe_points() -> None:
    schema = address_schema(listed_countries=7, catch_all=False)
    try:
        _convert(schema, checks=COMPILE_BUDGET)
    except xg.CompilationCancelledError:
        pytest.fail(f"the conversion took more than {COMPILE_BUDGET} safe-point checks")


# --- many if/then conditionals on one discriminator (JsonSchemaStore's cloudify) ---------
# Each `if` becomes a group of two (its `then`, or the complement of its condition), so N
# conditionals are N groups: the raw product 2^N is past the bound and ViableGroups counts
# the combinations that can hold, depth first. Its visits of a deep prefix are dear (the
# merged `properties` nest one allOf deeper per level and every disjointness test flattens
# them again), and it counted every prefix from scratch: 70 conditionals took over 1,000,000
# safe-point checks to be refused (cloudify, 125 of them, a minute under load). In strict
# mode the whole list is counted first, and a failed count is the refusal (about 100,000;
# cloudify about 400,000).
CONDITIONALS_REFUSAL_BUDGET = 200_000
CLOUDIFY_REFUSAL_BUDGET = 800_000


def discriminated_conditionals(count: int) -> dict:
    """`count` if/then pairs testing one required string member against different constants."""
    return {
        "type": "object",
        "required": ["kind"],
        "properties": {"kind": {"type": "string", "anyOf": [{"type": "string"}, {"enum": [f"K{i}" for i in range(count)]}]}},
        "allOf": [
            {"if": {"properties": {"kind": {"const": f"K{i}"}}}, "then": {"properties": {f"p{i}": {"type": "string"}}}}
            for i in range(count)
        ],
    }


def test_many_discriminated_conditionals_are_refused_in_a_bounded_number_of_safe_points() -> None:
    with pytest.raises(xg.UnsupportedSchemaError, match=r"at /: more than 256 combined branches"):
        _convert(discriminated_conditionals(70))
    _refused_within(discriminated_conditionals(70), CONDITIONALS_REFUSAL_BUDGET)


def test_the_cloudify_schema_is_refused_in_a_bounded_number_of_safe_points() -> None:
    schema = json.loads(require_data("jsonschemabench/JsonSchemaStore---cloudify.json").read_text())["schema"]
    with pytest.raises(xg.UnsupportedSchemaError, match=r"at /definitions/nodeTemplate: more than 256 combined"):
        _convert(schema)
    _refused_within(schema, CLOUDIFY_REFUSAL_BUDGET)


# --- conditionals that all hold, in strict and lenient mode ------------------------------
# Lenient mode keeps the longest prefix of the groups that passes, so it counts one prefix
# after another; strict mode counts them too when the whole list passes. Each prefix was
# counted from scratch, and every level of the distribution counts the groups left again:
# 30 conditionals took about 1,270,000 checks in either mode. The choices examined are now
# kept (ChoiceTree in alternative_pruning.cc) and each prefix examines only its last group's:
# about 450,000.
CONDITIONALS_KEPT = 30
CONDITIONALS_KEPT_BUDGET = 700_000


@pytest.mark.parametrize("lenient", [False, True], ids=["strict", "lenient"])
def test_many_discriminated_conditionals_compile_in_a_bounded_number_of_safe_points(lenient: bool) -> None:
    try:
        ebnf, warnings = _convert(discriminated_conditionals(CONDITIONALS_KEPT), CONDITIONALS_KEPT_BUDGET, lenient)
    except xg.CompilationCancelledError:
        pytest.fail(f"the conversion took more than {CONDITIONALS_KEPT_BUDGET} safe-point checks")
    # Every conditional is kept: one `then` member per constant, and nothing was dropped.
    assert warnings == []
    for i in range(CONDITIONALS_KEPT):
        assert f'"\\"p{i}\\""' in ebnf


def test_lenient_and_strict_give_the_same_grammar_when_every_prefix_passes() -> None:
    schema = discriminated_conditionals(12)
    assert _convert(schema, lenient=True) == _convert(schema, lenient=False)
