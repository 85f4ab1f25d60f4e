// Look-ahead assertions at the start of an anchored search pattern, such as JSON Schema's
// `^(?!x-)[a-z-]+$` or `^(?=.{1,63}$)(?!.*--)...`. At position 0 an assertion constrains the
// whole string: (?=B) keeps the strings that have a prefix matching B, (?!B) keeps the others.
// So the pattern's language is L(^R) intersected with, or minus, each L(^B) under search
// semantics (a regular language; the caller builds it by the automaton product,
// frontends/json_schema/regular_language.h). The tempered token `^((?!X).)*$` is split the
// same way: (?!X) before every character of the string is (?!.*X) at its start, for X a
// plain sequence of characters. Look-aheads elsewhere stay a RegexError.
#ifndef XG2_FRONTENDS_REGEX_LEADING_LOOKAHEADS_H_
#define XG2_FRONTENDS_REGEX_LEADING_LOOKAHEADS_H_

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace xg2 {

struct LeadingLookaheads {
  struct Assertion {
    bool negative = false;
    // The assertion's body as a search pattern anchored at the start: every top-level
    // alternative of the body with `^` in front (kept when it is already there).
    std::string prefix_pattern;
  };
  std::vector<Assertion> assertions;  // in pattern order; never empty
  std::string rest;                   // "^" followed by what follows the assertions
};

// The assertions of `pattern` when it is `^` followed by one or more (?=...) / (?!...)
// groups and then a remainder without a top-level `|` (an alternative would escape the
// assertions), or a tempered token `^((?!X)...(?!Y)c)*$` (c one character, X and Y plain
// sequences of characters); nullopt otherwise (the pattern is then read as it is, or refused by the regex
// frontend). Malformed text (unbalanced groups or classes) gives nullopt too.
std::optional<LeadingLookaheads> SplitLeadingLookaheads(std::string_view pattern);

}  // namespace xg2

#endif  // XG2_FRONTENDS_REGEX_LEADING_LOOKAHEADS_H_
