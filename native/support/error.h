// Typed errors raised by the engine. Every error that user input can cause is one of
// these; the bindings map each class to a Python exception of the same meaning, so a bad
// schema, grammar, regex or argument never becomes a crash or a generic RuntimeError.
#ifndef XG2_SUPPORT_ERROR_H_
#define XG2_SUPPORT_ERROR_H_

#include <stdexcept>
#include <string>

namespace xg2 {

// Base of all engine errors.
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

// Malformed grammar text (EBNF) or an undefined / ill-formed rule. The message names
// line and column when the error is positional.
class GrammarSyntaxError : public Error {
 public:
  using Error::Error;
};

// Malformed or unsupported regular expression; the message names the offset.
class RegexError : public GrammarSyntaxError {
 public:
  using GrammarSyntaxError::GrammarSyntaxError;
};

// A JSON Schema that is not valid JSON, not a valid schema, or uses a keyword the engine
// cannot enforce. The message names the keyword and its JSON pointer.
class SchemaError : public Error {
 public:
  using Error::Error;
};

// A keyword or construct that is valid but cannot be enforced exactly (the policy error;
// callers may opt into leniency).
class UnsupportedSchemaError : public SchemaError {
 public:
  using SchemaError::SchemaError;
};

// A structural tag (frontends/structural_tag) that does not follow the format: malformed
// JSON, a wrong field, an empty list where one item is needed. The message names the JSON
// path. What the format allows but xg2 cannot express is an UnsupportedSchemaError.
class StructuralTagError : public SchemaError {
 public:
  using SchemaError::SchemaError;
};

// A configured resource limit (grammar size, nesting depth, repetition bound, Earley
// items, ...) was exceeded.
class ResourceLimitError : public Error {
 public:
  using Error::Error;
};

// An argument out of its domain (token id out of range, bad rollback count, ...).
class InvalidArgumentError : public Error {
 public:
  using Error::Error;
};

// An object that serves one caller at a time (a GrammarMatcher) was entered by a second
// thread while the first was still inside it. The call did nothing; the object stays usable.
class ConcurrentUseError : public Error {
 public:
  using Error::Error;
};

}  // namespace xg2

#endif  // XG2_SUPPORT_ERROR_H_
