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

// Whether `text` is one atom that consumes exactly one character: a literal, `.`, a class or
// an escape other than an assertion (\b, \B) or a back-reference (\1-\9).
bool IsSingleCharacterAtom(std::string_view text) {
  if (text.empty() || SkipAtom(text, 0) != text.size()) return false;
  if (text[0] == '\\') return std::string_view("bB123456789").find(text[1]) == std::string_view::npos;
  return text.size() > 1 || std::string_view("()|^$*+?{}").find(text[0]) == std::string_view::npos;
}

// Whether `text` matches no empty string and reaches past nothing it does not consume: a
// non-empty sequence of single-character atoms without quantifiers, groups or anchors.
bool IsPlainSequence(std::string_view text) {
  if (text.empty()) return false;
  for (size_t i = 0; i < text.size();) {
    const size_t next = SkipAtom(text, i);
    if (next == std::string_view::npos || !IsSingleCharacterAtom(text.substr(i, next - i))) return false;
    i = next;
  }
  return true;
}

// The tempered token `^((?!X)(?!Y).)*$` (or `+`, a non-capturing group, any one-character
// atom for `.`): before each character of the string, X and Y must not match. With `$` right
// after the loop, the loop spans the whole string, so this is (?!X) and (?!Y) at every
// position before the end, i.e. the string has no prefix matching `^[\s\S]*X` nor
// `^[\s\S]*Y` (X and Y are plain sequences, never empty, so an occurrence starts before
// the end), with `^(?:.)*$` as the rest.
std::optional<LeadingLookaheads> SplitTemperedLoop(std::string_view pattern) {
  if (pattern.size() < 4 || pattern[0] != '^' || pattern[1] != '(') return std::nullopt;
  const size_t close = GroupEnd(pattern, 1);
  if (close == std::string_view::npos || close + 3 != pattern.size() || pattern[close + 2] != '$') {
    return std::nullopt;
  }
  const char loop = pattern[close + 1];
  if (loop != '*' && loop != '+') return std::nullopt;
  std::string_view body = pattern.substr(2, close - 2);
  if (body.substr(0, 2) == "?:") body.remove_prefix(2);
  LeadingLookaheads split;
  while (body.substr(0, 3) == "(?!") {
    const size_t end = GroupEnd(body, 0);
    if (end == std::string_view::npos) return std::nullopt;
    const std::string_view excluded = body.substr(3, end - 3);
    if (!IsPlainSequence(excluded)) return std::nullopt;
    split.assertions.push_back({true, "^[\\s\\S]*" + std::string(excluded)});
    body.remove_prefix(end + 1);
  }
  if (split.assertions.empty() || !IsSingleCharacterAtom(body)) return std::nullopt;
  split.rest = "^(?:" + std::string(body) + ")" + loop + "$";
  return split;
}

}  // namespace

std::optional<LeadingLookaheads> SplitLeadingLookaheads(std::string_view pattern) {
  if (std::optional<LeadingLookaheads> tempered = SplitTemperedLoop(pattern)) return tempered;
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
