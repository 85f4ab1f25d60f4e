// FsmAppender (see the header).
#include "grammar/fsm_appender.h"

#include <string>

#include "support/error.h"

namespace xg2 {
namespace fsm_build {

FsmAppender::FsmAppender(GrammarFsm* fsm, const std::vector<const Dfa*>& dfas)
    : fsm_(*fsm),
      next_node_(fsm->num_nodes()),
      next_byte_edge_(static_cast<int32_t>(fsm->byte_edges.size())),
      next_rule_edge_(static_cast<int32_t>(fsm->rule_edges.size())) {
  size_t nodes = 0, byte_edges = 0, rule_edges = 0;
  for (const Dfa* dfa : dfas) {
    nodes += dfa->nodes.size();
    for (const Dfa::Node& node : dfa->nodes) {
      byte_edges += node.byte_end - node.byte_begin;
      rule_edges += node.rule_end - node.rule_begin;
    }
  }
  const size_t total = static_cast<size_t>(next_node_) + nodes;
  fsm_.node_rule.resize(total);
  fsm_.node_accepting.resize(total);
  fsm_.byte_edge_begin.resize(total + 1);  // entry next_node_ is 0 in an empty FSM, else set
  fsm_.rule_edge_begin.resize(total + 1);
  fsm_.byte_edges.resize(fsm_.byte_edges.size() + byte_edges);
  fsm_.rule_edges.resize(fsm_.rule_edges.size() + rule_edges);
  node_loop_ = std::move(fsm_.node_loop);
  node_gate_loop_ = std::move(fsm_.node_gate_loop);
  node_loop_.resize(total, -1);
  node_gate_loop_.resize(total, -1);
  if (fsm_.has_json_char_counts()) {
    fsm_.node_char_end.resize(total, 0);
    fsm_.node_fewest_chars.resize(total, -1);
    fsm_.node_most_chars.resize(total, -1);
  }
}

NodeId FsmAppender::Append(const Dfa& dfa, RuleId owner) {
  const NodeId base = next_node_;
  const int32_t loop_base = static_cast<int32_t>(fsm_.counted_loops.size());
  for (const CountedLoop& loop : dfa.loops) {
    fsm_.counted_loops.push_back(loop.head < 0 ? loop : CountedLoop{base + loop.head, base + loop.gate, loop.limit});
  }
  for (int32_t i = 0; i < dfa.size(); ++i) {
    const Dfa::Node& node = dfa.nodes[i];
    const NodeId global = base + i;
    if (node.loop >= 0) node_loop_[global] = loop_base + node.loop;
    if (node.gate_loop >= 0) node_gate_loop_[global] = loop_base + node.gate_loop;
    fsm_.node_rule[global] = owner;
    fsm_.node_accepting[global] = node.accepting;
    for (const ByteEdge& e : dfa.BytesOf(i)) fsm_.byte_edges[next_byte_edge_++] = {e.lo, e.hi, base + e.target};
    for (const RuleEdge& e : dfa.RulesOf(i)) {
      // Every pass must keep rule ids valid; the parser indexes rule tables with them.
      if (e.rule < 0 || e.rule >= static_cast<RuleId>(fsm_.rule_start.size())) {
        throw GrammarSyntaxError("internal error: a rule edge names rule " + std::to_string(e.rule) + " of " +
                                 std::to_string(fsm_.rule_start.size()));
      }
      fsm_.rule_edges[next_rule_edge_++] = {e.rule, base + e.target};
    }
    fsm_.byte_edge_begin[global + 1] = next_byte_edge_;
    fsm_.rule_edge_begin[global + 1] = next_rule_edge_;
  }
  next_node_ += dfa.size();
  return base;
}

void FsmAppender::Finish() {
  if (fsm_.counted_loops.empty()) return;  // the loop tables stay empty without a loop
  fsm_.node_loop = std::move(node_loop_);
  fsm_.node_gate_loop = std::move(node_gate_loop_);
}

}  // namespace fsm_build
}  // namespace xg2
