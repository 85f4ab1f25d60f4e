// Minimisation of a determinised rule (see the header): live states, the initial partition,
// Moore's rounds or Hopcroft's refinement, and the canonical renumbering.
#include "grammar/dfa_minimisation.h"

#include <algorithm>

#include "grammar/dfa_minimisation_testing.h"
#include "support/dcheck.h"

namespace xg2 {
namespace fsm_build {
namespace {

// A rule edge's symbol for PartitionRefiner: the bytes are symbols 0..255 as they are, rule r
// is symbol 256 + r. Hopcroft's refinement needs no byte classes: a run of symbols is a set,
// and equal sets have equal maximal runs whether or not they span bytes that no edge boundary
// separates.
constexpr int32_t kFirstRuleSymbol = 256;

// Minimises by PartitionRefiner (support/partition_refinement.h) over the live states: `cls`
// holds the initial class of every live state and -1 for the others, and ends as the coarsest
// stable refinement. The incoming runs are IndexIncomingEdges', of every edge: a dead state
// leads only to dead states, so a live state's runs all come from live ones, and a dead
// state's runs are never read (it is in no block).
void RefineHopcroft(int32_t num_initial, MinimizeScratch* m) {
  m->refiner.Refine(num_initial, m->in_begin, m->in_runs, &m->cls);
}

// Minimisation: drops states that cannot reach an accepting state, then merges equivalent
// ones. A machine whose only cycles are self-loops takes one pass (RefineAcyclic); otherwise
// small machines use Moore's rounds (cheap without set-up), larger ones Hopcroft's algorithm,
// whose cost does not grow with the number of rounds (a long literal chain needs one Moore
// round per state).
// All three give the coarsest partition, and the renumbering below is canonical, so the
// result does not depend on which one ran.
constexpr size_t kMaxMooreNodes = 32;

// The incoming edges of every state, as SymbolRuns (symbols as in kFirstRuleSymbol) grouped by
// target in CSR form: in_runs[in_begin[t], in_begin[t + 1]) lead into t, in the order of their
// sources. Read by the live-state marking, the one-pass minimisation's order and Hopcroft's
// refinement. On the way, pending[s] counts s's edges that are not self-loops (the one-pass
// minimisation's Kahn order starts from them).
void IndexIncomingEdges(const FlatDfa& dfa, MinimizeScratch* scratch) {
  MinimizeScratch& m = *scratch;
  const int32_t n = dfa.size();
  std::vector<int32_t>& in_begin = m.in_begin;
  std::vector<SymbolRun>& in_runs = m.in_runs;
  in_begin.assign(static_cast<size_t>(n) + 1, 0);
  for (const ByteEdge& e : dfa.byte_edges) ++in_begin[e.target + 1];
  for (const RuleEdge& e : dfa.rule_edges) ++in_begin[e.target + 1];
  for (int32_t t = 0; t < n; ++t) in_begin[t + 1] += in_begin[t];
  in_runs.resize(in_begin[n]);
  std::vector<int32_t>& fill = m.fill;
  fill.assign(in_begin.begin(), in_begin.end() - 1);
  std::vector<int32_t>& pending = m.pending;
  pending.resize(n);
  for (int32_t s = 0; s < n; ++s) {
    int32_t out = 0;
    for (const ByteEdge& e : dfa.BytesOf(s)) {
      in_runs[fill[e.target]++] = SymbolRun{e.lo, e.hi, s};
      out += e.target != s;
    }
    for (const RuleEdge& e : dfa.RulesOf(s)) {
      XG2_DCHECK(e.rule >= 0, "a rule edge names a rule");
      const int32_t symbol = kFirstRuleSymbol + e.rule;
      in_runs[fill[e.target]++] = SymbolRun{symbol, symbol, s};
      out += e.target != s;
    }
    pending[s] = out;
  }
}

// Marks in scratch->live the states that can reach acceptance, along IndexIncomingEdges' runs.
void MarkLiveStates(const FlatDfa& dfa, MinimizeScratch* scratch) {
  MinimizeScratch& m = *scratch;
  std::vector<uint8_t>& live = m.live;
  std::vector<int32_t>& stack = m.stack;
  live.assign(dfa.accepting.begin(), dfa.accepting.end());
  stack.clear();
  for (int32_t s = 0; s < dfa.size(); ++s) {
    if (live[s]) stack.push_back(s);
  }
  while (!stack.empty()) {
    const int32_t t = stack.back();
    stack.pop_back();
    for (int32_t r = m.in_begin[t]; r < m.in_begin[t + 1]; ++r) {
      const int32_t source = m.in_runs[r].source;
      if (!live[source]) {
        live[source] = 1;
        stack.push_back(source);
      }
    }
  }
}

// The initial partition of the live states into scratch->cls (-1 for dead ones): acceptance and
// the counter roles, which merging must preserve. Returns the number of classes.
int32_t InitialPartition(const FlatDfa& dfa, MinimizeScratch* scratch) {
  MinimizeScratch& m = *scratch;
  const size_t n = static_cast<size_t>(dfa.size());
  const std::vector<uint8_t>& live = m.live;
  std::vector<int32_t>& cls = m.cls;
  cls.assign(n, -1);
  if (dfa.loops.empty()) {
    // No counted loop, so no state has a role (fsm_automata.h): acceptance alone is the key,
    // and the classes are numbered in order of appearance as below.
    int32_t id_of[2] = {-1, -1};
    int32_t classes = 0;
    for (size_t i = 0; i < n; ++i) {
      if (!live[i]) continue;
      XG2_DCHECK(dfa.loop[i] < 0 && dfa.gate_loop[i] < 0, "a state's loop role names a loop of the machine");
      int32_t& id = id_of[dfa.accepting[i] ? 1 : 0];
      if (id < 0) id = classes++;
      cls[i] = id;
    }
    return classes;
  }
  auto& initial = m.initial;
  initial.clear();
  for (size_t i = 0; i < n; ++i) {
    if (!live[i]) continue;
    auto key = std::make_tuple(static_cast<bool>(dfa.accepting[i]), dfa.loop[i], dfa.gate_loop[i]);
    auto it = std::find_if(initial.begin(), initial.end(), [&](const auto& entry) { return entry.first == key; });
    if (it == initial.end()) {
      initial.push_back({key, static_cast<int32_t>(initial.size())});
      it = initial.end() - 1;
    }
    cls[i] = it->second;
  }
  return static_cast<int32_t>(initial.size());
}

// Appends the signature of state `s` to `words`: `own` (its class so far), its byte edges
// as (lo, hi, target class) words, a separator, its rule edges as (rule, target class) words.
// An edge whose target's class is -1 (a dead state) counts as no edge, and neighbouring byte
// ranges into one class are one word, so that a state whose range was cut in two (by a
// distinction later merged away) still matches its equivalents: equal signatures mean equal
// steps into classes, symbol by symbol.
// A target whose class is `self_class` is written as kOwnClass (the one-pass minimisation's
// self-loops, see RefineAcyclic); the default matches no class.
constexpr int64_t kOwnClass = 0x7FFFFFFF;

void AppendSignature(const FlatDfa& dfa, int32_t s, int32_t own, const std::vector<int32_t>& target_class,
                     std::vector<int64_t>* words_out, int32_t self_class = -2) {
  std::vector<int64_t>& words = *words_out;
  words.push_back(own);
  const size_t first_byte_word = words.size();
  for (const ByteEdge& e : dfa.BytesOf(s)) {
    if (target_class[e.target] < 0) continue;
    const int64_t target =
        target_class[e.target] == self_class ? kOwnClass : static_cast<uint32_t>(target_class[e.target]);
    if (words.size() > first_byte_word && (words.back() & 0xFFFFFFFF) == target &&
        ((words.back() >> 32) & 0xFF) + 1 == e.lo) {
      words.back() = (words.back() & ~(int64_t{0xFF} << 32)) | (static_cast<int64_t>(e.hi) << 32);
      continue;
    }
    words.push_back((static_cast<int64_t>(e.lo) << 40) | (static_cast<int64_t>(e.hi) << 32) | target);
  }
  words.push_back(-7);
  for (const RuleEdge& e : dfa.RulesOf(s)) {
    if (target_class[e.target] < 0) continue;
    const int64_t target =
        target_class[e.target] == self_class ? kOwnClass : static_cast<uint32_t>(target_class[e.target]);
    words.push_back((static_cast<int64_t>(e.rule) << 32) | target);
  }
}

uint64_t HashWords(const int64_t* first, const int64_t* last) {
  uint64_t h = 0x9E3779B97F4A7C15ull;
  for (const int64_t* w = first; w != last; ++w) {
    h = (h ^ static_cast<uint64_t>(*w)) * 0xFF51AFD7ED558CCDull;
    h ^= h >> 29;
  }
  return h;
}

// Minimisation of an acyclic machine in one pass (Revuz, "Minimisation of acyclic
// deterministic automata in linear time", 1992), extended to self-loops. A choice of literals
// (an enum, the keys of an object) determinises into such a machine, and so does a chain with
// self-loops (whitespace runs between the literals, a bounded string's copies); there Moore's
// rounds take one round per state on the longest path and Hopcroft's algorithm its set-up and
// splitter queue.
//
// The live states are classed sinks first (Kahn's order over the edges that are not
// self-loops), each by its signature (AppendSignature: its initial class, then its edges'
// labels and target classes), which is complete when it is written because every live
// successor but the state itself is classed before it. A class keeps the signature of its
// first state with the edges into the class written as kOwnClass; only that state's
// self-loops can lead into the class then, since every other member comes later. A state s
// joins class c exactly when its signature, with its self-loops and its edges into c
// written as kOwnClass, is c's: tried for each class c among s's targets whose signature
// holds kOwnClass, then for none (self-loops alone as kOwnClass), else s founds a class.
// Sound: the members of c then step, symbol by symbol, into the same classes, c counting as
// one, so the partition stays stable. Complete, by induction along Kahn's order (the classes
// made so far are exactly the equivalence classes of the states classed so far): if s is
// equivalent to a member of c, its successors are equivalent to that member's, so they lie
// in the same classes, c included where c's first state has a self-loop (a member's step
// into c matches the first state's step into a state of c, which can only be itself); the
// two signatures are then equal under the hypothesis for c, or under the one for none when
// s steps into c only by its own self-loops. That is the coarsest stable refinement of the
// initial partition: the partition Moore's rounds and Hopcroft's algorithm reach, so
// CanonicalQuotient gives the same Dfa. Debug builds check it against them
// (CheckAcyclicMinimisation).
//
// Returns false, leaving scratch->cls as it was, where the machine holds a cycle other than
// a self-loop.
bool RefineAcyclic(const FlatDfa& dfa, MinimizeScratch* scratch) {
  MinimizeScratch& m = *scratch;
  const int32_t n = dfa.size();
  std::vector<int32_t>& cls = m.cls;
  std::vector<int32_t>& pending = m.pending;
  std::vector<int32_t>& ready = m.ready;
  // Kahn's order over every edge but self-loops (dead states included: they are sinks, or
  // lead only to dead states), along IndexIncomingEdges' runs, from its counts in `pending`.
  // A machine with a cycle stops early, at the cost of one look at each state, before any
  // signature is written.
  ready.clear();
  bool any_self_loop = false;
  for (int32_t s = 0; s < n; ++s) {
    const int32_t edges = (dfa.byte_begin[s + 1] - dfa.byte_begin[s]) + (dfa.rule_begin[s + 1] - dfa.rule_begin[s]);
    any_self_loop = any_self_loop || pending[s] != edges;
    if (pending[s] == 0) ready.push_back(s);
  }
  for (size_t k = 0; k < ready.size(); ++k) {
    const int32_t s = ready[k];
    for (int32_t r = m.in_begin[s]; r < m.in_begin[s + 1]; ++r) {
      const int32_t source = m.in_runs[r].source;
      if (source != s && --pending[source] == 0) ready.push_back(source);
    }
  }
  if (static_cast<int32_t>(ready.size()) != n) return false;
  int32_t live = 0;
  for (int32_t s = 0; s < n; ++s) live += cls[s] >= 0;

  std::vector<int32_t>& final_cls = m.acyclic_cls;
  std::vector<int64_t>& words = m.words;
  std::vector<uint32_t>& class_begin = m.class_begin;
  std::vector<uint64_t>& class_hash = m.class_hash;
  std::vector<uint8_t>& own_class_edge = m.own_class_edge;  // class -> its signature holds kOwnClass
  std::vector<int32_t>& slots = m.class_slots;
  std::vector<int32_t>& candidates = m.candidates;
  final_cls.assign(n, -1);
  words.clear();
  class_begin.assign(1, 0);
  class_hash.clear();
  own_class_edge.clear();
  size_t num_slots = 16;
  while (num_slots < 2 * static_cast<size_t>(live)) num_slots *= 2;  // at most half full
  slots.assign(num_slots, -1);
  const size_t mask = num_slots - 1;
  // The class whose signature is words[start, end), or -1; `add`: a new class then.
  auto find = [&](size_t start, bool add) {
    const uint64_t hash = HashWords(words.data() + start, words.data() + words.size());
    for (size_t i = hash & mask;; i = (i + 1) & mask) {
      const int32_t c = slots[i];
      if (c < 0) {
        if (!add) return -1;
        slots[i] = static_cast<int32_t>(class_hash.size());
        class_hash.push_back(hash);
        class_begin.push_back(static_cast<uint32_t>(words.size()));
        return slots[i];
      }
      if (class_hash[c] == hash && class_begin[c + 1] - class_begin[c] == words.size() - start &&
          std::equal(words.begin() + class_begin[c], words.begin() + class_begin[c + 1], words.begin() + start)) {
        return c;
      }
    }
  };
  // No class has this id (there are at most n): the hypothesis "none" writes only s's own
  // self-loops as kOwnClass.
  const int32_t kUnclassed = n;
  for (const int32_t s : ready) {
    if (cls[s] < 0) continue;  // dead: no class, and edges into it count as none
    candidates.clear();
    bool self_loop = false;
    if (any_self_loop) {
      auto consider = [&](int32_t target) {
        if (target == s) {
          self_loop = true;
        } else if (final_cls[target] >= 0 && own_class_edge[final_cls[target]]) {
          candidates.push_back(final_cls[target]);
        }
      };
      for (const ByteEdge& e : dfa.BytesOf(s)) consider(e.target);
      for (const RuleEdge& e : dfa.RulesOf(s)) consider(e.target);
      std::sort(candidates.begin(), candidates.end());
      candidates.erase(std::unique(candidates.begin(), candidates.end()), candidates.end());
    }
    const size_t start = words.size();
    int32_t joined = -1;
    for (const int32_t c : candidates) {
      final_cls[s] = c;
      AppendSignature(dfa, s, cls[s], final_cls, &words, c);
      joined = find(start, false);
      words.resize(start);
      if (joined == c) break;
      joined = -1;
    }
    if (joined < 0) {
      final_cls[s] = kUnclassed;
      AppendSignature(dfa, s, cls[s], final_cls, &words, kUnclassed);
      const size_t classes = class_hash.size();
      joined = find(start, true);
      if (class_hash.size() == classes) {
        words.resize(start);  // an existing class: its own signature stays
      } else {
        own_class_edge.push_back(self_loop);
      }
    }
    final_cls[s] = joined;
  }
  cls.swap(final_cls);
  return true;
}

// Refines scratch->cls to the coarsest stable partition by Moore's rounds.
void RefineMoore(const FlatDfa& dfa, MinimizeScratch* scratch) {
  MinimizeScratch& m = *scratch;
  const size_t n = static_cast<size_t>(dfa.size());
  std::vector<int32_t>& cls = m.cls;
  // Each round gives every live state a signature (AppendSignature) and numbers the
  // distinct signatures. Signatures live in one flat buffer and are grouped by sorting (hash
  // first, then the words), so a round allocates nothing: the rounds of a long chain of
  // look-alike states stay cheap.
  std::vector<int64_t>& words = m.words;
  std::vector<uint32_t>& begin = m.begin;
  std::vector<uint64_t>& hash = m.hash;
  std::vector<int32_t>& order = m.order;
  std::vector<int32_t>& next = m.next;
  begin.assign(n + 1, 0);
  hash.assign(n, 0);
  next.assign(n, -1);
  size_t num_classes = 0;
  for (;;) {
    words.clear();
    order.clear();
    for (size_t i = 0; i < n; ++i) {
      begin[i] = static_cast<uint32_t>(words.size());
      if (cls[i] < 0) continue;
      AppendSignature(dfa, static_cast<int32_t>(i), cls[i], cls, &words);
      hash[i] = HashWords(words.data() + begin[i], words.data() + words.size());
      order.push_back(static_cast<int32_t>(i));
    }
    begin[n] = static_cast<uint32_t>(words.size());
    auto end_of = [&](int32_t i) { return words.begin() + begin[i + 1]; };
    auto less = [&](int32_t a, int32_t b) {
      if (hash[a] != hash[b]) return hash[a] < hash[b];
      return std::lexicographical_compare(words.begin() + begin[a], end_of(a), words.begin() + begin[b],
                                          end_of(b));
    };
    std::sort(order.begin(), order.end(), less);
    int32_t classes = 0;
    for (size_t k = 0; k < order.size(); ++k) {
      if (k > 0 && less(order[k - 1], order[k])) ++classes;
      next[order[k]] = classes;
    }
    if (!order.empty()) ++classes;
    for (size_t i = 0; i < n; ++i) cls[i] = cls[i] < 0 ? -1 : next[i];
    if (static_cast<size_t>(classes) == num_classes) break;
    num_classes = classes;
  }
}

// The quotient of `dfa` by the classes in scratch->cls, renumbered in BFS order from the start so
// the result is canonical.
Dfa CanonicalQuotient(const FlatDfa& dfa, MinimizeScratch* scratch) {
  MinimizeScratch& m = *scratch;
  const std::vector<int32_t>& cls = m.cls;
  Dfa out;
  if (cls[0] < 0) return EmptyLanguageDfa();  // the rule's language is empty
  int32_t num_classes = 0;
  for (int32_t c : cls) num_classes = std::max(num_classes, c + 1);
  std::vector<int32_t>& new_id = m.new_id;
  std::vector<int32_t>& representative = m.representative;
  new_id.assign(num_classes, -1);
  representative.clear();
  auto id_of = [&](int32_t state) {
    int32_t& id = new_id[cls[state]];
    if (id < 0) {
      id = static_cast<int32_t>(representative.size());
      representative.push_back(state);
    }
    return id;
  };
  id_of(0);
  // Loop heads are reached by the parser's redirect, not necessarily by an edge.
  std::vector<uint8_t> loop_alive;
  for (const CountedLoop& loop : dfa.loops) {
    bool alive = cls[loop.head] >= 0 && loop.gate >= 0 && cls[loop.gate] >= 0;
    loop_alive.push_back(alive);
    if (alive) id_of(loop.head);
  }
  out.nodes.reserve(num_classes);
  // Built in scratch arrays and copied once at their final size.
  std::vector<ByteEdge>& out_bytes = m.out_bytes;
  std::vector<RuleEdge>& out_rules = m.out_rules;
  out_bytes.clear();
  out_rules.clear();
  for (size_t k = 0; k < representative.size(); ++k) {
    const int32_t src = representative[k];
    Dfa::Node node;
    node.accepting = dfa.accepting[src];
    if (dfa.loop[src] >= 0 && loop_alive[dfa.loop[src]]) node.loop = dfa.loop[src];
    if (dfa.gate_loop[src] >= 0 && loop_alive[dfa.gate_loop[src]]) node.gate_loop = dfa.gate_loop[src];
    node.byte_begin = static_cast<int32_t>(out_bytes.size());
    node.rule_begin = static_cast<int32_t>(out_rules.size());
    for (const auto& e : dfa.BytesOf(src)) {
      if (cls[e.target] < 0) continue;
      int32_t t = id_of(e.target);
      if (static_cast<int32_t>(out_bytes.size()) > node.byte_begin && out_bytes.back().target == t &&
          out_bytes.back().hi + 1 == e.lo) {
        out_bytes.back().hi = e.hi;
      } else {
        out_bytes.push_back({e.lo, e.hi, t});
      }
    }
    for (const auto& e : dfa.RulesOf(src)) {
      if (cls[e.target] < 0) continue;
      out_rules.push_back({e.rule, id_of(e.target)});
    }
    node.byte_end = static_cast<int32_t>(out_bytes.size());
    node.rule_end = static_cast<int32_t>(out_rules.size());
    out.nodes.push_back(node);
  }
  out.byte_edges.assign(out_bytes.begin(), out_bytes.end());
  out.rule_edges.assign(out_rules.begin(), out_rules.end());
  for (size_t k = 0; k < dfa.loops.size(); ++k) {
    const CountedLoop& loop = dfa.loops[k];
    // A dead loop keeps its slot (nodes name loops by index) but is never entered.
    out.loops.push_back(loop_alive[k] ? CountedLoop{new_id[cls[loop.head]], new_id[cls[loop.gate]], loop.limit}
                                      : CountedLoop{-1, -1, loop.limit});
  }
  return out;
}

}  // namespace

// The minimal Dfa by the general path's `algorithm`, in working memory of its own (declared in
// dfa_minimisation_testing.h; the debug checks below compare the other paths with it).
Dfa MinimizeWith(const FlatDfa& dfa, MinimisationAlgorithm algorithm) {
  MinimizeScratch m;
  IndexIncomingEdges(dfa, &m);
  MarkLiveStates(dfa, &m);
  const int32_t num_initial = InitialPartition(dfa, &m);
  if (algorithm == MinimisationAlgorithm::kMoore) {
    RefineMoore(dfa, &m);
  } else {
    RefineHopcroft(num_initial, &m);
  }
  return CanonicalQuotient(dfa, &m);
}

namespace {

// Debug builds: the acyclic pass's result is the general path's (see RefineAcyclic).
[[maybe_unused]] void CheckAcyclicMinimisation(const FlatDfa& dfa, const Dfa& acyclic) {
  const MinimisationAlgorithm general = static_cast<size_t>(dfa.size()) <= kMaxMooreNodes
                                            ? MinimisationAlgorithm::kMoore
                                            : MinimisationAlgorithm::kHopcroft;
  if (!SameDfa(MinimizeWith(dfa, general), acyclic)) {
    ThrowInternalError(__FILE__, __LINE__, "the acyclic minimisation differs from Moore's rounds / Hopcroft's algorithm");
  }
}

// Debug builds: Hopcroft's result is Moore's, on machines small enough for Moore's rounds
// (one round per state on a long chain) to stay cheap.
constexpr int32_t kMaxCheckedHopcroftNodes = 512;
[[maybe_unused]] void CheckHopcroftMinimisation(const FlatDfa& dfa, const Dfa& hopcroft) {
  if (dfa.size() > kMaxCheckedHopcroftNodes) return;
  if (!SameDfa(MinimizeWith(dfa, MinimisationAlgorithm::kMoore), hopcroft)) {
    ThrowInternalError(__FILE__, __LINE__, "Hopcroft's minimisation differs from Moore's rounds");
  }
}

}  // namespace

bool SameDfa(const Dfa& a, const Dfa& b) {
  if (a.nodes.size() != b.nodes.size() || a.byte_edges.size() != b.byte_edges.size() ||
      a.rule_edges.size() != b.rule_edges.size() || a.loops.size() != b.loops.size()) {
    return false;
  }
  for (size_t i = 0; i < a.nodes.size(); ++i) {
    const Dfa::Node &x = a.nodes[i], &y = b.nodes[i];
    if (x.accepting != y.accepting || x.loop != y.loop || x.gate_loop != y.gate_loop || x.byte_begin != y.byte_begin ||
        x.byte_end != y.byte_end || x.rule_begin != y.rule_begin || x.rule_end != y.rule_end) {
      return false;
    }
  }
  for (size_t i = 0; i < a.byte_edges.size(); ++i) {
    const ByteEdge &x = a.byte_edges[i], &y = b.byte_edges[i];
    if (x.lo != y.lo || x.hi != y.hi || x.target != y.target) return false;
  }
  for (size_t i = 0; i < a.rule_edges.size(); ++i) {
    if (a.rule_edges[i].rule != b.rule_edges[i].rule || a.rule_edges[i].target != b.rule_edges[i].target) return false;
  }
  for (size_t i = 0; i < a.loops.size(); ++i) {
    const CountedLoop &x = a.loops[i], &y = b.loops[i];
    if (x.head != y.head || x.gate != y.gate || x.limit != y.limit) return false;
  }
  return true;
}


Dfa Minimize(const FlatDfa& dfa, MinimizeScratch* scratch) {
  MinimizeScratch own;
  MinimizeScratch& m = scratch ? *scratch : own;
  IndexIncomingEdges(dfa, &m);
  MarkLiveStates(dfa, &m);
  const int32_t num_initial = InitialPartition(dfa, &m);
  // Counted loops do not stop the one pass: the stored machine has no back edge (the
  // parser's redirect from a gate to its head is not an edge, grammar_fsm.h), and their
  // roles are part of the initial partition, which every algorithm here refines the same
  // way. A bounded string's chain of copies (json_char{0,N}, N folded) is the usual such
  // machine: thousands of states in a line, where Hopcroft's set-up dominated its build.
  if (RefineAcyclic(dfa, &m)) {
    Dfa minimal = CanonicalQuotient(dfa, &m);
    XG2_DCHECK_INVARIANTS(CheckAcyclicMinimisation(dfa, minimal));
    return minimal;
  }
  if (static_cast<size_t>(dfa.size()) <= kMaxMooreNodes) {
    RefineMoore(dfa, &m);
    return CanonicalQuotient(dfa, &m);
  }
  RefineHopcroft(num_initial, &m);
  Dfa minimal = CanonicalQuotient(dfa, &m);
  XG2_DCHECK_INVARIANTS(CheckHopcroftMinimisation(dfa, minimal));
  return minimal;
}

}  // namespace fsm_build
}  // namespace xg2
