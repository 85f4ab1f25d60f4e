// CountableLengths (length_counts.h).
#include "frontends/json_schema/length_counts.h"

#include <algorithm>
#include <map>
#include <utility>
#include <vector>

#include "support/completion_lengths.h"
#include "support/error.h"

namespace xg2 {
namespace {

// The language states reachable from `from` by reading exactly one string of `unit`.
std::vector<int32_t> AfterOneUnit(const CodepointDfa& language, const CodepointDfa& unit, int32_t from) {
  std::vector<int32_t> out;
  std::vector<std::pair<int32_t, int32_t>> stack{{from, 0}};  // (language state, unit state)
  std::vector<std::pair<int32_t, int32_t>> seen = stack;
  while (!stack.empty()) {
    const auto [q, u] = stack.back();
    stack.pop_back();
    if (unit.states[u].accepting) {  // a prefix code: a whole unit ends here
      out.push_back(q);
      continue;
    }
    for (const auto& a : language.states[q].edges) {
      for (const auto& b : unit.states[u].edges) {
        if (std::max(a.lo, b.lo) > std::min(a.hi, b.hi)) continue;
        const std::pair<int32_t, int32_t> next{a.target, b.target};
        if (std::find(seen.begin(), seen.end(), next) != seen.end()) continue;
        seen.push_back(next);
        stack.push_back(next);
      }
    }
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

}  // namespace

CountedLengths CountableLengths(const CodepointDfa& language, const CodepointDfa& unit, long long min_count,
                                long long max_count) {
  constexpr int32_t kMaxLengthLayers = 4096;
  // The graph of whole-unit steps over the states a string of units reaches from the start
  // (states inside an escape are never a unit boundary), numbered in discovery order.
  std::map<int32_t, int32_t> id_of{{0, 0}};
  std::vector<int32_t> order{0};
  std::vector<WeightedEdge> edges;
  for (size_t i = 0; i < order.size(); ++i) {
    for (int32_t next : AfterOneUnit(language, unit, order[i])) {
      auto [it, fresh] = id_of.emplace(next, static_cast<int32_t>(order.size()));
      if (fresh) order.push_back(next);
      edges.push_back({static_cast<int32_t>(i), it->second, 1});
    }
  }
  const int32_t states = static_cast<int32_t>(order.size());
  std::vector<uint8_t> accepting(states);
  for (int32_t i = 0; i < states; ++i) accepting[i] = language.states[order[i]].accepting;
  const CompletionLengths lengths = ComputeCompletionLengths(states, accepting, edges, kMaxLengthLayers);
  const long long fewest = lengths.fewest[0], most = lengths.most[0];
  if (fewest < 0 || (max_count >= 0 && fewest > max_count) || (most >= 0 && most < min_count)) {
    return CountedLengths::kNone;
  }
  return CountWindowIsDecided(min_count, max_count, lengths.max_gap) ? CountedLengths::kSome : CountedLengths::kGaps;
}

}  // namespace xg2
