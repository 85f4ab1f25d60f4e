// A Lark /regex/ terminal (Python `re` syntax, already unescaped as Lark does) as a grammar
// expression built by the regex frontend (frontends/regex/regex_converter.h), and whether it
// matches the empty string. Flags: `s` (dot matches newline), `m` and `u` (no effect: anchors
// are refused and patterns are Unicode) are exact; `i`, `x` and `l` are refused, as are ^ and
// $ (inside a Lark terminal they anchor to the whole text, not to the terminal).
#ifndef XG2_FRONTENDS_LARK_LARK_REGEX_H_
#define XG2_FRONTENDS_LARK_LARK_REGEX_H_

#include <string>

#include "frontends/lark/lark_syntax.h"
#include "grammar/grammar_builder.h"

namespace xg2 {
namespace lark {

struct LoweredRegex {
  ExprId expr = -1;  // in the builder passed to LowerRegex
  bool nullable = false;
};

// Adds the regex's expression to `builder`. Throws RegexError naming the regex's line and column.
LoweredRegex LowerRegex(const Expr& regex, GrammarBuilder* builder);

}  // namespace lark
}  // namespace xg2

#endif  // XG2_FRONTENDS_LARK_LARK_REGEX_H_
