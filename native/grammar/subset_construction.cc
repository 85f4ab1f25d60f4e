// Subset construction: SubsetConstruction turns one NFA into a FlatDfa (see the header).
#include "grammar/subset_construction.h"

#include <algorithm>
#include <climits>
#include <cstddef>

#include "support/cancellation.h"
#include "support/dcheck.h"
#include "support/error.h"

namespace xg2 {
namespace fsm_build {
namespace {

// The node budget counts DFA states, not the NFA node set each one is keyed by: a rule whose
// states hold thousands of NFA nodes each (overlapping UTF-8 classes under nested loops) could
// exhaust memory long before the budget. The sets of one construction hold at most this many
// node ids in all (128 MiB); the largest seen on JSONSchemaBench hold well under 1% of it.
constexpr size_t kMaxSubsetSetEntries = size_t{1} << 25;

// SubsetScratch::edge_kinds: what kinds of edge leave an NFA node.
constexpr uint8_t kReadsInput = 1;  // a byte or rule edge
constexpr uint8_t kHasEpsilon = 2;

// Sorts [first, last) by `less`: insertion sort for the short arrays that most states give
// (closures and edge lists of one to a few entries), where std::sort's set-up costs more than
// the sorting; std::sort above kShortSort. Not stable; callers sort totally ordered values or
// do not depend on the order of equal ones.
constexpr ptrdiff_t kShortSort = 16;
template <typename T, typename Less>
void SortShort(T* first, T* last, Less less) {
  if (last - first > kShortSort) {
    std::sort(first, last, less);
    return;
  }
  for (T* next = first + 1; next < last; ++next) {
    T value = *next;
    T* hole = next;
    for (; hole != first && less(value, hole[-1]); --hole) *hole = hole[-1];
    *hole = value;
  }
}
template <typename T>
void SortShort(std::vector<T>* values) {
  if (values->size() < 2) return;  // the usual case, decided without a call
  SortShort(values->data(), values->data() + values->size(), [](const T& a, const T& b) { return a < b; });
}

class SubsetConstruction {
 public:
  // `stop_at_budget`: running out of `budget` stops the construction early (exhausted()
  // then says so, and the result is incomplete) instead of throwing ResourceLimitError.
  // `max_states`: making more states than this stops it early too (whatever the budget), and
  // so does passing kMaxSubsetSetEntries then.
  SubsetConstruction(const Nfa& nfa, int64_t* budget, SubsetScratch* scratch, bool stop_at_budget,
                     int64_t max_states = INT64_MAX)
      : nfa_(nfa),
        budget_(budget),
        stop_at_budget_(stop_at_budget),
        max_states_(max_states),
        s_(*scratch) {
    s_.member_of.clear();
    s_.gate_of.clear();
    s_.edge_kinds.resize(nfa.num_nodes);
    for (int32_t n = 0; n < nfa.num_nodes; ++n) {
      uint8_t kinds = 0;
      for (const NfaEdge& e : nfa.EdgesOf(n)) kinds |= e.kind == kEpsilon ? kHasEpsilon : kReadsInput;
      s_.edge_kinds[n] = kinds;
    }
    if (nfa.loops.empty()) return;
    s_.member_of.assign(nfa.num_nodes, -1);
    s_.gate_of.assign(nfa.num_nodes, -1);
    for (size_t k = 0; k < nfa.loops.size(); ++k) {
      for (int32_t n : nfa.loops[k].members) s_.member_of[n] = static_cast<int32_t>(k);
      s_.gate_of[nfa.loops[k].gate] = static_cast<int32_t>(k);
    }
  }

  // Throws CounterConflict (see the file comment) when a counted loop cannot be kept. The
  // result lives in the scratch memory until the next Run on it.
  const FlatDfa& Run() {
    FlatDfa& dfa = s_.dfa;
    dfa.Clear();
    s_.set_pool.clear();
    s_.set_begin.assign(1, 0);
    s_.set_hash.clear();
    // Most rules make fewer states than their NFA has nodes: a table of that size seldom grows.
    size_t slots = 64;
    while (slots < static_cast<size_t>(nfa_.num_nodes)) slots *= 2;
    s_.slots.assign(slots, -1);
    s_.single_state.assign(nfa_.num_nodes, -1);
    Intern(Closure(nfa_.start));
    std::vector<std::vector<int32_t>> heads;
    for (size_t k = 0; k < nfa_.loops.size(); ++k) {
      gate_closures_.push_back(Closure(nfa_.loops[k].gate));
      // The gate holds no counter: a redirected item continues with the count it carries.
      for (int32_t n : gate_closures_.back()) {
        if (s_.member_of[n] >= 0) throw CounterConflict{nfa_.loops[s_.member_of[n]].expr};
      }
      heads.push_back(Closure(nfa_.loops[k].head));
    }
    // Redirect targets exist even when no byte step reaches exactly h's state.
    std::vector<int32_t> head_ids;
    for (const auto& head : heads) head_ids.push_back(Intern(head));
    for (int32_t id = 0; id < dfa.size() && !exhausted_; ++id) {
      if ((id & 31) == 0) ThrowIfCancelled();  // per state it cost more than most expansions
      Expand(id);
    }
    // Without counted loops no state carries a counter or is a gate: set once, not per state.
    if (s_.member_of.empty()) {
      dfa.loop.assign(dfa.size(), -1);
      dfa.gate_loop.assign(dfa.size(), -1);
    }
    if (exhausted_) return dfa;
    for (size_t k = 0; k < nfa_.loops.size(); ++k) {
      dfa.loops.push_back({head_ids[k], Find(gate_closures_[k], HashSet(gate_closures_[k])), nfa_.loops[k].limit});
    }
    return dfa;
  }
  bool exhausted() const { return exhausted_; }

 private:
  // The epsilon closure of the seeds (a vector, a range or one seed), sorted and without
  // repeats, in a buffer reused by the next call (so a closure that names an existing DFA
  // state allocates nothing); the seeds must not be in that buffer. Without counted loops only the closure's important nodes are kept (the
  // Dragon Book's "important states": those with a byte or rule edge, and the accepting
  // node): a node with epsilon edges only adds nothing its successors in the closure do
  // not, so two closures with the same important nodes accept the same language and are one
  // DFA state. Thompson's construction makes many such nodes (choice joins, loop heads,
  // copy entries), and without this each distinct mix of them would be a state of its own
  // for minimisation to merge again. With counted loops the whole closure stays: a state's
  // counter roles are read from all of its nodes.
  const std::vector<int32_t>& Closure(int32_t seed) { return Closure(&seed, &seed + 1); }
  const std::vector<int32_t>& Closure(const std::vector<int32_t>& seeds) {
    return Closure(seeds.data(), seeds.data() + seeds.size());
  }
  const std::vector<int32_t>& Closure(const int32_t* first_seed, const int32_t* last_seed) {
    std::vector<int32_t>& set = s_.closure;
    const bool keep_all = !nfa_.loops.empty();
    // One seed without epsilon edges (a position inside a literal, say) is its own closure.
    if (last_seed - first_seed == 1 && !(s_.edge_kinds[*first_seed] & kHasEpsilon)) {
      set.clear();
      if (keep_all || Important(*first_seed)) set.push_back(*first_seed);
      return set;
    }
    std::vector<int32_t>& stack = s_.closure_stack;
    // Generation-stamped marks: clearing is O(1), so closures cost only what they visit.
    if (s_.mark.size() < static_cast<size_t>(nfa_.num_nodes)) s_.mark.assign(nfa_.num_nodes, 0);
    if (++s_.generation == 0) {
      std::fill(s_.mark.begin(), s_.mark.end(), 0);
      s_.generation = 1;
    }
    const uint32_t generation = s_.generation;
    // A seed named twice (two edges of the state into one node) is kept once: a set with
    // repeats would be a state of its own, and around a cycle the repeats could grow by one
    // per step, a new state each time, until the budget ran out.
    set.clear();
    stack.clear();
    for (const int32_t* seed = first_seed; seed != last_seed; ++seed) {
      const int32_t n = *seed;
      if (s_.mark[n] == generation) continue;
      s_.mark[n] = generation;
      if (keep_all || Important(n)) set.push_back(n);
      if (s_.edge_kinds[n] & kHasEpsilon) stack.push_back(n);
    }
    while (!stack.empty()) {
      int32_t n = stack.back();
      stack.pop_back();
      for (const NfaEdge& e : nfa_.EdgesOf(n)) {
        if (e.kind == kEpsilon && s_.mark[e.target] != generation) {
          s_.mark[e.target] = generation;
          if (keep_all || Important(e.target)) set.push_back(e.target);
          if (s_.edge_kinds[e.target] & kHasEpsilon) stack.push_back(e.target);
        }
      }
    }
    SortShort(&set);
    XG2_DCHECK(std::adjacent_find(set.begin(), set.end()) == set.end(), "a closure names an NFA node twice");
    return set;
  }

  // Whether NFA node `n` is one of the "important" nodes a closure keeps without counted
  // loops (see Closure).
  bool Important(int32_t n) const { return (s_.edge_kinds[n] & kReadsInput) || n == nfa_.accept; }

  static uint64_t HashSet(const std::vector<int32_t>& set) {
    uint64_t h = 0x9E3779B97F4A7C15ull ^ set.size();
    for (int32_t n : set) {
      h = (h ^ static_cast<uint32_t>(n)) * 0xFF51AFD7ED558CCDull;
      h ^= h >> 31;
    }
    return h;
  }

  // The DFA state whose NFA set is `set`, or -1.
  int32_t Find(const std::vector<int32_t>& set, uint64_t hash) const {
    const size_t mask = s_.slots.size() - 1;
    for (size_t i = hash & mask;; i = (i + 1) & mask) {
      const int32_t id = s_.slots[i];
      if (id < 0) return -1;
      if (s_.set_hash[id] != hash) continue;
      const uint32_t b = s_.set_begin[id], e = s_.set_begin[id + 1];
      if (e - b == set.size() && std::equal(set.begin(), set.end(), s_.set_pool.begin() + b)) return id;
    }
  }

  void Insert(int32_t id, uint64_t hash) {
    size_t mask = s_.slots.size() - 1;
    size_t i = hash & mask;
    while (s_.slots[i] >= 0) i = (i + 1) & mask;
    s_.slots[i] = id;
  }

  int32_t Intern(const std::vector<int32_t>& set) {
    const uint64_t hash = HashSet(set);
    const int32_t known = Find(set, hash);
    if (known >= 0) return known;
    if (exhausted_) return 0;
    if (s_.dfa.size() >= max_states_) {
      exhausted_ = true;
      return 0;
    }
    if (s_.set_pool.size() + set.size() > kMaxSubsetSetEntries) {
      if (stop_at_budget_ || max_states_ != INT64_MAX) {
        exhausted_ = true;
        return 0;
      }
      throw ResourceLimitError("grammar too large: determinisation exceeded its memory limit (the NFA node "
                               "sets of the DFA states of one rule)");
    }
    if (--*budget_ < 0) {
      if (stop_at_budget_) {
        exhausted_ = true;
        return 0;
      }
      throw ResourceLimitError("grammar too large: determinisation exceeded the node limit");
    }
    FlatDfa& dfa = s_.dfa;
    const int32_t id = dfa.size();
    dfa.accepting.push_back(std::binary_search(set.begin(), set.end(), nfa_.accept));
    if (!s_.member_of.empty()) {  // without loops, Run sets dfa.loop and dfa.gate_loop at the end
      int32_t loop = -1, gate_loop = -1;
      for (int32_t n : set) {
        int32_t k = s_.member_of[n];
        if (k >= 0) {
          if (loop >= 0 && loop != k) throw CounterConflict{nfa_.loops[k].expr};
          loop = k;
        }
        k = s_.gate_of[n];
        if (k >= 0) {
          if (set != gate_closures_[k]) throw CounterConflict{nfa_.loops[k].expr};
          gate_loop = k;
        }
      }
      dfa.loop.push_back(loop);
      dfa.gate_loop.push_back(gate_loop);
    }
    for (int32_t n : set) s_.set_pool.push_back(n);  // sets are short: no range insert
    s_.set_begin.push_back(static_cast<uint32_t>(s_.set_pool.size()));
    s_.set_hash.push_back(hash);
    // Keep the table at most half full.
    if (static_cast<size_t>(id + 1) * 2 > s_.slots.size()) {
      s_.slots.assign(s_.slots.size() * 2, -1);
      for (int32_t other = 0; other <= id; ++other) Insert(other, s_.set_hash[other]);
    } else {
      Insert(id, hash);
    }
    return id;
  }

  // Intern(Closure(n)) for one NFA node, remembered per node: most steps of a grammar's
  // machine lead to a single NFA node (a position inside a literal or a rule reference),
  // often from many states, and the closure and lookup are then made once per node. A state's
  // id never changes once it is made, so the answer is the one Intern would give again, and
  // states are still made in the same order.
  int32_t InternSingle(int32_t n) {
    int32_t& known = s_.single_state[n];
    if (known >= 0) return known;
    const int32_t id = Intern(Closure(n));
    if (!exhausted_) known = id;  // exhausted: a placeholder 0, not a state of n
    return id;
  }

  // From a state that carries a counter, a step may not enter a counted loop afresh: the
  // fresh entry would need count 0 while the item keeps its count.
  void CheckNoFreshEntry(const std::vector<int32_t>& set, bool carries_counter, int kind, int lo, int hi) {
    if (!carries_counter) return;
    std::vector<int32_t>& fresh = s_.fresh;
    fresh.clear();
    for (int32_t n : set) {
      if (s_.member_of[n] >= 0) continue;
      for (const NfaEdge& e : nfa_.EdgesOf(n)) {
        bool match = kind == kByteRange ? (e.kind == kByteRange && e.lo <= lo && hi <= e.hi) : e.kind == kind;
        if (match) fresh.push_back(e.target);
      }
    }
    if (fresh.empty()) return;
    for (int32_t n : Closure(fresh)) {
      if (s_.member_of[n] >= 0) throw CounterConflict{nfa_.loops[s_.member_of[n]].expr};
    }
  }

  // Appends the edges of state `id` (states are expanded in order, so each state's edges
  // are one contiguous run of the flat arrays).
  void Expand(int32_t id) {
    FlatDfa& dfa = s_.dfa;
    std::vector<int32_t>& set = s_.current;
    // No counted loop: no counter is carried, and AddRuleEdges does not read the set.
    if (s_.member_of.empty() && !s_.pieces_only && ExpandDisjointBytes(id)) {
      set.clear();
      AddRuleEdges(set, /*carries_counter=*/false);
      return;
    }
    // Intern appends to the set pool: work on a copy of this state's set.
    set.assign(s_.set_pool.begin() + s_.set_begin[id], s_.set_pool.begin() + s_.set_begin[id + 1]);
    const bool carries_counter = !s_.member_of.empty() && dfa.loop[id] >= 0;
    // Byte edges: cut [0, 255] at every range boundary, then gather targets per piece.
    std::vector<int>& cuts = s_.cuts;
    std::vector<std::pair<int32_t, int32_t>>& rule_targets = s_.rule_targets;
    std::vector<int32_t>& targets = s_.targets;
    std::vector<int32_t>& previous_targets = s_.previous_targets;
    cuts.clear();
    rule_targets.clear();
    previous_targets.clear();
    for (int32_t n : set) {
      for (const NfaEdge& e : nfa_.EdgesOf(n)) {
        if (e.kind == kByteRange) {
          cuts.push_back(e.lo);
          cuts.push_back(e.hi + 1);
        } else if (e.kind >= 0) {
          rule_targets.push_back({e.kind, e.target});
        }
      }
    }
    SortShort(&cuts);
    cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
    // Neighbouring pieces often step to the same NFA nodes (a character class cut by other
    // ranges); their closure and DFA state are then reused.
    const size_t first_byte_edge = dfa.byte_edges.size();
    int32_t previous_target = -1;
    // The targets of every piece in one pass over the edges (CSR over pieces; each piece's
    // targets keep the order of the edges): an edge covers the pieces from the one starting
    // at its lo up to the one ending at its hi, so a state with many ranges costs the sum of
    // its pieces' targets rather than pieces x edges.
    const size_t num_pieces = cuts.empty() ? 0 : cuts.size() - 1;
    std::vector<int32_t>& piece_begin = s_.piece_begin;
    std::vector<int32_t>& piece_targets = s_.piece_targets;
    piece_begin.assign(num_pieces + 1, 0);
    // Every edge's lo and hi + 1 is a cut: its index is looked up, not searched for.
    int32_t* piece_at = s_.piece_at;
    for (size_t c = 0; c < cuts.size(); ++c) piece_at[cuts[c]] = static_cast<int32_t>(c);
    auto piece_of = [piece_at](int boundary) { return static_cast<size_t>(piece_at[boundary]); };
    for (int pass = 0; pass < 2; ++pass) {
      for (int32_t n : set) {
        for (const NfaEdge& e : nfa_.EdgesOf(n)) {
          if (e.kind != kByteRange) continue;
          const size_t first = piece_of(e.lo), last = piece_of(e.hi + 1);
          for (size_t c = first; c < last; ++c) {
            if (pass == 0) {
              ++piece_begin[c + 1];
            } else {
              piece_targets[s_.piece_fill[c]++] = e.target;
            }
          }
        }
      }
      if (pass == 0) {
        for (size_t c = 0; c < num_pieces; ++c) piece_begin[c + 1] += piece_begin[c];
        piece_targets.resize(piece_begin[num_pieces]);
        s_.piece_fill.assign(piece_begin.begin(), piece_begin.end() - 1);
      }
    }
    for (size_t c = 0; c < num_pieces; ++c) {
      int lo = cuts[c], hi = cuts[c + 1] - 1;
      if (piece_begin[c] == piece_begin[c + 1]) continue;
      targets.assign(piece_targets.begin() + piece_begin[c], piece_targets.begin() + piece_begin[c + 1]);
      CheckNoFreshEntry(set, carries_counter, kByteRange, lo, hi);
      int32_t target = previous_target;
      if (previous_target < 0 || targets != previous_targets) {
        target = targets.size() == 1 ? InternSingle(targets[0]) : Intern(Closure(targets));
        previous_targets.swap(targets);
        previous_target = target;
      }
      AppendByteEdge(first_byte_edge, static_cast<uint8_t>(lo), static_cast<uint8_t>(hi), target);
    }
    AddRuleEdges(set, carries_counter);
  }

  // A state whose byte edges do not overlap, over all of its NFA nodes (most states of a
  // JSON grammar: a position inside a literal, before a rule reference, or between the
  // choices of a key): each byte edge is a DFA edge of its own, to the closure of its target,
  // so the cuts and pieces of Expand are not needed. Epsilon edges are skipped, as Expand
  // skips them (the set is a closure already). Appends
  // the state's byte edges and collects its rule edges in s_.rule_targets, exactly as the
  // general path would (same edges, same order of new states: with disjoint edges every
  // piece is one edge); false, adding no edge or state, where two byte edges overlap. Only
  // without counted loops (the general path checks each piece for fresh loop entries).
  // Every edge is read before the first Intern, which may grow the set pool.
  bool ExpandDisjointBytes(int32_t id) {
    std::vector<NfaEdge>& bytes = s_.disjoint_bytes;
    std::vector<std::pair<int32_t, int32_t>>& rule_targets = s_.rule_targets;
    bytes.clear();
    rule_targets.clear();
    for (uint32_t k = s_.set_begin[id]; k < s_.set_begin[id + 1]; ++k) {
      for (const NfaEdge& e : nfa_.EdgesOf(s_.set_pool[k])) {
        if (e.kind == kByteRange) {
          bytes.push_back(e);
        } else if (e.kind >= 0) {
          rule_targets.push_back({e.kind, e.target});
        }
      }
    }
    if (bytes.size() > 1) {
      SortShort(bytes.data(), bytes.data() + bytes.size(), [](const NfaEdge& x, const NfaEdge& y) { return x.lo < y.lo; });
      for (size_t k = 1; k < bytes.size(); ++k) {
        if (bytes[k].lo <= bytes[k - 1].hi) return false;
      }
    }
    const size_t first_byte_edge = s_.dfa.byte_edges.size();
    int32_t previous_nfa_target = -1, previous_target = -1;
    for (const NfaEdge& e : bytes) {
      const int32_t target = e.target == previous_nfa_target ? previous_target : InternSingle(e.target);
      previous_nfa_target = e.target;
      previous_target = target;
      AppendByteEdge(first_byte_edge, e.lo, e.hi, target);
    }
    return true;
  }

  // Appends the byte edge lo..hi -> target to the state whose edges start at
  // `first_byte_edge`, extending that state's last edge where it ends at lo - 1 on the
  // same target (edges are appended in increasing lo).
  void AppendByteEdge(size_t first_byte_edge, uint8_t lo, uint8_t hi, int32_t target) {
    std::vector<ByteEdge>& byte_edges = s_.dfa.byte_edges;
    if (byte_edges.size() > first_byte_edge && byte_edges.back().target == target && byte_edges.back().hi + 1 == lo) {
      byte_edges.back().hi = hi;
    } else {
      byte_edges.push_back({lo, hi, target});
    }
  }

  // Ends the expansion of a state whose byte edges are in place: its rule edges, from the
  // (rule, NFA target) pairs in s_.rule_targets.
  void AddRuleEdges(const std::vector<int32_t>& set, bool carries_counter) {
    FlatDfa& dfa = s_.dfa;
    std::vector<std::pair<int32_t, int32_t>>& rule_targets = s_.rule_targets;
    std::vector<int32_t>& targets = s_.targets;
    dfa.byte_begin.push_back(static_cast<int32_t>(dfa.byte_edges.size()));
    if (rule_targets.empty()) {  // most states
      dfa.rule_begin.push_back(static_cast<int32_t>(dfa.rule_edges.size()));
      return;
    }
    SortShort(&rule_targets);
    for (size_t k = 0; k < rule_targets.size();) {
      const int32_t rule = rule_targets[k].first;
      size_t end = k + 1;
      while (end < rule_targets.size() && rule_targets[end].first == rule) ++end;
      CheckNoFreshEntry(set, carries_counter, rule, 0, 0);
      int32_t target;
      if (end == k + 1) {  // one target: no copy of it
        target = InternSingle(rule_targets[k].second);
      } else {
        targets.clear();
        for (size_t t = k; t < end; ++t) targets.push_back(rule_targets[t].second);
        target = Intern(Closure(targets));
      }
      dfa.rule_edges.push_back({rule, target});
      k = end;
    }
    dfa.rule_begin.push_back(static_cast<int32_t>(dfa.rule_edges.size()));
  }

  const Nfa& nfa_;
  int64_t* budget_;
  bool stop_at_budget_;
  int64_t max_states_;
  bool exhausted_ = false;
  SubsetScratch& s_;
  std::vector<std::vector<int32_t>> gate_closures_;
};

// Debug builds: the machine `dfa` made from `nfa` with the disjoint-edge shortcut is the
// one the general path makes, given the budget the construction started from.
[[maybe_unused]] void CheckDisjointShortcut(const Nfa& nfa, int64_t budget, bool stop_at_budget, int64_t max_states,
                                           const FlatDfa& dfa) {
  SubsetScratch general;
  general.pieces_only = true;
  const FlatDfa* reference = Determinise(nfa, &budget, &general, stop_at_budget, max_states);
  if (!reference || !SameFlatDfa(*reference, dfa)) {
    ThrowInternalError(__FILE__, __LINE__, "the disjoint-edge shortcut differs from the general subset construction");
  }
}

}  // namespace

bool SameFlatDfa(const FlatDfa& a, const FlatDfa& b) {
  auto same_bytes = [](const ByteEdge& x, const ByteEdge& y) {
    return x.lo == y.lo && x.hi == y.hi && x.target == y.target;
  };
  auto same_rules = [](const RuleEdge& x, const RuleEdge& y) { return x.rule == y.rule && x.target == y.target; };
  auto same_loops = [](const CountedLoop& x, const CountedLoop& y) {
    return x.head == y.head && x.gate == y.gate && x.limit == y.limit;
  };
  return a.accepting == b.accepting && a.loop == b.loop && a.gate_loop == b.gate_loop &&
         a.byte_begin == b.byte_begin && a.rule_begin == b.rule_begin &&
         std::equal(a.byte_edges.begin(), a.byte_edges.end(), b.byte_edges.begin(), b.byte_edges.end(), same_bytes) &&
         std::equal(a.rule_edges.begin(), a.rule_edges.end(), b.rule_edges.begin(), b.rule_edges.end(), same_rules) &&
         std::equal(a.loops.begin(), a.loops.end(), b.loops.begin(), b.loops.end(), same_loops);
}

const FlatDfa* Determinise(const Nfa& nfa, int64_t* budget, SubsetScratch* scratch, bool stop_at_budget,
                           int64_t max_states) {
  [[maybe_unused]] const int64_t starting_budget = *budget;
  SubsetConstruction subsets(nfa, budget, scratch, stop_at_budget, max_states);
  const FlatDfa& dfa = subsets.Run();
  if (subsets.exhausted()) return nullptr;
  XG2_DCHECK_INVARIANTS(CheckFlatDfaInvariants(dfa, "subset construction"));
  if (!scratch->pieces_only && nfa.loops.empty()) {
    XG2_DCHECK_INVARIANTS(CheckDisjointShortcut(nfa, starting_budget, stop_at_budget, max_states, dfa));
  }
  return &dfa;
}

}  // namespace fsm_build
}  // namespace xg2
