#include "matcher/fsm_hash.h"

#include <algorithm>
#include <utility>

#include "support/graph.h"

namespace xg2 {

namespace {

inline uint64_t Mix(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  x ^= x >> 31;
  return x;
}

// Labels far outside the byte and node-number ranges, so the serialisation is unambiguous.
// A node record is kNodeMark plus its accepting flag; a byte edge is one word
// kByteEdgeTag | lo << 48 | hi << 40 | target number (below 2^32), whose top byte 0x80 no
// mark has; a rule edge is kRuleEdgeMark, the callee's hash, then the target number. One
// word per node and per byte edge: hashing runs once per grammar over every node, and each
// word is two serial mixing rounds.
constexpr uint64_t kByteEdgeTag = 0x8000000000000000ULL;
constexpr uint64_t kNodeMark = 0xfffffffffff00001ULL;
constexpr uint64_t kRuleEdgeMark = 0xfffffffffff00002ULL;
constexpr uint64_t kCycleCallee = 0xfffffffffff00003ULL;
constexpr uint64_t kLookaheadMark = 0xfffffffffff00004ULL;

// Algorithm 1 on the FSM starting at `start`: numbers its nodes into `order` (breadth-first
// over sorted edges) and returns its hash. `callee_hash(rule)` gives a callee's hash (or the
// cycle marker); it is only called for rule edges.
template <typename CalleeHash>
Hash128 HashFsm(const GrammarFsm& fsm, NodeId start, std::vector<int32_t>* number,
                std::vector<NodeId>* order, const CalleeHash& callee_hash) {
  const size_t first = order->size();
  order->push_back(start);
  (*number)[start] = 0;
  Hash128 h;
  std::vector<std::pair<Hash128, NodeId>> calls;
  for (size_t k = first; k < order->size(); ++k) {
    const NodeId n = (*order)[k];
    h.Combine(kNodeMark + (fsm.node_accepting[n] ? 0x10 : 0));
    auto number_of = [&](NodeId target) {
      if ((*number)[target] < 0) {
        (*number)[target] = static_cast<int32_t>(order->size() - first);
        order->push_back(target);
      }
      return static_cast<uint64_t>(static_cast<uint32_t>((*number)[target]));
    };
    for (const ByteEdge* e = fsm.byte_edges_begin(n); e != fsm.byte_edges_end(n); ++e) {
      h.Combine(kByteEdgeTag | uint64_t{e->lo} << 48 | uint64_t{e->hi} << 40 | number_of(e->target));
    }
    calls.clear();
    for (const RuleEdge* e = fsm.rule_edges_begin(n); e != fsm.rule_edges_end(n); ++e) {
      calls.emplace_back(callee_hash(e->rule), e->target);
    }
    // Ties (two callees with one hash) fall back to node ids: a grammar-specific order that
    // can only make equal FSMs hash differently, never unequal ones alike.
    std::sort(calls.begin(), calls.end());
    for (const auto& [callee, target] : calls) {
      h.Combine(kRuleEdgeMark).Combine(callee.a).Combine(callee.b).Combine(number_of(target));
    }
  }
  return h;
}

}  // namespace

Hash128& Hash128::Combine(uint64_t value) {
  a = Mix(a ^ (value + 0x9e3779b97f4a7c15ULL + (a << 6) + (a >> 2)));
  b = Mix((b * 0x100000001b3ULL) ^ (value * 0xc2b2ae3d27d4eb4fULL + 0x165667b19e3779f9ULL));
  return *this;
}

void Hash128::AppendTo(std::string* out) const {
  out->append(reinterpret_cast<const char*>(&a), sizeof a);
  out->append(reinterpret_cast<const char*>(&b), sizeof b);
}

FsmHashes ComputeFsmHashes(const GrammarFsm& fsm) {
  const int32_t num_rules = fsm.num_rules();
  FsmHashes out;
  out.rule_hashed.assign(num_rules, 0);
  out.rule_hash.assign(num_rules, Hash128{});
  out.node_number.assign(fsm.num_nodes(), -1);

  // Reference graph: callees per rule, without duplicates.
  std::vector<std::vector<RuleId>> callees(num_rules);
  for (RuleId r = 0; r < num_rules; ++r) {
    for (NodeId n = fsm.rule_nodes[r].begin; n < fsm.rule_nodes[r].end; ++n) {
      for (const RuleEdge* e = fsm.rule_edges_begin(n); e != fsm.rule_edges_end(n); ++e) {
        callees[r].push_back(e->rule);
      }
    }
    std::sort(callees[r].begin(), callees[r].end());
    callees[r].erase(std::unique(callees[r].begin(), callees[r].end()), callees[r].end());
  }

  // Components come out callees first.
  const StronglyConnectedComponents sccs = FindStronglyConnectedComponents(callees);
  const std::vector<int32_t>& component = sccs.component_of;
  const std::vector<std::vector<RuleId>>& components = sccs.members;

  std::vector<NodeId> scratch_order;
  auto lookahead_hash = [&](RuleId r, Hash128* h) {
    if (fsm.rule_lookahead[r] < 0) return;
    scratch_order.clear();
    Hash128 la = HashFsm(fsm, fsm.rule_lookahead[r], &out.node_number, &scratch_order,
                         [](RuleId) { return Hash128{}; });
    for (NodeId n : scratch_order) out.node_number[n] = -1;  // lookahead nodes are never items
    h->Combine(kLookaheadMark).Combine(la.a).Combine(la.b);
  };
  // Local hash of rule r (Algorithm 1), with callees in its own component as the marker.
  // Numbers r's nodes as a side effect; the numbering does not depend on the cycle marker
  // beyond the tie-breaking that Algorithm 1 already has.
  std::vector<std::vector<NodeId>> orders(num_rules);
  auto local_hash = [&](RuleId r) {
    Hash128 marker;
    marker.a = marker.b = kCycleCallee;
    Hash128 h = HashFsm(fsm, fsm.rule_start[r], &out.node_number, &orders[r], [&](RuleId c) {
      return component[c] == component[r] ? marker : out.rule_hash[c];
    });
    lookahead_hash(r, &h);
    return h;
  };
  auto callees_outside_hashed = [&](RuleId r) {
    for (RuleId c : callees[r]) {
      if (component[c] != component[r] && !out.rule_hashed[c]) return false;
    }
    return true;
  };

  for (const std::vector<RuleId>& members : components) {
    // A rule not built in this snapshot has no hash, nor has anything that reaches it.
    bool hashable = true;
    for (RuleId r : members) hashable = hashable && fsm.IsBuilt(r) && callees_outside_hashed(r);
    const bool cyclic = members.size() > 1 ||
                        std::binary_search(callees[members[0]].begin(), callees[members[0]].end(), members[0]);
    // Simple cycle: each member calls exactly one member; following those calls from any
    // member then runs through the whole component.
    std::vector<RuleId> next_in_cycle;
    if (hashable && cyclic) {
      const int32_t id = component[members[0]];
      for (RuleId r : members) {
        RuleId only = -1;
        int count = 0;
        for (RuleId c : callees[r]) {
          if (component[c] == id) {
            only = c;
            ++count;
          }
        }
        if (count != 1) hashable = false;
        next_in_cycle.push_back(only);
      }
    }
    if (!hashable) continue;
    if (!cyclic) {
      RuleId r = members[0];
      out.rule_hash[r] = local_hash(r);
      out.rule_hashed[r] = 1;
      continue;
    }
    // Cycle order from members[0] (Algorithm 2 makes each final hash independent of where
    // the cycle is entered: rotation i starts at member i).
    std::vector<RuleId> cycle{members[0]};
    auto next_of = [&](RuleId r) {
      return next_in_cycle[std::find(members.begin(), members.end(), r) - members.begin()];
    };
    for (RuleId r = next_of(members[0]); r != members[0]; r = next_of(r)) cycle.push_back(r);
    if (cycle.size() != members.size()) continue;  // cannot happen in a component; be safe
    std::vector<Hash128> local;
    for (RuleId r : cycle) local.push_back(local_hash(r));
    for (size_t i = 0; i < cycle.size(); ++i) {
      Hash128 h;
      h.Combine(kCycleCallee).Combine(cycle.size());
      for (size_t j = 0; j < cycle.size(); ++j) {
        const Hash128& l = local[(i + j) % cycle.size()];
        h.Combine(l.a).Combine(l.b);
      }
      out.rule_hash[cycle[i]] = h;
      out.rule_hashed[cycle[i]] = 1;
    }
  }

  out.rule_order_begin.assign(1, 0);
  for (RuleId r = 0; r < num_rules; ++r) {
    if (out.rule_hashed[r]) {
      out.rule_order.insert(out.rule_order.end(), orders[r].begin(), orders[r].end());
    } else {
      for (NodeId n : orders[r]) out.node_number[n] = -1;
    }
    out.rule_order_begin.push_back(static_cast<int32_t>(out.rule_order.size()));
  }
  return out;
}

}  // namespace xg2
