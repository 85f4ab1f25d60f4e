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

// ParseEbnf for text whose references may name rules defined elsewhere: `external_rules` are
// added after the text's own rules (and the rules it lifts), in order, without a body, which
// the caller then gives them (frontends/structural_tag: the grammars it embeds, built
// directly). The result is what ParseEbnf gives for the text followed by those rules' text.
// A name both defined in the text and external is an error, as a duplicate rule is.
GrammarAst ParseEbnfWithExternalRules(std::string_view text, std::string_view root_rule_name,
                                      const std::vector<std::string>& external_rules);

// The code points of the character class `spelled` exactly as EBNF spells one ("[0-9]",
// "[^\\x00-\\x1F]", or "."), normalised. Throws GrammarSyntaxError when it is not one class.
std::vector<CodepointRange> ParseEbnfCharClass(std::string_view spelled);

}  // namespace xg2

#endif  // XG2_FRONTENDS_EBNF_EBNF_PARSER_H_
