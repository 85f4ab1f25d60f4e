// Right-linear rules on the AST and the build policy (ast_rule_analyses.h).
#include <algorithm>
#include <limits>

#include "grammar/ast_rule_analyses.h"
#include "grammar/fsm_automata.h"
#include "grammar/lowering_context.h"

namespace xg2 {
namespace {

// The rule references of each rule's body (and the tag rules of a TagDispatch body), each
// with whether it is a tail call (see FindAstRightLinear).
struct RuleCalls {
  std::vector<int32_t> begin;  // per rule, into callee/tail; begin[rules] = callee.size()
  std::vector<RuleId> callee;
  std::vector<uint8_t> tail;
};

RuleCalls CollectRuleCalls(const GrammarAst& ast) {
  RuleCalls calls;
  // One visit per (node, tail) pair and rule: stamps[tail][node].
  std::vector<uint32_t> stamps[2] = {std::vector<uint32_t>(ast.nodes.size(), 0),
                                     std::vector<uint32_t>(ast.nodes.size(), 0)};
  std::vector<std::pair<ExprId, bool>> stack;
  for (size_t r = 0; r < ast.rules.size(); ++r) {
    calls.begin.push_back(static_cast<int32_t>(calls.callee.size()));
    const uint32_t stamp = static_cast<uint32_t>(r) + 1;
    stack.assign(1, {ast.rules[r].body, true});
    while (!stack.empty()) {
      const auto [e, tail] = stack.back();
      stack.pop_back();
      if (stamps[tail][e] == stamp) continue;
      stamps[tail][e] = stamp;
      const ExprNode& node = ast.node(e);
      switch (node.kind) {
        case ExprKind::kRuleRef:
          calls.callee.push_back(node.rule_id);
          calls.tail.push_back(tail);
          break;
        case ExprKind::kTagDispatch:
          for (const TagDispatchDef::Tag& tag : ast.tag_dispatches[node.tag_dispatch].tags) {
            calls.callee.push_back(tag.rule);
            calls.tail.push_back(0);
          }
          break;
        case ExprKind::kSequence: {
          // Tail: the last child that is not kEmpty, when the sequence is in tail position.
          bool rest_empty = tail;
          for (size_t i = node.children.size(); i-- > 0;) {
            const ExprId c = node.children[i];
            stack.push_back({c, rest_empty});
            rest_empty = rest_empty && ast.node(c).kind == ExprKind::kEmpty;
          }
          break;
        }
        case ExprKind::kChoice:
          for (ExprId c : node.children) stack.push_back({c, tail});
          break;
        case ExprKind::kRepeat:
          if (node.max_repeat != 0) stack.push_back({node.children[0], tail && node.max_repeat == 1});
          break;
        default:
          break;
      }
    }
  }
  calls.begin.push_back(static_cast<int32_t>(calls.callee.size()));
  return calls;
}

}  // namespace

AstRightLinear FindAstRightLinear(const GrammarAst& ast, const std::vector<uint8_t>& excluded) {
  const size_t n = ast.rules.size();
  const RuleCalls calls = CollectRuleCalls(ast);
  AstRightLinear out;
  // Greatest fixpoint, as right_linear_merge.cc: start from every candidate, drop those with a
  // call that is not a tail call of a remaining candidate.
  out.pure.assign(n, 0);
  for (size_t r = 0; r < n; ++r) out.pure[r] = !excluded[r];
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t r = 0; r < n; ++r) {
      if (!out.pure[r]) continue;
      for (int32_t k = calls.begin[r]; k < calls.begin[r + 1]; ++k) {
        if (!calls.tail[k] || !out.pure[calls.callee[k]]) out.pure[r] = 0;
      }
      changed |= !out.pure[r];
    }
  }
  out.calls.assign(n, 0);
  for (size_t r = 0; r < n; ++r) out.calls[r] = calls.begin[r] != calls.begin[r + 1];
  out.entry.assign(n, 0);
  if (ast.root_rule >= 0 && static_cast<size_t>(ast.root_rule) < n) out.entry[ast.root_rule] = 1;
  for (size_t r = 0; r < n; ++r) {
    if (out.pure[r]) continue;
    for (int32_t k = calls.begin[r]; k < calls.begin[r + 1]; ++k) out.entry[calls.callee[k]] = 1;
  }
  return out;
}

std::vector<RuleId> AstRightLinearGroup(const GrammarAst& ast, const AstRightLinear& rules, RuleId entry) {
  std::vector<RuleId> members;
  if (!rules.pure[entry]) return members;
  std::vector<uint8_t> in_group(ast.rules.size(), 0);
  members.push_back(entry);
  in_group[entry] = 1;
  std::vector<ExprId> stack;
  std::vector<uint32_t> seen(ast.nodes.size(), 0);  // the walk of members[m] stamps m + 1
  for (size_t m = 0; m < members.size(); ++m) {
    // Every reference of a pure rule is a tail call of a pure rule: walk them all.
    const uint32_t stamp = static_cast<uint32_t>(m) + 1;
    stack.assign(1, ast.rules[members[m]].body);
    while (!stack.empty()) {
      const ExprNode& node = ast.node(stack.back());
      stack.pop_back();
      if (node.kind == ExprKind::kRuleRef && !in_group[node.rule_id]) {
        in_group[node.rule_id] = 1;
        members.push_back(node.rule_id);
      }
      for (ExprId c : node.children) {
        if (seen[c] != stamp) seen[c] = stamp, stack.push_back(c);
      }
    }
  }
  if (!rules.calls[entry]) members.clear();  // a group needs a reference (to itself will do)
  return members;
}

namespace {

constexpr int64_t kSaturated = std::numeric_limits<int64_t>::max() / 4;

int64_t SaturatingAdd(int64_t a, int64_t b) { return std::min(a + b, kSaturated); }
int64_t SaturatingMul(int64_t a, int64_t b) { return b != 0 && a > kSaturated / b ? kSaturated : a * b; }

// Upper bound on the NFA nodes NfaBuilder (nfa_builder.cc) adds for one occurrence of `e`,
// lowered without compression, each fragment as a copy of its DFA (at most the cap of its own
// Thompson NFA, plus an exit node). Per kind: bytes one node per byte; a class one target
// node plus the continuation nodes of its UTF-8 sequences (at most three per sequence, and a
// code point range, split around the surrogates into two, gives at most 1 + 3 + 5 + 7
// sequences per part: 96 continuation nodes); a reference one; a choice a join
// node and an entry per alternative; a repetition two nodes per isolated copy of its child
// plus a loop or join node; a split expression (a call of its #part rule) one.
class NfaSizeBound {
 public:
  NfaSizeBound(const GrammarAst& ast, fsm_build::LoweringContext* ctx)
      : ast_(ast), ctx_(ctx), memo_{std::vector<int64_t>(ast.nodes.size(), -1), std::vector<int64_t>(ast.nodes.size(), -1)} {}

  int64_t operator()(ExprId e, bool fragments) {
    int64_t& memo = memo_[fragments][e];
    if (memo >= 0) return memo;
    if (fragments && ctx_->IsFragment(e)) {
      memo = SaturatingAdd(fsm_build::DeterminisationCap(SaturatingAdd((*this)(e, false), 1)), 2);
      return memo;
    }
    const ExprNode& node = ast_.node(e);
    int64_t size = 0;
    switch (node.kind) {
      case ExprKind::kEmpty:
        break;
      case ExprKind::kBytes:
        size = static_cast<int64_t>(node.bytes.size());
        break;
      case ExprKind::kCharClass:
        size = 1 + 96 * static_cast<int64_t>(node.ranges.size());
        break;
      case ExprKind::kRuleRef:
      case ExprKind::kTagDispatch:
        size = 1;
        break;
      case ExprKind::kSequence:
        for (ExprId c : node.children) size = SaturatingAdd(size, (*this)(c, fragments));
        break;
      case ExprKind::kChoice:
        size = 1;
        for (ExprId c : node.children) size = SaturatingAdd(size, SaturatingAdd(1, (*this)(c, fragments)));
        break;
      case ExprKind::kRepeat: {
        const int64_t copy = SaturatingAdd((*this)(node.children[0], fragments), 2);
        const int64_t copies = node.max_repeat < 0 ? node.min_repeat + 1 : node.max_repeat;
        size = SaturatingAdd(1, SaturatingMul(copy, std::max<int64_t>(copies, 0)));
        break;
      }
    }
    memo = size;
    return size;
  }

 private:
  const GrammarAst& ast_;
  fsm_build::LoweringContext* ctx_;
  std::vector<int64_t> memo_[2];  // per node: without, with fragments
};

}  // namespace

// The node bound of a rule built on first use. One build determinises the rule's body and,
// when a determinisation passes its cap, the parts it splits into (#part rules, one per
// compound expression node of the body, each built once; LoweringContext::OnExplosion). A
// determinisation makes at most DeterminisationCap(its NFA's nodes) states and minimisation
// only merges them; the NFA of a part, or of the body once parts are calls, is at most the
// NFA bound of that expression (a call is one node), and it is held only while its DFA is
// made; a fragment's own DFA is made once more. So a build holds at most the sum, over the body and its compound nodes, of the cap of
// their NFA bounds plus the NFA bound itself, and the same for each fragment. Only for rules lowered without compression:
// a compressed repetition copies its body's DFA once per token byte (and lifts repetitions
// into rules on counter conflicts), which this does not bound; such rules are built at
// compile (kNoNodeBound).
RuleBuildPolicy DecideRuleBuildPolicy(const GrammarAst& ast, const FsmBuildLimits& limits) {
  const size_t n = ast.rules.size();
  RuleBuildPolicy policy;
  policy.eager.assign(n, kBuildOnFirstUse);
  policy.lazy_node_bound.assign(n, 0);
  std::vector<RuleId> unique_callees;
  for (size_t r = 0; r < n; ++r) {
    const RuleDef& rule = ast.rules[r];
    uint8_t& reason = policy.eager[r];
    if (rule.counts_json_chars()) reason |= kCountsJsonChars;
    if (rule.max_tokens >= 0) reason |= kTokenBudget;
    if (rule.unique_item || rule.unique_items) reason |= kUniqueItemRole;
    if (rule.unique_item) unique_callees.push_back(static_cast<RuleId>(r));
    if (ast.node(rule.body).kind == ExprKind::kTagDispatch) reason |= kTagDispatchBody;
  }
  // Everything a [unique_item] rule reaches by references.
  std::vector<uint8_t> reached(n, 0);
  std::vector<ExprId> stack;
  std::vector<uint8_t> seen(ast.nodes.size(), 0);
  for (size_t k = 0; k < unique_callees.size(); ++k) {
    const RuleId r = unique_callees[k];
    stack.assign(1, ast.rules[r].body);
    while (!stack.empty()) {
      const ExprNode& node = ast.node(stack.back());
      stack.pop_back();
      if (node.kind == ExprKind::kRuleRef && !reached[node.rule_id]) {
        reached[node.rule_id] = 1;
        policy.eager[node.rule_id] |= kCalledByUniqueItem;
        unique_callees.push_back(node.rule_id);
      }
      for (ExprId c : node.children) {
        if (!seen[c]) seen[c] = 1, stack.push_back(c);
      }
    }
  }
  fsm_build::LoweringContext ctx(ast, limits);  // pristine: the lowering a first build starts from
  NfaSizeBound nfa_bound(ast, &ctx);
  std::vector<uint32_t> visited(ast.nodes.size(), 0);  // the walk of rule r stamps r + 1
  for (size_t r = 0; r < n; ++r) {
    if (policy.eager[r] != kBuildOnFirstUse) continue;
    const ExprId body = ast.rules[r].body;
    if (ctx.ContainsCompressible(body)) {
      policy.eager[r] = kNoNodeBound;
      continue;
    }
    int64_t bound = 0;
    // The body, then each compound node below it (every one could become a #part rule).
    const uint32_t stamp = static_cast<uint32_t>(r) + 1;
    stack.assign(1, body);
    visited[body] = stamp;
    while (!stack.empty()) {
      const ExprId e = stack.back();
      stack.pop_back();
      const ExprKind kind = ast.node(e).kind;
      if (e == body || kind == ExprKind::kSequence || kind == ExprKind::kChoice || kind == ExprKind::kRepeat) {
        const int64_t nfa = SaturatingAdd(nfa_bound(e, /*fragments=*/true), 1);
        bound = SaturatingAdd(bound, SaturatingAdd(fsm_build::DeterminisationCap(nfa) + 1, nfa));
      }
      if (ctx.IsFragment(e)) {  // the fragment's own DFA, made once (LoweringContext::Fragment)
        const int64_t nfa = SaturatingAdd(nfa_bound(e, /*fragments=*/false), 1);
        bound = SaturatingAdd(bound, SaturatingAdd(fsm_build::DeterminisationCap(nfa) + 1, nfa));
      }
      for (ExprId c : ast.node(e).children) {
        if (visited[c] != stamp) visited[c] = stamp, stack.push_back(c);
      }
    }
    policy.lazy_node_bound[r] = bound;
    policy.total_lazy_node_bound = SaturatingAdd(policy.total_lazy_node_bound, bound);
  }
  return policy;
}

}  // namespace xg2
