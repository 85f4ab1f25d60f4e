// An automaton literal: a regular language a frontend already holds as a minimal DFA (the JSON
// Schema frontend's pattern x length products, frontends/json_schema/regular_language.h),
// carried into the grammar as one node (grammar_ast.h, ExprKind::kAutomaton) so that the FSM
// builder copies its byte DFA into the rule FSM instead of lowering the language as rules and
// determinising and minimising it again (issue 39).
//
// The literal holds the language twice: over code points, as the frontend built it (what it
// denotes, what it prints as, what a frontend reads back), and over bytes, its UTF-8
// expansion (what the FSM builder copies). Immutable once made, shared between the grammars
// that hold it.
//
// Invariants (CheckAutomatonLiteralInvariants, debug builds): both automata are deterministic
// (each state's edges sorted, disjoint; no code-point edge covers a surrogate), trimmed (every
// state reachable from state 0 and able to reach acceptance), and minimal; byte nodes
// 0..n-1 are the n code-point states (same acceptance), the others inner nodes of multi-byte
// characters.
#ifndef XG2_GRAMMAR_AUTOMATON_LITERAL_H_
#define XG2_GRAMMAR_AUTOMATON_LITERAL_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace xg2 {

struct AutomatonLiteral {
  struct CodepointEdge {
    uint32_t lo;
    uint32_t hi;
    int32_t target;
  };
  struct ByteEdge {
    uint8_t lo;
    uint8_t hi;
    int32_t target;
  };
  // Over code points: state s's edges are edges[edge_begin[s], edge_begin[s + 1]).
  std::vector<uint8_t> accepting;
  std::vector<int32_t> edge_begin;
  std::vector<CodepointEdge> edges;
  // Over bytes: node v's edges are byte_edges[byte_begin[v], byte_begin[v + 1]); nodes at or
  // past num_states() are never accepting.
  std::vector<int32_t> byte_begin;
  std::vector<ByteEdge> byte_edges;
  size_t hash = 0;  // of both automata

  int32_t num_states() const { return static_cast<int32_t>(accepting.size()); }
  int32_t num_byte_nodes() const { return static_cast<int32_t>(byte_begin.size()) - 1; }
  bool ByteNodeAccepting(int32_t v) const { return v < num_states() && accepting[v] != 0; }
};

// The literal of a minimal, trimmed code-point DFA given as `accepting`, `edge_begin` and
// `edges` (the layout above; not the empty language). Its byte DFA is the UTF-8 expansion,
// with the inner nodes of multi-byte characters shared by content, which keeps it minimal.
std::shared_ptr<const AutomatonLiteral> MakeAutomatonLiteral(std::vector<uint8_t> accepting,
                                                             std::vector<int32_t> edge_begin,
                                                             std::vector<AutomatonLiteral::CodepointEdge> edges);

// The same automata, state for state.
bool SameAutomatonLiteral(const AutomatonLiteral& a, const AutomatonLiteral& b);

// The literal as right-linear EBNF rules (docs/ebnf.md), to follow `name ::= `: the start
// state's body, then a line `name__sK ::= ...` for each other state K with edges (no final
// newline). A rule set that prints it claims those names (AutomatonStateRuleName).
std::string PrintAutomatonRules(const AutomatonLiteral& literal, const std::string& name);
// Appends PrintAutomatonRules(literal, name) to `out`.
void AppendAutomatonRules(const AutomatonLiteral& literal, const std::string& name, std::string* out);
// PrintAutomatonRules(literal, name).size(), without printing (a frontend charges it against
// its byte limit and prints the rules only when asked for text).
size_t AutomatonRulesPrintedSize(const AutomatonLiteral& literal, const std::string& name);
std::string AutomatonStateRuleName(const std::string& name, int32_t state);

// Appends `cp` as a member of an EBNF character class, escaped where the dialect needs it.
void AppendEbnfClassMember(uint32_t cp, std::string* out);

// Throws InternalError naming `stage` when the literal breaks the invariants above.
void CheckAutomatonLiteralInvariants(const AutomatonLiteral& literal, const char* stage);

namespace fsm_build {
struct Dfa;
// The literal's byte DFA as a rule DFA (fsm_automata.h), nodes numbered as in the literal;
// takes its nodes from the FSM builder's node budget (ResourceLimitError when it runs out).
Dfa AutomatonRuleDfa(const AutomatonLiteral& literal, int64_t* budget);
}  // namespace fsm_build

}  // namespace xg2

#endif  // XG2_GRAMMAR_AUTOMATON_LITERAL_H_
