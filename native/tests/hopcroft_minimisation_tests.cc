// Hopcroft's refinement on machines with real cycles, dead states, byte ranges that reach 255
// and rule edges (whose symbols follow the bytes: rule r is symbol 256 + r), compared with
// Moore's rounds on the same machine: the two must give the identical canonical Dfa, which
// accepts what the input accepts. Minimize
// itself also checks Hopcroft's result against Moore's in these builds
// (CheckHopcroftMinimisation); MinimizeWith runs each algorithm over the whole machine, with no
// one-pass attempt, whatever its size.
#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "check.h"
#include "fsm_test_support.h"
#include "grammar/dfa_minimisation_testing.h"

namespace xg2_test {
namespace {

// Byte ranges that tile 0..255 coarsely, so that neighbouring ranges into one target, and a
// range ending at 255 next to rule 0, are common.
constexpr uint8_t kRangeEnds[] = {0, 1, 200, 254, 255};

// One state of a machine under construction.
struct State {
  bool accepting = false;
  std::vector<ByteEdge> bytes;  // sorted, disjoint
  std::vector<RuleEdge> rules;  // sorted by rule
};

// A near twin of `state` (targets already mapped): one edge on byte 0 or byte 255 moved to
// rule 0 or back, an edge dropped, two neighbouring ranges joined, or acceptance flipped. The
// result differs from its twin by little, so an alphabet that confused bytes and rules, or
// a refinement that lost a split, would merge the two.
void Mutate(std::mt19937* rng, State* state) {
  std::mt19937& r = *rng;
  switch (r() % 4) {
    case 0: {  // a byte edge on one of 0 or 255 becomes rule 0, or rule 0 becomes byte 0 / 255
      if (!state->rules.empty() && state->rules[0].rule == 0) {
        const uint8_t byte = r() % 2 ? 0 : 255;
        bool taken = false;
        for (const ByteEdge& e : state->bytes) taken = taken || (e.lo <= byte && byte <= e.hi);
        if (taken) return;
        state->bytes.push_back({byte, byte, state->rules[0].target});
        std::sort(state->bytes.begin(), state->bytes.end(),
                  [](const ByteEdge& x, const ByteEdge& y) { return x.lo < y.lo; });
        state->rules.erase(state->rules.begin());
        return;
      }
      for (size_t k = 0; k < state->bytes.size(); ++k) {
        const ByteEdge e = state->bytes[k];
        if (e.lo == e.hi && (e.lo == 0 || e.lo == 255)) {
          state->bytes.erase(state->bytes.begin() + k);
          state->rules.insert(state->rules.begin(), RuleEdge{0, e.target});
          return;
        }
      }
      return;
    }
    case 1:
      if (!state->bytes.empty()) state->bytes.erase(state->bytes.begin() + r() % state->bytes.size());
      return;
    case 2:
      for (size_t k = 0; k + 1 < state->bytes.size(); ++k) {
        if (state->bytes[k].hi + 1 == state->bytes[k + 1].lo) {
          state->bytes[k].hi = state->bytes[k + 1].hi;
          state->bytes.erase(state->bytes.begin() + k + 1);
          return;
        }
      }
      return;
    default:
      state->accepting = !state->accepting;
  }
}

// A random FlatDfa of `n` states made of two copies of a random machine of n / 2 states
// whose edges cross between the copies at random (so each state is equivalent to its twin),
// plus an odd last state; a few second-copy states are near twins instead (Mutate). Targets
// are mostly among a few states, so equivalent states are common, and about a third of the
// states accept, so some cannot reach an accepting one and are dead.
FlatDfa RandomTwinMachine(std::mt19937* rng, int32_t n) {
  CHECK(n >= 3);
  std::mt19937& r = *rng;
  const int32_t half = n / 2;
  auto random_target = [&]() { return r() % 2 ? static_cast<int32_t>(r() % n) : n - 1 - static_cast<int32_t>(r() % 3); };
  std::vector<State> base(half);
  for (State& state : base) {
    state.accepting = r() % 3 == 0;
    int32_t lo = 0;
    for (uint8_t end : kRangeEnds) {
      if (r() % 2 == 0) state.bytes.push_back({static_cast<uint8_t>(lo), end, random_target()});
      lo = end + 1;
    }
    for (RuleId rule = 0; rule < 2; ++rule) {
      if (r() % 3 == 0) state.rules.push_back({rule, random_target()});
    }
  }
  // The twin of the odd last state is itself.
  auto twin = [&](int32_t t) { return t == 2 * half ? t : (t < half ? t + half : t - half); };
  FlatDfa dfa;
  for (int32_t s = 0; s < n; ++s) {
    State state = base[s == 2 * half ? static_cast<int32_t>(r() % half) : s % half];
    for (ByteEdge& e : state.bytes) e.target = r() % 2 ? e.target : twin(e.target);
    for (RuleEdge& e : state.rules) e.target = r() % 2 ? e.target : twin(e.target);
    if (s >= half && r() % 4 == 0) Mutate(rng, &state);
    dfa.accepting.push_back(state.accepting);
    dfa.loop.push_back(-1);
    dfa.gate_loop.push_back(-1);
    dfa.byte_edges.insert(dfa.byte_edges.end(), state.bytes.begin(), state.bytes.end());
    dfa.rule_edges.insert(dfa.rule_edges.end(), state.rules.begin(), state.rules.end());
    dfa.byte_begin.push_back(static_cast<int32_t>(dfa.byte_edges.size()));
    dfa.rule_begin.push_back(static_cast<int32_t>(dfa.rule_edges.size()));
  }
  return dfa;
}

// Whether some state of `dfa` cannot reach an accepting state (a fixpoint over its edges).
bool HasDeadState(const FlatDfa& dfa) {
  std::vector<bool> live(dfa.accepting.begin(), dfa.accepting.end());
  for (bool changed = true; changed;) {
    changed = false;
    for (int32_t s = 0; s < dfa.size(); ++s) {
      bool reaches = live[s];
      for (const ByteEdge& e : dfa.BytesOf(s)) reaches = reaches || live[e.target];
      for (const RuleEdge& e : dfa.RulesOf(s)) reaches = reaches || live[e.target];
      changed = changed || reaches != live[s];
      live[s] = reaches;
    }
  }
  for (bool l : live) {
    if (!l) return true;
  }
  return false;
}

// The state after `symbols` (a byte, or -1 - r for rule r) from state 0, or -1.
template <typename Machine>
int32_t Walk(const Machine& dfa, const std::vector<int32_t>& symbols) {
  int32_t s = 0;
  for (const int32_t symbol : symbols) {
    int32_t next = -1;
    if (symbol < 0) {
      for (const RuleEdge& e : dfa.RulesOf(s)) next = e.rule == -1 - symbol ? e.target : next;
    } else {
      for (const ByteEdge& e : dfa.BytesOf(s)) next = e.lo <= symbol && symbol <= e.hi ? e.target : next;
    }
    if (next < 0) return -1;
    s = next;
  }
  return s;
}

TEST(HopcroftMatchesMooreOnRandomCyclicMachines) {
  std::mt19937 rng(39);
  int32_t merged = 0, with_dead = 0;
  for (int round = 0; round < 2000; ++round) {
    const FlatDfa flat = RandomTwinMachine(&rng, 3 + static_cast<int32_t>(rng() % 60));
    const Dfa moore = MinimizeWith(flat, MinimisationAlgorithm::kMoore);
    const Dfa hopcroft = MinimizeWith(flat, MinimisationAlgorithm::kHopcroft);
    CHECK(SameDfa(moore, hopcroft));
    CHECK(SameDfa(Minimize(flat), hopcroft));
    merged += hopcroft.size() < flat.size();
    // And both keep the language: bytes at the range ends, one inside, and the rules.
    static constexpr int32_t kSymbols[] = {0, 1, 100, 254, 255, -1, -2};
    for (int k = 0; k < 20; ++k) {
      std::vector<int32_t> text(rng() % 8);
      for (int32_t& symbol : text) symbol = kSymbols[rng() % 7];
      const int32_t in_flat = Walk(flat, text), in_minimal = Walk(hopcroft, text);
      CHECK_EQ(in_flat >= 0 && flat.accepting[in_flat], in_minimal >= 0 && hopcroft.nodes[in_minimal].accepting);
    }
    with_dead += HasDeadState(flat);
  }
  // The workload exercises merging and dead states.
  CHECK(merged > 1000);
  CHECK(with_dead > 100);
}

}  // namespace
}  // namespace xg2_test
