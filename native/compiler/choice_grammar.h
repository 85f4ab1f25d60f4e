// The grammar of compile_choice: exactly one of a list of strings.
#ifndef XG2_COMPILER_CHOICE_GRAMMAR_H_
#define XG2_COMPILER_CHOICE_GRAMMAR_H_

#include <string>
#include <string_view>
#include <vector>

#include "grammar/grammar_ast.h"

namespace xg2 {

// `text` (UTF-8) as an EBNF string literal: quotes and backslashes escaped, control characters
// and DEL as \xNN; the same text as xg2_plugin.ebnf_string_literal.
std::string EbnfStringLiteral(std::string_view text);

// `root ::= "a" | "b" | ...` over `choices` (non-empty): the printed view of ChoiceGrammar.
std::string ChoiceEbnf(const std::vector<std::string>& choices);

// The grammar ChoiceEbnf spells, built directly (grammar/grammar_builder.h): the nodes its parse
// would give.
GrammarAst ChoiceGrammar(const std::vector<std::string>& choices);

}  // namespace xg2

#endif  // XG2_COMPILER_CHOICE_GRAMMAR_H_
