// The invariant checkers (grammar/fsm_invariants.h, grammar/fsm_automata.h) accept what the
// builder makes and reject hand-broken copies of it, one invariant at a time; and the
// builder's own call sites fire (the tests build the engine with XG2_FORCE_DCHECKS).
#include <string>
#include <utility>
#include <vector>

#include "check.h"
#include "fsm_test_support.h"
#include "grammar/fsm_invariants.h"
#include "grammar/token_literal.h"
#include "support/dcheck.h"

namespace xg2_test {
namespace {

// root ::= ("ab" | "cd") inner "e" [m] ; inner ::= [x-z]+ "q" | "" : nodes with several
// byte edges, a rule edge to a nullable rule, and a token-set marker.
GrammarFsm ValidFsm() {
  AstBuilder b;
  const RuleId root = b.DeclareRule("root");
  const RuleId inner = b.Rule("inner", b.Choice({b.Seq({b.Repeat(b.Class({{'x', 'z'}}), 1, -1), b.Bytes("q")}),
                                                 b.Empty()}));
  b.ast.token_sets.push_back({{1, 2}, false});
  b.ast.rules[root].body = b.Seq({b.Choice({b.Bytes("ab"), b.Bytes("cd")}), b.Ref(inner), b.Bytes("e"),
                                  b.Bytes(TokenSetMarkerBytes(0))});
  return BuildGrammarFsm(b.ast);
}

// root ::= [a-z]{0,200}, compressed into a counted loop.
GrammarFsm LoopFsm() {
  AstBuilder b;
  b.Rule("root", b.Repeat(b.Class({{'a', 'z'}}), 0, 200));
  FsmBuildLimits limits;
  limits.repetition_compression_threshold = 64;
  limits.max_token_bytes = 4;
  return BuildGrammarFsm(b.ast, limits);
}

// The first node with at least `count` byte edges.
NodeId NodeWithByteEdges(const GrammarFsm& fsm, int32_t count) {
  for (NodeId n = 0; n < fsm.num_nodes(); ++n) {
    if (fsm.byte_edge_begin[n + 1] - fsm.byte_edge_begin[n] >= count) return n;
  }
  return -1;
}

// Applies `breaks` to a copy of `fsm` and expects the checker to name `fragment`.
template <typename Break>
void ExpectRejected(const GrammarFsm& fsm, Break breaks, const std::string& fragment) {
  GrammarFsm broken = fsm;
  breaks(&broken);
  CHECK_THROWS(CheckGrammarFsmInvariants(broken, "a test"), InternalError, fragment);
}

TEST(CheckerAcceptsWhatTheBuilderMakes) {
  const GrammarFsm fsm = ValidFsm();
  CheckGrammarFsmInvariants(fsm, "a test");
  CheckGrammarFsmInvariants(LoopFsm(), "a test");
  CHECK(fsm.has_token_sets());
  CHECK(!fsm.rule_edges.empty());
  CHECK(NodeWithByteEdges(fsm, 2) >= 0);
}

TEST(CheckerRejectsBrokenByteEdges) {
  const GrammarFsm fsm = ValidFsm();
  const NodeId n = NodeWithByteEdges(fsm, 2);
  const int32_t first = fsm.byte_edge_begin[n];
  ExpectRejected(fsm, [&](GrammarFsm* f) { std::swap(f->byte_edges[first], f->byte_edges[first + 1]); },
                 "byte edges are not sorted and disjoint");
  ExpectRejected(fsm, [&](GrammarFsm* f) { f->byte_edges[first + 1].lo = f->byte_edges[first].hi; },
                 "byte edges are not sorted and disjoint");
  ExpectRejected(fsm, [&](GrammarFsm* f) { f->byte_edges[first].lo = 5, f->byte_edges[first].hi = 0; },
                 "has the byte edge");
  // Into the other rule's block.
  const RuleId other = fsm.node_rule[n] == 0 ? 1 : 0;
  ExpectRejected(fsm, [&](GrammarFsm* f) { f->byte_edges[first].target = f->rule_nodes[other].begin; },
                 "outside its block");
  ExpectRejected(fsm, [&](GrammarFsm* f) { f->byte_edges[first].target = f->num_nodes(); }, "outside its block");
}

TEST(CheckerRejectsBrokenOffsets) {
  const GrammarFsm fsm = ValidFsm();
  ExpectRejected(fsm, [](GrammarFsm* f) { f->byte_edge_begin.back() += 1; }, "byte_edge_begin ends at");
  ExpectRejected(fsm, [](GrammarFsm* f) { f->rule_edge_begin.pop_back(); }, "rule_edge_begin has");
  ExpectRejected(fsm, [](GrammarFsm* f) { f->byte_edge_begin[2] = f->byte_edge_begin[1] - 1; }, "decreases");
  ExpectRejected(fsm, [](GrammarFsm* f) { f->node_accepting.push_back(0); }, "differ in size");
  ExpectRejected(fsm, [](GrammarFsm* f) { f->rule_nullable.pop_back(); }, "disagree on the number of rules");
}

TEST(CheckerRejectsBrokenRuleTables) {
  const GrammarFsm fsm = ValidFsm();
  ExpectRejected(fsm, [](GrammarFsm* f) { f->node_rule[0] = 1; }, "has node_rule");
  ExpectRejected(fsm, [](GrammarFsm* f) { f->rule_start[1] = f->rule_nodes[0].begin; }, "start is outside its block");
  ExpectRejected(fsm, [](GrammarFsm* f) { f->root_rule = 7; }, "root rule");
  ExpectRejected(fsm, [](GrammarFsm* f) { f->rule_edges[0].rule = 9; }, "calls rule 9");
  ExpectRejected(fsm, [](GrammarFsm* f) { f->rule_nullable[1] = 0; }, "says otherwise");
  ExpectRejected(fsm, [](GrammarFsm* f) { f->rule_nullable[0] = 1; }, "says otherwise");
  ExpectRejected(fsm, [](GrammarFsm* f) { f->has_lookahead = true; }, "has_lookahead");
}

TEST(CheckerRejectsDuplicateRuleEdges) {
  GrammarFsm fsm = ValidFsm();
  // Give the calling node a second edge for the same rule.
  NodeId caller = -1;
  for (NodeId n = 0; n < fsm.num_nodes() && caller < 0; ++n) {
    if (fsm.rule_edge_begin[n + 1] > fsm.rule_edge_begin[n]) caller = n;
  }
  CHECK(caller >= 0);
  const RuleEdge edge = fsm.rule_edges[fsm.rule_edge_begin[caller]];
  fsm.rule_edges.insert(fsm.rule_edges.begin() + fsm.rule_edge_begin[caller], edge);
  for (NodeId n = caller + 1; n <= fsm.num_nodes(); ++n) ++fsm.rule_edge_begin[n];
  CHECK_THROWS(CheckGrammarFsmInvariants(fsm, "a test"), InternalError, "one per rule");
}

TEST(CheckerRejectsBrokenCountedLoops) {
  const GrammarFsm fsm = LoopFsm();
  CHECK_EQ(fsm.counted_loops.size(), size_t{1});
  const CountedLoop loop = fsm.counted_loops[0];
  ExpectRejected(fsm, [](GrammarFsm* f) { f->counted_loops[0].limit = 0; }, "has limit 0");
  ExpectRejected(fsm, [&](GrammarFsm* f) { f->node_gate_loop[loop.gate] = -1; }, "gate is not the one node");
  ExpectRejected(fsm, [&](GrammarFsm* f) { f->node_loop[loop.head] = -1; }, "head carries no counter");
  ExpectRejected(fsm, [](GrammarFsm* f) { f->node_loop.pop_back(); }, "one entry per node");
  ExpectRejected(fsm, [](GrammarFsm* f) { f->node_loop[0] = 3; }, "names counted loop 3");
  ExpectRejected(fsm, [](GrammarFsm* f) { f->counted_loops.clear(); }, "without a counted loop");
  ExpectRejected(fsm, [&](GrammarFsm* f) { f->counted_loops[0].gate = -1; }, "has head");
}

TEST(CheckerRejectsBrokenTokenSets) {
  const GrammarFsm fsm = ValidFsm();
  CHECK_EQ(fsm.token_set_edges.size(), size_t{1});
  ExpectRejected(fsm, [](GrammarFsm* f) { f->token_set_edges[0].set = 4; }, "edge of token set 4");
  ExpectRejected(fsm, [](GrammarFsm* f) { f->token_set_edges[0].target = f->num_nodes() + 3; }, "outside its block");
  ExpectRejected(fsm, [](GrammarFsm* f) { f->token_sets[0].ids = {2, 1}; }, "sorted and unique");
  ExpectRejected(fsm, [](GrammarFsm* f) { f->token_set_edge_begin.back() = 0; }, "token_set_edge_begin");
  ExpectRejected(fsm, [](GrammarFsm* f) { f->token_sets.clear(); }, "token-set edges without token sets");
}

TEST(RuleDfaCheckerRejectsBrokenAutomata) {
  AstBuilder b;
  const Stages stages = RunStages(b.ast, b.Choice({b.Bytes("ab"), b.Bytes("b"), b.Bytes("c")}));
  CheckRuleDfaInvariants(stages.minimal, 0, "a test");
  CheckFlatDfaInvariants(stages.determinised, "a test");
  Dfa unsorted = stages.minimal;
  std::swap(unsorted.byte_edges[0], unsorted.byte_edges[1]);
  CHECK_THROWS(CheckRuleDfaInvariants(unsorted, 0, "a test"), InternalError, "not sorted and disjoint");
  Dfa dangling = stages.minimal;
  dangling.byte_edges[0].target = dangling.size();
  CHECK_THROWS(CheckRuleDfaInvariants(dangling, 0, "a test"), InternalError, "has a byte edge to");
  Dfa calls = stages.minimal;
  calls.rule_edges.push_back({5, 0});
  calls.nodes[0].rule_begin = 0;
  calls.nodes[0].rule_end = 1;
  CHECK_THROWS(CheckRuleDfaInvariants(calls, 2, "a test"), InternalError, "calls rule 5");
  Dfa looped = stages.minimal;
  looped.nodes[1].loop = 0;
  CHECK_THROWS(CheckRuleDfaInvariants(looped, 0, "a test"), InternalError, "has loop 0");
  FlatDfa offsets = stages.determinised;
  offsets.byte_begin.back() += 1;
  CHECK_THROWS(CheckFlatDfaInvariants(offsets, "a test"), InternalError, "do not span");
}

TEST(AstCheckerRejectsBrokenAsts) {
  auto base = [] {
    AstBuilder b;
    const RuleId root = b.DeclareRule("root");
    const RuleId word = b.Rule("word", b.Repeat(b.Class({{'a', 'z'}}), 1, 8));
    b.ast.rules[root].body = b.Seq({b.Bytes("<"), b.Ref(word), b.Bytes(">")});
    return b.ast;
  };
  CheckGrammarAstInvariants(base(), "a test");
  auto rejected = [&](auto breaks, const std::string& fragment) {
    GrammarAst ast = base();
    breaks(&ast);
    CHECK_THROWS(CheckGrammarAstInvariants(ast, "a test"), InternalError, fragment);
  };
  const ExprId root_body = base().rules[0].body;
  rejected([&](GrammarAst* a) { a->node(root_body).children.push_back(99); }, "has the child 99");
  rejected([&](GrammarAst* a) { a->node(root_body).children.push_back(root_body); }, "its own descendant");
  rejected([](GrammarAst* a) { a->nodes[0].kind = ExprKind::kBytes; a->nodes[0].bytes.clear(); }, "empty byte string");
  rejected([](GrammarAst* a) { a->nodes[0].ranges = {{'m', 'z'}, {'a', 'c'}}; }, "not sorted, disjoint");
  rejected([](GrammarAst* a) { a->nodes[0].ranges = {{'a', 'c'}, {'d', 'z'}}; }, "non-adjacent");
  rejected([](GrammarAst* a) { a->nodes[1].min_repeat = 9; }, "repeats {9,8}");
  rejected([](GrammarAst* a) { a->node(a->rules[0].body).children.clear(); }, "without children");
  rejected([](GrammarAst* a) {
    for (ExprNode& node : a->nodes) {
      if (node.kind == ExprKind::kRuleRef) node.rule_id = 5;
    }
  }, "refers to rule 5");
  rejected([](GrammarAst* a) { a->rules[1].body = 1000; }, "has the body 1000");
  // An unreachable node may be anything (earlier passes leave dropped bodies behind).
  GrammarAst unreachable = base();
  ExprNode stray;
  stray.kind = ExprKind::kRuleRef;
  stray.rule_id = 42;
  unreachable.AddNode(std::move(stray));
  CheckGrammarAstInvariants(unreachable, "a test");
}

TEST(BuilderChecksItsInputInDebugBuilds) {
  AstBuilder b;
  const ExprId body = b.Seq({b.Bytes("a"), b.Bytes("b")});
  b.Rule("root", body);
  b.ast.node(body).children.push_back(57);
  CHECK_THROWS(BuildGrammarFsm(b.ast), InternalError, "GrammarAst invariant broken after the grammar passes");
}

}  // namespace
}  // namespace xg2_test
