"""A timeout that stops the JSON Schema frontend inside one of its automaton constructions
(string-language products) surfaces as CompilationTimeoutError, never as a keyword refusal
or a lenient warning. The frontend turns automaton errors (too many states, not regular) into
policy errors; those handlers must let a cancellation through. No test here reads a clock:
the timeout is far shorter than the construction it interrupts."""

from __future__ import annotations

import warnings

import pytest

import xg2_plugin as xg
from xg2_test_support import hf_tokenizer_info

TOKENIZER = "gpt2"
TIMEOUT_S = 0.01

# Each intersects a pattern whose automaton has thousands of states with another string
# keyword, and the product outgrows the automaton limit: without a timeout the keyword is
# refused (strict) or ignored with a warning (lenient), after all that work.
REFUSED_INTERSECTIONS = [
    {"type": "string", "pattern": "^[ab]*a[ab]{12}$", "maxLength": 5000},
    {"type": "string", "pattern": "^[ab]*a[ab]{12}$", "not": {"const": "x"}},
]


def _compiler() -> xg.GrammarCompiler:
    return xg.GrammarCompiler(hf_tokenizer_info(TOKENIZER), cache_enabled=False, precompute_nodes=0)


@pytest.mark.parametrize("schema", REFUSED_INTERSECTIONS)
def test_timeout_inside_a_product_is_a_timeout_not_a_refusal(schema: dict) -> None:
    compiler = _compiler()
    with pytest.raises(xg.UnsupportedSchemaError, match="regular language too large"):
        compiler.compile_json_schema(schema)
    with pytest.raises(xg.CompilationTimeoutError):
        compiler.compile_json_schema(schema, timeout=TIMEOUT_S)


@pytest.mark.parametrize("schema", REFUSED_INTERSECTIONS)
def test_timeout_inside_a_product_is_not_a_lenient_warning(schema: dict) -> None:
    compiler = _compiler()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(xg.CompilationTimeoutError):
            compiler.compile_json_schema(schema, timeout=TIMEOUT_S, lenient=True)
    refusals = [str(w.message) for w in caught if "ignored (lenient)" in str(w.message)]
    assert not refusals, refusals
