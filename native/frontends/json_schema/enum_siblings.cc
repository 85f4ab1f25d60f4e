// enum / const next to structural keywords: each listed value is a concrete JSON value, so
// the sibling keywords are evaluated on it (a small validator over the keywords the
// frontend knows) and the value is kept exactly when it validates. Scalar keywords are
// EnumValueAllowed's (json_schema_converter.cc); this file adds the object, array, string
// pattern and applicator keywords, recursing into subschemas through
// ListedValueSatisfies; `format` is decided on the format's automaton. A keyword it cannot
// evaluate exactly (unevaluated*, a format without an automaton) stays the policy error.
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "frontends/json_schema/regular_language.h"
#include "frontends/json_schema/schema_converter_internal.h"
#include "frontends/regex/regex_converter.h"
#include "support/compile_limits.h"
#include "support/error.h"
#include "support/json.h"

namespace xg2 {
namespace schema_internal {

namespace {

// Restores the validator's recursion depth on every exit.
class DepthGuard {
 public:
  explicit DepthGuard(int* depth) : depth_(depth) { ++*depth_; }
  ~DepthGuard() { --*depth_; }
  DepthGuard(const DepthGuard&) = delete;
  DepthGuard& operator=(const DepthGuard&) = delete;

 private:
  int* depth_;
};

}  // namespace

bool SchemaConverter::ListedValueSatisfies(const JsonValue& value, const JsonValue& schema,
                                           const std::string& pointer) {
  if (schema.is_bool()) return schema.bool_value();
  if (!schema.is_object()) Invalid("the schema at " + ShowPointer(pointer) + " must be an object or a boolean");
  // A $ref cycle that consumes no part of the value ends here.
  DepthGuard guard(&listed_value_depth_);
  if (listed_value_depth_ > CurrentCompileLimits().max_schema_depth) {
    throw ResourceLimitError("enum value check nested deeper than " +
                             std::to_string(CurrentCompileLimits().max_schema_depth) + " at " +
                             ShowPointer(pointer));
  }
  Node node{schema, pointer};
  if (legacy_ref_ && schema.Find("$ref") != nullptr) {
    std::optional<bool> verdict = ListedValueSiblingAllows(value, node, "$ref");
    return verdict.value_or(true);
  }
  if (const JsonValue* constant = schema.Find("const"); constant != nullptr && !JsonEquals(*constant, value)) {
    return false;
  }
  if (const JsonValue* values = schema.Find("enum")) {
    if (!values->is_array()) Invalid("keyword 'enum' at " + ShowPointer(pointer) + " must be an array");
    const std::vector<JsonValue>& items = values->array_items();
    // EnumOrConst asks about each value of this very list: a scalar equals itself, so it is
    // listed without comparing it with the values before it (quadratic in long enums). A
    // container is compared (JsonEquals reads an object's members by name, first of each).
    const std::less<const JsonValue*> before;  // a total order, also of unrelated addresses
    bool listed = !value.is_array() && !value.is_object() && !before(&value, items.data()) &&
                  before(&value, items.data() + items.size());
    for (const JsonValue& item : items) listed = listed || JsonEquals(item, value);
    if (!listed) return false;
  }
  // EnumValueAllowed skips the conditional (the converter rewrites it before enum is read).
  if (const JsonValue* condition = schema.Find("if")) {
    const char* branch = ListedValueSatisfies(value, *condition, ChildPointer(pointer, "if")) ? "then" : "else";
    if (const JsonValue* taken = schema.Find(branch);
        taken != nullptr && !ListedValueSatisfies(value, *taken, ChildPointer(pointer, branch))) {
      return false;
    }
  }
  return EnumValueAllowed(value, node);
}

std::optional<bool> SchemaConverter::ListedValueSiblingAllows(const JsonValue& value, const Node& node,
                                                              const std::string& keyword) {
  const JsonValue& schema = node.schema;
  const JsonValue& argument = *schema.Find(keyword);
  const std::string at = ChildPointer(node.pointer, keyword);
  auto satisfies = [&](const JsonValue& subschema, const std::string& pointer) {
    return ListedValueSatisfies(value, subschema, pointer);
  };
  auto subschemas = [&]() -> const std::vector<JsonValue>& {
    if (!argument.is_array() || argument.array_items().empty()) {
      Invalid("keyword '" + keyword + "' at " + ShowPointer(node.pointer) + " must be a non-empty array");
    }
    return argument.array_items();
  };
  if (keyword == "$ref") {
    if (!argument.is_string()) Invalid("keyword '$ref' at " + ShowPointer(node.pointer) + " must be a string");
    std::string target_pointer;
    const JsonValue* target = ResolveReference(argument.string_value(), node, &target_pointer);
    return target == nullptr || satisfies(*target, target_pointer);
  }
  if (keyword == "allOf" || keyword == "anyOf" || keyword == "oneOf") {
    size_t passed = 0;
    const std::vector<JsonValue>& branches = subschemas();
    for (size_t i = 0; i < branches.size(); ++i) {
      passed += satisfies(branches[i], at + "/" + std::to_string(i)) ? 1 : 0;
    }
    if (keyword == "allOf") return passed == branches.size();
    return keyword == "anyOf" ? passed > 0 : passed == 1;
  }
  if (keyword == "not") return !satisfies(argument, at);
  if (keyword == "pattern" && value.is_string()) {
    if (!argument.is_string()) Invalid("keyword 'pattern' at " + ShowPointer(node.pointer) + " must be a string");
    try {
      // The quoted canonical spelling of the value, as for member names.
      return PatternNames(argument.string_value()).Accepts(DecodeUtf8ToU32(DumpJsonString(value.string_value())));
    } catch (const RegexError&) {
      return std::nullopt;
    }
  }
  if (keyword == "dependentRequired" || keyword == "dependentSchemas" || keyword == "dependencies") {
    if (!value.is_object()) return true;  // object keywords the type table does not list
  }
  if (value.is_object()) return ListedObjectAllows(value, node, keyword);
  if (value.is_array()) return ListedArrayAllows(value, node, keyword);
  return std::nullopt;
}

std::optional<bool> SchemaConverter::ListedObjectAllows(const JsonValue& value, const Node& node,
                                                        const std::string& keyword) {
  const JsonValue& schema = node.schema;
  const JsonValue& argument = *schema.Find(keyword);
  const std::string at = ChildPointer(node.pointer, keyword);
  auto has_key = [&](const std::string& key) {
    for (const auto& member : value.object_members()) {
      if (member.first == key) return true;
    }
    return false;
  };
  auto names_present = [&](const JsonValue& names) {
    if (!names.is_array()) return false;
    for (const JsonValue& name : names.array_items()) {
      if (!name.is_string() || !has_key(name.string_value())) return false;
    }
    return true;
  };
  if (keyword == "required") {
    if (!argument.is_array()) Invalid("keyword 'required' at " + ShowPointer(node.pointer) + " must be an array");
    return names_present(argument);
  }
  if (keyword == "propertyNames") {
    for (const auto& member : value.object_members()) {
      if (!ListedValueSatisfies(JsonValue::String(member.first), argument, at)) return false;
    }
    return true;
  }
  if (keyword == "dependentRequired" || keyword == "dependentSchemas" || keyword == "dependencies") {
    if (!argument.is_object()) Invalid("keyword '" + keyword + "' at " + ShowPointer(node.pointer) + " must be an object");
    for (const auto& [trigger, dependency] : argument.object_members()) {
      if (!has_key(trigger)) continue;
      bool ok = dependency.is_array() ? names_present(dependency)
                                      : ListedValueSatisfies(value, dependency, ChildPointer(at, trigger));
      if (!ok) return false;
    }
    return true;
  }
  if (keyword != "properties" && keyword != "patternProperties" && keyword != "additionalProperties") {
    return std::nullopt;
  }
  // The three decide together which schemas each member meets; each of them runs the whole
  // check, which is idempotent.
  const JsonValue* properties = IsIgnored(node, "properties") ? nullptr : schema.Find("properties");
  const JsonValue* patterns = IsIgnored(node, "patternProperties") ? nullptr : schema.Find("patternProperties");
  const JsonValue* additional =
      IsIgnored(node, "additionalProperties") ? nullptr : schema.Find("additionalProperties");
  if ((properties != nullptr && !properties->is_object()) || (patterns != nullptr && !patterns->is_object())) {
    Invalid("keywords 'properties' and 'patternProperties' at " + ShowPointer(node.pointer) + " must be objects");
  }
  for (const auto& [key, member_value] : value.object_members()) {
    bool declared = false;
    if (properties != nullptr) {
      if (const JsonValue* property = properties->Find(key)) {
        declared = true;
        std::string pointer = ChildPointer(ChildPointer(node.pointer, "properties"), key);
        if (!ListedValueSatisfies(member_value, *property, pointer)) return false;
      }
    }
    for (size_t i = 0; patterns != nullptr && i < patterns->object_members().size(); ++i) {
      const auto& [pattern, pattern_schema] = patterns->object_members()[i];
      try {
        if (!PatternNames(pattern).Accepts(DecodeUtf8ToU32(DumpJsonString(key)))) continue;
      } catch (const RegexError&) {
        return std::nullopt;
      }
      declared = true;
      std::string pointer = ChildPointer(ChildPointer(node.pointer, "patternProperties"), pattern);
      if (!ListedValueSatisfies(member_value, pattern_schema, pointer)) return false;
    }
    if (!declared && additional != nullptr &&
        !ListedValueSatisfies(member_value, *additional, ChildPointer(node.pointer, "additionalProperties"))) {
      return false;
    }
  }
  return true;
}

std::optional<bool> SchemaConverter::ListedArrayAllows(const JsonValue& value, const Node& node,
                                                       const std::string& keyword) {
  const JsonValue& schema = node.schema;
  const JsonValue& argument = *schema.Find(keyword);
  const std::string at = ChildPointer(node.pointer, keyword);
  const std::vector<JsonValue>& items = value.array_items();
  const long long size = static_cast<long long>(items.size());
  if (keyword == "minItems" || keyword == "maxItems") {
    std::optional<long long> bound = CountKeyword(node, keyword.c_str());
    if (!bound) return true;
    return keyword == "minItems" ? size >= *bound : size <= *bound;
  }
  // Items from `first` on meet `rest` (at `pointer`).
  auto rest_satisfies = [&](size_t first, const JsonValue& rest, const std::string& pointer) {
    for (size_t i = first; i < items.size(); ++i) {
      if (!ListedValueSatisfies(items[i], rest, pointer)) return false;
    }
    return true;
  };
  auto tuple_satisfies = [&](const JsonValue& tuple, const std::string& pointer) {
    for (size_t i = 0; i < items.size() && i < tuple.array_items().size(); ++i) {
      if (!ListedValueSatisfies(items[i], tuple.array_items()[i], pointer + "/" + std::to_string(i))) return false;
    }
    return true;
  };
  const JsonValue* prefix = schema.Find("prefixItems");
  const JsonValue* listed_items = schema.Find("items");
  if (keyword == "prefixItems") {
    if (!argument.is_array()) Invalid("keyword 'prefixItems' at " + ShowPointer(node.pointer) + " must be an array");
    return tuple_satisfies(argument, at);
  }
  if (keyword == "items") {
    if (argument.is_array()) return tuple_satisfies(argument, at);  // draft 4..2019 tuple form
    size_t first = prefix != nullptr && prefix->is_array() ? prefix->array_items().size() : 0;
    return rest_satisfies(first, argument, at);
  }
  if (keyword == "additionalItems") {
    if (listed_items == nullptr || !listed_items->is_array()) return true;  // applies after a tuple only
    return rest_satisfies(listed_items->array_items().size(), argument, at);
  }
  if (keyword == "contains") {
    long long matches = 0;
    for (const JsonValue& item : items) matches += ListedValueSatisfies(item, argument, at) ? 1 : 0;
    long long low = 1;
    std::optional<long long> high;
    if (!legacy_ref_) {
      low = CountKeyword(node, "minContains").value_or(1);
      high = CountKeyword(node, "maxContains");
    }
    return matches >= low && (!high || matches <= *high);
  }
  return std::nullopt;
}

// A format grammar is written over the JSON spelling of its strings, one spelling per
// string; a string of printable ASCII without `"` or `\` is its own JSON spelling, so the
// automaton decides it. A string the automaton rejects is outside the format only where the
// grammar holds every string jsonschema's FormatChecker accepts: not email's sound subset,
// nor duration's integers-only RFC 3339 form (the checker also takes "PT1.5S").
std::optional<bool> SchemaConverter::ListedStringHasFormat(const JsonValue& value, const JsonValue& format) {
  if (!value.is_string()) return true;  // format asserts on strings only
  if (!format.is_string()) return std::nullopt;
  const std::string& name = format.string_value();
  for (char c : value.string_value()) {
    auto byte = static_cast<unsigned char>(c);
    if (byte < 0x20 || byte >= 0x7f || c == '"' || c == '\\') return std::nullopt;
  }
  if (name == "regex") return std::nullopt;  // its grammar is recursive
  const CodepointDfa* automaton = FormatAutomaton(name);
  if (automaton == nullptr) return std::nullopt;
  const std::u32string text = DecodeUtf8ToU32(value.string_value());
  const std::optional<long long> max_length = StringFormatMaxLength(name);
  if (max_length && static_cast<long long>(text.size()) > *max_length) return false;  // ASCII: one unit each
  if (automaton->Accepts(text)) return true;
  if (!StringFormatIsExact(name) || name == "email" || name == "duration") return std::nullopt;
  return false;
}

}  // namespace schema_internal
}  // namespace xg2
