// Right-linear merging (see the header): finding the pure right-linear rules and their
// entries, and writing each group as one NFA for the subset construction and minimisation.
#include "grammar/right_linear_merge.h"

#include <algorithm>
#include <memory>
#include <string>

#include "grammar/shared_rule_dfas.h"
#include "support/dcheck.h"

namespace xg2 {
namespace fsm_build {
namespace {

constexpr size_t kMaxMergedStates = 20000;

// The merged DFA of pure right-linear rule `entry` (its tail calls followed into `dfas`), or
// an empty Dfa when a member is an entry of its own (`is_entry`: merging both would copy the
// shared members into each, quadratic on a chain such as the optional-property rules
// rest_1 -> rest_2 -> ... of a large object, each called from the object rule) or when the
// result would be too large. The group is written as an NFA over the members' nodes (a tail
// call is an epsilon edge to the callee's start, an accepting node an epsilon edge to one
// extra accept node) and goes through the same subset construction and minimisation as a
// rule. `offset` (one entry per rule, all -1) is working memory and is left all -1.
Dfa MergedRightLinearDfa(const std::vector<Dfa>& dfas, RuleId entry, const std::vector<uint8_t>& is_entry,
                         int64_t budget, std::vector<int32_t>* offset_scratch, BuildScratch* scratch) {
  // Members reachable by tail calls, each with the offset of its nodes in one numbering.
  std::vector<int32_t>& offset = *offset_scratch;
  std::vector<RuleId> members{entry};
  offset[entry] = 0;
  int32_t total = static_cast<int32_t>(dfas[entry].nodes.size());
  bool shares_entry = false;
  for (size_t m = 0; m < members.size() && !shares_entry; ++m) {
    for (const RuleEdge& e : dfas[members[m]].rule_edges) {
      if (offset[e.rule] >= 0) continue;
      if (is_entry[e.rule]) {
        shares_entry = true;
        break;
      }
      offset[e.rule] = total;
      total += static_cast<int32_t>(dfas[e.rule].nodes.size());
      members.push_back(e.rule);
    }
  }
  struct ResetOffsets {
    const std::vector<RuleId>& members;
    std::vector<int32_t>& offset;
    ~ResetOffsets() {
      for (RuleId m : members) offset[m] = -1;
    }
  } reset{members, offset};
  if (shares_entry) return Dfa{};
  // Determinising a group written from one DFA gives about that DFA back; a blow-up beyond
  // a few times the group's own nodes is not worth its memory.
  int64_t max_states = static_cast<int64_t>(std::min<size_t>(
      {kMaxMergedStates, static_cast<size_t>(std::max<int64_t>(budget, 0)), static_cast<size_t>(total) * 4 + 64}));

  // A large group is looked up in the shared table by its members' DFAs (the merged DFA is a
  // function of them). The entry keeps the subset construction's state count, so that a hit
  // is refused exactly where the construction would have run past max_states.
  std::string key;
  if (total >= kMinSharedMergedNodes) {
    auto put = [&key](int32_t v) { AppendKeyWord(&key, v); };
    key.push_back('M');
    for (RuleId m : members) {
      const Dfa& dfa = dfas[m];
      put(dfa.size());
      for (int32_t i = 0; i < dfa.size(); ++i) {
        put(dfa.nodes[i].accepting);
        const Slice<ByteEdge> bytes = dfa.BytesOf(i);
        const Slice<RuleEdge> rules = dfa.RulesOf(i);
        put(static_cast<int32_t>(bytes.end() - bytes.begin()));
        for (const ByteEdge& e : bytes) {
          put(e.lo | (e.hi << 8));
          put(e.target);
        }
        put(static_cast<int32_t>(rules.end() - rules.begin()));
        for (const RuleEdge& e : rules) put(offset[e.rule]);
      }
    }
    if (std::shared_ptr<const SharedRuleDfa> hit = SharedRuleDfas::Instance().Find(key)) {
      if (hit->net_nodes > max_states) return Dfa{};
      return hit->dfa;
    }
  }

  if (scratch->nfas_in_use == scratch->nfas.size()) scratch->nfas.push_back(std::make_unique<Nfa>());
  Nfa& nfa = *scratch->nfas[scratch->nfas_in_use];
  struct Release {
    size_t* in_use;
    ~Release() { --*in_use; }
  } release{&++scratch->nfas_in_use};
  nfa.Reset();
  nfa.num_nodes = total;
  nfa.start = offset[entry];
  nfa.accept = nfa.AddNode();
  for (RuleId m : members) {
    const int32_t base = offset[m];
    const Dfa& dfa = dfas[m];
    for (int32_t i = 0; i < dfa.size(); ++i) {
      for (const ByteEdge& e : dfa.BytesOf(i)) nfa.AddEdge(base + i, {kByteRange, e.lo, e.hi, base + e.target});
      for (const RuleEdge& e : dfa.RulesOf(i)) nfa.AddEdge(base + i, {kEpsilon, 0, 0, offset[e.rule]});
      if (dfa.nodes[i].accepting) nfa.AddEdge(base + i, {kEpsilon, 0, 0, nfa.accept});
    }
  }
  nfa.Finish();
  const FlatDfa* flat = Determinise(nfa, &max_states, &scratch->subsets, /*stop_at_budget=*/true);
  if (!flat) return Dfa{};
  Dfa merged = Minimize(*flat, &scratch->minimize);
  if (!key.empty()) {
    auto entry = std::make_shared<SharedRuleDfa>();
    entry->dfa = merged;
    entry->net_nodes = flat->size();  // here: the subset construction's states
    SharedRuleDfas::Instance().Store(key, std::move(entry));
  }
  return merged;
}

}  // namespace

void MergeRightLinearGroups(std::vector<Dfa>* dfas, const std::vector<uint8_t>& excluded, RuleId root,
                            int64_t* budget, BuildScratch* scratch, RightLinearReport* report) {
  const size_t n = dfas->size();
  auto is_end = [](const Dfa& dfa, int32_t node) {
    return dfa.nodes[node].accepting && dfa.BytesOf(node).empty() && dfa.RulesOf(node).empty();
  };
  // Greatest fixpoint: start from every candidate, drop those with a call that is not a
  // tail call of a remaining candidate.
  std::vector<uint8_t> pure(n, 0);
  for (size_t r = 0; r < n; ++r) pure[r] = !excluded[r] && (*dfas)[r].loops.empty();
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t r = 0; r < n; ++r) {
      if (!pure[r]) continue;
      const Dfa& dfa = (*dfas)[r];
      for (const RuleEdge& e : dfa.rule_edges) {
        if (!pure[e.rule] || !is_end(dfa, e.target)) pure[r] = 0;
      }
      changed |= !pure[r];
    }
  }
  // Entries: pure rules with calls that the root is or that an impure rule calls.
  std::vector<uint8_t> entry(n, 0);
  if (root >= 0 && static_cast<size_t>(root) < n) entry[root] = 1;
  for (size_t r = 0; r < n; ++r) {
    if (pure[r]) continue;
    for (const RuleEdge& e : (*dfas)[r].rule_edges) entry[e.rule] = 1;
  }
  if (report) *report = {pure, entry, std::vector<uint8_t>(n, 0)};
  std::vector<std::pair<RuleId, Dfa>> merged;
  std::vector<int32_t> offset(n, -1);
  for (size_t r = 0; r < n; ++r) {
    if (!pure[r] || !entry[r]) continue;
    if ((*dfas)[r].rule_edges.empty()) continue;
    Dfa dfa = MergedRightLinearDfa(*dfas, static_cast<RuleId>(r), entry, *budget, &offset, scratch);
    if (dfa.nodes.empty()) continue;
    XG2_DCHECK_INVARIANTS(CheckRuleDfaInvariants(dfa, static_cast<int32_t>(n), "right-linear merging"));
    *budget -= static_cast<int64_t>(dfa.nodes.size());
    merged.emplace_back(static_cast<RuleId>(r), std::move(dfa));
  }
  // Replaced only now: every merge above read the original rule DFAs.
  for (auto& [r, dfa] : merged) (*dfas)[r] = std::move(dfa);
  if (merged.empty()) return;
  // Members that only merged rules called are now unreachable from the root: they become a
  // lone non-accepting node (the empty language, as Minimize writes it), so that neither the
  // FSM nor the mask cache's precompute spends anything on them.
  std::vector<uint8_t> reachable(n, 0);
  std::vector<RuleId> stack;
  if (root >= 0 && static_cast<size_t>(root) < n) reachable[root] = 1, stack.push_back(root);
  while (!stack.empty()) {
    RuleId r = stack.back();
    stack.pop_back();
    for (const RuleEdge& e : (*dfas)[r].rule_edges) {
      if (!reachable[e.rule]) reachable[e.rule] = 1, stack.push_back(e.rule);
    }
  }
  for (size_t r = 0; r < n; ++r) {
    if (pure[r] && !reachable[r] && (*dfas)[r].nodes.size() > 1) {
      *budget += static_cast<int64_t>((*dfas)[r].nodes.size()) - 1;
      (*dfas)[r] = EmptyLanguageDfa();
      if (report) report->emptied[r] = 1;
    }
  }
}

}  // namespace fsm_build
}  // namespace xg2
