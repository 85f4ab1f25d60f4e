"""Exception types raised by the engine.

Every error that bad input can cause is one of these (or a plain ``TypeError`` for an
argument of the wrong Python type). The classes are defined by the native module so that
C++ errors cross the boundary with their type intact.

* ``XG2Error`` -- base of everything below.
* ``GrammarSyntaxError`` (also ``ValueError``) -- malformed EBNF; the message names line and column.
* ``RegexError`` (a ``GrammarSyntaxError``) -- malformed or unsupported regex; names the offset.
* ``SchemaError`` (also ``ValueError``) -- invalid JSON Schema; names the JSON pointer.
* ``UnsupportedSchemaError`` (a ``SchemaError``) -- a keyword the engine cannot enforce exactly.
* ``StructuralTagError`` (a ``SchemaError``) -- a malformed structural tag; names the JSON path.
* ``ResourceLimitError`` -- a configured limit (size, depth, repetition, items) was exceeded.
* ``InvalidArgumentError`` (also ``ValueError``) -- e.g. a token id outside the vocabulary.
* ``ConcurrentUseError`` (also ``RuntimeError``) -- a ``GrammarMatcher`` entered from a second
  thread while another call on it was still running (a matcher serves one caller at a time);
  the refused call did nothing and the matcher stays usable.
* ``CompilationCancelledError`` -- a compile stopped by ``Future.cancel()``.
* ``CompilationTimeoutError`` (a ``CompilationCancelledError``) -- a compile past its timeout.
* ``DeserializationError`` (also ``ValueError``) -- a serialized grammar or tokenizer that is
  truncated, corrupt, of another format or engine version, or made for another tokenizer.
"""

from ._native import (
    CompilationCancelledError,
    CompilationTimeoutError,
    ConcurrentUseError,
    DeserializationError,
    GrammarSyntaxError,
    InvalidArgumentError,
    RegexError,
    ResourceLimitError,
    SchemaError,
    StructuralTagError,
    UnsupportedSchemaError,
    XG2Error,
)

__all__ = [
    "XG2Error",
    "GrammarSyntaxError",
    "RegexError",
    "SchemaError",
    "UnsupportedSchemaError",
    "StructuralTagError",
    "ResourceLimitError",
    "InvalidArgumentError",
    "ConcurrentUseError",
    "CompilationCancelledError",
    "CompilationTimeoutError",
    "DeserializationError",
]
