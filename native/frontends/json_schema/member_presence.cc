// JSON Schema -> EBNF: members an object schema can never have, or always has, so that
// keywords about them (a dependency triggered by the name) are no-ops or plain conjuncts
// rather than refusals.
#include <algorithm>
#include <string>

#include "frontends/json_schema/schema_converter_internal.h"

namespace xg2 {
namespace schema_internal {

// True when no object valid against (and generated for) `node` has member `name`: the
// schema is closed (additionalProperties false, or, in strict mode, absent next to declared
// properties: undeclared members are never generated), `name` is not declared (or declared
// `false`), not required, and none of its patternProperties match it. Applicators that
// could add members (allOf, anyOf, oneOf, $ref, if, not) make the answer false: decided,
// never guessed.
bool SchemaConverter::NeverAMember(const Node& node, const std::string& name) {
  const JsonValue& schema = node.schema;
  for (const char* keyword : {"allOf", "anyOf", "oneOf", "$ref", "$dynamicRef", "$recursiveRef", "if", "not",
                              "unevaluatedProperties"}) {
    if (schema.Find(keyword) != nullptr) return false;
  }
  const JsonValue* properties = schema.Find("properties");
  const JsonValue* patterns = schema.Find("patternProperties");
  const JsonValue* additional = schema.Find("additionalProperties");
  bool closed = additional != nullptr ? additional->is_bool() && !additional->bool_value()
                                      : options_.strict_mode && (properties != nullptr || patterns != nullptr);
  if (!closed) return false;
  if (properties != nullptr && properties->is_object()) {
    const JsonValue* declared = properties->Find(name);
    if (declared != nullptr && !(declared->is_bool() && !declared->bool_value())) return false;
  }
  if (const JsonValue* required = schema.Find("required"); required != nullptr && required->is_array()) {
    for (const JsonValue& item : required->array_items()) {
      if (item.is_string() && item.string_value() == name) return false;
    }
  }
  return patterns == nullptr || NoPatternMatches(schema, name);
}

// True when every object valid against `node` has member `name`: `name` is in the schema's
// own `required` list (a dependency triggered by it then always applies).
bool SchemaConverter::AlwaysAMember(const Node& node, const std::string& name) {
  const JsonValue* required = node.schema.Find("required");
  if (required == nullptr || !required->is_array()) return false;
  return std::any_of(required->array_items().begin(), required->array_items().end(),
                     [&](const JsonValue& item) { return item.is_string() && item.string_value() == name; });
}

}  // namespace schema_internal
}  // namespace xg2
