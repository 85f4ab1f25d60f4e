#include "grammar/follow_sets.h"

#include <unordered_map>
#include <vector>

namespace xg2 {

namespace {

// Iterates `step` until it reports no change, sweeping forwards and backwards in turn: a
// chain of rules (the optional-property rules rest_k -> rest_k-1 -> ... of a large object)
// then settles in a few sweeps whichever way it is numbered, instead of one sweep per link.
template <typename Step>
void Fixpoint(const Step& step) {
  for (bool forward = true; step(forward); forward = !forward) {
  }
}

// The bytes lo..hi, as the difference of two prefix sets: kBelow[k] holds the bytes < k.
// A table lookup instead of two 256-bit shifts, which cost a fifth of a large grammar's
// mask-cache setup when done per byte edge.
ByteSet ByteRange(int lo, int hi) {
  static const std::vector<ByteSet> kBelow = [] {
    std::vector<ByteSet> below(257);
    for (int k = 1; k <= 256; ++k) {
      below[k] = below[k - 1];
      below[k].set(k - 1);
    }
    return below;
  }();
  return kBelow[hi + 1] ^ kBelow[lo];
}

}  // namespace

LeaveSets::LeaveSets(const std::vector<ByteSet>& per_node) : index_(per_node.size()) {
  std::unordered_map<ByteSet, int32_t> position{{ByteSet(), 0}};
  sets_.push_back(ByteSet());
  for (size_t n = 0; n < per_node.size(); ++n) {
    if (per_node[n].none()) continue;  // index 0 (most nodes)
    auto [it, inserted] = position.emplace(per_node[n], static_cast<int32_t>(sets_.size()));
    if (inserted) sets_.push_back(per_node[n]);
    index_[n] = it->second;
  }
  sets_.shrink_to_fit();
}

LeaveSets ComputeLeaveBytes(const GrammarFsm& fsm) {
  const int32_t num_nodes = fsm.num_nodes();
  const int32_t num_rules = fsm.num_rules();

  // inner[n]: bytes that can come next at n without completing rule(n).
  // first[r] = inner[start(r)]: bytes that can start a non-empty string of rule r.
  // can_finish[n]: rule(n) can complete from n without consuming a byte.
  std::vector<ByteSet> inner(num_nodes);
  std::vector<uint8_t> can_finish(num_nodes, 0);
  // The fixpoints below only look at nodes with rule edges (lookahead DFAs own no rule).
  std::vector<NodeId> calling;
  for (NodeId n = 0; n < num_nodes; ++n) {
    for (const ByteEdge* e = fsm.byte_edges_begin(n); e != fsm.byte_edges_end(n); ++e) {
      inner[n] |= ByteRange(e->lo, e->hi);
    }
    can_finish[n] = fsm.node_accepting[n];
    if (fsm.node_rule[n] >= 0 && fsm.rule_edges_begin(n) != fsm.rule_edges_end(n)) calling.push_back(n);
  }
  Fixpoint([&](bool forward) {
    bool changed = false;
    for (size_t k = 0; k < calling.size(); ++k) {
      const NodeId n = calling[forward ? k : calling.size() - 1 - k];
      for (const RuleEdge* e = fsm.rule_edges_begin(n); e != fsm.rule_edges_end(n); ++e) {
        ByteSet next = inner[n] | inner[fsm.rule_start[e->rule]];
        if (fsm.rule_nullable[e->rule]) {
          next |= inner[e->target];
          if (can_finish[e->target] && !can_finish[n]) {
            can_finish[n] = 1;
            changed = true;
          }
        }
        if (next != inner[n]) {
          inner[n] = next;
          changed = true;
        }
      }
    }
    return changed;
  });

  // follow[r]: bytes that can come right after rule r completes, in any context.
  std::vector<ByteSet> follow(num_rules);
  Fixpoint([&](bool forward) {
    bool changed = false;
    for (size_t k = 0; k < calling.size(); ++k) {
      const NodeId n = calling[forward ? k : calling.size() - 1 - k];
      for (const RuleEdge* e = fsm.rule_edges_begin(n); e != fsm.rule_edges_end(n); ++e) {
        ByteSet next = follow[e->rule] | inner[e->target];
        if (can_finish[e->target]) next |= follow[fsm.node_rule[n]];
        if (next != follow[e->rule]) {
          follow[e->rule] = next;
          changed = true;
        }
      }
    }
    return changed;
  });

  std::vector<ByteSet> leave(num_nodes);
  for (NodeId n = 0; n < num_nodes; ++n) {
    if (fsm.node_rule[n] < 0) continue;
    for (const RuleEdge* e = fsm.rule_edges_begin(n); e != fsm.rule_edges_end(n); ++e) {
      leave[n] |= inner[fsm.rule_start[e->rule]];
      if (fsm.rule_nullable[e->rule]) {
        leave[n] |= inner[e->target];
        if (can_finish[e->target]) leave[n] |= follow[fsm.node_rule[n]];
      }
    }
    if (fsm.node_accepting[n]) leave[n] |= follow[fsm.node_rule[n]];
  }
  return LeaveSets(leave);
}

}  // namespace xg2
