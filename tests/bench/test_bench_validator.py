"""The benchmark's schema validator: jsonschema with format checks, plus RFC 3339 leap seconds.

The bench counts a finished random walk whose text fails the schema as a soundness violation, so the
validator must not reject valid text. `rfc3339-validator` (behind jsonschema's "date-time" and "time"
checks) rejects every leap second; the harness accepts second 60 exactly where RFC 3339 does: when
the time converted to UTC is 23:59:60. The cases follow the JSON-Schema-Test-Suite's format tests.
"""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
pytest.importorskip("rfc3339_validator")

from harness.tasks import SchemaValidator  # noqa: E402

DATE_TIME = [
    ("1990-12-31T23:59:60Z", "valid"),
    ("1990-12-31T23:59:60.5z", "valid"),
    ("1998-12-31T15:59:60.123-08:00", "valid"),
    ("6574-12-27T21:16:60-02:43", "valid"),
    ("1990-12-31T23:59:59Z", "valid"),
    ("1998-12-31T23:59:61Z", "violation"),
    ("1998-12-31T23:58:60Z", "violation"),
    ("1998-12-31T22:59:60Z", "violation"),
    ("1998-12-31T23:59:60+01:00", "violation"),
    ("2020-02-30T23:59:60Z", "violation"),
    ("1990-12-31 23:59:60Z", "violation"),
]
TIME = [
    ("23:59:60Z", "valid"),
    ("15:59:60-08:00", "valid"),
    ("00:29:60+00:30", "valid"),
    ("22:59:60Z", "violation"),
    ("23:59:60+01:00", "violation"),
    ("23:59:60", "violation"),
]


@pytest.mark.parametrize("format_name, text, verdict",
                         [("date-time", *case) for case in DATE_TIME] + [("time", *case) for case in TIME])
def test_leap_seconds(format_name: str, text: str, verdict: str) -> None:
    validator = SchemaValidator({"$schema": "https://json-schema.org/draft/2020-12/schema",
                                 "type": "string", "format": format_name})
    assert validator.check(f'"{text}"'.encode())[0] == verdict


def test_other_failures_still_reported() -> None:
    validator = SchemaValidator({"type": "object", "properties": {"when": {"type": "string", "format": "date-time"}},
                                 "required": ["when"]})
    assert validator.check(b'{"when": "1990-12-31T23:59:60Z"}')[0] == "valid"
    assert validator.check(b'{"when": "yesterday"}')[0] == "violation"
    assert validator.check(b'{}')[0] == "violation"
    assert validator.check(b'{"when": ')[0] == "violation"
