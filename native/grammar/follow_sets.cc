#include "grammar/follow_sets.h"

#include <string>
#include <unordered_map>
#include <vector>

#include "grammar/ast_rule_analyses.h"
#include "support/dcheck.h"

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

}  // namespace

LeaveSets::LeaveSets(size_t num_nodes, const std::vector<std::pair<NodeId, ByteSet>>& sets) : index_(num_nodes) {
  // try_emplace, not emplace: most sets repeat, and emplace builds a map node before looking.
  std::unordered_map<ByteSet, int32_t> position{{ByteSet(), 0}};
  sets_.push_back(ByteSet());
  for (const auto& [n, set] : sets) {
    if (set.none()) continue;  // index 0 (most nodes)
    auto [it, inserted] = position.try_emplace(set, static_cast<int32_t>(sets_.size()));
    if (inserted) sets_.push_back(set);
    index_[n] = it->second;
  }
  sets_.shrink_to_fit();
}

LeaveSets::LeaveSets(const LeaveSets& prefix, size_t num_nodes, const std::vector<std::pair<NodeId, ByteSet>>& sets)
    : index_(prefix.index_), sets_(prefix.sets_) {
  XG2_DCHECK(num_nodes >= index_.size(), "a snapshot's leave sets extend an older one's");
  index_.resize(num_nodes, 0);
  std::unordered_map<ByteSet, int32_t> position;
  for (size_t k = 0; k < sets_.size(); ++k) position.emplace(sets_[k], static_cast<int32_t>(k));
  for (const auto& [n, set] : sets) {
    XG2_DCHECK(static_cast<size_t>(n) >= prefix.size() && static_cast<size_t>(n) < num_nodes,
               "only the nodes after the older snapshot's get new leave sets");
    if (set.none()) continue;
    auto [it, inserted] = position.try_emplace(set, static_cast<int32_t>(sets_.size()));
    if (inserted) sets_.push_back(set);
    index_[n] = it->second;
  }
  sets_.shrink_to_fit();
}

RuleByteContexts AstRuleByteContexts(const GrammarAst& ast, const std::vector<ExprId>& synthetic_bodies) {
  const RuleBodyOrder order = ComputeRuleBodyOrder(ast);
  const AstNullability nullable = AstRuleNullable(ast, order);
  const AstByteSets bytes = ComputeAstByteSets(ast, order, nullable);
  RuleByteContexts contexts{nullable.rule, bytes.rule_first, bytes.rule_follow};
  for (ExprId body : synthetic_bodies) {
    contexts.nullable.push_back(nullable.expr[body]);
    contexts.first.push_back(bytes.first[body]);
    contexts.follow.push_back(bytes.follow[body]);
  }
  return contexts;
}

std::vector<std::pair<NodeId, ByteSet>> LeaveBytesFromContexts(const GrammarFsm& fsm, const RuleByteContexts& contexts,
                                                               NodeId begin, NodeId end) {
  if (contexts.size() != static_cast<size_t>(fsm.num_rules()) || contexts.first.size() != contexts.size() ||
      contexts.follow.size() != contexts.size()) {
    ThrowInternalError(__FILE__, __LINE__,
                       "the AST byte contexts cover " + std::to_string(contexts.size()) + " rules, the FSM has " +
                           std::to_string(fsm.num_rules()));
  }
  // inner[n - begin]: bytes that can come next at n without completing its rule, reading each
  // call through its callee's FIRST (and past it when the callee is nullable); can_finish: the
  // rule can complete from n without a byte. A fixpoint over the range, whose rule edges stay
  // inside it (a rule edge's target is a node of the caller's own DFA). Both are read only at
  // the nodes with rule edges and at their targets, so only those get their byte edges'
  // bytes; at every other node inner stays empty and unread.
  const NodeId count = end - begin;
  std::vector<ByteSet> inner(count);
  std::vector<uint8_t> can_finish(count, 0);
  std::vector<uint8_t> read(count, 0);
  for (NodeId n = begin; n < end; ++n) {
    for (const RuleEdge* e = fsm.rule_edges_begin(n); e != fsm.rule_edges_end(n); ++e) {
      XG2_DCHECK(e->target >= begin && e->target < end && fsm.node_rule[e->target] == fsm.node_rule[n],
                 "a rule edge leads to a node of its caller's own DFA, built with it");
      read[n - begin] = 1;
      read[e->target - begin] = 1;
    }
  }
  for (NodeId n = begin; n < end; ++n) {
    can_finish[n - begin] = fsm.node_accepting[n];
    if (!read[n - begin]) continue;
    for (const ByteEdge* e = fsm.byte_edges_begin(n); e != fsm.byte_edges_end(n); ++e) {
      inner[n - begin] |= ByteSpan(e->lo, e->hi);
    }
  }
  Fixpoint([&](bool forward) {
    bool changed = false;
    for (NodeId k = 0; k < count; ++k) {
      const NodeId n = forward ? begin + k : end - 1 - k;
      for (const RuleEdge* e = fsm.rule_edges_begin(n); e != fsm.rule_edges_end(n); ++e) {
        ByteSet next = inner[n - begin] | contexts.first[e->rule];
        uint8_t finish = can_finish[n - begin];
        if (contexts.nullable[e->rule]) {
          next |= inner[e->target - begin];
          finish |= can_finish[e->target - begin];
        }
        changed |= next != inner[n - begin] || finish != can_finish[n - begin];
        inner[n - begin] = next;
        can_finish[n - begin] = finish;
      }
    }
    return changed;
  });
  std::vector<std::pair<NodeId, ByteSet>> leave;
  for (NodeId n = begin; n < end; ++n) {
    const RuleId rule = fsm.node_rule[n];
    if (rule < 0) continue;
    ByteSet set;
    for (const RuleEdge* e = fsm.rule_edges_begin(n); e != fsm.rule_edges_end(n); ++e) {
      set |= contexts.first[e->rule];
      if (contexts.nullable[e->rule]) {
        set |= inner[e->target - begin];
        if (can_finish[e->target - begin]) set |= contexts.follow[rule];
      }
    }
    if (fsm.node_accepting[n]) set |= contexts.follow[rule];
    if (set.any()) leave.emplace_back(n, set);
  }
  return leave;
}

LeaveSets ComputeLeaveBytes(const GrammarFsm& fsm) {
  const int32_t num_nodes = fsm.num_nodes();
  const int32_t num_rules = fsm.num_rules();
  // An unbuilt rule's callers would miss what it allows after them. The mask cache calls this
  // on whole snapshots only (token_mask_cache.cc decides by the first snapshot).
  if (XG2_DCHECKS_ENABLED) {
    for (RuleId r = 0; r < num_rules; ++r) {
      XG2_DCHECK(fsm.IsBuilt(r), "the exact leave sets need every rule DFA built (rule " + std::to_string(r) + " is not)");
    }
  }

  // Only the calling nodes (those with rule edges), the rules' start nodes and the targets of
  // rule edges take part: they get a slot each, and the sets below are per slot. Most nodes
  // of a large grammar are none of these (the date-time rules have ~5,000 nodes and ~1,500
  // slots), and their leave set is empty unless they are accepting.
  std::vector<int32_t> slot(num_nodes, -1);
  // inner[s]: bytes that can come next at slot s's node without completing its rule.
  // inner[slot[start(r)]]: bytes that can start a non-empty string of rule r.
  // can_finish[s]: the node's rule can complete from it without consuming a byte.
  std::vector<ByteSet> inner;
  std::vector<uint8_t> can_finish;
  auto slot_of = [&](NodeId n) {
    if (slot[n] < 0) {
      slot[n] = static_cast<int32_t>(inner.size());
      ByteSet bytes;
      for (const ByteEdge* e = fsm.byte_edges_begin(n); e != fsm.byte_edges_end(n); ++e) bytes |= ByteSpan(e->lo, e->hi);
      inner.push_back(bytes);
      can_finish.push_back(fsm.node_accepting[n]);
    }
    return slot[n];
  };
  // Each calling node's rule edges as (rule, slot of the callee's start, slot of the target).
  struct Call {
    RuleId rule;
    int32_t start;
    int32_t target;
  };
  struct Caller {
    NodeId node;
    int32_t slot;
    RuleId rule;
    size_t first_call, end_call;
  };
  std::vector<Call> calls;
  std::vector<Caller> callers;
  // The nodes whose leave set may be non-empty (those that call a rule or accept), in order:
  // the pass that writes the sets visits these alone instead of every node again.
  std::vector<NodeId> leaving;
  for (NodeId n = 0; n < num_nodes; ++n) {
    if (fsm.node_rule[n] < 0) continue;
    const bool calls_rules = fsm.rule_edges_begin(n) != fsm.rule_edges_end(n);
    if (calls_rules || fsm.node_accepting[n]) leaving.push_back(n);
    if (!calls_rules) continue;
    const size_t first_call = calls.size();
    for (const RuleEdge* e = fsm.rule_edges_begin(n); e != fsm.rule_edges_end(n); ++e) {
      calls.push_back({e->rule, slot_of(fsm.rule_start[e->rule]), slot_of(e->target)});
    }
    callers.push_back({n, slot_of(n), fsm.node_rule[n], first_call, calls.size()});
  }
  Fixpoint([&](bool forward) {
    bool changed = false;
    for (size_t k = 0; k < callers.size(); ++k) {
      const Caller& caller = callers[forward ? k : callers.size() - 1 - k];
      for (size_t c = caller.first_call; c < caller.end_call; ++c) {
        const Call& call = calls[c];
        ByteSet next = inner[caller.slot] | inner[call.start];
        if (fsm.rule_nullable[call.rule]) {
          next |= inner[call.target];
          if (can_finish[call.target] && !can_finish[caller.slot]) {
            can_finish[caller.slot] = 1;
            changed = true;
          }
        }
        if (next != inner[caller.slot]) {
          inner[caller.slot] = next;
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
    for (size_t k = 0; k < callers.size(); ++k) {
      const Caller& caller = callers[forward ? k : callers.size() - 1 - k];
      for (size_t c = caller.first_call; c < caller.end_call; ++c) {
        const Call& call = calls[c];
        ByteSet next = follow[call.rule] | inner[call.target];
        if (can_finish[call.target]) next |= follow[caller.rule];
        if (next != follow[call.rule]) {
          follow[call.rule] = next;
          changed = true;
        }
      }
    }
    return changed;
  });

  // leave[n] is empty at a node that neither calls a rule nor accepts.
  std::vector<std::pair<NodeId, ByteSet>> leave;
  leave.reserve(leaving.size());
  size_t next_caller = 0;
  for (NodeId n : leaving) {
    const bool calls_rules = next_caller < callers.size() && callers[next_caller].node == n;
    XG2_DCHECK(calls_rules || fsm.node_accepting[n], "a listed leaving node calls a rule or accepts");
    ByteSet set;
    if (calls_rules) {
      const Caller& caller = callers[next_caller++];
      for (size_t c = caller.first_call; c < caller.end_call; ++c) {
        const Call& call = calls[c];
        set |= inner[call.start];
        if (fsm.rule_nullable[call.rule]) {
          set |= inner[call.target];
          if (can_finish[call.target]) set |= follow[caller.rule];
        }
      }
    }
    if (fsm.node_accepting[n]) set |= follow[fsm.node_rule[n]];
    leave.emplace_back(n, set);
  }
  return LeaveSets(num_nodes, leave);
}

}  // namespace xg2
