// Hierarchical hashing of rule FSMs with a stable node numbering (paper section 3.3,
// Algorithms 1 and 2, appendix A), the identity the cross-grammar mask cache is keyed by.
//
// Algorithm 1 walks a rule's FSM breadth-first from its start node, visiting each node's
// byte edges (sorted by range) and then its rule edges (sorted by the callee's hash), numbers
// nodes in first-visit order, and hashes, per visited node, its accepting flag and each
// edge's label (byte range, or callee hash) with the target's number. The hashed sequence
// is a complete serialisation of the FSM in that numbering, so two FSMs with the same hash
// are equal node for node (up to hash collisions: hashes are 128-bit). Callees must be hashed
// first, so rules are processed over the reference graph's strongly connected components,
// callees before callers (Tarjan's order):
//  * a component without a cycle: Algorithm 1 with the callees' hashes;
//  * a simple cycle (every rule in the component calls exactly one rule of the component):
//    Algorithm 1 with the in-cycle callee replaced by a marker (its local hash), then
//    Algorithm 2: the final hash of the i-th rule of the cycle combines the local hashes in
//    cycle order starting at i (the combination is not commutative);
//  * any other component, and every rule that references one, gets no hash (the mask cache
//    then falls back to its truncated canonical key, matcher/token_mask_cache.h).
// A rule's lookahead assertion DFA, if any, is hashed as a leaf FSM into the rule's hash.
#ifndef XG2_MATCHER_FSM_HASH_H_
#define XG2_MATCHER_FSM_HASH_H_

#include <cstdint>
#include <string>
#include <vector>

#include "grammar/grammar_fsm.h"

namespace xg2 {

struct Hash128 {
  uint64_t a = 0x243f6a8885a308d3ULL;
  uint64_t b = 0x13198a2e03707344ULL;

  // Order-dependent: Combine(x).Combine(y) != Combine(y).Combine(x) in general.
  Hash128& Combine(uint64_t value);
  bool operator==(const Hash128& o) const { return a == o.a && b == o.b; }
  bool operator<(const Hash128& o) const { return a != o.a ? a < o.a : b < o.b; }
  void AppendTo(std::string* out) const;
};

struct FsmHashes {
  std::vector<uint8_t> rule_hashed;  // per rule
  std::vector<Hash128> rule_hash;    // per rule (meaningful where rule_hashed)
  // Stable number of each node in its rule's breadth-first order, -1 where the rule has no
  // hash (or the node is unreachable from the rule's start).
  std::vector<int32_t> node_number;
  // Nodes of each hashed rule in that order (CSR over rules).
  std::vector<int32_t> rule_order_begin;
  std::vector<NodeId> rule_order;
};

FsmHashes ComputeFsmHashes(const GrammarFsm& fsm);

}  // namespace xg2

#endif  // XG2_MATCHER_FSM_HASH_H_
