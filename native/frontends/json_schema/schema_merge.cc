// JSON Schema -> EBNF: keywords that combine schemas by intersection. allOf, `$ref` with
// sibling keywords (draft 2019+ semantics) and applicators (anyOf / oneOf) next to other
// keywords are rewritten into one flat schema whose language is the intersection: type
// sets intersected, bounds tightened, required names united, properties and items merged
// position by position (never concatenated). Alternatives are distributed over the rest:
// {"anyOf": [{"allOf": [rest, branch_1]}, ...]}. Where an intersection has no exact flat
// form (two different patterns, two different formats, ...) the policy error names it.
#include <algorithm>
#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <set>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include "frontends/json_schema/decimal.h"
#include "frontends/json_schema/flat_branch_memo.h"
#include "frontends/json_schema/schema_converter_internal.h"
#include "frontends/regex/leading_lookaheads.h"
#include "frontends/regex/regex_converter.h"
#include "support/cancellation.h"
#include "support/dcheck.h"
#include "support/error.h"

namespace xg2 {
namespace schema_internal {

namespace {

// Alternative combinations one merge may distribute before it is refused.
constexpr size_t kMaxDistributedBranches = 256;
// JSON nodes all merges of one conversion may write. Each distributed branch is a copy of the
// conjuncts it shares with its siblings, including the alternative groups not distributed
// yet, which its own conversion distributes again: without a total bound nested groups
// multiply without end (lenient mode, which drops only the groups past
// kMaxDistributedBranches of one merge, ran out of memory on such a schema). About 100
// bytes a node.
constexpr size_t kMaxMergedJsonNodes = size_t{1} << 24;

// Whether a schema's JSON text has a `$ref` member (or the text as a string value: rarely).
bool MentionsReference(const std::string& text) { return text.find("\"$ref\"") != std::string::npos; }

size_t JsonNodeCount(const JsonValue& value) {
  size_t count = 1;
  for (const JsonValue& item : value.array_items()) count += JsonNodeCount(item);
  for (const auto& [key, member] : value.object_members()) count += JsonNodeCount(member);
  return count;
}
// Schema parts one merge may collect (allOf / $ref expansions).
constexpr size_t kMaxMergedParts = 512;
// How often one $ref target may be expanded by nested merges at once. A merge that recurs
// with the same text refers back to its own rule (MergedSchema), so this only stops merges
// whose text changes at every level; a shared base schema (allOf [$ref base, ...]) is
// legitimately expanded once per enclosing merge of a different schema.
constexpr int kMaxNestedTargetExpansions = 4;

using Members = std::vector<JsonValue::Member>;

std::string TooManyCombinedBranches(const std::string& pointer) {
  return "'anyOf' / 'oneOf' at " + ShowPointer(pointer) + ": more than " + std::to_string(kMaxDistributedBranches) +
         " combined branches";
}

// Views, so that a keyword is compared by length first (every member of every schema object
// is tested).
constexpr std::string_view kApplicators[] = {"$ref", "allOf", "anyOf", "oneOf"};

bool IsApplicator(const std::string& keyword) {
  const std::string_view view(keyword);
  return std::find(std::begin(kApplicators), std::end(kApplicators), view) != std::end(kApplicators);
}

JsonValue AllOf(std::vector<JsonValue> schemas) {
  if (schemas.size() == 1) return schemas[0];
  return JsonValue::Object({{"allOf", JsonValue::Array(std::move(schemas))}});
}

void Set(Members* members, const std::string& key, JsonValue value) {
  for (auto& member : *members) {
    if (member.first == key) {
      member.second = std::move(value);
      return;
    }
  }
  members->emplace_back(key, std::move(value));
}

void Erase(Members* members, const std::string& key) {
  members->erase(std::remove_if(members->begin(), members->end(),
                                [&](const JsonValue::Member& m) { return m.first == key; }),
                 members->end());
}

const JsonValue* FindIn(const Members& members, const std::string& key) {
  for (const auto& member : members) {
    if (member.first == key) return &member.second;
  }
  return nullptr;
}

// The `required` list `a` followed by the names of `b` that `a` lacks (each once). Names
// are looked up by hash (a linear search per name is quadratic in long lists); entries that
// are not strings (invalid, refused later) are compared as JSON among themselves.
JsonValue UnitedNames(const JsonValue& a, const JsonValue& b) {
  std::vector<JsonValue> names = a.is_array() ? a.array_items() : std::vector<JsonValue>{};
  std::unordered_set<std::string_view> strings;  // views of the input documents' strings
  std::vector<const JsonValue*> others;
  auto known = [&](const JsonValue& name) {
    if (name.is_string()) return !strings.insert(name.string_value()).second;
    if (std::any_of(others.begin(), others.end(), [&](const JsonValue* n) { return JsonEquals(*n, name); })) return true;
    others.push_back(&name);
    return false;
  };
  for (const JsonValue& name : a.array_items()) known(name);
  for (const JsonValue& name : b.array_items()) {
    ThrowIfCancelled();
    if (!known(name)) names.push_back(name);
  }
  return JsonValue::Array(std::move(names));
}

// Name -> value of an object's members, the first of each name (as Find returns); empty
// for a null or non-object value (whose Find finds nothing).
std::unordered_map<std::string_view, const JsonValue*> MemberIndex(const JsonValue* object) {
  std::unordered_map<std::string_view, const JsonValue*> index;
  if (object == nullptr) return index;
  for (const auto& [name, value] : object->object_members()) index.emplace(name, &value);
  return index;
}

bool IsTrueSchema(const JsonValue* schema) {
  return schema == nullptr || (schema->is_bool() && schema->bool_value()) ||
         (schema->is_object() && schema->object_members().empty());
}

// Draft-4 boolean exclusive bounds become the numeric (draft-6+) form.
void NormalizeExclusiveBounds(Members* members) {
  for (const auto& [exclusive, inclusive] :
       {std::make_pair("exclusiveMinimum", "minimum"), std::make_pair("exclusiveMaximum", "maximum")}) {
    const JsonValue* flag = FindIn(*members, exclusive);
    if (flag == nullptr || !flag->is_bool()) continue;
    bool on = flag->bool_value();
    const JsonValue* bound = FindIn(*members, inclusive);
    if (on && bound != nullptr) {
      JsonValue copy = *bound;
      Erase(members, inclusive);
      Set(members, exclusive, copy);
    } else {
      Erase(members, exclusive);
    }
  }
}

// The tighter of two numeric bounds (lower: the larger one).
JsonValue TighterBound(const JsonValue& a, const JsonValue& b, bool is_lower) {
  std::optional<Decimal> x = ParseDecimal(a.number_lexeme());
  std::optional<Decimal> y = ParseDecimal(b.number_lexeme());
  if (!x || !y) return (a.number_value() > b.number_value()) == is_lower ? a : b;
  int order = CompareDecimal(*x, *y);
  return (order >= 0) == is_lower ? a : b;
}

// The JSON type names a `type` keyword allows, with "number" standing for integers too.
bool TypeAllows(const std::vector<std::string>& types, const std::string& type) {
  if (std::find(types.begin(), types.end(), type) != types.end()) return true;
  return type == "integer" && std::find(types.begin(), types.end(), "number") != types.end();
}

}  // namespace

bool SchemaConverter::NeedsMerge(const Node& node) const {
  const JsonValue& schema = node.schema;
  if (schema.Find("allOf") != nullptr && !IsIgnored(node, "allOf")) return true;
  bool has_ref = schema.Find("$ref") != nullptr;
  if (has_ref && legacy_ref_) return false;  // draft 7 and older: $ref siblings are ignored
  int applicators = 0;
  bool has_assertions = false;
  for (const auto& member : schema.object_members()) {
    const std::string& keyword = member.first;
    if (IsApplicator(keyword)) {
      ++applicators;
    } else if (!IsPassiveKeyword(keyword) && !IsIgnored(node, keyword) &&
               !(keyword == "nullable" && schema.Find("anyOf") != nullptr && !has_ref)) {
      has_assertions = true;
    }
  }
  return applicators > 1 || (applicators == 1 && has_assertions);
}

// Collects the conjuncts of `schema`: its own keywords, the parts of its $ref target and of
// each allOf item. anyOf / oneOf lists are kept apart for distribution.
void SchemaConverter::CollectParts(const JsonValue& schema, const std::string& pointer,
                                   MergeState* state) {
  if (schema.is_bool()) {
    state->never = state->never || !schema.bool_value();
    return;
  }
  if (!schema.is_object()) Invalid("schema at " + ShowPointer(pointer) + " must be an object or a boolean");
  if (++state->collected > kMaxMergedParts) {
    Unsupported("'allOf' / '$ref' at " + ShowPointer(pointer) + ": more than " +
                std::to_string(kMaxMergedParts) + " schemas to intersect");
    return;
  }
  Node node{schema, pointer};
  const JsonValue* ref = schema.Find("$ref");
  bool ref_only = ref != nullptr && legacy_ref_;  // draft 7: siblings of $ref are ignored
  Members own;
  // if / then / else act within their own schema object: a decidable condition becomes an
  // alternative group of its own; `then` / `else` without `if` (and `if` alone) do nothing.
  bool has_if = schema.Find("if") != nullptr && !ref_only && !IsIgnored(node, "if");
  bool conditional = has_if && (schema.Find("then") != nullptr || schema.Find("else") != nullptr);
  if (conditional) {
    if (std::optional<JsonValue> rewritten = WithoutConditional(node)) {
      const JsonValue& groups = *rewritten->Find("allOf");
      state->alternatives.push_back({groups.array_items().back(), ChildPointer(pointer, "if")});
    } else {
      conditional = false;  // left in place: the policy error names 'if'
    }
  }
  for (const auto& [keyword, value] : schema.object_members()) {
    if (ref_only || IsApplicator(keyword) || IsPassiveKeyword(keyword) || IsIgnored(node, keyword)) continue;
    bool conditional_keyword = keyword == "if" || keyword == "then" || keyword == "else";
    if (conditional_keyword && (conditional || !has_if || (schema.Find("then") == nullptr && schema.Find("else") == nullptr))) {
      continue;
    }
    if ((keyword == "minContains" || keyword == "maxContains") && schema.Find("contains") == nullptr) continue;
    own.emplace_back(keyword, value);
  }
  NormalizeExclusiveBounds(&own);
  if (!own.empty()) state->parts.push_back({JsonValue::Object(std::move(own)), pointer});
  if (ref != nullptr) {
    if (!ref->is_string()) Invalid("keyword '$ref' at " + ShowPointer(pointer) + " must be a string");
    std::string target_pointer;
    const JsonValue* target = ResolveReference(ref->string_value(), node, &target_pointer);
    bool collected = std::find(state->targets.begin(), state->targets.end(), target) != state->targets.end();
    int expansions = static_cast<int>(std::count(merge_targets_.begin(), merge_targets_.end(), target));
    if (collected) {
      // A target met twice in one merge is one conjunct (T and T is T): intersections of a
      // schema with itself (a patternProperty matching a declared name of the same schema)
      // otherwise nest one copy deeper at each level of a recursion.
    } else if (expansions >= kMaxNestedTargetExpansions) {
      Unsupported("recursive '$ref' combined with sibling keywords or 'allOf' at " + ShowPointer(pointer));
    } else {
      state->targets.push_back(target);
      CollectParts(*target, target_pointer, state);
    }
  }
  if (ref_only) return;
  if (const JsonValue* all_of = schema.Find("allOf"); all_of != nullptr && !IsIgnored(node, "allOf")) {
    if (!all_of->is_array() || all_of->array_items().empty()) {
      Invalid("keyword 'allOf' at " + ShowPointer(pointer) + " must be a non-empty array");
    }
    for (size_t i = 0; i < all_of->array_items().size(); ++i) {
      CollectParts(all_of->array_items()[i], ChildPointer(pointer, "allOf") + "/" + std::to_string(i), state);
    }
  }
  for (const char* keyword : {"anyOf", "oneOf"}) {
    const JsonValue* branches = schema.Find(keyword);
    if (branches == nullptr || IsIgnored(node, keyword)) continue;
    if (!branches->is_array() || branches->array_items().empty()) {
      Invalid("keyword " + std::string("'") + keyword + "' at " + ShowPointer(pointer) + " must be a non-empty array");
    }
    JsonValue group = JsonValue::Object({{keyword, *branches}});
    if (std::string(keyword) == "anyOf") {
      const JsonValue* nullable = schema.Find("nullable");
      if (nullable != nullptr && nullable->is_bool() && nullable->bool_value() && schema.Find("type") == nullptr) {
        std::vector<JsonValue> with_null = branches->array_items();
        with_null.push_back(JsonValue::Object({{"type", JsonValue::String("null")}}));
        group = JsonValue::Object({{keyword, JsonValue::Array(std::move(with_null))}});
      }
    }
    bool repeated = std::any_of(state->alternatives.begin(), state->alternatives.end(),
                                [&](const auto& known) { return JsonEquals(known.first, group); });
    if (!repeated) state->alternatives.push_back({std::move(group), ChildPointer(pointer, keyword)});
  }
}

namespace {

// Whether the string generator reads `pattern` (else the intersection stays the policy error:
// a `not` it could not read would be complemented back into a second pattern without end).
// It reads what the regex frontend reads, and a pattern whose look-aheads all lead it
// (leading_lookaheads.h) when each of its parts is read: the decision DfaFromRegex makes.
bool PatternHasAutomaton(const std::string& pattern) {
  RegexOptions options;
  options.search = true;
  options.json_string_body = true;
  try {
    if (std::optional<LeadingLookaheads> split = SplitLeadingLookaheads(pattern)) {
      RegexToEbnf(split->rest, options);
      for (const LeadingLookaheads::Assertion& assertion : split->assertions) {
        RegexToEbnf(assertion.prefix_pattern, options);
      }
    } else {
      RegexToEbnf(pattern, options);
    }
  } catch (const RegexError&) {
    return false;
  }
  return true;
}

}  // namespace

// a ∩ b for two flat schema objects (no applicators).
JsonValue SchemaConverter::MergeObjects(const JsonValue& a, const JsonValue& b, const std::string& pointer) {
  ThrowIfCancelled();
  Members out = a.object_members();
  std::string where = " at " + ShowPointer(pointer);
  auto refuse = [&](const std::string& keyword, const std::string& why) {
    Unsupported("cannot intersect keyword '" + keyword + "'" + where + ": " + why);
  };
  Node node_a{a, pointer}, node_b{b, pointer};
  // Types first: both sides' `type` and `nullable` become one `type` array.
  if (a.Find("type") != nullptr || b.Find("type") != nullptr) {
    std::vector<std::string> left = AllowedTypes(node_a), right = AllowedTypes(node_b);
    std::vector<JsonValue> both;
    static const std::string kTypes[] = {"null", "boolean", "object", "array", "number", "integer", "string"};
    for (const std::string& type : kTypes) {
      bool in_both = TypeAllows(left, type) && TypeAllows(right, type);
      bool number_covers = type == "integer" && TypeAllows(left, "number") && TypeAllows(right, "number");
      if (in_both && !number_covers) both.push_back(JsonValue::String(type));
    }
    Set(&out, "type", JsonValue::Array(std::move(both)));
    Erase(&out, "nullable");
  }
  for (const auto& [keyword, value] : b.object_members()) {
    if (keyword == "type" || keyword == "nullable") continue;
    const JsonValue* mine = FindIn(out, keyword);
    if (mine == nullptr) {
      if (keyword == "properties" || keyword == "additionalProperties" || keyword == "patternProperties") continue;
      if (keyword == "items" || keyword == "prefixItems" || keyword == "additionalItems") continue;
      out.emplace_back(keyword, value);
      continue;
    }
    if (JsonEquals(*mine, value)) continue;
    JsonValue merged = *mine;
    if (keyword == "minimum" || keyword == "exclusiveMinimum" || keyword == "maximum" ||
        keyword == "exclusiveMaximum") {
      if (!mine->is_number() || !value.is_number()) Invalid("keyword '" + keyword + "'" + where + " must be a number");
      merged = TighterBound(*mine, value, keyword == "minimum" || keyword == "exclusiveMinimum");
    } else if (keyword == "minLength" || keyword == "minItems" || keyword == "minProperties" ||
               keyword == "minContains") {
      merged = mine->number_value() >= value.number_value() ? *mine : value;
    } else if (keyword == "maxLength" || keyword == "maxItems" || keyword == "maxProperties" ||
               keyword == "maxContains") {
      merged = mine->number_value() <= value.number_value() ? *mine : value;
    } else if (keyword == "required") {
      merged = UnitedNames(*mine, value);
    } else if (keyword == "enum") {
      std::vector<JsonValue> kept;
      for (const JsonValue& x : mine->is_array() ? mine->array_items() : std::vector<JsonValue>{}) {
        for (const JsonValue& y : value.is_array() ? value.array_items() : std::vector<JsonValue>{}) {
          if (JsonEquals(x, y)) {
            kept.push_back(x);
            break;
          }
        }
      }
      merged = JsonValue::Array(std::move(kept));
    } else if (keyword == "const") {
      Set(&out, "enum", JsonValue::Array({}));  // two different constants: nothing matches
      continue;
    } else if (keyword == "uniqueItems") {
      merged = JsonValue::Bool(mine->is_bool() && value.is_bool() && (mine->bool_value() || value.bool_value()));
    } else if (keyword == "multipleOf") {
      std::optional<Decimal> x = ParseDecimal(mine->number_lexeme()), y = ParseDecimal(value.number_lexeme());
      if (!mine->is_number() || !value.is_number() || !x || !y || x->is_zero() || y->is_zero()) {
        refuse(keyword, "bad divisors");
        continue;
      }
      if (Divides(*y, *x)) {
        merged = *mine;
      } else if (Divides(*x, *y)) {
        merged = value;
      } else {
        // Both must divide the value: kept as a conjunction the number generator reads.
        refuse(keyword, "divisors " + mine->number_lexeme() + " and " + value.number_lexeme() +
                            " do not divide one another");
        continue;
      }
    } else if (keyword == "not") {
      std::optional<std::vector<JsonValue>> x = ListedValuesOnly(*mine), y = ListedValuesOnly(value);
      if (x && y) {
        // Two excluded lists: one list (keeps the form the generators read).
        for (const JsonValue& v : *y) {
          if (std::none_of(x->begin(), x->end(), [&](const JsonValue& u) { return JsonEquals(u, v); })) x->push_back(v);
        }
        merged = JsonValue::Object({{"enum", JsonValue::Array(std::move(*x))}});
      } else {
        merged = JsonValue::Object({{"anyOf", JsonValue::Array({*mine, value})}});
      }
    } else if (keyword == "propertyNames" || keyword == "contains" || keyword == "if" ||
               keyword == "then" || keyword == "else") {
      if (keyword == "propertyNames") {
        merged = AllOf({*mine, value});
      } else {
        refuse(keyword, "two different '" + keyword + "' schemas");
        continue;
      }
    } else if (keyword == "dependentRequired" || keyword == "dependentSchemas" || keyword == "dependencies") {
      refuse(keyword, "two different '" + keyword + "' maps");
      continue;
    } else if (keyword == "pattern" && mine->is_string() && value.is_string() && PatternHasAutomaton(value.string_value())) {
      // Strings must match both: the second pattern joins `not` as "a string that does not
      // match it" (StringValue intersects the automata; other types pass both patterns).
      JsonValue failing = JsonValue::Object({{"type", JsonValue::String("string")},
                                             {"not", JsonValue::Object({{"pattern", value}})}});
      const JsonValue* negated = FindIn(out, "not");
      Set(&out, "not", negated == nullptr ? failing : JsonValue::Object({{"anyOf", JsonValue::Array({*negated, failing})}}));
      continue;
    } else if (keyword == "pattern" || keyword == "format") {
      refuse(keyword, "'" + mine->string_value() + "' and '" +
                          (value.is_string() ? value.string_value() : std::string("?")) + "'");
      continue;
    } else {
      continue;  // keywords without validation meaning: the first value is kept
    }
    Set(&out, keyword, std::move(merged));
  }
  MergeObjectKeywords(a, b, pointer, &out);
  MergeArrayKeywords(a, b, &out);
  return JsonValue::Object(std::move(out));
}

// properties / additionalProperties / patternProperties of a ∩ b: a name declared on one
// side only must also satisfy what the other side says about undeclared names.
void SchemaConverter::MergeObjectKeywords(const JsonValue& a, const JsonValue& b,
                                          const std::string& pointer, Members* out) {
  const JsonValue* props_a = a.Find("properties");
  const JsonValue* props_b = b.Find("properties");
  const JsonValue* add_a = a.Find("additionalProperties");
  const JsonValue* add_b = b.Find("additionalProperties");
  const JsonValue* pat_a = a.Find("patternProperties");
  const JsonValue* pat_b = b.Find("patternProperties");
  if (props_b == nullptr && add_b == nullptr && pat_b == nullptr) return;
  if (props_a == nullptr && add_a == nullptr && pat_a == nullptr) {
    for (const char* keyword : {"properties", "additionalProperties", "patternProperties"}) {
      if (const JsonValue* value = b.Find(keyword)) Set(out, keyword, *value);
    }
    return;
  }
  std::string where = " at " + ShowPointer(pointer);
  bool patterns_a = pat_a != nullptr && pat_a->is_object() && !pat_a->object_members().empty();
  bool patterns_b = pat_b != nullptr && pat_b->is_object() && !pat_b->object_members().empty();
  // Patterns cannot be matched against the other side's names here, so they merge only
  // with a side that declares no names and allows any undeclared member.
  if (patterns_a || patterns_b) {
    MergePatternMembers(a, b, pointer, out);  // pattern_properties_merge.cc
    return;
  }
  Members merged;
  auto add_side = [&](const JsonValue* props, const JsonValue* other_props, const JsonValue* other_add,
                      bool first_side) {
    if (props == nullptr || !props->is_object()) return;
    std::unordered_map<std::string_view, const JsonValue*> other_index = MemberIndex(other_props);
    for (const auto& [name, schema] : props->object_members()) {
      ThrowIfCancelled();
      auto found = other_index.find(name);
      const JsonValue* other = found == other_index.end() ? nullptr : found->second;
      if (!first_side && other != nullptr) continue;  // merged on the first side
      std::vector<JsonValue> conjuncts = {schema};
      if (other != nullptr) {
        conjuncts.push_back(*other);
      } else if (!IsTrueSchema(other_add)) {
        conjuncts.push_back(*other_add);
      }
      if (!first_side) std::reverse(conjuncts.begin(), conjuncts.end());
      merged.emplace_back(name, AllOf(std::move(conjuncts)));
    }
  };
  add_side(props_a, props_b, add_b, true);
  add_side(props_b, props_a, add_a, false);
  Erase(out, "properties");
  Erase(out, "additionalProperties");
  Erase(out, "patternProperties");
  if (props_a != nullptr || props_b != nullptr) Set(out, "properties", JsonValue::Object(std::move(merged)));
  if (patterns_a) Set(out, "patternProperties", *pat_a);
  if (patterns_b && !patterns_a) Set(out, "patternProperties", *pat_b);
  if (add_a != nullptr && add_b != nullptr) {
    Set(out, "additionalProperties", AllOf({*add_a, *add_b}));
  } else if (add_a != nullptr || add_b != nullptr) {
    Set(out, "additionalProperties", add_a != nullptr ? *add_a : *add_b);
  }
}

// Array keywords of a ∩ b, position by position: item i must satisfy both sides' schema
// for position i (tuple entry, else the schema of later items).
void SchemaConverter::MergeArrayKeywords(const JsonValue& a, const JsonValue& b, Members* out) {
  struct ArrayForm {
    std::vector<JsonValue> tuple;
    std::optional<JsonValue> rest;
  };
  auto form_of = [](const JsonValue& schema) {
    ArrayForm form;
    const JsonValue* prefix = schema.Find("prefixItems");
    const JsonValue* items = schema.Find("items");
    if (prefix != nullptr && prefix->is_array()) {
      form.tuple = prefix->array_items();
      if (items != nullptr) form.rest = *items;
    } else if (items != nullptr && items->is_array()) {
      form.tuple = items->array_items();
      if (const JsonValue* additional = schema.Find("additionalItems")) form.rest = *additional;
    } else if (items != nullptr) {
      form.rest = *items;
    }
    return form;
  };
  auto has_array = [](const JsonValue& s) { return s.Find("items") != nullptr || s.Find("prefixItems") != nullptr; };
  if (!has_array(b)) return;
  if (!has_array(a)) {
    for (const char* keyword : {"items", "prefixItems", "additionalItems"}) {
      if (const JsonValue* value = b.Find(keyword)) Set(out, keyword, *value);
    }
    return;
  }
  ArrayForm x = form_of(a), y = form_of(b);
  size_t length = std::max(x.tuple.size(), y.tuple.size());
  std::vector<JsonValue> tuple;
  auto at = [](const ArrayForm& form, size_t i) -> std::optional<JsonValue> {
    if (i < form.tuple.size()) return form.tuple[i];
    return form.rest;
  };
  for (size_t i = 0; i < length; ++i) {
    std::vector<JsonValue> conjuncts;
    for (const std::optional<JsonValue>& part : {at(x, i), at(y, i)}) {
      if (part) conjuncts.push_back(*part);
    }
    tuple.push_back(conjuncts.empty() ? JsonValue::Bool(true) : AllOf(std::move(conjuncts)));
  }
  std::vector<JsonValue> rest;
  if (x.rest) rest.push_back(*x.rest);
  if (y.rest) rest.push_back(*y.rest);
  Erase(out, "items");
  Erase(out, "prefixItems");
  Erase(out, "additionalItems");
  if (!tuple.empty()) Set(out, "prefixItems", JsonValue::Array(std::move(tuple)));
  if (!rest.empty()) Set(out, "items", AllOf(std::move(rest)));
}

// A merge met again while it is being built (a recursive `$ref` whose target, intersected
// with its siblings, leads back to the same intersection) refers to a rule reserved for it,
// as Reference does for a plain `$ref`: the rule's language is the least fixed point of the
// recursion, which is the schema's language (JSON values are finite). Merges are keyed by
// their schema's text (compared without writing it, JsonIdentical) and layout depth: `$ref`s
// resolve against the document, not the place, so equal text means an equal language.
Fragment SchemaConverter::MergedSchema(const Node& node, int depth) {
  const int layout_depth = LayoutDepth(depth);
  for (MergeInProgress& open : merges_in_progress_) {
    if (open.layout_depth != layout_depth || !JsonIdentical(*open.schema, node.schema)) continue;
    // The rule is reserved only once recursion is found (other merges stay inline).
    if (open.rule.empty()) open.rule = rules_.Reserve(RuleHint(node.pointer));
    return Fragment::Atom(open.rule);
  }
  const size_t entry = merges_in_progress_.size();
  merges_in_progress_.push_back({&node.schema, layout_depth, std::string()});
  Fragment body = Fragment::Never();
  try {
    body = MergedSchemaBody(node, depth);
  } catch (...) {
    merges_in_progress_.resize(entry);
    throw;
  }
  std::string name = std::move(merges_in_progress_[entry].rule);
  merges_in_progress_.resize(entry);
  if (name.empty()) return body;
  // An empty recursive merge is written as `name ::= name`; Convert finds it unproductive.
  rules_.Define(name, body.never() ? Fragment::Atom(name) : body);
  return Fragment::Atom(name);
}

Fragment SchemaConverter::MergedSchemaBody(const Node& node, int depth) {
  MergeState state;
  CollectParts(node.schema, node.pointer, &state);
  if (state.never) return Fragment::Never();
  JsonValue base = JsonValue::Object({});
  for (const auto& [part, part_pointer] : state.parts) base = MergeObjects(base, part, node.pointer);
  if (!PruneAlternatives(base, node.pointer, &state)) return Fragment::Never();
  // Distribute the first alternative list; later ones stay as conjuncts of every branch
  // and are distributed when those branches are converted.
  JsonValue result = base;
  if (!state.alternatives.empty()) {
    size_t groups = ViableGroups(base, node.pointer, state, kMaxDistributedBranches);
    if (groups < state.alternatives.size()) {
      Unsupported(TooManyCombinedBranches(node.pointer));
      // Lenient: the alternative groups past the bound are dropped (a wider language, warned
      // above); distributing them would multiply the grammar without bound.
      state.alternatives.resize(groups);
    }
    std::vector<JsonValue> rest = {base};
    for (size_t i = 1; i < state.alternatives.size(); ++i) rest.push_back(state.alternatives[i].first);
    const auto& [keyword, branches] = state.alternatives[0].first.object_members()[0];
    size_t shared_nodes = 0;
    for (const JsonValue& conjunct : rest) shared_nodes += JsonNodeCount(conjunct);
    for (const JsonValue& branch : branches.array_items()) {
      merged_json_nodes_ += shared_nodes + JsonNodeCount(branch);
    }
    if (merged_json_nodes_ > kMaxMergedJsonNodes) {
      throw ResourceLimitError("'anyOf' / 'oneOf' combined with 'allOf' or '$ref' at " + ShowPointer(node.pointer) +
                               ": distributing the alternatives over their conjuncts writes more than " +
                               std::to_string(kMaxMergedJsonNodes) + " JSON nodes in this schema");
    }
    std::vector<JsonValue> distributed;
    for (const JsonValue& branch : branches.array_items()) {
      std::vector<JsonValue> conjuncts = rest;
      conjuncts.push_back(branch);
      distributed.push_back(JsonValue::Object({{"allOf", JsonValue::Array(std::move(conjuncts))}}));
    }
    result = JsonValue::Object({{keyword, JsonValue::Array(std::move(distributed))}});
  }
  synthetic_.push_back(std::move(result));
  const JsonValue& merged = synthetic_.back();
  size_t pushed = state.targets.size();
  merge_targets_.insert(merge_targets_.end(), state.targets.begin(), state.targets.end());
  Fragment fragment = SchemaObject(Node{merged, node.pointer}, depth);
  merge_targets_.resize(merge_targets_.size() - pushed);
  return fragment;
}

// ---------------------------------------------------------------------------------------
// oneOf: exactly one branch matches. When no value can match two branches (decided below,
// never guessed) that is the same language as anyOf.

const JsonValue& SchemaConverter::Dereferenced(const JsonValue& schema, const std::string& pointer) {
  const JsonValue* at = &schema;
  for (int hops = 0; hops < 32 && at->is_object(); ++hops) {
    const JsonValue* ref = at->Find("$ref");
    if (ref == nullptr || !ref->is_string()) break;
    // Siblings that say nothing (annotations; any sibling before draft 2019) keep the target's language.
    bool siblings_assert = !legacy_ref_ && std::any_of(at->object_members().begin(), at->object_members().end(),
        [](const JsonValue::Member& m) { return m.first != "$ref" && !IsPassiveKeyword(m.first); });
    if (siblings_assert) break;
    std::string target_pointer;
    at = ResolveReference(ref->string_value(), Node{*at, pointer}, &target_pointer);
  }
  return *at;
}

namespace {


// The bit of a `type` name ("number" also covers integers); 0 for a name JSON Schema lacks.
uint8_t TypeNameBits(const std::string& name) {
  if (name == "null") return kNullType;
  if (name == "boolean") return kBooleanType;
  if (name == "object") return kObjectType;
  if (name == "array") return kArrayType;
  if (name == "number") return kNumberType | kIntegerType;
  if (name == "integer") return kIntegerType;
  if (name == "string") return kStringType;
  return 0;
}

uint8_t ValueTypeBit(const JsonValue& v) {
  switch (v.kind()) {
    case JsonKind::kNull: return kNullType;
    case JsonKind::kBool: return kBooleanType;
    case JsonKind::kNumber: return v.is_integral_number() ? kIntegerType : kNumberType;
    case JsonKind::kString: return kStringType;
    case JsonKind::kArray: return kArrayType;
    case JsonKind::kObject: return kObjectType;
  }
  return kNullType;
}

// The values a schema allows when it lists them (const / enum), else nullopt.
std::optional<std::vector<JsonValue>> ListedValues(const JsonValue& schema) {
  if (!schema.is_object()) return std::nullopt;
  if (const JsonValue* constant = schema.Find("const")) return std::vector<JsonValue>{*constant};
  const JsonValue* values = schema.Find("enum");
  if (values != nullptr && values->is_array()) return values->array_items();
  return std::nullopt;
}

// True when `schema` forbids a member outright whose schema under its `properties` is
// `declared` (null: the name is not declared there).
bool ForbidsMember(const JsonValue& schema, const JsonValue* declared) {
  if (declared != nullptr) return declared->is_bool() && !declared->bool_value();
  const JsonValue* additional = schema.Find("additionalProperties");
  return additional != nullptr && additional->is_bool() && !additional->bool_value() &&
         schema.Find("patternProperties") == nullptr;
}

const JsonValue* Lookup(const std::unordered_map<std::string_view, const JsonValue*>& index,
                        const std::string& name) {
  auto found = index.find(name);
  return found == index.end() ? nullptr : found->second;
}

}  // namespace

uint8_t PossibleTypes(const JsonValue& schema) {
  if (schema.is_bool()) return schema.bool_value() ? kAllJsonTypes : 0;
  uint8_t types = kAllJsonTypes;
  if (const JsonValue* type = schema.Find("type")) {
    uint8_t named = 0;
    auto name_one = [&](const JsonValue& name) {
      if (!name.is_string()) return false;
      named |= TypeNameBits(name.string_value());
      return true;
    };
    if (type->is_array()) {
      for (const JsonValue& name : type->array_items()) {
        if (!name_one(name)) return kAllJsonTypes;
      }
    } else if (!name_one(*type)) {
      return kAllJsonTypes;
    }
    const JsonValue* nullable = schema.Find("nullable");
    if (nullable != nullptr && nullable->is_bool() && nullable->bool_value()) named |= kNullType;
    types &= named;
  }
  if (const JsonValue* constant = schema.Find("const")) types &= ValueTypeBit(*constant);
  if (const JsonValue* values = schema.Find("enum"); values != nullptr && values->is_array()) {
    uint8_t listed = 0;
    for (const JsonValue& v : values->array_items()) listed |= ValueTypeBit(v);
    types &= listed;
  }
  return types;
}

// A oneOf branch as one flat schema for the disjointness decision: `$ref`s followed, allOf
// and `$ref`-with-siblings merged as the generator merges them. nullopt when the merge
// would be refused. `*exact` is false when alternatives (anyOf / oneOf) inside the branch
// were left out: the flat schema is then a superset of the branch.
std::optional<JsonValue> SchemaConverter::FlatBranch(const JsonValue& schema_in, const std::string& pointer,
                                                     bool* exact) {
  auto flatten = [&](bool* flat_exact) -> std::optional<JsonValue> {
    *flat_exact = true;
    const JsonValue& schema = Dereferenced(schema_in, pointer);
    if (!schema.is_object() || !NeedsMerge(Node{schema, pointer})) return schema;
    return TrialMerge(schema, pointer, [&](const MergeState& state, JsonValue base) -> std::optional<JsonValue> {
      if (state.never) return JsonValue::Bool(false);
      *flat_exact = state.alternatives.empty();
      return base;
    });
  };
  FlatBranchMemo* memo = schema_in.is_object() ? FlatBranchMemo::Active() : nullptr;
  if (memo == nullptr) return flatten(exact);
  if (const FlatBranchMemo::Entry* kept = memo->Find(schema_in, pointer)) {
#if XG2_DCHECKS_ENABLED
    bool fresh_exact = true;
    std::optional<JsonValue> fresh = flatten(&fresh_exact);
    XG2_DCHECK(fresh_exact == kept->exact && fresh.has_value() == kept->flat.has_value() &&
                   (!fresh || JsonIdentical(*fresh, *kept->flat)),
               "a kept flat branch at " + pointer + " is what flattening it again gives");
#endif
    *exact = kept->exact;
    return kept->flat;
  }
  std::optional<JsonValue> flat = flatten(exact);
  memo->Keep(schema_in, pointer, flat, *exact);
  return flat;
}

std::optional<JsonValue> SchemaConverter::TrialMerge(
    const JsonValue& schema, const std::string& pointer,
    const std::function<std::optional<JsonValue>(const MergeState&, JsonValue)>& finish) {
  return StrictTrial([&]() -> std::optional<JsonValue> {
    MergeState state;
    CollectParts(schema, pointer, &state);
    JsonValue base = JsonValue::Object({});
    if (!state.never) {
      for (const auto& [part, part_pointer] : state.parts) base = MergeObjects(base, part, pointer);
    }
    return finish(state, std::move(base));
  });
}

std::optional<JsonValue> SchemaConverter::StrictTrial(const std::function<std::optional<JsonValue>()>& trial) {
  // Refusals inside the trial throw (even when lenient) and are undone on every exit.
  auto ignored = ignored_keywords_;
  const bool lenient = options_.lenient;
  options_.lenient = false;
  auto restore = [&] {
    options_.lenient = lenient;
    ignored_keywords_ = std::move(ignored);
  };
  std::optional<JsonValue> result;
  try {
    result = trial();
  } catch (const UnsupportedSchemaError&) {
    result.reset();
  } catch (...) {
    restore();
    throw;
  }
  restore();
  return result;
}

namespace {

// Names the generated objects of a flat schema can have, when they are limited to its
// declared properties: additionalProperties false, or (strict mode) absent next to
// `properties`; no patternProperties, and no keyword whose rewrite could add members.
// With patternProperties, `names` holds the declared names only and the patterns add theirs.
std::optional<std::set<std::string>> GeneratedNames(const JsonValue& schema, bool strict_mode) {
  if (!schema.is_object()) return std::nullopt;
  for (const char* keyword : {"if", "then", "else", "not", "dependentSchemas", "dependencies", "dependentRequired",
                              "$ref", "allOf", "anyOf", "oneOf"}) {
    if (schema.Find(keyword) != nullptr) return std::nullopt;
  }
  const JsonValue* additional = schema.Find("additionalProperties");
  const JsonValue* properties = schema.Find("properties");
  bool closed = additional != nullptr ? additional->is_bool() && !additional->bool_value()
                                      : strict_mode && (properties != nullptr || schema.Find("patternProperties") != nullptr);
  if (!closed) return std::nullopt;
  std::set<std::string> names;
  if (properties != nullptr && properties->is_object()) {
    for (const auto& member : properties->object_members()) {
      if (!(member.second.is_bool() && !member.second.bool_value())) names.insert(member.first);
    }
  }
  return names;
}

// minItems / maxItems of a flat schema as an interval; nullopt for a count that is not a
// non-negative integer (the converter reports that where it generates the array).
std::optional<std::pair<double, double>> ItemCountRange(const JsonValue& schema) {
  double low = 0, high = std::numeric_limits<double>::infinity();
  for (const char* keyword : {"minItems", "maxItems"}) {
    const JsonValue* count = schema.Find(keyword);
    if (count == nullptr) continue;
    if (!count->is_integral_number() || count->number_value() < 0) return std::nullopt;
    (std::string_view(keyword) == "minItems" ? low : high) = count->number_value();
  }
  return std::make_pair(low, high);
}

}  // namespace

// Arrays (both flat schemas allow arrays only): no array satisfies both when their item
// counts share no length, or when both need an item and their item schemas (one schema
// each, no tuple forms) are disjoint, since the first item would satisfy both.
bool SchemaConverter::ArraysExclude(const JsonValue& a, const JsonValue& b, const std::string& pointer, int budget,
                                    bool generated) {
  // Draft 7 and older ignore the siblings of $ref; tuple forms apply items to part of the array.
  for (const JsonValue* side : {&a, &b}) {
    if (!side->is_object() || side->Find("$ref") != nullptr) return false;
  }
  std::optional<std::pair<double, double>> ra = ItemCountRange(a), rb = ItemCountRange(b);
  if (!ra || !rb) return false;
  if (ra->second < rb->first || rb->second < ra->first) return true;
  if (ra->first < 1 || rb->first < 1) return false;
  const JsonValue* items_a = a.Find("items");
  const JsonValue* items_b = b.Find("items");
  if (items_a == nullptr || items_b == nullptr || items_a->is_array() || items_b->is_array() ||
      a.Find("prefixItems") != nullptr || b.Find("prefixItems") != nullptr) {
    return false;
  }
  return Excludes(*items_a, *items_b, pointer, budget - 1, generated);
}

// True when no value generated for `a` validates against `b` (the direction matters in
// strict mode, where an object branch generates only its declared members; see
// GeneratedNames). Decided, never guessed: false whenever no rule below applies.
bool SchemaConverter::Excludes(const JsonValue& a_in, const JsonValue& b_in, const std::string& pointer,
                               int budget, bool generated) {
  ThrowIfCancelled();
  if (budget <= 0) return false;
  bool exact_a = true, exact_b = true;
  std::optional<JsonValue> flat_a = FlatBranch(a_in, pointer, &exact_a);
  std::optional<JsonValue> flat_b = FlatBranch(b_in, pointer, &exact_b);
  if (!flat_a || !flat_b) return false;
  return FlatExcludes(*flat_a, exact_a, *flat_b, pointer, budget, generated);
}

// Excludes for schemas FlatBranch has flattened already (`exact_a`: FlatBranch's `exact` for `a`).
bool SchemaConverter::FlatExcludes(const JsonValue& a, bool exact_a, const JsonValue& b, const std::string& pointer,
                                   int budget, bool generated) {
  if (a.is_bool() && !a.bool_value()) return true;
  if (b.is_bool() && !b.bool_value()) return true;
  // Alternatives without sibling keywords: every alternative must be excluded.
  for (const JsonValue* side : {&a, &b}) {
    if (!side->is_object() || side->object_members().size() != 1) continue;
    const auto& [keyword, branches] = side->object_members()[0];
    if ((keyword != "anyOf" && keyword != "oneOf") || !branches.is_array()) continue;
    for (const JsonValue& branch : branches.array_items()) {
      bool excluded = side == &a ? Excludes(branch, b, pointer, budget - 1, generated)
                                 : Excludes(a, branch, pointer, budget - 1, generated && exact_a);
      if (!excluded) {
        return false;
      }
    }
    return true;
  }
  const uint8_t common = PossibleTypes(a) & PossibleTypes(b);
  if (common == 0) return true;
  std::optional<std::vector<JsonValue>> va = ListedValues(a), vb = ListedValues(b);
  if (va && vb) {
    for (const JsonValue& x : *va) {
      for (const JsonValue& y : *vb) {
        if (JsonEquals(x, y)) return false;
      }
    }
    return true;
  }
  // Strings: the two string languages (pattern, lengths, listed strings) share no value.
  if (common == kStringType) return StringsDisjoint(a, b, pointer);
  if (common == kArrayType) return ArraysExclude(a, b, pointer, budget, generated && exact_a);
  // Past this point only objects can be told apart.
  if (common != kObjectType || !a.is_object() || !b.is_object()) return false;
  const JsonValue* pa = a.Find("properties");
  const JsonValue* pb = b.Find("properties");
  // A member that `a` requires and `b` forbids, or whose values under `a` all fail `b`'s schema.
  if (const JsonValue* required = a.Find("required"); required != nullptr && required->is_array()) {
    std::unordered_map<std::string_view, const JsonValue*> index_a = MemberIndex(pa), index_b = MemberIndex(pb);
    for (const JsonValue& name : required->array_items()) {
      ThrowIfCancelled();
      if (!name.is_string()) continue;
      const JsonValue* sa = Lookup(index_a, name.string_value());
      const JsonValue* sb = Lookup(index_b, name.string_value());
      if (ForbidsMember(b, sb)) return true;
      if (sb == nullptr && NoPatternAdmits(b, name.string_value())) return true;
      if (sb == nullptr && b.Find("patternProperties") == nullptr) {
        const JsonValue* additional = b.Find("additionalProperties");
        if (additional != nullptr && !additional->is_bool()) sb = additional;
      }
      if (sa != nullptr && sb != nullptr && Excludes(*sa, *sb, pointer, budget - 1, generated && exact_a)) return true;
    }
  }
  // A member that `b` requires and `a` never generates (its objects are closed).
  if (generated && exact_a) {
    if (std::optional<std::set<std::string>> names = GeneratedNames(a, options_.strict_mode)) {
      if (const JsonValue* required = b.Find("required"); required != nullptr && required->is_array()) {
        for (const JsonValue& name : required->array_items()) {
          if (!name.is_string() || names->count(name.string_value()) > 0) continue;
          if (a.Find("patternProperties") == nullptr || NoPatternMatches(a, name.string_value())) return true;
        }
      }
    }
  }
  return false;
}

// True when `schema` has patternProperties, forbids every other undeclared member
// (additionalProperties false) and none of its patterns matches `name` (the caller has
// checked that `name` is not declared in `properties`).
bool SchemaConverter::NoPatternAdmits(const JsonValue& schema, const std::string& name) {
  const JsonValue* additional = schema.Find("additionalProperties");
  if (schema.Find("patternProperties") == nullptr || additional == nullptr || !additional->is_bool() ||
      additional->bool_value()) {
    return false;
  }
  return NoPatternMatches(schema, name);
}

// True when none of the patternProperties of `schema` matches `name`; false when that
// cannot be decided (a pattern beyond the regex subset, an automaton past its limit).
bool SchemaConverter::NoPatternMatches(const JsonValue& schema, const std::string& name) {
  try {
    return !SomePatternMatches(schema.Find("patternProperties"), name);
  } catch (const UnsupportedSchemaError&) {
  } catch (const ResourceLimitError&) {
  } catch (const RegexError&) {
  }
  return false;
}

// True when no string validates against both string schemas: their languages over
// canonical spellings (StringLanguage) have an empty intersection. Each string value has
// the same canonical spellings in both, so a common value would leave a common spelling.
// False when either language is not built (a format, a pattern beyond the regex subset, an
// automaton past its limit). A distribution asks the same pairs again on every level and in
// every combined branch (PruneAlternatives, ViableGroups), so answers and languages are kept
// for the conversion: a schema without `$ref` has one language wherever it is read (the
// pointer only resolves references), and the answer is a function of the two languages.
bool SchemaConverter::StringsDisjoint(const JsonValue& a, const JsonValue& b, const std::string& pointer) {
  std::string text_a = DumpJson(a);
  std::string text_b = DumpJson(b);
  const bool reusable = !MentionsReference(text_a) && !MentionsReference(text_b);
  std::string key;
  if (reusable) {
    // DumpJson escapes control characters, so a newline cannot occur inside either text.
    key = text_a + "\n" + text_b;
    if (auto found = strings_disjoint_.find(key); found != strings_disjoint_.end()) return found->second;
  }
  bool disjoint = false;
  try {
    std::optional<CodepointDfa> la = DisjointnessLanguage(a, reusable ? text_a : std::string(), pointer);
    if (la && la->Empty()) {
      disjoint = true;
    } else if (la) {
      std::optional<CodepointDfa> lb = DisjointnessLanguage(b, reusable ? text_b : std::string(), pointer);
      disjoint = lb && Product(*la, *lb, ProductKind::kIntersection).Empty();
    }
  } catch (const UnsupportedSchemaError&) {
  } catch (const ResourceLimitError&) {
  } catch (const RegexError&) {
  }
  if (reusable) strings_disjoint_.emplace(std::move(key), disjoint);
  return disjoint;
}

// StringLanguage for StringsDisjoint, kept by `text` (the schema's DumpJson; empty: not kept).
// Refusals inside StringLanguage propagate and are not kept.
std::optional<CodepointDfa> SchemaConverter::DisjointnessLanguage(const JsonValue& schema, const std::string& text,
                                                                  const std::string& pointer) {
  constexpr int kStringLanguageBudget = 8;
  if (text.empty()) return StringLanguage(schema, pointer, kStringLanguageBudget);
  if (auto found = disjointness_languages_.find(text); found != disjointness_languages_.end()) return found->second;
  std::optional<CodepointDfa> language = StringLanguage(schema, pointer, kStringLanguageBudget);
  disjointness_languages_.emplace(text, language);
  return language;
}

Fragment SchemaConverter::OneOf(const Node& node, int depth) {
  const JsonValue& branches = *node.schema.Find("oneOf");
  if (!branches.is_array() || branches.array_items().empty()) {
    Invalid("keyword 'oneOf' at " + ShowPointer(node.pointer) + " must be a non-empty array");
  }
  const std::vector<JsonValue>& items = branches.array_items();
  // Each branch is flattened once, on its first pair, for all its pairs (a flat branch is a
  // merged copy; n branches have n(n-1)/2 pairs, each checked both ways).
  std::vector<std::optional<JsonValue>> flat(items.size());
  std::vector<uint8_t> flattened(items.size(), 0), exact(items.size(), 1);
  auto flat_branch = [&](size_t i) -> const std::optional<JsonValue>& {
    if (!flattened[i]) {
      bool is_exact = true;
      flat[i] = FlatBranch(items[i], node.pointer, &is_exact);
      exact[i] = is_exact;
      flattened[i] = 1;
    }
    return flat[i];
  };
  auto disjoint = [&](size_t i, size_t j) {
    const std::optional<JsonValue>& a = flat_branch(i);
    const std::optional<JsonValue>& b = flat_branch(j);
    return a && b && FlatBranchesDisjoint(items[i], *a, exact[i], items[j], *b, exact[j], node.pointer, true);
  };
  std::vector<std::vector<size_t>> overlapping(items.size());
  bool overlaps = false;
  for (size_t i = 0; i < items.size(); ++i) {
    for (size_t j = i + 1; j < items.size(); ++j) {
      if (disjoint(i, j)) continue;
      overlapping[i].push_back(j);
      overlapping[j].push_back(i);
      overlaps = true;
    }
  }
  if (overlaps) {
    // Types two branches accept whole are out of the oneOf: narrow the branches to the
    // rest first (their complements then need not repeat those types).
    std::vector<PointerRename> renames;
    if (std::optional<JsonValue> narrowed = OneOfWithoutSharedTypes(node, items, &renames)) {
      synthetic_.push_back(std::move(*narrowed));
      const JsonValue& rewritten = synthetic_.back();
      return ConvertRenamed(renames, [&] { return Schema(rewritten, node.pointer, depth); });
    }
    try {
      return OverlappingOneOf(node, items, overlapping, depth);
    } catch (const ResourceLimitError& error) {
      // A limit of an automaton the complements need: say which oneOf, where the message does not.
      if (std::string_view(error.what()).find(" at /") != std::string_view::npos) throw;
      throw ResourceLimitError("keyword 'oneOf' at " + ShowPointer(node.pointer) +
                               ": the complements of its overlapping branches: " + error.what());
    }
  }
  std::vector<Fragment> choices;
  std::string base = ChildPointer(node.pointer, "oneOf");
  for (size_t i = 0; i < items.size(); ++i) {
    choices.push_back(Schema(items[i], base + "/" + std::to_string(i), depth));
  }
  return rules_.ShareLazily(Alt(choices), [&] { return RuleHint(node.pointer); });
}

// Strict mode: the refusal MergedSchemaBody gives a disjunct of ExactlyOneOf's anyOf (at
// `pointer`/anyOf/k) whose alternative groups have more combined branches than allowed, given
// before any disjunct is converted. Each disjunct is its branch intersected with the
// complements of the branches it overlaps, so the disjuncts before an oversized one may each
// distribute up to the bound, level after level (seconds of work for a schema then refused).
// The check repeats what MergedSchemaBody does first (collect, merge, prune, count); any other
// refusal on the way is left to the conversion, which meets it in its own order.
void SchemaConverter::RefuseOversizedDisjuncts(const JsonValue& disjunction, const std::string& pointer) {
  if (options_.lenient || !disjunction.is_object()) return;  // lenient drops the groups past the bound
  const JsonValue* disjuncts = disjunction.Find("anyOf");
  if (disjuncts == nullptr || !disjuncts->is_array()) return;
  const std::string any_of = ChildPointer(pointer, "anyOf");
  for (size_t k = 0; k < disjuncts->array_items().size(); ++k) {
    const JsonValue& disjunct = disjuncts->array_items()[k];
    const Node disjunct_node{disjunct, any_of + "/" + std::to_string(k)};
    if (!disjunct.is_object() || !NeedsMerge(disjunct_node)) continue;
    bool oversized = false;
    try {
      StrictTrial([&]() -> std::optional<JsonValue> {
        MergeState state;
        CollectParts(disjunct, disjunct_node.pointer, &state);
        if (state.never) return std::nullopt;
        JsonValue base = JsonValue::Object({});
        for (const auto& [part, part_pointer] : state.parts) base = MergeObjects(base, part, disjunct_node.pointer);
        if (!PruneAlternatives(base, disjunct_node.pointer, &state) || state.alternatives.empty()) return std::nullopt;
        oversized = ViableGroups(base, disjunct_node.pointer, state, kMaxDistributedBranches) < state.alternatives.size();
        return std::nullopt;
      });
    } catch (const SchemaError&) {
      continue;
    } catch (const ResourceLimitError&) {
      continue;
    } catch (const GrammarSyntaxError&) {  // a pattern the merge reads (RegexError)
      continue;
    }
    if (oversized) Unsupported(TooManyCombinedBranches(disjunct_node.pointer));
  }
}

// oneOf whose branches may overlap: exactly one holds (ExactlyOneOf), else split by type
// (OneOfByType), else the policy error; lenient: anyOf with a warning.
Fragment SchemaConverter::OverlappingOneOf(const Node& node, const std::vector<JsonValue>& items,
                                           const std::vector<std::vector<size_t>>& overlapping, int depth) {
  std::string refusal;
  std::vector<PointerRename> renames;
  if (std::optional<JsonValue> exactly_one = ExactlyOneOf(node, items, overlapping, &refusal, &renames)) {
    synthetic_.push_back(std::move(*exactly_one));
    const JsonValue& rewritten = synthetic_.back();
    return ConvertRenamed(renames, [&] {
      RefuseOversizedDisjuncts(rewritten, node.pointer);
      return Schema(rewritten, node.pointer, depth);
    });
  }
  // Split by JSON type: within one type, branches that only constrain other types accept
  // every value, and the branches that remain may be disjoint there.
  std::string message = "keyword 'oneOf' at " + ShowPointer(node.pointer) +
                        ": branches are not provably disjoint and " + refusal;
  // Strict only: lenient refusals inside the split would not stop it, and nested oneOfs
  // would each be split again per type (lenient keeps the anyOf below, with its warning).
  std::optional<JsonValue> by_type;
  renames.clear();
  if (!options_.lenient) by_type = OneOfByType(node, items, &renames);
  if (by_type) {
    synthetic_.push_back(std::move(*by_type));
    const JsonValue& rewritten = synthetic_.back();
    return ConvertRenamed(renames, [&] {
      try {
        return Schema(rewritten, node.pointer, depth);
      } catch (const UnsupportedSchemaError& error) {
        // A oneOf of the split itself (at its anyOf's pointers) refused: report this oneOf.
        if (std::string_view(error.what()).rfind("keyword 'oneOf' at " + ChildPointer(node.pointer, "anyOf"), 0) == 0) {
          throw UnsupportedSchemaError(message);
        }
        throw;
      }
    });
  }
  // Lenient: the branches become anyOf.
  Unsupported(message);
  std::vector<Fragment> choices;
  std::string base = ChildPointer(node.pointer, "oneOf");
  for (size_t i = 0; i < items.size(); ++i) {
    choices.push_back(Schema(items[i], base + "/" + std::to_string(i), depth));
  }
  return rules_.ShareLazily(Alt(choices), [&] { return RuleHint(node.pointer); });
}

}  // namespace schema_internal
}  // namespace xg2
