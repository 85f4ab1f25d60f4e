// The subset construction against a direct transcription of its definition: states are
// the important-node closures (subset_construction.cc, Closure), numbered in the order they
// are first reached (the start, then each state's byte steps in increasing byte, then its
// rule steps in increasing rule), and a state's byte edges are its maximal runs of bytes
// with one target. The reference steps byte by byte and keys states by std::map, so it
// shares none of Determinise's shortcuts (disjoint edges, cuts and pieces, single-node
// memo, hashing); the machines must be identical, state numbering included.
#include <map>
#include <random>
#include <set>
#include <vector>

#include "check.h"
#include "fsm_test_support.h"
#include "random_nfa.h"

namespace xg2_test {
namespace {

class ReferenceSubsets {
 public:
  explicit ReferenceSubsets(const Nfa& nfa) : nfa_(nfa) {}

  FlatDfa Run() {
    FlatDfa dfa;
    Intern(Closure({nfa_.start}));
    for (size_t id = 0; id < sets_.size(); ++id) {
      const std::vector<int32_t> set = sets_[id];  // Intern grows sets_
      dfa.accepting.push_back(std::find(set.begin(), set.end(), nfa_.accept) != set.end());
      dfa.loop.push_back(-1);
      dfa.gate_loop.push_back(-1);
      for (int byte = 0; byte < 256; ++byte) {
        std::vector<int32_t> targets;
        for (int32_t n : set) {
          for (const NfaEdge& e : nfa_.EdgesOf(n)) {
            if (e.kind == kByteRange && e.lo <= byte && byte <= e.hi) targets.push_back(e.target);
          }
        }
        if (targets.empty()) continue;
        const int32_t target = Intern(Closure(targets));
        const size_t first_edge = static_cast<size_t>(dfa.byte_begin.back());
        if (dfa.byte_edges.size() > first_edge && dfa.byte_edges.back().target == target &&
            dfa.byte_edges.back().hi + 1 == byte) {
          dfa.byte_edges.back().hi = static_cast<uint8_t>(byte);
        } else {
          dfa.byte_edges.push_back({static_cast<uint8_t>(byte), static_cast<uint8_t>(byte), target});
        }
      }
      dfa.byte_begin.push_back(static_cast<int32_t>(dfa.byte_edges.size()));
      std::map<int32_t, std::vector<int32_t>> rule_targets;
      for (int32_t n : set) {
        for (const NfaEdge& e : nfa_.EdgesOf(n)) {
          if (e.kind >= 0) rule_targets[e.kind].push_back(e.target);
        }
      }
      for (const auto& [rule, targets] : rule_targets) dfa.rule_edges.push_back({rule, Intern(Closure(targets))});
      dfa.rule_begin.push_back(static_cast<int32_t>(dfa.rule_edges.size()));
    }
    return dfa;
  }

 private:
  // The epsilon closure of `seeds`, keeping only the nodes with a byte or rule edge and the
  // accepting node, sorted.
  std::vector<int32_t> Closure(const std::vector<int32_t>& seeds) const {
    std::set<int32_t> reached(seeds.begin(), seeds.end());
    std::vector<int32_t> stack(seeds.begin(), seeds.end());
    while (!stack.empty()) {
      const int32_t n = stack.back();
      stack.pop_back();
      for (const NfaEdge& e : nfa_.EdgesOf(n)) {
        if (e.kind == kEpsilon && reached.insert(e.target).second) stack.push_back(e.target);
      }
    }
    std::vector<int32_t> kept;
    for (int32_t n : reached) {
      bool reads = n == nfa_.accept;
      for (const NfaEdge& e : nfa_.EdgesOf(n)) reads = reads || e.kind != kEpsilon;
      if (reads) kept.push_back(n);
    }
    return kept;
  }

  int32_t Intern(const std::vector<int32_t>& set) {
    auto [it, fresh] = ids_.emplace(set, static_cast<int32_t>(sets_.size()));
    if (fresh) sets_.push_back(set);
    return it->second;
  }

  const Nfa& nfa_;
  std::map<std::vector<int32_t>, int32_t> ids_;
  std::vector<std::vector<int32_t>> sets_;
};

void CheckAgainstReference(const RandomNfaShape& shape, uint32_t seed, int rounds, int32_t max_nodes) {
  std::mt19937 rng(seed);
  SubsetScratch scratch;  // one scratch for all rounds, as a grammar's rules share one
  for (int round = 0; round < rounds; ++round) {
    const Nfa nfa = RandomNfa(&rng, 2 + static_cast<int32_t>(rng() % (max_nodes - 1)), shape);
    const FlatDfa expected = ReferenceSubsets(nfa).Run();
    for (bool pieces_only : {false, true}) {
      int64_t budget = int64_t{1} << 20;
      scratch.pieces_only = pieces_only;
      const FlatDfa* dfa = Determinise(nfa, &budget, &scratch);
      CHECK(dfa != nullptr);
      if (dfa == nullptr) continue;
      CHECK(SameFlatDfa(*dfa, expected));
      CHECK_EQ(budget, (int64_t{1} << 20) - expected.size());
    }
  }
}

TEST(SubsetConstructionMatchesTheReferenceOnThompsonLikeNfas) {
  CheckAgainstReference(kThompsonLikeNfa, 5, 1500, 14);
}

TEST(SubsetConstructionMatchesTheReferenceOnSharedTargetNfas) {
  CheckAgainstReference(kSharedTargetNfa, 7, 1500, 10);
}

}  // namespace
}  // namespace xg2_test
