// Checkers for the invariants written in grammar_fsm.h (the GrammarFsm tables) and
// grammar_ast.h (the AST the FSM builder lowers). Each throws InternalError
// (support/dcheck.h) naming `stage` and the first broken invariant, and costs one pass over
// the tables. The FSM builder calls them through XG2_DCHECK_INVARIANTS after each of its
// steps, so they run in debug and sanitizer builds only; tests call them directly.
#ifndef XG2_GRAMMAR_FSM_INVARIANTS_H_
#define XG2_GRAMMAR_FSM_INVARIANTS_H_

#include "grammar/grammar_ast.h"
#include "grammar/grammar_fsm.h"

namespace xg2 {

// grammar_fsm.h: the CSR offsets; contiguous rule blocks with the start inside and node_rule
// naming the owner (-1 for the lookahead blocks after the rules); per node, byte edges with
// lo <= hi, sorted by lo and pairwise disjoint, rule edges sorted by rule with at most one per
// rule, every target inside the node's block, rule ids in range; lookahead DFAs byte-only,
// not accepting at their start, never on a nullable rule; rule_nullable a fixpoint of
// "an accepting node is reachable through rule edges of nullable rules"; counted loops
// (node_loop / node_gate_loop sized with the nodes exactly when a loop exists, each live
// loop's head and gate in one rule block, the gate marked as its gate and the head as its
// member, limit >= 1); budgeted rules without rule edges; token sets with sorted unique ids
// and token-set edges (CSR) whose sets and targets are in range.
void CheckGrammarFsmInvariants(const GrammarFsm& fsm, const char* stage);

// grammar_ast.h, over the expression nodes the rules reach (bodies and lookaheads; nodes
// that earlier passes left unreachable are not checked): children ids in range and no cycle;
// kBytes non-empty; kCharClass ranges non-empty, sorted, disjoint, non-adjacent, within
// [0, kMaxCodepoint]; kRuleRef naming a rule; kSequence / kChoice with at least one child,
// kRepeat with exactly one and 0 <= min_repeat <= max_repeat (or max_repeat == -1); leaves
// without children; kTagDispatch naming a dispatch and only as a whole rule body. Also the
// root rule in range, max_tokens -1 or >= 0, and token-set ids sorted and unique.
void CheckGrammarAstInvariants(const GrammarAst& ast, const char* stage);

}  // namespace xg2

#endif  // XG2_GRAMMAR_FSM_INVARIANTS_H_
