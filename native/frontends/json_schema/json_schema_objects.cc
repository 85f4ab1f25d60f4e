// JSON Schema -> EBNF: objects (declared properties in order, undeclared ones after them
// under keys that never repeat a declared name) and arrays (tuples, item counts).
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string_view>
#include <unordered_set>

#include "frontends/json_schema/regular_language.h"
#include "frontends/json_schema/schema_converter_internal.h"
#include "frontends/json_schema/string_excludes.h"
#include "frontends/regex/leading_lookaheads.h"
#include "frontends/regex/regex_converter.h"
#include "support/cancellation.h"
#include "support/error.h"
#include "support/json.h"

namespace xg2 {
namespace schema_internal {

namespace {

std::vector<uint32_t> DecodeUtf8(const std::string& text) {
  std::vector<uint32_t> codepoints;
  for (size_t i = 0; i < text.size();) {
    unsigned char lead = static_cast<unsigned char>(text[i]);
    int length = lead < 0x80 ? 1 : lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4;
    uint32_t cp = length == 1 ? lead : lead & (0x7F >> length);
    for (int k = 1; k < length && i + k < text.size(); ++k) {
      cp = (cp << 6) | (static_cast<unsigned char>(text[i + k]) & 0x3F);
    }
    codepoints.push_back(cp);
    i += length;
  }
  return codepoints;
}

std::string EncodeUtf8(uint32_t cp) {
  std::string out;
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
  return out;
}

// Short escapes of a JSON string: the letter after '\' and the character it stands for.
const std::pair<char, uint32_t> kShortEscapes[] = {
    {'"', '"'}, {'\\', '\\'}, {'/', '/'}, {'b', '\b'}, {'f', '\f'}, {'n', '\n'}, {'r', '\r'}, {'t', '\t'},
};

// The ways json_key_char spells the character `cp`: raw (when JSON allows it raw) and the
// short escape (when there is one). Never for control characters without a short escape.
Fragment SpellKeyCharacter(uint32_t cp) {
  std::vector<Fragment> spellings;
  if (cp >= 0x20 && cp != '"' && cp != '\\') spellings.push_back(Fragment::Literal(EncodeUtf8(cp)));
  for (const auto& [letter, meaning] : kShortEscapes) {
    if (meaning == cp) spellings.push_back(Fragment::Literal(std::string("\\") + letter));
  }
  return Alt(spellings);
}

// One json_key_char that does not stand for any character in `excluded`.
Fragment KeyCharacterOutside(const std::set<uint32_t>& excluded) {
  std::string raw = "[^\"\\\\\\x00-\\x1F";
  for (uint32_t cp : excluded) {
    if (cp >= 0x20 && cp != '"' && cp != '\\') raw += EbnfClassMember(cp);
  }
  raw += "]";
  std::string letters;
  for (const auto& [letter, meaning] : kShortEscapes) {
    if (excluded.count(meaning) == 0) letters += EbnfClassMember(static_cast<unsigned char>(letter));
  }
  std::vector<Fragment> choices = {Fragment::Atom(raw)};
  if (!letters.empty()) {
    choices.push_back(Seq({Fragment::Literal("\\"), Fragment::Atom("[" + letters + "]")}));
  }
  return Alt(choices);
}

}  // namespace

std::vector<NameTrieNode> NameTrie(const std::vector<std::string>& names) {
  std::vector<NameTrieNode> trie(1);
  for (const std::string& name : names) {
    size_t at = 0;
    for (uint32_t cp : DecodeUtf8(name)) {
      auto found = trie[at].children.find(cp);
      if (found == trie[at].children.end()) {
        trie.emplace_back();
        found = trie[at].children.emplace(cp, trie.size() - 1).first;
      }
      at = found->second;
    }
    trie[at].terminal = true;
  }
  return trie;
}

// A JSON string (quotes included) whose decoded value is none of `names`, built on the
// trie of the names: at each trie node the key may end (unless a name ends there),
// continue along a child, or leave the trie with any other character and then continue
// freely.
Fragment SchemaConverter::KeyNotIn(const std::vector<std::string>& names) {
  const std::vector<NameTrieNode> trie = NameTrie(names);
  Fragment any_tail = Repeat(CommonRule("json_key_char"), 0, -1);
  std::vector<Fragment> fragment_of(trie.size(), Fragment::Never());
  for (size_t i = trie.size(); i-- > 0;) {
    ThrowIfCancelled();
    std::vector<Fragment> choices;
    if (!trie[i].terminal) choices.push_back(Fragment::Epsilon());
    std::set<uint32_t> child_characters;
    for (const auto& [cp, child] : trie[i].children) {
      child_characters.insert(cp);
      choices.push_back(Seq({SpellKeyCharacter(cp), fragment_of[child]}));
    }
    choices.push_back(Seq({KeyCharacterOutside(child_characters), any_tail}));
    // Sub-tries stay inside the one key rule (a single rule DFA, which the token-mask cache
    // classifies exactly; a rule per trie node leaves every token that crosses a node
    // uncertain, for the Earley parser) until their text grows large.
    constexpr size_t kMaxInlineSubtrieBytes = 4096;
    Fragment subtrie = Alt(choices);
    fragment_of[i] = subtrie.text_size() > kMaxInlineSubtrieBytes ? rules_.Share("key_suffix", subtrie) : subtrie;
  }
  return rules_.Share("key_not_declared",
                      Seq({Fragment::Literal("\""), fragment_of[0], Fragment::Literal("\"")}));
}

namespace {

// Quoted member names in canonical spelling (see NameLanguages): lower-case hex digits, as
// DumpJsonString writes declared names, so no name has a second spelling.
const CodepointDfa& QuotedNameUniverse() {
  static const CodepointDfa* universe = [] {
    // "\"" ([^"\\\x00-\x1F] | "\\" ["\\bfnrt] | "\\u00" ("0" [0-7bef] | "1" [0-9a-f]))* "\""
    const Fragment escaped_control = Seq({Fragment::Literal("\\u00"),
                                          Alt({Seq({Fragment::Literal("0"), Fragment::CharClass("[0-7bef]")}),
                                               Seq({Fragment::Literal("1"), Fragment::CharClass("[0-9a-f]")})})});
    const Fragment character = Alt({Fragment::CharClass(R"([^"\\\x00-\x1F])"),
                                    Seq({Fragment::Literal("\\"), Fragment::CharClass(R"(["\\bfnrt])")}),
                                    escaped_control});
    return new CodepointDfa(
        DfaFromFragment(Seq({Fragment::Literal("\""), Repeat(character, 0, -1), Fragment::Literal("\"")})));
  }();
  return *universe;
}

}  // namespace

std::optional<GrammarAst> SchemaConverter::SubschemaGrammar(const JsonValue& schema, const std::string& pointer) {
  SchemaConverter sub(document_, options_);
  sub.identifiers_ = identifiers_;
  sub.base_uri_ = base_uri_;
  sub.rules_.ReserveNamed("root");
  Fragment body = sub.Schema(schema, pointer, 0);
  for (const std::string& warning : sub.warnings_) {
    if (warned_.insert(warning).second) warnings_.push_back(warning);
  }
  if (body.never()) return std::nullopt;
  sub.rules_.Define("root", body);
  return sub.rules_.Lower("root");
}

// Schemas repeat patterns (one per localised property, say), and each automaton costs a
// subset construction and a product, so each pattern's is built once per conversion.
const CodepointDfa& SchemaConverter::PatternNames(const std::string& pattern) {
  auto found = pattern_names_.find(pattern);
  if (found != pattern_names_.end()) return found->second;
  CodepointDfa names;
  if (std::optional<LeadingLookaheads> split = SplitLeadingLookaheads(pattern)) {
    // Quoting commutes with intersection and difference, so the look-aheads at the pattern's
    // start (leading_lookaheads.h) apply to the names as they apply to the strings.
    names = PatternNames(split->rest);
    for (const LeadingLookaheads::Assertion& assertion : split->assertions) {
      names = Product(names, PatternNames(assertion.prefix_pattern),
                      assertion.negative ? ProductKind::kDifference : ProductKind::kIntersection);
    }
  } else {
    RegexOptions regex_options;
    regex_options.search = true;
    regex_options.json_string_body = true;
    const Fragment quoted =
        Seq({Fragment::Literal("\""), RegexFragment(pattern, regex_options), Fragment::Literal("\"")});
    names = Product(DfaFromFragment(quoted), QuotedNameUniverse(), ProductKind::kIntersection);
  }
  return pattern_names_.emplace(pattern, std::move(names)).first->second;
}

NameLanguages SchemaConverter::NameLanguagesOf(const Node& node) {
  NameLanguages languages;
  const JsonValue* patterns =
      IsIgnored(node, "patternProperties") ? nullptr : node.schema.Find("patternProperties");
  const JsonValue* property_names =
      IsIgnored(node, "propertyNames") ? nullptr : node.schema.Find("propertyNames");
  if (patterns == nullptr && property_names == nullptr) return languages;
  std::string where = " at " + ShowPointer(node.pointer);
  if (patterns != nullptr && !patterns->is_object()) {
    Invalid("keyword 'patternProperties'" + where + " must be an object");
  }
  const char* keyword = "patternProperties";
  try {
    std::string base = ChildPointer(node.pointer, "patternProperties");
    for (size_t i = 0; patterns != nullptr && i < patterns->object_members().size(); ++i) {
      const auto& [pattern, schema] = patterns->object_members()[i];
      languages.patterns.push_back(PatternNames(pattern));
      languages.pattern_schemas.push_back(&schema);
      languages.pattern_pointers.push_back(ChildPointer(base, pattern));
    }
    keyword = "propertyNames";
    if (property_names != nullptr && !(property_names->is_bool() && property_names->bool_value())) {
      std::string pointer = ChildPointer(node.pointer, "propertyNames");
      std::optional<GrammarAst> grammar;
      if (!property_names->is_bool()) {
        synthetic_.push_back(JsonValue::Object({{"allOf", JsonValue::Array({*property_names,
            JsonValue::Object({{"type", JsonValue::String("string")}})})}}));
        grammar = SubschemaGrammar(synthetic_.back(), pointer);
      }
      CodepointDfa none;
      none.states.emplace_back();
      languages.names = !grammar ? none
                                 : Product(DfaFromGrammar(*grammar), QuotedNameUniverse(), ProductKind::kIntersection);
    }
  } catch (const GrammarSyntaxError& e) {  // regex errors, recursive name schemas
    Unsupported("unsupported keyword '" + std::string(keyword) + "'" + where + ": " + e.what());
    ignored_keywords_.insert({node.pointer, keyword});
    return NameLanguagesOf(node);
  } catch (const ResourceLimitError& e) {
    Unsupported("unsupported keyword '" + std::string(keyword) + "'" + where + ": " + e.what());
    ignored_keywords_.insert({node.pointer, keyword});
    return NameLanguagesOf(node);
  }
  languages.active = true;
  return languages;
}

std::vector<SchemaConverter::NameRegion> SchemaConverter::NameRegions(const NameLanguages& languages,
                                                                      const std::vector<std::string>& names,
                                                                      bool with_unmatched) {
  const std::vector<CodepointDfa>& patterns = languages.patterns;
  // Without patterns the one region is the unmatched names.
  if (patterns.empty() && !with_unmatched) return {};
  CodepointDfa base = QuotedNameUniverse();
  if (languages.names) base = Product(base, *languages.names, ProductKind::kIntersection);
  if (!names.empty()) {
    std::vector<Fragment> literals;
    for (const std::string& name : names) literals.push_back(Fragment::Literal(DumpJsonString(name)));
    base = Product(base, DfaFromFragment(Alt(literals)), ProductKind::kDifference);
  }
  // Names matched by several patterns take all their schemas: the name space is split
  // into one region per set of patterns that match some name together, by refining the
  // partition pattern by pattern and dropping empty blocks (most of the 2^count sets are
  // empty: a literal name inside a character-class pattern adds one block, not a doubling).
  // Disjoint patterns give one region each, however many; regions of several patterns are
  // bounded.
  constexpr size_t kMaxSharedRegions = 64;
  std::vector<NameRegion> blocks{{base, {}}};
  for (size_t i = 0; i < patterns.size(); ++i) {
    const bool last = i + 1 == patterns.size();
    std::vector<NameRegion> refined;
    for (NameRegion& block : blocks) {
      CodepointDfa inside = Product(block.names, patterns[i], ProductKind::kIntersection);
      if (inside.Empty()) {
        refined.push_back(std::move(block));
        continue;
      }
      std::vector<size_t> with = block.patterns;
      with.push_back(i);
      refined.push_back({std::move(inside), std::move(with)});
      // The unmatched names outside the last pattern are the unmatched region: the costliest
      // product here (a complement of every pattern), built only when it is wanted.
      if (last && block.patterns.empty() && !with_unmatched) continue;
      CodepointDfa outside = Product(block.names, patterns[i], ProductKind::kDifference);
      if (!outside.Empty()) refined.push_back({std::move(outside), std::move(block.patterns)});
    }
    blocks = std::move(refined);
    const auto shared =
        std::count_if(blocks.begin(), blocks.end(), [](const NameRegion& b) { return b.patterns.size() > 1; });
    if (static_cast<size_t>(shared) > kMaxSharedRegions) {
      throw ResourceLimitError("its patterns split member names into more than " +
                               std::to_string(kMaxSharedRegions) + " regions matched by several patterns");
    }
  }
  blocks.erase(std::remove_if(blocks.begin(), blocks.end(),
                              [&](const NameRegion& b) {
                                return (b.patterns.empty() && !with_unmatched) || b.names.Empty();
                              }),
               blocks.end());
  return blocks;
}

Fragment SchemaConverter::UndeclaredMembers(const Node& node, const NameLanguages& languages,
                                            const std::vector<std::string>& names,
                                            const Fragment& additional_value, int depth) {
  std::string where = " at " + ShowPointer(node.pointer);
  Fragment key_separator = layout_.KeySeparator();
  std::vector<Fragment> choices;
  try {
    // The names no pattern matches take additionalProperties, if it allows any value.
    const std::vector<NameRegion> regions = NameRegions(languages, names, !additional_value.never());
    auto add_region = [&](const NameRegion& region) {
      Fragment value = additional_value;
      const std::vector<size_t>& which = region.patterns;
      if (which.size() == 1) {
        value = Schema(*languages.pattern_schemas[which[0]], languages.pattern_pointers[which[0]], depth + 1);
      } else if (!which.empty()) {
        std::vector<JsonValue> conjuncts;
        for (size_t i : which) conjuncts.push_back(*languages.pattern_schemas[i]);
        synthetic_.push_back(JsonValue::Object({{"allOf", JsonValue::Array(std::move(conjuncts))}}));
        value = Schema(synthetic_.back(), ChildPointer(node.pointer, "patternProperties"), depth + 1);
      }
      if (value.never()) return;
      Fragment key = MinimalDfaToFragment(region.names, &rules_, RuleHint(node.pointer) + "_key");
      choices.push_back(Seq({key, key_separator, value}));
    };
    for (const NameRegion& region : regions) {
      if (!region.patterns.empty()) add_region(region);
    }
    // The unmatched region last (NameRegions leaves it out unless additionalProperties allows it).
    for (const NameRegion& region : regions) {
      if (region.patterns.empty()) add_region(region);
    }
  } catch (const ResourceLimitError& e) {
    Unsupported("unsupported keyword 'patternProperties'" + where + ": " + e.what());
    return Fragment::Never();
  }
  return Alt(choices);
}

// The object grammar for `members` in order (members[i] is "key: value"), where required[i]
// says whether member i must appear, followed by any number of `extra_member`s (never:
// none). rest[j] is members j.. each preceded by a separator, then the extras. The first
// member present is any optional one before the first required one, or that one.
// rest[j] for 1 <= j <= first_required is referenced twice (by rest[j-1] and as the tail
// after a first member), so it becomes a rule. The tail after the first required member is
// used once, inline, and is written as one sequence: folding it from the end would copy each
// suffix once per member, quadratic in the number of members.
Fragment SchemaConverter::MembersInOrder(const std::vector<Fragment>& members,
                                         const std::vector<bool>& required,
                                         const Fragment& extra_member, const std::string& hint,
                                         int depth) {
  int layout_depth = LayoutDepth(depth);
  bool may_be_empty = false;
  Fragment content = MembersInOrderContent(members, required, extra_member, hint, depth, &may_be_empty);
  Fragment nonempty = Seq({layout_.Open('{', layout_depth), content, layout_.Close('}', layout_depth)});
  if (!may_be_empty) return nonempty;
  return Alt({layout_.EmptyContainer('{', '}'), nonempty});
}

// MembersInOrder's members without the braces (at least one member); *may_be_empty: whether
// the object may have none.
Fragment SchemaConverter::MembersInOrderContent(const std::vector<Fragment>& members,
                                                const std::vector<bool>& required,
                                                const Fragment& extra_member, const std::string& hint,
                                                int depth, bool* may_be_empty) {
  int layout_depth = LayoutDepth(depth);
  size_t count = members.size();
  size_t first_required =
      std::find(required.begin(), required.end(), true) - required.begin();
  Fragment separator = layout_.ItemSeparator(layout_depth);
  const Fragment extras = Repeat(Seq({separator, extra_member}), 0, -1);
  size_t inline_from = std::min(first_required + 1, count);
  std::vector<Fragment> rest(inline_from + 1, Fragment::Never());
  {
    std::vector<Fragment> tail;
    tail.reserve(count - inline_from + 1);
    for (size_t j = inline_from; j < count; ++j) {
      ThrowIfCancelled();
      Fragment member = Seq({separator, members[j]});
      tail.push_back(required[j] ? std::move(member) : Optional(member));
    }
    tail.push_back(extras);
    rest[inline_from] = Seq(tail);
  }
  const std::string rest_hint = hint + "_rest";
  for (size_t j = inline_from; j-- > 1;) {
    ThrowIfCancelled();
    Fragment member = Seq({separator, members[j]});
    rest[j] = rules_.Share(rest_hint, Seq({required[j] ? member : Optional(member), rest[j + 1]}));
  }
  std::vector<Fragment> first_choices;
  for (size_t i = 0; i < count && i <= first_required; ++i) {
    first_choices.push_back(Seq({members[i], rest[i + 1]}));
  }
  *may_be_empty = first_required == count;
  if (*may_be_empty) first_choices.push_back(Seq({extra_member, extras}));
  return Alt(first_choices);
}

// As MembersInOrder, with between `min_count` and `max_count` (< 0: unbounded) members in
// all. rest(j, c) is members j.. (each after a separator) given c members so far; the
// count saturates at the largest value that still matters, so there are at most
// members x (bound + 2) distinct tails (shared as rules).
Fragment SchemaConverter::MembersInOrderCounted(const std::vector<Fragment>& members,
                                                const std::vector<bool>& required,
                                                const Fragment& extra_member, long long min_count,
                                                long long max_count, const std::string& hint,
                                                int depth) {
  int layout_depth = LayoutDepth(depth);
  size_t count = members.size();
  long long saturate = max_count >= 0 ? max_count + 1 : min_count;
  Fragment separator = layout_.ItemSeparator(layout_depth);
  std::map<std::pair<size_t, long long>, Fragment> memo;
  const std::string rest_hint = hint + "_rest";
  auto extras = [&](long long so_far) {
    if (max_count >= 0 && so_far > max_count) return Fragment::Never();
    long long low = std::max(0LL, min_count - so_far);
    if (low > 0 && extra_member.never()) return Fragment::Never();
    long long high = max_count < 0 ? -1 : max_count - so_far;
    if (extra_member.never()) return Fragment::Epsilon();
    return Repeat(Seq({separator, extra_member}), static_cast<int>(low), static_cast<int>(high));
  };
  std::function<Fragment(size_t, long long)> rest = [&](size_t j, long long so_far) -> Fragment {
    so_far = std::min(so_far, saturate);
    if (max_count >= 0 && so_far > max_count) return Fragment::Never();
    if (j == count) return extras(so_far);
    auto found = memo.find({j, so_far});
    if (found != memo.end()) return found->second;
    Fragment present = Seq({separator, members[j], rest(j + 1, so_far + 1)});
    Fragment tail = required[j] ? present : Alt({present, rest(j + 1, so_far)});
    tail = rules_.Share(rest_hint, tail);
    memo.emplace(std::make_pair(j, so_far), tail);
    return tail;
  };
  size_t first_required = std::find(required.begin(), required.end(), true) - required.begin();
  std::vector<Fragment> first_choices;
  for (size_t i = 0; i < count && i <= first_required; ++i) {
    first_choices.push_back(Seq({members[i], rest(i + 1, 1)}));
  }
  bool no_members = first_required == count;
  if (no_members && !extra_member.never()) {
    // The first member is an undeclared one: no declared member follows.
    Fragment more = max_count >= 0 && max_count < 1 ? Fragment::Never() : extras(1);
    first_choices.push_back(Seq({extra_member, more}));
  }
  std::vector<Fragment> choices;
  if (no_members && min_count == 0) choices.push_back(layout_.EmptyContainer('{', '}'));
  Fragment content = Alt(first_choices);
  if (!content.never()) {
    choices.push_back(Seq({layout_.Open('{', layout_depth), content, layout_.Close('}', layout_depth)}));
  }
  return Alt(choices);
}

// The any_order object grammar: one rule per set S of declared members already present,
// rest(S) = [end, once every required member is in S]
//         | separator member_i rest(S + {i})   for each declared i not in S
//         | separator extra_member rest(S),
// so each declared key appears at most once, required ones exactly once, and undeclared
// members anywhere. That is 2^n rules for n declared members, hence the bound. Member counts
// (min/maxProperties) are |S| when no undeclared member can appear; next to undeclared
// members they are the policy error. nullopt: refused (the policy error was raised, or
// lenient: the caller falls back to declared order). Sets from which no object can end
// (e.g. past maxProperties without a required member) get no rule.
std::optional<Fragment> SchemaConverter::MembersInAnyOrder(const std::vector<Fragment>& members,
                                                           const std::vector<bool>& required,
                                                           const Fragment& extra_member, long long min_count,
                                                           long long max_count, const Node& node,
                                                           const std::string& hint, int depth) {
  size_t count = members.size();
  std::string where = " at " + ShowPointer(node.pointer);
  if (count > kMaxAnyOrderMembers) {
    Unsupported("unsupported option 'any_order'" + where + ": " + std::to_string(count) +
                " declared properties (limit " + std::to_string(kMaxAnyOrderMembers) + ")");
    return std::nullopt;
  }
  bool counted = min_count > 0 || max_count >= 0;
  if (counted && !extra_member.never()) {
    Unsupported("unsupported option 'any_order'" + where +
                ": min/maxProperties next to undeclared members");
    return std::nullopt;
  }
  int layout_depth = LayoutDepth(depth);
  Fragment separator = layout_.ItemSeparator(layout_depth);
  uint32_t required_set = 0;
  for (size_t i = 0; i < count; ++i) {
    if (required[i]) required_set |= uint32_t{1} << i;
  }
  auto size_of = [](uint32_t set) { return static_cast<long long>(__builtin_popcount(set)); };
  auto may_end = [&](uint32_t set) {
    return (set & required_set) == required_set && size_of(set) >= min_count &&
           (max_count < 0 || size_of(set) <= max_count);
  };
  auto may_grow = [&](uint32_t set) { return max_count < 0 || size_of(set) < max_count; };
  // Each member (after its separator) is one shared rule, referenced from up to 2^(n-1) sets.
  std::vector<Fragment> later_member;
  for (size_t i = 0; i < count; ++i) later_member.push_back(rules_.Share(hint + "_member", Seq({separator, members[i]})));
  Fragment later_extra =
      extra_member.never() ? extra_member : rules_.Share(hint + "_extra", Seq({separator, extra_member}));
  uint32_t sets = uint32_t{1} << count;
  // live[S]: some object ends after S (sets grow, so larger sets are decided first).
  std::vector<bool> live(sets, false);
  for (uint32_t set = sets; set-- > 0;) {
    live[set] = may_end(set);
    for (size_t i = 0; i < count && !live[set] && may_grow(set); ++i) {
      uint32_t bit = uint32_t{1} << i;
      live[set] = (set & bit) == 0 && live[set | bit];
    }
  }
  if (!live[0]) return Fragment::Never();
  std::vector<std::string> rest(sets);
  for (uint32_t set = 0; set < sets; ++set) {
    if (live[set]) rest[set] = rules_.Reserve(hint + "_rest");
  }
  for (uint32_t set = 0; set < sets; ++set) {
    if (!live[set]) continue;
    std::vector<Fragment> choices;
    if (may_end(set)) choices.push_back(Fragment::Epsilon());
    for (size_t i = 0; i < count && may_grow(set); ++i) {
      uint32_t bit = uint32_t{1} << i;
      if ((set & bit) == 0 && live[set | bit]) {
        choices.push_back(Seq({later_member[i], Fragment::Atom(rest[set | bit])}));
      }
    }
    if (!extra_member.never()) choices.push_back(Seq({later_extra, Fragment::Atom(rest[set])}));
    rules_.Define(rest[set], Alt(choices));
  }
  std::vector<Fragment> first;
  for (size_t i = 0; i < count && may_grow(0); ++i) {
    if (live[uint32_t{1} << i]) first.push_back(Seq({members[i], Fragment::Atom(rest[uint32_t{1} << i])}));
  }
  if (!extra_member.never()) first.push_back(Seq({extra_member, Fragment::Atom(rest[0])}));
  std::vector<Fragment> choices;
  if (may_end(0)) choices.push_back(layout_.EmptyContainer('{', '}'));
  if (!first.empty()) {
    choices.push_back(Seq({layout_.Open('{', layout_depth), Alt(first), layout_.Close('}', layout_depth)}));
  }
  return Alt(choices);
}

Fragment SchemaConverter::ObjectValue(const Node& node, int depth) {
  if (!ContainersAllowed(depth)) return Fragment::Never();
  std::string where = " at " + ShowPointer(node.pointer);
  const JsonValue* properties = IsIgnored(node, "properties") ? nullptr : node.schema.Find("properties");
  const JsonValue* required = IsIgnored(node, "required") ? nullptr : node.schema.Find("required");
  const JsonValue* additional =
      IsIgnored(node, "additionalProperties") ? nullptr : node.schema.Find("additionalProperties");
  if (properties != nullptr && !properties->is_object()) Invalid("keyword 'properties'" + where + " must be an object");
  if (additional != nullptr && !additional->is_object() && !additional->is_bool()) {
    Invalid("keyword 'additionalProperties'" + where + " must be a schema");
  }
  std::vector<std::string> required_names;  // in `required` order, without repeats
  std::unordered_set<std::string_view> required_set;  // views of the schema's strings
  if (required != nullptr) {
    if (!required->is_array()) Invalid("keyword 'required'" + where + " must be an array of strings");
    for (const JsonValue& name : required->array_items()) {
      if (!name.is_string()) Invalid("keyword 'required'" + where + " must be an array of strings");
      if (required_set.insert(name.string_value()).second) required_names.push_back(name.string_value());
    }
  }
  auto is_required = [&](const std::string& name) { return required_set.count(name) > 0; };

  // What undeclared members may hold: nothing (never), any value, or a schema.
  Fragment key_separator = layout_.KeySeparator();
  Fragment additional_value = Fragment::Never();
  bool additional_forbidden_explicitly = additional != nullptr && additional->is_bool() &&
                                         !additional->bool_value();
  // Strict mode forbids undeclared properties only where the schema declares some: an
  // object schema without properties / patternProperties / additionalProperties (such as
  // {"type": "object"}) accepts any members, as in OpenAI's strict mode and xgrammar.
  bool declares_properties = properties != nullptr || node.schema.Find("patternProperties") != nullptr;
  if (additional == nullptr) {
    if (!options_.strict_mode || !declares_properties) additional_value = AnyValue(depth + 1);
  } else {
    additional_value = Schema(*additional, ChildPointer(node.pointer, "additionalProperties"), depth + 1);
  }

  // patternProperties / propertyNames: member names are sorted into disjoint regular
  // languages (regular_language.h), each with the conjunction of the schemas that apply.
  NameLanguages languages = NameLanguagesOf(node);

  std::vector<std::string> names;
  std::unordered_set<std::string_view> declared;  // views of the schema's property names
  std::vector<Fragment> members;
  std::vector<bool> member_required;
  std::string properties_pointer = ChildPointer(node.pointer, "properties");
  // The schemas a listed name's value must satisfy besides its own: the patterns it matches.
  auto with_patterns = [&](const std::string& name, const JsonValue* own, const std::string& pointer,
                           bool* allowed) -> Fragment {
    std::u32string quoted = DecodeUtf8ToU32(DumpJsonString(name));
    // A name with an excluded substring cannot be written (a structural tag's excludes).
    *allowed = (!languages.names || languages.names->Accepts(quoted)) &&
               !MentionsExcluded(JsonValue::String(name), options_.string_excludes);
    std::vector<JsonValue> conjuncts;
    if (own != nullptr) conjuncts.push_back(*own);
    for (size_t i = 0; i < languages.patterns.size(); ++i) {
      if (languages.patterns[i].Accepts(quoted)) conjuncts.push_back(*languages.pattern_schemas[i]);
    }
    if (!*allowed) return Fragment::Never();
    if (own != nullptr && conjuncts.size() == 1) return Schema(*own, pointer, depth + 1);
    if (conjuncts.empty()) return additional != nullptr ? additional_value : AnyValue(depth + 1);
    if (conjuncts.size() == 1) {
      synthetic_.push_back(conjuncts[0]);
    } else {
      synthetic_.push_back(JsonValue::Object({{"allOf", JsonValue::Array(std::move(conjuncts))}}));
    }
    return Schema(synthetic_.back(), pointer, depth + 1);
  };
  for (size_t i = 0; properties != nullptr && i < properties->object_members().size(); ++i) {
    const auto& [name, subschema] = properties->object_members()[i];
    names.push_back(name);
    declared.insert(name);
    bool allowed = true;
    Fragment value = with_patterns(name, &subschema, ChildPointer(properties_pointer, name), &allowed);
    if (value.never()) {
      if (is_required(name)) return Fragment::Never();
      continue;  // the property can never be present
    }
    members.push_back(Seq({DeclaredKey(name), key_separator, value}));
    member_required.push_back(is_required(name));
  }
  // Required but undeclared names come after the declared ones, in `required` order. Their
  // values follow the patterns they match, else additionalProperties; without it (strict
  // mode) any value is accepted.
  for (const std::string& name : required_names) {
    if (declared.count(name) > 0) continue;
    bool allowed = true;
    Fragment value = with_patterns(name, nullptr, ChildPointer(node.pointer, "required"), &allowed);
    bool matches_pattern = false;
    for (const CodepointDfa& pattern : languages.patterns) {
      matches_pattern = matches_pattern || pattern.Accepts(DecodeUtf8ToU32(DumpJsonString(name)));
    }
    if (!allowed || (additional_forbidden_explicitly && !matches_pattern)) return Fragment::Never();
    if (value.never()) return Fragment::Never();
    names.push_back(name);
    members.push_back(Seq({DeclaredKey(name), key_separator, value}));
    member_required.push_back(true);
  }
  Fragment extra_member = Fragment::Never();
  if (!languages.active) {
    if (!additional_value.never()) extra_member = Seq({UndeclaredKey(names), key_separator, additional_value});
  } else {
    extra_member = UndeclaredMembers(node, languages, names, additional_value, depth);
  }
  std::string hint = RuleHint(node.pointer) + "_object";
  long long min_count = CountKeyword(node, "minProperties").value_or(0);
  long long max_count = CountKeyword(node, "maxProperties").value_or(-1);
  if (min_count >= 2 && !extra_member.never()) {
    // Undeclared members may repeat a key, and a repeated key counts once in the instance:
    // counting them up to a minimum above 1 would accept objects with too few members.
    Unsupported("unsupported keyword 'minProperties' at " + ShowPointer(node.pointer) +
                ": a minimum above 1 next to undeclared members (repeated keys cannot be excluded)");
    ignored_keywords_.insert({node.pointer, "minProperties"});
    min_count = 0;
  }
  // MembersInOrderCounted's tails: the count of declared members so far never passes their
  // number, so a large bound adds no states (undeclared members are one counted repetition).
  long long counted_states = static_cast<long long>(members.size() + 1) *
                             (std::min<long long>(std::max(min_count, max_count), members.size()) + 2);
  if ((min_count > 0 || max_count >= 0) && counted_states > 20000) {
    Unsupported("unsupported keyword '" + std::string(max_count >= 0 ? "maxProperties" : "minProperties") +
                "' at " + ShowPointer(node.pointer) + ": too many member-count states");
    min_count = 0;
    max_count = -1;
  }
  if (options_.any_order && (members.size() >= 2 || (!members.empty() && !extra_member.never()))) {
    std::optional<Fragment> any_order = MembersInAnyOrder(members, member_required, extra_member, min_count,
                                                          max_count, node, hint, depth);
    if (any_order) return rules_.Share(hint, *any_order);
  }
  if (min_count == 0 && max_count < 0) {
    return rules_.Share(hint, MembersInOrder(members, member_required, extra_member, hint, depth));
  }
  return rules_.Share(hint, MembersInOrderCounted(members, member_required, extra_member, min_count,
                                                  max_count, hint, depth));
}

Fragment SchemaConverter::ArrayValue(const Node& node, int depth) {
  if (!ContainersAllowed(depth)) return Fragment::Never();
  std::string where = " at " + ShowPointer(node.pointer);
  const JsonValue* prefix_items = IsIgnored(node, "prefixItems") ? nullptr : node.schema.Find("prefixItems");
  const JsonValue* items = IsIgnored(node, "items") ? nullptr : node.schema.Find("items");
  const JsonValue* additional_items =
      IsIgnored(node, "additionalItems") ? nullptr : node.schema.Find("additionalItems");
  if (prefix_items != nullptr && !prefix_items->is_array()) {
    Invalid("keyword 'prefixItems'" + where + " must be an array of schemas");
  }
  // The tuple part and the schema of every later item (draft 2020 or draft 4..2019 style).
  const JsonValue* tuple = nullptr;
  std::string tuple_pointer, rest_pointer;
  const JsonValue* rest = nullptr;
  if (prefix_items != nullptr) {
    tuple = prefix_items;
    tuple_pointer = ChildPointer(node.pointer, "prefixItems");
    if (items != nullptr && items->is_array()) Invalid("keyword 'items'" + where + " must be a schema next to 'prefixItems'");
    rest = items;
    rest_pointer = ChildPointer(node.pointer, "items");
  } else if (items != nullptr && items->is_array()) {
    tuple = items;
    tuple_pointer = ChildPointer(node.pointer, "items");
    rest = additional_items;
    rest_pointer = ChildPointer(node.pointer, "additionalItems");
  } else {
    rest = items;
    rest_pointer = ChildPointer(node.pointer, "items");
  }
  long long min_items = CountKeyword(node, "minItems").value_or(0);
  std::optional<long long> max_items = CountKeyword(node, "maxItems");

  std::vector<Fragment> slots;  // the tuple items that can be present, in order
  for (size_t i = 0; tuple != nullptr && i < tuple->array_items().size(); ++i) {
    if (max_items && static_cast<long long>(i) >= *max_items) break;
    Fragment item = Schema(tuple->array_items()[i], tuple_pointer + "/" + std::to_string(i), depth + 1);
    if (item.never()) break;  // an array can end before this position, never go past it
    slots.push_back(item);
  }
  bool tuple_truncated = tuple != nullptr && slots.size() < tuple->array_items().size();
  Fragment rest_item = rest == nullptr ? AnyValue(depth + 1) : Schema(*rest, rest_pointer, depth + 1);
  long long tuple_size = static_cast<long long>(slots.size());
  // Invariant: the array has at most `longest` items (-1: unbounded).
  long long longest = max_items ? *max_items : -1;
  if (tuple_truncated || rest_item.never()) {
    longest = longest < 0 ? tuple_size : std::min(longest, tuple_size);
  }
  if (longest >= 0 && min_items > longest) return Fragment::Never();

  int layout_depth = LayoutDepth(depth);
  Fragment separator = layout_.ItemSeparator(layout_depth);
  // tail: the items after position i given that item i-1 is present, each after a separator.
  long long rest_min = std::max(0LL, min_items - tuple_size);
  long long rest_max = longest < 0 ? -1 : longest - tuple_size;
  auto rest_tail = [&](long long already_in_rest) {
    long long low = std::max(0LL, rest_min - already_in_rest);
    long long high = rest_max < 0 ? -1 : rest_max - already_in_rest;
    return Repeat(Seq({separator, rest_item}), static_cast<int>(low), static_cast<int>(high));
  };
  Fragment content = Fragment::Never();
  if (longest != 0) {
    if (tuple_size == 0) {
      content = Seq({rest_item, rest_tail(1)});
    } else {
      Fragment tail = rest_tail(0);
      for (long long i = tuple_size - 1; i >= 1; --i) {
        Fragment item = Seq({separator, slots[static_cast<size_t>(i)], tail});
        tail = i < min_items ? item : Optional(item);
      }
      content = Seq({slots[0], tail});
    }
  }
  std::vector<Fragment> choices;
  if (min_items == 0) choices.push_back(layout_.EmptyContainer('[', ']'));
  choices.push_back(Seq({layout_.Open('[', layout_depth), content, layout_.Close(']', layout_depth)}));
  return rules_.ShareLazily(Alt(choices), [&] { return RuleHint(node.pointer) + "_array"; });
}

}  // namespace schema_internal
}  // namespace xg2
