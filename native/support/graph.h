// Small graph helpers shared by the automaton passes (grammar/fsm_builder.cc,
// frontends/json_schema/regular_language.cc).
#ifndef XG2_SUPPORT_GRAPH_H_
#define XG2_SUPPORT_GRAPH_H_

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

}  // namespace xg2

#endif  // XG2_SUPPORT_GRAPH_H_
