// Grammar pass: move a terminal expression that precedes every reference to a rule into the
// rule itself.
//
// When every reference to a rule R (the root and TagDispatch targets excepted) is immediately
// preceded, in its sequence, by the same terminal expression E (bytes, character classes and
// their repetitions; no rule references), the pass drops E before each reference and rewrites
// R ::= E body. The language is unchanged: concatenation is associative, and the recursive
// references inside R are rewritten the same way.
//
// Why: the JSON Schema frontend writes `":" ws value_rule` and `"[" ws item_rule`. A token such as
// ` {"` or ` "abc` starts in the whitespace and ends inside the callee, so it leaves the caller's
// DFA through a rule edge: the token-mask cache (matcher/token_mask_cache.h) must keep it
// uncertain there, and every fill at that position runs such tokens through the parser. With
// the whitespace inside the callee, the whole token lies in one DFA and is classified once.
#ifndef XG2_GRAMMAR_SINK_LEADING_TERMINALS_H_
#define XG2_GRAMMAR_SINK_LEADING_TERMINALS_H_

#include "grammar/grammar_ast.h"

namespace xg2 {

// Rewrites `ast` in place; returns the number of rules that received a leading expression.
// Appends at most one node per rule (a frontend that reserves the node table leaves that room).
int SinkLeadingTerminals(GrammarAst* ast);

}  // namespace xg2

#endif  // XG2_GRAMMAR_SINK_LEADING_TERMINALS_H_
