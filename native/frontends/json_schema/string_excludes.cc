#include "frontends/json_schema/string_excludes.h"

#include "frontends/json_schema/regular_language.h"

namespace xg2 {

Fragment JsonStringWithout(const Fragment& json_char, const std::vector<std::string>& excludes, RuleSet* rules) {
  CodepointDfa body = DfaFromFragment(Repeat(json_char, 0, -1));
  for (const std::string& excluded : excludes) {
    // Every text with `excluded` somewhere in it.
    const Fragment anything = Repeat(Fragment::CharClass("[\\x00-\\U0010FFFF]"), 0, -1);
    CodepointDfa containing = DfaFromFragment(Seq({anything, Fragment::Literal(excluded), anything}));
    body = Product(body, containing, ProductKind::kDifference);
  }
  return Seq({Fragment::Literal("\""), DfaToFragment(body, rules, "json_string_body"), Fragment::Literal("\"")});
}

namespace {

bool TextMentions(const std::string& text, const std::vector<std::string>& excludes) {
  std::string written = DumpJsonString(text);
  std::string inner = written.substr(1, written.size() - 2);
  for (const std::string& excluded : excludes) {
    if (inner.find(excluded) != std::string::npos) return true;
  }
  return false;
}

}  // namespace

bool MentionsExcluded(const JsonValue& value, const std::vector<std::string>& excludes) {
  if (excludes.empty()) return false;
  if (value.is_string()) return TextMentions(value.string_value(), excludes);
  if (value.is_array()) {
    for (const JsonValue& item : value.array_items()) {
      if (MentionsExcluded(item, excludes)) return true;
    }
  }
  if (value.is_object()) {
    for (const auto& [key, member] : value.object_members()) {
      if (TextMentions(key, excludes) || MentionsExcluded(member, excludes)) return true;
    }
  }
  return false;
}

}  // namespace xg2
