// The working automata of the FSM build (fsm_builder.cc drives the stages):
//   Nfa      an epsilon-NFA over bytes + rule ids for one rule (nfa_builder.cc writes it);
//   FlatDfa  its subset construction, before minimisation (subset_construction.cc);
//   Dfa      one rule's minimal DFA, before flattening (dfa_minimisation.cc), also the unit
//            of the shared rule-DFA table and of right-linear merging.
// Invariants of a Dfa (and a FlatDfa), checked by CheckRuleDfaInvariants in debug builds:
// node 0 is the start; every node's byte edges are sorted by lo and pairwise disjoint, its
// rule edges sorted by rule; every edge target and every counted loop's head/gate is a node
// of the same automaton (a dead loop has head == gate == -1); node `loop`/`gate_loop` fields
// name a loop of `loops` or are -1.
#ifndef XG2_GRAMMAR_FSM_AUTOMATA_H_
#define XG2_GRAMMAR_FSM_AUTOMATA_H_

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "grammar/grammar_fsm.h"

namespace xg2 {
namespace fsm_build {

constexpr int kEpsilon = -1;

// Appends the bytes of `v` to a lookup key (structural ids, shared-table keys).
inline void AppendKeyWord(std::string* key, int32_t v) { key->append(reinterpret_cast<const char*>(&v), sizeof v); }

struct NfaEdge {
  int kind;  // kEpsilon, or -2 for a byte range, or a rule id >= 0
  uint8_t lo = 0, hi = 0;
  int32_t target;
};
constexpr int kByteRange = -2;

// A counted loop as lowered into the NFA (grammar_fsm.h): `members` are h and the nodes of
// the loop copy (its final node is the gate).
struct NfaLoop {
  int32_t head;
  int32_t gate;
  int32_t limit;
  std::vector<int32_t> members;
  ExprId expr;     // the repetition, for lifting it on a conflict
  bool optional;   // folds the repetition's optional iterations (else its mandatory ones)
};

// Lowering adds edges in any node order; Finish() then groups them by source node into flat
// CSR arrays (each node's edges keep the order they were added in). One allocation per array
// instead of one vector per node, and Reset() keeps the capacity for the next rule.
struct Nfa {
  int32_t num_nodes = 0;
  int32_t start = 0;
  int32_t accept = 0;
  std::vector<NfaLoop> loops;
  std::vector<int32_t> edge_begin;  // size num_nodes + 1, after Finish()
  std::vector<NfaEdge> edges;       // grouped by source node, after Finish()

  struct EdgeRange {
    const NfaEdge* first;
    const NfaEdge* last;
    const NfaEdge* begin() const { return first; }
    const NfaEdge* end() const { return last; }
  };
  EdgeRange EdgesOf(int32_t n) const { return {edges.data() + edge_begin[n], edges.data() + edge_begin[n + 1]}; }

  int32_t AddNode() { return num_nodes++; }
  void AddEdge(int32_t from, const NfaEdge& edge) { added_.push_back({from, edge}); }
  void Reset() {
    num_nodes = start = accept = 0;
    loops.clear();
    added_.clear();
  }
  // A stable counting sort of the added edges by source node.
  void Finish() {
    edge_begin.assign(static_cast<size_t>(num_nodes) + 1, 0);
    for (const AddedEdge& added : added_) ++edge_begin[added.from + 1];
    for (int32_t n = 0; n < num_nodes; ++n) edge_begin[n + 1] += edge_begin[n];
    edges.resize(added_.size());
    fill_.assign(edge_begin.begin(), edge_begin.end() - 1);
    for (const AddedEdge& added : added_) edges[fill_[added.from]++] = added.edge;
  }

 private:
  struct AddedEdge {  // one array, so that adding an edge is one append
    int32_t from;
    NfaEdge edge;
  };
  std::vector<AddedEdge> added_;
  std::vector<int32_t> fill_;
};

// A read-only slice of a flat array, for range-for over one state's edges.
template <typename T>
struct Slice {
  const T* first;
  const T* last;
  const T* begin() const { return first; }
  const T* end() const { return last; }
  bool empty() const { return first == last; }
};

// A DFA for one rule, before flattening. Node 0 is the start. The edges of all nodes live
// in two flat arrays (a node's edges are one contiguous run), so a DFA costs a handful of
// allocations however many nodes it has. Built node by node: AddNode, then its edges.
struct Dfa {
  struct Node {
    bool accepting = false;
    int32_t loop = -1;       // counted loop whose counter items here carry
    int32_t gate_loop = -1;  // counted loop whose gate this is
    int32_t byte_begin = 0, byte_end = 0;  // byte_edges[byte_begin, byte_end): sorted, disjoint
    int32_t rule_begin = 0, rule_end = 0;  // rule_edges[rule_begin, rule_end): sorted by rule
  };
  std::vector<Node> nodes;
  std::vector<ByteEdge> byte_edges;
  std::vector<RuleEdge> rule_edges;
  std::vector<CountedLoop> loops;  // head/gate are node indices of this DFA

  Slice<ByteEdge> BytesOf(int32_t n) const {
    return {byte_edges.data() + nodes[n].byte_begin, byte_edges.data() + nodes[n].byte_end};
  }
  Slice<RuleEdge> RulesOf(int32_t n) const {
    return {rule_edges.data() + nodes[n].rule_begin, rule_edges.data() + nodes[n].rule_end};
  }
  int32_t size() const { return static_cast<int32_t>(nodes.size()); }
  void AddNode(bool accepting, int32_t loop = -1, int32_t gate_loop = -1) {
    const int32_t b = static_cast<int32_t>(byte_edges.size()), r = static_cast<int32_t>(rule_edges.size());
    nodes.push_back({accepting, loop, gate_loop, b, b, r, r});
  }
  // Edges of the node added last.
  void AddByteEdge(const ByteEdge& e) {
    byte_edges.push_back(e);
    nodes.back().byte_end = static_cast<int32_t>(byte_edges.size());
  }
  void AddRuleEdge(const RuleEdge& e) {
    rule_edges.push_back(e);
    nodes.back().rule_end = static_cast<int32_t>(rule_edges.size());
  }
};

// The determinised machine before minimisation, in flat arrays: the byte edges of state s
// are byte_edges[byte_begin[s], byte_begin[s + 1]) (sorted, disjoint), its rule edges
// likewise (sorted by rule). State 0 is the start; the per-state fields mean what
// Dfa::Node's do.
struct FlatDfa {
  std::vector<uint8_t> accepting;
  std::vector<int32_t> loop;
  std::vector<int32_t> gate_loop;
  std::vector<int32_t> byte_begin{0};
  std::vector<int32_t> rule_begin{0};
  std::vector<ByteEdge> byte_edges;
  std::vector<RuleEdge> rule_edges;
  std::vector<CountedLoop> loops;

  int32_t size() const { return static_cast<int32_t>(accepting.size()); }
  Slice<ByteEdge> BytesOf(int32_t s) const {
    return {byte_edges.data() + byte_begin[s], byte_edges.data() + byte_begin[s + 1]};
  }
  Slice<RuleEdge> RulesOf(int32_t s) const {
    return {rule_edges.data() + rule_begin[s], rule_edges.data() + rule_begin[s + 1]};
  }
  void Clear() {
    accepting.clear();
    loop.clear();
    gate_loop.clear();
    byte_begin.assign(1, 0);
    rule_begin.assign(1, 0);
    byte_edges.clear();
    rule_edges.clear();
    loops.clear();
  }
};

// The empty language: a lone, non-accepting start.
inline Dfa EmptyLanguageDfa() {
  Dfa dfa;
  dfa.AddNode(false);
  return dfa;
}

// Thrown while lowering a rule when a DFA state would need two counters, or a counter that
// is both carried and fresh: the repetition `expr` is then lifted into a rule of its own.
struct CounterConflict {
  ExprId expr;
};

// Determinisation fallback. Subset construction can be exponential in the NFA
// ([ab]*a[ab]{22} needs 2^23 states: after any `a`, which of the next 22 bytes were `a`).
// A build stops once its DFA passes DeterminisationCap states (or its states' NFA node sets
// pass kMaxSubsetSetEntries) and throws this with the expression it was determinising. The
// enclosing rule build (the one with a LoweringContext) then lowers that expression's
// compound parts (all but bytes, classes and rule references) as calls of synthetic rules
// and builds again (LoweringContext::OnExplosion). The language is unchanged: the Earley
// parser follows the calls exactly, whatever nondeterminism there is between a caller and
// its callees. An expression whose compound parts are all calls determinises in linear
// size (a chain, a trie or a loop of leaves and calls), so each retry makes progress, and
// every part, now a rule, goes through the same cap in turn. No DFA below the cap changes.
// A lookahead assertion must stay one byte-only DFA: past the cap it is refused.
struct DeterminisationExplosion {
  ExprId expr;
};

// The most DFA states one determinisation may make before it falls back (see above).
constexpr int64_t DeterminisationCap(int64_t nfa_nodes) {
  constexpr int64_t kMinCap = 4096;
  constexpr int64_t kStatesPerNfaNode = 64;
  return std::max(kMinCap, kStatesPerNfaNode * nfa_nodes);
}

// Throw InternalError naming `stage` when the automaton breaks the invariants in the file
// comment (rule ids are also checked against `num_rules` when it is >= 0). Called through
// XG2_DCHECK_INVARIANTS (support/dcheck.h): debug and sanitizer builds only.
void CheckRuleDfaInvariants(const Dfa& dfa, int32_t num_rules, const char* stage);
void CheckFlatDfaInvariants(const FlatDfa& dfa, const char* stage);

}  // namespace fsm_build
}  // namespace xg2

#endif  // XG2_GRAMMAR_FSM_AUTOMATA_H_
