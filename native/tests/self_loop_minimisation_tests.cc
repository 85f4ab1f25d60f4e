// The one-pass minimisation on machines whose only cycles are self-loops (whitespace runs
// between literals, a bounded string's copies): RefineAcyclic classes them sinks first, a
// state joining a class whose members step into the class itself. These builds run with the
// engine's invariant checks, so every Minimize below also rebuilds its result by Moore's
// rounds / Hopcroft's algorithm and throws if the two differ (CheckAcyclicMinimisation); the
// tests add the expected sizes and the language on random strings.
#include <random>
#include <string>
#include <vector>

#include "check.h"
#include "fsm_test_support.h"
#include "support/dcheck.h"

namespace xg2_test {
namespace {

static_assert(XG2_DCHECKS_ENABLED, "the native tests build the engine with its invariant checks");

// One state of a hand-written machine: its byte edges (lo = hi, increasing) and rule edges
// (increasing rule).
struct State {
  bool accepting;
  std::vector<std::pair<uint8_t, int32_t>> bytes;
  std::vector<std::pair<RuleId, int32_t>> rules;
};

FlatDfa MakeFlatDfa(const std::vector<State>& states) {
  FlatDfa dfa;
  for (const State& s : states) {
    dfa.accepting.push_back(s.accepting);
    dfa.loop.push_back(-1);
    dfa.gate_loop.push_back(-1);
    for (const auto& [byte, target] : s.bytes) dfa.byte_edges.push_back({byte, byte, target});
    for (const auto& [rule, target] : s.rules) dfa.rule_edges.push_back({rule, target});
    dfa.byte_begin.push_back(static_cast<int32_t>(dfa.byte_edges.size()));
    dfa.rule_begin.push_back(static_cast<int32_t>(dfa.rule_edges.size()));
  }
  return dfa;
}

// The state after `text` (bytes, or 'A' + k for rule k) from state 0 of a FlatDfa or a
// Dfa, or -1.
template <typename Machine>
int32_t Run(const Machine& dfa, const std::string& text) {
  int32_t s = 0;
  for (char c : text) {
    int32_t next = -1;
    if (c >= 'A' && c < 'a') {
      for (const RuleEdge& e : dfa.RulesOf(s)) next = e.rule == c - 'A' ? e.target : next;
    } else {
      const uint8_t byte = static_cast<uint8_t>(c);
      for (const ByteEdge& e : dfa.BytesOf(s)) next = e.lo <= byte && byte <= e.hi ? e.target : next;
    }
    if (next < 0) return -1;
    s = next;
  }
  return s;
}

bool FlatAccepts(const FlatDfa& dfa, const std::string& text) {
  const int32_t s = Run(dfa, text);
  return s >= 0 && dfa.accepting[s];
}

bool MinimalAccepts(const Dfa& dfa, const std::string& text) {
  const int32_t s = Run(dfa, text);
  return s >= 0 && dfa.nodes[s].accepting;
}

TEST(AStateJoinsTheClassOfTheSelfLoopItStepsInto) {
  // q -a-> p, p -a-> p, both accepting: a*, one state. Writing p's self-loop as "own class"
  // but q's step into p as p's class would keep them apart.
  const Dfa dfa = Minimize(MakeFlatDfa({{true, {{'a', 1}}, {}}, {true, {{'a', 1}}, {}}}));
  CHECK_EQ(dfa.size(), 1);
  CHECK_EQ(dfa.byte_edges.size(), size_t{1});
  CHECK_EQ(dfa.byte_edges[0].target, 0);
}

TEST(ASelfLoopAndAStepIntoTheClassAreOneStepIntoIt) {
  // q: a -> q, b -> p; p: a -> p, b -> p; both accepting: [ab]*, one state.
  const Dfa dfa =
      Minimize(MakeFlatDfa({{true, {{'a', 0}, {'b', 1}}, {}}, {true, {{'a', 1}, {'b', 1}}, {}}}));
  CHECK_EQ(dfa.size(), 1);
}

TEST(TwoWhitespaceRunsBeforeOneLiteralMerge) {
  // "a" " "* "c" | "b" " "* "c": the runs after a and after b are one state, and so are the
  // two ends.
  const Dfa dfa = Minimize(MakeFlatDfa({{false, {{'a', 1}, {'b', 2}}, {}},
                                        {false, {{' ', 1}, {'c', 3}}, {}},
                                        {false, {{' ', 2}, {'c', 4}}, {}},
                                        {true, {}, {}},
                                        {true, {}, {}}}));
  CHECK_EQ(dfa.size(), 3);
  // The start's a and b edges lead to one state: one range.
  CHECK_EQ(dfa.BytesOf(0).last - dfa.BytesOf(0).first, 1);
}

TEST(SelfLoopsOnDifferentSymbolsStayApart) {
  // x " "* y | x2 "\t"* y: the two runs differ; with rule edges into the same end.
  const Dfa dfa = Minimize(MakeFlatDfa({{false, {{'a', 1}, {'b', 2}}, {}},
                                        {false, {{' ', 1}}, {{0, 3}}},
                                        {false, {{'\t', 2}}, {{0, 3}}},
                                        {true, {}, {}}}));
  CHECK_EQ(dfa.size(), 4);
}

// Random machines whose edges go forward or to the state itself, over bytes a..c and rules
// 0..1, minimised (checked against the general path inside Minimize) and compared with the
// input on random strings.
TEST(RandomMachinesWithSelfLoopsMinimiseLikeTheGeneralPath) {
  std::mt19937 rng(7);
  const std::string symbols = "abcAB";
  for (int round = 0; round < 3000; ++round) {
    const int32_t n = 1 + static_cast<int32_t>(rng() % 10);
    std::vector<State> states(n);
    for (int32_t s = 0; s < n; ++s) {
      states[s].accepting = rng() % 3 == 0;
      for (char c : symbols) {
        if (rng() % 3 == 0) continue;
        // Mostly into the last few states, so equivalent states are common.
        int32_t target = rng() % 3 == 0 ? s : n - 1 - static_cast<int32_t>(rng() % 3);
        if (target < s) target = s;
        if (c >= 'A' && c < 'a') {
          states[s].rules.push_back({c - 'A', target});
        } else {
          states[s].bytes.push_back({static_cast<uint8_t>(c), target});
        }
      }
    }
    const FlatDfa flat = MakeFlatDfa(states);
    const Dfa minimal = Minimize(flat);
    CHECK(minimal.size() <= n);
    for (int k = 0; k < 20; ++k) {
      std::string text;
      const size_t length = rng() % 8;
      for (size_t i = 0; i < length; ++i) text += symbols[rng() % symbols.size()];
      CHECK_EQ(FlatAccepts(flat, text), MinimalAccepts(minimal, text));
    }
  }
}

}  // namespace
}  // namespace xg2_test
