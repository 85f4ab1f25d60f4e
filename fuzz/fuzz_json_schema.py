"""Fuzzes the JSON Schema frontend: arbitrary text as a schema (strict and lenient)."""

from __future__ import annotations

import atheris

with atheris.instrument_imports():
    import fuzz_common as common


def test_one_input(data: bytes) -> None:
    data = common.splice_into_seed("fuzz_json_schema", data)
    text = data.decode("utf-8", errors="replace")
    lenient = bool(data[:1]) and data[0] & 1 == 1
    common.expect_typed(lambda: common.compiler().compile_json_schema(text, lenient=lenient))


if __name__ == "__main__":
    common.main(test_one_input)
