// A hash of a grammar's structure: equal grammars (SameGrammarAst, grammar_ast_equality.h) hash
// equal, so the pair keys a table of grammars without printing them (a lowered structural tag,
// compiler/grammar_compiler.h). It reads what SameGrammarAst compares, nothing else.
#ifndef XG2_GRAMMAR_GRAMMAR_AST_HASH_H_
#define XG2_GRAMMAR_GRAMMAR_AST_HASH_H_

#include <cstddef>

#include "grammar/grammar_ast.h"

namespace xg2 {

size_t GrammarAstHash(const GrammarAst& grammar);

}  // namespace xg2

#endif  // XG2_GRAMMAR_GRAMMAR_AST_HASH_H_
