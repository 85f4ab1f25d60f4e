// Thompson construction (fsm_builder.cc, stage 1): one rule body -> an epsilon-NFA over
// bytes + rule ids. Character classes become UTF-8 byte sequences (shared suffix nodes, no
// surrogates); a compressible repetition becomes a counted loop copy plus explicit copies
// (grammar_fsm.h, "Repetition state compression", Algorithm 3 of the paper); fragments are
// copied in as DFAs and equal tails are lowered once (LoweringContext).
// Invariants of the result: one start and one accept node; every NfaLoop's members are h
// and the non-accepting nodes of its loop copy, and its gate is the copy's exit; every new
// node takes one from the node budget (ResourceLimitError when it runs out).
#ifndef XG2_GRAMMAR_NFA_BUILDER_H_
#define XG2_GRAMMAR_NFA_BUILDER_H_

#include <cstdint>
#include <string>

#include "grammar/fsm_automata.h"
#include "grammar/grammar_ast.h"
#include "grammar/lowering_context.h"

namespace xg2 {
namespace fsm_build {

// Lowers `body` into `nfa` so that the language from node `from` to the returned node is
// the body's. `ctx` null: no compression (lookahead assertions, bodies of compressed
// repetitions). `fragments`: occurrences of fragments (LoweringContext::IsFragment) are
// lowered as copies of their DFA; only where no repetition of the rule is compressed
// (counted loops mark the NFA nodes of their copies). `exempt`: an expression never lowered
// as a call of its own synthetic rule (the body of that rule). `owner` names the rule in
// errors and synthetic rule names.
int32_t LowerRuleBody(const GrammarAst& ast, ExprId body, int32_t from, Nfa* nfa, int64_t* budget,
                      LoweringContext* ctx, ExprId exempt, const std::string& owner, bool fragments);

}  // namespace fsm_build
}  // namespace xg2

#endif  // XG2_GRAMMAR_NFA_BUILDER_H_
