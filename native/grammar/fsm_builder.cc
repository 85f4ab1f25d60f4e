// Lowering of the grammar AST into per-rule DFAs:
//   1. Thompson construction: AST -> epsilon-NFA over bytes + rule ids (one NFA per rule).
//   2. Subset construction: epsilon-NFA -> DFA, splitting byte ranges into disjoint pieces.
//   3. Partition refinement (Moore) for machines small enough that it is cheap.
//   4. Nullability fixpoint over rules, and flattening into GrammarFsm's CSR tables.
#include <algorithm>
#include <map>
#include <sstream>
#include <unordered_map>

#include "grammar/grammar_fsm.h"
#include "grammar/tag_dispatch.h"
#include "support/cancellation.h"
#include "support/error.h"
#include "support/utf8.h"

namespace xg2 {
namespace {

constexpr int kEpsilon = -1;

struct NfaEdge {
  int kind;  // kEpsilon, or -2 for a byte range, or a rule id >= 0
  uint8_t lo = 0, hi = 0;
  int32_t target;
};
constexpr int kByteRange = -2;

struct Nfa {
  std::vector<std::vector<NfaEdge>> edges;
  int32_t start = 0;
  int32_t accept = 0;
  int32_t AddNode() {
    edges.emplace_back();
    return static_cast<int32_t>(edges.size() - 1);
  }
};

class NfaBuilder {
 public:
  NfaBuilder(const GrammarAst& ast, Nfa* nfa, int64_t* budget) : ast_(ast), nfa_(nfa), budget_(budget) {}

  // Adds states so that the language from `from` to the returned node is `expr`.
  int32_t Lower(ExprId expr, int32_t from) {
    const ExprNode& node = ast_.node(expr);
    switch (node.kind) {
      case ExprKind::kEmpty:
        return from;
      case ExprKind::kBytes: {
        int32_t cur = from;
        for (char c : node.bytes) {
          int32_t next = NewNode();
          AddByte(cur, static_cast<uint8_t>(c), static_cast<uint8_t>(c), next);
          cur = next;
        }
        return cur;
      }
      case ExprKind::kCharClass: {
        int32_t to = NewNode();
        for (const CodepointRange& r : node.ranges) AddCodepointRange(from, r.first, r.last, to);
        return to;
      }
      case ExprKind::kRuleRef: {
        int32_t to = NewNode();
        nfa_->edges[from].push_back({node.rule_id, 0, 0, to});
        return to;
      }
      case ExprKind::kSequence: {
        int32_t cur = from;
        for (ExprId child : node.children) cur = Lower(child, cur);
        return cur;
      }
      case ExprKind::kChoice: {
        int32_t to = NewNode();
        for (ExprId child : node.children) {
          int32_t start = NewNode();
          AddEpsilon(from, start);
          AddEpsilon(Lower(child, start), to);
        }
        return to;
      }
      case ExprKind::kTagDispatch:
        throw GrammarSyntaxError("TagDispatch must be a whole rule body and cannot be part of a "
                                 "lookahead assertion");
      case ExprKind::kRepeat: {
        ExprId child = node.children[0];
        int32_t cur = from;
        for (int32_t i = 0; i < node.min_repeat; ++i) cur = LowerIsolated(child, cur);
        if (node.max_repeat < 0) {
          // Kleene star: a loop node with the body hanging off it.
          int32_t loop = NewNode();
          AddEpsilon(cur, loop);
          int32_t body_end = LowerIsolated(child, loop);
          AddEpsilon(body_end, loop);
          return loop;
        }
        int32_t to = NewNode();
        AddEpsilon(cur, to);
        for (int32_t i = node.min_repeat; i < node.max_repeat; ++i) {
          cur = LowerIsolated(child, cur);
          AddEpsilon(cur, to);
        }
        return to;
      }
    }
    return from;
  }

 private:
  // Lowers `expr` between fresh entry and exit nodes joined by epsilon edges, so loops
  // built around it cannot leak into neighbouring constructs.
  int32_t LowerIsolated(ExprId expr, int32_t from) {
    int32_t entry = NewNode();
    AddEpsilon(from, entry);
    int32_t exit = NewNode();
    AddEpsilon(Lower(expr, entry), exit);
    return exit;
  }

  int32_t NewNode() {
    ThrowIfCancelled();
    if (--*budget_ < 0) {
      throw ResourceLimitError("grammar too large: more than the node limit of the FSM builder "
                               "(reduce repetition bounds or grammar size)");
    }
    return nfa_->AddNode();
  }
  void AddEpsilon(int32_t from, int32_t to) { nfa_->edges[from].push_back({kEpsilon, 0, 0, to}); }
  void AddByte(int32_t from, uint8_t lo, uint8_t hi, int32_t to) {
    nfa_->edges[from].push_back({kByteRange, lo, hi, to});
  }

  void AddCodepointRange(int32_t from, uint32_t first, uint32_t last, int32_t to) {
    // Surrogates have no UTF-8 encoding; skip them if a range spans the block.
    if (first <= 0xDFFF && last >= 0xD800) {
      if (first < 0xD800) AddCodepointRange(from, first, 0xD7FF, to);
      if (last > 0xDFFF) AddCodepointRange(from, 0xE000, last, to);
      return;
    }
    for (const Utf8ByteSequence& seq : Utf8RangeSequences(first, last)) {
      int32_t cur = from;
      for (int i = 0; i < seq.length; ++i) {
        int32_t next = (i + 1 == seq.length) ? to : NewNode();
        AddByte(cur, seq.lo[i], seq.hi[i], next);
        cur = next;
      }
    }
  }

  const GrammarAst& ast_;
  Nfa* nfa_;
  int64_t* budget_;
};

// A DFA for one rule, before flattening. Node 0 is the start.
struct Dfa {
  struct Node {
    std::vector<ByteEdge> byte_edges;  // sorted, disjoint
    std::vector<RuleEdge> rule_edges;  // sorted by rule
    bool accepting = false;
  };
  std::vector<Node> nodes;
};

class SubsetConstruction {
 public:
  SubsetConstruction(const Nfa& nfa, int64_t* budget) : nfa_(nfa), budget_(budget) {}

  Dfa Run() {
    Dfa dfa;
    std::vector<int32_t> start = Closure({nfa_.start});
    Intern(start, &dfa);
    for (size_t i = 0; i < worklist_.size(); ++i) {
      ThrowIfCancelled();
      Expand(static_cast<int32_t>(i), &dfa);
    }
    return dfa;
  }

 private:
  std::vector<int32_t> Closure(std::vector<int32_t> set) {
    std::vector<int32_t> stack(set);
    // Generation-stamped marks: clearing is O(1), so closures cost only what they visit.
    if (mark_.size() != nfa_.edges.size()) mark_.assign(nfa_.edges.size(), 0);
    if (++generation_ == 0) {
      std::fill(mark_.begin(), mark_.end(), 0);
      generation_ = 1;
    }
    for (int32_t n : set) mark_[n] = generation_;
    while (!stack.empty()) {
      int32_t n = stack.back();
      stack.pop_back();
      for (const NfaEdge& e : nfa_.edges[n]) {
        if (e.kind == kEpsilon && mark_[e.target] != generation_) {
          mark_[e.target] = generation_;
          set.push_back(e.target);
          stack.push_back(e.target);
        }
      }
    }
    std::sort(set.begin(), set.end());
    return set;
  }

  int32_t Intern(const std::vector<int32_t>& set, Dfa* dfa) {
    auto it = ids_.find(set);
    if (it != ids_.end()) return it->second;
    if (--*budget_ < 0) {
      throw ResourceLimitError("grammar too large: determinisation exceeded the node limit");
    }
    int32_t id = static_cast<int32_t>(dfa->nodes.size());
    dfa->nodes.emplace_back();
    dfa->nodes.back().accepting = std::binary_search(set.begin(), set.end(), nfa_.accept);
    ids_.emplace(set, id);
    worklist_.push_back(set);
    return id;
  }

  void Expand(int32_t id, Dfa* dfa) {
    const std::vector<int32_t> set = worklist_[id];
    // Byte edges: cut [0, 255] at every range boundary, then gather targets per piece.
    std::vector<int> cuts;
    std::map<int32_t, std::vector<int32_t>> rule_targets;
    for (int32_t n : set) {
      for (const NfaEdge& e : nfa_.edges[n]) {
        if (e.kind == kByteRange) {
          cuts.push_back(e.lo);
          cuts.push_back(e.hi + 1);
        } else if (e.kind >= 0) {
          rule_targets[e.kind].push_back(e.target);
        }
      }
    }
    std::sort(cuts.begin(), cuts.end());
    cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
    std::vector<ByteEdge> byte_edges;
    for (size_t c = 0; c + 1 < cuts.size(); ++c) {
      int lo = cuts[c], hi = cuts[c + 1] - 1;
      std::vector<int32_t> targets;
      for (int32_t n : set) {
        for (const NfaEdge& e : nfa_.edges[n]) {
          if (e.kind == kByteRange && e.lo <= lo && hi <= e.hi) targets.push_back(e.target);
        }
      }
      if (targets.empty()) continue;
      int32_t target = Intern(Closure(std::move(targets)), dfa);
      if (!byte_edges.empty() && byte_edges.back().target == target && byte_edges.back().hi + 1 == lo) {
        byte_edges.back().hi = static_cast<uint8_t>(hi);
      } else {
        byte_edges.push_back({static_cast<uint8_t>(lo), static_cast<uint8_t>(hi), target});
      }
    }
    std::vector<RuleEdge> rule_edges;
    for (auto& [rule, targets] : rule_targets) {
      rule_edges.push_back({rule, Intern(Closure(std::move(targets)), dfa)});
    }
    dfa->nodes[id].byte_edges = std::move(byte_edges);
    dfa->nodes[id].rule_edges = std::move(rule_edges);
  }

  const Nfa& nfa_;
  int64_t* budget_;
  std::vector<uint32_t> mark_;
  uint32_t generation_ = 0;
  std::map<std::vector<int32_t>, int32_t> ids_;
  std::vector<std::vector<int32_t>> worklist_;
};

// Moore partition refinement; also drops states that cannot reach an accepting state.
// Skipped above kMaxMinimizeNodes, where the quadratic worst case would dominate compile
// time; the DFA is then correct but possibly not minimal.
constexpr size_t kMaxMinimizeNodes = 256;

Dfa Minimize(const Dfa& dfa) {
  size_t n = dfa.nodes.size();
  // Live states: those that can reach acceptance.
  std::vector<std::vector<int32_t>> reverse(n);
  for (size_t i = 0; i < n; ++i) {
    for (const auto& e : dfa.nodes[i].byte_edges) reverse[e.target].push_back(static_cast<int32_t>(i));
    for (const auto& e : dfa.nodes[i].rule_edges) reverse[e.target].push_back(static_cast<int32_t>(i));
  }
  std::vector<uint8_t> live(n, 0);
  std::vector<int32_t> stack;
  for (size_t i = 0; i < n; ++i) {
    if (dfa.nodes[i].accepting) {
      live[i] = 1;
      stack.push_back(static_cast<int32_t>(i));
    }
  }
  while (!stack.empty()) {
    int32_t s = stack.back();
    stack.pop_back();
    for (int32_t p : reverse[s]) {
      if (!live[p]) {
        live[p] = 1;
        stack.push_back(p);
      }
    }
  }

  std::vector<int32_t> cls(n);
  for (size_t i = 0; i < n; ++i) cls[i] = !live[i] ? -1 : (dfa.nodes[i].accepting ? 1 : 0);
  if (n <= kMaxMinimizeNodes) {
    size_t num_classes = 0;
    for (;;) {
      std::map<std::vector<int64_t>, int32_t> signature_ids;
      std::vector<int32_t> next(n, -1);
      for (size_t i = 0; i < n; ++i) {
        if (cls[i] < 0) continue;
        std::vector<int64_t> sig{cls[i]};
        for (const auto& e : dfa.nodes[i].byte_edges) {
          if (cls[e.target] < 0) continue;
          sig.push_back(e.lo);
          sig.push_back(e.hi);
          sig.push_back(cls[e.target]);
        }
        sig.push_back(-7);
        for (const auto& e : dfa.nodes[i].rule_edges) {
          if (cls[e.target] < 0) continue;
          sig.push_back(e.rule);
          sig.push_back(cls[e.target]);
        }
        auto it = signature_ids.emplace(std::move(sig), static_cast<int32_t>(signature_ids.size())).first;
        next[i] = it->second;
      }
      cls.swap(next);
      if (signature_ids.size() == num_classes) break;
      num_classes = signature_ids.size();
    }
  } else {
    for (size_t i = 0; i < n; ++i) cls[i] = live[i] ? static_cast<int32_t>(i) : -1;
  }

  // Renumber classes in BFS order from the start so the result is canonical.
  Dfa out;
  std::unordered_map<int32_t, int32_t> new_id;
  std::vector<int32_t> representative;
  auto id_of = [&](int32_t state) {
    auto [it, inserted] = new_id.emplace(cls[state], static_cast<int32_t>(representative.size()));
    if (inserted) representative.push_back(state);
    return it->second;
  };
  if (cls[0] < 0) {
    out.nodes.emplace_back();  // the rule's language is empty: a lone, non-accepting start
    return out;
  }
  id_of(0);
  for (size_t k = 0; k < representative.size(); ++k) {
    const Dfa::Node& src = dfa.nodes[representative[k]];
    Dfa::Node node;
    node.accepting = src.accepting;
    for (const auto& e : src.byte_edges) {
      if (cls[e.target] < 0) continue;
      int32_t t = id_of(e.target);
      if (!node.byte_edges.empty() && node.byte_edges.back().target == t &&
          node.byte_edges.back().hi + 1 == e.lo) {
        node.byte_edges.back().hi = e.hi;
      } else {
        node.byte_edges.push_back({e.lo, e.hi, t});
      }
    }
    for (const auto& e : src.rule_edges) {
      if (cls[e.target] < 0) continue;
      node.rule_edges.push_back({e.rule, id_of(e.target)});
    }
    out.nodes.push_back(std::move(node));
  }
  return out;
}

Dfa BuildRuleDfa(const GrammarAst& ast, ExprId body, int64_t* budget) {
  Nfa nfa;
  nfa.start = nfa.AddNode();
  NfaBuilder builder(ast, &nfa, budget);
  nfa.accept = builder.Lower(body, nfa.start);
  SubsetConstruction subsets(nfa, budget);
  Dfa dfa = Minimize(subsets.Run());
  *budget += static_cast<int64_t>(nfa.edges.size());  // the NFA is freed; only DFA nodes stay
  return dfa;
}

// A rule whose body is a TagDispatch is lowered directly to its (deterministic) machine.
Dfa BuildTagDispatchDfa(const GrammarAst& ast, const RuleDef& rule, int64_t* budget) {
  RuleMachine machine = BuildTagDispatchMachine(
      ast.tag_dispatches[ast.node(rule.body).tag_dispatch], rule.name, budget);
  Dfa dfa;
  for (RuleMachine::Node& node : machine.nodes) {
    dfa.nodes.push_back({std::move(node.byte_edges), std::move(node.rule_edges), node.accepting});
  }
  return dfa;
}

// Returns a copy of `expr` (added to `ast`) in which every rule reference is replaced by the
// rule's body, recursively. Recursion (a non-regular assertion) is an error.
ExprId InlineRuleRefs(GrammarAst* ast, ExprId expr, const std::string& owner, int depth) {
  constexpr int kMaxInlineDepth = 64;
  if (depth > kMaxInlineDepth) {
    throw GrammarSyntaxError("rule '" + owner +
                             "': its lookahead assertion refers to rules recursively; "
                             "a lookahead must be a regular expression");
  }
  ExprNode node = ast->node(expr);
  if (node.kind == ExprKind::kRuleRef) {
    return InlineRuleRefs(ast, ast->rules[node.rule_id].body, owner, depth + 1);
  }
  for (ExprId& child : node.children) child = InlineRuleRefs(ast, child, owner, depth + 1);
  return ast->AddNode(std::move(node));
}

}  // namespace

GrammarFsm BuildGrammarFsm(const GrammarAst& ast, const FsmBuildLimits& limits) {
  GrammarFsm fsm;
  int32_t num_rules = static_cast<int32_t>(ast.rules.size());
  if (ast.root_rule < 0 || ast.root_rule >= num_rules) {
    throw GrammarSyntaxError("grammar has no root rule");
  }
  fsm.root_rule = ast.root_rule;
  int64_t budget = limits.max_nodes;
  std::vector<Dfa> dfas;
  dfas.reserve(num_rules);
  for (const RuleDef& rule : ast.rules) {
    dfas.push_back(ast.node(rule.body).kind == ExprKind::kTagDispatch
                       ? BuildTagDispatchDfa(ast, rule, &budget)
                       : BuildRuleDfa(ast, rule.body, &budget));
  }
  // Lookahead DFAs: rule references inside an assertion are inlined (the assertion must be
  // regular), then lowered like a rule body.
  std::vector<int32_t> lookahead_dfa(num_rules, -1);
  std::vector<Dfa> lookahead_dfas;
  GrammarAst inlined;  // copied from `ast` on first use
  for (int32_t r = 0; r < num_rules; ++r) {
    if (ast.rules[r].lookahead < 0) continue;
    if (inlined.rules.empty()) inlined = ast;
    ExprId body = InlineRuleRefs(&inlined, ast.rules[r].lookahead, ast.rules[r].name, 0);
    Dfa dfa = BuildRuleDfa(inlined, body, &budget);
    if (dfa.nodes[0].accepting) continue;  // matches the empty string: always true
    lookahead_dfa[r] = static_cast<int32_t>(lookahead_dfas.size());
    lookahead_dfas.push_back(std::move(dfa));
  }

  // Flatten into the global node space.
  fsm.rule_first_node.push_back(0);
  for (int32_t r = 0; r < num_rules; ++r) {
    fsm.rule_names.push_back(ast.rules[r].name);
    NodeId base = fsm.rule_first_node.back();
    fsm.rule_start.push_back(base);
    fsm.rule_first_node.push_back(base + static_cast<NodeId>(dfas[r].nodes.size()));
  }
  fsm.byte_edge_begin.push_back(0);
  fsm.rule_edge_begin.push_back(0);
  auto append_dfa = [&fsm](const Dfa& dfa, RuleId owner) {
    NodeId base = static_cast<NodeId>(fsm.node_rule.size());
    for (const Dfa::Node& node : dfa.nodes) {
      fsm.node_rule.push_back(owner);
      fsm.node_accepting.push_back(node.accepting);
      for (const ByteEdge& e : node.byte_edges) fsm.byte_edges.push_back({e.lo, e.hi, base + e.target});
      for (const RuleEdge& e : node.rule_edges) {
        // Every pass must keep rule ids valid; the parser indexes rule tables with them.
        if (e.rule < 0 || e.rule >= static_cast<RuleId>(fsm.rule_start.size())) {
          throw GrammarSyntaxError("internal error: a rule edge names rule " + std::to_string(e.rule) +
                                   " of " + std::to_string(fsm.rule_start.size()));
        }
        fsm.rule_edges.push_back({e.rule, base + e.target});
      }
      fsm.byte_edge_begin.push_back(static_cast<int32_t>(fsm.byte_edges.size()));
      fsm.rule_edge_begin.push_back(static_cast<int32_t>(fsm.rule_edges.size()));
    }
    return base;
  };
  for (int32_t r = 0; r < num_rules; ++r) append_dfa(dfas[r], r);
  fsm.rule_lookahead.assign(num_rules, -1);
  for (int32_t r = 0; r < num_rules; ++r) {
    if (lookahead_dfa[r] >= 0) {
      fsm.rule_lookahead[r] = append_dfa(lookahead_dfas[lookahead_dfa[r]], -1);
      fsm.has_lookahead = true;
    }
  }

  // Nullability: a rule is nullable iff an accepting node is reachable from its start
  // through rule edges of nullable rules only. Iterate to a fixpoint.
  fsm.rule_nullable.assign(num_rules, 0);
  for (bool changed = true; changed;) {
    changed = false;
    for (int32_t r = 0; r < num_rules; ++r) {
      if (fsm.rule_nullable[r]) continue;
      std::vector<NodeId> stack{fsm.rule_start[r]};
      std::vector<uint8_t> seen(fsm.rule_first_node[r + 1] - fsm.rule_first_node[r], 0);
      seen[0 + fsm.rule_start[r] - fsm.rule_first_node[r]] = 1;
      bool nullable = false;
      while (!stack.empty() && !nullable) {
        NodeId n = stack.back();
        stack.pop_back();
        if (fsm.node_accepting[n]) nullable = true;
        for (const RuleEdge* e = fsm.rule_edges_begin(n); e != fsm.rule_edges_end(n); ++e) {
          int32_t local = e->target - fsm.rule_first_node[r];
          if (fsm.rule_nullable[e->rule] && !seen[local]) {
            seen[local] = 1;
            stack.push_back(e->target);
          }
        }
      }
      if (nullable) {
        fsm.rule_nullable[r] = 1;
        changed = true;
      }
    }
  }
  for (int32_t r = 0; r < num_rules; ++r) {
    if (fsm.rule_lookahead[r] >= 0 && fsm.rule_nullable[r]) {
      throw GrammarSyntaxError("rule '" + fsm.rule_names[r] +
                               "': a lookahead assertion on a rule that can match the empty "
                               "string is not supported");
    }
  }
  return fsm;
}

size_t GrammarFsm::MemoryBytes() const {
  return sizeof(*this) + rule_start.capacity() * 4 + rule_first_node.capacity() * 4 +
         rule_nullable.capacity() + node_rule.capacity() * 4 + node_accepting.capacity() +
         byte_edge_begin.capacity() * 4 + byte_edges.capacity() * sizeof(ByteEdge) +
         rule_edge_begin.capacity() * 4 + rule_edges.capacity() * sizeof(RuleEdge);
}

std::string GrammarFsm::ToString() const {
  std::ostringstream os;
  for (int32_t r = 0; r < num_rules(); ++r) {
    os << "rule " << rule_names[r] << (rule_nullable[r] ? " (nullable)" : "") << " start "
       << rule_start[r] << "\n";
    for (NodeId n = rule_first_node[r]; n < rule_first_node[r + 1]; ++n) {
      os << "  " << n << (node_accepting[n] ? "*" : "") << ":";
      for (const ByteEdge* e = byte_edges_begin(n); e != byte_edges_end(n); ++e) {
        os << " [" << int(e->lo) << "-" << int(e->hi) << "]->" << e->target;
      }
      for (const RuleEdge* e = rule_edges_begin(n); e != rule_edges_end(n); ++e) {
        os << " <" << rule_names[e->rule] << ">->" << e->target;
      }
      os << "\n";
    }
  }
  return os.str();
}

}  // namespace xg2
