// ComputeCompletionLengths (completion_lengths.h).
#include "support/completion_lengths.h"

#include <algorithm>
#include <functional>
#include <string>
#include <unordered_map>

#include "support/error.h"

namespace xg2 {
namespace {

// Reverse adjacency in CSR form, split by weight.
struct Reverse {
  std::vector<int32_t> begin[2];
  std::vector<int32_t> from[2];
  Reverse(int32_t n, const std::vector<WeightedEdge>& edges) {
    for (int w = 0; w < 2; ++w) begin[w].assign(static_cast<size_t>(n) + 1, 0);
    for (const WeightedEdge& e : edges) ++begin[e.weight][e.to + 1];
    for (int w = 0; w < 2; ++w) {
      for (int32_t i = 0; i < n; ++i) begin[w][i + 1] += begin[w][i];
      from[w].resize(begin[w][n]);
    }
    std::vector<int32_t> fill[2] = {begin[0], begin[1]};
    for (const WeightedEdge& e : edges) from[e.weight][fill[e.weight][e.to]++] = e.from;
  }
};

}  // namespace

CompletionLengths ComputeCompletionLengths(int32_t num_nodes, const std::vector<uint8_t>& accepting,
                                           const std::vector<WeightedEdge>& edges, int32_t max_layers) {
  const Reverse reverse(num_nodes, edges);
  // Adds every node that reaches `layer` by weight-0 edges (acyclic: within one unit).
  std::vector<int32_t> stack;
  auto close_over_zero = [&](std::vector<uint8_t>* layer) {
    stack.clear();
    for (int32_t n = 0; n < num_nodes; ++n) {
      if ((*layer)[n]) stack.push_back(n);
    }
    while (!stack.empty()) {
      const int32_t m = stack.back();
      stack.pop_back();
      for (int32_t i = reverse.begin[0][m]; i < reverse.begin[0][m + 1]; ++i) {
        const int32_t n = reverse.from[0][i];
        if (!(*layer)[n]) {
          (*layer)[n] = 1;
          stack.push_back(n);
        }
      }
    }
  };
  CompletionLengths out;
  out.fewest.assign(num_nodes, -1);
  out.most.assign(num_nodes, -1);
  std::vector<int32_t> last(num_nodes, -1);
  std::unordered_map<std::string, int32_t> seen;  // layer contents -> its index
  std::vector<const std::string*> layers;         // by index: the keys of `seen` (stable)
  // Layer k's members: their fewest, and the run of absence since they were last present.
  auto note_layer = [&](const std::string& members, int32_t k) {
    for (int32_t n = 0; n < num_nodes; ++n) {
      if (!members[n]) continue;
      if (out.fewest[n] < 0) out.fewest[n] = k;
      if (last[n] >= 0) out.max_gap = std::max(out.max_gap, k - 1 - last[n]);
      last[n] = k;
    }
  };
  std::vector<uint8_t> layer(accepting.begin(), accepting.end());
  close_over_zero(&layer);
  for (int32_t k = 0;; ++k) {
    const std::string key(layer.begin(), layer.end());
    auto [it, fresh] = seen.emplace(key, k);
    if (!fresh) {
      // Layers k0..k-1 repeat forever: a node in all of them completes with every count from
      // k0 on; in some of them only, with gaps; in none, it was last seen before k0.
      const int32_t k0 = it->second, period = k - k0;
      // One more period measures the runs of absence that wrap around it.
      for (int32_t j = k; j < k + period; ++j) note_layer(*layers[k0 + (j - k0) % period], j);
      for (int32_t n = 0; n < num_nodes; ++n) {
        bool in_period = false;
        for (int32_t j = k0; j < k && !in_period; ++j) in_period = (*layers[j])[n];
        out.most[n] = in_period ? -1 : last[n];
      }
      return out;
    }
    if (k >= max_layers) {
      throw ResourceLimitError("the lengths of a counted language need more than " + std::to_string(max_layers) +
                               " layers to repeat");
    }
    note_layer(it->first, k);
    layers.push_back(&it->first);
    std::vector<uint8_t> next(num_nodes, 0);
    for (int32_t m = 0; m < num_nodes; ++m) {
      if (!layer[m]) continue;
      for (int32_t i = reverse.begin[1][m]; i < reverse.begin[1][m + 1]; ++i) next[reverse.from[1][i]] = 1;
    }
    close_over_zero(&next);
    layer = std::move(next);
  }
}

}  // namespace xg2
