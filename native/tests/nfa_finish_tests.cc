// Nfa::Finish groups the edges added in any node order by source node (fsm_automata.h): each
// node's edges keep the order they were added in, nodes without edges have none, and an NFA
// reset and built again (the scratch NFAs of a grammar are reused rule after rule) holds
// only its new edges.
#include <vector>

#include "check.h"
#include "fsm_test_support.h"

namespace xg2_test {
namespace {

// The targets of node n's edges, in CSR order.
std::vector<int32_t> TargetsOf(const Nfa& nfa, int32_t n) {
  std::vector<int32_t> targets;
  for (const NfaEdge& e : nfa.EdgesOf(n)) targets.push_back(e.target);
  return targets;
}

TEST(FinishGroupsEdgesBySourceInTheOrderTheyWereAdded) {
  Nfa nfa;
  nfa.Reset();
  for (int k = 0; k < 4; ++k) nfa.AddNode();
  // Interleaved sources, as Thompson's construction adds them around a choice.
  nfa.AddEdge(2, NfaEdge{kEpsilon, 0, 0, 3});
  nfa.AddEdge(0, NfaEdge{kByteRange, 'a', 'c', 1});
  nfa.AddEdge(2, NfaEdge{kByteRange, 'x', 'x', 0});
  nfa.AddEdge(0, NfaEdge{5, 0, 0, 2});
  nfa.AddEdge(2, NfaEdge{kEpsilon, 0, 0, 1});
  nfa.Finish();
  CHECK(TargetsOf(nfa, 0) == (std::vector<int32_t>{1, 2}));
  CHECK(TargetsOf(nfa, 1).empty());
  CHECK(TargetsOf(nfa, 2) == (std::vector<int32_t>{3, 0, 1}));
  CHECK(TargetsOf(nfa, 3).empty());
  const NfaEdge& byte_edge = *nfa.EdgesOf(0).begin();
  CHECK(byte_edge.kind == kByteRange && byte_edge.lo == 'a' && byte_edge.hi == 'c');
  CHECK_EQ((nfa.EdgesOf(0).begin() + 1)->kind, 5);

  nfa.Reset();
  for (int k = 0; k < 2; ++k) nfa.AddNode();
  nfa.AddEdge(1, NfaEdge{kEpsilon, 0, 0, 0});
  nfa.Finish();
  CHECK(TargetsOf(nfa, 0).empty());
  CHECK(TargetsOf(nfa, 1) == (std::vector<int32_t>{0}));
  CHECK_EQ(nfa.edges.size(), size_t{1});
}

}  // namespace
}  // namespace xg2_test
