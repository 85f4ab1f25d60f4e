// Helpers of the FSM builder tests: an AST builder, the three stages of one rule run by
// hand, acceptance by each automaton, and enumeration of the strings over an alphabet.
#ifndef XG2_NATIVE_TESTS_FSM_TEST_SUPPORT_H_
#define XG2_NATIVE_TESTS_FSM_TEST_SUPPORT_H_

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "check.h"
#include "grammar/dfa_minimisation.h"
#include "grammar/fsm_automata.h"
#include "grammar/grammar_ast.h"
#include "grammar/grammar_fsm.h"
#include "grammar/nfa_builder.h"
#include "grammar/subset_construction.h"

namespace xg2_test {

using namespace xg2;             // NOLINT(build/namespaces): test code
using namespace xg2::fsm_build;  // NOLINT(build/namespaces)

// Builds a GrammarAst node by node; the first rule added is the root.
struct AstBuilder {
  GrammarAst ast;

  ExprId Bytes(const std::string& text) {
    ExprNode node;
    node.kind = ExprKind::kBytes;
    node.bytes = text;
    return ast.AddNode(std::move(node));
  }
  ExprId Class(std::vector<CodepointRange> ranges) {
    ExprNode node;
    node.kind = ExprKind::kCharClass;
    node.ranges = NormalizeRanges(std::move(ranges), false);
    return ast.AddNode(std::move(node));
  }
  ExprId Empty() { return ast.AddNode(ExprNode{}); }
  ExprId Seq(std::vector<ExprId> children) { return Compound(ExprKind::kSequence, children); }
  ExprId Choice(std::vector<ExprId> children) { return Compound(ExprKind::kChoice, children); }
  ExprId Repeat(ExprId child, int32_t lo, int32_t hi) {
    ExprNode node;
    node.kind = ExprKind::kRepeat;
    node.children = {child};
    node.min_repeat = lo;
    node.max_repeat = hi;
    return ast.AddNode(std::move(node));
  }
  ExprId Ref(RuleId rule) {
    ExprNode node;
    node.kind = ExprKind::kRuleRef;
    node.rule_id = rule;
    return ast.AddNode(std::move(node));
  }
  // A TagDispatch node over `dispatch` (added to the AST's dispatch table).
  ExprId TagDispatch(TagDispatchDef dispatch) {
    ast.tag_dispatches.push_back(std::move(dispatch));
    ExprNode node;
    node.kind = ExprKind::kTagDispatch;
    node.tag_dispatch = static_cast<int32_t>(ast.tag_dispatches.size() - 1);
    return ast.AddNode(std::move(node));
  }
  // Declares a rule whose body is set later (for rules that refer to each other).
  RuleId DeclareRule(const std::string& name) {
    ast.rules.push_back({name, -1, -1, -1});
    if (ast.root_rule < 0) ast.root_rule = 0;
    return static_cast<RuleId>(ast.rules.size() - 1);
  }
  RuleId Rule(const std::string& name, ExprId body) {
    const RuleId r = DeclareRule(name);
    ast.rules[r].body = body;
    return r;
  }

 private:
  ExprId Compound(ExprKind kind, const std::vector<ExprId>& children) {
    ExprNode node;
    node.kind = kind;
    node.children = children;
    return ast.AddNode(std::move(node));
  }
};

// One expression through stages 1-3 by hand, with no lowering context (no compression).
struct Stages {
  Nfa nfa;
  FlatDfa determinised;
  Dfa minimal;
};

inline Stages RunStages(const GrammarAst& ast, ExprId body) {
  Stages out;
  int64_t budget = int64_t{1} << 22;
  out.nfa.Reset();
  out.nfa.start = out.nfa.AddNode();
  out.nfa.accept = LowerRuleBody(ast, body, out.nfa.start, &out.nfa, &budget, nullptr, -1, "test", false);
  out.nfa.Finish();
  auto scratch = std::make_unique<SubsetScratch>();
  const FlatDfa* flat = Determinise(out.nfa, &budget, scratch.get());
  if (flat) out.determinised = *flat;
  out.minimal = Minimize(out.determinised);
  return out;
}

// Acceptance of a byte string by an epsilon-NFA without rule edges (set simulation).
inline bool NfaAccepts(const Nfa& nfa, const std::string& text) {
  std::vector<int32_t> current{nfa.start};
  auto close = [&nfa](std::vector<int32_t> set) {
    std::vector<uint8_t> in(nfa.num_nodes, 0);
    for (int32_t n : set) in[n] = 1;
    for (size_t k = 0; k < set.size(); ++k) {
      for (const NfaEdge& e : nfa.EdgesOf(set[k])) {
        if (e.kind == kEpsilon && !in[e.target]) in[e.target] = 1, set.push_back(e.target);
      }
    }
    return set;
  };
  current = close(current);
  for (char c : text) {
    const uint8_t byte = static_cast<uint8_t>(c);
    std::vector<int32_t> next;
    for (int32_t n : current) {
      for (const NfaEdge& e : nfa.EdgesOf(n)) {
        if (e.kind == kByteRange && e.lo <= byte && byte <= e.hi) next.push_back(e.target);
      }
    }
    current = close(next);
  }
  return std::find(current.begin(), current.end(), nfa.accept) != current.end();
}

// Acceptance by a DFA's byte edges (a FlatDfa or a Dfa: both have BytesOf).
template <typename Automaton>
int32_t StepBytes(const Automaton& dfa, int32_t state, uint8_t byte) {
  for (const ByteEdge& e : dfa.BytesOf(state)) {
    if (e.lo <= byte && byte <= e.hi) return e.target;
  }
  return -1;
}
inline bool DfaAccepts(const FlatDfa& dfa, const std::string& text) {
  int32_t s = 0;
  for (char c : text) {
    if ((s = StepBytes(dfa, s, static_cast<uint8_t>(c))) < 0) return false;
  }
  return dfa.accepting[s];
}
inline bool DfaAccepts(const Dfa& dfa, const std::string& text) {
  int32_t s = 0;
  for (char c : text) {
    if ((s = StepBytes(dfa, s, static_cast<uint8_t>(c))) < 0) return false;
  }
  return dfa.nodes[s].accepting;
}

// Acceptance by one rule of a GrammarFsm through byte edges only (a rule without calls).
inline bool RuleAccepts(const GrammarFsm& fsm, RuleId rule, const std::string& text) {
  NodeId n = fsm.rule_start[rule];
  for (char c : text) {
    if ((n = fsm.StepByte(n, static_cast<uint8_t>(c))) < 0) return false;
  }
  return fsm.node_accepting[n];
}

// Every string over `alphabet` of at most `max_length` characters, shortest first.
inline std::vector<std::string> AllStrings(const std::string& alphabet, size_t max_length) {
  std::vector<std::string> out{""};
  for (size_t k = 0; k < out.size(); ++k) {
    if (out[k].size() == max_length) continue;
    for (char c : alphabet) out.push_back(out[k] + c);
  }
  return out;
}

// A printable form of a Dfa, for equality checks and failure messages.
inline std::string Describe(const Dfa& dfa) {
  std::string out;
  for (int32_t s = 0; s < dfa.size(); ++s) {
    out += std::to_string(s) + (dfa.nodes[s].accepting ? "*" : "") + ":";
    for (const ByteEdge& e : dfa.BytesOf(s)) {
      out += " [" + std::to_string(e.lo) + "-" + std::to_string(e.hi) + "]->" + std::to_string(e.target);
    }
    for (const RuleEdge& e : dfa.RulesOf(s)) out += " <" + std::to_string(e.rule) + ">->" + std::to_string(e.target);
    out += "\n";
  }
  return out;
}

// `whole` with the rules from `first_unbuilt` on unbuilt: the snapshot a lazy compile would
// have published before their first prediction. Rules are laid out in rule order, so the
// nodes of rules from `first_unbuilt` on are the end of the node space.
inline GrammarFsm WithRulesUnbuiltFrom(const GrammarFsm& whole, RuleId first_unbuilt) {
  CHECK(!whole.has_lookahead && !whole.has_token_sets() && whole.counted_loops.empty());
  CHECK_EQ(whole.rule_nodes[whole.num_rules() - 1].end, whole.num_nodes());
  GrammarFsm older = whole;
  const NodeId kept = first_unbuilt < whole.num_rules() ? whole.rule_nodes[first_unbuilt].begin : whole.num_nodes();
  for (RuleId r = first_unbuilt; r < whole.num_rules(); ++r) {
    older.rule_start[r] = kUnbuiltRule;
    older.rule_nullable[r] = 0;
    older.rule_nodes[r] = NodeBlock{kept, kept};
  }
  older.node_rule.resize(kept);
  older.node_accepting.resize(kept);
  older.byte_edge_begin.resize(kept + 1);
  older.byte_edges.resize(older.byte_edge_begin.back());
  older.rule_edge_begin.resize(kept + 1);
  older.rule_edges.resize(older.rule_edge_begin.back());
  return older;
}

}  // namespace xg2_test

#endif  // XG2_NATIVE_TESTS_FSM_TEST_SUPPORT_H_
