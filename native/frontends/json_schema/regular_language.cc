// Code-point automata: Thompson construction from the grammar AST (built by the regex
// frontend or lowered from fragments, never parsed from text), subset construction over
// code-point intervals, product, minimisation (one pass when acyclic, else Hopcroft), and
// output as fragments (one expression, or right-linear rules).
#include "frontends/json_schema/regular_language.h"

#include <algorithm>
#include <cstdio>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string_view>
#include <tuple>
#include <unordered_map>

#include "frontends/json_schema/right_linear_rules.h"
#include "frontends/regex/leading_lookaheads.h"
#include "frontends/regex/regex_converter.h"
#include "grammar/automaton_literal.h"
#include "grammar/grammar_ast.h"
#include "grammar/grammar_builder.h"
#include "support/cancellation.h"
#include "support/dcheck.h"
#include "support/error.h"
#include "support/graph.h"
#include "support/partition_refinement.h"
#include "support/sequence_interner.h"
#include "support/utf8.h"

namespace xg2 {

namespace {

constexpr int kMaxInlineDepth = 64;
constexpr size_t kMaxMinimizedStates = 600;
// Product looks its state pairs up in a table of every pair up to this many pairs (a table of
// int32_t ids, filled once per product), and interns them beyond.
constexpr size_t kMaxDenseProductPairs = size_t{1} << 14;

struct NfaEdge {
  uint32_t lo, hi;  // lo > hi: an epsilon edge
  int32_t target;
};

class NfaBuilder {
 public:
  explicit NfaBuilder(const GrammarAst& ast) : ast_(ast) {}

  std::vector<std::vector<NfaEdge>> nodes;

  int32_t NewNode() {
    ThrowIfCancelled();
    if (nodes.size() >= kMaxAutomatonStates) {
      throw ResourceLimitError("regular language too large (more than " +
                               std::to_string(kMaxAutomatonStates) + " automaton states)");
    }
    nodes.emplace_back();
    return static_cast<int32_t>(nodes.size() - 1);
  }
  void Epsilon(int32_t from, int32_t to) { nodes[from].push_back({1, 0, to}); }

  // Adds nodes so that the language from `from` to the returned node is `expr`.
  int32_t Lower(ExprId expr, int32_t from, int depth) {
    const ExprNode& node = ast_.node(expr);
    switch (node.kind) {
      case ExprKind::kEmpty:
        return from;
      case ExprKind::kBytes: {
        int32_t at = from;
        for (char32_t cp : DecodeUtf8ToU32(node.bytes)) {
          int32_t next = NewNode();
          nodes[at].push_back({static_cast<uint32_t>(cp), static_cast<uint32_t>(cp), next});
          at = next;
        }
        return at;
      }
      case ExprKind::kCharClass: {
        int32_t to = NewNode();
        for (const CodepointRange& r : node.ranges) nodes[from].push_back({r.first, r.last, to});
        return to;
      }
      case ExprKind::kRuleRef: {
        if (depth > kMaxInlineDepth) {
          throw GrammarSyntaxError("rule '" + ast_.rules[node.rule_id].name +
                                   "' is recursive: not a regular language");
        }
        return Lower(ast_.rules[node.rule_id].body, from, depth + 1);
      }
      case ExprKind::kSequence: {
        int32_t at = from;
        for (ExprId child : node.children) at = Lower(child, at, depth);
        return at;
      }
      case ExprKind::kChoice: {
        int32_t end = NewNode();
        for (ExprId child : node.children) Epsilon(Fresh(child, from, depth), end);
        return end;
      }
      case ExprKind::kRepeat: {
        ExprId child = node.children[0];
        int32_t at = from;
        for (int32_t i = 0; i < node.min_repeat; ++i) at = Fresh(child, at, depth);
        if (node.max_repeat < 0) {
          int32_t loop = NewNode();
          Epsilon(at, loop);
          Epsilon(Fresh(child, loop, depth), loop);
          return loop;
        }
        int32_t end = NewNode();
        Epsilon(at, end);
        for (int32_t i = node.min_repeat; i < node.max_repeat; ++i) {
          at = Fresh(child, at, depth);
          Epsilon(at, end);
        }
        return end;
      }
      case ExprKind::kAutomaton:
        return CopyAutomaton(*ast_.automata[node.automaton], from);
      case ExprKind::kTagDispatch:
        break;
    }
    throw GrammarSyntaxError("a TagDispatch is not a regular expression");
  }

 private:
  // A copy of the literal's code-point DFA from `from`; returns the node its accepting states
  // lead to.
  int32_t CopyAutomaton(const AutomatonLiteral& literal, int32_t from) {
    std::vector<int32_t> map(literal.num_states());
    for (int32_t& state : map) state = NewNode();
    const int32_t end = NewNode();
    Epsilon(from, map[0]);
    for (int32_t s = 0; s < literal.num_states(); ++s) {
      for (int32_t k = literal.edge_begin[s]; k < literal.edge_begin[s + 1]; ++k) {
        const AutomatonLiteral::CodepointEdge& e = literal.edges[k];
        nodes[map[s]].push_back({e.lo, e.hi, map[e.target]});
      }
      if (literal.accepting[s] != 0) Epsilon(map[s], end);
    }
    return end;
  }

  // `expr` lowered from a fresh node reached from `from` by an epsilon edge, so that loops
  // inside it cannot mix with other paths leaving `from`.
  int32_t Fresh(ExprId expr, int32_t from, int depth) {
    int32_t start = NewNode();
    Epsilon(from, start);
    return Lower(expr, start, depth);
  }

  const GrammarAst& ast_;
};

// Subset construction. Invariant: DFA state k stands for the epsilon closure interned as
// sequence k of sets_ (sorted), numbered in the order the states are first reached (edges in
// code-point order).
class SubsetConstruction {
 public:
  explicit SubsetConstruction(const std::vector<std::vector<NfaEdge>>& nfa)
      : nfa_(nfa), mark_(nfa.size(), 0) {}

  CodepointDfa Run(int32_t start, int32_t accept) {
    accept_ = accept;
    IdOf({start});
    std::vector<NfaEdge> edges;
    std::vector<uint32_t> cuts;
    std::vector<const NfaEdge*> active;
    std::vector<int32_t> targets;
    std::vector<CodepointDfa::Edge> out;
    for (int32_t k = 0; static_cast<size_t>(k) < sets_.size(); ++k) {
      ThrowIfCancelled();
      edges.clear();
      cuts.clear();
      // The set's pointers are read before IdOf below can grow the pool.
      for (const int32_t* node = sets_.begin(k); node != sets_.end(k); ++node) {
        for (const NfaEdge& e : nfa_[*node]) {
          if (e.lo > e.hi) continue;
          edges.push_back(e);
          cuts.push_back(e.lo);
          cuts.push_back(e.hi + 1);
        }
      }
      std::sort(cuts.begin(), cuts.end());
      cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
      // Only which edges cover an interval matters below, so ties may come in any order.
      std::sort(edges.begin(), edges.end(), [](const NfaEdge& x, const NfaEdge& y) { return x.lo < y.lo; });
      // Sweep over the intervals between cuts: every edge bound is a cut, so an edge that
      // has started and not ended covers the whole interval.
      out.clear();
      active.clear();
      size_t next_edge = 0;
      for (size_t i = 0; i + 1 < cuts.size(); ++i) {
        uint32_t lo = cuts[i], hi = cuts[i + 1] - 1;
        while (next_edge < edges.size() && edges[next_edge].lo <= lo) active.push_back(&edges[next_edge++]);
        active.erase(std::remove_if(active.begin(), active.end(), [&](const NfaEdge* e) { return e->hi < lo; }),
                     active.end());
        if (active.empty()) continue;
        targets.clear();
        for (const NfaEdge* e : active) targets.push_back(e->target);
        std::sort(targets.begin(), targets.end());
        targets.erase(std::unique(targets.begin(), targets.end()), targets.end());
        int32_t target = IdOf(targets);
        if (!out.empty() && out.back().target == target && out.back().hi + 1 == lo) {
          out.back().hi = hi;
        } else {
          out.push_back({lo, hi, target});
        }
      }
      dfa_.states[k].edges.assign(out.begin(), out.end());
    }
    return std::move(dfa_);
  }

 private:
  // The epsilon closure of `seeds`, sorted.
  void Close(const std::vector<int32_t>& seeds, std::vector<int32_t>* closure) {
    if (++generation_ == 0) {
      std::fill(mark_.begin(), mark_.end(), 0);
      generation_ = 1;
    }
    closure->clear();
    stack_.clear();
    for (int32_t s : seeds) {
      if (mark_[s] != generation_) {
        mark_[s] = generation_;
        closure->push_back(s);
        stack_.push_back(s);
      }
    }
    while (!stack_.empty()) {
      int32_t s = stack_.back();
      stack_.pop_back();
      for (const NfaEdge& e : nfa_[s]) {
        if (e.lo > e.hi && mark_[e.target] != generation_) {
          mark_[e.target] = generation_;
          closure->push_back(e.target);
          stack_.push_back(e.target);
        }
      }
    }
    std::sort(closure->begin(), closure->end());
  }

  // Many intervals of many states reach the same target set; its closure is computed (and
  // sorted, and interned) once, and later lookups of the same seeds read the state found then.
  int32_t IdOf(const std::vector<int32_t>& seeds) {
    const size_t known_seeds = seed_sets_.size();
    const int32_t seed_id = seed_sets_.Intern(seeds);
    if (static_cast<size_t>(seed_id) < known_seeds) return state_of_seeds_[seed_id];
    const int32_t id = IdOfClosure(seeds);
    state_of_seeds_.push_back(id);
    XG2_DCHECK(state_of_seeds_.size() == seed_sets_.size(), "one state per interned seed set");
    return id;
  }

  int32_t IdOfClosure(const std::vector<int32_t>& seeds) {
    Close(seeds, &closure_);
    const size_t known = sets_.size();
    const int32_t id = sets_.Intern(closure_);
    if (static_cast<size_t>(id) < known) return id;
    if (known >= kMaxAutomatonStates) {
      throw ResourceLimitError("regular language too large (more than " +
                               std::to_string(kMaxAutomatonStates) + " automaton states)");
    }
    dfa_.states.emplace_back();
    dfa_.states.back().accepting = std::binary_search(closure_.begin(), closure_.end(), accept_);
    return id;
  }

  const std::vector<std::vector<NfaEdge>>& nfa_;
  std::vector<uint32_t> mark_;  // mark_[s] == generation_: s is in the closure being built
  uint32_t generation_ = 0;
  std::vector<int32_t> stack_;
  std::vector<int32_t> closure_;
  SequenceInterner sets_;  // the DFA states' NFA node sets
  SequenceInterner seed_sets_;           // target sets IdOf was asked for (sorted)
  std::vector<int32_t> state_of_seeds_;  // per seed set: the DFA state of its closure
  CodepointDfa dfa_;
  int32_t accept_ = -1;
};

CodepointDfa Determinize(const std::vector<std::vector<NfaEdge>>& nfa, int32_t start,
                         int32_t accept) {
  return SubsetConstruction(nfa).Run(start, accept);
}

}  // namespace

std::string EbnfClassMember(uint32_t cp) {
  std::string out;
  AppendEbnfClassMember(cp, &out);
  return out;
}

std::u32string DecodeUtf8ToU32(std::string_view text) {
  std::u32string out;
  for (size_t i = 0; i < text.size();) {
    unsigned char lead = static_cast<unsigned char>(text[i]);
    int length = lead < 0x80 ? 1 : lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4;
    uint32_t cp = length == 1 ? lead : lead & (0x7F >> length);
    for (int k = 1; k < length && i + k < text.size(); ++k) {
      cp = (cp << 6) | (static_cast<unsigned char>(text[i + k]) & 0x3F);
    }
    out.push_back(static_cast<char32_t>(cp));
    i += static_cast<size_t>(length);
  }
  return out;
}

bool CodepointDfa::Accepts(std::u32string_view text) const {
  int32_t at = 0;
  for (char32_t c : text) {
    int32_t next = -1;
    for (const Edge& e : states[at].edges) {
      if (e.lo <= c && c <= e.hi) next = e.target;
    }
    if (next < 0) return false;
    at = next;
  }
  return states[at].accepting;
}

bool CodepointDfa::Empty() const {
  std::vector<uint8_t> seen(states.size(), 0);
  std::vector<int32_t> stack = {0};
  seen[0] = 1;
  while (!stack.empty()) {
    int32_t s = stack.back();
    stack.pop_back();
    if (states[s].accepting) return false;
    for (const Edge& e : states[s].edges) {
      if (!seen[e.target]) {
        seen[e.target] = 1;
        stack.push_back(e.target);
      }
    }
  }
  return true;
}

CodepointDfa DfaFromGrammar(const GrammarAst& grammar) {
  NfaBuilder builder(grammar);
  int32_t start = builder.NewNode();
  int32_t accept = builder.Lower(grammar.rules[grammar.root_rule].body, start, 0);
  return Minimized(Determinize(builder.nodes, start, accept));
}

CodepointDfa DfaFromFragment(const Fragment& fragment) { return DfaFromRules({}, fragment); }

CodepointDfa DfaFromRules(const std::vector<std::pair<std::string, Fragment>>& definitions, const Fragment& root) {
  RuleSet rules(std::numeric_limits<size_t>::max());
  for (const auto& [name, body] : definitions) rules.ReserveNamed(name);
  for (const auto& [name, body] : definitions) rules.Define(name, body);
  static const std::string kRoot = "xg2_language_root";
  if (root.never()) {
    CodepointDfa none;  // a lone non-accepting start
    none.states.emplace_back();
    return none;
  }
  rules.DefineNamed(kRoot, root);
  return DfaFromGrammar(rules.Lower(kRoot));
}

namespace {

// DfaToFragment for `dfa` as Minimized (or Product, or Repeated) returned it: minimising
// again would give the same automaton (Minimized renumbers states canonically, so it is
// idempotent), at the cost of a second refinement.
Fragment WrittenMinimalDfa(const CodepointDfa& dfa, RuleSet* rules, const std::string& hint,
                           size_t max_states = 2000);

// RegexToGrammar's nodes for `pattern` as a grammar whose root rule is the pattern.
std::shared_ptr<const GrammarAst> RegexGrammar(std::string_view pattern, const RegexOptions& options,
                                               std::string* ebnf) {
  GrammarBuilder builder;
  const ExprId body = RegexToGrammar(pattern, options, &builder, ebnf);
  const RuleId root = builder.AddRule("xg2_regex");
  builder.DefineRule(root, body);
  return std::make_shared<const GrammarAst>(builder.Finish(root));
}

}  // namespace

CodepointDfa DfaFromRegex(std::string_view pattern, const RegexOptions& options) {
  if (options.search) {
    if (std::optional<LeadingLookaheads> split = SplitLeadingLookaheads(pattern)) {
      // leading_lookaheads.h: L(^R), then each assertion's L(^B) intersected or subtracted.
      CodepointDfa language = DfaFromRegex(split->rest, options);
      for (const LeadingLookaheads::Assertion& assertion : split->assertions) {
        language = Product(language, DfaFromRegex(assertion.prefix_pattern, options),
                           assertion.negative ? ProductKind::kDifference : ProductKind::kIntersection);
      }
      return language;
    }
  }
  return DfaFromGrammar(*RegexGrammar(pattern, options, nullptr));
}

bool NeedsAutomaton(std::string_view pattern, const RegexOptions& options) {
  return options.search && SplitLeadingLookaheads(pattern).has_value();
}

Fragment PatternFragment(std::string_view pattern, const RegexOptions& options, RuleSet* rules,
                         const std::string& hint) {
  if (!NeedsAutomaton(pattern, options)) return RegexFragment(pattern, options);
  return WrittenMinimalDfa(DfaFromRegex(pattern, options), rules, hint);
}

Fragment RegexFragment(std::string_view pattern, const RegexOptions& options) {
  std::string ebnf;
  std::shared_ptr<const GrammarAst> grammar = RegexGrammar(pattern, options, &ebnf);
  return Fragment::Built("(" + ebnf + ")", std::move(grammar));
}

CodepointDfa Product(const CodepointDfa& a, const CodepointDfa& b, ProductKind kind) {
  CodepointDfa out;
  // (state of a, state of b or -1) -> product state, numbered in the order first reached:
  // looked up in a table of every pair when that is small (most products: a name language
  // against one pattern), else interned.
  const size_t b_slots = b.states.size() + 1;
  const bool dense = a.states.size() * b_slots <= kMaxDenseProductPairs;
  std::vector<int32_t> dense_ids(dense ? a.states.size() * b_slots : 0, -1);
  SequenceInterner pairs;
  std::vector<std::pair<int32_t, int32_t>> pair_of;  // product state -> (x, y)
  auto id_of = [&](int32_t x, int32_t y) {
    const int32_t known = static_cast<int32_t>(pair_of.size());
    int32_t id;
    if (dense) {
      int32_t& slot = dense_ids[static_cast<size_t>(x) * b_slots + static_cast<size_t>(y + 1)];
      if (slot < 0) slot = known;
      id = slot;
    } else {
      const int32_t pair[2] = {x, y};
      id = pairs.Intern(pair, 2);
    }
    if (id < known) return id;
    if (pair_of.size() >= kMaxAutomatonStates) {
      throw ResourceLimitError("regular language too large (more than " +
                               std::to_string(kMaxAutomatonStates) + " automaton states)");
    }
    pair_of.emplace_back(x, y);
    bool in_b = y >= 0 && b.states[y].accepting;
    out.states.emplace_back();
    out.states.back().accepting = a.states[x].accepting && (kind == ProductKind::kIntersection ? in_b : !in_b);
    return id;
  };
  id_of(0, 0);
  std::vector<CodepointDfa::Edge> edges;
  for (int32_t k = 0; static_cast<size_t>(k) < pair_of.size(); ++k) {
    ThrowIfCancelled();
    const int32_t x = pair_of[k].first, y = pair_of[k].second;
    edges.clear();
    for (const CodepointDfa::Edge& ea : a.states[x].edges) {
      uint32_t next = ea.lo;  // the part of ea below `next` is handled
      if (y >= 0) {
        for (const CodepointDfa::Edge& eb : b.states[y].edges) {
          if (eb.hi < ea.lo || eb.lo > ea.hi) continue;
          uint32_t lo = std::max(ea.lo, eb.lo), hi = std::min(ea.hi, eb.hi);
          if (kind == ProductKind::kDifference && next < lo) {
            edges.push_back({next, lo - 1, id_of(ea.target, -1)});
          }
          edges.push_back({lo, hi, id_of(ea.target, eb.target)});
          next = hi + 1;
        }
      }
      if (kind == ProductKind::kDifference && next <= ea.hi) {
        edges.push_back({next, ea.hi, id_of(ea.target, -1)});
      }
    }
    out.states[k].edges.assign(edges.begin(), edges.end());
  }
  return Minimized(out);
}

CodepointDfa Repeated(const CodepointDfa& unit, long long min_count, long long max_count) {
  // Copies of `unit` (prefix-free: its accepting states have no edges) per count; an edge
  // into an accepting state of copy c goes to the start of copy c + 1 instead.
  long long copies = (max_count < 0 ? min_count : max_count) + 1;
  size_t per_copy = unit.states.size();
  if (static_cast<size_t>(copies) * per_copy > kMaxAutomatonStates) {
    throw ResourceLimitError("regular language too large (more than " +
                             std::to_string(kMaxAutomatonStates) + " automaton states)");
  }
  CodepointDfa out;
  out.states.resize(static_cast<size_t>(copies) * per_copy);
  for (long long c = 0; c < copies; ++c) {
    for (size_t s = 0; s < per_copy; ++s) {
      CodepointDfa::State& state = out.states[static_cast<size_t>(c) * per_copy + s];
      if (s == 0) state.accepting = c >= min_count;
      for (const CodepointDfa::Edge& e : unit.states[s].edges) {
        long long copy = c;
        size_t target = static_cast<size_t>(e.target);
        if (unit.states[target].accepting) {
          // One more unit done; beyond max there is no state, and an unbounded repetition
          // loops on the last copy.
          if (c + 1 < copies) {
            copy = c + 1;
          } else if (max_count >= 0) {
            continue;
          }
          target = 0;
        }
        state.edges.push_back({e.lo, e.hi, static_cast<int32_t>(static_cast<size_t>(copy) * per_copy + target)});
      }
    }
  }
  return Minimized(out);
}

namespace {

// Appends state i's signature under `cls` to `out`: its class, then each edge to a
// live state as (lo, hi, target class), adjacent intervals into one class merged.
void AppendSignature(const CodepointDfa& dfa, size_t i, const std::vector<int32_t>& cls, std::vector<int64_t>* out) {
  std::vector<int64_t>& buffer = *out;
  const size_t start = buffer.size();
  buffer.push_back(cls[i]);
  for (const auto& e : dfa.states[i].edges) {
    if (cls[e.target] < 0) continue;
    const size_t size = buffer.size() - start;
    if (size > 1 && buffer.back() == cls[e.target] && buffer[buffer.size() - 2] + 1 == e.lo) {
      buffer[buffer.size() - 2] = e.hi;  // adjacent interval to the same class
      continue;
    }
    buffer.push_back(e.lo);
    buffer.push_back(e.hi);
    buffer.push_back(cls[e.target]);
  }
}

struct SignatureHash {
  size_t operator()(const std::vector<int64_t>& words) const {
    uint64_t h = 0x9E3779B97F4A7C15ull;
    for (int64_t w : words) {
      h = (h ^ static_cast<uint64_t>(w)) * 0xFF51AFD7ED558CCDull;
      h ^= h >> 29;
    }
    return static_cast<size_t>(h);
  }
};

// The coarsest partition (Moore's fixpoint) in one pass where the live states reachable from the start
// form no cycle (Revuz): visited so that every state comes after the states it steps to, a
// state's class is that of its signature (its acceptance for the class, then its edges),
// which names only classes already final. Bounded lengths make exactly such automata (a
// pattern under maxLength), whose chains cost Moore one round per state. On input `cls`
// holds each live state's acceptance (1 / 0) and -1 for dead states; on success it holds
// the classes (-1 for states the start cannot reach). False (cls untouched) on a cycle.
bool AcyclicClasses(const CodepointDfa& dfa, std::vector<int32_t>* cls_inout) {
  const std::vector<int32_t>& initial = *cls_inout;
  const size_t n = dfa.states.size();
  std::vector<uint8_t> mark(n, 0);  // 1: on the DFS path, 2: done
  std::vector<int32_t> post_order;
  std::vector<std::pair<int32_t, size_t>> stack{{0, 0}};
  mark[0] = 1;
  while (!stack.empty()) {
    auto& [state, next_edge] = stack.back();
    const auto& edges = dfa.states[state].edges;
    if (next_edge < edges.size()) {
      const int32_t target = edges[next_edge++].target;
      if (initial[target] < 0) continue;
      if (mark[target] == 1) return false;
      if (mark[target] == 0) {
        mark[target] = 1;
        stack.emplace_back(target, 0);
      }
      continue;
    }
    mark[state] = 2;
    post_order.push_back(state);
    stack.pop_back();
  }
  std::vector<int32_t> cls(n, -1);
  std::unordered_map<std::vector<int64_t>, int32_t, SignatureHash> class_of;
  std::vector<int64_t> signature;
  for (int32_t state : post_order) {
    // The acceptance goes first, as the class Moore's first round starts from.
    cls[state] = initial[state];
    signature.clear();
    AppendSignature(dfa, static_cast<size_t>(state), cls, &signature);
    cls[state] = class_of.emplace(signature, static_cast<int32_t>(class_of.size())).first->second;
  }
  *cls_inout = std::move(cls);
  return true;
}

// The coarsest partition by PartitionRefiner (support/partition_refinement.h) on the symbol
// classes of `dfa`'s live edges (the pieces between every edge's lo and hi + 1), without
// Moore's rounds (one per state along a chain of look-alike states, as in the complement of a
// set of names). On input `cls` holds each live state's acceptance (1 / 0) and -1 for dead
// states; on output the coarsest stable partition, its classes numbered from 0.
void RefineClasses(const CodepointDfa& dfa, std::vector<int32_t>* cls_inout) {
  std::vector<int32_t>& cls = *cls_inout;
  const int32_t n = static_cast<int32_t>(dfa.states.size());
  // The distinct boundaries, sorted. The same few (a pattern's class ranges) recur on most
  // edges, and sorting them with their repeats (a boundary equal to the one just added is
  // skipped) costs less than hashing each one to deduplicate it first.
  std::vector<uint32_t> cuts;
  for (int32_t s = 0; s < n; ++s) {
    if (cls[s] < 0) continue;
    for (const auto& e : dfa.states[s].edges) {
      if (cls[e.target] < 0) continue;
      if (cuts.empty() || cuts.back() != e.lo) cuts.push_back(e.lo);
      cuts.push_back(e.hi + 1);
    }
  }
  std::sort(cuts.begin(), cuts.end());
  cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
  auto symbol_at = [&cuts](uint32_t boundary) {
    return static_cast<int32_t>(std::lower_bound(cuts.begin(), cuts.end(), boundary) - cuts.begin());
  };
  // Incoming edges per target (CSR).
  std::vector<int32_t> in_begin(n + 1, 0);
  for (int32_t s = 0; s < n; ++s) {
    if (cls[s] < 0) continue;
    for (const auto& e : dfa.states[s].edges) {
      if (cls[e.target] >= 0) ++in_begin[e.target + 1];
    }
  }
  for (int32_t t = 0; t < n; ++t) in_begin[t + 1] += in_begin[t];
  std::vector<SymbolRun> in_runs(in_begin[n]);
  std::vector<int32_t> fill(in_begin.begin(), in_begin.end() - 1);
  for (int32_t s = 0; s < n; ++s) {
    if (cls[s] < 0) continue;
    for (const auto& e : dfa.states[s].edges) {
      if (cls[e.target] >= 0) in_runs[fill[e.target]++] = {symbol_at(e.lo), symbol_at(e.hi + 1) - 1, s};
    }
  }
  PartitionRefiner refiner;
  refiner.Refine(2, in_begin, in_runs, &cls);
  // Blocks renumbered densely (an initial block may be empty), as callers index by class.
  std::vector<int32_t> dense(static_cast<size_t>(n) + 2, -1);
  int32_t classes = 0;
  for (int32_t s = 0; s < n; ++s) {
    if (cls[s] < 0) continue;
    int32_t& id = dense[cls[s]];
    if (id < 0) id = classes++;
    cls[s] = id;
  }
}

// Minimized, with machines above `max_minimized` states only trimmed.
CodepointDfa MinimizedUpTo(const CodepointDfa& dfa, size_t max_minimized) {
  size_t n = dfa.states.size();
  // Predecessors in CSR form, for the states that can reach acceptance.
  std::vector<int32_t> reverse_begin(n + 1, 0);
  for (size_t i = 0; i < n; ++i) {
    for (const auto& e : dfa.states[i].edges) ++reverse_begin[e.target + 1];
  }
  for (size_t i = 0; i < n; ++i) reverse_begin[i + 1] += reverse_begin[i];
  std::vector<int32_t> reverse(reverse_begin[n]);
  {
    std::vector<int32_t> fill(reverse_begin.begin(), reverse_begin.end() - 1);
    for (size_t i = 0; i < n; ++i) {
      for (const auto& e : dfa.states[i].edges) reverse[fill[e.target]++] = static_cast<int32_t>(i);
    }
  }
  std::vector<uint8_t> live(n, 0);
  for (size_t i = 0; i < n; ++i) live[i] = dfa.states[i].accepting ? 1 : 0;
  std::vector<int32_t> stack;
  MarkCoReachable(reverse_begin, reverse, &live, &stack);
  CodepointDfa out;
  if (!live[0]) {
    out.states.emplace_back();
    return out;
  }
  // Equivalent states (same acceptance, edges to equivalent states) merge: in one pass when
  // the automaton is acyclic, else by Hopcroft's refinement. Machines above
  // max_minimized are only trimmed (correct, maybe not minimal).
  std::vector<int32_t> cls(n);
  for (size_t i = 0; i < n; ++i) cls[i] = !live[i] ? -1 : (dfa.states[i].accepting ? 1 : 0);
  if (n > max_minimized) {
    for (size_t i = 0; i < n; ++i) cls[i] = live[i] ? static_cast<int32_t>(i) : -1;
  } else if (!AcyclicClasses(dfa, &cls)) {
    RefineClasses(dfa, &cls);
  }
  // Classes are numbered below n (a state's own index when only trimming).
  std::vector<int32_t> new_id(n, -1);
  std::vector<int32_t> representative;
  auto id_of = [&](int32_t state) {
    int32_t& id = new_id[cls[state]];
    if (id < 0) {
      id = static_cast<int32_t>(representative.size());
      representative.push_back(state);
    }
    return id;
  };
  id_of(0);
  for (size_t k = 0; k < representative.size(); ++k) {
    const CodepointDfa::State& src = dfa.states[representative[k]];
    CodepointDfa::State state;
    state.accepting = src.accepting;
    state.edges.reserve(src.edges.size());
    for (const auto& e : src.edges) {
      if (cls[e.target] < 0) continue;
      int32_t t = id_of(e.target);
      if (!state.edges.empty() && state.edges.back().target == t && state.edges.back().hi + 1 == e.lo) {
        state.edges.back().hi = e.hi;
      } else {
        state.edges.push_back({e.lo, e.hi, t});
      }
    }
    out.states.push_back(std::move(state));
  }
  return out;
}

}  // namespace

CodepointDfa Minimized(const CodepointDfa& dfa) { return MinimizedUpTo(dfa, kMaxMinimizedStates); }

namespace {

// Longest path (in code points) from the start to an accepting state, or -1 when the
// trimmed automaton has a cycle (the language is infinite). `skip_self_loop` ignores the
// self-loop edges of that state.
long long LongestAcceptedLength(const CodepointDfa& dfa, int32_t skip_self_loop = -1) {
  size_t count = dfa.states.size();
  std::vector<int> color(count, 0);  // 0 new, 1 on the stack, 2 done
  std::vector<long long> longest(count, -1);
  bool cyclic = false;
  // Iterative depth-first search: longest[s] = the longest accepted continuation from s.
  std::vector<std::pair<int32_t, size_t>> stack = {{0, 0}};
  color[0] = 1;
  while (!stack.empty() && !cyclic) {
    auto& [state, next_edge] = stack.back();
    const auto& edges = dfa.states[state].edges;
    if (next_edge < edges.size()) {
      int32_t target = edges[next_edge++].target;
      if (target == state && state == skip_self_loop) continue;
      if (color[target] == 1) {
        cyclic = true;
      } else if (color[target] == 0) {
        color[target] = 1;
        stack.push_back({target, 0});
      }
      continue;
    }
    long long best = dfa.states[state].accepting ? 0 : -1;
    for (const auto& e : edges) {
      if (e.target == state && state == skip_self_loop) continue;
      if (longest[e.target] >= 0) best = std::max(best, longest[e.target] + 1);
    }
    longest[state] = best;
    color[state] = 2;
    stack.pop_back();
  }
  return cyclic ? -1 : longest[0];
}

// One JSON string character that is written raw (no escape): one unit per code point.
bool IsPlainCharacter(uint32_t lo, uint32_t hi) {
  return lo >= 0x20 && !(lo <= '"' && hi >= '"') && !(lo <= '\\' && hi >= '\\');
}

// `dfa` started from `state` (states 0 and `state` swap numbers), accepting exactly where
// `accepting(original state number)` holds.
template <typename AcceptingPredicate>
CodepointDfa StartedAt(const CodepointDfa& dfa, int32_t state, AcceptingPredicate accepting) {
  auto renumber = [state](int32_t s) { return s == state ? 0 : s == 0 ? state : s; };
  CodepointDfa out = dfa;
  for (size_t i = 0; i < dfa.states.size(); ++i) {
    const int32_t original = static_cast<int32_t>(i);
    CodepointDfa::State& copy = out.states[renumber(original)];
    copy = dfa.states[i];
    copy.accepting = accepting(original);
    for (auto& e : copy.edges) e.target = renumber(e.target);
  }
  return out;
}

// The loop of LoopTailFragment as one repeated fragment whose strings are each one unit, or
// nullopt. Plain self-loop characters are one character class; otherwise (a loop that also
// takes escapes, such as `[^<>]*` in the JSON spelling, where `\"` leaves the loop state and
// comes back) the units that lead from `loop` back to it, provided that no unit read from
// `loop` ends anywhere else: then the strings from `loop` are exactly those units repeated.
// `dfa` is minimised, so every state it has can still reach acceptance. `with_escapes` false
// allows only the plain class.
std::optional<Fragment> LoopUnitFragment(const CodepointDfa& dfa, int32_t loop, const CodepointDfa& unit,
                                         bool with_escapes, RuleSet* rules, const std::string& hint) {
  std::string members;
  bool plain = true;
  for (const auto& e : dfa.states[loop].edges) {
    if (e.target != loop || !IsPlainCharacter(e.lo, e.hi)) {
      plain = false;
      break;
    }
    members += EbnfClassMember(e.lo);
    if (e.hi > e.lo) members += (e.hi > e.lo + 1 ? "-" : "") + EbnfClassMember(e.hi);
  }
  if (plain) return Fragment::Atom("[" + members + "]");
  if (!with_escapes) return std::nullopt;
  CodepointDfa leaves = StartedAt(dfa, loop, [loop](int32_t s) { return s != loop; });
  if (!Product(leaves, unit, ProductKind::kIntersection).Empty()) return std::nullopt;
  CodepointDfa returns = StartedAt(dfa, loop, [loop](int32_t s) { return s == loop; });
  CodepointDfa units = Product(returns, unit, ProductKind::kIntersection);
  if (units.Empty()) return std::nullopt;
  return WrittenMinimalDfa(units, rules, hint + "_unit");
}

// See LengthBoundedFragment: `dfa` (minimised) as prefixes P, a loop state whose strings are
// units from a set S repeated (LoopUnitFragment), and strings F that never reach the loop.
std::optional<Fragment> LoopTailFragment(const CodepointDfa& dfa, const CodepointDfa& unit, long long min_count,
                                         long long max_count, RuleSet* rules, const std::string& hint) {
  constexpr long long kMaxPrefixLength = 256;
  int32_t loop = -1;
  for (size_t i = 0; i < dfa.states.size(); ++i) {
    for (const auto& e : dfa.states[i].edges) {
      if (e.target != static_cast<int32_t>(i)) continue;
      if (loop >= 0 && loop != static_cast<int32_t>(i)) return std::nullopt;
      loop = static_cast<int32_t>(i);
    }
  }
  if (loop < 0 || !dfa.states[loop].accepting) return std::nullopt;
  CodepointDfa prefixes = dfa, finite = dfa;
  for (size_t i = 0; i < dfa.states.size(); ++i) prefixes.states[i].accepting = static_cast<int32_t>(i) == loop;
  prefixes.states[loop].edges.clear();
  finite.states[loop].accepting = false;
  finite.states[loop].edges.clear();
  long long longest_prefix = LongestAcceptedLength(prefixes);
  if (longest_prefix < 0 || longest_prefix > kMaxPrefixLength) return std::nullopt;  // another loop
  // A loop with escapes costs a product per prefix length here and in LoopUnitFragment. With
  // few length steps the layered automaton that LengthBoundedFragment writes otherwise is small
  // and cheaper to build (Github_trivial---o34208, minLength 20 after a 21-character prefix:
  // 5.6 ms here against 1.4 ms); with many it grows a layer of rules per step
  // (Github_ultra---o358, maxLength 260: 1,815 rules).
  constexpr long long kMinStepsForEscapeLoop = 64;
  const long long steps = max_count >= 0 ? max_count : min_count;
  std::optional<Fragment> loop_unit =
      LoopUnitFragment(dfa, loop, unit, steps >= kMinStepsForEscapeLoop, rules, hint);
  if (!loop_unit) return std::nullopt;
  std::vector<Fragment> choices;
  const Fragment& loop_class = *loop_unit;
  for (long long k = 0; k <= longest_prefix && (max_count < 0 || k <= max_count); ++k) {
    CodepointDfa exact = Product(prefixes, Repeated(unit, k, k), ProductKind::kIntersection);
    if (exact.Empty()) continue;
    long long low = std::max(0LL, min_count - k);
    long long high = max_count < 0 ? -1 : max_count - k;
    choices.push_back(Seq({WrittenMinimalDfa(exact, rules, hint), Repeat(loop_class, static_cast<int>(low),
                                                                       static_cast<int>(high))}));
  }
  long long longest_finite = LongestAcceptedLength(Minimized(finite));
  if (longest_finite >= min_count) {
    long long high = max_count < 0 ? longest_finite : std::min(max_count, longest_finite);
    CodepointDfa bounded = Product(finite, Repeated(unit, min_count, high), ProductKind::kIntersection);
    if (!bounded.Empty()) choices.push_back(WrittenMinimalDfa(bounded, rules, hint));
  }
  return Alt(choices);
}

}  // namespace

bool LengthImplied(const CodepointDfa& language, const CodepointDfa& unit, long long min_count,
                   long long max_count) {
  if (min_count > 256) return false;
  if (min_count > 0 &&
      !Product(language, Repeated(unit, 0, min_count - 1), ProductKind::kIntersection).Empty()) {
    return false;
  }
  if (max_count < 0) return true;
  long long longest = LongestAcceptedLength(Minimized(language));
  return longest >= 0 && longest <= max_count;
}

Fragment LengthBoundedFragment(const CodepointDfa& language, const CodepointDfa& unit, const Fragment& unit_fragment,
                               long long min_count, long long max_count, RuleSet* rules, const std::string& hint) {
  // A language of every string (e.g. an unanchored pattern that matches the empty string)
  // leaves only the length: a counted repetition of one character.
  static const CodepointDfa* every_string = [] {
    RegexOptions options;
    options.json_string_body = true;  // in the canonical spelling the regex frontend writes
    return new CodepointDfa(DfaFromRegex("[\\s\\S]*", options));
  }();
  if (Product(*every_string, language, ProductKind::kDifference).Empty()) {
    return Repeat(unit_fragment, static_cast<int>(min_count), static_cast<int>(max_count));
  }
  std::optional<Fragment> loop_form = LoopTailFragment(Minimized(language), unit, min_count, max_count, rules, hint);
  if (loop_form) return *loop_form;
  return WrittenMinimalDfa(Product(language, Repeated(unit, min_count, max_count), ProductKind::kIntersection),
                           rules, hint);
}

namespace {

// a | ε written as a?, which reads better and lowers to the same automaton.
Fragment AltWithEpsilon(const Fragment& a, const Fragment& b) {
  if (a.epsilon() && !b.never() && !b.epsilon()) return Optional(b);
  if (b.epsilon() && !a.never() && !a.epsilon()) return Optional(a);
  return Alt({a, b});
}

// `dfa` (minimised, not empty) as EBNF by state elimination (Brzozowski and McCluskey): a
// generalised automaton whose edges carry expressions loses one state at a time, cheapest
// first (the text its removal copies into each (predecessor, successor) pair). A state whose
// removal would grow some edge past `max_bytes` is kept instead (state elimination can blow
// up exponentially, e.g. on the layered automaton of a pattern under a maxLength), and each
// kept state becomes a rule `state ::= (loop)* (expr next | ...)`. The result is the
// expression from the start: no rules at all when every state could be removed.
Fragment EliminateStates(const CodepointDfa& dfa, size_t max_bytes, RuleSet* rules, const std::string& hint) {
  const int32_t n = static_cast<int32_t>(dfa.states.size());
  const int32_t start = n, final_state = n + 1;
  // out[i][j] / in[j][i]: the expression on the edge i -> j (the same Fragment in both maps).
  std::vector<std::map<int32_t, Fragment>> out(n + 2), in(n + 2);
  // Invariant: in_bytes[j] / ins[j] are the total text size and number of the edges into j,
  // out_bytes[j] / outs[j] those out of j, self-loops left out (the removal cost below).
  std::vector<size_t> in_bytes(n + 2, 0), out_bytes(n + 2, 0), ins(n + 2, 0), outs(n + 2, 0);
  auto count_edge = [&](int32_t from, int32_t to, const Fragment& expr, bool add) {
    if (from == to) return;
    size_t size = expr.text_size();
    if (add) {
      out_bytes[from] += size, ++outs[from], in_bytes[to] += size, ++ins[to];
    } else {
      out_bytes[from] -= size, --outs[from], in_bytes[to] -= size, --ins[to];
    }
  };
  auto set_edge = [&](int32_t from, int32_t to, Fragment expr) {
    auto existing = out[from].find(to);
    if (existing != out[from].end()) count_edge(from, to, existing->second, false);
    count_edge(from, to, expr, true);
    out[from].insert_or_assign(to, expr);
    in[to].insert_or_assign(from, std::move(expr));
  };
  set_edge(start, 0, Fragment::Epsilon());
  for (int32_t i = 0; i < n; ++i) {
    if (dfa.states[i].accepting) set_edge(i, final_state, Fragment::Epsilon());
    for (const auto& [target, members] : ClassesByTarget(dfa.states[i])) {
      set_edge(i, target, Fragment::Atom("[" + members + "]"));
    }
  }
  auto loop_of = [&](int32_t k) {
    auto self = out[k].find(k);
    return self == out[k].end() ? Fragment::Epsilon() : Repeat(self->second, 0, -1);
  };
  // 0: present, 1: removed, 2: kept (removing it was too costly).
  std::vector<uint8_t> status(n, 0);
  for (;;) {
    int32_t k = -1;
    size_t best_cost = 0;
    for (int32_t candidate = 0; candidate < n; ++candidate) {
      if (status[candidate] != 0) continue;
      size_t cost = in_bytes[candidate] * outs[candidate] + out_bytes[candidate] * ins[candidate];
      if (k < 0 || cost < best_cost) k = candidate, best_cost = cost;
    }
    if (k < 0) break;
    const Fragment loop = loop_of(k);
    std::vector<std::tuple<int32_t, int32_t, Fragment>> merged_edges;
    bool fits = true;
    for (const auto& [from, enter] : in[k]) {
      if (from == k) continue;
      for (const auto& [to, leave] : out[k]) {
        if (to == k) continue;
        Fragment path = Seq({enter, loop, leave});
        auto existing = out[from].find(to);
        Fragment merged = existing == out[from].end() ? path : AltWithEpsilon(existing->second, path);
        if (merged.text_size() > max_bytes) {
          fits = false;
          break;
        }
        merged_edges.emplace_back(from, to, std::move(merged));
      }
      if (!fits) break;
    }
    if (!fits) {
      status[k] = 2;
      continue;
    }
    status[k] = 1;
    for (const auto& [from, expr] : in[k]) {
      count_edge(from, k, expr, false);
      out[from].erase(k);
    }
    for (const auto& [to, expr] : out[k]) {
      count_edge(k, to, expr, false);
      in[to].erase(k);
    }
    out[k].clear();
    in[k].clear();
    for (auto& [from, to, merged] : merged_edges) set_edge(from, to, std::move(merged));
  }
  // The kept states, as right-linear rules over the remaining edges.
  std::vector<std::string> names(n);
  for (int32_t i = 0; i < n; ++i) {
    if (status[i] == 2) names[i] = rules->Reserve(hint);
  }
  auto leaving = [&](int32_t from) {
    std::vector<Fragment> choices;
    for (const auto& [to, expr] : out[from]) {
      if (to == from) continue;
      choices.push_back(to == final_state ? expr : Seq({expr, Fragment::Atom(names[to])}));
    }
    Fragment rest = choices.size() == 2 && choices[0].epsilon() ? Optional(choices[1])
                    : choices.size() == 2 && choices[1].epsilon() ? Optional(choices[0])
                                                                  : Alt(choices);
    return Seq({loop_of(from), rest});
  };
  for (int32_t i = 0; i < n; ++i) {
    if (status[i] == 2) rules->Define(names[i], leaving(i));
  }
  return leaving(start);
}

// Automata up to this many states go through state elimination; beyond, right-linear rules
// (WriteRightLinearRules: states with one incoming edge written inside their predecessor's
// rule, which copies no text). The FSM builder turns both forms back into one rule DFA (the expression by subset
// construction over its Thompson NFA, the rules by MergeRightLinearGroups), but a larger
// automaton's expression repeats sub-expressions (over 300 JSONSchemaBench schemas, the 14
// automata above 64 states wrote 490 KB of EBNF, e.g. 11 KB per localised-name key of the
// OCDS schema), and parsing, lowering and determinising that text cost more than the rules.
constexpr size_t kMaxEliminatedStates = 32;
// The largest expression state elimination may put on one edge.
constexpr size_t kMaxExpressionBytes = 4096;

}  // namespace

namespace {
Fragment WriteRegularLanguage(const CodepointDfa& dfa, RuleSet* rules, const std::string& hint);
}  // namespace

Fragment DfaToFragment(const CodepointDfa& input, RuleSet* rules, const std::string& hint,
                       size_t max_states) {
  return WrittenMinimalDfa(Minimized(input), rules, hint, max_states);
}

namespace {

bool SameAutomaton(const CodepointDfa& a, const CodepointDfa& b) {
  if (a.states.size() != b.states.size()) return false;
  for (size_t i = 0; i < a.states.size(); ++i) {
    const CodepointDfa::State &x = a.states[i], &y = b.states[i];
    if (x.accepting != y.accepting || x.edges.size() != y.edges.size()) return false;
    for (size_t k = 0; k < x.edges.size(); ++k) {
      if (x.edges[k].lo != y.edges[k].lo || x.edges[k].hi != y.edges[k].hi || x.edges[k].target != y.edges[k].target) {
        return false;
      }
    }
  }
  return true;
}

Fragment WrittenMinimalDfa(const CodepointDfa& dfa, RuleSet* rules, const std::string& hint, size_t max_states) {
  XG2_DCHECK(SameAutomaton(dfa, Minimized(dfa)), "a written automaton is as Minimized returns it");
  if (dfa.Empty()) return Fragment::Never();
  if (dfa.states.size() > max_states) {
    throw ResourceLimitError("regular language too large (" + std::to_string(dfa.states.size()) +
                             " states, limit " + std::to_string(max_states) + ")");
  }
  // The same language met again in this conversion (the member names of every object that
  // shares a patternProperties table, say) reuses the rules written the first time: state
  // elimination is the costly part, and the grammar keeps one copy.
  std::string key;
  key.reserve(16 * dfa.states.size());
  auto put = [&key](uint32_t v) { key.append(reinterpret_cast<const char*>(&v), sizeof v); };
  for (const CodepointDfa::State& state : dfa.states) {
    put(state.accepting ? 1u : 0u);
    put(static_cast<uint32_t>(state.edges.size()));
    for (const CodepointDfa::Edge& e : state.edges) {
      put(e.lo);
      put(e.hi);
      put(static_cast<uint32_t>(e.target));
    }
  }
  if (const Fragment* written = rules->FindWritten(key)) return *written;
  Fragment fragment = WriteRegularLanguage(dfa, rules, hint);
  rules->RememberWritten(std::move(key), fragment);
  return fragment;
}

}  // namespace

Fragment MinimalDfaToFragment(const CodepointDfa& input, RuleSet* rules, const std::string& hint) {
  try {
    return DfaToFragment(input, rules, hint);
  } catch (const ResourceLimitError&) {
    // Minimized only trims large machines; Hopcroft's refinement, O(edges log states), is paid
    // here, where a trimmed machine was refused (DfaToFragment keeps a minimal one as it is).
    return WrittenMinimalDfa(MinimizedUpTo(input, kMaxAutomatonStates), rules, hint);
  }
}

namespace {

std::shared_ptr<const AutomatonLiteral> AutomatonLiteralOf(const CodepointDfa& dfa) {
  std::vector<uint8_t> accepting;
  std::vector<int32_t> edge_begin{0};
  std::vector<AutomatonLiteral::CodepointEdge> edges;
  accepting.reserve(dfa.states.size());
  edge_begin.reserve(dfa.states.size() + 1);
  for (const CodepointDfa::State& state : dfa.states) {
    accepting.push_back(state.accepting ? 1 : 0);
    for (const CodepointDfa::Edge& e : state.edges) edges.push_back({e.lo, e.hi, e.target});
    edge_begin.push_back(static_cast<int32_t>(edges.size()));
  }
  return MakeAutomatonLiteral(std::move(accepting), std::move(edge_begin), std::move(edges));
}

// DfaToFragment's writing of the minimal DFA `dfa` (not empty) as rules of `rules`.
Fragment WriteRegularLanguage(const CodepointDfa& dfa, RuleSet* rules, const std::string& hint) {
  // A small automaton as one rule whose body is the whole language. Right-linear rules (a
  // larger automaton, or the states state elimination keeps) are merged back into one DFA by
  // the FSM builder (MergeRightLinearGroups); either way the grammar FSM holds the language as
  // one rule DFA, which the token-mask cache classifies exactly.
  if (dfa.states.size() <= kMaxEliminatedStates) {
    return rules->Share(hint, EliminateStates(dfa, kMaxExpressionBytes, rules, hint));
  }
  // A larger one that Minimized left minimal as one rule whose body is the automaton itself
  // (grammar/automaton_literal.h): the FSM builder copies its DFA instead of lowering the
  // right-linear rules and determinising and minimising them again.
  if (dfa.states.size() <= kMaxMinimizedStates) {
    if (std::optional<Fragment> literal = rules->DefineAutomaton(hint, AutomatonLiteralOf(dfa))) return *literal;
  }
  return WriteRightLinearRules(dfa, rules, hint);
}

}  // namespace

}  // namespace xg2
