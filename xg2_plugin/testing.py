"""Helpers for tests and debugging: string-level acceptance without a tokenizer."""

from __future__ import annotations

from typing import Union

from . import _native

__all__ = ["ebnf_accepts", "regex_to_ebnf", "json_schema_to_ebnf"]


def ebnf_accepts(ebnf: str, text: Union[str, bytes], root_rule_name: str = "root") -> bool:
    """True iff ``text`` (as UTF-8 bytes) is a complete sentence of the grammar."""
    data = text.encode("utf-8") if isinstance(text, str) else bytes(text)
    return bool(_native.ebnf_accepts(ebnf, data, root_rule_name))


def regex_to_ebnf(pattern: str, *, search: bool = False, json_string_body: bool = False) -> str:
    """The EBNF expression the regex frontend produces for ``pattern``."""
    return _native._regex_to_ebnf(pattern, search=search, json_string_body=json_string_body)


def json_schema_to_ebnf(schema: str, **options: object) -> str:
    """The EBNF the JSON Schema frontend produces (options as in compile_json_schema)."""
    ebnf, _ = _native._json_schema_to_ebnf(schema, **options)
    return ebnf
