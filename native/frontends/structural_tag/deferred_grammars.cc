#include "frontends/structural_tag/deferred_grammars.h"

#include <utility>

#include "support/dcheck.h"

namespace xg2 {
namespace structural_tag {
namespace {

// Whether `grammar`'s nodes are numbered as a parse of its printed EBNF numbers them: rule by
// rule, the body then the lookahead, each tree in post-order (children before parents, left to
// right), every node once. Reads ids only.
bool InPrintedOrder(const GrammarAst& grammar) {
  ExprId next = 0;
  std::vector<std::pair<ExprId, size_t>> stack;
  for (const RuleDef& rule : grammar.rules) {
    for (const ExprId root : {rule.body, rule.lookahead}) {
      if (root < 0) continue;
      stack.push_back({root, 0});
      while (!stack.empty()) {
        const ExprId id = stack.back().first;
        const ExprChildren& children = grammar.nodes[id].children;
        if (stack.back().second < children.size()) {
          stack.push_back({children[stack.back().second++], 0});
          continue;
        }
        stack.pop_back();
        if (id != next++) return false;
      }
    }
  }
  return static_cast<size_t>(next) == grammar.nodes.size();
}

// `grammar` renumbered into printed order (its rules keep their order).
GrammarAst Renumbered(GrammarAst grammar) {
  const RuleId root = grammar.root_rule;
  GrammarBuilder builder;
  const std::vector<RuleId> rules = builder.Embed(std::move(grammar), "");
  return builder.FinishInPrintedOrder(rules[root], rules);
}

}  // namespace

std::vector<RuleId> DeferredGrammars::Reserve(GrammarAst source, const std::string& prefix, GrammarBuilder* builder) {
  XG2_DCHECK(source.token_sets.empty() && source.tag_dispatches.empty(),
             "a deferred grammar names no token set or tag dispatch (their indexes would need renumbering)");
  std::vector<RuleId> rules;
  rules.reserve(source.rules.size());
  for (const RuleDef& rule : source.rules) {
    rules.push_back(builder->AddRule(prefix + rule.name));
    builder->DefineRule(rules.back(), builder->Empty());
  }
  reserved_rules_ += source.rules.size();
  // Frontends build their grammars in printed order; one that is not is renumbered here, once.
  kept_.push_back(InPrintedOrder(source) ? std::move(source) : Renumbered(std::move(source)));
  return rules;
}

void DeferredGrammars::AppendTo(GrammarAst* grammar) {
  XG2_DCHECK(grammar->rules.size() >= reserved_rules_ && grammar->nodes.size() >= reserved_rules_,
             "the reserved rules and their placeholders are in the grammar");
  const size_t first_node = grammar->nodes.size() - reserved_rules_;
  RuleId rule_at = static_cast<RuleId>(grammar->rules.size() - reserved_rules_);
#if XG2_DCHECKS_ENABLED
  for (size_t i = 0; i < reserved_rules_; ++i) {
    const RuleDef& placeholder = grammar->rules[rule_at + i];
    XG2_DCHECK(placeholder.body == static_cast<ExprId>(first_node + i) && placeholder.lookahead < 0 &&
                   grammar->nodes[placeholder.body].kind == ExprKind::kEmpty,
               "the reserved rules are listed last, in order, each with its placeholder as its body");
  }
#endif
  grammar->nodes.resize(first_node);
  for (GrammarAst& kept : kept_) {
    const ExprId base = static_cast<ExprId>(grammar->nodes.size());
    const int32_t automaton_base = static_cast<int32_t>(grammar->automata.size());
    for (auto& literal : kept.automata) grammar->automata.push_back(std::move(literal));
    grammar->nodes.reserve(grammar->nodes.size() + kept.nodes.size());
    for (ExprNode& node : kept.nodes) {
      for (ExprId& child : node.children) child += base;
      if (node.kind == ExprKind::kRuleRef) node.rule_id += rule_at;
      if (node.kind == ExprKind::kAutomaton) node.automaton += automaton_base;
      grammar->nodes.push_back(std::move(node));
    }
    for (RuleDef& rule : kept.rules) {
      RuleDef& target = grammar->rules[rule_at++];
      XG2_DCHECK(rule.body >= 0, "a deferred rule is defined");
      rule.name = std::move(target.name);
      target = std::move(rule);
      target.body += base;
      if (target.lookahead >= 0) target.lookahead += base;
    }
  }
  kept_.clear();
  reserved_rules_ = 0;
}

}  // namespace structural_tag
}  // namespace xg2
