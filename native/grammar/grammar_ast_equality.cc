#include "grammar/grammar_ast_equality.h"

#include <algorithm>
#include <memory>

#include "grammar/automaton_literal.h"

namespace xg2 {
namespace {

bool SameNode(const ExprNode& x, const ExprNode& y) {
  return x.kind == y.kind && x.rule_id == y.rule_id && x.min_repeat == y.min_repeat &&
         x.max_repeat == y.max_repeat && x.tag_dispatch == y.tag_dispatch && x.automaton == y.automaton && x.bytes == y.bytes &&
         x.ranges == y.ranges && x.children.size() == y.children.size() &&
         std::equal(x.children.begin(), x.children.end(), y.children.begin());
}

bool SameRule(const RuleDef& x, const RuleDef& y) {
  return x.name == y.name && x.body == y.body && x.lookahead == y.lookahead && x.max_tokens == y.max_tokens &&
         x.min_json_chars == y.min_json_chars && x.max_json_chars == y.max_json_chars &&
         x.unique_item == y.unique_item && x.unique_items == y.unique_items;
}

bool SameTagDispatch(const TagDispatchDef& x, const TagDispatchDef& y) {
  if (x.tags.size() != y.tags.size()) return false;
  for (size_t i = 0; i < x.tags.size(); ++i) {
    if (x.tags[i].text != y.tags[i].text || x.tags[i].rule != y.tags[i].rule) return false;
  }
  return x.stop_eos == y.stop_eos && x.stop_strings == y.stop_strings &&
         x.loop_after_dispatch == y.loop_after_dispatch && x.excludes == y.excludes;
}

bool SameAutomaton(const std::shared_ptr<const AutomatonLiteral>& x, const std::shared_ptr<const AutomatonLiteral>& y) {
  return SameAutomatonLiteral(*x, *y);
}

template <typename T, typename Same>
bool SameList(const std::vector<T>& a, const std::vector<T>& b, Same same) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), same);
}

}  // namespace

bool SameGrammarAst(const GrammarAst& a, const GrammarAst& b) {
  return a.root_rule == b.root_rule && a.token_sets == b.token_sets && SameList(a.nodes, b.nodes, SameNode) &&
         SameList(a.rules, b.rules, SameRule) && SameList(a.tag_dispatches, b.tag_dispatches, SameTagDispatch) &&
         SameList(a.automata, b.automata, SameAutomaton);
}

}  // namespace xg2
