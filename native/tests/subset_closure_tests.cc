// The subset construction's epsilon closure names each NFA node once, however many edges of
// a state lead into it. Without that, a state's node set could hold a node twice, and
// around a cycle the repeats could grow by one per step: a new DFA state every step, until
// the budget ran out. Checked on a hand-made cycle and on random epsilon-NFAs whose nodes
// are entered by several byte and rule edges (the shortcut and the general path must agree
// there too).
#include <algorithm>
#include <random>
#include <vector>

#include "check.h"
#include "fsm_test_support.h"
#include "random_nfa.h"

namespace xg2_test {
namespace {

// Determinises `nfa` making at most `max_states` states; null when it needs more.
const FlatDfa* DeterminiseAtMost(const Nfa& nfa, int64_t max_states, bool pieces_only, SubsetScratch* scratch) {
  int64_t budget = int64_t{1} << 20;
  scratch->pieces_only = pieces_only;
  return Determinise(nfa, &budget, scratch, /*stop_at_budget=*/true, max_states);
}

TEST(TwoEdgesIntoOneNodeAroundACycleMakeOneState) {
  // start -eps-> x; x -a-> x; x -eps-> y; y -a-> x; y is the accepting node. The closure of
  // x is {x, y}, and 'a' leads from both into x: the same closure again, one state.
  Nfa nfa;
  nfa.Reset();
  for (int k = 0; k < 3; ++k) nfa.AddNode();
  nfa.start = 0;
  nfa.accept = 2;
  nfa.AddEdge(0, NfaEdge{kEpsilon, 0, 0, 1});
  nfa.AddEdge(1, NfaEdge{kByteRange, 'a', 'a', 1});
  nfa.AddEdge(1, NfaEdge{kEpsilon, 0, 0, 2});
  nfa.AddEdge(2, NfaEdge{kByteRange, 'a', 'a', 1});
  nfa.Finish();
  for (bool pieces_only : {false, true}) {
    SubsetScratch scratch;
    const FlatDfa* dfa = DeterminiseAtMost(nfa, 16, pieces_only, &scratch);
    CHECK(dfa != nullptr);
    if (dfa == nullptr) continue;
    CHECK_EQ(dfa->size(), 1);
    CHECK(dfa->accepting[0]);
  }
}

TEST(RuleEdgesIntoOneNodeAroundACycleMakeOneState) {
  // x -r0-> z, y -r0-> z and z -r0-> z, with z -eps-> start -eps-> x, y: from {x, y, z}
  // all three rule edges lead into z, whose closure is {x, y, z} again.
  Nfa nfa;
  nfa.Reset();
  for (int k = 0; k < 4; ++k) nfa.AddNode();
  nfa.start = 0;
  nfa.accept = 3;
  nfa.AddEdge(0, NfaEdge{kEpsilon, 0, 0, 1});
  nfa.AddEdge(0, NfaEdge{kEpsilon, 0, 0, 2});
  nfa.AddEdge(1, NfaEdge{0, 0, 0, 3});
  nfa.AddEdge(2, NfaEdge{0, 0, 0, 3});
  nfa.AddEdge(3, NfaEdge{0, 0, 0, 3});
  nfa.AddEdge(3, NfaEdge{kEpsilon, 0, 0, 0});
  nfa.Finish();
  SubsetScratch scratch;
  const FlatDfa* dfa = DeterminiseAtMost(nfa, 16, false, &scratch);
  CHECK(dfa != nullptr);
  if (dfa == nullptr) return;
  // {x, y} -r0-> {x, y, z} -r0-> {x, y, z}: two states, not a chain of growing repeats.
  CHECK_EQ(dfa->size(), 2);
}

TEST(SharedTargetsStayWithinTheSubsetBound) {
  // A state is a set of distinct NFA nodes: at most 2^n of them. With repeats kept, the
  // cycles of these NFAs would pass that bound.
  std::mt19937 rng(23);
  for (int round = 0; round < 3000; ++round) {
    const int32_t num_nodes = 2 + static_cast<int32_t>(rng() % 8);
    const Nfa nfa = RandomNfa(&rng, num_nodes, kSharedTargetNfa);
    SubsetScratch with_shortcut, general;
    const FlatDfa* a = DeterminiseAtMost(nfa, int64_t{1} << num_nodes, false, &with_shortcut);
    const FlatDfa* b = DeterminiseAtMost(nfa, int64_t{1} << num_nodes, true, &general);
    CHECK(a != nullptr && b != nullptr);
    if (a && b) CHECK(SameFlatDfa(*a, *b));
  }
}

}  // namespace
}  // namespace xg2_test
