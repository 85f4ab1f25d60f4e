// The terminals `%import common.NAME` provides, written for xg2 from the documented meaning of
// Lark's common library (numbers, names, whitespace, strings, comments). Where Lark's own
// definition relies on a lazy match or a look-behind (ESCAPED_STRING, C_COMMENT), the one here
// spells the language those matches stop at: an ESCAPED_STRING ends at its first unescaped
// quote, a C_COMMENT at its first "*/".
#ifndef XG2_FRONTENDS_LARK_LARK_COMMON_H_
#define XG2_FRONTENDS_LARK_LARK_COMMON_H_

#include <string_view>

namespace xg2 {
namespace lark {

// Lark text defining every common terminal (only terminals; each may use the others).
std::string_view CommonLibraryText();

}  // namespace lark
}  // namespace xg2

#endif  // XG2_FRONTENDS_LARK_LARK_COMMON_H_
