// JSON Schema -> EBNF: the objects of one oneOf branch that fail another, when the other
// branch has no complement of its own (a member typed `integer`, with `items`, a `format`).
//
// Branch A's objects are closed: their members are A's declared and required names. Such
// an object fails branch B exactly when B's type excludes objects, a name B requires is
// absent, or some member m present has a value outside B's schema for m (B's property, its
// additionalProperties, or nothing when B leaves m open). Per member that is: nothing when
// B accepts every value of m or the same schema as A; "m present" when B forbids m or A's
// and B's schemas for m are disjoint; else "m present with a value in the complement of
// B's schema for m", which needs only that member schema to have a complement. So the
// complement of B is built inside A, from A's finite set of names; a B that lists values
// (enum / const) likewise, object by object (ListedComplementWithin). Arrays when their item
// schemas are disjoint (ArrayComplementWithin).
#include <set>
#include <string>
#include <vector>

#include "frontends/json_schema/regular_language.h"
#include "frontends/json_schema/schema_converter_internal.h"
#include "support/cancellation.h"
#include "support/error.h"
#include "support/json.h"

namespace xg2 {
namespace schema_internal {

namespace {

// True when `schema` accepts every value: `true`, or an object of annotations only.
bool AcceptsAll(const JsonValue& schema) {
  if (schema.is_bool()) return schema.bool_value();
  if (!schema.is_object()) return false;
  for (const auto& member : schema.object_members()) {
    if (!IsPassiveKeyword(member.first)) return false;
  }
  return true;
}

bool IsFalse(const JsonValue* schema) { return schema != nullptr && schema->is_bool() && !schema->bool_value(); }

std::set<std::string> StringList(const JsonValue* list) {
  std::set<std::string> names;
  if (list == nullptr || !list->is_array()) return names;
  for (const JsonValue& name : list->array_items()) {
    if (name.is_string()) names.insert(name.string_value());
  }
  return names;
}

}  // namespace

std::optional<JsonValue> SchemaConverter::ComplementWithin(const JsonValue& a_in, const JsonValue& b_in,
                                                           const std::string& pointer) {
  bool exact_a = true, exact_b = true;
  std::optional<JsonValue> flat_a = FlatBranch(a_in, pointer, &exact_a);
  std::optional<JsonValue> flat_b = FlatBranch(b_in, pointer, &exact_b);
  // A may be a superset (its objects' names and member schemas only over-approximate);
  // B must be exact, since its complement is what is built.
  if (!flat_a || !flat_b || !exact_b || !flat_a->is_object() || !flat_b->is_object()) return std::nullopt;
  const JsonValue& a = *flat_a;
  const JsonValue& b = *flat_b;
  if (PossibleTypes(a) == kArrayType) return ArrayComplementWithin(a, b, pointer);
  // A listed B is decided on A's other types too (ListedComplementWithin); any other B only
  // within objects.
  const bool objects_only = PossibleTypes(a) == kObjectType;
  const std::optional<std::vector<JsonValue>> listed = ListedValuesOnly(b);
  if (!objects_only && !listed) return std::nullopt;
  if (objects_only && (PossibleTypes(b) & kObjectType) == 0) return JsonValue::Bool(true);
  // A's objects are closed: additionalProperties false, or strict mode next to declared
  // properties (undeclared members are never generated); no keyword may add members.
  for (const char* keyword : {"patternProperties", "if", "then", "else", "not", "dependentSchemas", "dependencies",
                              "dependentRequired", "$ref", "allOf", "anyOf", "oneOf", "unevaluatedProperties"}) {
    if (a.Find(keyword) != nullptr) return std::nullopt;
  }
  const JsonValue* a_properties = a.Find("properties");
  const JsonValue* a_additional = a.Find("additionalProperties");
  bool closed = a_additional != nullptr ? IsFalse(a_additional) : options_.strict_mode && a_properties != nullptr;
  if (!closed || (a_properties != nullptr && !a_properties->is_object())) return std::nullopt;
  if (listed) return ListedComplementWithin(a, *listed, objects_only, pointer);
  // B may only say which members it requires and what their values are.
  for (const auto& [keyword, value] : b.object_members()) {
    if (IsPassiveKeyword(keyword) || keyword == "type" || keyword == "nullable" || keyword == "properties" ||
        keyword == "required" || keyword == "additionalProperties" || keyword == "patternProperties") {
      continue;
    }
    return std::nullopt;
  }
  const JsonValue* b_properties = b.Find("properties");
  const JsonValue* b_additional = b.Find("additionalProperties");
  const JsonValue* b_patterns = b.Find("patternProperties");
  if (b_properties != nullptr && !b_properties->is_object()) return std::nullopt;
  if (b_patterns != nullptr && !b_patterns->is_object()) return std::nullopt;
  // B's schema for a member: its declared schema and those of the patterns that match the
  // name, all of which apply; additionalProperties only where none does.
  const JsonValue any = JsonValue::Bool(true);
  auto schema_in_b = [&](const std::string& name) -> std::optional<JsonValue> {
    std::vector<JsonValue> parts;
    if (const JsonValue* declared = b_properties != nullptr ? b_properties->Find(name) : nullptr) {
      parts.push_back(*declared);
    }
    if (b_patterns != nullptr) {
      std::u32string quoted = DecodeUtf8ToU32(DumpJsonString(name));
      try {
        for (const auto& [pattern, schema] : b_patterns->object_members()) {
          if (PatternNames(pattern).Accepts(quoted)) parts.push_back(schema);
        }
      } catch (const UnsupportedSchemaError&) {
        return std::nullopt;
      } catch (const ResourceLimitError&) {
        return std::nullopt;
      } catch (const RegexError&) {
        return std::nullopt;
      }
    }
    if (parts.empty()) return b_additional != nullptr ? *b_additional : any;
    if (parts.size() == 1) return parts[0];
    return JsonValue::Object({{"allOf", JsonValue::Array(std::move(parts))}});
  };
  const std::set<std::string> a_required = StringList(a.Find("required"));
  std::set<std::string> names = a_required;
  if (a_properties != nullptr) {
    for (const auto& [name, schema] : a_properties->object_members()) {
      if (!IsFalse(&schema)) names.insert(name);
    }
  }
  std::vector<JsonValue> disjuncts;
  for (const std::string& name : StringList(b.Find("required"))) {
    if (a_required.count(name) > 0) continue;
    if (names.count(name) == 0) return JsonValue::Bool(true);  // A never has it: B always fails
    disjuncts.push_back(JsonValue::Object({{"properties", JsonValue::Object({{name, JsonValue::Bool(false)}})}}));
  }
  for (const std::string& name : names) {
    ThrowIfCancelled();
    const JsonValue* declared_a = a_properties != nullptr ? a_properties->Find(name) : nullptr;
    const JsonValue& in_a = declared_a != nullptr ? *declared_a : any;
    std::optional<JsonValue> schema_b = schema_in_b(name);
    if (!schema_b) return std::nullopt;
    const JsonValue& in_b = *schema_b;
    if (AcceptsAll(in_b) || JsonEquals(in_a, in_b)) continue;
    bool present_fails = IsFalse(&in_b) || Excludes(in_a, in_b, pointer, 8, true);
    if (present_fails) {
      if (a_required.count(name) > 0) return JsonValue::Bool(true);
      disjuncts.push_back(JsonValue::Object({{"required", JsonValue::Array({JsonValue::String(name)})}}));
      continue;
    }
    std::optional<JsonValue> outside = Complement(in_b, pointer, false, 8);
    if (!outside) return std::nullopt;
    if (outside->is_bool() && !outside->bool_value()) continue;
    disjuncts.push_back(JsonValue::Object({{"required", JsonValue::Array({JsonValue::String(name)})},
                                           {"properties", JsonValue::Object({{name, *outside}})}}));
  }
  if (disjuncts.empty()) return JsonValue::Bool(false);  // every object of A satisfies B
  if (disjuncts.size() == 1) return disjuncts[0];
  return JsonValue::Object({{"anyOf", JsonValue::Array(std::move(disjuncts))}});
}

// B a list of values (enum / const): an object of A equals a listed object C exactly when
// it has C's names, each with C's value, and no other member. A's objects are closed, so
// "another member" is one of A's finitely many names outside C's. A C that names a member
// A never has, or lacks one A requires, never equals one of A's objects. The forms written
// (required / properties) hold for every non-object, which no listed object equals; a
// listed non-object is complemented as a value (when A has other types than object).
std::optional<JsonValue> SchemaConverter::ListedComplementWithin(const JsonValue& a, const std::vector<JsonValue>& listed,
                                                                 bool objects_only, const std::string& pointer) {
  const JsonValue* a_properties = a.Find("properties");
  const std::set<std::string> a_required = StringList(a.Find("required"));
  std::set<std::string> names = a_required;
  if (a_properties != nullptr) {
    for (const auto& [name, schema] : a_properties->object_members()) {
      if (!IsFalse(&schema)) names.insert(name);
    }
  }
  std::vector<JsonValue> conjuncts;
  for (const JsonValue& value : listed) {
    ThrowIfCancelled();
    if (!value.is_object()) {
      if (objects_only) continue;
      std::optional<JsonValue> other = Complement(JsonValue::Object({{"const", value}}), pointer, false, 8);
      if (!other) return std::nullopt;
      conjuncts.push_back(std::move(*other));
      continue;
    }
    std::set<std::string> value_names;
    bool can_equal = true;
    for (const auto& [name, member] : value.object_members()) {
      can_equal = can_equal && names.count(name) > 0 && value_names.insert(name).second;
    }
    for (const std::string& name : a_required) can_equal = can_equal && value_names.count(name) > 0;
    if (!can_equal) continue;
    std::vector<JsonValue> differs;
    for (const auto& [name, member] : value.object_members()) {
      if (a_required.count(name) == 0) {
        differs.push_back(JsonValue::Object({{"properties", JsonValue::Object({{name, JsonValue::Bool(false)}})}}));
      }
      std::optional<JsonValue> other = Complement(JsonValue::Object({{"const", member}}), pointer, false, 8);
      if (!other) return std::nullopt;
      if (other->is_bool() && !other->bool_value()) continue;
      differs.push_back(JsonValue::Object({{"required", JsonValue::Array({JsonValue::String(name)})},
                                           {"properties", JsonValue::Object({{name, *other}})}}));
    }
    for (const std::string& name : names) {
      if (value_names.count(name) == 0) {
        differs.push_back(JsonValue::Object({{"required", JsonValue::Array({JsonValue::String(name)})}}));
      }
    }
    if (differs.empty()) {  // A's only object is C
      if (objects_only) return JsonValue::Bool(false);
      std::vector<JsonValue> others;
      for (const char* type : {"null", "boolean", "number", "string", "array"}) others.push_back(JsonValue::String(type));
      conjuncts.push_back(JsonValue::Object({{"type", JsonValue::Array(std::move(others))}}));
      continue;
    }
    conjuncts.push_back(differs.size() == 1 ? differs[0]
                                            : JsonValue::Object({{"anyOf", JsonValue::Array(std::move(differs))}}));
  }
  if (conjuncts.empty()) return JsonValue::Bool(true);  // no listed value is one of A's objects
  if (conjuncts.size() == 1) return conjuncts[0];
  return JsonValue::Object({{"allOf", JsonValue::Array(std::move(conjuncts))}});
}

// Arrays: B made of type / items (one schema). An array of A fails B exactly when some item
// fails B's items; when A's and B's item schemas are disjoint that is "A's array is not
// empty". Other shapes would need "contains an item outside B's items": nullopt.
std::optional<JsonValue> SchemaConverter::ArrayComplementWithin(const JsonValue& a, const JsonValue& b,
                                                                const std::string& pointer) {
  if ((PossibleTypes(b) & kArrayType) == 0) return JsonValue::Bool(true);
  for (const auto& [keyword, value] : b.object_members()) {
    if (IsPassiveKeyword(keyword) || keyword == "type" || keyword == "nullable") continue;
    if (keyword == "items" && (value.is_object() || value.is_bool())) continue;
    return std::nullopt;
  }
  for (const char* keyword : {"prefixItems", "additionalItems", "contains", "unevaluatedItems", "allOf", "anyOf",
                              "oneOf", "not", "if", "$ref"}) {
    if (a.Find(keyword) != nullptr) return std::nullopt;
  }
  const JsonValue* items_b = b.Find("items");
  if (items_b == nullptr || AcceptsAll(*items_b)) return JsonValue::Bool(false);  // B accepts every array
  const JsonValue* items_a = a.Find("items");
  if (items_a != nullptr && items_a->is_array()) return std::nullopt;
  const JsonValue any = JsonValue::Bool(true);
  if (!Excludes(items_a != nullptr ? *items_a : any, *items_b, pointer, 8, true)) return std::nullopt;
  const JsonValue* min_items = a.Find("minItems");
  if (min_items != nullptr && min_items->is_number() && min_items->number_value() >= 1) return JsonValue::Bool(true);
  return JsonValue::Object({{"minItems", JsonValue::Number("1", 1.0)}});
}

}  // namespace schema_internal
}  // namespace xg2
