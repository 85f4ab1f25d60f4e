#include "grammar/grammar_builder.h"

#include <algorithm>
#include <utility>

#include "support/compile_limits.h"
#include "support/dcheck.h"
#include "support/error.h"

namespace xg2 {

ExprId GrammarBuilder::Empty() { return Add(ExprNode{}); }

ExprId GrammarBuilder::Bytes(std::string bytes) {
  if (bytes.empty()) return Empty();
  ExprNode node;
  node.kind = ExprKind::kBytes;
  node.bytes = std::move(bytes);
  return Add(std::move(node));
}

ExprId GrammarBuilder::CharClass(std::vector<CodepointRange> ranges) {
  XG2_DCHECK(!ranges.empty(), "a character class matches at least one code point");
  ExprNode node;
  node.kind = ExprKind::kCharClass;
  node.ranges = std::move(ranges);
  return Add(std::move(node));
}

ExprId GrammarBuilder::RuleRef(RuleId rule) {
  XG2_DCHECK(rule >= 0 && static_cast<size_t>(rule) < ast_.rules.size(), "a reference names an added rule");
  ExprNode node;
  node.kind = ExprKind::kRuleRef;
  node.rule_id = rule;
  return Add(std::move(node));
}

ExprId GrammarBuilder::Sequence(const ExprId* children, size_t count) {
  if (count == 0) return Empty();
  return AddCompound(ExprKind::kSequence, children, count);
}

ExprId GrammarBuilder::Choice(const ExprId* children, size_t count) {
  XG2_DCHECK(count > 0, "a choice has at least one alternative");
  return AddCompound(ExprKind::kChoice, children, count);
}

namespace {

void CheckRepetitionBounds(int32_t min, int32_t max) {
  const int64_t max_bound = CurrentCompileLimits().max_repetition_bound;
  if (min > max_bound || max > max_bound) {
    throw ResourceLimitError("repetition bound exceeds the limit of " + std::to_string(max_bound));
  }
}

}  // namespace

ExprId GrammarBuilder::Repeat(ExprId child, int32_t min, int32_t max) {
  XG2_DCHECK(min >= 0 && (max < 0 || min <= max), "repetition bounds are 0 <= min <= max");
  CheckRepetitionBounds(min, max);
  if (min == 1 && max == 1) return child;
  if (max == 0) return Empty();
  ExprNode node;
  node.kind = ExprKind::kRepeat;
  node.children = {child};
  node.min_repeat = min;
  node.max_repeat = max;
  return Add(std::move(node));
}

ExprId GrammarBuilder::Graft(const GrammarAst& source, ExprId root, const std::vector<RuleId>& rule_of) {
  XG2_DCHECK(source.token_sets.empty() && source.tag_dispatches.empty(),
             "a grafted expression names no token set or tag dispatch");
  // Children precede their parents in a parsed grammar's node table, so one pass in id order
  // copies every node of the tree after its children. Only the tree under `root` is copied.
  std::vector<ExprId> copy_of(source.nodes.size(), -1);
  std::vector<ExprId> stack = {root};
  std::vector<uint8_t> reached(source.nodes.size(), 0);
  reached[root] = 1;
  while (!stack.empty()) {
    const ExprId id = stack.back();
    stack.pop_back();
    for (ExprId child : source.node(id).children) {
      if (!reached[child]) {
        reached[child] = 1;
        stack.push_back(child);
      }
    }
  }
  for (size_t id = 0; id < source.nodes.size(); ++id) {
    if (!reached[id]) continue;
    ExprNode node = source.nodes[id];
    if (node.kind == ExprKind::kRuleRef) {
      XG2_DCHECK(node.rule_id >= 0 && static_cast<size_t>(node.rule_id) < rule_of.size(),
                 "a grafted reference has a rule to map to");
      node.rule_id = rule_of[node.rule_id];
    }
    if (node.kind == ExprKind::kRepeat) CheckRepetitionBounds(node.min_repeat, node.max_repeat);
    for (ExprId& child : node.children) {
      XG2_DCHECK(copy_of[child] >= 0, "children precede their parents in the node table");
      child = copy_of[child];
    }
    copy_of[id] = Add(std::move(node));
  }
  return copy_of[root];
}

ExprId GrammarBuilder::Append(const std::vector<ExprNode>& nodes, const std::vector<int>& heights,
                              const std::vector<RuleId>& rule_of) {
  XG2_DCHECK(nodes.size() == heights.size(), "a height per appended node");
  const ExprId offset = static_cast<ExprId>(ast_.nodes.size());
  ast_.nodes.reserve(ast_.nodes.size() + nodes.size());
  heights_.reserve(heights_.size() + heights.size());
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (heights[i] > kMaxExpressionHeight) {
      throw ResourceLimitError("expression nests deeper than the limit of " + std::to_string(kMaxExpressionHeight));
    }
    ExprNode node = nodes[i];
    for (ExprId& child : node.children) {
      XG2_DCHECK(child >= 0 && static_cast<size_t>(child) < i, "appended children precede their parents");
      child += offset;
    }
    if (node.kind == ExprKind::kRuleRef) {
      XG2_DCHECK(node.rule_id >= 0 && static_cast<size_t>(node.rule_id) < rule_of.size(),
                 "an appended reference has a rule to map to");
      node.rule_id = rule_of[node.rule_id];
    }
    if (node.kind == ExprKind::kRepeat) CheckRepetitionBounds(node.min_repeat, node.max_repeat);
    ast_.nodes.push_back(std::move(node));
    heights_.push_back(heights[i]);
  }
  return offset;
}

RuleId GrammarBuilder::AddRule(const std::string& name) {
  const RuleId id = static_cast<RuleId>(ast_.rules.size());
  if (!rule_ids_.emplace(name, id).second) throw GrammarSyntaxError("rule '" + name + "' is defined twice");
  RuleDef rule;
  rule.name = name;
  ast_.rules.push_back(std::move(rule));
  return id;
}

RuleId GrammarBuilder::FindRule(const std::string& name) const {
  auto found = rule_ids_.find(name);
  return found == rule_ids_.end() ? -1 : found->second;
}

void GrammarBuilder::DefineRule(RuleId rule, ExprId body, ExprId lookahead) {
  XG2_DCHECK(ast_.rules[rule].body < 0, "a rule is defined once");
  ast_.rules[rule].body = body;
  ast_.rules[rule].lookahead = lookahead;
}

void GrammarBuilder::SetJsonCharCount(RuleId rule, int32_t min, int32_t max) {
  XG2_DCHECK(min >= 0 && (max < 0 || max >= min), "a JSON character count is 0 <= min <= max");
  ast_.rules[rule].min_json_chars = min;
  ast_.rules[rule].max_json_chars = max;
}

GrammarAst GrammarBuilder::Finish(RuleId root) {
  for (const RuleDef& rule : ast_.rules) {
    XG2_DCHECK(rule.body >= 0, "rule '" + rule.name + "' is defined before the grammar is finished");
  }
  ast_.root_rule = root;
  GrammarAst ast = std::move(ast_);
  ast_ = GrammarAst();
  heights_.clear();
  rule_ids_.clear();
  return ast;
}

ExprId GrammarBuilder::Add(ExprNode node) {
  int height = 1;
  for (ExprId child : node.children) height = std::max(height, heights_[child] + 1);
  if (height > kMaxExpressionHeight) {
    throw ResourceLimitError("expression nests deeper than the limit of " + std::to_string(kMaxExpressionHeight));
  }
  heights_.push_back(height);
  return ast_.AddNode(std::move(node));
}

ExprId GrammarBuilder::AddCompound(ExprKind kind, const ExprId* children, size_t count) {
  if (count == 1) return children[0];
  ExprNode node;
  node.kind = kind;
  node.children = ExprChildren(children, count);
  return Add(std::move(node));
}

}  // namespace xg2
