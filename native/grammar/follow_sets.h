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

#include "grammar/byte_set.h"
#include "grammar/grammar_ast.h"
#include "grammar/grammar_fsm.h"

namespace xg2 {

// Per-node byte sets, interned: a grammar has few distinct leave sets (most nodes' is
// empty), so they are stored once each with a 4-byte index per node instead of 32 bytes per
// node (a third of a compiled grammar's per-node memory).
class LeaveSets {
 public:
  LeaveSets() = default;
  // The set of each listed node; every other node's set is empty.
  LeaveSets(size_t num_nodes, const std::vector<std::pair<NodeId, ByteSet>>& sets);
  // `prefix`'s sets for its nodes, then those listed for the nodes after them (up to
  // `num_nodes`): the leave sets of a later FSM snapshot whose older nodes keep theirs.
  LeaveSets(const LeaveSets& prefix, size_t num_nodes, const std::vector<std::pair<NodeId, ByteSet>>& sets);

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
// Exact for the whole grammar's DFAs: every rule must be built (checked in debug builds).
LeaveSets ComputeLeaveBytes(const GrammarFsm& fsm);

// Lazy rule DFAs (docs/lazy_rule_dfas.md, "The mask cache on partial snapshots"): what a node
// may be left by, read off the grammar AST instead of the other rules' DFAs, so that a rule's
// nodes get their sets from its own DFA alone and keep them however many rules are built
// later. Per rule of a snapshot (the grammar's, then the synthetic ones, in rule id order):
//   nullable[r]: r derives the empty string;
//   first[r]:    bytes that can start a non-empty string of r;
//   follow[r]:   bytes that can come right after a completion of r, anywhere in the grammar.
// Over-approximations of the DFA-side values (ast_rule_analyses.h, "FIRST and FOLLOW").
struct RuleByteContexts {
  std::vector<uint8_t> nullable;
  std::vector<ByteSet> first, follow;

  size_t size() const { return nullable.size(); }
};

// The contexts of the AST's rules, then of each synthetic rule whose body is the expression
// `synthetic_bodies[k]` (LoweringContext::synthetic(), in rule id order). `ast` is the FSM
// builder's input (after inlining and sinking).
RuleByteContexts AstRuleByteContexts(const GrammarAst& ast, const std::vector<ExprId>& synthetic_bodies);

// The leave sets of the nodes [begin, end) of `fsm` from each node's own rule DFA and
// `contexts` (which covers every rule of `fsm`): the rule's byte edges, FIRST of the rules it
// calls, what follows a nullable callee inside the rule, and the rule's FOLLOW where it can
// complete. A node of no rule (a lookahead DFA's) gets none. Every rule owning a node in the
// range must have all its nodes there (a build appends whole rules). Only the listed nodes'
// sets, for LeaveSets. Contains ComputeLeaveBytes' set of every node when `fsm` is whole
// (the argument is at CheckLeaveSets, grammar/ast_analysis_checks.cc).
std::vector<std::pair<NodeId, ByteSet>> LeaveBytesFromContexts(const GrammarFsm& fsm, const RuleByteContexts& contexts,
                                                               NodeId begin, NodeId end);

}  // namespace xg2

#endif  // XG2_GRAMMAR_FOLLOW_SETS_H_
