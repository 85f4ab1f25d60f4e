// Reads Lark grammar text (the dialect of the `lark` package, with the llguidance extensions
// listed in docs/lark.md) into a lark::Grammar. Constructs outside that dialect, and malformed
// text, throw GrammarSyntaxError naming the construct, line and column.
#ifndef XG2_FRONTENDS_LARK_LARK_PARSER_H_
#define XG2_FRONTENDS_LARK_LARK_PARSER_H_

#include <string>
#include <string_view>

#include "frontends/lark/lark_syntax.h"

namespace xg2 {
namespace lark {

Grammar ParseLark(std::string_view text);

// "Lark grammar, line L, column C: " (the prefix of every positional error).
std::string Where(const Position& position);

}  // namespace lark
}  // namespace xg2

#endif  // XG2_FRONTENDS_LARK_LARK_PARSER_H_
