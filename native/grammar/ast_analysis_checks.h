// Debug checks that the AST analyses (ast_rule_analyses.h) agree with what the FSM builder
// computes from the rule DFAs, run at the end of every BuildGrammarFsm in debug and
// sanitizer builds (XG2_DCHECK_INVARIANTS, support/dcheck.h). They are what makes the AST
// analyses safe to use in place of the DFA passes once rule DFAs are built on first use
// (docs/lazy_rule_dfas.md):
//   * nullability: equal on every rule, the grammar's and the synthetic ones (a synthetic
//     rule's is its body expression's); the members emptied by right-linear merging are not
//     nullable in the FSM, whatever the AST says (ast_rule_analyses.h);
//   * leave sets: follow_sets.cc's set of every node is contained in the bound a lazy build
//     would compute from the node's own rule DFA and the AST's FIRST and FOLLOW sets;
//   * right-linear rules: equal to right_linear_merge.cc's where the FSM holds no synthetic
//     rule, with the exceptions written in the .cc;
//   * node bounds: the DFA of every rule that would be built on first use, with its synthetic
//     rules, within the rule's bound.
#ifndef XG2_GRAMMAR_AST_ANALYSIS_CHECKS_H_
#define XG2_GRAMMAR_AST_ANALYSIS_CHECKS_H_

#include <cstdint>
#include <vector>

#include "grammar/fsm_automata.h"
#include "grammar/grammar_ast.h"
#include "grammar/grammar_fsm.h"
#include "grammar/lowering_context.h"
#include "grammar/right_linear_merge.h"

namespace xg2 {
namespace fsm_build {

// What the checks need from the build that the finished GrammarFsm no longer shows.
struct AstCheckRecord {
  std::vector<int32_t> dfa_nodes;            // per rule DFA (synthetic ones too), before merging
  std::vector<std::vector<RuleId>> callees;  // per rule DFA, before merging
  std::vector<ExprId> synthetic_body;        // per synthetic rule, in rule id order
  std::vector<uint8_t> has_compressible;     // per grammar rule: its body holds a compressed repetition
  RightLinearReport right_linear;
};

// Fills `record` from the rule DFAs as built (before right-linear merging).
void RecordRuleDfas(const GrammarAst& ast, const std::vector<Dfa>& dfas, LoweringContext* ctx, AstCheckRecord* record);

// Throws InternalError naming the rule and the analysis when one of the checks above fails.
void CheckAstAnalyses(const GrammarAst& ast, const FsmBuildLimits& limits, const GrammarFsm& fsm,
                      const AstCheckRecord& record);

}  // namespace fsm_build
}  // namespace xg2

#endif  // XG2_GRAMMAR_AST_ANALYSIS_CHECKS_H_
