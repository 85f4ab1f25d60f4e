#include "grammar/sink_leading_terminals.h"

#include <algorithm>
#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

namespace xg2 {

namespace {

// Expressions larger than this are never moved (they are compared node by node per reference).
constexpr int32_t kMaxSunkNodes = 64;

// Nodes of `e` if it is terminal (no rule reference, no TagDispatch) and small; -1 otherwise.
int32_t TerminalSize(const GrammarAst& ast, ExprId e) {
  int32_t size = 0;
  std::vector<ExprId> stack{e};
  while (!stack.empty()) {
    const ExprNode& node = ast.node(stack.back());
    stack.pop_back();
    if (node.kind == ExprKind::kRuleRef || node.kind == ExprKind::kTagDispatch || node.kind == ExprKind::kAutomaton) {
      return -1;
    }
    if (++size > kMaxSunkNodes) return -1;
    for (ExprId child : node.children) stack.push_back(child);
  }
  return size;
}

bool SameExpression(const GrammarAst& ast, ExprId a, ExprId b) {
  if (a == b) return true;
  const ExprNode& x = ast.node(a);
  const ExprNode& y = ast.node(b);
  if (x.kind != y.kind || x.bytes != y.bytes || !(x.ranges == y.ranges) || x.min_repeat != y.min_repeat ||
      x.max_repeat != y.max_repeat || x.children.size() != y.children.size()) {
    return false;
  }
  for (size_t i = 0; i < x.children.size(); ++i) {
    if (!SameExpression(ast, x.children[i], y.children[i])) return false;
  }
  return true;
}

}  // namespace

int SinkLeadingTerminals(GrammarAst* ast) {
  const size_t num_rules = ast->rules.size();
  // Where each rule is referenced: (sequence node, index of the reference in it). A reference
  // anywhere else (first in a sequence, an alternative, a repetition body, a whole rule body or
  // lookahead, a TagDispatch target) disqualifies the rule.
  std::vector<std::vector<std::pair<ExprId, size_t>>> uses(num_rules);
  std::vector<uint8_t> disqualified(num_rules, 0);
  if (ast->root_rule >= 0) disqualified[ast->root_rule] = 1;
  for (const TagDispatchDef& dispatch : ast->tag_dispatches) {
    for (const auto& tag : dispatch.tags) {
      if (tag.rule >= 0) disqualified[tag.rule] = 1;
    }
  }
  // Only nodes reachable from the rules count: earlier passes leave unreachable nodes in the
  // arena, with rule ids from before renumbering.
  std::vector<uint8_t> seen(ast->nodes.size(), 0);
  std::vector<ExprId> stack;
  for (const RuleDef& rule : ast->rules) {
    if (KeptWhole(*ast, static_cast<RuleId>(&rule - ast->rules.data()))) {
      disqualified[&rule - ast->rules.data()] = 1;  // a TagDispatch or automaton stays a whole rule body
    }
    for (ExprId root : {rule.body, rule.lookahead}) {
      if (root < 0) continue;
      if (ast->node(root).kind == ExprKind::kRuleRef) disqualified[ast->node(root).rule_id] = 1;
      if (!seen[root]) {
        seen[root] = 1;
        stack.push_back(root);
      }
    }
  }
  while (!stack.empty()) {
    const ExprId e = stack.back();
    stack.pop_back();
    const ExprNode& node = ast->node(e);
    for (size_t i = 0; i < node.children.size(); ++i) {
      const ExprId child = node.children[i];
      const ExprNode& child_node = ast->node(child);
      if (child_node.kind == ExprKind::kRuleRef) {
        if (node.kind == ExprKind::kSequence && i > 0) {
          uses[child_node.rule_id].emplace_back(e, i);
        } else {
          disqualified[child_node.rule_id] = 1;
        }
      }
      if (!seen[child]) {
        seen[child] = 1;
        stack.push_back(child);
      }
    }
  }

  // Decide every rule on the unmodified tree, then rewrite.
  std::vector<std::pair<RuleId, ExprId>> sinks;          // rule, the expression it receives
  std::vector<std::pair<ExprId, size_t>> removals;       // (sequence, index) of each dropped copy
  for (RuleId r = 0; r < static_cast<RuleId>(num_rules); ++r) {
    if (disqualified[r] || uses[r].empty()) continue;
    const auto& [first_seq, first_index] = uses[r].front();
    const ExprId leading = ast->node(first_seq).children[first_index - 1];
    if (TerminalSize(*ast, leading) < 0 || ast->node(leading).kind == ExprKind::kEmpty) continue;
    bool all_same = true;
    for (const auto& [seq, index] : uses[r]) {
      all_same = all_same && SameExpression(*ast, ast->node(seq).children[index - 1], leading);
    }
    if (!all_same) continue;
    sinks.emplace_back(r, leading);
    for (const auto& [seq, index] : uses[r]) removals.emplace_back(seq, index - 1);
  }
  // A preceding element can belong to one reference only, so removals never collide; drop
  // them from the back of each sequence so that earlier indices stay valid.
  std::sort(removals.begin(), removals.end(),
            [](const auto& a, const auto& b) { return a.first != b.first ? a.first < b.first : a.second > b.second; });
  for (const auto& [seq, index] : removals) {
    ExprChildren& children = ast->node(seq).children;
    children.erase(children.begin() + static_cast<std::ptrdiff_t>(index));
  }
  for (const auto& [rule, leading] : sinks) {
    ExprNode body;
    body.kind = ExprKind::kSequence;
    body.children = {leading, ast->rules[rule].body};
    ast->rules[rule].body = ast->AddNode(std::move(body));
  }
  return static_cast<int>(sinks.size());
}

}  // namespace xg2
