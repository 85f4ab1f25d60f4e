// Regular languages over Unicode code points as deterministic automata, for the schema
// keywords whose languages must be intersected or complemented before they can be written
// as a grammar: pattern next to min/maxLength or format, patternProperties next to
// properties and additionalProperties, propertyNames, bounded and multipleOf numbers.
//
// Automata are built from grammar nodes (the regex frontend's, RegexToGrammar, or a converter
// fragment's, lowered through the grammar builder: no EBNF text is printed and parsed on the
// way), combined by the product construction, and written back as fragments: one regular
// expression when state elimination keeps it small, else right-linear rules (right_linear_rules.h:
// one per state that is entered from several places or loops, the others written inside them).
#ifndef XG2_FRONTENDS_JSON_SCHEMA_REGULAR_LANGUAGE_H_
#define XG2_FRONTENDS_JSON_SCHEMA_REGULAR_LANGUAGE_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "frontends/json_schema/ebnf_builder.h"
#include "frontends/regex/regex_converter.h"
#include "grammar/grammar_ast.h"

namespace xg2 {

// States are numbered from 0 (the start). Invariant: the edges of a state are sorted by
// `lo`, pairwise disjoint, and never cover a surrogate code point.
struct CodepointDfa {
  struct Edge {
    uint32_t lo;
    uint32_t hi;
    int32_t target;
  };
  struct State {
    bool accepting = false;
    std::vector<Edge> edges;
  };
  std::vector<State> states;

  bool Accepts(std::u32string_view text) const;
  // True when no string is accepted.
  bool Empty() const;
};

// Upper bound on automaton states built by one operation (NFA nodes included); beyond it
// the operation throws ResourceLimitError.
constexpr size_t kMaxAutomatonStates = 20000;

// The language of `grammar`'s root rule. Rule references are inlined, so the rules involved
// must not be recursive (GrammarSyntaxError otherwise).
CodepointDfa DfaFromGrammar(const GrammarAst& grammar);
// The language of a fragment that names no rule (GrammarSyntaxError when it does).
CodepointDfa DfaFromFragment(const Fragment& fragment);
// The language of `root` next to the rules `definitions` (a RuleSet's Definitions(), such as
// a prebuilt format's) that it may name.
CodepointDfa DfaFromRules(const std::vector<std::pair<std::string, Fragment>>& definitions, const Fragment& root);
// The language of a regex (RegexToGrammar's nodes); throws as RegexToGrammar does. A search
// pattern whose look-aheads all stand at its start (frontends/regex/leading_lookaheads.h) is
// built by the product of its parts' automata.
CodepointDfa DfaFromRegex(std::string_view pattern, const RegexOptions& options);
// Whether `pattern` is read through DfaFromRegex's product (leading look-aheads) rather than
// as RegexToGrammar's nodes alone.
bool NeedsAutomaton(std::string_view pattern, const RegexOptions& options);
// The regex's language as a fragment: RegexFragment, or for a pattern that NeedsAutomaton,
// DfaFromRegex's automaton written by DfaToFragment into `rules` (its limits and errors).
Fragment PatternFragment(std::string_view pattern, const RegexOptions& options, RuleSet* rules,
                         const std::string& hint);
// A regex as a fragment that carries RegexToGrammar's nodes (Fragment::Built): printed as the
// text RegexToEbnf writes, in parentheses, and grafted into the grammar without a parse.
Fragment RegexFragment(std::string_view pattern, const RegexOptions& options);

enum class ProductKind { kIntersection, kDifference };
// a ∩ b, or a \ b. Trimmed and minimised.
CodepointDfa Product(const CodepointDfa& a, const CodepointDfa& b, ProductKind kind);

// `unit` repeated min_count..max_count times (max_count < 0: unbounded). `unit` must be
// prefix-free (no edges leave its accepting states), e.g. one JSON string character.
CodepointDfa Repeated(const CodepointDfa& unit, long long min_count, long long max_count);

// The equivalent automaton without dead states (a lone non-accepting start when the
// language is empty), minimal when it is small (up to 600 states).
CodepointDfa Minimized(const CodepointDfa& dfa);

// Writes `dfa` as one rule whose body is a regular expression (state elimination; when the
// minimal automaton has at most 32 states and no edge's expression passes 4 KiB) or else as
// right-linear rules, in `rules` (names derived from
// `hint`), and returns a fragment for its language (never when empty). Throws ResourceLimitError above
// `max_states` states.
Fragment DfaToFragment(const CodepointDfa& dfa, RuleSet* rules, const std::string& hint,
                       size_t max_states = 2000);

// DfaToFragment with its default limit, where a machine that passes the limit when only
// trimmed (Minimized above 600 states) is minimised fully and tried again: a key language
// such as `^.{1,255}$` over JSON-escaped names passes it when trimmed, not when minimal. For
// callers with no other way to write the language (a length next to a pattern has one: the
// counted rule), which keep their output where DfaToFragment succeeds.
Fragment MinimalDfaToFragment(const CodepointDfa& dfa, RuleSet* rules, const std::string& hint);

// True when every string of `language` already has between min_count and max_count
// (< 0: unbounded) repetitions of `unit` (one JSON string character), so that a length
// constraint next to it changes nothing. Sufficient checks only: a minimum above 256 is
// never reported implied; a maximum is implied when the language is finite and its longest
// string has at most max_count code points (a unit is at least one code point).
bool LengthImplied(const CodepointDfa& language, const CodepointDfa& unit, long long min_count,
                   long long max_count);

// The strings of `language` with between min_count and max_count (< 0: unbounded) units,
// as rules in `rules`. When the language is a finite part followed by one loop that repeats
// single units, such as `^data:image/(png|jpeg);base64,[A-Za-z0-9+/=]*$` (plain characters)
// or `^[A-Za-z_][^<>]*$` (a class that includes JSON escapes such as `\"`; only for bounds
// of 64 and more), the loop is written as a counted repetition of those units after each
// prefix length, so a large maxLength costs no automaton states (the grammar compresses
// counted repetitions);
// otherwise it is the product automaton, with DfaToFragment's limits.
// `unit_fragment` is the unit's grammar, for a language of every string (only the length
// remains).
Fragment LengthBoundedFragment(const CodepointDfa& language, const CodepointDfa& unit, const Fragment& unit_fragment,
                               long long min_count, long long max_count, RuleSet* rules, const std::string& hint);

// A character-class member for code point `cp`, escaped for the EBNF dialect.
std::string EbnfClassMember(uint32_t cp);

// UTF-32 decoding of valid UTF-8.
std::u32string DecodeUtf8ToU32(std::string_view utf8);

}  // namespace xg2

#endif  // XG2_FRONTENDS_JSON_SCHEMA_REGULAR_LANGUAGE_H_
