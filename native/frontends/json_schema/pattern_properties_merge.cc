// JSON Schema -> EBNF: properties / patternProperties / additionalProperties of a ∩ b when
// either side has patternProperties. A member name n must satisfy each side's rule for n:
// its `properties` entry, else (and also for declared names) every pattern matching n, else
// its additionalProperties. The merged schema keeps both sides' patterns (they apply to
// declared names too), conjoins the declared entries with the other side's
// additionalProperties where none of that side's patterns matches the name (decided on the
// pattern automata), and conjoins both additionalProperties. A name matched by a pattern of
// one side x only also needs the other side's additionalProperties: nothing to add when
// that schema is true or the other side's patterns and names cover every such name; added
// to the pattern's schema when no name the pattern matches is the other side's (no overlap
// with its patterns or declared names, decided on the automata); refused otherwise (no flat
// schema says "names of this pattern outside those patterns").
#include <algorithm>
#include <string>
#include <vector>

#include "frontends/json_schema/regular_language.h"
#include "frontends/json_schema/schema_converter_internal.h"
#include "support/cancellation.h"
#include "support/error.h"

namespace xg2 {
namespace schema_internal {

namespace {

using Members = std::vector<JsonValue::Member>;

bool TrueSchema(const JsonValue* schema) {
  return schema == nullptr || (schema->is_bool() && schema->bool_value()) ||
         (schema->is_object() && schema->object_members().empty());
}

const JsonValue* Member(const JsonValue* object, const std::string& name) {
  return object == nullptr || !object->is_object() ? nullptr : object->Find(name);
}

JsonValue Conjunction(std::vector<JsonValue> schemas) {
  if (schemas.size() == 1) return schemas[0];
  return JsonValue::Object({{"allOf", JsonValue::Array(std::move(schemas))}});
}

void Replace(Members* members, const std::string& key, std::optional<JsonValue> value) {
  for (auto it = members->begin(); it != members->end();) {
    it = it->first == key ? members->erase(it) : it + 1;
  }
  if (value) members->emplace_back(key, std::move(*value));
}

}  // namespace

bool SchemaConverter::SomePatternMatches(const JsonValue* patterns, const std::string& name) {
  if (patterns == nullptr || !patterns->is_object()) return false;
  std::u32string quoted = DecodeUtf8ToU32(DumpJsonString(name));
  for (const auto& [pattern, schema] : patterns->object_members()) {
    if (PatternNames(pattern).Accepts(quoted)) return true;
  }
  return false;
}

void SchemaConverter::MergePatternMembers(const JsonValue& a, const JsonValue& b, const std::string& pointer,
                                          std::vector<JsonValue::Member>* out) {
  const JsonValue* sides[2] = {&a, &b};
  std::string where = " at " + ShowPointer(pointer);
  try {
    // A name only side x's patterns match, and side y does not declare, needs y's
    // additionalProperties too: needs_other[x] lists the patterns that take it.
    std::vector<std::string> needs_other[2];
    for (int x = 0; x < 2; ++x) {
      const JsonValue& mine = *sides[x];
      const JsonValue& other = *sides[1 - x];
      const JsonValue* patterns = mine.Find("patternProperties");
      if (patterns == nullptr || !patterns->is_object() || TrueSchema(other.Find("additionalProperties"))) continue;
      const JsonValue* other_patterns = other.Find("patternProperties");
      const JsonValue* other_props = other.Find("properties");
      for (const auto& [pattern, schema] : patterns->object_members()) {
        ThrowIfCancelled();
        const CodepointDfa& names = PatternNames(pattern);
        CodepointDfa alone = names;
        bool overlaps = false;
        if (other_patterns != nullptr && other_patterns->is_object()) {
          for (const auto& [other_pattern, other_schema] : other_patterns->object_members()) {
            const CodepointDfa& other_names = PatternNames(other_pattern);
            overlaps = overlaps || !Product(names, other_names, ProductKind::kIntersection).Empty();
            alone = Product(alone, other_names, ProductKind::kDifference);
          }
        }
        if (other_props != nullptr && other_props->is_object() && !other_props->object_members().empty()) {
          std::vector<Fragment> literals;
          for (const auto& [name, value] : other_props->object_members()) {
            literals.push_back(Fragment::Literal(DumpJsonString(name)));
          }
          CodepointDfa declared = DfaFromFragment(Alt(literals));
          overlaps = overlaps || !Product(names, declared, ProductKind::kIntersection).Empty();
          alone = Product(alone, declared, ProductKind::kDifference);
        }
        if (alone.Empty()) continue;
        if (!overlaps) {
          needs_other[x].push_back(pattern);
          continue;
        }
        {
          Unsupported("cannot intersect 'patternProperties' with other object keywords" + where + ": names matching '" +
                      pattern + "' would also need the other side's 'additionalProperties'");
          return;
        }
      }
    }
    Members properties;
    for (int x = 0; x < 2; ++x) {
      const JsonValue* props = sides[x]->Find("properties");
      if (props == nullptr || !props->is_object()) continue;
      const JsonValue& other = *sides[1 - x];
      for (const auto& [name, schema] : props->object_members()) {
        ThrowIfCancelled();
        const JsonValue* other_entry = Member(other.Find("properties"), name);
        if (x == 1 && other_entry != nullptr) continue;  // merged with side a's entry
        std::vector<JsonValue> conjuncts = {schema};
        if (other_entry != nullptr) {
          conjuncts.push_back(*other_entry);
        } else if (const JsonValue* other_add = other.Find("additionalProperties");
                   !TrueSchema(other_add) && !SomePatternMatches(other.Find("patternProperties"), name)) {
          conjuncts.push_back(*other_add);
        }
        if (x == 1) std::swap(conjuncts.front(), conjuncts.back());
        properties.emplace_back(name, Conjunction(std::move(conjuncts)));
      }
    }
    Members patterns;
    for (int x = 0; x < 2; ++x) {
      const JsonValue* side_patterns = sides[x]->Find("patternProperties");
      if (side_patterns == nullptr || !side_patterns->is_object()) continue;
      for (const auto& [pattern, schema] : side_patterns->object_members()) {
        const JsonValue* other_entry = Member(sides[1 - x]->Find("patternProperties"), pattern);
        if (x == 1 && other_entry != nullptr) continue;
        std::vector<JsonValue> conjuncts = {schema};
        if (other_entry != nullptr) conjuncts.push_back(*other_entry);
        if (std::find(needs_other[x].begin(), needs_other[x].end(), pattern) != needs_other[x].end()) {
          conjuncts.push_back(*sides[1 - x]->Find("additionalProperties"));
        }
        patterns.emplace_back(pattern, Conjunction(std::move(conjuncts)));
      }
    }
    const JsonValue* add_a = a.Find("additionalProperties");
    const JsonValue* add_b = b.Find("additionalProperties");
    std::optional<JsonValue> additional;
    if (add_a != nullptr && add_b != nullptr) {
      additional = Conjunction({*add_a, *add_b});
    } else if (add_a != nullptr || add_b != nullptr) {
      additional = add_a != nullptr ? *add_a : *add_b;
    }
    bool declared = a.Find("properties") != nullptr || b.Find("properties") != nullptr;
    Replace(out, "properties", declared ? std::optional<JsonValue>(JsonValue::Object(std::move(properties))) : std::nullopt);
    Replace(out, "patternProperties", JsonValue::Object(std::move(patterns)));
    Replace(out, "additionalProperties", std::move(additional));
  } catch (const GrammarSyntaxError& e) {  // a pattern the regex frontend cannot read
    Unsupported("cannot intersect 'patternProperties' with other object keywords" + where + ": " + e.what());
  }
}

}  // namespace schema_internal
}  // namespace xg2
