// Shared rule DFAs (see the header and the comment on the table): the content key of a rule
// body, and the lookup-or-build of a rule DFA through the table.
#include "grammar/shared_rule_dfas.h"

#include <algorithm>
#include <cstring>

#include "support/dcheck.h"
#include "support/error.h"

namespace xg2 {
namespace fsm_build {

bool BodyKeyWriter::Write(ExprId body, LoweringContext* ctx, std::string* key) {
  if (ctx->ExpandedSize(body) < kMinSharedBodySize) return false;
  ++generation_;
  order_.clear();
  for (RuleId r : refs_) rank_[r] = -1;
  refs_.clear();
  stack_.assign(1, body);
  while (!stack_.empty()) {
    const ExprId e = stack_.back();
    stack_.pop_back();
    if (stamp_[e] == generation_) continue;
    stamp_[e] = generation_;
    local_[e] = static_cast<int32_t>(order_.size());
    order_.push_back(e);
    const ExprNode& node = ast_.node(e);
    if (node.kind == ExprKind::kTagDispatch || node.kind == ExprKind::kAutomaton) return false;  // built, not shared
    if (node.kind == ExprKind::kRuleRef && rank_[node.rule_id] < 0) {
      rank_[node.rule_id] = 0;
      refs_.push_back(node.rule_id);
    }
    for (auto it = node.children.rbegin(); it != node.children.rend(); ++it) stack_.push_back(*it);
  }
  std::sort(refs_.begin(), refs_.end());
  for (size_t k = 0; k < refs_.size(); ++k) rank_[refs_[k]] = static_cast<int32_t>(k);
  // The key's words gather in a reused buffer, sized for the longest key first and written
  // through a cursor, and reach the string in one copy.
  size_t bound = 2;
  for (ExprId e : order_) bound += MaxWords(ast_.node(e));
  std::vector<int32_t>& w = words_;
  w.resize(bound);
  int32_t* out = w.data();
  *out++ = ctx->threshold();
  *out++ = ctx->max_token_bytes();
  for (ExprId e : order_) {
    const ExprNode& node = ast_.node(e);
    *out++ = static_cast<int32_t>(node.kind);
    switch (node.kind) {
      case ExprKind::kBytes: {
        const size_t size = node.bytes.size();
        *out++ = static_cast<int32_t>(size);
        const size_t words = (size + 3) / 4;
        if (words > 0) {
          out[words - 1] = 0;
          std::memcpy(out, node.bytes.data(), size);
        }
        out += words;
        break;
      }
      case ExprKind::kCharClass:
        *out++ = static_cast<int32_t>(node.ranges.size());
        for (const CodepointRange& r : node.ranges) {
          *out++ = static_cast<int32_t>(r.first);
          *out++ = static_cast<int32_t>(r.last);
        }
        break;
      case ExprKind::kRepeat: {
        // Compressed or not is part of the key: the two lower the same counts differently.
        const bool compressed = ctx->Compressible(e);
        *out++ = compressed ? 1 : 0;
        if (compressed) {
          *out++ = FoldedOrExact(node.min_repeat, ctx->max_token_bytes());
          *out++ = node.max_repeat < 0 ? -1 : FoldedOrExact(static_cast<int64_t>(node.max_repeat) - node.min_repeat,
                                                             ctx->max_token_bytes());
        } else {
          *out++ = node.min_repeat;
          *out++ = node.max_repeat;
        }
        break;
      }
      case ExprKind::kRuleRef:
        *out++ = rank_[node.rule_id];
        *out++ = ctx->RuleNullable(node.rule_id) ? 1 : 0;
        break;
      default:
        break;
    }
    *out++ = static_cast<int32_t>(node.children.size());
    for (ExprId child : node.children) *out++ = local_[child];
  }
  key->assign(1, 'R');
  key->append(reinterpret_cast<const char*>(w.data()), static_cast<size_t>(out - w.data()) * sizeof(int32_t));
  return true;
}

namespace {

// Iterations of repetition `node` that a counted loop folds (its optional or mandatory ones).
int64_t FoldedIterations(const ExprNode& node, bool optional) {
  return optional ? static_cast<int64_t>(node.max_repeat) - node.min_repeat : node.min_repeat;
}

// The DFA with each rule edge's rule replaced by map(rule).
template <typename Map>
Dfa WithRulesMapped(Dfa dfa, Map map) {
  for (RuleEdge& e : dfa.rule_edges) e.rule = map(e.rule);
  return dfa;
}

}  // namespace

Dfa BuildRuleDfaShared(const GrammarAst& ast, ExprId body, int64_t* budget, LoweringContext* ctx,
                       const std::string& owner, BuildScratch* scratch, BodyKeyWriter* keys) {
  std::string key;
  if (!ctx->Pristine() || !keys->Write(body, ctx, &key)) {
    return BuildRuleDfa(ast, body, budget, ctx, -1, owner, scratch);
  }
  const std::vector<RuleId>& refs = keys->referenced_rules();
  if (std::shared_ptr<const SharedRuleDfa> hit = SharedRuleDfas::Instance().Find(key)) {
    if (hit->nfa_nodes > *budget) {
      throw ResourceLimitError("grammar too large: more than the node limit of the FSM builder "
                               "(reduce repetition bounds or grammar size)");
    }
    if (hit->nfa_nodes + hit->net_nodes > *budget) {
      throw ResourceLimitError("grammar too large: determinisation exceeded the node limit");
    }
    *budget -= hit->net_nodes;
    Dfa dfa = WithRulesMapped(hit->dfa, [&refs](RuleId rank) { return refs[rank]; });
    for (size_t k = 0; k < hit->loops.size(); ++k) {
      const SharedRuleDfa::LoopOrigin& origin = hit->loops[k];
      const ExprNode& repeat = ast.node(keys->node_at(origin.node));
      dfa.loops[k].limit = static_cast<int32_t>(FoldedIterations(repeat, origin.optional) - origin.chain);
    }
    XG2_DCHECK_INVARIANTS(CheckRuleDfaInvariants(dfa, -1, "a shared rule-DFA table hit"));
    return dfa;
  }
  const size_t synthetic_before = ctx->synthetic().size();
  const int64_t budget_before = *budget;
  BuildReport report;
  Dfa dfa = BuildRuleDfa(ast, body, budget, ctx, -1, owner, scratch, &report);
  // A repetition lifted on the way makes the DFA call a rule of this grammar: not shared. So
  // does a repetition body lifted into a synthetic rule by an earlier rule of this grammar
  // (LoweringContext::Body caches it per child): a rule edge to a rule the body does not name.
  if (!ctx->Pristine() || ctx->synthetic().size() != synthetic_before) return dfa;
  for (const RuleEdge& e : dfa.rule_edges) {
    if (!std::binary_search(refs.begin(), refs.end(), e.rule)) return dfa;
  }
  auto entry = std::make_shared<SharedRuleDfa>();
  entry->dfa = WithRulesMapped(dfa, [&refs](RuleId rule) {
    return static_cast<RuleId>(std::lower_bound(refs.begin(), refs.end(), rule) - refs.begin());
  });
  entry->nfa_nodes = report.nfa_nodes;
  entry->net_nodes = budget_before - *budget;
  for (size_t k = 0; k < report.loops.size(); ++k) {
    const BuildReport::Loop& loop = report.loops[k];
    entry->loops.push_back({keys->position_of(loop.expr), loop.optional,
                            FoldedIterations(ast.node(loop.expr), loop.optional) - dfa.loops[k].limit});
  }
  SharedRuleDfas::Instance().Store(key, std::move(entry));
  return dfa;
}

}  // namespace fsm_build

SharedRuleDfaStats GetSharedRuleDfaStats() { return fsm_build::SharedRuleDfas::Instance().Stats(); }

}  // namespace xg2
