// MakeAutomatonLiteral's UTF-8 expansion, the printer, and the invariant checks
// (automaton_literal.h).
#include "grammar/automaton_literal.h"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <map>
#include <unordered_map>
#include <utility>

#include "grammar/fsm_automata.h"
#include "support/dcheck.h"
#include "support/error.h"
#include "support/utf8.h"

namespace xg2 {
namespace {

using CodepointEdge = AutomatonLiteral::CodepointEdge;
using LiteralByteEdge = AutomatonLiteral::ByteEdge;

size_t Mix(size_t h, size_t v) { return h ^ (v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2)); }

// The byte DFA of a code-point DFA. A state's multi-byte characters hang below it as a tree
// of inner nodes, one level per continuation byte still to come; an inner node is made once
// per content (its level's edges, targets already canonical), so equal subtrees of all states
// are one node. With a minimal code-point DFA the result is minimal: code-point states differ
// by minimality; an inner node's strings begin with exactly `level` continuation bytes (no
// code-point state's string begins with one, and every node reaches acceptance), so nodes of
// different levels differ; nodes of one level with different canonical edge lists differ at
// some byte, by induction on the level.
class Utf8Expansion {
 public:
  explicit Utf8Expansion(const AutomatonLiteral& literal) : literal_(literal) {}

  void Run(AutomatonLiteral* out) {
    const int32_t n = literal_.num_states();
    node_edges_.resize(n);
    for (int32_t s = 0; s < n; ++s) node_edges_[s] = StateEdges(s);
    out->byte_begin.assign(1, 0);
    for (const std::vector<LiteralByteEdge>& edges : node_edges_) {
      out->byte_edges.insert(out->byte_edges.end(), edges.begin(), edges.end());
      out->byte_begin.push_back(static_cast<int32_t>(out->byte_edges.size()));
    }
  }

 private:
  // The code points each encoding length covers, and its lead bytes' first code points.
  struct Encoding {
    uint32_t first, last;  // valid code points of this length
    uint8_t lead_lo, lead_hi;
    int continuation_bytes;
  };
  static constexpr Encoding kEncodings[] = {
      {0x80, 0x7FF, 0xC0, 0xDF, 1},
      {0x800, 0xFFFF, 0xE0, 0xEF, 2},
      {0x10000, 0x10FFFF, 0xF0, 0xF7, 3},
  };

  std::vector<LiteralByteEdge> StateEdges(int32_t s) {
    std::vector<LiteralByteEdge> out;
    const CodepointEdge* first = literal_.edges.data() + literal_.edge_begin[s];
    const CodepointEdge* last = literal_.edges.data() + literal_.edge_begin[s + 1];
    for (const CodepointEdge* e = first; e != last && e->lo < 0x80; ++e) {
      Append(&out, static_cast<uint8_t>(e->lo), static_cast<uint8_t>(std::min<uint32_t>(e->hi, 0x7F)), e->target);
    }
    for (const Encoding& enc : kEncodings) {
      const uint32_t block = uint32_t{1} << (6 * enc.continuation_bytes);
      for (int lead = enc.lead_lo; lead <= enc.lead_hi; ++lead) {
        const uint32_t base = static_cast<uint32_t>(lead - enc.lead_lo) * block;
        const int32_t child = Cover(first, last, base, block, enc.continuation_bytes, enc);
        if (child >= 0) Append(&out, static_cast<uint8_t>(lead), static_cast<uint8_t>(lead), child);
      }
    }
    return out;
  }

  // The node for the code points [base, base + size) (clipped to `enc`) still to be read
  // through `level` continuation bytes, or -1 when no edge covers any of them.
  int32_t Cover(const CodepointEdge* first, const CodepointEdge* last, uint32_t base, uint32_t size, int level,
                const Encoding& enc) {
    const uint32_t lo = std::max(base, enc.first);
    if (base + size - 1 < enc.first || base > enc.last) return -1;
    const uint32_t hi = std::min(base + size - 1, enc.last);
    const CodepointEdge* e =
        std::lower_bound(first, last, lo, [](const CodepointEdge& edge, uint32_t cp) { return edge.hi < cp; });
    if (e == last || e->lo > hi) return -1;
    if (e->lo <= lo && e->hi >= hi && lo == base && hi == base + size - 1) return Uniform(level, e->target);
    std::vector<LiteralByteEdge> edges;
    const uint32_t child_size = size >> 6;
    if (level == 1) {
      for (; e != last && e->lo <= hi; ++e) {
        const uint32_t from = std::max(e->lo, lo), to = std::min(e->hi, hi);
        Append(&edges, static_cast<uint8_t>(0x80 + from - base), static_cast<uint8_t>(0x80 + to - base), e->target);
      }
    } else {
      for (uint32_t c = 0; c < 64; ++c) {
        const int32_t child = Cover(e, last, base + c * child_size, child_size, level - 1, enc);
        if (child >= 0) Append(&edges, static_cast<uint8_t>(0x80 + c), static_cast<uint8_t>(0x80 + c), child);
      }
    }
    return Intern(level, std::move(edges));
  }

  // Any `level` continuation bytes, then `target`: most of a class's characters, looked up by
  // (level, target) before their content is built and interned.
  int32_t Uniform(int level, int32_t target) {
    const uint64_t key = (static_cast<uint64_t>(level) << 32) | static_cast<uint32_t>(target);
    auto found = uniform_.find(key);
    if (found != uniform_.end()) return found->second;
    const int32_t below = level == 1 ? target : Uniform(level - 1, target);
    const int32_t node = Intern(level, {LiteralByteEdge{0x80, 0xBF, below}});
    uniform_.emplace(key, node);
    return node;
  }

  int32_t Intern(int level, std::vector<LiteralByteEdge> edges) {
    std::vector<int32_t> key;
    key.reserve(1 + 3 * edges.size());
    key.push_back(level);
    for (const LiteralByteEdge& e : edges) {
      key.push_back(e.lo);
      key.push_back(e.hi);
      key.push_back(e.target);
    }
    auto [it, fresh] = inner_.emplace(std::move(key), static_cast<int32_t>(node_edges_.size()));
    if (fresh) node_edges_.push_back(std::move(edges));
    return it->second;
  }

  // Appends an edge, merged into the previous one when it continues it to the same target.
  static void Append(std::vector<LiteralByteEdge>* edges, uint8_t lo, uint8_t hi, int32_t target) {
    if (!edges->empty() && edges->back().target == target && edges->back().hi + 1 == lo) {
      edges->back().hi = hi;
      return;
    }
    edges->push_back({lo, hi, target});
  }

  const AutomatonLiteral& literal_;
  std::vector<std::vector<LiteralByteEdge>> node_edges_;
  std::map<std::vector<int32_t>, int32_t> inner_;
  std::unordered_map<uint64_t, int32_t> uniform_;
};

constexpr Utf8Expansion::Encoding Utf8Expansion::kEncodings[];

size_t HashOf(const AutomatonLiteral& literal) {
  size_t h = Mix(literal.accepting.size(), literal.byte_edges.size());
  for (uint8_t a : literal.accepting) h = Mix(h, a);
  for (int32_t b : literal.edge_begin) h = Mix(h, static_cast<size_t>(b));
  for (const CodepointEdge& e : literal.edges) h = Mix(Mix(Mix(h, e.lo), e.hi), static_cast<size_t>(e.target));
  return h;
}

}  // namespace

std::shared_ptr<const AutomatonLiteral> MakeAutomatonLiteral(std::vector<uint8_t> accepting,
                                                             std::vector<int32_t> edge_begin,
                                                             std::vector<CodepointEdge> edges) {
  auto literal = std::make_shared<AutomatonLiteral>();
  literal->accepting = std::move(accepting);
  literal->edge_begin = std::move(edge_begin);
  literal->edges = std::move(edges);
  Utf8Expansion(*literal).Run(literal.get());
  literal->hash = HashOf(*literal);
  XG2_DCHECK_INVARIANTS(CheckAutomatonLiteralInvariants(*literal, "MakeAutomatonLiteral"));
  return literal;
}

bool SameAutomatonLiteral(const AutomatonLiteral& a, const AutomatonLiteral& b) {
  if (&a == &b) return true;
  if (a.hash != b.hash || a.accepting != b.accepting || a.edge_begin != b.edge_begin ||
      a.edges.size() != b.edges.size()) {
    return false;
  }
  for (size_t i = 0; i < a.edges.size(); ++i) {
    const CodepointEdge &x = a.edges[i], &y = b.edges[i];
    if (x.lo != y.lo || x.hi != y.hi || x.target != y.target) return false;
  }
  return true;  // the byte DFA is a function of the code-point one
}

void AppendEbnfClassMember(uint32_t cp, std::string* out) {
  if (cp == '\\' || cp == ']' || cp == '[' || cp == '^' || cp == '-' || cp == '"') {
    out->push_back('\\');
    out->push_back(static_cast<char>(cp));
    return;
  }
  if (cp < 0x20 || cp == 0x7F) {
    char escaped[8];
    std::snprintf(escaped, sizeof(escaped), "\\x%02X", cp);
    out->append(escaped);
    return;
  }
  AppendUtf8(cp, out);
}

std::string AutomatonStateRuleName(const std::string& name, int32_t state) {
  return state == 0 ? name : name + "__s" + std::to_string(state);
}

namespace {

// The distinct targets of state s's edges, in increasing order: the printer writes one
// alternative per target.
void TargetsOf(const AutomatonLiteral& literal, int32_t s, std::vector<int32_t>* targets) {
  targets->clear();
  for (int32_t k = literal.edge_begin[s]; k < literal.edge_begin[s + 1]; ++k) targets->push_back(literal.edges[k].target);
  std::sort(targets->begin(), targets->end());
  targets->erase(std::unique(targets->begin(), targets->end()), targets->end());
}

bool HasEdges(const AutomatonLiteral& literal, int32_t s) { return literal.edge_begin[s] != literal.edge_begin[s + 1]; }

size_t ClassMemberSize(uint32_t cp) {
  if (cp == '\\' || cp == ']' || cp == '[' || cp == '^' || cp == '-' || cp == '"') return 2;
  if (cp < 0x20 || cp == 0x7F) return 4;
  return cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
}

size_t StateRuleNameSize(const std::string& name, int32_t state) {
  if (state == 0) return name.size();
  size_t digits = 1;
  for (int32_t v = state; v >= 10; v /= 10) ++digits;
  return name.size() + 3 + digits;
}

}  // namespace

std::string PrintAutomatonRules(const AutomatonLiteral& literal, const std::string& name) {
  std::string out;
  out.reserve(AutomatonRulesPrintedSize(literal, name));
  AppendAutomatonRules(literal, name, &out);
  return out;
}

void AppendAutomatonRules(const AutomatonLiteral& literal, const std::string& name, std::string* out) {
  std::vector<int32_t> targets;
  for (int32_t s = 0; s < literal.num_states(); ++s) {
    if (s > 0 && !HasEdges(literal, s)) continue;  // an accepting end: written where it is entered
    if (s > 0) *out += "\n" + AutomatonStateRuleName(name, s) + " ::= ";
    bool first = true;
    if (literal.accepting[s] != 0) {
      *out += "\"\"";
      first = false;
    }
    // One alternative per target, in target order: its class, then the target's rule.
    TargetsOf(literal, s, &targets);
    for (int32_t target : targets) {
      if (!first) *out += " | ";
      first = false;
      out->push_back('[');
      for (int32_t k = literal.edge_begin[s]; k < literal.edge_begin[s + 1]; ++k) {
        const CodepointEdge& e = literal.edges[k];
        if (e.target != target) continue;
        AppendEbnfClassMember(e.lo, out);
        if (e.hi > e.lo + 1) out->push_back('-');
        if (e.hi > e.lo) AppendEbnfClassMember(e.hi, out);
      }
      out->push_back(']');
      if (HasEdges(literal, target)) *out += " " + AutomatonStateRuleName(name, target);
    }
  }
}

size_t AutomatonRulesPrintedSize(const AutomatonLiteral& literal, const std::string& name) {
  size_t size = 0;
  std::vector<int32_t> targets;
  for (int32_t s = 0; s < literal.num_states(); ++s) {
    if (s > 0 && !HasEdges(literal, s)) continue;
    if (s > 0) size += 1 + StateRuleNameSize(name, s) + 5;  // "\n" name " ::= "
    bool first = true;
    if (literal.accepting[s] != 0) {
      size += 2;
      first = false;
    }
    TargetsOf(literal, s, &targets);
    for (int32_t target : targets) {
      if (!first) size += 3;
      first = false;
      size += 2;  // the brackets
      if (HasEdges(literal, target)) size += 1 + StateRuleNameSize(name, target);
    }
    for (int32_t k = literal.edge_begin[s]; k < literal.edge_begin[s + 1]; ++k) {
      const CodepointEdge& e = literal.edges[k];
      size += ClassMemberSize(e.lo);
      if (e.hi > e.lo + 1) size += 1;
      if (e.hi > e.lo) size += ClassMemberSize(e.hi);
    }
  }
  return size;
}

namespace {

[[noreturn]] void Fail(const char* stage, const std::string& what) {
  throw InternalError(std::string("automaton literal invariant broken after ") + stage + ": " + what);
}

// Edges sorted, disjoint, non-empty, targets in [0, count).
template <typename Edge>
void CheckEdges(const Edge* first, const Edge* last, int32_t count, const char* stage, const char* which) {
  for (const Edge* e = first; e != last; ++e) {
    if (e->lo > e->hi) Fail(stage, std::string(which) + ": an empty edge range");
    if (e->target < 0 || e->target >= count) Fail(stage, std::string(which) + ": an edge target out of range");
    if (e != first && (e - 1)->hi >= e->lo) Fail(stage, std::string(which) + ": edges unsorted or overlapping");
  }
}

// Whether every node is reachable from node 0 and reaches an accepting node.
template <typename EdgesOf>
bool Trimmed(int32_t count, EdgesOf edges_of, const std::function<bool(int32_t)>& accepting) {
  std::vector<uint8_t> seen(count, 0);
  std::vector<int32_t> stack{0};
  seen[0] = 1;
  std::vector<std::vector<int32_t>> reverse(count);
  while (!stack.empty()) {
    const int32_t v = stack.back();
    stack.pop_back();
    for (const auto& e : edges_of(v)) {
      reverse[e.target].push_back(v);
      if (!seen[e.target]) {
        seen[e.target] = 1;
        stack.push_back(e.target);
      }
    }
  }
  if (std::count(seen.begin(), seen.end(), 1) != count) return false;
  std::vector<uint8_t> live(count, 0);
  for (int32_t v = 0; v < count; ++v) {
    if (accepting(v)) live[v] = 1, stack.push_back(v);
  }
  while (!stack.empty()) {
    const int32_t v = stack.back();
    stack.pop_back();
    for (int32_t u : reverse[v]) {
      if (!live[u]) live[u] = 1, stack.push_back(u);
    }
  }
  return std::count(live.begin(), live.end(), 1) == count;
}

// Moore's refinement over the byte DFA: true when no two nodes are equivalent.
bool ByteDfaMinimal(const AutomatonLiteral& literal) {
  const int32_t count = literal.num_byte_nodes();
  std::vector<int32_t> block(count);
  for (int32_t v = 0; v < count; ++v) block[v] = literal.ByteNodeAccepting(v) ? 1 : 0;
  for (int32_t blocks = -1;;) {
    std::map<std::vector<int32_t>, int32_t> ids;
    std::vector<int32_t> next(count);
    for (int32_t v = 0; v < count; ++v) {
      std::vector<int32_t> signature{block[v]};
      for (int32_t k = literal.byte_begin[v]; k < literal.byte_begin[v + 1]; ++k) {
        const LiteralByteEdge& e = literal.byte_edges[k];
        signature.insert(signature.end(), {e.lo, e.hi, block[e.target]});
      }
      next[v] = ids.emplace(std::move(signature), static_cast<int32_t>(ids.size())).first->second;
    }
    block = std::move(next);
    if (static_cast<int32_t>(ids.size()) == blocks) return blocks == count;
    blocks = static_cast<int32_t>(ids.size());
  }
}

}  // namespace

void CheckAutomatonLiteralInvariants(const AutomatonLiteral& literal, const char* stage) {
  const int32_t n = literal.num_states();
  if (n == 0 || literal.edge_begin.size() != static_cast<size_t>(n) + 1 || literal.edge_begin[0] != 0 ||
      literal.edge_begin[n] != static_cast<int32_t>(literal.edges.size())) {
    Fail(stage, "the code-point state table is malformed");
  }
  const int32_t m = literal.num_byte_nodes();
  if (m < n || literal.byte_begin[0] != 0 || literal.byte_begin[m] != static_cast<int32_t>(literal.byte_edges.size())) {
    Fail(stage, "the byte node table is malformed");
  }
  for (int32_t s = 0; s < n; ++s) {
    const CodepointEdge* first = literal.edges.data() + literal.edge_begin[s];
    const CodepointEdge* last = literal.edges.data() + literal.edge_begin[s + 1];
    CheckEdges(first, last, n, stage, "code points");
    for (const CodepointEdge* e = first; e != last; ++e) {
      if (e->hi > 0x10FFFF || (e->lo <= 0xDFFF && e->hi >= 0xD800)) Fail(stage, "an edge covers a non-character");
    }
  }
  for (int32_t v = 0; v < m; ++v) {
    CheckEdges(literal.byte_edges.data() + literal.byte_begin[v], literal.byte_edges.data() + literal.byte_begin[v + 1],
               m, stage, "bytes");
  }
  auto codepoint_edges = [&](int32_t s) {
    return std::vector<CodepointEdge>(literal.edges.begin() + literal.edge_begin[s],
                                      literal.edges.begin() + literal.edge_begin[s + 1]);
  };
  auto byte_edges = [&](int32_t v) {
    return std::vector<LiteralByteEdge>(literal.byte_edges.begin() + literal.byte_begin[v],
                                 literal.byte_edges.begin() + literal.byte_begin[v + 1]);
  };
  if (!Trimmed(n, codepoint_edges, [&](int32_t s) { return literal.accepting[s] != 0; }) ||
      !Trimmed(m, byte_edges, [&](int32_t v) { return literal.ByteNodeAccepting(v); })) {
    Fail(stage, "a state is unreachable or cannot reach acceptance");
  }
  if (!ByteDfaMinimal(literal)) Fail(stage, "the byte DFA is not minimal");
}

namespace fsm_build {

Dfa AutomatonRuleDfa(const AutomatonLiteral& literal, int64_t* budget) {
  const int32_t count = literal.num_byte_nodes();
  *budget -= count;
  if (*budget < 0) {
    throw ResourceLimitError("grammar too large: more than the node limit of the FSM builder "
                             "(reduce repetition bounds or grammar size)");
  }
  Dfa dfa;
  dfa.nodes.reserve(count);
  dfa.byte_edges.reserve(literal.byte_edges.size());
  for (int32_t v = 0; v < count; ++v) {
    dfa.AddNode(literal.ByteNodeAccepting(v));
    for (int32_t k = literal.byte_begin[v]; k < literal.byte_begin[v + 1]; ++k) {
      const AutomatonLiteral::ByteEdge& e = literal.byte_edges[k];
      dfa.AddByteEdge({e.lo, e.hi, e.target});
    }
  }
  XG2_DCHECK_INVARIANTS(CheckRuleDfaInvariants(dfa, -1, "the automaton literal copy"));
  return dfa;
}

}  // namespace fsm_build

}  // namespace xg2
