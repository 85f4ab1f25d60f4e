#!/usr/bin/env python3
"""Regenerates the generated sections of docs/json_schema_support.md: the keyword support
matrix (from the converter's own table, _native._json_schema_keyword_table) and the
JSON-Schema-Test-Suite pass table (tests/frontends/test_json_schema_conformance.py).

    PYTHONPATH=. python scripts/gen_schema_support.py [--check]
"""

from __future__ import annotations

import argparse
import pathlib
import sys

REPO = pathlib.Path(__file__).resolve().parents[1]
DOC = REPO / "docs" / "json_schema_support.md"
LEVELS = {"supported": "supported", "limited": "supported with limits", "error": "policy error",
          "annotation": "annotation (ignored, exact)"}


def matrix() -> str:
    from xg2_plugin import _native

    rows = ["| keyword | support | notes |", "|---|---|---|"]
    order = list(LEVELS)
    for keyword, level, note in sorted(_native._json_schema_keyword_table(), key=lambda r: (order.index(r[1]), r[0])):
        rows.append(f"| `{keyword}` | {LEVELS[level]} | {note.replace('|', '/')} |")
    return "\n".join(rows) + "\n"


def conformance() -> str:
    sys.path[:0] = [str(REPO / "tests"), str(REPO / "tests" / "frontends")]
    import test_json_schema_conformance as suite

    return suite.pass_table(suite.run_suite())


def replace_section(text: str, name: str, body: str) -> str:
    begin, end = f"<!-- BEGIN GENERATED {name} -->", f"<!-- END GENERATED {name} -->"
    block = f"{begin}\n{body}{end}"
    if begin in text:
        head, rest = text.split(begin, 1)
        return head + block + rest.split(end, 1)[1]
    return text.rstrip("\n") + "\n\n" + block + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--check", action="store_true", help="fail when the doc is out of date")
    args = parser.parse_args()
    text = DOC.read_text()
    new = replace_section(text, "MATRIX", matrix())
    new = replace_section(new, "CONFORMANCE", conformance())
    if args.check:
        return 0 if new == text else 1
    DOC.write_text(new)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
