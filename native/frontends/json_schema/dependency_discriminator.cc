// SchemaConverter::DependenciesByDiscriminator (schema_converter_internal.h): many schema
// dependencies that all constrain one member D with listed values, as in
//   "dependencies": {"maxGrams": {"properties": {"type": {"enum": ["autocomplete"]}}}, ...}
// next to `"type": {"enum": [...]}`. Each dependency on X holds when X is absent, when D is
// absent (`properties` asserts nothing then), or when D's value satisfies X's schema. So the
// object splits by D's value: D absent (every dependency holds), or D = v, where exactly the
// names X whose schema v fails are absent. Values with the same absent names share a branch,
// so the object grammar is written once per distinct set of names instead of 2^n times.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "frontends/json_schema/schema_converter_internal.h"

namespace xg2 {
namespace schema_internal {

namespace {

bool IsDependencyKeyword(const std::string& keyword) {
  return keyword == "dependentRequired" || keyword == "dependentSchemas" || keyword == "dependencies";
}

// The member `{"properties": {D: S}}` names, or nullptr when `dependency` has another form.
const JsonValue::Member* OnlyMemberConstraint(const JsonValue& dependency) {
  if (!dependency.is_object() || dependency.object_members().size() != 1) return nullptr;
  const auto& [keyword, properties] = dependency.object_members()[0];
  if (keyword != "properties" || !properties.is_object() || properties.object_members().size() != 1) return nullptr;
  return &properties.object_members()[0];
}

}  // namespace

std::optional<JsonValue> SchemaConverter::DependenciesByDiscriminator(const Node& node, size_t min_count) {
  std::string discriminator;
  std::vector<std::pair<std::string, const JsonValue*>> dependencies;  // trigger name, D's schema
  for (const auto& [keyword, value] : node.schema.object_members()) {
    if (!IsDependencyKeyword(keyword)) continue;
    if (keyword == "dependentRequired" || !value.is_object()) return std::nullopt;
    for (const auto& [name, dependency] : value.object_members()) {
      if (NeverAMember(node, name)) continue;  // always holds
      const JsonValue::Member* constraint = OnlyMemberConstraint(dependency);
      if (constraint == nullptr || (!discriminator.empty() && constraint->first != discriminator)) {
        return std::nullopt;
      }
      discriminator = constraint->first;
      dependencies.emplace_back(name, &constraint->second);
    }
  }
  if (dependencies.size() < min_count) return std::nullopt;
  const JsonValue* properties = node.schema.Find("properties");
  const JsonValue* declared = properties != nullptr && properties->is_object() ? properties->Find(discriminator) : nullptr;
  const JsonValue* listed = declared != nullptr && declared->is_object() ? declared->Find("enum") : nullptr;
  if (listed == nullptr || !listed->is_array()) return std::nullopt;

  // For each listed value of D, the trigger names whose schema it fails, in schema order.
  const std::string pointer = ChildPointer(ChildPointer(node.pointer, "properties"), discriminator);
  std::map<std::vector<std::string>, std::vector<JsonValue>> values_by_absent_names;
  std::vector<std::vector<std::string>> order;
  for (const JsonValue& value : listed->array_items()) {
    std::vector<std::string> absent;
    bool possible = true;
    for (const auto& [name, schema] : dependencies) {
      if (ListedValueSatisfies(value, *schema, pointer)) continue;
      if (name == discriminator) possible = false;  // D present with a value its own dependency rejects
      absent.push_back(name);
    }
    if (!possible) continue;
    auto [it, fresh] = values_by_absent_names.try_emplace(absent);
    if (fresh) order.push_back(absent);
    it->second.push_back(value);
  }

  const bool declares = properties != nullptr || node.schema.Find("patternProperties") != nullptr ||
                        node.schema.Find("additionalProperties") != nullptr;
  std::vector<JsonValue::Member> absent_discriminator = {
      {"properties", JsonValue::Object({{discriminator, JsonValue::Bool(false)}})}};
  if (!declares) absent_discriminator.emplace_back("additionalProperties", JsonValue::Bool(true));
  std::vector<JsonValue> branches = {JsonValue::Object(std::move(absent_discriminator))};
  for (const std::vector<std::string>& absent : order) {
    std::vector<JsonValue::Member> members = {
        {discriminator, JsonValue::Object({{"enum", JsonValue::Array(values_by_absent_names[absent])}})}};
    for (const std::string& name : absent) members.emplace_back(name, JsonValue::Bool(false));
    branches.push_back(JsonValue::Object({{"required", JsonValue::Array({JsonValue::String(discriminator)})},
                                          {"properties", JsonValue::Object(std::move(members))}}));
  }

  std::vector<JsonValue::Member> members;
  std::vector<JsonValue> conjuncts;
  for (const auto& [keyword, value] : node.schema.object_members()) {
    if (IsDependencyKeyword(keyword)) continue;
    if (keyword == "allOf" && value.is_array()) {
      for (const JsonValue& item : value.array_items()) conjuncts.push_back(item);
      continue;
    }
    members.emplace_back(keyword, value);
  }
  conjuncts.push_back(JsonValue::Object({{"anyOf", JsonValue::Array(std::move(branches))}}));
  members.emplace_back("allOf", JsonValue::Array(std::move(conjuncts)));
  return JsonValue::Object(std::move(members));
}

}  // namespace schema_internal
}  // namespace xg2
