// The steps of BuildGrammarFsm (fsm_builder.cc) that a lazy build (lazy_rule_builder.h) runs
// too: one grammar rule's DFA, and the first snapshot over a selection of the rules.
#ifndef XG2_GRAMMAR_FSM_BUILDER_STEPS_H_
#define XG2_GRAMMAR_FSM_BUILDER_STEPS_H_

#include <cstdint>
#include <vector>

#include "grammar/ast_rule_analyses.h"
#include "grammar/fsm_automata.h"
#include "grammar/grammar_ast.h"
#include "grammar/grammar_fsm.h"
#include "grammar/json_char_count.h"
#include "grammar/lowering_context.h"
#include "grammar/rule_dfa_build.h"
#include "grammar/shared_rule_dfas.h"

namespace xg2 {
namespace fsm_build {

// Throws GrammarSyntaxError where `ast` has no root rule; checks the AST invariants in debug
// builds. The first step of every build, before anything reads the AST.
void CheckBuilderInput(const GrammarAst& ast);

// The DFA of grammar rule `r` of `ast` as BuildGrammarFsm builds it (through the shared rule-DFA
// table; a TagDispatch body's machine; a counting rule's product, whose per-node tables go to
// *counted). Lowering may add synthetic rules to `ctx`; the caller builds them.
Dfa BuildGrammarRuleDfa(const GrammarAst& ast, RuleId r, LoweringContext* ctx, int64_t* budget, BuildScratch* scratch,
                        BodyKeyWriter* body_keys, CharCountedDfa* counted);

// BuildGrammarFsm's work after CheckBuilderInput, on a context and budget the caller keeps. `build_now` null: every
// rule, with right-linear merging and the DFA nullability fixpoint (BuildGrammarFsm). Else
// only the grammar rules it marks and every synthetic rule their lowering creates; the others
// are left unbuilt (kUnbuiltRule, an empty block), no rule is merged, and every rule's
// nullability is the AST's (`nullable`, which must then be given).
GrammarFsm BuildFirstSnapshot(const GrammarAst& ast, const FsmBuildLimits& limits, LoweringContext* ctx, int64_t* budget,
                              BodyKeyWriter* body_keys, const std::vector<uint8_t>* build_now,
                              const AstNullability* nullable);

}  // namespace fsm_build
}  // namespace xg2

#endif  // XG2_GRAMMAR_FSM_BUILDER_STEPS_H_
