#include "frontends/lark/lark_lowering.h"

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "frontends/ebnf/ebnf_parser.h"
#include "frontends/json_schema/json_schema_converter.h"
#include "frontends/lark/lark_common.h"
#include "frontends/lark/lark_ignore.h"
#include "frontends/lark/lark_parser.h"
#include "frontends/lark/lark_regex.h"
#include "grammar/grammar_ast.h"
#include "support/error.h"
#include "tokenizer/special_token_text.h"

namespace xg2 {
namespace {

using lark::Definition;
using lark::Expr;
using lark::Position;

constexpr const char* kIgnoreRule = "lark_ignore";
constexpr int kMaxTerminalDepth = 1000;

[[noreturn]] void Fail(const Position& position, const std::string& message) {
  throw GrammarSyntaxError(lark::Where(position) + message);
}

std::string PositionText(const Position& p) {
  return "line " + std::to_string(p.line) + ", column " + std::to_string(p.column);
}

// An EBNF literal of UTF-8 text (multi-byte characters as they are).
std::string EbnfLiteral(const std::string& text) {
  static const char* kHex = "0123456789abcdef";
  std::string out = "\"";
  for (unsigned char c : text) {
    if (c == '"' || c == '\\') {
      out.push_back('\\');
      out.push_back(static_cast<char>(c));
    } else if (c < 0x20 || c == 0x7F) {
      out += "\\x";
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    } else {
      out.push_back(static_cast<char>(c));
    }
  }
  return out + "\"";
}

std::string ClassMember(char32_t cp) {
  static const char* kHex = "0123456789ABCDEF";
  std::string out = "\\U";
  for (int shift = 28; shift >= 0; shift -= 4) out.push_back(kHex[(cp >> shift) & 15]);
  return out;
}

// The code points Python's re matches for an ASCII letter under IGNORECASE (Lark compiles
// "text"i that way): both cases, and the non-ASCII letters that fold to it.
std::string CaseInsensitiveLetter(char c) {
  char lower = static_cast<char>(c | 0x20);
  std::string out = "[";
  out.push_back(lower);
  out.push_back(static_cast<char>(lower & ~0x20));
  if (lower == 'i') out += ClassMember(0x130) + ClassMember(0x131);
  if (lower == 'k') out += ClassMember(0x212A);
  if (lower == 's') out += ClassMember(0x17F);
  return out + "]";
}

struct TerminalInfo {
  const Definition* definition = nullptr;
  std::string ebnf_name;
  bool common = false;  // a definition of the common library (its names resolve there)
  int state = 0;        // lowering: 0 not yet, 1 in progress (recursion check), 2 done
  bool nullable = false;
};

class Lowering {
 public:
  Lowering(std::string_view text, const LarkOptions& options)
      : options_(options), grammar_(lark::ParseLark(text)) {}

  std::string Run() {
    CollectDefinitions();
    auto start = rules_.find("start");
    if (start == rules_.end()) {
      throw GrammarSyntaxError("Lark grammar has no 'start' rule (the root of the language)");
    }
    std::vector<std::string> ignore_bodies;
    for (const Expr& ignore : grammar_.ignores) {
      bool nullable = false;
      std::string body = Terminal(ignore, /*common=*/false, &nullable);
      if (nullable) Fail(ignore.position, "the %ignore'd text can be empty (Lark refuses zero-width terminals)");
      ignore_bodies.push_back(body);
    }
    for (auto& [name, info] : user_terminals_) LowerTerminal(&info);
    for (const auto& [alias, name] : aliases_) LowerTerminal(&common_terminals_.at(name));
    if (!ignore_bodies.empty()) LowerIgnores(ignore_bodies);
    for (const auto& [name, def] : rules_) {
      std::string head = "r_" + name;
      if (def->max_tokens >= 0) head += "[max_tokens=" + std::to_string(def->max_tokens) + "]";
      out_.push_back(head + " ::= " + Rule(def->body));
    }
    std::string root = "root ::= r_start";
    if (!ignore_bodies.empty()) root += std::string(" ") + kIgnoreRule + "_end*";
    std::string ebnf = root + "\n";
    for (const std::string& line : out_) ebnf += line + "\n";
    return ebnf;
  }

 private:
  // lark_ignore (before a terminal) takes a maximal match of an ignored terminal, as Lark's
  // greedy skip does (lark_ignore.h); lark_ignore_end (after the start rule, where the text
  // ends) any match.
  void LowerIgnores(const std::vector<std::string>& bodies) {
    std::string names, analysed = "root ::= ";
    for (size_t i = 0; i < bodies.size(); ++i) {
      std::string name = std::string(kIgnoreRule) + "_body_" + std::to_string(i + 1);
      analysed += (i > 0 ? " | " : "") + name;
      names += (i > 0 ? " | " : "") + name;
    }
    analysed += "\n";
    for (const std::string& line : out_) analysed += line + "\n";  // terminals only, so far
    for (size_t i = 0; i < bodies.size(); ++i) {
      analysed += std::string(kIgnoreRule) + "_body_" + std::to_string(i + 1) + " ::= " + bodies[i] + "\n";
    }
    GrammarAst ast = ParseEbnf(analysed, "root");
    std::string before_terminal;
    for (size_t i = 0; i < bodies.size(); ++i) {
      std::string body_name = std::string(kIgnoreRule) + "_body_" + std::to_string(i + 1);
      out_.push_back(body_name + " ::= " + bodies[i]);
      RuleId id = -1;
      for (size_t r = 0; r < ast.rules.size(); ++r) {
        if (ast.rules[r].name == body_name) id = static_cast<RuleId>(r);
      }
      std::string lookahead = lark::MaximalMatchLookahead(ast, id, grammar_.ignores[i].position);
      std::string maximal = std::string(kIgnoreRule) + "_" + std::to_string(i + 1);
      out_.push_back(maximal + " ::= " + body_name + (lookahead.empty() ? "" : " (= " + lookahead + ")"));
      before_terminal += (i > 0 ? " | " : "") + maximal;
    }
    out_.push_back(std::string(kIgnoreRule) + " ::= " + before_terminal);
    out_.push_back(std::string(kIgnoreRule) + "_end ::= " + names);
  }

  void CollectDefinitions() {
    std::map<std::string, Position> seen;
    auto claim = [&](const std::string& name, const Position& position) {
      auto [it, fresh] = seen.emplace(name, position);
      if (!fresh) Fail(position, "'" + name + "' is defined more than once (first at " + PositionText(it->second) + ")");
    };
    for (const Definition& def : grammar_.definitions) {
      claim(def.name, def.position);
      if (def.terminal) {
        user_terminals_[def.name] = {&def, "t_" + def.name};
      } else {
        rules_[def.name] = &def;
      }
    }
    if (grammar_.imports.empty()) return;
    common_ = lark::ParseLark(lark::CommonLibraryText());
    for (const Definition& def : common_.definitions) common_terminals_[def.name] = {&def, "c_" + def.name, true};
    for (const lark::Import& import : grammar_.imports) {
      auto found = common_terminals_.find(import.name);
      if (found == common_terminals_.end() || import.name[0] == '_') {
        Fail(import.position, "common." + import.name + " is not in the common library xg2 provides "
                              "(see docs/lark.md for the list)");
      }
      claim(import.alias, import.position);
      if (import.alias.find_first_of("abcdefghijklmnopqrstuvwxyz") != std::string::npos) {
        Fail(import.position, "a terminal must be imported under an UPPERCASE name");
      }
      aliases_[import.alias] = import.name;  // the alias stands for the common terminal itself
    }
  }

  TerminalInfo* FindTerminal(const std::string& name, bool common) {
    if (common) {
      auto it = common_terminals_.find(name);
      return it == common_terminals_.end() ? nullptr : &it->second;
    }
    auto alias = aliases_.find(name);
    if (alias != aliases_.end()) return &common_terminals_.at(alias->second);
    auto it = user_terminals_.find(name);
    return it == user_terminals_.end() ? nullptr : &it->second;
  }

  // Emits the terminal's rule once (and, first, those it uses); checks it is not recursive
  // and cannot match the empty string.
  void LowerTerminal(TerminalInfo* info) {
    if (info->state == 2) return;
    const Definition& def = *info->definition;
    if (info->state == 1) Fail(def.position, "terminal '" + def.name + "' is recursive (terminals must be regular)");
    info->state = 1;
    // Terminals used by terminals lower recursively: bound the chain (the native stack).
    if (++terminal_depth_ > kMaxTerminalDepth) {
      throw ResourceLimitError(lark::Where(def.position) + "terminals refer to terminals more than " +
                               std::to_string(kMaxTerminalDepth) + " deep");
    }
    bool nullable = false;
    std::string body = Terminal(def.body, info->common, &nullable);
    --terminal_depth_;
    if (nullable) {
      Fail(def.position, "terminal '" + def.name + "' can match the empty string (Lark refuses zero-width terminals)");
    }
    out_.push_back(info->ebnf_name + " ::= " + body);
    info->nullable = nullable;
    info->state = 2;
  }

  // A terminal's expression: no ignored text inside, names are terminals.
  std::string Terminal(const Expr& e, bool common, bool* nullable) {
    switch (e.kind) {
      case lark::ExprKind::kSequence: {
        if (e.children.empty()) {
          *nullable = true;
          return "\"\"";
        }
        std::string out = "(";
        bool all = true;
        for (const Expr& child : e.children) {
          bool n = false;
          out += (out.size() > 1 ? " " : "") + Terminal(child, common, &n);
          all = all && n;
        }
        *nullable = all;
        return out + ")";
      }
      case lark::ExprKind::kChoice: {
        std::string out = "(";
        bool any = false;
        for (const Expr& child : e.children) {
          bool n = false;
          out += (out.size() > 1 ? " | " : "") + Terminal(child, common, &n);
          any = any || n;
        }
        *nullable = any;
        return out + ")";
      }
      case lark::ExprKind::kRepeat: {
        bool n = false;
        std::string inner = Terminal(e.children[0], common, &n);
        *nullable = e.min == 0 || n;
        return Repeat(inner, e);
      }
      case lark::ExprKind::kName: {
        TerminalInfo* target = FindTerminal(e.text, common);
        if (target == nullptr) {
          if (rules_.count(e.text) != 0) Fail(e.position, "a terminal cannot use the rule '" + e.text + "'");
          Fail(e.position, "undefined terminal '" + e.text + "'");
        }
        LowerTerminal(target);
        *nullable = target->nullable;
        return target->ebnf_name;
      }
      case lark::ExprKind::kJson: Fail(e.position, "%json cannot be used inside a terminal");
      case lark::ExprKind::kSpecialToken: Fail(e.position, "a special token cannot be used inside a terminal");
      default: return Leaf(e, nullable);
    }
  }

  // Literals, ranges and regexes.
  std::string Leaf(const Expr& e, bool* nullable) {
    *nullable = false;
    if (e.kind == lark::ExprKind::kRange) return "[" + ClassMember(e.first) + "-" + ClassMember(e.last) + "]";
    if (e.kind == lark::ExprKind::kRegex) {
      lark::LoweredRegex regex = lark::LowerRegex(e);
      *nullable = regex.nullable;
      return regex.ebnf;
    }
    if (!e.case_insensitive) return EbnfLiteral(e.text);
    std::string out = "(";
    std::string run;
    for (char c : e.text) {
      if (static_cast<unsigned char>(c) >= 0x80) {
        Fail(e.position, "the i flag is supported on ASCII text only");
      }
      bool letter = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
      if (!letter) {
        run.push_back(c);
        continue;
      }
      if (!run.empty()) out += (out.size() > 1 ? " " : "") + EbnfLiteral(run);
      run.clear();
      out += (out.size() > 1 ? " " : "") + CaseInsensitiveLetter(c);
    }
    if (!run.empty()) out += (out.size() > 1 ? " " : "") + EbnfLiteral(run);
    return out + ")";
  }

  static std::string Repeat(const std::string& inner, const Expr& e) {
    std::string group = "(" + inner + ")";
    if (e.min == 0 && e.max == 1) return group + "?";
    if (e.min == 0 && e.max < 0) return group + "*";
    if (e.min == 1 && e.max < 0) return group + "+";
    if (e.max < 0) return group + "{" + std::to_string(e.min) + ",}";
    if (e.min == e.max) return group + "{" + std::to_string(e.min) + "}";
    return group + "{" + std::to_string(e.min) + "," + std::to_string(e.max) + "}";
  }

  std::string Ignored() const { return grammar_.ignores.empty() ? "" : std::string(kIgnoreRule) + "* "; }

  // A rule's expression: every terminal may be preceded by ignored text.
  std::string Rule(const Expr& e) {
    switch (e.kind) {
      case lark::ExprKind::kSequence: {
        if (e.children.empty()) return "\"\"";
        std::string out = "(";
        for (const Expr& child : e.children) out += (out.size() > 1 ? " " : "") + Rule(child);
        return out + ")";
      }
      case lark::ExprKind::kChoice: {
        std::string out = "(";
        for (const Expr& child : e.children) out += (out.size() > 1 ? " | " : "") + Rule(child);
        return out + ")";
      }
      case lark::ExprKind::kRepeat: return Repeat(Rule(e.children[0]), e);
      case lark::ExprKind::kName: {
        if (rules_.count(e.text) != 0) return "r_" + e.text;
        TerminalInfo* target = FindTerminal(e.text, false);
        if (target == nullptr) Fail(e.position, "undefined " + std::string(IsUpper(e.text) ? "terminal" : "rule") + " '" + e.text + "'");
        LowerTerminal(target);
        return "(" + Ignored() + target->ebnf_name + ")";
      }
      case lark::ExprKind::kJson: return "(" + Ignored() + Json(e) + ")";
      case lark::ExprKind::kSpecialToken: return "(" + Ignored() + SpecialToken(e) + ")";
      default: {
        bool nullable = false;
        std::string leaf = Leaf(e, &nullable);
        if (nullable) Fail(e.position, "this terminal can match the empty string (Lark refuses zero-width terminals)");
        return "(" + Ignored() + leaf + ")";
      }
    }
  }

  static bool IsUpper(const std::string& name) { return name.find_first_of("ABCDEFGHIJKLMNOPQRSTUVWXYZ") != std::string::npos; }

  std::string SpecialToken(const Expr& e) {
    int64_t id = e.token_id;
    if (id < 0) {
      id = options_.special_tokens == nullptr ? -1 : options_.special_tokens->IdOfText(e.text);
      if (id < 0) Fail(e.position, "'" + e.text + "' is not a special token of this tokenizer");
    } else if (options_.vocab_size >= 0 && id >= options_.vocab_size) {
      Fail(e.position, "token id " + std::to_string(id) + " is outside the vocabulary (size " +
                           std::to_string(options_.vocab_size) + ")");
    }
    return "Token(" + std::to_string(id) + ")";
  }

  // llguidance %json: the schema's JSON Schema meaning (undeclared properties allowed unless
  // additionalProperties says otherwise) with flexible whitespace, as llguidance reads it.
  std::string Json(const Expr& e) {
    JsonSchemaOptions json_options;
    json_options.strict_mode = false;
    std::string ebnf;
    try {
      ebnf = JsonSchemaToEbnf(e.text, json_options).ebnf;
    } catch (const UnsupportedSchemaError& error) {
      throw UnsupportedSchemaError(lark::Where(e.position) + "%json: " + error.what());
    } catch (const SchemaError& error) {
      throw SchemaError(lark::Where(e.position) + "%json: " + error.what());
    }
    std::string prefix = "j" + std::to_string(++json_count_) + "_";
    GrammarAst ast = ParseEbnf(ebnf, "root");
    for (RuleDef& rule : ast.rules) rule.name = prefix + rule.name;
    std::string text = PrintEbnf(ast);
    while (!text.empty() && text.back() == '\n') text.pop_back();
    out_.push_back(std::move(text));
    return prefix + "root";
  }

  const LarkOptions& options_;
  lark::Grammar grammar_;
  lark::Grammar common_;
  std::map<std::string, const Definition*> rules_;
  std::map<std::string, TerminalInfo> user_terminals_;
  std::map<std::string, TerminalInfo> common_terminals_;
  std::map<std::string, std::string> aliases_;  // imported name -> common terminal
  std::vector<std::string> out_;
  int json_count_ = 0;
  int terminal_depth_ = 0;
};

}  // namespace

std::string LarkToEbnf(std::string_view text, const LarkOptions& options) {
  return Lowering(text, options).Run();
}

}  // namespace xg2
