// Minimisation (fsm_builder.cc, stage 3): a determinised rule (FlatDfa) -> its minimal Dfa.
// States that cannot reach acceptance are dropped, equivalent ones merged (one pass from the
// sinks up for a machine whose only cycles are self-loops, Moore's rounds for other small
// machines, Hopcroft's algorithm through PartitionRefiner above), and the classes renumbered
// in breadth-first order from the start, so the result is canonical: equal languages (with
// equal counter roles) give identical Dfas, whichever algorithm ran.
// Merging preserves acceptance and each state's counted-loop roles (loop, gate_loop); a loop
// whose head or gate died keeps its slot as {-1, -1, limit}.
#ifndef XG2_GRAMMAR_DFA_MINIMISATION_H_
#define XG2_GRAMMAR_DFA_MINIMISATION_H_

#include <cstdint>
#include <tuple>
#include <utility>
#include <vector>

#include "grammar/fsm_automata.h"
#include "support/partition_refinement.h"

namespace xg2 {
namespace fsm_build {

// Working memory of minimisation, kept across the rules of one grammar.
struct MinimizeScratch {
  // Every state's incoming edges (IndexIncomingEdges), read by the live-state marking, the
  // one-pass order and Hopcroft.
  std::vector<int32_t> in_begin;
  std::vector<SymbolRun> in_runs;
  std::vector<int32_t> fill, stack, cls, new_id, representative;
  std::vector<uint8_t> live;
  std::vector<std::pair<std::tuple<bool, int32_t, int32_t>, int32_t>> initial;
  // The one-pass minimisation: out-edges (self-loops aside) left per state, the states in
  // the order they are classed, and the classes' signatures (words[class_begin[c],
  // class_begin[c + 1])) found by hash through open addressing over class_slots; whether a
  // class's signature names the class itself, and the classes a state may join that way.
  std::vector<int32_t> pending, ready, acyclic_cls, class_slots, candidates;
  std::vector<uint32_t> class_begin;
  std::vector<uint64_t> class_hash;
  std::vector<uint8_t> own_class_edge;
  // Moore's rounds (and the acyclic pass's signatures).
  std::vector<int64_t> words;
  std::vector<uint32_t> begin;
  std::vector<uint64_t> hash;
  std::vector<int32_t> order, next;
  // Hopcroft: the refiner's own memory.
  PartitionRefiner refiner;
  // The output's edges of one node, before they are copied into it.
  std::vector<ByteEdge> out_bytes;
  std::vector<RuleEdge> out_rules;
};

// `scratch` null: working memory of its own.
Dfa Minimize(const FlatDfa& dfa, MinimizeScratch* scratch = nullptr);

}  // namespace fsm_build
}  // namespace xg2

#endif  // XG2_GRAMMAR_DFA_MINIMISATION_H_
