// One-byte context analysis of a GrammarFsm (the byte-level core of the paper's context
// expansion, section 3.4): for every node, which bytes can come next once the parser leaves
// the rule's own byte edges there, by calling a rule or by completing the rule.
//
// The sets over-approximate (lookahead assertions are ignored, every caller of a rule counts
// as a possible context), which is what the mask cache needs: a byte outside the set can
// never follow, so a token that needs it is rejected without consulting the parser.
#ifndef XG2_GRAMMAR_FOLLOW_SETS_H_
#define XG2_GRAMMAR_FOLLOW_SETS_H_

#include <bitset>
#include <utility>
#include <vector>

#include "grammar/grammar_fsm.h"

namespace xg2 {

using ByteSet = std::bitset<256>;

// Per-node byte sets, interned: a grammar has few distinct leave sets (most nodes' is
// empty), so they are stored once each with a 4-byte index per node instead of 32 bytes per
// node (a third of a compiled grammar's per-node memory).
class LeaveSets {
 public:
  LeaveSets() = default;
  // The set of each listed node; every other node's set is empty.
  LeaveSets(size_t num_nodes, const std::vector<std::pair<NodeId, ByteSet>>& sets);

  const ByteSet& operator[](NodeId n) const { return sets_[index_[n]]; }
  size_t size() const { return index_.size(); }
  size_t MemoryBytes() const { return index_.capacity() * sizeof(int32_t) + sets_.capacity() * sizeof(ByteSet); }

 private:
  std::vector<int32_t> index_;  // node -> position in sets_
  std::vector<ByteSet> sets_;   // distinct sets, the empty set first
};

// leave[n] = bytes that can be consumed next after leaving rule(n)'s byte edges at node n:
// the first bytes of rules called at n (and of what follows a nullable callee), and, when n
// is accepting, the bytes that can follow rule(n) anywhere in the grammar.
LeaveSets ComputeLeaveBytes(const GrammarFsm& fsm);

}  // namespace xg2

#endif  // XG2_GRAMMAR_FOLLOW_SETS_H_
