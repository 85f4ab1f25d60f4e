// JSON Schema frontend: a schema (JSON text) into EBNF text whose language is exactly the
// JSON documents that validate against it, serialised as the whitespace options say.
#ifndef XG2_FRONTENDS_JSON_SCHEMA_JSON_SCHEMA_CONVERTER_H_
#define XG2_FRONTENDS_JSON_SCHEMA_JSON_SCHEMA_CONVERTER_H_

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "grammar/grammar_ast.h"
#include "support/compile_limits.h"

namespace xg2 {

struct JsonSchemaOptions {
  // Flexible whitespace between tokens (ignored when `indent` or `separators` fix it).
  bool any_whitespace = true;
  // Fixed formatting: indent width (pretty-printed like json.dumps(indent=n)).
  std::optional<int> indent;
  // Fixed formatting: (item separator, key separator), e.g. (", ", ": ").
  std::optional<std::pair<std::string, std::string>> separators;
  // true: objects that declare properties (properties / patternProperties) accept only those
  // unless additionalProperties says otherwise (OpenAI strict mode); names listed in
  // `required` but not declared accept any value; an object schema that declares no
  // properties at all accepts any members.
  bool strict_mode = true;
  // Cap on whitespace characters in one gap when any_whitespace (nullopt = unbounded).
  std::optional<int> max_whitespace;
  // true: unsupported keywords become warnings and are ignored instead of errors.
  bool lenient = false;
  // true: object members in any order (each declared key at most once, required ones
  // exactly once); objects with more than kMaxAnyOrderMembers declared properties are the
  // policy error. false: declared properties in schema order.
  bool any_order = false;
  // true: a member name may be written in any JSON spelling (\uXXXX in either case, surrogate
  // pairs, short escapes, \/): a declared name in each of them, an undeclared one as any string
  // that decodes to no declared name (key_spellings.cc). false: names in their canonical
  // spelling only (raw characters, short escapes), what models write and what the peers accept;
  // the any-spelling automata are about twice the size and cost that in compile and first masks.
  bool any_key_spelling = false;
  // Non-empty substrings no string value or member name may contain as written (escapes not
  // decoded): a structural tag's json_schema `excludes`. Strings with pattern or format are
  // not filtered; enum/const alternatives that mention one are left out.
  std::vector<std::string> string_excludes;
};

// One conversion gives either the text or the grammar, never both: the compile path builds
// the grammar and prints nothing (a compiled grammar's EBNF is printed by JsonSchemaToEbnf
// when someone asks for it; the conversion is deterministic, so that is the same text).
struct JsonSchemaConversion {
  std::string ebnf;                   // JsonSchemaToEbnf only; root rule is "root"
  std::vector<std::string> warnings;  // filled only when lenient
  GrammarAst grammar;                 // JsonSchemaToGrammar only: what ParseEbnf(ebnf) gives
};

// Throws SchemaError / UnsupportedSchemaError naming the keyword and its JSON pointer.
JsonSchemaConversion JsonSchemaToEbnf(std::string_view schema_json, const JsonSchemaOptions& options);
// The same conversion as JsonSchemaToEbnf, with the grammar built directly from the
// converter's rules instead of their text (the compile path: no EBNF print or parse), under
// `grammar_limits` where the conversion runs under the caller's (the compiler lifts the
// repetition bound for the grammar: the converter bounds its counted loops itself).
JsonSchemaConversion JsonSchemaToGrammar(std::string_view schema_json, const JsonSchemaOptions& options,
                                         const CompileLimits& grammar_limits);

// What the converter does with one keyword; the single source of the support matrix in
// docs/json_schema_support.md (scripts/gen_schema_support.py). `level` is "supported",
// "limited" (supported; the forms named in `note` are the policy error), "error" (always
// the policy error) or "annotation" (no validation meaning; ignored, which is exact).
struct KeywordSupport {
  const char* keyword;
  const char* level;
  const char* note;
};
const std::vector<KeywordSupport>& JsonSchemaKeywordTable();

// EBNF for any JSON value (the built-in JSON grammar).
std::string BuiltinJsonEbnf(const JsonSchemaOptions& options);
// The built-in JSON grammar, built (under the caller's limits) and not printed.
JsonSchemaConversion BuiltinJsonGrammar(const JsonSchemaOptions& options);

}  // namespace xg2

#endif  // XG2_FRONTENDS_JSON_SCHEMA_JSON_SCHEMA_CONVERTER_H_
