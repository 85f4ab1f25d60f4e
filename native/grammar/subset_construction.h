// Subset construction (fsm_builder.cc, stage 2): one rule's epsilon-NFA -> a DFA, splitting
// overlapping byte ranges into disjoint pieces. States are keyed by the sorted epsilon
// closure of their NFA nodes (only the "important" nodes when the NFA has no counted loop).
// Counted loops (grammar_fsm.h, "Repetition state compression") are carried through: every
// state holds the counter of at most one loop, a gate's state set is exactly its closure,
// and no step enters a loop afresh from a state that carries a counter; where a state would
// break one of these, the construction throws CounterConflict for the repetition.
// Output invariants: those of FlatDfa (fsm_automata.h), checked in debug builds.
#ifndef XG2_GRAMMAR_SUBSET_CONSTRUCTION_H_
#define XG2_GRAMMAR_SUBSET_CONSTRUCTION_H_

#include <cstdint>
#include <utility>
#include <vector>

#include "grammar/fsm_automata.h"

namespace xg2 {
namespace fsm_build {

// Working memory of the subset construction, kept across the rules of one grammar so that a
// rule allocates only where it is larger than the rules before it.
struct SubsetScratch {
  FlatDfa dfa;
  // The NFA node set of every DFA state, concatenated: state s is
  // set_pool[set_begin[s], set_begin[s + 1]), and set_hash[s] its hash.
  std::vector<int32_t> set_pool;
  std::vector<uint32_t> set_begin;
  std::vector<uint64_t> set_hash;
  std::vector<int32_t> slots;  // open addressing over DFA states by set; -1 empty; power-of-two size
  std::vector<uint32_t> mark;  // generation-stamped NFA node marks of Closure
  std::vector<uint8_t> edge_kinds;  // NFA node -> kReadsInput | kHasEpsilon, see SubsetConstruction
  uint32_t generation = 0;
  std::vector<int32_t> member_of;  // NFA node -> counted loop it belongs to; empty: no loops
  std::vector<int32_t> gate_of;
  std::vector<int32_t> closure, closure_stack, fresh, current, targets, previous_targets;
  std::vector<int> cuts;
  std::vector<int32_t> piece_begin, piece_fill, piece_targets;
  int32_t piece_at[257];  // cut value -> its index in `cuts` (only the current cuts are valid)
  std::vector<std::pair<int32_t, int32_t>> rule_targets;  // (rule, NFA target)
  std::vector<NfaEdge> disjoint_bytes;  // ExpandDisjointBytes
  // Tests and debug builds: every state through the general path (cuts and pieces), to
  // compare the disjoint-edge shortcut with it.
  bool pieces_only = false;
  std::vector<int32_t> single_state;  // NFA node -> DFA state of its closure, or -1 (InternSingle)
};

// Determinises `nfa`; the result lives in scratch->dfa until the next construction on it.
// Each new state takes one from `budget`. Running out of it throws ResourceLimitError, or,
// with `stop_at_budget`, stops the construction early. Making more than `max_states`
// states stops it early too (whatever the budget), and so does passing the memory bound of
// the states' NFA node sets then. Stopped early: nullptr. Throws CounterConflict (see the
// file comment) when a counted loop cannot be kept.
const FlatDfa* Determinise(const Nfa& nfa, int64_t* budget, SubsetScratch* scratch, bool stop_at_budget = false,
                           int64_t max_states = INT64_MAX);

// Whether two determinised machines are the same, state by state and edge by edge.
bool SameFlatDfa(const FlatDfa& a, const FlatDfa& b);

}  // namespace fsm_build
}  // namespace xg2

#endif  // XG2_GRAMMAR_SUBSET_CONSTRUCTION_H_
