#include "frontends/structural_tag/embedded_grammars.h"

#include <stdexcept>
#include <utility>

#include "frontends/ebnf/ebnf_parser.h"
#include "support/dcheck.h"

namespace xg2 {
namespace structural_tag {
namespace {

// Moves `part`'s nodes to the end of `into` and gives its rules, declared (without bodies) at
// into->rules[first_rule...] in part's order, their bodies and attributes. A parse of the
// printed part appends the same nodes in the same order: a parsed or directly built grammar
// lists its nodes rule by rule, children before parents, as its printed text spells them.
void AppendPart(GrammarAst&& part, RuleId first_rule, GrammarAst* into) {
  const ExprId base = static_cast<ExprId>(into->nodes.size());
  into->nodes.reserve(into->nodes.size() + part.nodes.size());
  for (ExprNode& node : part.nodes) {
    ExprNode& added = into->nodes.emplace_back(std::move(node));
    for (ExprId& child : added.children) child += base;
    if (added.kind == ExprKind::kRuleRef) added.rule_id += first_rule;
  }
  for (size_t i = 0; i < part.rules.size(); ++i) {
    const RuleDef& source = part.rules[i];
    RuleDef& rule = into->rules[first_rule + i];
    XG2_DCHECK(rule.name == source.name && rule.body < 0, "an embedded rule is declared, not yet defined");
    // Every attribute comes along (token budget, JSON character count, unique items): the
    // whole definition is copied, then its node ids are moved to where the nodes now are.
    rule = source;
    rule.body = source.body + base;
    rule.lookahead = source.lookahead < 0 ? -1 : source.lookahead + base;
  }
}

}  // namespace

std::string EmbeddedGrammars::Add(GrammarAst grammar, const std::string& prefix) {
  if (!grammar.tag_dispatches.empty() || !grammar.token_sets.empty()) {
    throw std::logic_error("an embedded grammar holds no tag dispatch and no token set");
  }
  const std::string root = prefix + grammar.rules[grammar.root_rule].name;
  for (RuleDef& rule : grammar.rules) rule.name = prefix + rule.name;
  parts_.push_back(std::move(grammar));
  return root;
}

LoweredGrammar EmbeddedGrammars::Join(const std::string& own_text) {
  std::vector<std::string> external_rules;
  for (const GrammarAst& part : parts_) {
    for (const RuleDef& rule : part.rules) external_rules.push_back(rule.name);
  }
  LoweredGrammar lowered;
  lowered.grammar = ParseEbnfWithExternalRules(own_text, "root", external_rules);
  lowered.ebnf = own_text;
  RuleId first_rule = static_cast<RuleId>(lowered.grammar.rules.size() - external_rules.size());
  for (GrammarAst& part : parts_) {
    lowered.ebnf += PrintEbnf(part);
    const RuleId rule_count = static_cast<RuleId>(part.rules.size());
    AppendPart(std::move(part), first_rule, &lowered.grammar);
    first_rule += rule_count;
  }
  parts_.clear();
  return lowered;
}

}  // namespace structural_tag
}  // namespace xg2
