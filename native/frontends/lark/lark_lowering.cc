#include "frontends/lark/lark_lowering.h"

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "frontends/json_schema/json_schema_converter.h"
#include "frontends/lark/lark_common.h"
#include "frontends/lark/lark_ignore.h"
#include "frontends/lark/lark_parser.h"
#include "frontends/lark/lark_regex.h"
#include "grammar/grammar_ast.h"
#include "grammar/grammar_builder.h"
#include "grammar/token_literal.h"
#include "support/compile_limits.h"
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

// The code points Python's re matches for an ASCII letter under IGNORECASE (Lark compiles
// "text"i that way): both cases, and the non-ASCII letters that fold to it.
std::vector<CodepointRange> CaseInsensitiveLetter(char c) {
  const char32_t lower = static_cast<char32_t>(c | 0x20);
  std::vector<CodepointRange> members = {{lower, lower}, {lower & ~0x20u, lower & ~0x20u}};
  if (lower == 'i') members.insert(members.end(), {{0x130, 0x130}, {0x131, 0x131}});
  if (lower == 'k') members.push_back({0x212A, 0x212A});
  if (lower == 's') members.push_back({0x17F, 0x17F});
  return NormalizeRanges(std::move(members), false);
}

struct TerminalInfo {
  const Definition* definition = nullptr;
  std::string rule_name;
  bool common = false;  // a definition of the common library (its names resolve there)
  int state = 0;        // lowering: 0 not yet, 1 in progress (recursion check), 2 done
  bool nullable = false;
  RuleId rule = -1;     // once lowering started
};

// Builds the grammar through GrammarBuilder. The rules are listed (FinishInPrintedOrder) in
// the order the frontend completes them: the root, each terminal once its body is built (the
// terminals it uses before it), the %ignore rules, then the Lark rules by name, each after the
// %json grammars its body embeds.
class Lowering {
 public:
  Lowering(std::string_view text, const LarkOptions& options)
      : options_(options), grammar_(lark::ParseLark(text)) {}

  GrammarAst Run() {
    const RuleId root = builder_.AddRule("root");
    order_.push_back(root);
    CollectDefinitions();
    auto start = rules_.find("start");
    if (start == rules_.end()) {
      throw GrammarSyntaxError("Lark grammar has no 'start' rule (the root of the language)");
    }
    std::vector<ExprId> ignore_bodies;
    for (const Expr& ignore : grammar_.ignores) {
      bool nullable = false;
      ignore_bodies.push_back(Terminal(ignore, /*common=*/false, &nullable));
      if (nullable) Fail(ignore.position, "the %ignore'd text can be empty (Lark refuses zero-width terminals)");
    }
    for (auto& [name, info] : user_terminals_) LowerTerminal(&info);
    for (const auto& [alias, name] : aliases_) LowerTerminal(&common_terminals_.at(name));
    if (!ignore_bodies.empty()) LowerIgnores(ignore_bodies);
    for (const auto& [name, def] : rules_) {
      const RuleId rule = rule_ids_.at(name);
      builder_.DefineRule(rule, Rule(def->body));
      if (def->max_tokens >= 0) builder_.SetMaxTokens(rule, static_cast<int32_t>(def->max_tokens));
      order_.push_back(rule);
    }
    ExprId root_body = builder_.RuleRef(rule_ids_.at("start"));
    if (!ignore_bodies.empty()) {
      const ExprId parts[] = {root_body, builder_.Repeat(builder_.RuleRef(ignore_end_rule_), 0, -1)};
      root_body = builder_.Sequence(parts, 2);
    }
    builder_.DefineRule(root, root_body);
    return builder_.FinishInPrintedOrder(root, order_);
  }

 private:
  RuleId AddListedRule(const std::string& name, ExprId body, ExprId lookahead = -1) {
    const RuleId rule = builder_.AddRule(name);
    builder_.DefineRule(rule, body, lookahead);
    order_.push_back(rule);
    return rule;
  }

  // lark_ignore (before a terminal) takes a maximal match of an ignored terminal, as Lark's
  // greedy skip does (lark_ignore.h); lark_ignore_end (after the start rule, where the text
  // ends) any match.
  void LowerIgnores(const std::vector<ExprId>& bodies) {
    std::vector<ExprId> maximal_refs;
    std::vector<RuleId> body_rules;
    for (size_t i = 0; i < bodies.size(); ++i) {
      const std::string suffix = std::to_string(i + 1);
      const RuleId body_rule = AddListedRule(std::string(kIgnoreRule) + "_body_" + suffix, bodies[i]);
      body_rules.push_back(body_rule);
      const ExprId lookahead = lark::MaximalMatchLookahead(body_rule, grammar_.ignores[i].position, &builder_);
      const RuleId maximal =
          AddListedRule(std::string(kIgnoreRule) + "_" + suffix, builder_.RuleRef(body_rule), lookahead);
      maximal_refs.push_back(builder_.RuleRef(maximal));
    }
    ignore_rule_ = AddListedRule(kIgnoreRule, builder_.Choice(maximal_refs.data(), maximal_refs.size()));
    std::vector<ExprId> body_refs;
    for (RuleId rule : body_rules) body_refs.push_back(builder_.RuleRef(rule));
    ignore_end_rule_ = AddListedRule(std::string(kIgnoreRule) + "_end", builder_.Choice(body_refs.data(), body_refs.size()));
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
    for (const auto& [name, def] : rules_) rule_ids_[name] = builder_.AddRule("r_" + name);
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

  // Defines the terminal's rule once (and, first, those it uses); checks it is not recursive
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
    const ExprId body = Terminal(def.body, info->common, &nullable);
    --terminal_depth_;
    if (nullable) {
      Fail(def.position, "terminal '" + def.name + "' can match the empty string (Lark refuses zero-width terminals)");
    }
    info->rule = AddListedRule(info->rule_name, body);
    info->nullable = nullable;
    info->state = 2;
  }

  // A terminal's expression: no ignored text inside, names are terminals.
  ExprId Terminal(const Expr& e, bool common, bool* nullable) {
    switch (e.kind) {
      case lark::ExprKind::kSequence: {
        std::vector<ExprId> children;
        bool all = true;
        for (const Expr& child : e.children) {
          bool n = false;
          children.push_back(Terminal(child, common, &n));
          all = all && n;
        }
        *nullable = all;
        return builder_.Sequence(children.data(), children.size());
      }
      case lark::ExprKind::kChoice: {
        std::vector<ExprId> children;
        bool any = false;
        for (const Expr& child : e.children) {
          bool n = false;
          children.push_back(Terminal(child, common, &n));
          any = any || n;
        }
        *nullable = any;
        return builder_.Choice(children.data(), children.size());
      }
      case lark::ExprKind::kRepeat: {
        bool n = false;
        const ExprId inner = Terminal(e.children[0], common, &n);
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
        return builder_.RuleRef(target->rule);
      }
      case lark::ExprKind::kJson: Fail(e.position, "%json cannot be used inside a terminal");
      case lark::ExprKind::kSpecialToken: Fail(e.position, "a special token cannot be used inside a terminal");
      default: return Leaf(e, nullable);
    }
  }

  // Literals, ranges and regexes.
  ExprId Leaf(const Expr& e, bool* nullable) {
    *nullable = false;
    if (e.kind == lark::ExprKind::kRange) return builder_.CharClass(NormalizeRanges({{e.first, e.last}}, false));
    if (e.kind == lark::ExprKind::kRegex) {
      const lark::LoweredRegex regex = lark::LowerRegex(e, &builder_);
      *nullable = regex.nullable;
      return regex.expr;
    }
    if (!e.case_insensitive) return builder_.Bytes(e.text);
    // Runs of other characters stay literals; each letter is a class of its cases.
    std::vector<ExprId> parts;
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
      if (!run.empty()) parts.push_back(builder_.Bytes(std::move(run)));
      run.clear();
      parts.push_back(builder_.CharClass(CaseInsensitiveLetter(c)));
    }
    if (!run.empty()) parts.push_back(builder_.Bytes(std::move(run)));
    return builder_.Sequence(parts.data(), parts.size());
  }

  // `inner` repeated as `e` says. A bound over the compile limits names the Lark construct.
  ExprId Repeat(ExprId inner, const Expr& e) {
    try {
      return builder_.Repeat(inner, static_cast<int32_t>(e.min), static_cast<int32_t>(e.max < 0 ? -1 : e.max));
    } catch (const ResourceLimitError& error) {
      throw ResourceLimitError(lark::Where(e.position) + error.what());
    }
  }

  // A terminal occurrence in a rule: ignored text may come before it.
  ExprId AfterIgnored(ExprId terminal) {
    if (grammar_.ignores.empty()) return terminal;
    const ExprId parts[] = {builder_.Repeat(builder_.RuleRef(ignore_rule_), 0, -1), terminal};
    return builder_.Sequence(parts, 2);
  }

  // A rule's expression: every terminal may be preceded by ignored text.
  ExprId Rule(const Expr& e) {
    switch (e.kind) {
      case lark::ExprKind::kSequence:
      case lark::ExprKind::kChoice: {
        std::vector<ExprId> children;
        for (const Expr& child : e.children) children.push_back(Rule(child));
        if (e.kind == lark::ExprKind::kSequence) return builder_.Sequence(children.data(), children.size());
        return builder_.Choice(children.data(), children.size());
      }
      case lark::ExprKind::kRepeat: return Repeat(Rule(e.children[0]), e);
      case lark::ExprKind::kName: {
        auto rule = rule_ids_.find(e.text);
        if (rule != rule_ids_.end()) return builder_.RuleRef(rule->second);
        TerminalInfo* target = FindTerminal(e.text, false);
        if (target == nullptr) Fail(e.position, "undefined " + std::string(IsUpper(e.text) ? "terminal" : "rule") + " '" + e.text + "'");
        LowerTerminal(target);
        return AfterIgnored(builder_.RuleRef(target->rule));
      }
      case lark::ExprKind::kJson: return AfterIgnored(Json(e));
      case lark::ExprKind::kSpecialToken: return AfterIgnored(SpecialToken(e));
      default: {
        bool nullable = false;
        const ExprId leaf = Leaf(e, &nullable);
        if (nullable) Fail(e.position, "this terminal can match the empty string (Lark refuses zero-width terminals)");
        return AfterIgnored(leaf);
      }
    }
  }

  static bool IsUpper(const std::string& name) { return name.find_first_of("ABCDEFGHIJKLMNOPQRSTUVWXYZ") != std::string::npos; }

  ExprId SpecialToken(const Expr& e) {
    int64_t id = e.token_id;
    if (id < 0) {
      id = options_.special_tokens == nullptr ? -1 : options_.special_tokens->IdOfText(e.text);
      if (id < 0) Fail(e.position, "'" + e.text + "' is not a special token of this tokenizer");
    } else if (options_.vocab_size >= 0 && id >= options_.vocab_size) {
      Fail(e.position, "token id " + std::to_string(id) + " is outside the vocabulary (size " +
                           std::to_string(options_.vocab_size) + ")");
    } else if (id > kMaxTokenLiteralId) {
      Fail(e.position, "token id " + std::to_string(id) + " is outside [0, " + std::to_string(kMaxTokenLiteralId) +
                           "], the ids a grammar can name");
    }
    return builder_.TokenLiteral(static_cast<int32_t>(id));
  }

  // llguidance %json: the schema's JSON Schema meaning (undeclared properties allowed unless
  // additionalProperties says otherwise) with flexible whitespace, as llguidance reads it. The
  // conversion's rules are embedded, renamed j<n>_<name>, listed before the rule that uses them.
  ExprId Json(const Expr& e) {
    JsonSchemaOptions json_options;
    json_options.strict_mode = false;
    JsonSchemaConversion conversion;
    try {
      conversion = JsonSchemaToGrammar(e.text, json_options, CurrentCompileLimits());
    } catch (const UnsupportedSchemaError& error) {
      throw UnsupportedSchemaError(lark::Where(e.position) + "%json: " + error.what());
    } catch (const SchemaError& error) {
      throw SchemaError(lark::Where(e.position) + "%json: " + error.what());
    }
    const RuleId root = conversion.grammar.root_rule;
    const std::vector<RuleId> rules =
        builder_.Embed(std::move(conversion.grammar), "j" + std::to_string(++json_count_) + "_");
    order_.insert(order_.end(), rules.begin(), rules.end());
    return builder_.RuleRef(rules[root]);
  }

  const LarkOptions& options_;
  lark::Grammar grammar_;
  lark::Grammar common_;
  GrammarBuilder builder_;
  std::vector<RuleId> order_;  // the printed order of the rules
  std::map<std::string, const Definition*> rules_;
  std::map<std::string, RuleId> rule_ids_;  // Lark rule name -> its rule r_<name>
  std::map<std::string, TerminalInfo> user_terminals_;
  std::map<std::string, TerminalInfo> common_terminals_;
  std::map<std::string, std::string> aliases_;  // imported name -> common terminal
  RuleId ignore_rule_ = -1;
  RuleId ignore_end_rule_ = -1;
  int json_count_ = 0;
  int terminal_depth_ = 0;
};

}  // namespace

GrammarAst LarkToGrammar(std::string_view text, const LarkOptions& options) {
  return Lowering(text, options).Run();
}

}  // namespace xg2
