// BuildRuleDfa's retry loop, LoweringContext::Fragment, and the per-thread scratch.
#include "grammar/rule_dfa_build.h"

#include <algorithm>

#include "grammar/nfa_builder.h"
#include "support/dcheck.h"

namespace xg2 {
namespace fsm_build {

thread_local bool ScratchLease::in_use_ = false;

Dfa BuildRuleDfa(const GrammarAst& ast, ExprId body, int64_t* budget, LoweringContext* ctx, ExprId exempt,
                 const std::string& owner, BuildScratch* scratch, BuildReport* report) {
  std::unique_ptr<BuildScratch> own;  // only without a caller's scratch (it allocates)
  if (!scratch) own = std::make_unique<BuildScratch>();
  BuildScratch& s = scratch ? *scratch : *own;
  if (s.nfas_in_use == s.nfas.size()) s.nfas.push_back(std::make_unique<Nfa>());
  Nfa& nfa = *s.nfas[s.nfas_in_use];
  struct Release {
    size_t* in_use;
    ~Release() { --*in_use; }
  } release{&++s.nfas_in_use};
  for (;;) {
    const int64_t saved_budget = *budget;
    try {
      nfa.Reset();
      nfa.start = nfa.AddNode();
      nfa.accept = LowerRuleBody(ast, body, nfa.start, &nfa, budget, ctx, exempt, owner,
                                 ctx && !ctx->ContainsCompressible(body));
      nfa.Finish();
      s.largest_nfa = std::max<int64_t>(s.largest_nfa, nfa.num_nodes);
      const FlatDfa* determinised = Determinise(nfa, budget, &s.subsets, /*stop_at_budget=*/false,
                                                DeterminisationCap(nfa.num_nodes));
      if (!determinised) throw DeterminisationExplosion{body};
      Dfa dfa = Minimize(*determinised, &s.minimize);
      XG2_DCHECK_INVARIANTS(CheckRuleDfaInvariants(dfa, -1, "minimisation"));
      *budget += static_cast<int64_t>(nfa.num_nodes);  // the NFA is freed; only DFA nodes stay
      if (report) {
        report->nfa_nodes = nfa.num_nodes;
        report->loops.clear();
        for (const NfaLoop& loop : nfa.loops) report->loops.push_back({loop.expr, loop.optional});
      }
      return dfa;
    } catch (const CounterConflict& conflict) {
      // Lift the repetition into a rule of its own (or, if it conflicts even there, expand
      // it explicitly) and lower the rule again.
      *budget = saved_budget;
      ctx->OnConflict(conflict.expr, exempt);
    } catch (const DeterminisationExplosion& explosion) {
      // Without a context (a fragment, a repetition body, a lookahead) the caller decides.
      if (!ctx) throw;
      *budget = saved_budget;
      ctx->OnExplosion(explosion.expr, owner);
    }
  }
}

// Built with no context: no fragments inside, and no compression (a fragment holds no
// compressible repetition).
const Dfa& LoweringContext::Fragment(ExprId e, int64_t* budget, const std::string& owner) {
  auto it = fragments_.find(e);
  if (it != fragments_.end()) return it->second;
  Dfa dfa = BuildRuleDfa(ast_, e, budget, nullptr, -1, owner, scratch_);
  return fragments_.emplace(e, std::move(dfa)).first->second;
}

}  // namespace fsm_build
}  // namespace xg2
