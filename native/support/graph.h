// Small graph helpers shared by the automaton passes (grammar/fsm_builder.cc,
// frontends/json_schema/regular_language.cc) and the rule-graph passes (grammar/inline_rules.cc,
// matcher/fsm_hash.cc).
#ifndef XG2_SUPPORT_GRAPH_H_
#define XG2_SUPPORT_GRAPH_H_

#include <cstddef>
#include <cstdint>
#include <vector>

namespace xg2 {

// Marks every state from which a marked state is reachable: `marked` starts as the targets
// (e.g. the accepting states) and ends as the set of states that can reach one of them
// ("live" states of an automaton). The predecessors of state s are
// reverse[reverse_begin[s], reverse_begin[s + 1]). `stack` is working memory (its capacity is
// reused by the caller across calls).
inline void MarkCoReachable(const std::vector<int32_t>& reverse_begin, const std::vector<int32_t>& reverse,
                            std::vector<uint8_t>* marked, std::vector<int32_t>* stack) {
  stack->clear();
  for (size_t i = 0; i < marked->size(); ++i) {
    if ((*marked)[i]) stack->push_back(static_cast<int32_t>(i));
  }
  while (!stack->empty()) {
    int32_t s = stack->back();
    stack->pop_back();
    for (int32_t k = reverse_begin[s]; k < reverse_begin[s + 1]; ++k) {
      const int32_t p = reverse[k];
      if (!(*marked)[p]) {
        (*marked)[p] = 1;
        stack->push_back(p);
      }
    }
  }
}

// The strongly connected components of a directed graph whose vertex v has the successors
// successors[v] (duplicates allowed). Tarjan's algorithm, iterative (rule graphs can be
// deeper than the native stack), with roots taken in vertex order and successors in list
// order, so the result depends only on the graph as given.
// Invariants of the result: `members` lists the components in reverse topological order (a
// component comes after every component reachable from it: callees before callers); each
// component's vertices are listed in the order they leave Tarjan's stack, its root last;
// component_of[v] is v's component's index in `members`.
struct StronglyConnectedComponents {
  std::vector<int32_t> component_of;
  std::vector<std::vector<int32_t>> members;
};
StronglyConnectedComponents FindStronglyConnectedComponents(const std::vector<std::vector<int32_t>>& successors);

}  // namespace xg2

#endif  // XG2_SUPPORT_GRAPH_H_
