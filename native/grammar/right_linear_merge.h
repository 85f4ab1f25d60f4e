// Right-linear merging (fsm_builder.cc, stage 4, a pass over the rule DFAs before
// flattening): each chain of pure right-linear rules gets one DFA for its whole language.
#ifndef XG2_GRAMMAR_RIGHT_LINEAR_MERGE_H_
#define XG2_GRAMMAR_RIGHT_LINEAR_MERGE_H_

#include <cstdint>
#include <vector>

#include "grammar/fsm_automata.h"
#include "grammar/rule_dfa_build.h"

namespace xg2 {
namespace fsm_build {

// Right-linear groups (a pass over the rule DFAs, before flattening). A rule is pure
// right-linear when every rule edge it has is a tail call (its target accepts only the empty
// string: the rule ends right after the call) of another pure right-linear rule, and it has
// no counted loop, lookahead or TagDispatch body. Such a rule's language is regular, and a
// chain of them (the JSON Schema frontend's right-linear rules for a regular language of more
// than 32 states, one rule per state) costs the mask cache dearly: every token that crosses a
// rule boundary stays uncertain and goes through the Earley parser at fill time. So each pure right-linear rule called from elsewhere gets ONE DFA for its whole
// language: a tail call becomes an epsilon edge into the callee's start (the callee's
// accepting states end the caller too, so one shared copy per callee serves every call site),
// then subset construction and minimisation. Members only called from inside the group become
// unreachable and are emptied. A group that holds another entry (its members would be copied
// into each), or whose determinisation would pass kMaxMergedStates, four times the group's
// nodes, or the node budget, is left as rules.
// `excluded`: rules that may not be members (a lookahead or TagDispatch body). The merged
// DFAs take their nodes from `budget`; emptied members give theirs back.
// `report`, when given (the debug checks of ast_analysis_checks.h), receives what the pass
// decided: per rule, pure right-linear, entry, and emptied as a member of a merged group.
struct RightLinearReport {
  std::vector<uint8_t> pure, entry, emptied;
};
void MergeRightLinearGroups(std::vector<Dfa>* dfas, const std::vector<uint8_t>& excluded, RuleId root,
                            int64_t* budget, BuildScratch* scratch, RightLinearReport* report = nullptr);

}  // namespace fsm_build
}  // namespace xg2

#endif  // XG2_GRAMMAR_RIGHT_LINEAR_MERGE_H_
