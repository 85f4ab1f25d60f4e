#include "frontends/lark/lark_regex.h"

#include <string>

#include "frontends/lark/lark_parser.h"
#include "frontends/regex/regex_converter.h"
#include "grammar/grammar_ast.h"
#include "grammar/grammar_builder.h"
#include "support/error.h"

namespace xg2 {
namespace lark {
namespace {

[[noreturn]] void Fail(const Expr& regex, const std::string& message) {
  throw RegexError(Where(regex.position) + "in /" + regex.text + "/: " + message);
}

// The pattern with every `.` outside a character class widened to newline too (flag s), and
// anchors refused.
std::string Prepare(const Expr& regex) {
  bool dot_all = false;
  for (char flag : regex.flags) {
    if (flag == 's') {
      dot_all = true;
    } else if (flag == 'i') {
      Fail(regex, "the i flag is not supported on regexes (spell the cases, e.g. [aA])");
    } else if (flag == 'x' || flag == 'l') {
      Fail(regex, std::string("the ") + flag + " flag is not supported");
    }
  }
  const std::string& text = regex.text;
  std::string out;
  bool in_class = false;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '\\' && i + 1 < text.size()) {
      out.push_back(c);
      out.push_back(text[++i]);
      continue;
    }
    if (in_class) {
      if (c == ']') in_class = false;
      out.push_back(c);
      continue;
    }
    if (c == '[') {
      in_class = true;
      out.push_back(c);
      // A ']' first in the class (after an optional '^') is a member in Python.
      if (i + 1 < text.size() && text[i + 1] == '^') out.push_back(text[++i]);
      if (i + 1 < text.size() && text[i + 1] == ']') {
        out += "\\]";
        ++i;
      }
      continue;
    }
    if (c == '^' || c == '$') Fail(regex, std::string("the anchor ") + c + " is not supported in a Lark terminal");
    if (c == '.' && dot_all) {
      out += "(?:.|\\n)";
      continue;
    }
    out.push_back(c);
  }
  return out;
}

bool Nullable(const GrammarAst& ast, ExprId id) {
  const ExprNode& node = ast.node(id);
  switch (node.kind) {
    case ::xg2::ExprKind::kEmpty: return true;
    case ::xg2::ExprKind::kSequence:
      for (ExprId child : node.children) {
        if (!Nullable(ast, child)) return false;
      }
      return true;
    case ::xg2::ExprKind::kChoice:
      for (ExprId child : node.children) {
        if (Nullable(ast, child)) return true;
      }
      return false;
    case ::xg2::ExprKind::kRepeat: return node.min_repeat == 0 || Nullable(ast, node.children[0]);
    default: return false;  // bytes (never empty), classes; a regex calls no rule
  }
}

}  // namespace

LoweredRegex LowerRegex(const Expr& regex, GrammarBuilder* builder) {
  std::string pattern = Prepare(regex);
  LoweredRegex lowered;
  try {
    lowered.expr = RegexToGrammar(pattern, RegexOptions{}, builder);
  } catch (const RegexError& error) {
    Fail(regex, error.what());
  }
  lowered.nullable = Nullable(builder->built(), lowered.expr);
  return lowered;
}

}  // namespace lark
}  // namespace xg2
