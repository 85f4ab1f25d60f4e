// Syntax tree of a Lark grammar (lark_parser.h reads it, lark_lowering.h lowers it to a grammar).
// Every node keeps the line and column where it starts, so errors found while lowering name
// the place in the Lark text.
#ifndef XG2_FRONTENDS_LARK_LARK_SYNTAX_H_
#define XG2_FRONTENDS_LARK_LARK_SYNTAX_H_

#include <cstdint>
#include <string>
#include <vector>

namespace xg2 {
namespace lark {

struct Position {
  int line = 1;    // 1-based
  int column = 1;  // 1-based, in bytes
};

enum class ExprKind {
  kSequence,      // children in order (no children: the empty string)
  kChoice,        // one of children
  kRepeat,        // children[0], min..max times (max < 0: unbounded)
  kLiteral,       // "text" (text is the decoded UTF-8; case_insensitive for the `i` flag)
  kRange,         // "a".."z": one code point in [first, last]
  kRegex,         // /pattern/flags (pattern as written between the slashes)
  kName,          // a rule or terminal reference
  kJson,          // llguidance %json { schema }: text is the schema's JSON
  kSpecialToken,  // llguidance <|name|> (text) or <[id]> (token_id)
};

struct Expr {
  ExprKind kind = ExprKind::kSequence;
  Position position;
  std::vector<Expr> children;
  std::string text;
  std::string flags;  // kRegex
  bool case_insensitive = false;
  char32_t first = 0, last = 0;      // kRange
  int64_t min = 0, max = -1;         // kRepeat
  int64_t token_id = -1;             // kSpecialToken written <[id]>
};

struct Definition {
  std::string name;  // without the ?/! prefix and the priority
  bool terminal = false;
  Position position;
  Expr body;
  int64_t max_tokens = -1;  // llguidance rule attribute [max_tokens=N]
};

struct Import {
  std::string name;   // the terminal of the common library
  std::string alias;  // the name it is known by in the grammar
  Position position;
};

struct Grammar {
  std::vector<Definition> definitions;
  std::vector<Expr> ignores;  // %ignore operands
  std::vector<Import> imports;
};

}  // namespace lark
}  // namespace xg2

#endif  // XG2_FRONTENDS_LARK_LARK_SYNTAX_H_
