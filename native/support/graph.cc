#include "support/graph.h"

#include <algorithm>
#include <utility>

namespace xg2 {

StronglyConnectedComponents FindStronglyConnectedComponents(const std::vector<std::vector<int32_t>>& successors) {
  const int32_t n = static_cast<int32_t>(successors.size());
  StronglyConnectedComponents result;
  result.component_of.assign(n, -1);
  std::vector<int32_t> index(n, -1), low(n, 0);
  std::vector<uint8_t> on_stack(n, 0);
  std::vector<int32_t> stack;
  // The DFS path: (vertex, index of its next successor to visit).
  std::vector<std::pair<int32_t, size_t>> frames;
  int32_t next_index = 0;
  for (int32_t root = 0; root < n; ++root) {
    if (index[root] >= 0) continue;
    frames.emplace_back(root, 0);
    index[root] = low[root] = next_index++;
    stack.push_back(root);
    on_stack[root] = 1;
    while (!frames.empty()) {
      auto& [v, next] = frames.back();
      if (next < successors[v].size()) {
        const int32_t w = successors[v][next++];
        if (index[w] < 0) {
          index[w] = low[w] = next_index++;
          stack.push_back(w);
          on_stack[w] = 1;
          frames.emplace_back(w, 0);
        } else if (on_stack[w]) {
          low[v] = std::min(low[v], index[w]);
        }
        continue;
      }
      const int32_t done = v;
      frames.pop_back();
      if (!frames.empty()) low[frames.back().first] = std::min(low[frames.back().first], low[done]);
      if (low[done] != index[done]) continue;
      const int32_t id = static_cast<int32_t>(result.members.size());
      result.members.emplace_back();
      int32_t member;
      do {
        member = stack.back();
        stack.pop_back();
        on_stack[member] = 0;
        result.component_of[member] = id;
        result.members.back().push_back(member);
      } while (member != done);
    }
  }
  return result;
}

}  // namespace xg2
