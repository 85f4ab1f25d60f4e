// The invariant checkers of the working automata (see the header).
#include "grammar/fsm_automata.h"

#include "support/dcheck.h"

namespace xg2 {
namespace fsm_build {
namespace {

[[noreturn]] void Broken(const char* automaton, const char* stage, const std::string& detail) {
  throw InternalError(std::string("internal error: ") + automaton + " invariant broken after " + stage + ": " +
                      detail);
}

// The checks both automata share, over state s's edges.
template <typename Automaton>
void CheckStateEdges(const Automaton& dfa, int32_t s, int32_t num_rules, const char* kind, const char* stage) {
  const int32_t size = dfa.size();
  const std::string at = "state " + std::to_string(s);
  const ByteEdge* previous = nullptr;
  for (const ByteEdge& e : dfa.BytesOf(s)) {
    if (e.lo > e.hi) Broken(kind, stage, at + " has a byte edge with lo > hi");
    if (previous && previous->hi >= e.lo) Broken(kind, stage, at + "'s byte edges are not sorted and disjoint");
    if (e.target < 0 || e.target >= size) Broken(kind, stage, at + " has a byte edge to " + std::to_string(e.target));
    previous = &e;
  }
  const RuleEdge* previous_rule = nullptr;
  for (const RuleEdge& e : dfa.RulesOf(s)) {
    if (e.rule < 0 || (num_rules >= 0 && e.rule >= num_rules)) {
      Broken(kind, stage, at + " calls rule " + std::to_string(e.rule));
    }
    if (previous_rule && previous_rule->rule >= e.rule) {
      Broken(kind, stage, at + "'s rule edges are not sorted by rule, one per rule");
    }
    if (e.target < 0 || e.target >= size) Broken(kind, stage, at + " has a rule edge to " + std::to_string(e.target));
    previous_rule = &e;
  }
}

void CheckLoops(const std::vector<CountedLoop>& loops, int32_t size, const char* kind, const char* stage) {
  for (size_t k = 0; k < loops.size(); ++k) {
    const CountedLoop& loop = loops[k];
    const bool dead = loop.head == -1 && loop.gate == -1;
    if (!dead && (loop.head < 0 || loop.head >= size || loop.gate < 0 || loop.gate >= size)) {
      Broken(kind, stage, "counted loop " + std::to_string(k) + " has head " + std::to_string(loop.head) +
                              " and gate " + std::to_string(loop.gate));
    }
  }
}

void CheckLoopField(int32_t value, size_t loops, int32_t s, const char* field, const char* kind, const char* stage) {
  if (value < -1 || value >= static_cast<int32_t>(loops)) {
    Broken(kind, stage, "state " + std::to_string(s) + " has " + field + " " + std::to_string(value));
  }
}

}  // namespace

void CheckRuleDfaInvariants(const Dfa& dfa, int32_t num_rules, const char* stage) {
  constexpr const char* kKind = "rule DFA";
  if (dfa.nodes.empty()) Broken(kKind, stage, "no start state");
  for (int32_t s = 0; s < dfa.size(); ++s) {
    const Dfa::Node& node = dfa.nodes[s];
    if (node.byte_begin < 0 || node.byte_begin > node.byte_end ||
        node.byte_end > static_cast<int32_t>(dfa.byte_edges.size()) || node.rule_begin < 0 ||
        node.rule_begin > node.rule_end || node.rule_end > static_cast<int32_t>(dfa.rule_edges.size())) {
      Broken(kKind, stage, "state " + std::to_string(s) + "'s edge ranges lie outside the edge arrays");
    }
    CheckStateEdges(dfa, s, num_rules, kKind, stage);
    CheckLoopField(node.loop, dfa.loops.size(), s, "loop", kKind, stage);
    CheckLoopField(node.gate_loop, dfa.loops.size(), s, "gate_loop", kKind, stage);
  }
  CheckLoops(dfa.loops, dfa.size(), kKind, stage);
}

void CheckFlatDfaInvariants(const FlatDfa& dfa, const char* stage) {
  constexpr const char* kKind = "determinised DFA";
  const size_t size = dfa.accepting.size();
  if (size == 0) Broken(kKind, stage, "no start state");
  if (dfa.loop.size() != size || dfa.gate_loop.size() != size || dfa.byte_begin.size() != size + 1 ||
      dfa.rule_begin.size() != size + 1) {
    Broken(kKind, stage, "the per-state arrays differ in size");
  }
  for (size_t s = 0; s < size; ++s) {
    if (dfa.byte_begin[s] > dfa.byte_begin[s + 1] || dfa.rule_begin[s] > dfa.rule_begin[s + 1]) {
      Broken(kKind, stage, "the edge offsets decrease at state " + std::to_string(s));
    }
  }
  if (dfa.byte_begin[0] != 0 || dfa.rule_begin[0] != 0 ||
      static_cast<size_t>(dfa.byte_begin[size]) != dfa.byte_edges.size() ||
      static_cast<size_t>(dfa.rule_begin[size]) != dfa.rule_edges.size()) {
    Broken(kKind, stage, "the edge offsets do not span the edge arrays");
  }
  for (int32_t s = 0; s < dfa.size(); ++s) {
    CheckStateEdges(dfa, s, -1, kKind, stage);
    CheckLoopField(dfa.loop[s], dfa.loops.size(), s, "loop", kKind, stage);
    CheckLoopField(dfa.gate_loop[s], dfa.loops.size(), s, "gate_loop", kKind, stage);
  }
  CheckLoops(dfa.loops, dfa.size(), kKind, stage);
}

}  // namespace fsm_build
}  // namespace xg2
