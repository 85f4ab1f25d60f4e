// The grammar of compile_choice: exactly one of a list of strings, as EBNF text.
#ifndef XG2_COMPILER_CHOICE_GRAMMAR_H_
#define XG2_COMPILER_CHOICE_GRAMMAR_H_

#include <string>
#include <string_view>
#include <vector>

namespace xg2 {

// `text` (UTF-8) as an EBNF string literal: quotes and backslashes escaped, control characters
// and DEL as \xNN; the same text as xg2_plugin.ebnf_string_literal.
std::string EbnfStringLiteral(std::string_view text);

// `root ::= "a" | "b" | ...` over `choices` (non-empty).
std::string ChoiceEbnf(const std::vector<std::string>& choices);

}  // namespace xg2

#endif  // XG2_COMPILER_CHOICE_GRAMMAR_H_
