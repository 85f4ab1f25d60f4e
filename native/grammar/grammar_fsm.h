// The compiled grammar: one deterministic finite-state machine per rule, all numbered in a
// single node space (paper section 2: rule-level FSMs). An edge either consumes one byte in a
// range or "calls" another rule; there are no epsilon edges after construction.
//
// Invariants (established by BuildGrammarFsm and relied on by the Earley parser):
//  * Nodes of rule r are the contiguous block [rule_first_node[r], rule_first_node[r+1]);
//    rule_start[r] lies in that block, and every edge target of a node lies in its block.
//  * Per node, byte edges are sorted by `lo`, pairwise disjoint, and at most one rule edge
//    exists per (node, rule) pair (determinism over the alphabet bytes + rule ids).
//  * rule_nullable[r] is true iff rule r derives the empty string.
//  * rule_lookahead[r] is -1 or the start node of a byte-only DFA (no rule edges, stored as
//    an extra block after the rules, owned by no rule: node_rule == -1) for the rule's
//    lookahead assertion. A rule with a lookahead is never nullable, and its lookahead does
//    not accept the empty string (such an assertion is trivially true and is dropped).
#ifndef XG2_GRAMMAR_GRAMMAR_FSM_H_
#define XG2_GRAMMAR_GRAMMAR_FSM_H_

#include <cstdint>
#include <string>
#include <vector>

#include "grammar/grammar_ast.h"

namespace xg2 {

using NodeId = int32_t;

struct ByteEdge {
  uint8_t lo;
  uint8_t hi;
  NodeId target;
};

struct RuleEdge {
  RuleId rule;
  NodeId target;
};

struct GrammarFsm {
  RuleId root_rule = -1;
  std::vector<std::string> rule_names;
  std::vector<NodeId> rule_start;
  std::vector<NodeId> rule_first_node;  // size num_rules + 1
  std::vector<uint8_t> rule_nullable;
  std::vector<NodeId> rule_lookahead;
  bool has_lookahead = false;

  std::vector<RuleId> node_rule;
  std::vector<uint8_t> node_accepting;
  std::vector<int32_t> byte_edge_begin;  // size num_nodes + 1 (CSR)
  std::vector<ByteEdge> byte_edges;
  std::vector<int32_t> rule_edge_begin;  // size num_nodes + 1 (CSR)
  std::vector<RuleEdge> rule_edges;

  int32_t num_rules() const { return static_cast<int32_t>(rule_start.size()); }

  int32_t num_nodes() const { return static_cast<int32_t>(node_rule.size()); }

  const ByteEdge* byte_edges_begin(NodeId n) const { return byte_edges.data() + byte_edge_begin[n]; }
  const ByteEdge* byte_edges_end(NodeId n) const { return byte_edges.data() + byte_edge_begin[n + 1]; }
  const RuleEdge* rule_edges_begin(NodeId n) const { return rule_edges.data() + rule_edge_begin[n]; }
  const RuleEdge* rule_edges_end(NodeId n) const { return rule_edges.data() + rule_edge_begin[n + 1]; }

  // The node reached from `n` on `byte`, or -1.
  NodeId StepByte(NodeId n, uint8_t byte) const {
    for (const ByteEdge* e = byte_edges_begin(n), *end = byte_edges_end(n); e != end; ++e) {
      if (byte < e->lo) return -1;
      if (byte <= e->hi) return e->target;
    }
    return -1;
  }

  size_t MemoryBytes() const;
  // Human-readable dump for tests and debugging.
  std::string ToString() const;
};

struct FsmBuildLimits {
  // Upper bound on NFA plus DFA nodes created while lowering one grammar.
  int64_t max_nodes = 4'000'000;
};

// Lowers every rule of `ast` into a minimal-ish DFA (subset construction, then partition
// refinement for small machines). Throws ResourceLimitError when limits are exceeded and
// GrammarSyntaxError for constructs the matcher cannot run.
GrammarFsm BuildGrammarFsm(const GrammarAst& ast, const FsmBuildLimits& limits = {});

}  // namespace xg2

#endif  // XG2_GRAMMAR_GRAMMAR_FSM_H_
