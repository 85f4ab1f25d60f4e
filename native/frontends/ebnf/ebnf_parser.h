// EBNF frontend: the GBNF / xgrammar dialect (see docs/ebnf.md) into a GrammarAst.
#ifndef XG2_FRONTENDS_EBNF_EBNF_PARSER_H_
#define XG2_FRONTENDS_EBNF_EBNF_PARSER_H_

#include <string>
#include <string_view>
#include <vector>

#include "grammar/grammar_ast.h"

namespace xg2 {

// Throws GrammarSyntaxError whose message names line and column (1-based) on malformed
// text, an undefined rule reference, a duplicate rule, or a missing root rule.
GrammarAst ParseEbnf(std::string_view text, std::string_view root_rule_name = "root");

// The code points of the character class `spelled` exactly as EBNF spells one ("[0-9]",
// "[^\\x00-\\x1F]", or "."), normalised. Throws GrammarSyntaxError when it is not one class.
std::vector<CodepointRange> ParseEbnfCharClass(std::string_view spelled);

}  // namespace xg2

#endif  // XG2_FRONTENDS_EBNF_EBNF_PARSER_H_
