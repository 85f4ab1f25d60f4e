#!/usr/bin/env python3
"""Conversion-only JSONSchemaBench coverage of the JSON Schema frontend (no tokenizer, ~1 min).

    PYTHONPATH=. python scripts/schema_coverage.py [--data DIR]

Prints, per category, how many schemas convert (ok), are refused with the policy error
(unsupported), are invalid or exceed a limit (invalid), or accept no value at all (empty); then the keywords of the first refusal per schema, and the
keywords named by any warning when the refused schemas are converted leniently (what would
have to be supported for them to compile). bench/corpus_report.py is the full report with
instance and token-level checks.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from xg2_plugin import _native  # noqa: E402


def keyword_of(message: str) -> str:
    found = re.search(r"(keyword|format) '([^']+)'", message)
    return found.group(2) if found else message[:40]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    default = Path(os.environ.get("XG2_DATA_DIR", REPO.parent / "shared" / "data")) / "jsonschemabench"
    parser.add_argument("--data", type=Path, default=default)
    parser.add_argument("--list", type=Path, default=None,
                        help="write one line per refused schema: file, first refused keyword, message")
    args = parser.parse_args()
    refusals: list = []
    categories: dict = collections.defaultdict(collections.Counter)
    first, anywhere = collections.Counter(), collections.Counter()
    for path in sorted(args.data.glob("*.json")):
        category = path.name.split("---")[0]
        text = json.dumps(json.loads(path.read_text())["schema"])
        try:
            _native._json_schema_to_ebnf(text)
            status = "ok"
        except _native.UnsupportedSchemaError as error:
            status = "unsupported"
            first[keyword_of(str(error))] += 1
            refusals.append(f"{path.name}\t{keyword_of(str(error))}\t{error}")
            try:
                _, warnings = _native._json_schema_to_ebnf(text, lenient=True)
                for keyword in {keyword_of(w) for w in warnings}:
                    anywhere[keyword] += 1
            except Exception:  # noqa: BLE001 - lenient conversion may still fail; not counted
                pass
        except (_native.SchemaError, _native.ResourceLimitError) as error:
            # A schema no value satisfies (e.g. a oneOf whose every branch is already required
            # beside it) is exact, not a refusal: counted apart from invalid schemas.
            status = "empty" if "accepts no JSON value" in str(error) else "invalid"
        categories[category][status] += 1
        categories["all"][status] += 1
    for category, counts in sorted(categories.items(), key=lambda item: (item[0] == "all", item[0])):
        total = sum(counts.values())
        print(f"{category:16s} {counts['ok']:5d}/{total:<5d} ({100 * counts['ok'] / total:5.1f}%)  "
              f"unsupported {counts['unsupported']}, invalid {counts['invalid']}, empty {counts['empty']}")
    print("first refusal:", ", ".join(f"{k} {v}" for k, v in first.most_common(20)))
    print("any refusal:", ", ".join(f"{k} {v}" for k, v in anywhere.most_common(20)))
    if args.list is not None:
        args.list.write_text("".join(line.replace("\n", " ") + "\n" for line in refusals))
    return 0


if __name__ == "__main__":
    sys.exit(main())
