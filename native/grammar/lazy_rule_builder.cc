// BuildGrammarFsmLazily and LazyRuleBuilder (see the header).
#include "grammar/lazy_rule_builder.h"

#include <algorithm>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "grammar/fsm_appender.h"
#include "grammar/fsm_builder_steps.h"
#include "grammar/fsm_invariants.h"
#include "grammar/rule_dfa_build.h"
#include "support/cancellation.h"
#include "support/dcheck.h"

namespace xg2 {

using fsm_build::Dfa;

namespace {

bool HasUniqueItems(const GrammarAst& ast) {
  return std::any_of(ast.rules.begin(), ast.rules.end(), [](const RuleDef& r) { return r.unique_item || r.unique_items; });
}

// The rules left to first use when their bounds do not all fit the budget: the compile
// builds those with the largest bounds (their DFAs are usually far smaller than their
// bounds) until the bound of the rest (LazyNodeBound) leaves half of the budget to the
// compile's own builds. The half is a guess at what those builds take, not an invariant:
// the compile checks the budget really left after them (BuildGrammarFsmLazily). Marks the
// chosen rules in `build_now`; returns the bound of the rules still left.
int64_t BuildLargestBoundsAtCompile(const RuleBuildPolicy& policy, int64_t budget, std::vector<uint8_t>* build_now) {
  std::vector<RuleId> waiting;
  for (RuleId r = 0; r < static_cast<RuleId>(build_now->size()); ++r) {
    if (!(*build_now)[r]) waiting.push_back(r);
  }
  std::stable_sort(waiting.begin(), waiting.end(), [&policy](RuleId a, RuleId b) {
    return policy.lazy_node_bound[a] > policy.lazy_node_bound[b];
  });
  // left[k]: LazyNodeBound with waiting[0, k) built too (a suffix sum and a suffix maximum;
  // each bound is at most a quarter of int64_t's range, so two add without overflow).
  const int64_t saturated = std::numeric_limits<int64_t>::max() / 4;
  std::vector<int64_t> left(waiting.size() + 1, 0);
  int64_t kept = 0;
  int64_t transient = 0;
  for (size_t k = waiting.size(); k-- > 0;) {
    kept = std::min(kept + policy.lazy_node_bound[waiting[k]], saturated);
    transient = std::max(transient, policy.lazy_transient_bound[waiting[k]]);
    left[k] = std::min(kept + transient, saturated);
  }
  size_t built = 0;
  while (built < waiting.size() && left[built] > budget / 2) (*build_now)[waiting[built++]] = 1;
  XG2_DCHECK(left[built] == LazyNodeBound(policy, *build_now), "the suffix sums give LazyNodeBound of the rules left");
  return left[built];
}

// A copy of `latest` whose per-node and edge vectors have room for the nodes and edges of
// `dfas`: copy-assigning into reserved vectors keeps their storage, so FsmAppender's resizes
// do not copy the snapshot a second time (each build copies the latest snapshot once).
GrammarFsm CopyWithRoomFor(const GrammarFsm& latest, const std::vector<Dfa>& dfas) {
  size_t nodes = 0, byte_edges = 0, rule_edges = 0;
  for (const Dfa& dfa : dfas) {
    nodes += dfa.nodes.size();
    for (const Dfa::Node& node : dfa.nodes) {
      byte_edges += node.byte_end - node.byte_begin;
      rule_edges += node.rule_end - node.rule_begin;
    }
  }
  const size_t total = latest.num_nodes() + nodes;
  GrammarFsm next;
  next.node_rule.reserve(total);
  next.node_accepting.reserve(total);
  next.byte_edge_begin.reserve(total + 1);
  next.rule_edge_begin.reserve(total + 1);
  next.byte_edges.reserve(latest.byte_edges.size() + byte_edges);
  next.rule_edges.reserve(latest.rule_edges.size() + rule_edges);
  next.node_loop.reserve(total);
  next.node_gate_loop.reserve(total);
  if (latest.has_json_char_counts()) {
    next.node_char_end.reserve(total);
    next.node_fewest_chars.reserve(total);
    next.node_most_chars.reserve(total);
  }
  next = latest;
  return next;
}

}  // namespace

LazyRuleBuilder::LazyRuleBuilder(GrammarAst ast, const FsmBuildLimits& limits)
    : ast_(std::move(ast)),
      limits_(limits),
      ctx_(ast_, limits_),
      body_keys_(ast_),
      budget_(limits_.max_nodes) {}

// Builds every fragment (LoweringContext::IsFragment) a rule left to first use copies, so
// that the bound counts their exact sizes. False when one falls back: the grammar is then
// built whole. The context then holds the fallback (OnExplosion, as the whole build's first
// try of the rule that meets the fragment would record it) and the budget is as before the
// try, so the whole build goes on from here and builds nothing twice.
bool LazyRuleBuilder::BuildFragmentsOf(const RuleBuildPolicy& policy) {
  fsm_build::ScratchLease lease;
  ctx_.set_scratch(lease.get());
  std::vector<uint8_t> visited(ast_.nodes.size(), 0);
  std::vector<ExprId> stack;
  bool built = true;
  for (size_t r = 0; r < ast_.rules.size() && built; ++r) {
    if (policy.eager[r] != kBuildOnFirstUse) continue;
    stack.assign(1, ast_.rules[r].body);
    while (!stack.empty() && built) {
      const ExprId e = stack.back();
      stack.pop_back();
      if (visited[e]) continue;
      visited[e] = 1;
      if (ctx_.IsFragment(e)) {
        const int64_t saved_budget = budget_;
        try {
          ctx_.Fragment(e, &budget_, ast_.rules[r].name);
        } catch (const fsm_build::DeterminisationExplosion& explosion) {
          budget_ = saved_budget;
          ctx_.OnExplosion(explosion.expr, ast_.rules[r].name);
          built = false;
        }
        continue;  // lowered as a copy of its DFA: nothing inside is met as a fragment
      }
      for (ExprId c : ast_.node(e).children) stack.push_back(c);
    }
  }
  ctx_.set_scratch(nullptr);
  return built;
}

// Whole or lazy is decided before any rule is built: the eager rules and the fragments the
// others copy are known from the AST, and the bound on the others is checked against what the
// fragments leave of the budget. Where the bounds of all the others do not fit, the compile
// builds the rules with the largest bounds too (the mixed choice, above) and leaves the rest
// unbuilt. A grammar built whole is built on the builder's context, as BuildGrammarFsm would
// build it: a fragment's DFA depends on its expression alone, a fragment that fell back is
// recorded as the whole build's first try would record it, and the budget is charged the
// same fragments, only earlier; so the whole path pays for the policy (linear in the AST)
// and nothing else twice. Only where the compile's builds then take more than the bound of
// the rules left unbuilt allows does the compile build the grammar again, whole.
LazyGrammarFsm BuildGrammarFsmLazily(GrammarAst ast, const FsmBuildLimits& limits) {
  fsm_build::CheckBuilderInput(ast);
  if (HasUniqueItems(ast)) return {BuildGrammarFsm(ast, limits), nullptr};
  const int32_t num_rules = static_cast<int32_t>(ast.rules.size());
  auto builder = std::make_shared<LazyRuleBuilder>(std::move(ast), limits);
  LazyRuleBuilder& b = *builder;
  auto build_whole = [&b, &limits]() -> LazyGrammarFsm {
    return {fsm_build::BuildFirstSnapshot(b.ast_, limits, &b.ctx_, &b.budget_, &b.body_keys_, nullptr, nullptr), nullptr};
  };
  RuleBuildPolicy policy = DecideEagerRules(b.ast_, &b.ctx_);
  std::vector<uint8_t> build_now(num_rules, 0);
  for (RuleId r = 0; r < num_rules; ++r) build_now[r] = policy.eager[r] != kBuildOnFirstUse || r == b.ast_.root_rule;
  auto waiting = [&build_now] { return std::count(build_now.begin(), build_now.end(), 0); };
  if (waiting() == 0 || !b.BuildFragmentsOf(policy)) return build_whole();
  BoundLazyRules(b.ast_, &b.ctx_, &policy);
  b.order_ = ComputeRuleBodyOrder(b.ast_);
  b.nullable_ = AstRuleNullable(b.ast_, b.order_);
  // The rules the Earley start predicts are built now, in this one build, rather than by the
  // matcher's constructor, one snapshot copy and mask-cache growth each. Their bounds leave
  // the total: they are charged to the budget as they are built.
  const std::vector<uint8_t> start = AstStartRules(b.ast_, b.nullable_);
  for (RuleId r = 0; r < num_rules; ++r) build_now[r] |= start[r];
  int64_t left_unbuilt_bound = LazyNodeBound(policy, build_now);
  if (left_unbuilt_bound > b.budget_) left_unbuilt_bound = BuildLargestBoundsAtCompile(policy, b.budget_, &build_now);
  if (waiting() == 0) return build_whole();
  GrammarFsm fsm = fsm_build::BuildFirstSnapshot(b.ast_, limits, &b.ctx_, &b.budget_, &b.body_keys_, &build_now, &b.nullable_);
  if (b.budget_ < left_unbuilt_bound) return {BuildGrammarFsm(b.ast_, limits), nullptr};
  return {std::move(fsm), std::move(builder)};
}

void LazyRuleBuilder::AddSyntheticRules(GrammarFsm* fsm) const {
  const RuleId first_synthetic = ctx_.first_synthetic_rule();
  const RuleId rules = first_synthetic + static_cast<RuleId>(ctx_.synthetic().size());
  for (RuleId r = fsm->num_rules(); r < rules; ++r) {
    const fsm_build::LoweringContext::Synthetic& synthetic = ctx_.synthetic()[r - first_synthetic];
    fsm->rule_names.push_back(synthetic.name);
    fsm->rule_start.push_back(kUnbuiltRule);
    fsm->rule_nodes.push_back({0, 0});
    fsm->rule_nullable.push_back(nullable_.expr[synthetic.body]);
    fsm->rule_lookahead.push_back(-1);
    if (!fsm->rule_max_tokens.empty()) fsm->rule_max_tokens.push_back(-1);
    if (fsm->has_json_char_counts()) {
      fsm->rule_min_json_chars.push_back(-1);
      fsm->rule_max_json_chars.push_back(-1);
      fsm->rule_chars_slack.push_back(0);
    }
    if (fsm->has_unique_items()) fsm->rule_unique.push_back(GrammarFsm::kNotUnique);
  }
}

GrammarFsm LazyRuleBuilder::Build(const GrammarFsm& latest, RuleId rule) {
  const RuleId first_synthetic = ctx_.first_synthetic_rule();
  XG2_DCHECK(rule >= 0 && rule < first_synthetic && !latest.IsBuilt(rule),
             "a lazy build is asked for an unbuilt grammar rule (synthetic rules are built with their maker)");
  XG2_DCHECK(latest.num_rules() == first_synthetic + static_cast<RuleId>(ctx_.synthetic().size()),
             "every synthetic rule made so far is in the latest snapshot");
  // Runs inside a parser's step, maybe on a thread that is compiling: no compile's token may
  // stop it (the budget was checked against the bound at compile).
  ScopedCancellation outside_any_compile(nullptr);
  fsm_build::ScratchLease lease;
  ctx_.set_scratch(lease.get());
  std::vector<Dfa> dfas;
  std::vector<RuleId> owners;
  // Not through the shared rule-DFA table: a hit there charges what the build that stored it
  // took, fragments of another grammar included, which the bound does not cover.
  dfas.push_back(fsm_build::BuildRuleDfa(ast_, ast_.rules[rule].body, &budget_, &ctx_, -1, ast_.rules[rule].name, lease.get()));
  owners.push_back(rule);
  // Lowering a synthetic rule may make more; each gets the next id.
  for (RuleId s = latest.num_rules(); s < first_synthetic + static_cast<RuleId>(ctx_.synthetic().size()); ++s) {
    const fsm_build::LoweringContext::Synthetic synthetic = ctx_.synthetic()[s - first_synthetic];
    dfas.push_back(fsm_build::BuildRuleDfa(ast_, synthetic.body, &budget_, &ctx_, synthetic.exempt, synthetic.name, lease.get()));
    owners.push_back(s);
  }
  ctx_.set_scratch(nullptr);
  XG2_DCHECK(!ast_.rules[rule].counts_json_chars() && ast_.node(ast_.rules[rule].body).kind != ExprKind::kTagDispatch,
             "a rule built on first use counts no JSON characters and is no TagDispatch");
  GrammarFsm next = CopyWithRoomFor(latest, dfas);
  AddSyntheticRules(&next);
  std::vector<const Dfa*> appended;
  for (const Dfa& dfa : dfas) appended.push_back(&dfa);
  fsm_build::FsmAppender appender(&next, appended);
  for (size_t k = 0; k < dfas.size(); ++k) {
    const NodeId base = appender.Append(dfas[k], owners[k]);
    next.rule_start[owners[k]] = base;
    next.rule_nodes[owners[k]] = {base, base + dfas[k].size()};
  }
  appender.Finish();
  if (next.has_token_sets()) IndexTokenSetEdges(&next);
  XG2_DCHECK_INVARIANTS(CheckGrammarFsmInvariants(next, "a rule build on first use"));
  return next;
}

std::shared_ptr<const RuleByteContexts> LazyRuleBuilder::ByteContexts() {
  const std::vector<fsm_build::LoweringContext::Synthetic>& synthetic = ctx_.synthetic();
  if (contexts_ && contexts_->size() == ast_.rules.size() + synthetic.size()) return contexts_;
  XG2_DCHECK(nullable_.rule.size() == ast_.rules.size(), "the byte contexts are asked of a grammar left unbuilt");
  if (!byte_sets_) {
    byte_sets_ = std::make_unique<const AstByteSets>(ComputeAstByteSets(ast_, order_, nullable_));
    order_ = RuleBodyOrder();
  }
  RuleByteContexts contexts{nullable_.rule, byte_sets_->rule_first, byte_sets_->rule_follow};
  for (const auto& rule : synthetic) {
    contexts.nullable.push_back(nullable_.expr[rule.body]);
    contexts.first.push_back(byte_sets_->first[rule.body]);
    contexts.follow.push_back(byte_sets_->follow[rule.body]);
  }
  if (XG2_DCHECKS_ENABLED) {
    std::vector<ExprId> bodies;
    for (const auto& rule : synthetic) bodies.push_back(rule.body);
    const RuleByteContexts fresh = AstRuleByteContexts(ast_, bodies);
    XG2_DCHECK(fresh.nullable == contexts.nullable && fresh.first == contexts.first && fresh.follow == contexts.follow,
               "the memoised AST analyses give the byte contexts a fresh computation gives");
  }
  contexts_ = std::make_shared<const RuleByteContexts>(std::move(contexts));
  return contexts_;
}

size_t LazyRuleBuilder::MemoryBytes() const {
  size_t bytes = sizeof(*this) + GrammarAstMemoryBytes(ast_) + nullable_.rule.capacity() + nullable_.expr.capacity() +
                 (order_.begin.capacity() + order_.nodes.capacity()) * sizeof(int32_t);
  for (const std::vector<RuleId>& callers : order_.callers) bytes += sizeof(callers) + callers.capacity() * sizeof(RuleId);
  if (byte_sets_) {
    bytes += sizeof(AstByteSets) + (byte_sets_->first.capacity() + byte_sets_->follow.capacity() +
                                    byte_sets_->rule_first.capacity() + byte_sets_->rule_follow.capacity()) *
                                       sizeof(ByteSet);
  }
  return bytes;
}

}  // namespace xg2
