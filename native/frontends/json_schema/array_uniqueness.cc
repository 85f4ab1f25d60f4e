// Arrays with uniqueItems or contains, as the JSON Schema converter lowers them (the other
// array keywords are in json_schema_objects.cc).
#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <vector>

#include "frontends/json_schema/schema_converter_internal.h"
#include "support/cancellation.h"
#include "support/dcheck.h"
#include "support/error.h"

namespace xg2 {
namespace schema_internal {

// uniqueItems constrains arrays only: it holds for any array of at most one item, and says
// nothing where `type` rules arrays out (`{"type": "string", "uniqueItems": true}`).
bool SchemaConverter::UniqueItemsTrivial(const Node& node) {
  const JsonValue* max_items = node.schema.Find("maxItems");
  if (max_items != nullptr && !IsIgnored(node, "maxItems") && max_items->is_number() &&
      max_items->number_value() <= 1) {
    return true;
  }
  const JsonValue* type = node.schema.Find("type");
  if (type == nullptr || IsIgnored(node, "type")) return false;
  const std::vector<JsonValue> names = type->is_array() ? type->array_items() : std::vector<JsonValue>{*type};
  return std::none_of(names.begin(), names.end(), [](const JsonValue& name) {
    return !name.is_string() || name.string_value() == "array";
  });
}

// The values an item can take when they are few and listed (enum / const, boolean, null),
// duplicates (1 and 1.0 alike) removed; nullopt otherwise, or with tuple items.
std::optional<std::vector<JsonValue>> SchemaConverter::UniqueItemDomain(const Node& node) {
  std::optional<std::vector<JsonValue>> domain = ListedItemDomain(node);
  if (domain && domain->size() > kMaxUniqueDomain) return std::nullopt;
  return domain;
}

// The values an item can take when they are listed (enum / const, boolean, null), however
// many, duplicates removed; nullopt otherwise, or with tuple items.
std::optional<std::vector<JsonValue>> SchemaConverter::ListedItemDomain(const Node& node) {
  if (node.schema.Find("prefixItems") != nullptr || node.schema.Find("contains") != nullptr) return std::nullopt;
  const JsonValue* items = node.schema.Find("items");
  if (items == nullptr || items->is_array()) return std::nullopt;
  const JsonValue& schema = Dereferenced(*items, ChildPointer(node.pointer, "items"));
  if (schema.is_bool()) {
    if (schema.bool_value()) return std::nullopt;
    return std::vector<JsonValue>{};
  }
  if (!schema.is_object()) return std::nullopt;
  std::vector<JsonValue> candidates;
  for (const auto& [keyword, value] : schema.object_members()) {
    if (!IsPassiveKeyword(keyword) && keyword != "enum" && keyword != "const" && keyword != "type") return std::nullopt;
  }
  std::set<std::string> types;
  if (const JsonValue* type = schema.Find("type")) {
    for (const JsonValue& name : type->is_array() ? type->array_items() : std::vector<JsonValue>{*type}) {
      if (!name.is_string()) return std::nullopt;
      types.insert(name.string_value());
    }
  }
  if (const JsonValue* constant = schema.Find("const")) {
    candidates.push_back(*constant);
    if (const JsonValue* values = schema.Find("enum"); values != nullptr && values->is_array()) {
      bool listed = false;
      for (const JsonValue& v : values->array_items()) listed = listed || JsonEquals(v, *constant);
      if (!listed) candidates.clear();
    }
  } else if (const JsonValue* values = schema.Find("enum")) {
    if (!values->is_array()) return std::nullopt;
    candidates = values->array_items();
  } else {
    if (types.empty()) return std::nullopt;
    for (const std::string& type : types) {
      if (type == "boolean") {
        candidates.push_back(JsonValue::Bool(true));
        candidates.push_back(JsonValue::Bool(false));
      } else if (type == "null") {
        candidates.push_back(JsonValue());
      } else {
        return std::nullopt;
      }
    }
  }
  std::vector<JsonValue> domain;
  for (const JsonValue& value : candidates) {
    std::string value_type = JsonTypeOf(value);
    bool typed = types.empty() || types.count(value_type) > 0 ||
                 (value_type == "integer" && types.count("number") > 0);
    bool seen = std::any_of(domain.begin(), domain.end(), [&](const JsonValue& d) { return JsonEquals(d, value); });
    if (typed && !seen) domain.push_back(value);
  }
  return domain;
}

// The listed scalar values (strings, numbers, booleans, null) of items too many for one rule
// per subset (UniqueItemDomain): the matcher keeps them distinct, each item a finite automaton
// of the values' spellings, which the parser checks prefix by prefix (grammar/grammar_fsm.h,
// "Unique items": a prefix is kept while some unused value extends it). Nullopt otherwise.
std::optional<std::vector<JsonValue>> SchemaConverter::ListedScalarItems(const Node& node) {
  std::optional<std::vector<JsonValue>> domain = ListedItemDomain(node);
  if (!domain || domain->size() <= kMaxUniqueDomain) return std::nullopt;
  for (const JsonValue& value : *domain) {
    if (value.is_array() || value.is_object()) return std::nullopt;  // spellings with whitespace loops
  }
  return domain;
}

// The item count bounds of a [unique_items] rule over listed scalars: a maxItems of at least
// the number of values bounds nothing (the parser refuses another item once every value is
// used), so it is dropped; nullopt for the maximum means unbounded.
std::pair<long long, std::optional<long long>> SchemaConverter::ListedItemCounts(const Node& node, size_t values) {
  const long long min_items = CountKeyword(node, "minItems").value_or(0);
  std::optional<long long> max_items = CountKeyword(node, "maxItems");
  if (max_items && *max_items >= static_cast<long long>(values)) max_items.reset();
  return {min_items, max_items};
}

namespace {

// Whether every state of `dfa` (trimmed: every state reaches acceptance) has infinitely many
// accepted continuations, i.e. reaches a cycle. States with finitely many are found backwards
// from those without edges: a state is finite once all its successors are.
bool EveryStateReachesACycle(const CodepointDfa& dfa) {
  const size_t n = dfa.states.size();
  std::vector<std::vector<int32_t>> predecessors(n);
  std::vector<size_t> open_successors(n, 0);
  for (size_t q = 0; q < n; ++q) {
    std::set<int32_t> targets;
    for (const CodepointDfa::Edge& edge : dfa.states[q].edges) targets.insert(edge.target);
    open_successors[q] = targets.size();
    for (int32_t target : targets) predecessors[static_cast<size_t>(target)].push_back(static_cast<int32_t>(q));
  }
  std::vector<int32_t> finite;
  for (size_t q = 0; q < n; ++q) {
    if (open_successors[q] == 0) finite.push_back(static_cast<int32_t>(q));
  }
  for (size_t i = 0; i < finite.size(); ++i) {
    for (int32_t predecessor : predecessors[static_cast<size_t>(finite[i])]) {
      if (--open_successors[static_cast<size_t>(predecessor)] == 0) finite.push_back(predecessor);
    }
  }
  return finite.empty();
}

}  // namespace

// The condition UniqueItemsByMatcher rests on, for a string item with a pattern: the item's
// string language (canonical spellings, as its grammar writes a pattern) as a trimmed
// automaton over the body, in which every state, i.e. every prefix of the body, has
// infinitely many completions. Infinitely many spellings are infinitely many values (a value
// has finitely many spellings), and the one finite choice, the closing quote, is the re-checked
// item end. `^[a-z][a-z0-9]*$` passes; `^\d+x$` does not (after "1x" only the quote).
bool SchemaConverter::EveryPrefixHasInfinitelyManyCompletions(const JsonValue& item_schema,
                                                               const std::string& pointer) {
  try {
    std::optional<CodepointDfa> language = StringLanguage(item_schema, pointer, 8);
    return language && !language->Empty() && EveryStateReachesACycle(Minimized(*language));
  } catch (const CompilationCancelledError&) {
    throw;
  } catch (const Error&) {
    return false;  // no automaton within the limits: not shown
  }
}

// Why the matcher cannot keep the items distinct ("" when it can): see UniqueItemsByMatcher.
// The item schema must be one whose every prefix that is not a whole value nothing may follow
// has completions of infinitely many values (so no finite set of used values makes it a dead
// end): an open-ended value (OpenEndedValueRefusal) or an object as UniqueObjectItemRefusal
// allows.
std::string SchemaConverter::UniqueItemsByMatcherRefusal(const Node& node) {
  if (node.schema.Find("prefixItems") != nullptr || node.schema.Find("contains") != nullptr) {
    return "tuple items or contains next to it";
  }
  const JsonValue* items = node.schema.Find("items");
  if (items == nullptr || items->is_array()) return "the items are any value or a tuple";
  if (std::optional<std::vector<JsonValue>> listed = ListedScalarItems(node)) {
    const auto [min_items, max_items] = ListedItemCounts(node, listed->size());
    if (min_items > static_cast<long long>(listed->size())) return "";  // no array: the grammar is empty
    if (min_items > kMaxUniqueItemsBound) return "minItems above " + std::to_string(kMaxUniqueItemsBound);
    if (max_items && *max_items > kMaxUniqueItemsBound) {
      return "maxItems above " + std::to_string(kMaxUniqueItemsBound);
    }
    return "";
  }
  const JsonValue& schema = Dereferenced(*items, ChildPointer(node.pointer, "items"));
  if (!schema.is_object()) return "the items are any value";
  const JsonValue* type = schema.Find("type");
  if (type != nullptr && type->is_array() && type->array_items().size() == 1) type = &type->array_items()[0];
  const bool object = type != nullptr && type->is_string() && type->string_value() == "object";
  const std::string refusal =
      object ? UniqueObjectItemRefusal(schema, ChildPointer(node.pointer, "items"))
             : OpenEndedValueRefusal(schema, ChildPointer(node.pointer, "items"));
  if (!refusal.empty()) return refusal;
  for (const char* bound : {"minItems", "maxItems"}) {
    if (std::optional<long long> count = CountKeyword(node, bound); count && *count > kMaxUniqueItemsBound) {
      return std::string(bound) + " above " + std::to_string(kMaxUniqueItemsBound);
    }
  }
  return "";
}

// Why `schema` is not a value language every prefix of which (short of a complete value that
// nothing may follow) has completions of infinitely many values ("" when it is): each of its
// types (one, or several in a `type` list: the union of such languages is such a language) a
// string with at most minLength and a pattern whose automaton shows it
// (EveryPrefixHasInfinitelyManyCompletions), a number or integer without bounds, or an
// object that more undeclared members may always follow (SurelyOpenObject), and nothing
// else asserted.
std::string SchemaConverter::OpenEndedValueRefusal(const JsonValue& value_schema, const std::string& pointer) {
  const JsonValue& schema = Dereferenced(value_schema, pointer);
  if (!schema.is_object()) return "the items are any value";
  const std::string not_typed = "the items are not one of the types string, number, integer, object";
  const JsonValue* type = schema.Find("type");
  if (type == nullptr) return not_typed;
  std::set<std::string> names;
  for (const JsonValue& name : type->is_array() ? type->array_items() : std::vector<JsonValue>{*type}) {
    if (!name.is_string()) return not_typed;
    names.insert(name.string_value());
  }
  if (names.empty()) return not_typed;
  for (const std::string& name : names) {
    if (name != "string" && name != "number" && name != "integer" && name != "object") return not_typed;
  }
  const bool objects = names.count("object") > 0, strings = names.count("string") > 0;
  if (objects) {
    if (!SurelyOpenObject(schema)) return "an object that no more members may follow";
    if (names.size() == 1) return "";
    // A whole open object in the item (its brace is the item's end): as UniqueObjectItemRefusal.
    if (layout_.depth_sensitive()) return "object items under an indented layout";
    if (options_.any_order) return "object items with any_order";
    if (!options_.string_excludes.empty()) return "object items next to excluded strings";
  }
  bool patterned = false;
  for (const auto& [keyword, value] : schema.object_members()) {
    if (IsPassiveKeyword(keyword) || keyword == "type" || (strings && keyword == "minLength")) continue;
    if (objects && (keyword == "properties" || keyword == "required" || keyword == "additionalProperties")) continue;
    if (strings && keyword == "pattern") {
      patterned = true;
      continue;
    }
    return "the item keyword '" + keyword + "' can leave an item prefix with no unused value";
  }
  if (patterned && !EveryPrefixHasInfinitelyManyCompletions(schema, pointer)) {
    return "the item keyword 'pattern' can leave an item prefix with no unused value";
  }
  return "";
}

// Whether more members may follow every member of objects of `schema` (type object checked
// by the caller): no keyword but type, properties, required and additionalProperties, and
// additionalProperties true or {} (or absent where undeclared members are allowed: not strict
// mode next to declared properties, as ObjectValue decides). Such an object's every prefix
// has completions of infinitely many values.
bool SchemaConverter::SurelyOpenObject(const JsonValue& schema) {
  for (const auto& [keyword, value] : schema.object_members()) {
    if (!IsPassiveKeyword(keyword) && keyword != "type" && keyword != "properties" && keyword != "required" &&
        keyword != "additionalProperties") {
      return false;
    }
  }
  const JsonValue* additional = schema.Find("additionalProperties");
  if (additional == nullptr) return !options_.strict_mode || schema.Find("properties") == nullptr;
  return (additional->is_bool() && additional->bool_value()) ||
         (additional->is_object() && additional->object_members().empty());
}

// Why the matcher cannot keep object items of `item_schema` distinct ("" when it can). The
// item rule ends before the object's closing brace (OpenEndedObjectItem), so the one prefix
// with a single completion that may be taken is a whole object: it enters the item rule's
// final node, where the matcher re-checks the token. Every other prefix must have completions
// of infinitely many values: so either more members may always follow (SurelyOpenObject), or
// the last declared member (members are written in schema order) is open-ended
// (OpenEndedValueRefusal), which any earlier prefix may still add.
std::string SchemaConverter::UniqueObjectItemRefusal(const JsonValue& item_schema, const std::string& pointer) {
  if (layout_.depth_sensitive()) return "object items under an indented layout";
  if (options_.any_order) return "object items with any_order";
  if (!options_.string_excludes.empty()) return "object items next to excluded strings";
  for (const auto& [keyword, value] : item_schema.object_members()) {
    if (!IsPassiveKeyword(keyword) && keyword != "type" && keyword != "properties" && keyword != "required" &&
        keyword != "additionalProperties") {
      return "the item keyword '" + keyword + "' next to object items";
    }
  }
  const JsonValue* properties = item_schema.Find("properties");
  const JsonValue* required = item_schema.Find("required");
  const JsonValue* additional = item_schema.Find("additionalProperties");
  if ((properties != nullptr && !properties->is_object()) || (required != nullptr && !required->is_array()) ||
      (additional != nullptr && !additional->is_object() && !additional->is_bool())) {
    return "object items with malformed keywords";
  }
  for (size_t i = 0; required != nullptr && i < required->array_items().size(); ++i) {
    const JsonValue& name = required->array_items()[i];
    if (!name.is_string() || properties == nullptr || properties->Find(name.string_value()) == nullptr) {
      return "object items with a required name they do not declare";
    }
  }
  if (SurelyOpenObject(item_schema) || properties == nullptr || properties->object_members().empty()) return "";
  const auto& [last_name, last_schema] = properties->object_members().back();
  const std::string why =
      OpenEndedValueRefusal(last_schema, ChildPointer(ChildPointer(pointer, "properties"), last_name));
  if (why.empty()) return "";
  return "object items whose last member '" + last_name + "' can end an item in one way (" + why + ")";
}

// An object item of a [unique_items] array without its closing brace, which the array rule
// writes after it (UniqueObjectItemRefusal says why): "{" alone is the empty object where it
// is allowed, so the brace after it spells {} in every layout UniqueObjectItemRefusal allows.
Fragment SchemaConverter::OpenEndedObjectItem(const JsonValue& item_schema, const std::string& pointer,
                                              int depth) {
  if (!ContainersAllowed(depth)) return Fragment::Never();
  const JsonValue* properties = item_schema.Find("properties");
  const JsonValue* required = item_schema.Find("required");
  const JsonValue* additional = item_schema.Find("additionalProperties");
  std::set<std::string> required_names;
  for (size_t i = 0; required != nullptr && i < required->array_items().size(); ++i) {
    required_names.insert(required->array_items()[i].string_value());
  }
  const Fragment key_separator = layout_.KeySeparator();
  std::vector<std::string> names;
  std::vector<Fragment> members;
  std::vector<bool> member_required;
  const std::string properties_pointer = ChildPointer(pointer, "properties");
  for (size_t i = 0; properties != nullptr && i < properties->object_members().size(); ++i) {
    const auto& [name, subschema] = properties->object_members()[i];
    names.push_back(name);
    const Fragment value = Schema(subschema, ChildPointer(properties_pointer, name), depth + 1);
    if (value.never()) {
      if (required_names.count(name) > 0) return Fragment::Never();
      if (i + 1 == properties->object_members().size() && !SurelyOpenObject(item_schema)) {
        // The earlier members would end the item, and their values need not be open-ended.
        Unsupported("unsupported keyword 'uniqueItems' at " + ShowPointer(pointer) +
                    ": the last member of the object items can hold no value");
        return Fragment::Never();
      }
      continue;
    }
    members.push_back(Seq({DeclaredKey(name), key_separator, value}));
    member_required.push_back(required_names.count(name) > 0);
  }
  Fragment additional_value = Fragment::Never();
  if (additional == nullptr) {
    if (!options_.strict_mode || properties == nullptr) additional_value = AnyValue(depth + 1);
  } else {
    additional_value = Schema(*additional, ChildPointer(pointer, "additionalProperties"), depth + 1);
  }
  const Fragment extra_member = additional_value.never()
                                    ? Fragment::Never()
                                    : Seq({UndeclaredKey(names), key_separator, additional_value});
  const std::string hint = RuleHint(pointer) + "_object";
  bool may_be_empty = false;
  const Fragment content = MembersInOrderContent(members, member_required, extra_member, hint, depth, &may_be_empty);
  std::vector<Fragment> choices;
  if (may_be_empty) choices.push_back(Fragment::Literal("{"));
  choices.push_back(Seq({layout_.Open('{', LayoutDepth(depth)), content}));
  return Alt(choices);
}

bool SchemaConverter::UniqueItemsByMatcher(const Node& node) { return UniqueItemsByMatcherRefusal(node).empty(); }

namespace {

// `body` min..max times (max -1: unbounded) with each bounded copy written out: min copies,
// then max - min nested optionals (or a star). A [unique_items] rule cannot hold a compressed
// repetition (its Earley items carry the value set in the counter's place), and Repeat's
// bounded form is compressed whenever its bound passes the compiler's
// repetition_compression_threshold, which callers may set below kMaxUniqueItemsBound; an
// optional or a star is never compressed.
Fragment ExplicitRepeat(const Fragment& body, long long min, long long max) {
  XG2_DCHECK(max < 0 || (min <= max && max <= kMaxUniqueItemsBound), "explicit repetitions are small");
  Fragment optional_tail = max < 0 ? Repeat(body, 0, -1) : Fragment::Epsilon();
  for (long long i = min; i < max; ++i) optional_tail = Optional(Seq({body, optional_tail}));
  std::vector<Fragment> parts(static_cast<size_t>(min), body);
  parts.push_back(optional_tail);
  return Seq(parts);
}

}  // namespace

// uniqueItems over strings, numbers, objects or many listed scalars, decided by the matcher
// (grammar/grammar_fsm.h, "Unique items"): the array is a [unique_items] rule whose items are
// one [unique_item] rule (for objects, each followed by the closing brace the item rule
// leaves out; for listed scalars, the alternatives of the values' spellings only, so that the
// item rule is a finite automaton without calls).
Fragment SchemaConverter::UniqueArrayByMatcher(const Node& node, int depth) {
  if (!ContainersAllowed(depth)) return Fragment::Never();
  if (std::optional<std::vector<JsonValue>> listed = ListedScalarItems(node)) {
    std::vector<Fragment> spellings;
    for (const JsonValue& value : *listed) spellings.push_back(ConstValue(value, depth + 1));
    const auto [min_items, max_items] = ListedItemCounts(node, listed->size());
    if (min_items > static_cast<long long>(listed->size())) return Fragment::Never();
    return UniqueItemsRule(node, depth, Alt(spellings), Fragment::Epsilon(), min_items, max_items);
  }
  const std::string items_pointer = ChildPointer(node.pointer, "items");
  const JsonValue& item_schema = Dereferenced(*node.schema.Find("items"), items_pointer);
  const JsonValue* item_type = item_schema.Find("type");
  if (item_type != nullptr && item_type->is_array() && item_type->array_items().size() == 1) {
    item_type = &item_type->array_items()[0];
  }
  // An object item ends before its closing brace (OpenEndedObjectItem), written after it here.
  const bool object_items = item_type != nullptr && item_type->is_string() && item_type->string_value() == "object";
  const Fragment item = object_items ? OpenEndedObjectItem(item_schema, items_pointer, depth + 1)
                                     : Schema(*node.schema.Find("items"), items_pointer, depth + 1);
  const Fragment item_end = object_items ? layout_.Close('}', LayoutDepth(depth + 1)) : Fragment::Epsilon();
  return UniqueItemsRule(node, depth, item, item_end, CountKeyword(node, "minItems").value_or(0),
                         CountKeyword(node, "maxItems"));
}

// The [unique_items] rule of UniqueArrayByMatcher: min_items..max_items (nullopt: unbounded)
// copies of the [unique_item] rule `item`, each followed by `item_end`.
Fragment SchemaConverter::UniqueItemsRule(const Node& node, int depth, const Fragment& item, const Fragment& item_end,
                                          long long min_items, std::optional<long long> max_items) {
  if (max_items && min_items > *max_items) return Fragment::Never();
  std::vector<Fragment> choices;
  if (min_items == 0) choices.push_back(layout_.EmptyContainer('[', ']'));
  if (!item.never() && (!max_items || *max_items > 0)) {
    const int layout_depth = LayoutDepth(depth);
    const std::string hint = RuleHint(node.pointer) + "_unique";
    const Fragment unique_item = Seq({rules_.ShareUniqueItem(hint + "_item", item), item_end});
    const Fragment more = ExplicitRepeat(Seq({layout_.ItemSeparator(layout_depth), unique_item}),
                                         std::max(0LL, min_items - 1), max_items ? *max_items - 1 : -1);
    choices.push_back(Seq({layout_.Open('[', layout_depth), unique_item, more, layout_.Close(']', layout_depth)}));
  }
  if (choices.empty()) return Fragment::Never();
  const std::string name = rules_.Reserve(RuleHint(node.pointer) + "_unique");
  rules_.Define(name, Alt(choices));
  rules_.MarkUniqueItems(name);
  return Fragment::Rule(name);
}

// uniqueItems over a listed domain of n values: one rule per set of values already used
// (at most 2^n), each continuing with an unused value or closing once minItems is met. Other
// item languages go to the matcher (UniqueArrayByMatcher).
Fragment SchemaConverter::UniqueArrayValue(const Node& node, int depth) {
  if (!ContainersAllowed(depth)) return Fragment::Never();
  if (!UniqueItemDomain(node)) return UniqueArrayByMatcher(node, depth);
  std::vector<JsonValue> domain = *UniqueItemDomain(node);
  long long min_items = CountKeyword(node, "minItems").value_or(0);
  long long max_items = std::min<long long>(CountKeyword(node, "maxItems").value_or(static_cast<long long>(domain.size())),
                                            static_cast<long long>(domain.size()));
  if (min_items > max_items) return Fragment::Never();
  int layout_depth = LayoutDepth(depth);
  std::vector<Fragment> values;
  for (const JsonValue& value : domain) values.push_back(ConstValue(value, depth + 1));
  std::string hint = RuleHint(node.pointer) + "_unique";
  std::map<unsigned, std::string> names;
  // The rest of the array after the values in `used`, as a rule.
  std::function<Fragment(unsigned, long long)> after = [&](unsigned used, long long count) -> Fragment {
    if (auto found = names.find(used); found != names.end()) return Fragment::Atom(found->second);
    std::vector<Fragment> choices;
    if (count >= min_items) choices.push_back(layout_.Close(']', layout_depth));
    for (size_t i = 0; count < max_items && i < domain.size(); ++i) {
      if (used & (1u << i)) continue;
      choices.push_back(Seq({layout_.ItemSeparator(layout_depth), values[i], after(used | (1u << i), count + 1)}));
    }
    std::string name = rules_.Reserve(hint);
    rules_.Define(name, Alt(choices));
    names.emplace(used, name);
    return Fragment::Atom(name);
  };
  std::vector<Fragment> choices;
  if (min_items == 0) choices.push_back(layout_.EmptyContainer('[', ']'));
  for (size_t i = 0; max_items > 0 && i < domain.size(); ++i) {
    choices.push_back(Seq({layout_.Open('[', layout_depth), values[i], after(1u << i, 1)}));
  }
  return rules_.Share(hint, Alt(choices));
}

// Why contains cannot be enforced here ("" when it can): items must be one schema (no
// tuple), `contains` must have a complement, and the counters must stay small.
std::string SchemaConverter::ContainsRefusal(const Node& node) {
  if (node.schema.Find("prefixItems") != nullptr ||
      (node.schema.Find("items") != nullptr && node.schema.Find("items")->is_array())) {
    return "next to tuple items";
  }
  const JsonValue* unique = node.schema.Find("uniqueItems");
  if (unique != nullptr && unique->is_bool() && unique->bool_value() && !UniqueItemsTrivial(node)) {
    return "next to uniqueItems";
  }
  if (!Complement(*node.schema.Find("contains"), ChildPointer(node.pointer, "contains"), false, 8)) {
    return "its complement is not a schema (the items that do not match must be generated too)";
  }
  auto bound = [&](const char* keyword) -> std::optional<double> {
    const JsonValue* value = node.schema.Find(keyword);
    if (value == nullptr || !value->is_number()) return std::nullopt;
    return value->number_value();
  };
  double contains_states = legacy_ref_ ? 2 : bound("maxContains").value_or(bound("minContains").value_or(1)) + 1;
  double item_states = bound("maxItems").value_or(bound("minItems").value_or(0)) + 1;
  if (contains_states * item_states > kMaxContainsStates) {
    return "the item counters need more than " + std::to_string(kMaxContainsStates) + " rules";
  }
  return "";
}

// contains / minContains / maxContains: every item either matches `contains` (allOf
// [items, contains]) or not (allOf [items, complement of contains]), and the grammar counts
// the matches (m) next to the items (t): one rule per reachable (m, t), counters saturating
// where no upper bound needs them. Draft 7 has no min/maxContains (at least one match).
Fragment SchemaConverter::ContainsArrayValue(const Node& node, int depth) {
  if (!ContainersAllowed(depth)) return Fragment::Never();
  const JsonValue& contains = *node.schema.Find("contains");
  std::string contains_pointer = ChildPointer(node.pointer, "contains");
  JsonValue failing = *Complement(contains, contains_pointer, false, 8);
  const JsonValue* items = node.schema.Find("items");
  auto with_items = [&](const JsonValue& part) {
    if (items == nullptr || IsIgnored(node, "items")) return part;
    return JsonValue::Object({{"allOf", JsonValue::Array({*items, part})}});
  };
  synthetic_.push_back(with_items(contains));
  Fragment matching = Schema(synthetic_.back(), contains_pointer, depth + 1);
  synthetic_.push_back(with_items(failing));
  Fragment other = Schema(synthetic_.back(), contains_pointer + "/not", depth + 1);
  long long low = legacy_ref_ ? 1 : CountKeyword(node, "minContains").value_or(1);
  std::optional<long long> high = legacy_ref_ ? std::nullopt : CountKeyword(node, "maxContains");
  long long min_items = CountKeyword(node, "minItems").value_or(0);
  std::optional<long long> max_items = CountKeyword(node, "maxItems");
  if (high && *high < low) return Fragment::Never();
  long long top_m = high ? *high : low, top_t = max_items ? *max_items : min_items;
  auto width = static_cast<size_t>(top_t + 1);
  auto index = [&](long long m, long long t) { return static_cast<size_t>(m) * width + static_cast<size_t>(t); };
  // Successor of (m, t) after a matching / other item; -1 when a bound forbids it.
  auto next = [&](long long m, long long t, bool match) -> std::pair<long long, long long> {
    if (match ? matching.never() : other.never()) return {-1, -1};
    long long m2 = match ? m + 1 : m, t2 = t + 1;
    if (m2 > top_m) {
      if (high) return {-1, -1};
      m2 = top_m;
    }
    if (t2 > top_t) {
      if (max_items) return {-1, -1};
      t2 = top_t;
    }
    return {m2, t2};
  };
  auto accepts = [&](long long m, long long t) { return m >= low && t >= min_items; };
  // Productive states (those that can still reach an accepted array), by fixpoint.
  size_t count = static_cast<size_t>(top_m + 1) * width;
  std::vector<bool> productive(count, false);
  for (bool changed = true; changed;) {
    changed = false;
    for (long long m = 0; m <= top_m; ++m) {
      for (long long t = 0; t <= top_t; ++t) {
        if (productive[index(m, t)]) continue;
        bool ok = accepts(m, t);
        for (bool match : {true, false}) {
          auto [m2, t2] = next(m, t, match);
          ok = ok || (m2 >= 0 && productive[index(m2, t2)]);
        }
        if (ok) productive[index(m, t)] = changed = true;
      }
    }
  }
  int layout_depth = LayoutDepth(depth);
  std::string hint = RuleHint(node.pointer) + "_contains";
  std::vector<std::string> names(count);
  std::function<Fragment(long long, long long)> after = [&](long long m, long long t) -> Fragment {
    std::string& name = names[index(m, t)];
    if (!name.empty()) return Fragment::Atom(name);
    name = rules_.Reserve(hint);
    std::vector<Fragment> choices;
    if (accepts(m, t)) choices.push_back(layout_.Close(']', layout_depth));
    for (bool match : {true, false}) {
      auto [m2, t2] = next(m, t, match);
      if (m2 < 0 || !productive[index(m2, t2)]) continue;
      choices.push_back(Seq({layout_.ItemSeparator(layout_depth), match ? matching : other, after(m2, t2)}));
    }
    rules_.Define(name, Alt(choices));
    return Fragment::Atom(name);
  };
  std::vector<Fragment> choices;
  if (accepts(0, 0)) choices.push_back(layout_.EmptyContainer('[', ']'));
  for (bool match : {true, false}) {
    auto [m2, t2] = next(0, 0, match);
    if (m2 < 0 || !productive[index(m2, t2)]) continue;
    choices.push_back(Seq({layout_.Open('[', layout_depth), match ? matching : other, after(m2, t2)}));
  }
  return rules_.Share(hint, Alt(choices));
}

}  // namespace schema_internal
}  // namespace xg2
