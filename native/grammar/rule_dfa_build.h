// One rule body -> its minimal DFA: Thompson construction (nfa_builder.h), subset
// construction (subset_construction.h) and minimisation (dfa_minimisation.h), retried with a
// smaller lowering where a counted loop conflicts (the repetition is lifted into a rule, or
// expanded) or the determinisation passes its cap (the compound parts become rules). Also
// the per-thread working memory all of these reuse from one grammar to the next.
// Invariants: a build takes from the node budget only what its DFA keeps (the NFA is given
// back); a retried build starts from the budget the failed try started from; BuildScratch's
// NFAs are a stack (one level of nesting: a repetition body lowered inside its rule).
#ifndef XG2_GRAMMAR_RULE_DFA_BUILD_H_
#define XG2_GRAMMAR_RULE_DFA_BUILD_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "grammar/dfa_minimisation.h"
#include "grammar/fsm_automata.h"
#include "grammar/grammar_ast.h"
#include "grammar/lowering_context.h"
#include "grammar/subset_construction.h"

namespace xg2 {
namespace fsm_build {

// What a build reports besides its DFA: the size of the rule's (outermost) NFA, and the
// repetition folded into each counted loop of the DFA (dfa.loops[k] folds the iterations of
// loops[k].expr, its optional or its mandatory ones).
struct BuildReport {
  struct Loop {
    ExprId expr;
    bool optional;
  };
  int64_t nfa_nodes = 0;
  std::vector<Loop> loops;
};

// `scratch` null: working memory of its own.
Dfa BuildRuleDfa(const GrammarAst& ast, ExprId body, int64_t* budget, LoweringContext* ctx,
                 ExprId exempt, const std::string& owner, BuildScratch* scratch = nullptr,
                 BuildReport* report = nullptr);

// Working memory reused by every rule lowered for one grammar. BuildRuleDfa nests once (the
// body of a compressed repetition is lowered while its rule's NFA is being built), so NFAs
// are a stack; the subset construction and minimisation never run nested.
struct BuildScratch {
  std::vector<std::unique_ptr<Nfa>> nfas;
  size_t nfas_in_use = 0;
  SubsetScratch subsets;
  MinimizeScratch minimize;
  int64_t largest_nfa = 0;  // NFA nodes of the largest rule since the last TakeScratch
};

// One scratch per thread, kept from one grammar to the next: the buffers of the first
// grammars grow to the usual rule size and later builds allocate almost nothing in them.
// A build whose rules were unusually large gives its memory back (see ScratchLease).
constexpr int64_t kKeepScratchNfaNodes = 1 << 16;

class ScratchLease {
 public:
  ScratchLease() : scratch_(Cached()) {
    if (in_use_) {  // not expected (builds do not nest), but then a private one
      own_ = std::make_unique<BuildScratch>();
      scratch_ = own_.get();
    } else {
      in_use_ = true;
    }
    scratch_->largest_nfa = 0;
  }
  ~ScratchLease() {
    if (own_) return;
    in_use_ = false;
    if (scratch_->largest_nfa > kKeepScratchNfaNodes) *scratch_ = BuildScratch();
  }
  ScratchLease(const ScratchLease&) = delete;
  ScratchLease& operator=(const ScratchLease&) = delete;
  BuildScratch* get() const { return scratch_; }

 private:
  static BuildScratch* Cached() {
    thread_local BuildScratch cached;
    return &cached;
  }
  static thread_local bool in_use_;
  BuildScratch* scratch_;
  std::unique_ptr<BuildScratch> own_;
};

}  // namespace fsm_build
}  // namespace xg2

#endif  // XG2_GRAMMAR_RULE_DFA_BUILD_H_
