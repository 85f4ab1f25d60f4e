// JSON Schema -> grammar: the keywords the converter rewrites into others before generating
// (`not` through complements, if/then/else, dependencies), split from json_schema_converter.cc.
#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <set>
#include <unordered_map>

#include "frontends/json_schema/decimal.h"
#include "frontends/json_schema/integer_range.h"
#include "frontends/json_schema/number_bounds.h"
#include "frontends/json_schema/regular_language.h"
#include "frontends/json_schema/schema_converter_internal.h"
#include "frontends/json_schema/string_excludes.h"
#include "frontends/json_schema/string_formats.h"
#include "frontends/json_schema/string_language.h"
#include "frontends/regex/regex_converter.h"
#include "support/cancellation.h"
#include "support/compile_limits.h"
#include "support/error.h"

namespace xg2 {
namespace schema_internal {

// `not` where the complement of the negated schema is a schema again (Complement). The
// result replaces the node: the schema without `not`, with the complement added to its
// allOf; nullopt leaves `not` to the policy error, or to the generators that read it
// directly (a string type excluding listed strings, an enum filtered by the exclusion).
std::optional<JsonValue> SchemaConverter::WithoutNot(const Node& node, const JsonValue& negated) {
  if (NotReadByGenerators(node)) return std::nullopt;
  bool listed_node = node.schema.Find("enum") != nullptr || node.schema.Find("const") != nullptr;
  if (listed_node) {
    if (std::optional<JsonValue> filtered = ListedWithoutNot(node, negated)) return filtered;
  }
  bool declares = node.schema.Find("properties") != nullptr || node.schema.Find("patternProperties") != nullptr ||
                  node.schema.Find("additionalProperties") != nullptr;
  std::optional<JsonValue> complement = Complement(negated, node.pointer, declares, 8);
  if (!complement && !listed_node) return BoundedIntegersListed(node);
  if (!complement || (listed_node && ComplementRewritesAgain(*complement))) return std::nullopt;
  if (complement->is_bool() && !complement->bool_value()) return JsonValue::Bool(false);
  std::vector<JsonValue::Member> members;
  std::vector<JsonValue> conjuncts;
  for (const auto& [keyword, value] : node.schema.object_members()) {
    if (keyword == "not") continue;
    if (keyword == "allOf" && value.is_array()) {
      for (const JsonValue& item : value.array_items()) conjuncts.push_back(item);
      continue;
    }
    members.emplace_back(keyword, value);
  }
  conjuncts.push_back(*complement);
  members.emplace_back("allOf", JsonValue::Array(std::move(conjuncts)));
  return JsonValue::Object(std::move(members));
}

std::optional<std::vector<JsonValue>> ListedValuesOnly(const JsonValue& schema) {
  if (!schema.is_object()) return std::nullopt;
  std::optional<std::vector<JsonValue>> values;
  for (const auto& [keyword, value] : schema.object_members()) {
    if (keyword == "const") {
      values = std::vector<JsonValue>{value};
    } else if (keyword == "enum" && value.is_array()) {
      if (!values) values = value.array_items();
    } else if (!IsPassiveKeyword(keyword)) {
      return std::nullopt;
    }
  }
  if (values && schema.Find("const") != nullptr && schema.Find("enum") != nullptr) {
    const JsonValue& constant = *schema.Find("const");
    bool listed = false;
    for (const JsonValue& v : schema.Find("enum")->array_items()) listed = listed || JsonEquals(v, constant);
    if (!listed) values = std::vector<JsonValue>{};
  }
  return values;
}

bool ExcludesIntegers(const JsonValue& schema) {
  const JsonValue* negated = schema.is_object() ? schema.Find("not") : nullptr;
  if (negated == nullptr || !negated->is_object()) return false;
  const JsonValue* type = negated->Find("type");
  if (type == nullptr || !type->is_string() || type->string_value() != "integer") return false;
  for (const auto& member : negated->object_members()) {
    if (member.first != "type" && !IsPassiveKeyword(member.first)) return false;
  }
  return true;
}

// A number is integral exactly when its fraction, trailing zeros dropped, is empty; every
// non-integral value is written without exponent as digits "." digits ending in 1-9. So
// this (regular) language has one spelling of each non-integral value and no other value;
// the non-integral spellings with exponents (1.5e1 is 15) would need the digit count
// compared with the exponent, which is not regular.
Fragment NonIntegralNumber() {
  Fragment natural = Alt({Fragment::Literal("0"),
                          Seq({Fragment::Atom("[1-9]"), Repeat(Fragment::Atom("[0-9]"), 0, -1)})});
  return Seq({Optional(Fragment::Literal("-")), natural, Fragment::Literal("."), Repeat(Fragment::Atom("[0-9]"), 0, -1),
              Fragment::Atom("[1-9]")});
}

namespace {

JsonValue TypeSchema(const char* type) { return JsonValue::Object({{"type", JsonValue::String(type)}}); }

JsonValue AnyOfOrSingle(std::vector<JsonValue> disjuncts) {
  if (disjuncts.empty()) return JsonValue::Bool(false);
  if (disjuncts.size() == 1) return disjuncts[0];
  return JsonValue::Object({{"anyOf", JsonValue::Array(std::move(disjuncts))}});
}

JsonValue CountSchema(long long n) { return JsonValue::Number(std::to_string(n), static_cast<double>(n)); }

// An object or array schema of the complement: `declares` (as in Complement) leaves the
// object's members to the schema it is merged into; otherwise it is spelled open, since
// strict mode would close an object schema without declared members.
JsonValue TypedMembers(const char* type, std::vector<JsonValue::Member> members, bool declares) {
  members.insert(members.begin(), {"type", JsonValue::String(type)});
  if (std::string(type) == "object" && !declares) members.emplace_back("additionalProperties", JsonValue::Bool(true));
  return JsonValue::Object(std::move(members));
}

std::optional<JsonValue> ValuesComplement(const std::vector<JsonValue>& values, bool declares);

// The objects other than `value` (an object with n distinct names): one of its names
// absent, one present with another value, or all present and more than n members. The
// object generator counts members beyond one only where no undeclared member may appear,
// so for n > 0 that needs `declares` (ComplementWithin covers closed objects otherwise).
std::optional<JsonValue> ObjectsOtherThan(const JsonValue& value, bool declares) {
  if (!declares && !value.object_members().empty()) return std::nullopt;
  std::vector<JsonValue> disjuncts;
  std::set<std::string> names;
  for (const auto& [name, member] : value.object_members()) {
    if (!names.insert(name).second) return std::nullopt;  // a repeated name: no JSON object equals it
    std::optional<JsonValue> other = ValuesComplement({member}, false);
    if (!other) return std::nullopt;
    disjuncts.push_back(TypedMembers("object", {{"properties", JsonValue::Object({{name, JsonValue::Bool(false)}})}},
                                     declares));
    disjuncts.push_back(TypedMembers("object", {{"required", JsonValue::Array({JsonValue::String(name)})},
                                                {"properties", JsonValue::Object({{name, *other}})}},
                                     declares));
  }
  disjuncts.push_back(TypedMembers("object", {{"minProperties", CountSchema(static_cast<long long>(names.size()) + 1)}},
                                   declares));
  return AnyOfOrSingle(std::move(disjuncts));
}

// The arrays other than `value` (an array of n items): shorter, longer, or of length n
// with some item k other than value[k] (checked through prefixItems up to k).
std::optional<JsonValue> ArraysOtherThan(const JsonValue& value) {
  const std::vector<JsonValue>& items = value.array_items();
  const long long n = static_cast<long long>(items.size());
  std::vector<JsonValue> disjuncts;
  if (n > 0) disjuncts.push_back(TypedMembers("array", {{"maxItems", CountSchema(n - 1)}}, false));
  disjuncts.push_back(TypedMembers("array", {{"minItems", CountSchema(n + 1)}}, false));
  std::vector<JsonValue> prefix;
  for (const JsonValue& item : items) {
    std::optional<JsonValue> other = ValuesComplement({item}, false);
    if (!other) return std::nullopt;
    std::vector<JsonValue> tuple = prefix;
    tuple.push_back(*other);
    disjuncts.push_back(TypedMembers("array", {{"minItems", CountSchema(static_cast<long long>(tuple.size()))},
                                               {"prefixItems", JsonValue::Array(std::move(tuple))}},
                                     false));
    prefix.push_back(JsonValue::Bool(true));
  }
  return AnyOfOrSingle(std::move(disjuncts));
}

// The values of one structured type other than each of `listed` (objects or arrays): the
// intersection of each one's complement within the type; the whole type when none is listed.
std::optional<JsonValue> StructuredOtherThan(const char* type, const std::vector<JsonValue>& listed, bool declares) {
  if (listed.empty()) return TypeSchema(type);
  std::vector<JsonValue> conjuncts;
  for (const JsonValue& value : listed) {
    std::optional<JsonValue> other = value.is_object() ? ObjectsOtherThan(value, declares) : ArraysOtherThan(value);
    if (!other) return std::nullopt;
    conjuncts.push_back(std::move(*other));
  }
  if (conjuncts.size() == 1) return conjuncts[0];
  return JsonValue::Object({{"allOf", JsonValue::Array(std::move(conjuncts))}});
}

// Every JSON value except `values`, as a schema: other types whole, the remaining booleans,
// numbers as the open intervals between the excluded ones, strings as a string type with
// `not: {enum: [...]}` (read by StringValue, an automaton difference), objects and arrays
// member by member (ObjectsOtherThan, ArraysOtherThan). nullopt for a number the decimal
// reader does not take, or an object with a repeated name.
std::optional<JsonValue> ValuesComplement(const std::vector<JsonValue>& values, bool declares) {
  bool has_null = false, has_true = false, has_false = false;
  std::vector<JsonValue> strings, objects, arrays;
  std::vector<std::pair<Decimal, JsonValue>> numbers;
  for (const JsonValue& v : values) {
    switch (v.kind()) {
      case JsonKind::kNull: has_null = true; break;
      case JsonKind::kBool: (v.bool_value() ? has_true : has_false) = true; break;
      case JsonKind::kString: strings.push_back(v); break;
      case JsonKind::kNumber: {
        std::optional<Decimal> d = ParseDecimal(v.number_lexeme());
        if (!d) return std::nullopt;
        numbers.emplace_back(*d, v);
        break;
      }
      case JsonKind::kObject: objects.push_back(v); break;
      case JsonKind::kArray: arrays.push_back(v); break;
      default: return std::nullopt;
    }
  }
  std::vector<JsonValue> disjuncts;
  for (const char* type : {"object", "array"}) {
    std::optional<JsonValue> others = StructuredOtherThan(type, std::string(type) == "object" ? objects : arrays, declares);
    if (!others) return std::nullopt;
    disjuncts.push_back(std::move(*others));
  }
  if (!has_null) disjuncts.push_back(TypeSchema("null"));
  if (!has_true || !has_false) {
    std::vector<JsonValue> kept;
    if (!has_true) kept.push_back(JsonValue::Bool(true));
    if (!has_false) kept.push_back(JsonValue::Bool(false));
    disjuncts.push_back(JsonValue::Object({{"enum", JsonValue::Array(std::move(kept))}}));
  }
  if (strings.empty()) {
    disjuncts.push_back(TypeSchema("string"));
  } else {
    disjuncts.push_back(JsonValue::Object({{"type", JsonValue::String("string")},
                                           {"not", JsonValue::Object({{"enum", JsonValue::Array(strings)}})}}));
  }
  std::sort(numbers.begin(), numbers.end(),
            [](const auto& x, const auto& y) { return CompareDecimal(x.first, y.first) < 0; });
  for (size_t i = 0; i <= numbers.size(); ++i) {
    if (i > 0 && i < numbers.size() && CompareDecimal(numbers[i - 1].first, numbers[i].first) == 0) continue;
    std::vector<JsonValue::Member> interval = {{"type", JsonValue::String("number")}};
    if (i > 0) interval.emplace_back("exclusiveMinimum", numbers[i - 1].second);
    if (i < numbers.size()) interval.emplace_back("exclusiveMaximum", numbers[i].second);
    disjuncts.push_back(JsonValue::Object(std::move(interval)));
  }
  return AnyOfOrSingle(std::move(disjuncts));
}

}  // namespace

// The schema whose language is exactly what `schema` rejects, for conjunctions of: type
// names (`integer` without `number` leaves the non-integral numbers), const / enum (objects
// and arrays member by member), a format with a string language, required, properties and
// items (recursively), not, allOf / anyOf of such
// schemas, oneOf of pairwise disjoint ones, the count and bound keywords, and
// additionalProperties / additionalItems / propertyNames / patternProperties whose schemas
// accept every value.
// nullopt for other forms. A keyword that applies to one type fails only for values of
// that type, so its complement carries the type. `declares`: the object the complement
// will be merged into declares its members (else a member-free object schema gets
// additionalProperties true, which keeps strict mode from closing it).
std::optional<JsonValue> SchemaConverter::Complement(const JsonValue& schema_in, const std::string& pointer,
                                                     bool declares, int budget) {
  if (budget <= 0) return std::nullopt;
  const JsonValue& schema = Dereferenced(schema_in, pointer);
  if (schema.is_bool()) return JsonValue::Bool(!schema.bool_value());
  if (!schema.is_object()) return std::nullopt;
  std::vector<JsonValue> disjuncts;
  auto typed = [](const char* type, std::vector<JsonValue::Member> members) {
    members.insert(members.begin(), {"type", JsonValue::String(type)});
    return JsonValue::Object(std::move(members));
  };
  auto open_object = [&](std::vector<JsonValue::Member> members) {
    if (!declares) members.emplace_back("additionalProperties", JsonValue::Bool(true));
    return typed("object", std::move(members));
  };
  auto count = [](const JsonValue& value) -> std::optional<long long> {
    if (!value.is_integral_number() || value.number_value() < 0 || value.number_value() > 1e15) return std::nullopt;
    return static_cast<long long>(value.number_value());
  };
  if (std::optional<std::vector<JsonValue>> values = ListedValuesOnly(schema)) return ValuesComplement(*values, declares);
  if (RejectsNonStrings(schema) && StringLanguage(schema, pointer, budget)) {
    // Every non-string, and the strings outside its language (read by StringValue).
    for (const char* type : kAllTypes) {
      if (std::string(type) != "string") disjuncts.push_back(TypeSchema(type));
    }
    disjuncts.push_back(JsonValue::Object({{"type", JsonValue::String("string")}, {"not", schema}}));
    return AnyOfOrSingle(std::move(disjuncts));
  }
  for (const auto& [keyword, value] : schema.object_members()) {
    if (IsPassiveKeyword(keyword) || keyword == "then" || keyword == "else" || keyword == "nullable") continue;
    if (keyword == "type") {
      std::set<std::string> named;
      for (const JsonValue& name : value.is_array() ? value.array_items() : std::vector<JsonValue>{value}) {
        if (!name.is_string() || !IsTypeName(name.string_value())) return std::nullopt;
        named.insert(name.string_value());
      }
      const JsonValue* nullable = schema.Find("nullable");
      if (nullable != nullptr && nullable->is_bool() && nullable->bool_value()) named.insert("null");
      // "integer" without "number" leaves the non-integral numbers, which no type name
      // says: `not` integer next to type number (ExcludesIntegers, read by NumberValue).
      bool integers_only = named.count("integer") > 0 && named.count("number") == 0;
      for (const char* type : kAllTypes) {
        if (named.count(type) > 0) continue;
        disjuncts.push_back(std::string(type) == "number" && integers_only
                                ? JsonValue::Object({{"type", JsonValue::String("number")}, {"not", TypeSchema("integer")}})
                                : TypeSchema(type));
      }
    } else if (keyword == "const" || keyword == "enum") {
      if (keyword == "enum" && schema.Find("const") != nullptr) continue;
      std::optional<JsonValue> rest = ValuesComplement(keyword == "const" ? std::vector<JsonValue>{value}
                                                       : value.is_array() ? value.array_items()
                                                                          : std::vector<JsonValue>{},
                                                       declares);
      if (!rest || (!value.is_array() && keyword == "enum")) return std::nullopt;
      disjuncts.push_back(*rest);
    } else if (keyword == "required") {
      if (!value.is_array()) return std::nullopt;
      for (const JsonValue& name : value.array_items()) {
        if (!name.is_string()) return std::nullopt;
        disjuncts.push_back(open_object({{"properties", JsonValue::Object({{name.string_value(), JsonValue::Bool(false)}})}}));
      }
    } else if (keyword == "properties") {
      if (!value.is_object()) return std::nullopt;
      for (const auto& [name, property] : value.object_members()) {
        std::optional<JsonValue> failing = Complement(property, ChildPointer(ChildPointer(pointer, "properties"), name),
                                                      false, budget - 1);
        if (!failing) return std::nullopt;
        if (failing->is_bool() && !failing->bool_value()) continue;
        disjuncts.push_back(open_object({{"required", JsonValue::Array({JsonValue::String(name)})},
                                         {"properties", JsonValue::Object({{name, *failing}})}}));
      }
    } else if (keyword == "not") {
      disjuncts.push_back(value);
    } else if (keyword == "format" && value.is_string()) {
      // A format the draft does not define asserts nothing; another fails only strings,
      // those outside its language (when the format has one: StringLanguage).
      if (IsUnknownFormat(value.string_value(), draft3_)) continue;
      JsonValue formatted = JsonValue::Object({{"type", JsonValue::String("string")}, {"format", value}});
      if (!StringLanguage(formatted, pointer, budget)) return std::nullopt;
      disjuncts.push_back(JsonValue::Object({{"type", JsonValue::String("string")}, {"not", formatted}}));
    } else if (keyword == "pattern") {
      // The strings the pattern does not match (StringValue subtracts its language).
      disjuncts.push_back(JsonValue::Object({{"type", JsonValue::String("string")},
                                             {"not", JsonValue::Object({{"pattern", value}})}}));
    } else if (keyword == "items") {
      // An array fails `items` exactly when some item fails it: `contains` the complement
      // (generated from `not`, whose own complement is the items schema again). Tuple forms
      // (an array of schemas) are not complemented.
      if (!value.is_object() && !value.is_bool()) return std::nullopt;
      std::optional<JsonValue> failing = Complement(value, ChildPointer(pointer, "items"), false, budget - 1);
      if (!failing) return std::nullopt;
      if (failing->is_bool() && !failing->bool_value()) continue;  // every item passes
      disjuncts.push_back(typed("array", {{"contains", JsonValue::Object({{"not", value}})}}));
    } else if (keyword == "allOf" || keyword == "anyOf" || keyword == "oneOf") {
      if (!value.is_array() || value.array_items().empty()) return std::nullopt;
      // A oneOf whose branches are pairwise disjoint is their anyOf (OneOf generates it so).
      if (keyword == "oneOf" && !BranchesDisjoint(value.array_items(), pointer)) return std::nullopt;
      std::vector<JsonValue> parts;
      for (const JsonValue& item : value.array_items()) {
        std::optional<JsonValue> failing = Complement(item, pointer, declares, budget - 1);
        if (!failing) return std::nullopt;
        parts.push_back(*failing);
      }
      if (keyword == "allOf") {
        for (JsonValue& part : parts) disjuncts.push_back(std::move(part));
      } else {
        disjuncts.push_back(JsonValue::Object({{"allOf", JsonValue::Array(std::move(parts))}}));
      }
    } else if (keyword == "minimum" || keyword == "maximum" || keyword == "exclusiveMinimum" ||
               keyword == "exclusiveMaximum") {
      if (!value.is_number()) return std::nullopt;  // draft-4 boolean forms: not here
      static const std::map<std::string, std::string> kOpposite = {
          {"minimum", "exclusiveMaximum"}, {"maximum", "exclusiveMinimum"},
          {"exclusiveMinimum", "maximum"}, {"exclusiveMaximum", "minimum"}};
      disjuncts.push_back(typed("number", {{kOpposite.at(keyword), value}}));
    } else if (keyword == "minLength" || keyword == "minItems" || keyword == "minProperties" ||
               keyword == "maxLength" || keyword == "maxItems" || keyword == "maxProperties") {
      std::optional<long long> n = count(value);
      if (!n) return std::nullopt;
      bool is_min = keyword.rfind("min", 0) == 0;
      if (is_min && *n == 0) continue;
      std::string opposite = (is_min ? "max" : "min") + keyword.substr(3);
      const char* type = keyword.find("Length") != std::string::npos ? "string"
                         : keyword.find("Items") != std::string::npos ? "array" : "object";
      JsonValue bound = JsonValue::Number(std::to_string(is_min ? *n - 1 : *n + 1),
                                          static_cast<double>(is_min ? *n - 1 : *n + 1));
      disjuncts.push_back(std::string(type) == "object" ? open_object({{opposite, bound}})
                                                         : typed(type, {{opposite, bound}}));
    } else if (keyword == "additionalProperties" || keyword == "additionalItems" || keyword == "propertyNames" ||
               keyword == "patternProperties") {
      // Schemas for some members or items: no value fails them when each accepts every value
      // (`true`, `{}`, annotations only), as package schemas often spell out an open object.
      std::vector<JsonValue> schemas;
      if (keyword != "patternProperties") {
        schemas.push_back(value);
      } else if (value.is_object()) {
        for (const auto& member : value.object_members()) schemas.push_back(member.second);
      } else {
        return std::nullopt;
      }
      for (const JsonValue& member_schema : schemas) {
        std::optional<JsonValue> failing = Complement(member_schema, ChildPointer(pointer, keyword), false, budget - 1);
        if (!failing || !failing->is_bool() || failing->bool_value()) return std::nullopt;
      }
    } else if (keyword == "uniqueItems" && value.is_bool() && !value.bool_value()) {
      continue;  // asserts nothing
    } else {
      return std::nullopt;
    }
  }
  return AnyOfOrSingle(std::move(disjuncts));
}

// Forms of `not` the generators read themselves: next to enum / const, an excluded list
// filters the values (EnumValueAllowed); on a string-only schema, an excluded list of strings
// is an automaton difference (StringValue).
bool SchemaConverter::NotReadByGenerators(const Node& node) {
  const JsonValue* negated = node.schema.Find("not");
  if (negated == nullptr) return false;
  std::optional<std::vector<JsonValue>> excluded = ListedValuesOnly(*negated);
  bool listed_node = node.schema.Find("enum") != nullptr || node.schema.Find("const") != nullptr;
  if (!listed_node && ExcludesIntegers(node.schema)) return true;  // IntegerValue, NumberValue
  if (!excluded) return !listed_node && NegatedStringLanguage(node).has_value();
  if (listed_node) return true;
  for (const JsonValue& value : *excluded) {
    if (!value.is_string()) return false;
  }
  if (node.schema.Find("type") == nullptr) return false;
  std::vector<std::string> types = AllowedTypes(node);
  return types.size() == 1 && types[0] == "string";
}

std::optional<std::vector<std::string>> SchemaConverter::ExcludedStrings(const Node& node) {
  if (IsIgnored(node, "not") || node.schema.Find("enum") != nullptr || node.schema.Find("const") != nullptr ||
      !NotReadByGenerators(node)) {
    return std::nullopt;
  }
  // The listed values must outlive the loop (a range over `*temporary` would dangle).
  std::optional<std::vector<JsonValue>> listed = ListedValuesOnly(*node.schema.Find("not"));
  if (!listed) return std::nullopt;  // a string language: NegatedStringLanguage
  std::vector<std::string> excluded;
  for (const JsonValue& value : *listed) excluded.push_back(value.string_value());
  return excluded;
}

// if / then / else: values that satisfy `if` must satisfy `then`, the others `else`. The
// condition is decided by the grammar: it becomes two branches, allOf [if, then] and
// allOf [complement of if, else], which no value can both match; the rewritten node keeps
// its other keywords, with the branches added to its allOf.
std::optional<JsonValue> SchemaConverter::WithoutConditional(const Node& node) {
  const JsonValue& condition = *node.schema.Find("if");
  bool declares = node.schema.Find("properties") != nullptr || node.schema.Find("patternProperties") != nullptr ||
                  node.schema.Find("additionalProperties") != nullptr;
  std::optional<JsonValue> failing = Complement(condition, ChildPointer(node.pointer, "if"), declares, 8);
  if (!failing) return std::nullopt;
  std::vector<JsonValue> when_true = {condition}, when_false = {*failing};
  if (const JsonValue* then_schema = node.schema.Find("then")) when_true.push_back(*then_schema);
  if (const JsonValue* else_schema = node.schema.Find("else")) when_false.push_back(*else_schema);
  std::vector<JsonValue::Member> members;
  std::vector<JsonValue> conjuncts;
  for (const auto& [keyword, value] : node.schema.object_members()) {
    if (keyword == "if" || keyword == "then" || keyword == "else") continue;
    if (keyword == "allOf" && value.is_array()) {
      for (const JsonValue& item : value.array_items()) conjuncts.push_back(item);
      continue;
    }
    members.emplace_back(keyword, value);
  }
  conjuncts.push_back(JsonValue::Object({{"anyOf", JsonValue::Array({
      JsonValue::Object({{"allOf", JsonValue::Array(std::move(when_true))}}),
      JsonValue::Object({{"allOf", JsonValue::Array(std::move(when_false))}})})}}));
  members.emplace_back("allOf", JsonValue::Array(std::move(conjuncts)));
  return JsonValue::Object(std::move(members));
}

bool SchemaConverter::HasDependencies(const Node& node) const {
  for (const char* keyword : {"dependentRequired", "dependentSchemas", "dependencies"}) {
    const JsonValue* value = node.schema.Find(keyword);
    if (value != nullptr && value->is_object() && !value->object_members().empty() &&
        !IsIgnored(node, keyword)) {
      return true;
    }
  }
  return false;
}

// dependentRequired / dependentSchemas / draft-7 dependencies as intersections: each
// dependency on name n is `n absent` or `n present and the dependency holds`, i.e.
// {"anyOf": [{"properties": {n: false}}, {"required": [n, ...]} or {"allOf": [S, {"required": [n]}]}]},
// added to the schema's allOf (which the merge distributes).
const JsonValue& SchemaConverter::WithoutDependencies(const Node& node) {
  constexpr size_t kMaxDependencies = 6;
  if (std::optional<JsonValue> split = DependenciesByDiscriminator(node, kMaxDependencies + 1)) {
    synthetic_.push_back(std::move(*split));
    return synthetic_.back();
  }
  std::vector<JsonValue::Member> members;
  std::vector<JsonValue> conjuncts;
  bool declares = node.schema.Find("properties") != nullptr || node.schema.Find("patternProperties") != nullptr ||
                  node.schema.Find("additionalProperties") != nullptr;
  size_t count = 0;
  for (const auto& [keyword, value] : node.schema.object_members()) {
    bool dependency_keyword = keyword == "dependentRequired" || keyword == "dependentSchemas" || keyword == "dependencies";
    if (keyword == "allOf" && value.is_array()) {
      for (const JsonValue& item : value.array_items()) conjuncts.push_back(item);
      continue;
    }
    if (!dependency_keyword) {
      members.emplace_back(keyword, value);
      continue;
    }
    std::string where = " at " + ShowPointer(node.pointer);
    if (!value.is_object()) Invalid("keyword " + Quoted(keyword) + where + " must be an object");
    for (const auto& [name, dependency] : value.object_members()) {
      if (!dependency.is_array() && !dependency.is_object() && !dependency.is_bool()) {
        Invalid("keyword " + Quoted(keyword) + where + " must map names to arrays of names or schemas");
      }
      // A dependency on a name the objects never have always holds.
      if (NeverAMember(node, name)) continue;
      // One on a name they always have is the dependency itself: `required` names (which
      // `required` places as it does its own) or the schema, intersected with the object.
      if (AlwaysAMember(node, name)) {
        bool names_form = keyword == "dependentRequired" || (keyword == "dependencies" && dependency.is_array());
        if (names_form && (!dependency.is_array() || !std::all_of(dependency.array_items().begin(),
                                                                   dependency.array_items().end(),
                                                                   [](const JsonValue& n) { return n.is_string(); }))) {
          Invalid("keyword " + Quoted(keyword) + where + " must map names to arrays of names");
        }
        conjuncts.push_back(names_form ? JsonValue::Object({{"required", dependency}}) : dependency);
        continue;
      }
      if (++count > kMaxDependencies) {
        Unsupported("unsupported keyword " + Quoted(keyword) + where + ": more than " +
                    std::to_string(kMaxDependencies) + " dependencies (each doubles the object grammar)");
        break;
      }
      // Without declared members, a strict-mode object accepts any; `properties: {n: false}`
      // must not change that.
      std::vector<JsonValue::Member> absent = {{"properties", JsonValue::Object({{name, JsonValue::Bool(false)}})}};
      if (!declares) absent.emplace_back("additionalProperties", JsonValue::Bool(true));
      JsonValue present;
      bool required_form = keyword == "dependentRequired" || (keyword == "dependencies" && dependency.is_array());
      if (required_form) {
        if (!dependency.is_array()) Invalid("keyword " + Quoted(keyword) + where + " must map names to arrays of names");
        std::vector<JsonValue> names = {JsonValue::String(name)};
        for (const JsonValue& other : dependency.array_items()) {
          if (!other.is_string()) Invalid("keyword " + Quoted(keyword) + where + " must map names to arrays of names");
          names.push_back(other);
        }
        // Members are generated in declared order. A name not declared in `properties` is
        // placed as `required` places its own undeclared names, after the declared members:
        // exact only where no other undeclared member can appear (additionalProperties
        // false, or strict mode without it), since next to other undeclared members a
        // valid object may list the name anywhere among them.
        const JsonValue* properties = node.schema.Find("properties");
        const JsonValue* additional = node.schema.Find("additionalProperties");
        const bool no_other_undeclared =
            node.schema.Find("patternProperties") == nullptr &&
            (additional != nullptr ? additional->is_bool() && !additional->bool_value()
                                   : options_.strict_mode && properties != nullptr);
        for (const JsonValue& required_name : names) {
          if (!no_other_undeclared && (properties == nullptr || !properties->is_object() ||
                                       properties->Find(required_name.string_value()) == nullptr)) {
            Unsupported("unsupported keyword " + Quoted(keyword) + where + ": name '" +
                        required_name.string_value() + "' is not declared in 'properties' next to other "
                        "undeclared members (its position among them would be arbitrary)");
            break;
          }
        }
        present = JsonValue::Object({{"required", JsonValue::Array(std::move(names))}});
      } else {
        if (!dependency.is_object() && !dependency.is_bool()) {
          Invalid("keyword " + Quoted(keyword) + where + " must map names to schemas");
        }
        present = JsonValue::Object({{"allOf", JsonValue::Array({dependency,
            JsonValue::Object({{"required", JsonValue::Array({JsonValue::String(name)})}})})}});
      }
      conjuncts.push_back(JsonValue::Object({{"anyOf", JsonValue::Array({JsonValue::Object(std::move(absent)), present})}}));
    }
  }
  if (!conjuncts.empty()) members.emplace_back("allOf", JsonValue::Array(std::move(conjuncts)));
  synthetic_.push_back(JsonValue::Object(std::move(members)));
  return synthetic_.back();
}

}  // namespace schema_internal
}  // namespace xg2
