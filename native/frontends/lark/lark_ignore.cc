#include "frontends/lark/lark_ignore.h"

#include <optional>
#include <string>
#include <vector>

#include "frontends/lark/lark_parser.h"
#include "support/error.h"

namespace xg2 {
namespace lark {
namespace {

constexpr int kMaxDepth = 64;

using Ranges = std::vector<CodepointRange>;

// Follows rule references and one-child groups to the expression that decides the shape.
ExprId Unwrap(const GrammarAst& ast, ExprId id, std::string* rule_name) {
  for (int depth = 0; depth < kMaxDepth; ++depth) {
    const ExprNode& node = ast.node(id);
    if (node.kind == ::xg2::ExprKind::kRuleRef) {
      const RuleDef& rule = ast.rules[node.rule_id];
      if (rule.lookahead >= 0) return id;
      *rule_name = rule.name;
      id = rule.body;
    } else if ((node.kind == ::xg2::ExprKind::kSequence || node.kind == ::xg2::ExprKind::kChoice) && node.children.size() == 1) {
      id = node.children[0];
    } else if (node.kind == ::xg2::ExprKind::kRepeat && node.min_repeat == 1 && node.max_repeat == 1) {
      id = node.children[0];
    } else {
      return id;
    }
  }
  return id;
}

int Utf8Length(unsigned char lead) { return lead < 0x80 ? 1 : lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4; }

// The characters of an expression that always matches exactly one character.
std::optional<Ranges> SingleCharacter(const GrammarAst& ast, ExprId id, int depth = 0) {
  std::string ignored;
  const ExprNode& node = ast.node(Unwrap(ast, id, &ignored));
  if (depth > kMaxDepth) return std::nullopt;
  if (node.kind == ::xg2::ExprKind::kCharClass) return node.ranges.to_vector();
  if (node.kind == ::xg2::ExprKind::kBytes && !node.bytes.empty() &&
      static_cast<size_t>(Utf8Length(node.bytes[0])) == node.bytes.size()) {
    const std::string_view b = node.bytes;
    uint32_t cp = static_cast<unsigned char>(b[0]);
    if (b.size() > 1) {
      cp &= 0x7F >> b.size();
      for (size_t i = 1; i < b.size(); ++i) cp = (cp << 6) | (static_cast<unsigned char>(b[i]) & 0x3F);
    }
    return Ranges{{cp, cp}};
  }
  if (node.kind == ::xg2::ExprKind::kChoice) {
    Ranges all;
    for (ExprId child : node.children) {
      std::optional<Ranges> part = SingleCharacter(ast, child, depth + 1);
      if (!part) return std::nullopt;
      all.insert(all.end(), part->begin(), part->end());
    }
    return NormalizeRanges(all, false);
  }
  return std::nullopt;
}

// The text of an expression that matches exactly one string.
std::optional<std::string> FixedString(const GrammarAst& ast, ExprId id, int depth = 0) {
  std::string ignored;
  const ExprNode& node = ast.node(Unwrap(ast, id, &ignored));
  if (depth > kMaxDepth) return std::nullopt;
  if (node.kind == ::xg2::ExprKind::kBytes) return node.bytes.str();
  if (node.kind == ::xg2::ExprKind::kEmpty) return std::string();
  if (node.kind == ::xg2::ExprKind::kCharClass && node.ranges.size() == 1 && node.ranges[0].first == node.ranges[0].last) {
    std::string out;
    uint32_t cp = node.ranges[0].first;
    if (cp < 0x80) {
      out.push_back(static_cast<char>(cp));
    } else if (cp < 0x800) {
      out += {static_cast<char>(0xC0 | (cp >> 6)), static_cast<char>(0x80 | (cp & 0x3F))};
    } else if (cp < 0x10000) {
      out += {static_cast<char>(0xE0 | (cp >> 12)), static_cast<char>(0x80 | ((cp >> 6) & 0x3F)),
              static_cast<char>(0x80 | (cp & 0x3F))};
    } else {
      out += {static_cast<char>(0xF0 | (cp >> 18)), static_cast<char>(0x80 | ((cp >> 12) & 0x3F)),
              static_cast<char>(0x80 | ((cp >> 6) & 0x3F)), static_cast<char>(0x80 | (cp & 0x3F))};
    }
    return out;
  }
  if (node.kind == ::xg2::ExprKind::kSequence) {
    std::string out;
    for (ExprId child : node.children) {
      std::optional<std::string> part = FixedString(ast, child, depth + 1);
      if (!part) return std::nullopt;
      out += *part;
    }
    return out;
  }
  if (node.kind == ::xg2::ExprKind::kRepeat && node.max_repeat >= 0 && node.min_repeat == node.max_repeat) {
    std::optional<std::string> part = FixedString(ast, node.children[0], depth + 1);
    if (!part) return std::nullopt;
    std::string out;
    for (int i = 0; i < node.min_repeat; ++i) out += *part;
    return out;
  }
  return std::nullopt;
}

// The class C when `id` is C repeated without bound, else nullopt.
std::optional<Ranges> UnboundedClassLoop(const GrammarAst& ast, ExprId id) {
  std::string ignored;
  const ExprNode& node = ast.node(Unwrap(ast, id, &ignored));
  if (node.kind != ::xg2::ExprKind::kRepeat || node.max_repeat >= 0) return std::nullopt;
  return SingleCharacter(ast, node.children[0]);
}

}  // namespace

ExprId MaximalMatchLookahead(RuleId rule, const Position& where, GrammarBuilder* builder) {
  const GrammarAst& ast = builder->built();
  std::string name;
  ExprId body = Unwrap(ast, ast.rules[rule].body, &name);
  if (name == "c_C_COMMENT") return -1;
  if (name == "c_NEWLINE") {
    // Not followed by "\n" or "\r\n": [^\r\n] | "\r" [^\n]
    const ExprId not_cr_lf = builder->CharClass(NormalizeRanges({{'\r', '\r'}, {'\n', '\n'}}, true));
    const ExprId cr_then[] = {builder->Bytes("\r"), builder->CharClass(NormalizeRanges({{'\n', '\n'}}, true))};
    const ExprId alternatives[] = {not_cr_lf, builder->Sequence(cr_then, 2)};
    return builder->Choice(alternatives, 2);
  }
  if (SingleCharacter(ast, body) || FixedString(ast, body)) return -1;
  std::optional<Ranges> loop = UnboundedClassLoop(ast, body);
  const ExprNode& node = ast.node(body);
  if (!loop && node.kind == ::xg2::ExprKind::kSequence && node.children.size() >= 2) {
    loop = UnboundedClassLoop(ast, node.children.back());
    for (size_t i = 0; loop && i + 1 < node.children.size(); ++i) {
      if (!FixedString(ast, node.children[i])) loop.reset();
    }
  }
  if (!loop) {
    throw GrammarSyntaxError(
        Where(where) + "this %ignore'd terminal is not supported: Lark skips its greedy match, which xg2 "
                       "enforces for one character, a fixed string, a fixed prefix followed by a repeated "
                       "character class (such as WS or /#[^\\n]*/), C_COMMENT and NEWLINE");
  }
  Ranges rest = NormalizeRanges(*loop, true);
  if (rest.empty()) {
    throw GrammarSyntaxError(Where(where) + "this %ignore'd terminal runs to the end of the text");
  }
  return builder->CharClass(std::move(rest));
}

}  // namespace lark
}  // namespace xg2
