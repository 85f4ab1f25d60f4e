"""How much work counting the combined branches of many alternative groups takes, in strict and
lenient mode (native/frontends/json_schema/alternative_pruning.cc, ViableGroups).

N `if`/`then` pairs on one discriminator are N alternative groups of two; their raw product is
past the bound on combined branches, so the converter counts the choices that can hold, one
prefix of the groups after another (lenient mode keeps the longest prefix that passes; strict
mode refuses unless every prefix passes). Each prefix was counted from scratch, and every level
of the distribution counts the groups left again, so the work grew with the fourth power of N.
The choices examined are now kept and each prefix examines only its last group's.

Work is counted in safe-point checks (a token armed with ``_cancel_after_checks(n)`` cancels at
the n-th): the conversion must finish within a budget. 30 conditionals took about 1,270,000
checks in strict mode before the change and about 450,000 after; the budget sits between. No
test here reads a clock."""

from __future__ import annotations

import json

import pytest

import xg2_plugin as xg
from xg2_plugin import _native

CONDITIONALS = 30
# A budget between the work before (about 1,270,000 checks) and after (about 450,000).
COUNT_BUDGET = 700_000


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


def _convert(schema: dict, lenient: bool, checks: int = -1) -> tuple[str, list[str]]:
    token = _native.CancellationToken()
    if checks >= 0:
        token._cancel_after_checks(checks)
    return _native._json_schema_to_ebnf(json.dumps(schema), lenient=lenient, cancel=token)


@pytest.mark.parametrize("lenient", [False, True], ids=["strict", "lenient"])
def test_many_discriminated_conditionals_compile_within_a_bounded_number_of_safe_points(lenient: bool) -> None:
    schema = discriminated_conditionals(CONDITIONALS)
    try:
        ebnf, warnings = _convert(schema, lenient, checks=COUNT_BUDGET)
    except xg.CompilationCancelledError:
        pytest.fail(f"the conversion took more than {COUNT_BUDGET} safe-point checks")
    # Every conditional is kept: one `then` member per constant, and nothing was dropped.
    assert warnings == []
    for i in range(CONDITIONALS):
        assert f'"\\"p{i}\\""' in ebnf


def test_lenient_and_strict_give_the_same_grammar_when_every_prefix_passes() -> None:
    schema = discriminated_conditionals(12)
    assert _convert(schema, lenient=True) == _convert(schema, lenient=False)
