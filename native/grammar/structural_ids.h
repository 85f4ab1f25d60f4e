// Structural ids of expression nodes, for the shared tails of the NFA builder
// (LoweringContext::StructuralId, NfaBuilder::Lower): equal ids exactly for structurally
// equal expressions -- same kind, same payload (the bytes of kBytes, the ranges of
// kCharClass, the rule of kRuleRef, the bounds of kRepeat, the table index of kTagDispatch
// and kAutomaton; nothing else of a node counts) and children equal in turn, in order.
// Inlining copies a callee's body node at every call site, so equal expressions are often
// distinct nodes that share only their children.
//
// Hash-consing: a node's id is found by a hash of (kind, payload, children's ids) in an
// open-addressing table of ids, and confirmed by comparing the node with the first node
// that got the id (its representative), children by id. Nothing is copied per node; ids
// are numbered 0, 1, ... in the order the classes are first met.
// Invariants: a node gets its id after all its children have theirs (post-order, by an
// explicit stack: no recursion however deep the expression); the table is at most half full.
#ifndef XG2_GRAMMAR_STRUCTURAL_IDS_H_
#define XG2_GRAMMAR_STRUCTURAL_IDS_H_

#include <cstdint>
#include <vector>

#include "grammar/grammar_ast.h"

namespace xg2 {
namespace fsm_build {

class StructuralIds {
 public:
  explicit StructuralIds(const GrammarAst& ast) : ast_(ast) {}

  // The id of `e`; computes the ids of its descendants that have none yet.
  int32_t Of(ExprId e) {
    if (!id_.empty() && id_[e] >= 0) return id_[e];
    return Compute(e);
  }
  // Distinct classes met so far.
  size_t size() const { return representative_.size(); }

 private:
  int32_t Compute(ExprId e);
  // Interns the class of `e`, whose children all have ids.
  int32_t Assign(ExprId e);
  // Hash of (kind, payload, children's ids); the children must have ids.
  uint64_t NodeHash(const ExprNode& node) const;
  // Whether `a` and `b` are structurally equal, given ids for their children.
  bool SameNode(const ExprNode& a, const ExprNode& b) const;
  void Grow();

  const GrammarAst& ast_;
  std::vector<int32_t> id_;              // per expression node, -1 until assigned
  std::vector<ExprId> representative_;   // per id: the first node given it
  std::vector<uint64_t> hash_;           // per id: its NodeHash
  std::vector<int32_t> slots_;           // ids, -1 for empty; a power of two, at most half full
  std::vector<ExprId> stack_;            // Compute's post-order stack (capacity reused)
};

}  // namespace fsm_build
}  // namespace xg2

#endif  // XG2_GRAMMAR_STRUCTURAL_IDS_H_
