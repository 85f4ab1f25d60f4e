// Rule nullability over the flattened FSM (BuildGrammarFsm, stage 5): rule_nullable[r] is
// true iff rule r derives the empty string (grammar_fsm.h).
#ifndef XG2_GRAMMAR_RULE_NULLABLE_H_
#define XG2_GRAMMAR_RULE_NULLABLE_H_

#include "grammar/grammar_fsm.h"

namespace xg2 {

// Fills fsm->rule_nullable. Reads the rules' nodes, their rule edges, node_accepting and the
// JSON character bounds (a rule that counts at least one character is never nullable).
void ComputeRuleNullable(GrammarFsm* fsm);

}  // namespace xg2

#endif  // XG2_GRAMMAR_RULE_NULLABLE_H_
