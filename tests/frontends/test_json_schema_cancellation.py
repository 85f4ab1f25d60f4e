"""A cancellation that stops the JSON Schema frontend inside one of its automaton constructions
(string-language products) surfaces as a cancellation, never as a keyword refusal or a lenient
warning. The frontend turns automaton errors (too many states, not regular) into policy errors;
those handlers must let a cancellation through.

No test here reads a clock: a token armed with ``_cancel_after_checks(n)`` cancels at the n-th
safe point of the conversion, so the tests stop it at safe points spread over the whole
conversion, most of which lie inside the product constructions."""

from __future__ import annotations

import json

import pytest

import xg2_plugin as xg
from xg2_plugin import _native

# Each intersects a pattern whose automaton has thousands of states with another string
# keyword, and the product outgrows the automaton limit: without cancellation the keyword is
# refused (strict) or ignored with a warning (lenient), after all that work.
REFUSED_INTERSECTIONS = [
    # Still refused with a length next to it: counting the length does not make this pattern regular-small.
    {"type": "string", "pattern": "^(?:[ab]*a[ab]{12}){50}$", "minLength": 29990, "maxLength": 30000},
    {"type": "string", "pattern": "^[ab]*a[ab]{12}$", "not": {"const": "x"}},
]
STOP_POINTS = 24


def _convert(schema: dict, checks: int, lenient: bool) -> tuple[str, list[str]]:
    token = _native.CancellationToken()
    token._cancel_after_checks(checks)
    return _native._json_schema_to_ebnf(json.dumps(schema), lenient=lenient, cancel=token)


def _safe_points(schema: dict) -> int:
    """How many safe-point checks a whole conversion of `schema` makes (by doubling, then
    bisection, on where a countdown stops being reached)."""
    reached = lambda n: _raises_cancelled(schema, n, lenient=False)  # noqa: E731
    high = 1
    while reached(high):
        high *= 2
    low = high // 2
    while low + 1 < high:
        middle = (low + high) // 2
        low, high = (middle, high) if reached(middle) else (low, middle)
    return high


def _raises_cancelled(schema: dict, checks: int, lenient: bool) -> bool:
    try:
        _convert(schema, checks, lenient)
    except xg.CompilationCancelledError:
        return True
    except xg.UnsupportedSchemaError as error:
        assert "cancel" not in str(error), f"a cancellation became a refusal: {error}"
        return False
    return False


@pytest.mark.parametrize("schema", REFUSED_INTERSECTIONS)
def test_a_cancellation_at_any_safe_point_is_a_cancellation_not_a_refusal(schema: dict) -> None:
    with pytest.raises(xg.UnsupportedSchemaError, match="regular language too large"):
        _native._json_schema_to_ebnf(json.dumps(schema))
    total = _safe_points(schema)
    assert total > STOP_POINTS, "the conversion should pass many safe points"
    for k in range(STOP_POINTS):
        checks = k * total // STOP_POINTS
        assert _raises_cancelled(schema, checks, lenient=False), checks


@pytest.mark.parametrize("schema", REFUSED_INTERSECTIONS)
def test_a_cancellation_at_any_safe_point_is_not_a_lenient_warning(schema: dict) -> None:
    total = _safe_points(schema)
    for k in range(STOP_POINTS):
        checks = k * total // STOP_POINTS
        try:
            _ebnf, warns = _convert(schema, checks, lenient=True)
        except xg.CompilationCancelledError:
            continue
        pytest.fail(f"cancelled at safe point {checks} of {total}, the lenient conversion returned "
                    f"with warnings {warns}")


def test_a_timeout_through_the_compiler_is_a_timeout() -> None:
    """The public path: a deadline that has certainly passed before the conversion starts."""
    from xg2_test_support import hf_tokenizer_info

    compiler = xg.GrammarCompiler(hf_tokenizer_info("gpt2"), cache_enabled=False, precompute_nodes=0)
    token_timeout = 1e-9
    with pytest.raises(xg.CompilationTimeoutError):
        compiler.compile_json_schema(REFUSED_INTERSECTIONS[0], timeout=token_timeout)
