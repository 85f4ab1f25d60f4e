"""Fuzzes the regex frontend: arbitrary text as a pattern, then a short match."""

from __future__ import annotations

import atheris

with atheris.instrument_imports():
    import fuzz_common as common
    import xg2_plugin as xg


def test_one_input(data: bytes) -> None:
    data = common.splice_into_seed("fuzz_regex", data)
    pattern = data.decode("utf-8", errors="replace")
    grammar = common.expect_typed(lambda: common.compiler().compile_regex(pattern))
    if grammar is not None:
        matcher = xg.GrammarMatcher(grammar)
        common.expect_typed(lambda: matcher.accept_string(data[:64]))


if __name__ == "__main__":
    common.main(test_one_input)
