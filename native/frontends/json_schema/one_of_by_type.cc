// JSON Schema -> EBNF: `oneOf` split by JSON type. A value has exactly one JSON type, so
//
//   oneOf [B_1..B_n] = anyOf over types T of allOf [type T, oneOf [B_i : B_i allows T]]
//
// and within T a branch whose keywords all concern other types (e.g. `required` and
// `properties` for a number) accepts every value of T. Hand-written schemas often leave
// out `type` on object branches; they then overlap on every non-object, which this split
// decides without a complement (two such branches rule out the type; one alone is the
// type), and leaves the object part to the usual disjointness decision, now with `type`
// known. Used only when OneOf's direct construction is refused.
//
// OneOfWithoutSharedTypes is the first step of that split alone, taken before any
// complement is built: a type group that two branches accept whole has no value with
// exactly one branch, so every branch is narrowed to the other types,
//
//   oneOf [B_1..B_n] = oneOf [allOf [type K, B_i]]   (K: the types not accepted whole twice)
//
// which is the same language (a value outside K fails every narrowed branch and, before,
// held in two). The complements of the narrowed branches need not say "every value of
// the shared types" again, and branches that differ only on their objects become disjoint.
#include <iterator>
#include <string>
#include <vector>

#include "frontends/json_schema/schema_converter_internal.h"
#include "support/dcheck.h"

namespace xg2 {
namespace schema_internal {

namespace {

struct TypeGroup {
  const char* name;  // the `type` keyword value
  uint8_t bits;      // the JsonTypeBit values of that name
};

// "integer" lies inside "number": one group, so that the groups partition the values.
constexpr TypeGroup kTypeGroups[] = {
    {"null", kNullType},     {"boolean", kBooleanType}, {"object", kObjectType},
    {"array", kArrayType},   {"number", kNumberType | kIntegerType}, {"string", kStringType},
};

// True when flat schema `schema` accepts every value of `group`: its `type` (if any) names
// the whole group and each other keyword is an annotation or applies to another type only.
bool AcceptsWholeGroup(const JsonValue& schema, const TypeGroup& group) {
  if (schema.is_bool()) return schema.bool_value();
  if (!schema.is_object()) return false;
  for (const auto& [keyword, value] : schema.object_members()) {
    if (IsPassiveKeyword(keyword) || keyword == "nullable") continue;
    if (keyword == "type") {
      if ((PossibleTypes(JsonValue::Object({{"type", value}})) & group.bits) != group.bits) return false;
      continue;
    }
    std::string applies_to = TypeOfKeyword(keyword);
    if (applies_to.empty() || applies_to == group.name) return false;
  }
  return true;
}

}  // namespace

std::optional<JsonValue> SchemaConverter::OneOfWithoutSharedTypes(const Node& node,
                                                                  const std::vector<JsonValue>& branches,
                                                                  std::vector<PointerRename>* renames) {
  std::vector<uint8_t> possible(branches.size(), kAllJsonTypes);
  std::vector<std::optional<std::vector<JsonValue>>> listed(branches.size());
  std::vector<int> whole(std::size(kTypeGroups), 0);
  for (size_t i = 0; i < branches.size(); ++i) {
    bool exact = true;
    std::optional<JsonValue> flat = FlatBranch(branches[i], node.pointer, &exact);
    if (!flat) continue;
    possible[i] = PossibleTypes(*flat);
    if (!exact) continue;
    listed[i] = ListedValuesOnly(*flat);
    for (size_t g = 0; g < std::size(kTypeGroups); ++g) {
      if (AcceptsWholeGroup(*flat, kTypeGroups[g])) ++whole[g];
    }
  }
  // The types left: those fewer than two branches accept whole.
  std::vector<JsonValue> kept_names;
  uint8_t kept_bits = 0;
  for (size_t g = 0; g < std::size(kTypeGroups); ++g) {
    if (whole[g] >= 2) continue;
    kept_names.push_back(JsonValue::String(kTypeGroups[g].name));
    kept_bits |= kTypeGroups[g].bits;
  }
  if (kept_bits == kAllJsonTypes) return std::nullopt;
  if (kept_names.empty()) return JsonValue::Bool(false);
  const JsonValue kept_types = JsonValue::Object({{"type", JsonValue::Array(std::move(kept_names))}});
  std::vector<JsonValue> narrowed;
  const std::string base = ChildPointer(node.pointer, "oneOf");
  std::vector<PointerRename> wrapped;
  for (size_t i = 0; i < branches.size(); ++i) {
    if ((possible[i] & ~kept_bits) == 0) {
      narrowed.push_back(branches[i]);  // already within the kept types: as written
    } else if (listed[i]) {
      // A list of values keeps its values of the kept types (and stays a list, which the
      // oneOf decides value by value).
      std::vector<JsonValue> values;
      for (const JsonValue& value : *listed[i]) {
        if (PossibleTypes(JsonValue::Object({{"const", value}})) & kept_bits) values.push_back(value);
      }
      narrowed.push_back(values.empty() ? JsonValue::Bool(false)
                                        : JsonValue::Object({{"enum", JsonValue::Array(std::move(values))}}));
    } else {
      narrowed.push_back(JsonValue::Object({{"allOf", JsonValue::Array({kept_types, branches[i]})}}));
      const std::string branch = base + "/" + std::to_string(i);
      wrapped.push_back({branch + "/allOf/1", branch, true});  // the user's branch
      wrapped.push_back({branch + "/allOf", branch, false});   // the type filter
    }
  }
  // Only where the narrowed branches are then disjoint (an anyOf, no complement at all):
  // elsewhere the narrowed complements can cost more than the route they replace (automata
  // past their limits on corpus schemas that convert without the narrowing).
  if (!BranchesDisjoint(narrowed, node.pointer)) return std::nullopt;
  renames->insert(renames->end(), wrapped.begin(), wrapped.end());
  std::vector<JsonValue::Member> members;
  for (const auto& [keyword, value] : node.schema.object_members()) {
    members.emplace_back(keyword, keyword == "oneOf" ? JsonValue::Array(narrowed) : value);
  }
  return JsonValue::Object(std::move(members));
}

std::optional<JsonValue> SchemaConverter::OneOfByType(const Node& node, const std::vector<JsonValue>& branches,
                                                      std::vector<PointerRename>* renames) {
  // Per branch: the types it allows and whether it accepts each whole group, from the
  // flattened branch (a superset when alternatives were left out: then never "whole").
  std::vector<uint8_t> possible(branches.size(), kAllJsonTypes);
  std::vector<std::optional<JsonValue>> flat(branches.size());
  std::vector<bool> exact(branches.size(), false);
  for (size_t i = 0; i < branches.size(); ++i) {
    bool is_exact = true;
    flat[i] = FlatBranch(branches[i], node.pointer, &is_exact);
    exact[i] = flat[i].has_value() && is_exact;
    if (flat[i]) possible[i] = PossibleTypes(*flat[i]);
  }
  int groups_used = 0;
  for (const TypeGroup& group : kTypeGroups) {
    for (uint8_t types : possible) {
      if (types & group.bits) {
        ++groups_used;
        break;
      }
    }
  }
  if (groups_used < 2) return std::nullopt;
  std::vector<JsonValue> parts;
  const std::string base = ChildPointer(node.pointer, "oneOf");
  auto branch_pointer = [&](size_t i) { return base + "/" + std::to_string(i); };
  renames->push_back({ChildPointer(node.pointer, "anyOf"), node.pointer, false});
  for (const TypeGroup& group : kTypeGroups) {
    std::vector<JsonValue> live, partial;
    std::vector<size_t> live_index, partial_index;
    int whole = 0;
    for (size_t i = 0; i < branches.size(); ++i) {
      if ((possible[i] & group.bits) == 0) continue;  // rejects every value of the group
      live.push_back(branches[i]);
      live_index.push_back(i);
      if (exact[i] && AcceptsWholeGroup(*flat[i], group)) {
        ++whole;
      } else {
        partial.push_back(branches[i]);
        partial_index.push_back(i);
      }
    }
    // Two branches that accept every value of the group: no value of it has exactly one.
    if (live.empty() || whole >= 2) continue;
    JsonValue type = JsonValue::Object({{"type", JsonValue::String(group.name)}});
    const std::string part = ChildPointer(ChildPointer(node.pointer, "anyOf"), std::to_string(parts.size())) + "/allOf";
    renames->push_back({part, node.pointer, false});  // the part and its type filter: the oneOf
    if (whole == 1) {
      // The whole branch holds for every value of the group, so exactly one holds where
      // every other branch fails: only their complements (`not`) are needed.
      // A branch without a complement keeps OneOf's own refusal (not one at this rewrite's pointers).
      std::vector<JsonValue> conjuncts = {type};
      for (size_t k = 0; k < partial.size(); ++k) {
        if (!Complement(partial[k], node.pointer, false, 8)) return std::nullopt;
        conjuncts.push_back(JsonValue::Object({{"not", partial[k]}}));
        renames->push_back({part + "/" + std::to_string(k + 1) + "/not", branch_pointer(partial_index[k]), true});
      }
      parts.push_back(JsonValue::Object({{"allOf", JsonValue::Array(std::move(conjuncts))}}));
    } else if (live.size() == 1) {
      parts.push_back(JsonValue::Object({{"allOf", JsonValue::Array({type, live[0]})}}));
      renames->push_back({part + "/1", branch_pointer(live_index[0]), true});
    } else {
      for (size_t k = 0; k < live.size(); ++k) {
        renames->push_back({part + "/1/oneOf/" + std::to_string(k), branch_pointer(live_index[k]), true});
      }
      parts.push_back(JsonValue::Object(
          {{"allOf", JsonValue::Array({type, JsonValue::Object({{"oneOf", JsonValue::Array(std::move(live))}})})}}));
    }
  }
  if (parts.empty()) return JsonValue::Bool(false);
  return JsonValue::Object({{"anyOf", JsonValue::Array(std::move(parts))}});
}

}  // namespace schema_internal
}  // namespace xg2
