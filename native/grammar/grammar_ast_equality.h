// Whether two grammars are the same node for node: the identity the frontends that build the
// grammar directly keep with the parse of the EBNF they print (issue 39; the test hooks
// `_*_grammar_matches_parse` use it).
#ifndef XG2_GRAMMAR_GRAMMAR_AST_EQUALITY_H_
#define XG2_GRAMMAR_GRAMMAR_AST_EQUALITY_H_

#include "grammar/grammar_ast.h"

namespace xg2 {

// The same nodes (ids, kinds, payloads, children), rules (names, bodies, lookaheads,
// attributes), tag dispatches and token sets, in the same order.
bool SameGrammarAst(const GrammarAst& a, const GrammarAst& b);

}  // namespace xg2

#endif  // XG2_GRAMMAR_GRAMMAR_AST_EQUALITY_H_
