// Member names in every JSON spelling. A declared name may be written with any escape of
// any of its characters (`"\u0061"` is the name "a"); an undeclared one is any JSON string
// whose decoded value is none of the declared names, so that no spelling of a declared
// name passes as undeclared and escapes its schema (or repeats a required member).
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "frontends/json_schema/regular_language.h"
#include "frontends/json_schema/schema_converter_internal.h"
#include "support/cancellation.h"
#include "support/json.h"
#include "support/utf8.h"

namespace xg2 {
namespace schema_internal {

namespace {

constexpr uint32_t kSurrogateFirst = 0xD800, kLowSurrogateFirst = 0xDC00, kSurrogateLast = 0xDFFF;

// Hex digits lo..hi (0..15) in either case.
Fragment HexDigits(uint32_t lo, uint32_t hi) {
  const char* lower = "0123456789abcdef";
  const char* upper = "0123456789ABCDEF";
  std::string cls = "[";
  for (uint32_t d = lo; d <= hi; ++d) {
    cls += lower[d];
    if (d >= 10) cls += upper[d];
  }
  return Fragment::Atom(cls + "]");
}

// `digits` hex digits (either case) spelling a value in [lo, hi].
Fragment HexRange(uint32_t lo, uint32_t hi, int digits) {
  if (digits == 0) return Fragment::Epsilon();
  const uint32_t unit = 1u << (4 * (digits - 1));
  const uint32_t first = lo / unit, last = hi / unit, lo_rest = lo % unit, hi_rest = hi % unit;
  if (first == last) return Seq({HexDigits(first, first), HexRange(lo_rest, hi_rest, digits - 1)});
  std::vector<Fragment> choices;
  uint32_t full_from = first, full_to = last;
  if (lo_rest != 0) {
    choices.push_back(Seq({HexDigits(first, first), HexRange(lo_rest, unit - 1, digits - 1)}));
    ++full_from;
  }
  if (hi_rest != unit - 1) {
    choices.push_back(Seq({HexDigits(last, last), HexRange(0, hi_rest, digits - 1)}));
    --full_to;
  }
  if (full_from <= full_to) choices.push_back(Seq({HexDigits(full_from, full_to), HexRange(0, unit - 1, digits - 1)}));
  return Alt(choices);
}

// Four hex digits spelling a value in [lo, hi] other than those in `excluded`.
Fragment HexUnitsExcept(uint32_t lo, uint32_t hi, const std::set<uint32_t>& excluded) {
  std::vector<Fragment> choices;
  uint32_t from = lo;
  for (auto it = excluded.lower_bound(lo); it != excluded.end() && *it <= hi; ++it) {
    if (*it > from) choices.push_back(HexRange(from, *it - 1, 4));
    from = *it + 1;
  }
  if (from <= hi) choices.push_back(HexRange(from, hi, 4));
  return Alt(choices);
}

// Every spelling of the character `cp`.
Fragment SpellCharacter(uint32_t cp) {
  std::string utf8;
  AppendUtf8(cp, &utf8);
  return StringSpellings({utf8});
}

// One JSON string character, in any spelling, that stands for none of `excluded`.
Fragment CharacterOutside(const std::set<uint32_t>& excluded) {
  std::string raw = "[^\"\\\\\\x00-\\x1F";
  for (uint32_t cp : excluded) {
    if (cp >= 0x20 && cp != '"' && cp != '\\') raw += EbnfClassMember(cp);
  }
  raw += "]";
  static const std::pair<char, uint32_t> kShort[] = {{'"', '"'}, {'\\', '\\'}, {'/', '/'}, {'b', '\b'},
                                                     {'f', '\f'}, {'n', '\n'}, {'r', '\r'}, {'t', '\t'}};
  std::string letters;
  for (const auto& [letter, meaning] : kShort) {
    if (excluded.count(meaning) == 0) letters += EbnfClassMember(static_cast<unsigned char>(letter));
  }
  std::set<uint32_t> bmp;
  std::map<uint32_t, std::set<uint32_t>> low_units_of;  // high surrogate -> low units excluded
  for (uint32_t cp : excluded) {
    if (cp < 0x10000) {
      bmp.insert(cp);
    } else {
      uint32_t v = cp - 0x10000;
      low_units_of[kSurrogateFirst + (v >> 10)].insert(kLowSurrogateFirst + (v & 0x3FF));
    }
  }
  std::vector<Fragment> units = {HexUnitsExcept(0, kSurrogateFirst - 1, bmp),
                                 HexUnitsExcept(kSurrogateLast + 1, 0xFFFF, bmp)};
  // Surrogate pairs: any low unit after a high one no excluded character starts with.
  std::set<uint32_t> partial_highs;
  for (const auto& entry : low_units_of) partial_highs.insert(entry.first);
  const Fragment unicode = Fragment::Literal("\\u");
  units.push_back(Seq({HexUnitsExcept(kSurrogateFirst, kLowSurrogateFirst - 1, partial_highs), unicode,
                       HexRange(kLowSurrogateFirst, kSurrogateLast, 4)}));
  for (const auto& [high, lows] : low_units_of) {
    units.push_back(Seq({HexRange(high, high, 4), unicode, HexUnitsExcept(kLowSurrogateFirst, kSurrogateLast, lows)}));
  }
  std::vector<Fragment> choices = {Fragment::Atom(raw), Seq({unicode, Alt(units)})};
  if (!letters.empty()) choices.push_back(Seq({Fragment::Literal("\\"), Fragment::Atom("[" + letters + "]")}));
  return Alt(choices);
}

}  // namespace

Fragment SchemaConverter::DeclaredKey(const std::string& name) {
  // A structural tag's excludes are forbidden substrings of the text as written: an escaped
  // spelling could contain one, so the names keep their single canonical spelling there.
  // Canonical spelling unless asked otherwise (JsonSchemaOptions::any_key_spelling).
  if (!options_.any_key_spelling || !options_.string_excludes.empty()) return Fragment::Literal(DumpJsonString(name));
  return Seq({Fragment::Literal("\""), StringSpellings({name}), Fragment::Literal("\"")});
}

// Memoised: the same names give the same trie, and each Share in it finds the rule the first
// call defined, so a repeated call would return the same reference and change no rule.
Fragment SchemaConverter::UndeclaredKey(const std::vector<std::string>& names) {
  auto found = undeclared_keys_.find(names);
  if (found != undeclared_keys_.end()) return found->second;
  Fragment key = options_.any_key_spelling && options_.string_excludes.empty() ? KeyInNoSpellingOf(names)
                                                                                 : KeyNotIn(names);
  undeclared_keys_.emplace(names, key);
  return key;
}

// As KeyNotIn (json_schema_objects.cc), over every spelling: on the trie of the decoded
// names, a key may end where no name ends, continue along a child in any spelling of its
// character, or leave the trie with any other character and continue freely. One
// expression (a single rule DFA, which the token-mask cache classifies exactly) until a
// sub-trie's text grows large. Invariant: trie children have larger indices than parents.
Fragment SchemaConverter::KeyInNoSpellingOf(const std::vector<std::string>& names) {
  const std::vector<NameTrieNode> trie = NameTrie(names);
  const Fragment any_tail = Repeat(CommonRule("json_char"), 0, -1);
  std::vector<Fragment> fragment_of(trie.size(), Fragment::Never());
  for (size_t i = trie.size(); i-- > 0;) {
    ThrowIfCancelled();
    std::vector<Fragment> choices;
    if (!trie[i].terminal) choices.push_back(Fragment::Epsilon());
    std::set<uint32_t> child_characters;
    for (const auto& [cp, child] : trie[i].children) {
      child_characters.insert(cp);
      choices.push_back(Seq({SpellCharacter(cp), fragment_of[child]}));
    }
    choices.push_back(Seq({CharacterOutside(child_characters), any_tail}));
    constexpr size_t kMaxInlineSubtrieBytes = 4096;
    Fragment subtrie = Alt(choices);
    fragment_of[i] = subtrie.text_size() > kMaxInlineSubtrieBytes ? rules_.Share("key_suffix", subtrie) : subtrie;
  }
  return rules_.Share("key_not_declared", Seq({Fragment::Literal("\""), fragment_of[0], Fragment::Literal("\"")}));
}

}  // namespace schema_internal
}  // namespace xg2
