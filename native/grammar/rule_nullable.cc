// Nullability as a least fixpoint, by worklist. A rule is nullable iff an accepting node of
// its DFA is reachable from its start through rule edges of nullable rules only. That test
// can only turn true as more rules become nullable (it is monotone), so the least fixpoint is
// reached by testing every rule once and then retesting a rule only when one of the rules it
// calls has just become nullable: the same set as iterating rounds over all rules until none
// changes, but each rule is tested at most once per nullable callee (plus once) instead of
// once per round. Debug builds compare with the round-based fixpoint.
#include "grammar/rule_nullable.h"

#include <vector>

#include "support/dcheck.h"
#include "support/error.h"

namespace xg2 {
namespace {

// True when an accepting node of rule r is reachable from its start through rule edges of
// rules already known nullable. `seen` and `stack` are working memory.
bool ReachesAcceptanceThroughNullables(const GrammarFsm& fsm, RuleId r, std::vector<uint8_t>* seen,
                                       std::vector<NodeId>* stack) {
  if (fsm.has_json_char_counts() && fsm.rule_min_json_chars[r] > 0) return false;
  const NodeId first = fsm.rule_first_node[r];
  seen->assign(fsm.rule_first_node[r + 1] - first, 0);
  (*seen)[fsm.rule_start[r] - first] = 1;
  stack->assign(1, fsm.rule_start[r]);
  while (!stack->empty()) {
    const NodeId n = stack->back();
    stack->pop_back();
    if (fsm.node_accepting[n]) return true;
    for (const RuleEdge* e = fsm.rule_edges_begin(n); e != fsm.rule_edges_end(n); ++e) {
      uint8_t& visited = (*seen)[e->target - first];
      if (fsm.rule_nullable[e->rule] && !visited) {
        visited = 1;
        stack->push_back(e->target);
      }
    }
  }
  return false;
}

// The callers of each rule, as CSR: the rules whose DFA has a rule edge naming callee c are
// callers[caller_begin[c], caller_begin[c + 1]), each once.
struct CallerTable {
  std::vector<int32_t> caller_begin;
  std::vector<RuleId> callers;
};

CallerTable BuildCallerTable(const GrammarFsm& fsm) {
  const int32_t num_rules = fsm.num_rules();
  CallerTable table;
  // (callee, caller) pairs, each once: `listed[callee] == caller + 1` marks the callees
  // already paired with the caller being walked.
  std::vector<int32_t> listed(num_rules, 0);
  std::vector<std::pair<RuleId, RuleId>> pairs;
  for (RuleId r = 0; r < num_rules; ++r) {
    for (NodeId n = fsm.rule_first_node[r]; n < fsm.rule_first_node[r + 1]; ++n) {
      for (const RuleEdge* e = fsm.rule_edges_begin(n); e != fsm.rule_edges_end(n); ++e) {
        if (listed[e->rule] == r + 1) continue;
        listed[e->rule] = r + 1;
        pairs.emplace_back(e->rule, r);
      }
    }
  }
  table.caller_begin.assign(num_rules + 1, 0);
  for (const auto& [callee, caller] : pairs) ++table.caller_begin[callee + 1];
  for (int32_t c = 0; c < num_rules; ++c) table.caller_begin[c + 1] += table.caller_begin[c];
  table.callers.resize(pairs.size());
  std::vector<int32_t> fill(table.caller_begin.begin(), table.caller_begin.end() - 1);
  for (const auto& [callee, caller] : pairs) table.callers[fill[callee]++] = caller;
  return table;
}

// The round-based fixpoint, for debug builds: every rule tested again until a round changes none.
[[maybe_unused]] void CheckAgainstRounds(const GrammarFsm& fsm) {
  GrammarFsm rounds_fsm;
  rounds_fsm.rule_first_node = fsm.rule_first_node;
  rounds_fsm.rule_start = fsm.rule_start;
  rounds_fsm.node_accepting = fsm.node_accepting;
  rounds_fsm.rule_edge_begin = fsm.rule_edge_begin;
  rounds_fsm.rule_edges = fsm.rule_edges;
  rounds_fsm.rule_min_json_chars = fsm.rule_min_json_chars;
  rounds_fsm.rule_nullable.assign(fsm.num_rules(), 0);
  std::vector<uint8_t> seen;
  std::vector<NodeId> stack;
  for (bool changed = true; changed;) {
    changed = false;
    for (RuleId r = 0; r < fsm.num_rules(); ++r) {
      if (rounds_fsm.rule_nullable[r] || !ReachesAcceptanceThroughNullables(rounds_fsm, r, &seen, &stack)) continue;
      rounds_fsm.rule_nullable[r] = 1;
      changed = true;
    }
  }
  if (rounds_fsm.rule_nullable != fsm.rule_nullable) {
    ThrowInternalError(__FILE__, __LINE__, "the worklist nullability differs from the round-based fixpoint");
  }
}

}  // namespace

void ComputeRuleNullable(GrammarFsm* fsm_out) {
  GrammarFsm& fsm = *fsm_out;
  const int32_t num_rules = fsm.num_rules();
  fsm.rule_nullable.assign(num_rules, 0);
  const CallerTable table = BuildCallerTable(fsm);
  // Every rule is queued once at first; later a rule is queued again (if it is not queued
  // already) when a callee becomes nullable.
  std::vector<RuleId> worklist;
  worklist.reserve(num_rules);
  for (RuleId r = num_rules - 1; r >= 0; --r) worklist.push_back(r);
  std::vector<uint8_t> queued(num_rules, 1);
  std::vector<uint8_t> seen;
  std::vector<NodeId> stack;
  while (!worklist.empty()) {
    const RuleId r = worklist.back();
    worklist.pop_back();
    queued[r] = 0;
    if (fsm.rule_nullable[r] || !ReachesAcceptanceThroughNullables(fsm, r, &seen, &stack)) continue;
    fsm.rule_nullable[r] = 1;
    for (int32_t k = table.caller_begin[r]; k < table.caller_begin[r + 1]; ++k) {
      const RuleId caller = table.callers[k];
      if (fsm.rule_nullable[caller] || queued[caller]) continue;
      queued[caller] = 1;
      worklist.push_back(caller);
    }
  }
  XG2_DCHECK_INVARIANTS(CheckAgainstRounds(fsm));
}

}  // namespace xg2
