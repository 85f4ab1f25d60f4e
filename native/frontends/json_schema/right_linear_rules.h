// A minimal code-point DFA written as right-linear rules (regular_language.h, DfaToFragment,
// for automata too large for one expression). The FSM builder merges such a chain back into
// one rule DFA (grammar/right_linear_merge.h), so the rules only carry the language there:
// the fewer of them, the less the builder does per rule before the merge.
#ifndef XG2_FRONTENDS_JSON_SCHEMA_RIGHT_LINEAR_RULES_H_
#define XG2_FRONTENDS_JSON_SCHEMA_RIGHT_LINEAR_RULES_H_

#include <cstdint>
#include <map>
#include <string>

#include "frontends/json_schema/ebnf_builder.h"
#include "frontends/json_schema/regular_language.h"

namespace xg2 {

// The character class of each (state, target) pair: edges to one target share one class
// (target -> class members, escaped for the EBNF dialect, without brackets).
std::map<int32_t, std::string> ClassesByTarget(const CodepointDfa::State& state);

// `dfa` (minimal, not empty) as rules of `rules` (names derived from `hint`), returning a
// fragment for its language. A state that is the target of exactly one (state, class) edge
// of another state, and has no self-loop, is written inside that state's body rather than
// as a rule of its own (no text is copied: it has one use); the start, states with a
// self-loop or several incoming edges, and states whose nesting would pass a small depth are
// rules. A state with no edges (after trimming: an accepting end) is the empty string.
Fragment WriteRightLinearRules(const CodepointDfa& dfa, RuleSet* rules, const std::string& hint);

}  // namespace xg2

#endif  // XG2_FRONTENDS_JSON_SCHEMA_RIGHT_LINEAR_RULES_H_
