"""An overlapping oneOf whose exactly-one rewrite distributes complements over listed strings
(the address schema of JSONSchemaBench's Github_medium---o35868: one branch per country,
each listing its states, and a last branch listing every country) is refused with the same
typed error as before, after a bounded amount of work.

The work is counted in safe-point checks (a token armed with ``_cancel_after_checks(n)``
cancels at the n-th): the conversion must finish, here with its refusal, within a budget of
them. The string-disjointness tests of the distribution repeat the same pairs on every level
and in every combined branch; rebuilding both string automata for each made about 250,000
checks of this schema, answering each pair once about 17,000. No test here reads a clock."""

from __future__ import annotations

import json

import pytest

import xg2_plugin as xg
from xg2_plugin import _native

# Safe-point checks the refusal may take: about four times what it takes with each pair's
# answer kept, a quarter of what it took when every pair rebuilt its automata.
WORK_BUDGET = 60_000
REFUSAL = r"'anyOf' / 'oneOf' at /properties/address/oneOf/9: more than 256 combined branches"


def address_schema(countries: int = 40, states: int = 10, listed_countries: int = 9) -> dict:
    """oneOf over `listed_countries` branches (one country each, with its `states` states) and a
    last branch that lists all `countries` countries; no member is required, so every pair of
    branches overlaps (an object without members matches all of them)."""
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
    branches.append(
        {"properties": {"country": {"type": "string", "enum": codes}, "postalCode": {"type": "string", "maxLength": 51}}}
    )
    return {"type": "object", "properties": {"address": {"type": "object", "oneOf": branches}}}


def _convert(schema: dict, checks: int = -1) -> None:
    token = _native.CancellationToken()
    if checks >= 0:
        token._cancel_after_checks(checks)
    _native._json_schema_to_ebnf(json.dumps(schema), cancel=token)


def test_the_overlapping_address_one_of_is_refused_with_its_typed_error() -> None:
    with pytest.raises(xg.UnsupportedSchemaError, match=REFUSAL):
        _convert(address_schema())


def test_the_refusal_takes_a_bounded_number_of_safe_points() -> None:
    try:
        _convert(address_schema(), checks=WORK_BUDGET)
    except xg.CompilationCancelledError:
        pytest.fail(f"the refusal took more than {WORK_BUDGET} safe-point checks")
    except xg.UnsupportedSchemaError as error:
        assert "more than 256 combined branches" in str(error)
    else:
        pytest.fail("the schema compiled; it has more than 256 combined branches")
