// Random epsilon-NFAs for the subset construction tests: every node gets up to three edges
// to random targets, each an epsilon edge, a rule edge or a narrow byte range. The shape
// decides the alphabet and whether a node may be entered by more than one byte or rule edge
// (Thompson's construction enters a node by at most one; hand-built or merged NFAs may not).
#ifndef XG2_NATIVE_TESTS_RANDOM_NFA_H_
#define XG2_NATIVE_TESTS_RANDOM_NFA_H_

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

#include "grammar/fsm_automata.h"

namespace xg2_test {

struct RandomNfaShape {
  uint32_t kinds;        // an edge is epsilon with odds 1/kinds, a rule edge 1/kinds, else bytes
  uint32_t rules;        // rule edges name rules 0 .. rules - 1
  uint32_t letters;      // byte ranges start in 'a' .. 'a' + letters - 1 and end there too
  uint32_t widths;       // a range spans 1 .. widths bytes (cut at the last letter)
  bool one_entry;        // a node is the target of at most one byte or rule edge
};

// Thompson-like: one entry per node, ranges inside 'a'..'h' (many states' edges disjoint,
// many overlapping).
constexpr RandomNfaShape kThompsonLikeNfa{6, 3, 8, 3, true};
// Nodes entered by many byte and rule edges, ranges inside 'a'..'d'.
constexpr RandomNfaShape kSharedTargetNfa{5, 2, 4, 2, false};

inline xg2::fsm_build::Nfa RandomNfa(std::mt19937* rng, int32_t num_nodes, const RandomNfaShape& shape) {
  using xg2::fsm_build::NfaEdge;
  xg2::fsm_build::Nfa nfa;
  nfa.Reset();
  for (int32_t n = 0; n < num_nodes; ++n) nfa.AddNode();
  nfa.start = 0;
  nfa.accept = num_nodes - 1;
  std::vector<uint8_t> entered(num_nodes, 0);
  const int last_letter = 'a' + static_cast<int>(shape.letters) - 1;
  for (int32_t from = 0; from < num_nodes; ++from) {
    const int edges = static_cast<int>((*rng)() % 4);
    for (int k = 0; k < edges; ++k) {
      const int32_t target = static_cast<int32_t>((*rng)() % num_nodes);
      uint32_t kind = (*rng)() % shape.kinds;
      if (shape.one_entry && kind != 0 && entered[target]) kind = 0;
      if (kind != 0) entered[target] = 1;
      if (kind == 0) {
        nfa.AddEdge(from, NfaEdge{xg2::fsm_build::kEpsilon, 0, 0, target});
      } else if (kind == 1) {
        nfa.AddEdge(from, NfaEdge{static_cast<int>((*rng)() % shape.rules), 0, 0, target});
      } else {
        const uint8_t lo = static_cast<uint8_t>('a' + (*rng)() % shape.letters);
        const uint8_t hi = static_cast<uint8_t>(std::min<int>(last_letter, lo + static_cast<int>((*rng)() % shape.widths)));
        nfa.AddEdge(from, NfaEdge{xg2::fsm_build::kByteRange, lo, hi, target});
      }
    }
  }
  nfa.Finish();
  return nfa;
}

}  // namespace xg2_test

#endif  // XG2_NATIVE_TESTS_RANDOM_NFA_H_
