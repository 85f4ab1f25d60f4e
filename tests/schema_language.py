"""The JSON Schema frontend's grammar against jsonschema, instance by instance.

The frontend tests that decide a schema's language on enumerated instances share these: the
grammar (EBNF view of the conversion), the oracle's verdict, and the check that the two
agree on every instance.
"""

from __future__ import annotations

import json
from typing import Any, Iterable, Optional

import jsonschema

from xg2_plugin import _native
from xg2_plugin.testing import ebnf_accepts


def schema_ebnf(schema: Any, **options: Any) -> str:
    """The converted grammar's EBNF text (`schema` as a JSON value or as text)."""
    text = schema if isinstance(schema, str) else json.dumps(schema)
    ebnf, _ = _native._json_schema_to_ebnf(text, **options)
    return ebnf


def schema_is_valid(schema: Any, instance: Any, validator: Optional[type] = None) -> bool:
    """jsonschema's verdict: `validator` when given, else the draft `$schema` names (2020-12
    when it names none)."""
    cls = validator or jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    return cls(schema).is_valid(instance)


def assert_schema_language(schema: Any, instances: Iterable[Any], *, both_sides: bool = False,
                           validator: Optional[type] = None, **options: Any) -> None:
    """The grammar accepts exactly the valid instances (json.dumps spelling). Lenient mode
    unless `options` says otherwise (strict mode would close objects jsonschema leaves open).
    `both_sides`: the instances must include valid and invalid ones, so the check can fail."""
    options.setdefault("strict_mode", False)
    ebnf = schema_ebnf(schema, **options)
    verdicts = [(value, schema_is_valid(schema, value, validator)) for value in instances]
    if both_sides:
        assert any(ok for _, ok in verdicts) and not all(ok for _, ok in verdicts), verdicts
    wrong = [(json.dumps(value, ensure_ascii=False), ok) for value, ok in verdicts
             if ebnf_accepts(ebnf, json.dumps(value, ensure_ascii=False)) != ok]
    assert not wrong, f"{len(wrong)} disagreements, e.g. {wrong[:5]}\n{ebnf}"
