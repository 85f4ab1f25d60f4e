// The state shared by every rule lowered for one grammar (fsm_builder.cc, stage 1): the
// repetition compression settings, AST-level nullability, which expressions are fragments
// (determinised once per grammar and copied), shared tails, and the synthetic rules made for
// lifted repetitions and for the parts of a rule whose determinisation passed its cap.
// Invariants: a synthetic rule's id is first_synthetic_rule() + its index in synthetic(),
// one per expression; the lifted/explicit/split/exploded sets only grow during a build, and
// Pristine() holds until the first of them does (the shared rule-DFA table relies on it).
#ifndef XG2_GRAMMAR_LOWERING_CONTEXT_H_
#define XG2_GRAMMAR_LOWERING_CONTEXT_H_

#include <algorithm>
#include <climits>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "grammar/fsm_automata.h"
#include "grammar/grammar_ast.h"
#include "grammar/grammar_fsm.h"
#include "grammar/structural_ids.h"
#include "support/utf8.h"

namespace xg2 {
namespace fsm_build {

// The repeated expression of a compressed repetition, as a DFA that is a prefix code.
struct RepetitionBody {
  Dfa dfa;
  int32_t min_bytes = INT_MAX;  // fewest bytes of one iteration by byte edges alone
};

struct BuildScratch;  // working memory of the rule builds, defined with BuildRuleDfa
// Shared by every rule lowered for one grammar: compression settings, AST-level nullability
// and the synthetic rules created for lifted repetitions and bodies.
class LoweringContext {
 public:
  LoweringContext(const GrammarAst& ast, const FsmBuildLimits& limits);

  // Fragments. Inlining shares children: an expression node with several parents (the
  // character loop of json_string once json_string is inlined into every string-valued
  // property, say) is lowered again at every occurrence, and each Thompson copy (UTF-8
  // ranges, epsilon edges) is determinised again inside its rule. Such an expression, when
  // it is large enough to matter and holds no compressible repetition, is determinised and
  // minimised once per grammar, and each occurrence is a copy of that DFA: the same
  // language, so the rule's minimal DFA is the same, from a smaller and epsilon-poorer NFA.
  // A fragment costs a determinisation of its own; at two occurrences that costs more than
  // it saves (JSONSchemaBench: compile time about 10% lower with three than with two).
  static constexpr int64_t kMinFragmentSize = 12;  // expression nodes, repetitions unrolled
  static constexpr int kMinFragmentUses = 3;
  bool IsFragment(ExprId e) {
    const ExprNode& node = ast_.node(e);
    if (uses_[e] < kMinFragmentUses || (node.kind != ExprKind::kSequence && node.kind != ExprKind::kChoice &&
                         node.kind != ExprKind::kRepeat)) {
      return false;
    }
    return FragmentSize(e) >= kMinFragmentSize && !ContainsCompressible(e) && !Exploded(e);
  }
  const Dfa& Fragment(ExprId e, int64_t* budget, const std::string& owner);
  // The DFA Fragment built for `e`, or null (not built yet, or its determinisation exploded).
  const Dfa* BuiltFragment(ExprId e) const {
    auto it = fragments_.find(e);
    return it == fragments_.end() ? nullptr : &it->second;
  }

  // Tails. An occurrence in tail position (nothing of the rule follows it) of an expression
  // worth sharing: equal tails are lowered once per rule, see NfaBuilder::Lower.
  bool IsSharedTail(ExprId e) {
    const ExprKind kind = ast_.node(e).kind;
    return (kind == ExprKind::kSequence || kind == ExprKind::kChoice || kind == ExprKind::kRepeat) &&
           FragmentSize(e) >= kMinFragmentSize;
  }
  // Equal ids for structurally equal expressions (same kinds, payloads and rule ids, children
  // equal in turn): inlining copies a callee's body node at every call site, so equal
  // expressions are often distinct nodes that share only their children.
  int32_t StructuralId(ExprId e) { return structural_ids_.Of(e); }

  // Utf8RangeSequences(first, last), computed once per grammar: the same character classes
  // recur in many rules (every string-valued property's character loop), and splitting a
  // range into byte sequences costs far more than copying its edges.
  const std::vector<Utf8ByteSequence>& Utf8Sequences(uint32_t first, uint32_t last) {
    const uint64_t key = (static_cast<uint64_t>(first) << 32) | last;
    auto it = utf8_sequences_.find(key);
    if (it == utf8_sequences_.end()) it = utf8_sequences_.emplace(key, Utf8RangeSequences(first, last)).first;
    return it->second;
  }

  struct Synthetic {
    ExprId body;
    ExprId exempt;  // the body itself: never lifted again inside its own rule
    std::string name;
  };

  bool enabled() const { return threshold_ > 0; }
  BuildScratch* scratch() const { return scratch_; }
  void set_scratch(BuildScratch* scratch) { scratch_ = scratch; }
  int32_t max_token_bytes() const { return max_token_bytes_; }
  RuleId first_synthetic_rule() const { return static_cast<RuleId>(ast_.rules.size()); }
  std::vector<Synthetic>& synthetic() { return synthetic_; }
  const std::vector<Synthetic>& synthetic() const { return synthetic_; }
  bool IsLifted(ExprId e) const { return lifted_.count(e) > 0; }
  // Lowered as a call of a synthetic rule whose body it is (determinisation fallback).
  bool IsSplit(ExprId e) const { return split_.count(e) > 0; }
  // Its determinisation passed the cap: never a fragment or an inline repetition body.
  bool Exploded(ExprId e) const { return exploded_.count(e) > 0; }
  // No repetition has been lifted into a rule or kept explicit, and no determinisation
  // has fallen back, yet: lowering an expression depends on nothing but the expression
  // and the settings.
  bool Pristine() const { return lifted_.empty() && explicit_.empty() && split_.empty(); }
  int32_t threshold() const { return threshold_; }
  bool RuleNullable(RuleId r) const { return rule_nullable_[r]; }
  // Expression nodes of `e` with every bounded repetition unrolled (capped): the size of
  // the NFA a build would start from, roughly.
  int64_t ExpandedSize(ExprId e) { return FragmentSize(e); }

  // Whether the repetition `e` is lowered compressed (with the counter).
  bool Compressible(ExprId e) const {
    const ExprNode& node = ast_.node(e);
    if (!enabled() || node.kind != ExprKind::kRepeat) return false;
    bool long_bound = node.max_repeat < 0 ? node.min_repeat > threshold_ : node.max_repeat > threshold_;
    if (!long_bound || explicit_.count(e)) return false;
    // A nullable body could make the counter run through empty iterations; kept explicit.
    return !StampedNullable(node.children[0], &expr_nullable_, &expr_nullable_stamp_, 1);
  }

  bool ContainsCompressible(ExprId e) {
    if (contains_compressible_[e] >= 0) return contains_compressible_[e];
    bool found = Compressible(e);
    for (ExprId child : ast_.node(e).children) found = ContainsCompressible(child) || found;
    contains_compressible_[e] = found;
    return found;
  }

  // The determinisation of `expr` passed the cap: its compound children become calls.
  void OnExplosion(ExprId expr, const std::string& owner);

  void OnConflict(ExprId expr, ExprId exempt);

  // The synthetic rule whose body is `expr` (one per expression).
  // `kind` names it in dumps: "#rep" for a lifted repetition or body, "#part" for a split.
  RuleId SyntheticRule(ExprId expr, const std::string& owner, const char* kind = "#rep");

  const RepetitionBody* FindBody(ExprId e) const {
    auto it = bodies_.find(e);
    return it == bodies_.end() ? nullptr : &it->second;
  }
  const RepetitionBody& StoreBody(ExprId e, RepetitionBody body) {
    return bodies_.emplace(e, std::move(body)).first->second;
  }

 private:
  // The least fixpoint of rule nullability, by a worklist: a rule's body is examined again
  // only when a rule it refers to has just become nullable (re-running every body until
  // nothing changes costs one pass per link of a chain of rules declared caller first).
  void ComputeRuleNullable();

  // Whether `e` matches the empty string under the current rule_nullable_; a memo entry
  // counts where it is true (rule_nullable_ only grows) or its memo_stamp equals `stamp`.
  bool StampedNullable(ExprId e, std::vector<int8_t>* memo, std::vector<uint32_t>* memo_stamp, uint32_t stamp) const;

  const GrammarAst& ast_;
  int32_t threshold_;
  int32_t max_token_bytes_;
  std::vector<uint8_t> rule_nullable_;
  // Expression nullability, filled on demand (stamp 1) for the bodies of long repetitions
  // only: rule nullability is final once the constructor has run, so a memo entry stays true.
  mutable std::vector<int8_t> expr_nullable_;
  mutable std::vector<uint32_t> expr_nullable_stamp_;
  std::vector<int8_t> contains_compressible_;
  std::set<ExprId> lifted_;    // lowered as a call of a synthetic rule
  std::set<ExprId> explicit_;  // never compressed (conflicts even alone)
  std::set<ExprId> split_;     // lowered as a call of a synthetic rule (OnExplosion)
  std::set<ExprId> exploded_;  // determinisations that passed the cap
  std::map<ExprId, RuleId> synthetic_of_;
  std::vector<Synthetic> synthetic_;
  std::map<ExprId, RepetitionBody> bodies_;
  BuildScratch* scratch_ = nullptr;
  std::vector<uint8_t> uses_;  // parents of each expression node, capped at kMinFragmentUses
  std::vector<int64_t> fragment_size_;
  std::map<ExprId, Dfa> fragments_;
  StructuralIds structural_ids_;
  // (first << 32 | last) -> Utf8RangeSequences(first, last); node-based, so references stay valid
  std::unordered_map<uint64_t, std::vector<Utf8ByteSequence>> utf8_sequences_;

  int64_t FragmentSize(ExprId e);
};

}  // namespace fsm_build
}  // namespace xg2

#endif  // XG2_GRAMMAR_LOWERING_CONTEXT_H_
