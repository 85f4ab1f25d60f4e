// Lark frontend: Lark grammar text into a grammar (root rule "root"), built directly through
// GrammarBuilder, whose language is the grammar's context-free language as Lark's Earley parser
// with the dynamic_complete lexer reads it (docs/lark.md says where other Lark parsers differ).
// Its printed EBNF (PrintEbnf) is a debugging view that parses back to exactly that grammar.
//
// Lowering: each rule becomes `r_<name>`, each terminal `t_<NAME>` (a terminal from
// %import common `c_<NAME>`), a %json schema an embedded grammar `j<n>_...`. Terminals are
// atomic: text %ignore'd may come before every terminal a rule uses and after the start rule,
// never inside a terminal; so every terminal occurrence in a rule is written `lark_ignore*
// TERMINAL` and the root is `r_start lark_ignore*`.
#ifndef XG2_FRONTENDS_LARK_LARK_LOWERING_H_
#define XG2_FRONTENDS_LARK_LARK_LOWERING_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "grammar/grammar_ast.h"

namespace xg2 {

class SpecialTokenText;

struct LarkOptions {
  // Resolves <|name|> special tokens; without it a special token is an error.
  const SpecialTokenText* special_tokens = nullptr;
  // <[id]> must be below it (when >= 0).
  int64_t vocab_size = -1;
};

// Throws GrammarSyntaxError (RegexError for a bad regex) naming the construct and its line and
// column, SchemaError for a bad %json schema, ResourceLimitError for a repetition bound above
// the compile limits installed on the calling thread.
GrammarAst LarkToGrammar(std::string_view text, const LarkOptions& options = {});

}  // namespace xg2

#endif  // XG2_FRONTENDS_LARK_LARK_LOWERING_H_
