"""Fuzzes structural-tag compilation: arbitrary text as a structural tag."""

from __future__ import annotations

import warnings

import atheris

with atheris.instrument_imports():
    import fuzz_common as common


def test_one_input(data: bytes) -> None:
    data = common.splice_into_seed("fuzz_structural_tag", data)
    text = data.decode("utf-8", errors="replace")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        common.expect_typed(lambda: common.compiler().compile_structural_tag(text))


if __name__ == "__main__":
    common.main(test_one_input)
