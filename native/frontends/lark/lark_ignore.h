// Where Lark lets %ignore'd text match. Lark's Earley scanner skips, at each position, the
// one match Python's `re` finds for the ignored terminal there (greedy), never a shorter one:
// with `%ignore WS` the text "a  b" cannot be read as "a", " ", " b". So an ignored match
// that a terminal follows must be maximal: the text after it must not extend it. For the
// shapes below that condition is a lookahead on the text that follows:
//  * one character, or one fixed string: every match is maximal (no lookahead);
//  * a fixed prefix then a repeated character class C (WS, /\s+/, /#[^\n]*/, ...): the next
//    character is not in C;
//  * the common library's C_COMMENT (ends at its first "*/": no lookahead) and NEWLINE (not
//    followed by "\n" or "\r\n").
// Any other ignored terminal is a GrammarSyntaxError: its greedy reading has no such form.
#ifndef XG2_FRONTENDS_LARK_LARK_IGNORE_H_
#define XG2_FRONTENDS_LARK_LARK_IGNORE_H_

#include <string>

#include "frontends/lark/lark_syntax.h"
#include "grammar/grammar_ast.h"
#include "grammar/grammar_builder.h"

namespace xg2 {
namespace lark {

// Adds to `builder` the lookahead that makes a match of `rule` (the lowered %ignore operand,
// already defined there) maximal, and returns its id, or -1 when none is needed. `where`: the
// %ignore, for the error.
ExprId MaximalMatchLookahead(RuleId rule, const Position& where, GrammarBuilder* builder);

}  // namespace lark
}  // namespace xg2

#endif  // XG2_FRONTENDS_LARK_LARK_IGNORE_H_
