#include "frontends/regex/leading_lookaheads.h"

namespace xg2 {

namespace {

// The index just past the construct starting at pattern[i] (an escape, a character class or
// one other character), or npos when it is cut off.
size_t SkipAtom(std::string_view pattern, size_t i) {
  if (pattern[i] == '\\') return i + 2 <= pattern.size() ? i + 2 : std::string_view::npos;
  if (pattern[i] != '[') return i + 1;
  size_t j = i + 1;
  if (j < pattern.size() && pattern[j] == '^') ++j;
  for (; j < pattern.size(); ++j) {
    if (pattern[j] == '\\') {
      ++j;
    } else if (pattern[j] == ']') {
      return j + 1;
    }
  }
  return std::string_view::npos;
}

// The index of the ')' closing the group opened at pattern[open], or npos.
size_t GroupEnd(std::string_view pattern, size_t open) {
  int depth = 0;
  for (size_t i = open; i < pattern.size();) {
    if (pattern[i] == '(') ++depth;
    if (pattern[i] == ')' && --depth == 0) return i;
    i = SkipAtom(pattern, i);
    if (i == std::string_view::npos) return i;
  }
  return std::string_view::npos;
}

// `text` split at its top-level '|' (outside groups and classes); empty when unbalanced.
std::vector<std::string_view> TopLevelAlternatives(std::string_view text) {
  std::vector<std::string_view> alternatives;
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i < text.size();) {
    const char c = text[i];
    if (c == '(') ++depth;
    if (c == ')' && --depth < 0) return {};
    if (c == '|' && depth == 0) {
      alternatives.push_back(text.substr(start, i - start));
      start = i + 1;
    }
    i = SkipAtom(text, i);
    if (i == std::string_view::npos) return {};
  }
  if (depth != 0) return {};
  alternatives.push_back(text.substr(start));
  return alternatives;
}

}  // namespace

std::optional<LeadingLookaheads> SplitLeadingLookaheads(std::string_view pattern) {
  if (pattern.size() < 4 || pattern[0] != '^') return std::nullopt;
  LeadingLookaheads split;
  size_t i = 1;
  while (pattern.substr(i, 3) == "(?=" || pattern.substr(i, 3) == "(?!") {
    const size_t close = GroupEnd(pattern, i);
    if (close == std::string_view::npos) return std::nullopt;
    const std::string_view body = pattern.substr(i + 3, close - i - 3);
    LeadingLookaheads::Assertion assertion;
    assertion.negative = pattern[i + 2] == '!';
    const std::vector<std::string_view> alternatives = TopLevelAlternatives(body);
    if (alternatives.empty()) return std::nullopt;
    for (std::string_view alternative : alternatives) {
      if (!assertion.prefix_pattern.empty()) assertion.prefix_pattern += '|';
      if (alternative.empty() || alternative[0] != '^') assertion.prefix_pattern += '^';
      assertion.prefix_pattern += alternative;
    }
    split.assertions.push_back(std::move(assertion));
    i = close + 1;
  }
  if (split.assertions.empty()) return std::nullopt;
  std::string_view rest = pattern.substr(i);
  if (TopLevelAlternatives(rest).size() != 1) return std::nullopt;
  // A second `^` right after the assertions is still position 0: redundant.
  if (!rest.empty() && rest[0] == '^') rest.remove_prefix(1);
  split.rest = "^" + std::string(rest);
  return split;
}

}  // namespace xg2
