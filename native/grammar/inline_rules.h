// Grammar pass: inline small non-recursive rules into their callers, then drop rules that are
// no longer reachable from the root.
//
// Why: a rule boundary costs the matcher twice. The Earley parser predicts and completes an
// item per call, and the token-mask cache (matcher/token_mask_cache.h) must leave a node
// "uncertain" wherever the walk could complete or call a rule, because what follows depends on
// the caller. Inlining a small rule (a JSON string's character, whitespace, a number) makes its
// bytes part of the caller's DFA, where they are classified exactly and in context.
#ifndef XG2_GRAMMAR_INLINE_RULES_H_
#define XG2_GRAMMAR_INLINE_RULES_H_

#include <cstdint>

#include "grammar/grammar_ast.h"

namespace xg2 {

struct InlineOptions {
  // A rule is inlined when it is not recursive, is not the root, has no lookahead assertion,
  // is not a TagDispatch, and its body, with its own inlinable callees expanded, has at most this many nodes.
  int32_t max_inlined_size = 96;
  // With repetition compression (grammar/grammar_fsm.h), the FSM holds at most about this
  // many copies of a repeated body however large the bound; <= 0: no cap (every copy counts).
  int64_t repetition_copies_cap = 0;
};

// Rewrites `ast` in place. The language of the root rule is unchanged.
void InlineSmallRules(GrammarAst* ast, const InlineOptions& options = {});

}  // namespace xg2

#endif  // XG2_GRAMMAR_INLINE_RULES_H_
