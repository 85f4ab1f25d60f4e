// How many units (JSON characters) the completions of each automaton node take: the layered
// backward search that JSON character counts need (grammar/grammar_fsm.h: a counting rule's
// item may only stand where some completion fits its count; frontends/json_schema: a length
// bound the matcher will count). An edge weighs 1 when it completes a unit, else 0; the
// weight-0 edges must form no cycle (every cycle completes a unit).
#ifndef XG2_SUPPORT_COMPLETION_LENGTHS_H_
#define XG2_SUPPORT_COMPLETION_LENGTHS_H_

#include <cstdint>
#include <vector>

namespace xg2 {

// True when fewest/most decide exactly whether a count of `count` units so far can still
// end within [min_count, max_count] (max_count < 0: unbounded): no minimum, no maximum, or a
// window wider than every gap.
inline bool CountWindowIsDecided(int64_t min_count, int64_t max_count, int32_t max_gap) {
  return min_count == 0 || max_count < 0 || max_count - min_count >= max_gap;
}

struct WeightedEdge {
  int32_t from;
  int32_t to;
  uint8_t weight;  // 0 or 1
};

struct CompletionLengths {
  // Per node: the fewest units on a path to an accepting node (-1: none, a dead node) and
  // the most (-1: unbounded, a cycle on the way).
  std::vector<int32_t> fewest;
  std::vector<int32_t> most;
  // The longest run of missing lengths between a live node's fewest and most (0: every
  // node's lengths are an interval). A count window [a, b] that meets [fewest, most] holds a
  // completion length when it is wider than this (e.g. a pattern of 50-character blocks has
  // runs of 49: only windows of 50 and more are decided by fewest/most).
  int32_t max_gap = 0;
};

// Layer k is the set of nodes with a completion of exactly k units; the layers repeat with
// a period from some k on, which ends the search (after one more period, which measures the
// gaps that recur). Throws ResourceLimitError past
// `max_layers` layers before the repetition.
CompletionLengths ComputeCompletionLengths(int32_t num_nodes, const std::vector<uint8_t>& accepting,
                                           const std::vector<WeightedEdge>& edges, int32_t max_layers);

}  // namespace xg2

#endif  // XG2_SUPPORT_COMPLETION_LENGTHS_H_
