// LoweringContext's out-of-line members: set-up (expression uses and nullability),
// the fallback and conflict bookkeeping, and the rule nullability fixpoint.
#include "grammar/lowering_context.h"

#include <cassert>

#include "grammar/automaton_literal.h"
#include "support/error.h"

namespace xg2 {
namespace fsm_build {

LoweringContext::LoweringContext(const GrammarAst& ast, const FsmBuildLimits& limits)
    : ast_(ast), threshold_(limits.repetition_compression_threshold),
      max_token_bytes_(std::max(limits.max_token_bytes, 1)), structural_ids_(ast) {
  ComputeRuleNullable();
  contains_compressible_.assign(ast.nodes.size(), -1);
  // Parents are counted among the nodes the rules reach: inlining leaves the bodies of the
  // rules it dropped in the node table, and a parent there is never lowered.
  uses_.assign(ast.nodes.size(), 0);
  std::vector<uint8_t> reached(ast.nodes.size(), 0);
  std::vector<ExprId> stack;
  for (const RuleDef& rule : ast.rules) {
    for (ExprId root : {rule.body, rule.lookahead}) {
      if (root >= 0 && !reached[root]) reached[root] = 1, stack.push_back(root);
    }
  }
  while (!stack.empty()) {
    const ExprId e = stack.back();
    stack.pop_back();
    for (ExprId child : ast.node(e).children) {
      uses_[child] = static_cast<uint8_t>(std::min(uses_[child] + 1, kMinFragmentUses));
      if (!reached[child]) reached[child] = 1, stack.push_back(child);
    }
  }
  // Nullability is asked only of nodes the rules reach (Compressible): the bodies of rules
  // that inlining or reachability dropped stay in the node table, and their rule references
  // may name rules that no longer exist (an index past rule_nullable_).
  expr_nullable_.assign(ast.nodes.size(), -1);
  expr_nullable_stamp_.assign(ast.nodes.size(), 0);
  fragment_size_.assign(ast.nodes.size(), -1);
}

void LoweringContext::OnExplosion(ExprId expr, const std::string& owner) {
  bool progress = exploded_.insert(expr).second;
  for (ExprId child : ast_.node(expr).children) {
    const ExprKind kind = ast_.node(child).kind;
    if (kind == ExprKind::kSequence || kind == ExprKind::kChoice || kind == ExprKind::kRepeat) {
      progress = split_.insert(child).second || progress;
    }
  }
  // Not expected (the retry of an exploded expression is linear in size); a guard against
  // retrying forever.
  if (!progress) {
    throw ResourceLimitError("rule '" + owner + "': determinisation exceeded its state limit and no "
                             "smaller lowering is left");
  }
}

void LoweringContext::OnConflict(ExprId expr, ExprId exempt) {
  if (expr == exempt || lifted_.count(expr)) {
    explicit_.insert(expr);
    std::fill(contains_compressible_.begin(), contains_compressible_.end(), -1);
  } else {
    lifted_.insert(expr);
  }
}

RuleId LoweringContext::SyntheticRule(ExprId expr, const std::string& owner, const char* kind) {
  auto it = synthetic_of_.find(expr);
  if (it != synthetic_of_.end()) return it->second;
  RuleId id = first_synthetic_rule() + static_cast<RuleId>(synthetic_.size());
  synthetic_.push_back({expr, expr, owner + kind + std::to_string(synthetic_.size())});
  synthetic_of_.emplace(expr, id);
  return id;
}

void LoweringContext::ComputeRuleNullable() {
  const size_t num_rules = ast_.rules.size();
  rule_nullable_.assign(num_rules, 0);
  std::vector<std::vector<RuleId>> callers(num_rules);
  std::vector<uint32_t> seen(ast_.nodes.size(), 0);
  std::vector<ExprId> stack;
  for (size_t r = 0; r < num_rules; ++r) {
    const uint32_t stamp = static_cast<uint32_t>(r) + 1;
    stack.assign(1, ast_.rules[r].body);
    seen[ast_.rules[r].body] = stamp;
    while (!stack.empty()) {
      const ExprNode& node = ast_.node(stack.back());
      stack.pop_back();
      if (node.kind == ExprKind::kRuleRef) {
        std::vector<RuleId>& list = callers[node.rule_id];
        if (list.empty() || list.back() != static_cast<RuleId>(r)) list.push_back(static_cast<RuleId>(r));
      }
      for (ExprId child : node.children) {
        if (seen[child] != stamp) {
          seen[child] = stamp;
          stack.push_back(child);
        }
      }
    }
  }
  // Memo entries are shared by the examinations: a "nullable" answer stays true as rules
  // become nullable (nullability only grows), and a "not nullable" one holds until the next
  // rule becomes nullable, when the stamp moves on and such answers are looked at again. A
  // stamp per examination would walk the shared subexpressions of inlined bodies once per
  // rule.
  std::vector<int8_t> memo(ast_.nodes.size(), -1);
  std::vector<uint32_t> memo_stamp(ast_.nodes.size(), 0);
  uint32_t stamp = 1;
  std::vector<RuleId> queue(num_rules);
  std::vector<uint8_t> queued(num_rules, 1);
  for (size_t r = 0; r < num_rules; ++r) queue[r] = static_cast<RuleId>(r);
  for (size_t k = 0; k < queue.size(); ++k) {
    const RuleId r = queue[k];
    queued[r] = 0;
    if (rule_nullable_[r]) continue;
    if (!StampedNullable(ast_.rules[r].body, &memo, &memo_stamp, stamp)) continue;
    rule_nullable_[r] = 1;
    ++stamp;
    for (RuleId caller : callers[r]) {
      if (!rule_nullable_[caller] && !queued[caller]) {
        queued[caller] = 1;
        queue.push_back(caller);
      }
    }
  }
}

bool LoweringContext::StampedNullable(ExprId e, std::vector<int8_t>* memo, std::vector<uint32_t>* memo_stamp,
                                      uint32_t stamp) const {
  if ((*memo_stamp)[e] == stamp || (*memo)[e] == 1) return (*memo)[e] == 1;
  const ExprNode& node = ast_.node(e);
  bool nullable = false;
  switch (node.kind) {
    case ExprKind::kEmpty:
    case ExprKind::kTagDispatch:  // may end at once; conservative either way
      nullable = true;
      break;
    case ExprKind::kBytes:
    case ExprKind::kCharClass:
      break;
    case ExprKind::kAutomaton:
      nullable = ast_.automata[node.automaton]->accepting[0] != 0;
      break;
    case ExprKind::kRuleRef:
      assert(node.rule_id >= 0 && static_cast<size_t>(node.rule_id) < rule_nullable_.size());
      nullable = rule_nullable_[node.rule_id];
      break;
    case ExprKind::kSequence:
      nullable = true;
      for (ExprId c : node.children) nullable = StampedNullable(c, memo, memo_stamp, stamp) && nullable;
      break;
    case ExprKind::kChoice:
      for (ExprId c : node.children) nullable = StampedNullable(c, memo, memo_stamp, stamp) || nullable;
      break;
    case ExprKind::kRepeat:
      nullable = StampedNullable(node.children[0], memo, memo_stamp, stamp) || node.min_repeat == 0;
      break;
  }
  (*memo_stamp)[e] = stamp;
  (*memo)[e] = nullable;
  return nullable;
}

int64_t LoweringContext::FragmentSize(ExprId e) {
  if (fragment_size_[e] >= 0) return fragment_size_[e];
  const ExprNode& node = ast_.node(e);
  int64_t size = 1;
  for (ExprId child : node.children) size = std::min<int64_t>(size + FragmentSize(child), 1 << 30);
  if (node.kind == ExprKind::kRepeat) {
    const int64_t copies = std::max<int64_t>(1, node.max_repeat < 0 ? node.min_repeat + 1 : node.max_repeat);
    size = std::min<int64_t>(1 + (size - 1) * copies, 1 << 30);
  }
  fragment_size_[e] = size;
  return size;
}
}  // namespace fsm_build
}  // namespace xg2
