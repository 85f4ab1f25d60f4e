// SchemaConverter::BoundedIntegersListed (schema_converter_internal.h): an integer schema
// with both bounds and a `not` whose complement is no schema (e.g. `not: {multipleOf: 2}`)
// has finitely many values, so it is listed: the integers between the bounds become its
// `enum`, and EnumOrConst keeps exactly those that validate against every sibling keyword,
// the `not` included (enum_siblings.cc evaluates it on each concrete value).
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "frontends/json_schema/schema_converter_internal.h"
#include "support/dcheck.h"

namespace xg2 {
namespace schema_internal {

namespace {

// At most this many integers are listed; wider ranges keep the policy error.
constexpr long long kMaxListedIntegers = 256;
// Bounds beyond this magnitude are not read (a double holds every integer up to 2^53).
constexpr double kLargestBound = 9007199254740992.0;

// The tightest numeric bound among `keywords` on one side (lower: the largest, upper: the
// smallest); nullopt when none is a number. Draft 4's boolean exclusive* are not bounds
// themselves (they qualify minimum/maximum, which the listed values are checked against).
std::optional<double> TightestBound(const JsonValue& schema, std::initializer_list<const char*> keywords, bool lower) {
  std::optional<double> bound;
  for (const char* keyword : keywords) {
    const JsonValue* value = schema.Find(keyword);
    if (value == nullptr || !value->is_number()) continue;
    double v = value->number_value();
    if (!bound || (lower ? v > *bound : v < *bound)) bound = v;
  }
  return bound;
}

}  // namespace

std::optional<JsonValue> SchemaConverter::BoundedIntegersListed(const Node& node) {
  const JsonValue* type = node.schema.Find("type");
  if (type == nullptr || node.schema.Find("enum") != nullptr || node.schema.Find("const") != nullptr) {
    return std::nullopt;
  }
  std::vector<std::string> types = AllowedTypes(node);
  if (types.size() != 1 || types[0] != "integer") return std::nullopt;
  std::optional<double> lower = TightestBound(node.schema, {"minimum", "exclusiveMinimum"}, true);
  std::optional<double> upper = TightestBound(node.schema, {"maximum", "exclusiveMaximum"}, false);
  if (!lower || !upper || !(std::fabs(*lower) <= kLargestBound) || !(std::fabs(*upper) <= kLargestBound)) {
    return std::nullopt;
  }
  // Every integer the schema accepts lies in [first, last]; the exclusive ends and the other
  // keywords are decided value by value.
  const long long first = static_cast<long long>(std::ceil(*lower));
  const long long last = static_cast<long long>(std::floor(*upper));
  if (last >= first && last - first + 1 > kMaxListedIntegers) return std::nullopt;
  std::vector<JsonValue> values;
  for (long long v = first; v <= last; ++v) {
    values.push_back(JsonValue::Number(std::to_string(v), static_cast<double>(v)));
  }
  XG2_DCHECK(values.size() <= static_cast<size_t>(kMaxListedIntegers), "more integers listed than the bound");
  std::vector<JsonValue::Member> members = node.schema.object_members();
  members.emplace_back("enum", JsonValue::Array(std::move(values)));
  return JsonValue::Object(std::move(members));
}

}  // namespace schema_internal
}  // namespace xg2
