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
#include "random_nfa.h"

namespace xg2_test {
namespace {

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
    const Nfa nfa = RandomNfa(&rng, 2 + static_cast<int32_t>(rng() % 12), kThompsonLikeNfa);
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
