// The subset construction's shortcut for states whose byte edges do not overlap: such a
// state's edges are copied one by one instead of being cut into pieces. Random epsilon-NFAs
// without counted loops are determinised with the shortcut and with every state through the
// general path (SubsetScratch::pieces_only); the machines must be identical, state numbering
// included. (These builds also run the same comparison inside Determinise on every rule the
// other tests build, CheckDisjointShortcut.)
#include <algorithm>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "check.h"
#include "fsm_test_support.h"

namespace xg2_test {
namespace {

// A random epsilon-NFA over `num_nodes` nodes: byte ranges inside 'a'..'h' (narrow, so that
// many states' edges are disjoint and many overlap), epsilon edges, and rule edges 0..2. As
// in Thompson's construction, a node is the target of at most one byte or rule edge
// (subset_closure_tests.cc covers nodes entered by several).
Nfa RandomNfa(std::mt19937* rng, int32_t num_nodes) {
  Nfa nfa;
  nfa.Reset();
  for (int32_t n = 0; n < num_nodes; ++n) nfa.AddNode();
  nfa.start = 0;
  nfa.accept = num_nodes - 1;
  std::vector<uint8_t> entered(num_nodes, 0);
  for (int32_t from = 0; from < num_nodes; ++from) {
    const int edges = static_cast<int>((*rng)() % 4);
    for (int k = 0; k < edges; ++k) {
      const int32_t target = static_cast<int32_t>((*rng)() % num_nodes);
      uint32_t kind = (*rng)() % 6;
      if (kind != 0 && entered[target]) kind = 0;
      if (kind != 0) entered[target] = 1;
      if (kind == 0) {
        nfa.AddEdge(from, NfaEdge{kEpsilon, 0, 0, target});
      } else if (kind == 1) {
        nfa.AddEdge(from, NfaEdge{static_cast<int>((*rng)() % 3), 0, 0, target});
      } else {
        const uint8_t lo = static_cast<uint8_t>('a' + (*rng)() % 8);
        const uint8_t hi = static_cast<uint8_t>(std::min<int>('h', lo + static_cast<int>((*rng)() % 3)));
        nfa.AddEdge(from, NfaEdge{kByteRange, lo, hi, target});
      }
    }
  }
  nfa.Finish();
  return nfa;
}

FlatDfa DeterminiseWith(const Nfa& nfa, bool pieces_only) {
  int64_t budget = int64_t{1} << 20;
  SubsetScratch scratch;
  scratch.pieces_only = pieces_only;
  const FlatDfa* dfa = Determinise(nfa, &budget, &scratch);
  CHECK(dfa != nullptr);
  return dfa ? *dfa : FlatDfa();
}

TEST(TheDisjointEdgeShortcutMakesTheGeneralPathsMachine) {
  std::mt19937 rng(11);
  for (int round = 0; round < 4000; ++round) {
    const Nfa nfa = RandomNfa(&rng, 2 + static_cast<int32_t>(rng() % 12));
    const FlatDfa shortcut = DeterminiseWith(nfa, false);
    const FlatDfa general = DeterminiseWith(nfa, true);
    CHECK(SameFlatDfa(shortcut, general));
  }
}

TEST(AStateOfSeveralNodesWithDisjointEdgesKeepsEachEdge) {
  // start -eps-> x, start -eps-> y; x -a-> p, y -c..d-> q; p, q -e-> accept. The start's
  // closure {x, y} has two nodes and disjoint edges: two DFA edges, to two new states.
  Nfa nfa;
  nfa.Reset();
  for (int k = 0; k < 6; ++k) nfa.AddNode();
  nfa.start = 0;
  nfa.accept = 5;
  nfa.AddEdge(0, NfaEdge{kEpsilon, 0, 0, 1});
  nfa.AddEdge(0, NfaEdge{kEpsilon, 0, 0, 2});
  nfa.AddEdge(1, NfaEdge{kByteRange, 'a', 'a', 3});
  nfa.AddEdge(2, NfaEdge{kByteRange, 'c', 'd', 4});
  nfa.AddEdge(3, NfaEdge{kByteRange, 'e', 'e', 5});
  nfa.AddEdge(4, NfaEdge{kByteRange, 'e', 'e', 5});
  nfa.Finish();
  const FlatDfa dfa = DeterminiseWith(nfa, false);
  CHECK(SameFlatDfa(dfa, DeterminiseWith(nfa, true)));
  CHECK_EQ(dfa.BytesOf(0).last - dfa.BytesOf(0).first, 2);
  CHECK_EQ(dfa.size(), 4);
}

}  // namespace
}  // namespace xg2_test
