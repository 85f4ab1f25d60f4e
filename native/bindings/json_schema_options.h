// JsonSchemaOptions from the keyword arguments every JSON Schema binding takes, in the order
// the Python API lists them (xg2_plugin/compiler.py, compile_json_schema).
#ifndef XG2_BINDINGS_JSON_SCHEMA_OPTIONS_H_
#define XG2_BINDINGS_JSON_SCHEMA_OPTIONS_H_

#include <optional>
#include <string>
#include <utility>

#include "frontends/json_schema/json_schema_converter.h"

namespace xg2 {

using JsonSchemaSeparators = std::optional<std::pair<std::string, std::string>>;

inline JsonSchemaOptions JsonSchemaOptionsFrom(bool any_whitespace, std::optional<int> indent,
                                               JsonSchemaSeparators separators, bool strict_mode,
                                               std::optional<int> max_whitespace, bool lenient, bool any_order,
                                               bool any_key_spelling) {
  JsonSchemaOptions options;
  options.any_whitespace = any_whitespace;
  options.indent = indent;
  options.separators = std::move(separators);
  options.strict_mode = strict_mode;
  options.max_whitespace = max_whitespace;
  options.lenient = lenient;
  options.any_order = any_order;
  options.any_key_spelling = any_key_spelling;
  return options;
}

}  // namespace xg2

#endif  // XG2_BINDINGS_JSON_SCHEMA_OPTIONS_H_
