// Right-linear rules on the AST and the build policy (ast_rule_analyses.h).
#include <algorithm>
#include <limits>
#include <vector>

#include "grammar/ast_rule_analyses.h"
#include "grammar/automaton_literal.h"
#include "grammar/fsm_automata.h"
#include "grammar/lowering_context.h"
#include "support/dcheck.h"
#include "support/utf8.h"

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

bool IsCompound(ExprKind kind) {
  return kind == ExprKind::kSequence || kind == ExprKind::kChoice || kind == ExprKind::kRepeat;
}

// The most NFA nodes a determinisation that cannot pass its cap may have. A subset
// construction state is a distinct set of NFA nodes (SubsetConstruction::Intern finds an
// existing state by its set before it counts a new one), so an NFA of n nodes makes at most
// 2^n states; for n <= kNeverExplodes that is at most the smallest cap, and the NFA node sets
// of all states hold at most 2^n * n entries, far below the construction's set limit. Such a
// determinisation never falls back (DeterminisationExplosion), so it splits nothing into
// #part rules.
constexpr int64_t kNeverExplodes = 12;
static_assert((int64_t{1} << kNeverExplodes) <= fsm_build::DeterminisationCap(0),
              "a determinisation of at most kNeverExplodes NFA nodes stays below every cap");

// The states one determinisation of an NFA of `nfa` nodes takes from the budget: below 2^nfa
// (above), and at most its cap (it stops there and falls back; +1 for the state being made).
int64_t StateBound(int64_t nfa) {
  return nfa <= kNeverExplodes ? int64_t{1} << std::max<int64_t>(nfa, 0) : fsm_build::DeterminisationCap(nfa) + 1;
}

// The NFA nodes AddCodepointRange (nfa_builder.cc) adds for one character class, without its
// sharing of suffix nodes: the target node, and per UTF-8 byte sequence of each range (split
// around the surrogates) one node per byte after the first.
int64_t CharClassNfaNodes(const ExprRanges& ranges) {
  int64_t nodes = 1;
  auto add = [&nodes](uint32_t first, uint32_t last) {
    if (last < 0x80) return;
    for (const Utf8ByteSequence& seq : Utf8RangeSequences(first, last)) nodes += seq.length - 1;
  };
  for (const CodepointRange& r : ranges) {
    if (r.first <= 0xDFFF && r.last >= 0xD800) {
      if (r.first < 0xD800) add(r.first, 0xD7FF);
      if (r.last > 0xDFFF) add(0xE000, r.last);
    } else {
      add(r.first, r.last);
    }
  }
  return nodes;
}

// Upper bounds on what lowering one rule on first use takes from the node budget
// (DecideRuleBuildPolicy's argument).
//
// Nfa(e): the NFA nodes NfaBuilder (nfa_builder.cc) adds for one occurrence of `e` lowered
// without compression, fragments as copies of their DFA (its nodes plus an exit node; a
// fragment not built yet counts StateBound of its own NFA). Per kind: bytes one node per
// byte; a class CharClassNfaNodes; a reference one; a choice a join node and an entry per
// alternative; a repetition two nodes per isolated copy of its child plus a loop or join
// node; a split expression (a call of its #part rule) one, which a compound node never
// undercuts (each counts at least one). Shared tails only ever remove nodes (NfaBuilder).
//
// Kept(u): the states a determinisation unit u (a rule body, or a #part rule's) leaves in
// the budget once built, its #part rules' included. A build takes the NFA's nodes and one
// node per subset state, and gives the NFA back (BuildRuleDfa); a try that falls back gives
// everything back. So when u's NFA cannot fall back (at most kNeverExplodes nodes), Kept(u)
// is 2^n; otherwise either the try succeeds (at most its cap) or u's compound children
// become #part rules, each a unit of its own, and u is lowered again with each of them one
// call node, under the cap of that smaller NFA (LoweringContext::OnExplosion).
class BuildBound {
 public:
  BuildBound(const GrammarAst& ast, fsm_build::LoweringContext* ctx)
      : ast_(ast), ctx_(ctx), nfa_{std::vector<int64_t>(ast.nodes.size(), -1), std::vector<int64_t>(ast.nodes.size(), -1)},
        kept_(ast.nodes.size(), -1), transient_(ast.nodes.size(), 0) {}

  int64_t Nfa(ExprId e, bool fragments) {
    // Only a compound node can be a fragment or hold one: a leaf counts the same either way.
    if (fragments && !IsCompound(ast_.node(e).kind)) return Nfa(e, false);
    int64_t& memo = nfa_[fragments][e];
    if (memo >= 0) return memo;
    if (fragments && ctx_->IsFragment(e)) {
      const fsm_build::Dfa* built = ctx_->BuiltFragment(e);
      memo = SaturatingAdd(built ? built->size() : StateBound(SaturatingAdd(Nfa(e, false), 1)), 1);
      return memo;
    }
    memo = Lowered(e, fragments, /*split_children=*/false);
    return memo;
  }

  int64_t Kept(ExprId u) {
    if (kept_[u] >= 0) return kept_[u];
    const int64_t nfa = SaturatingAdd(Nfa(u, true), 1);  // with the start node
    int64_t kept = StateBound(nfa);
    int64_t transient = SaturatingAdd(nfa, nfa > kNeverExplodes ? kept : 0);
    if (nfa > kNeverExplodes) {
      const int64_t split = StateBound(SaturatingAdd(Lowered(u, true, /*split_children=*/true), 1));
      kept = std::max(kept, SaturatingAdd(split, KeptOfCompoundChildren(u)));
      transient = std::max(transient, TransientOfCompoundChildren(u));
    }
    kept_[u] = kept;
    transient_[u] = transient;
    return kept;
  }

  // The most one try of unit `u` (Kept, memoised) or of a #part unit its fallback makes
  // holds at once beside what earlier builds kept: its NFA, and the states of a try that
  // falls back. The tries run one after another, so the largest counts.
  int64_t Transient(ExprId u) {
    Kept(u);
    return transient_[u];
  }

  // What a fragment not built yet adds to the build of a rule that copies it: its own DFA
  // (StateBound of its NFA), and, when its determinisation falls back there, its compound
  // children as #part rules of that rule (LoweringContext::OnExplosion). 0 once built.
  // `own_transient` and `parts_transient` grow to the most its try and those of its parts
  // hold at once (its try runs while the copying rule's NFA is being lowered: on top of
  // that unit's transient nodes).
  int64_t UnbuiltFragment(ExprId f, int64_t* own_transient, int64_t* parts_transient) {
    if (ctx_->BuiltFragment(f)) return 0;
    const int64_t nfa = SaturatingAdd(Nfa(f, false), 1);
    int64_t added = StateBound(nfa);
    *own_transient = std::max(*own_transient, SaturatingAdd(nfa, added));
    if (nfa <= kNeverExplodes) return added;
    added = SaturatingAdd(added, KeptOfCompoundChildren(f));
    *parts_transient = std::max(*parts_transient, TransientOfCompoundChildren(f));
    return added;
  }

 private:
  // Short child lists are searched for repeats in place; longer ones are sorted in a copy.
  static constexpr size_t kSearchInPlace = 16;

  // The sum of Kept over the distinct compound children of `e` (the #part rules its fallback
  // makes: one per distinct child). The saturating sum of non-negative terms does not depend
  // on their order, and Kept memoises, so the order the children are met in does not matter;
  // debug builds check the in-place search against the sorted copy.
  int64_t KeptOfCompoundChildren(ExprId e) {
    const ExprChildren& of = ast_.node(e).children;
    if (of.size() > kSearchInPlace) return KeptOfSortedCompoundChildren(of);
    int64_t sum = 0;
    for (const ExprId* c = of.begin(); c != of.end(); ++c) {
      if (IsCompound(ast_.node(*c).kind) && std::find(of.begin(), c, *c) == c) sum = SaturatingAdd(sum, Kept(*c));
    }
    XG2_DCHECK(sum == KeptOfSortedCompoundChildren(of), "the in-place search finds each distinct compound child once");
    return sum;
  }

  // The largest Transient over the compound children of `e`, after KeptOfCompoundChildren.
  int64_t TransientOfCompoundChildren(ExprId e) {
    int64_t most = 0;
    for (ExprId c : ast_.node(e).children) {
      if (IsCompound(ast_.node(c).kind)) most = std::max(most, Transient(c));
    }
    return most;
  }

  int64_t KeptOfSortedCompoundChildren(const ExprChildren& of) {
    std::vector<ExprId> children(of.begin(), of.end());
    std::sort(children.begin(), children.end());
    children.erase(std::unique(children.begin(), children.end()), children.end());
    int64_t sum = 0;
    for (ExprId c : children) {
      if (IsCompound(ast_.node(c).kind)) sum = SaturatingAdd(sum, Kept(c));
    }
    return sum;
  }

  int64_t Lowered(ExprId e, bool fragments, bool split_children) {
    const ExprNode& node = ast_.node(e);
    auto child = [&](ExprId c) {
      return split_children && IsCompound(ast_.node(c).kind) ? int64_t{1} : Nfa(c, fragments);
    };
    int64_t size = 0;
    switch (node.kind) {
      case ExprKind::kEmpty:
        break;
      case ExprKind::kBytes:
        size = static_cast<int64_t>(node.bytes.size());
        break;
      case ExprKind::kCharClass:
        size = CharClassNfaNodes(node.ranges);
        break;
      case ExprKind::kRuleRef:
      case ExprKind::kTagDispatch:
        size = 1;
        break;
      case ExprKind::kAutomaton:  // a copy of its byte DFA and an exit (nfa_builder.cc)
        size = ast_.automata[node.automaton]->num_byte_nodes() + 1;
        break;
      case ExprKind::kSequence:
        for (ExprId c : node.children) size = SaturatingAdd(size, child(c));
        break;
      case ExprKind::kChoice:
        size = 1;
        for (ExprId c : node.children) size = SaturatingAdd(size, SaturatingAdd(1, child(c)));
        break;
      case ExprKind::kRepeat: {
        const int64_t copy = SaturatingAdd(child(node.children[0]), 2);
        const int64_t copies = node.max_repeat < 0 ? node.min_repeat + 1 : node.max_repeat;
        size = SaturatingAdd(1, SaturatingMul(copy, std::max<int64_t>(copies, 0)));
        break;
      }
    }
    return IsCompound(node.kind) ? std::max<int64_t>(size, 1) : size;
  }

  const GrammarAst& ast_;
  fsm_build::LoweringContext* ctx_;
  std::vector<int64_t> nfa_[2];  // per node: without, with fragments
  std::vector<int64_t> kept_;
  std::vector<int64_t> transient_;  // per unit Kept has met: see Transient
};

}  // namespace

RuleBuildPolicy DecideEagerRules(const GrammarAst& ast, fsm_build::LoweringContext* ctx) {
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
  // A compressed repetition copies its body's DFA once per token byte and may lift
  // repetitions into rules on counter conflicts, which BuildBound does not bound.
  for (size_t r = 0; r < n; ++r) {
    if (policy.eager[r] == kBuildOnFirstUse && ctx->ContainsCompressible(ast.rules[r].body)) {
      policy.eager[r] = kNoNodeBound;
    }
  }
  return policy;
}

// The node bound of the rules built on first use (BuildBound gives the argument per unit).
// A rule's build lowers its body as one unit, and, where a unit falls back, its compound
// children as units of their own; every fragment it copies is built before (the lazy
// compile builds them, LazyRuleBuilder) or during the build. So a rule keeps at most Kept of
// its body, plus, for each fragment under it not built yet, that fragment's DFA and the
// parts it may fall back into (a fragment built before was charged when it was built).
// Builds run one at a time per grammar (RuleDfaSnapshots), and one build holds the
// transient nodes of its own tries only: its units' (the body's and the #part units'), one
// at a time, with a fragment's try on top of the unit lowering it.
void BoundLazyRules(const GrammarAst& ast, fsm_build::LoweringContext* ctx, RuleBuildPolicy* policy) {
  BuildBound bound(ast, ctx);
  std::vector<uint32_t> visited(ast.nodes.size(), 0);  // the walk of rule r stamps r + 1
  std::vector<ExprId> stack;
  policy->lazy_transient_bound.assign(ast.rules.size(), 0);
  for (size_t r = 0; r < ast.rules.size(); ++r) {
    if (policy->eager[r] != kBuildOnFirstUse) continue;
    const ExprId body = ast.rules[r].body;
    int64_t rule_bound = bound.Kept(body);
    int64_t units_transient = bound.Transient(body);
    int64_t fragment_transient = 0;
    const uint32_t stamp = static_cast<uint32_t>(r) + 1;
    stack.assign(1, body);
    visited[body] = stamp;
    while (!stack.empty()) {
      const ExprId e = stack.back();
      stack.pop_back();
      if (ctx->IsFragment(e)) {
        rule_bound = SaturatingAdd(rule_bound, bound.UnbuiltFragment(e, &fragment_transient, &units_transient));
      }
      for (ExprId c : ast.node(e).children) {
        if (visited[c] != stamp) visited[c] = stamp, stack.push_back(c);
      }
    }
    policy->lazy_node_bound[r] = rule_bound;
    policy->lazy_transient_bound[r] = SaturatingAdd(units_transient, fragment_transient);
  }
  policy->total_lazy_node_bound = LazyNodeBound(*policy, policy->eager);
}

int64_t LazyNodeBound(const RuleBuildPolicy& policy, const std::vector<uint8_t>& built) {
  XG2_DCHECK(built.size() == policy.lazy_node_bound.size(), "one built flag per rule");
  int64_t kept = 0;
  int64_t transient = 0;
  for (size_t r = 0; r < built.size(); ++r) {
    if (built[r]) continue;
    kept = SaturatingAdd(kept, policy.lazy_node_bound[r]);
    transient = std::max(transient, policy.lazy_transient_bound[r]);
  }
  return SaturatingAdd(kept, transient);
}

RuleBuildPolicy DecideRuleBuildPolicy(const GrammarAst& ast, const FsmBuildLimits& limits) {
  fsm_build::LoweringContext ctx(ast, limits);  // pristine: the lowering a first build starts from
  RuleBuildPolicy policy = DecideEagerRules(ast, &ctx);
  BoundLazyRules(ast, &ctx, &policy);
  return policy;
}

}  // namespace xg2
