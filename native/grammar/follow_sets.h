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
#include <vector>

#include "grammar/grammar_fsm.h"

namespace xg2 {

using ByteSet = std::bitset<256>;

// leave[n] = bytes that can be consumed next after leaving rule(n)'s byte edges at node n:
// the first bytes of rules called at n (and of what follows a nullable callee), and, when n
// is accepting, the bytes that can follow rule(n) anywhere in the grammar.
std::vector<ByteSet> ComputeLeaveBytes(const GrammarFsm& fsm);

}  // namespace xg2

#endif  // XG2_GRAMMAR_FOLLOW_SETS_H_
