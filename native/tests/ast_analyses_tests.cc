// The AST analyses of grammar/ast_rule_analyses.h on small hand-written grammars: nullability,
// FIRST and FOLLOW bytes, right-linear rules and groups, the build policy and its node
// bounds; and the debug checks of grammar/ast_analysis_checks.h, which every BuildGrammarFsm
// here runs (XG2_FORCE_DCHECKS), catching an FSM that disagrees with them.
#include <string>
#include <vector>

#include "check.h"
#include "fsm_test_support.h"
#include "grammar/ast_analysis_checks.h"
#include "grammar/ast_rule_analyses.h"
#include "support/dcheck.h"

namespace xg2_test {
namespace {

ByteSet Bytes(const std::string& chars) {
  ByteSet set;
  for (char c : chars) set.set(static_cast<uint8_t>(c));
  return set;
}

struct Analyses {
  RuleBodyOrder order;
  AstNullability nullable;
  AstByteSets bytes;
};

Analyses Analyse(const GrammarAst& ast) {
  Analyses a;
  a.order = ComputeRuleBodyOrder(ast);
  a.nullable = AstRuleNullable(ast, a.order);
  a.bytes = ComputeAstByteSets(ast, a.order, a.nullable);
  return a;
}

TEST(AstNullabilityFollowsChainsDeclaredCallerFirstAndLeavesEmptyLanguagesOut) {
  // root ::= a b ; a ::= b | "x" ; b ::= "" | c "y" ; c ::= c "z" (the empty language) ;
  // counted[json_chars=1..3] ::= "q"? (nullable body, but counts a character).
  AstBuilder b;
  const RuleId root = b.DeclareRule("root");
  const RuleId a = b.DeclareRule("a");
  const RuleId r_b = b.DeclareRule("b");
  const RuleId c = b.DeclareRule("c");
  const RuleId counted = b.Rule("counted", b.Repeat(b.Bytes("q"), 0, 1));
  b.ast.rules[counted].min_json_chars = 1;
  b.ast.rules[counted].max_json_chars = 3;
  b.ast.rules[root].body = b.Seq({b.Ref(a), b.Ref(r_b), b.Choice({b.Ref(counted), b.Empty()})});
  b.ast.rules[a].body = b.Choice({b.Ref(r_b), b.Bytes("x")});
  b.ast.rules[r_b].body = b.Choice({b.Empty(), b.Seq({b.Ref(c), b.Bytes("y")})});
  b.ast.rules[c].body = b.Seq({b.Ref(c), b.Bytes("z")});
  const Analyses an = Analyse(b.ast);
  CHECK(an.nullable.rule == (std::vector<uint8_t>{1, 1, 1, 0, 0}));
  // The build's own fixpoint agrees (and the build's debug check compares every rule).
  const GrammarFsm fsm = BuildGrammarFsm(b.ast);
  for (RuleId r = 0; r < 5; ++r) CHECK_EQ(fsm.rule_nullable[r], an.nullable.rule[r]);
}

TEST(AstNullabilityOfATagDispatchIsWhetherItMayStopAtEndOfSequence) {
  for (bool stop_eos : {true, false}) {
    AstBuilder b;
    const RuleId root = b.DeclareRule("root");
    const RuleId tag_rule = b.Rule("call", b.Bytes("{}"));
    TagDispatchDef dispatch;
    dispatch.tags.push_back({"<call>", tag_rule});
    dispatch.stop_eos = stop_eos;
    if (!stop_eos) dispatch.stop_strings.push_back("<end>");
    b.ast.rules[root].body = b.TagDispatch(dispatch);
    const Analyses an = Analyse(b.ast);
    CHECK_EQ(an.nullable.rule[root], stop_eos ? 1 : 0);
    CHECK_EQ(an.bytes.rule_first[root].count(), 256u);  // free text: any byte
    CHECK_EQ(an.bytes.rule_follow[tag_rule].count(), 256u);
    const GrammarFsm fsm = BuildGrammarFsm(b.ast);
    CHECK_EQ(fsm.rule_nullable[root], stop_eos ? 1 : 0);
  }
}

TEST(AstFirstAndFollowBytesReadThroughReferencesAndRepetitions) {
  // root ::= a "x" | "y" d ; a ::= "a" a | "" ; d ::= [é-ï] e? ; e ::= ("p" | "q")* "r"
  AstBuilder b;
  const RuleId root = b.DeclareRule("root");
  const RuleId a = b.DeclareRule("a");
  const RuleId d = b.DeclareRule("d");
  const RuleId e = b.DeclareRule("e");
  const ExprId pq = b.Choice({b.Bytes("p"), b.Bytes("q")});
  b.ast.rules[root].body = b.Choice({b.Seq({b.Ref(a), b.Bytes("x")}), b.Seq({b.Bytes("y"), b.Ref(d)})});
  b.ast.rules[a].body = b.Choice({b.Seq({b.Bytes("a"), b.Ref(a)}), b.Empty()});
  b.ast.rules[d].body = b.Seq({b.Class({{0xE9, 0xEF}}), b.Repeat(b.Ref(e), 0, 1)});
  b.ast.rules[e].body = b.Seq({b.Repeat(pq, 0, -1), b.Bytes("r")});
  const Analyses an = Analyse(b.ast);
  CHECK(an.bytes.rule_first[root] == Bytes("axy"));  // a is nullable: "x" starts root too
  CHECK(an.bytes.rule_first[a] == Bytes("a"));
  CHECK(an.bytes.rule_follow[a] == Bytes("x"));
  ByteSet c3;
  c3.set(0xC3);  // é..ï are two-byte sequences C3 A9..C3 AF
  CHECK(an.bytes.rule_first[d] == c3);
  CHECK(an.bytes.rule_first[e] == Bytes("pqr"));
  CHECK(an.bytes.rule_follow[d].none());  // root ends after d
  CHECK(an.bytes.rule_follow[e].none());
  CHECK(an.bytes.follow[pq] == Bytes("pqr"));  // the next iteration, or what ends the rule
  BuildGrammarFsm(b.ast);  // the leave sets of every node within the AST bound
}

TEST(LeaveSetBoundAndNullabilityChecksRejectAnFsmThatDisagrees) {
  // root ::= a "x" ; a ::= "a" | "" : no merging (root calls a before a byte), no synthetic rule.
  AstBuilder b;
  const RuleId root = b.DeclareRule("root");
  const RuleId a = b.Rule("a", b.Choice({b.Bytes("a"), b.Empty()}));
  b.ast.rules[root].body = b.Seq({b.Ref(a), b.Bytes("x")});
  const GrammarFsm fsm = BuildGrammarFsm(b.ast);
  AstCheckRecord record;
  for (RuleId r = 0; r < fsm.num_rules(); ++r) {
    record.dfa_nodes.push_back(fsm.rule_nodes[r].end - fsm.rule_nodes[r].begin);
    std::vector<RuleId> callees;
    for (NodeId n = fsm.rule_nodes[r].begin; n < fsm.rule_nodes[r].end; ++n) {
      for (const RuleEdge* e = fsm.rule_edges_begin(n); e != fsm.rule_edges_end(n); ++e) callees.push_back(e->rule);
    }
    record.callees.push_back(callees);
    record.has_compressible.push_back(0);
  }
  CheckAstAnalyses(b.ast, {}, fsm, record);  // the record as the build sees it: no complaint

  GrammarFsm wrong_nullable = fsm;
  wrong_nullable.rule_nullable[a] = 0;
  CHECK_THROWS(CheckAstAnalyses(b.ast, {}, wrong_nullable, record), InternalError, "nullability");

  // Rule a's byte edge widened to "a".."c": root's calling node could now be left by "b", "c".
  GrammarFsm wider = fsm;
  for (NodeId n = wider.rule_nodes[a].begin; n < wider.rule_nodes[a].end; ++n) {
    for (int32_t k = wider.byte_edge_begin[n]; k < wider.byte_edge_begin[n + 1]; ++k) wider.byte_edges[k].hi = 'c';
  }
  CHECK_THROWS(CheckAstAnalyses(b.ast, {}, wider, record), InternalError, "FIRST/FOLLOW");
}

TEST(AstRightLinearRulesAndGroupsMatchTheMergingPass) {
  // root ::= "a" r2 ; r2 ::= "b" r3 "" | "c" ; r3 ::= "d" (r3)? ; other ::= r3 "e" ;
  // lone ::= "z".  r3 is called by the impure rule `other`: an entry of its own.
  AstBuilder b;
  const RuleId root = b.DeclareRule("root");
  const RuleId r2 = b.DeclareRule("r2");
  const RuleId r3 = b.DeclareRule("r3");
  const RuleId other = b.DeclareRule("other");
  const RuleId lone = b.Rule("lone", b.Bytes("z"));
  b.ast.rules[root].body = b.Choice({b.Seq({b.Bytes("a"), b.Ref(r2)}), b.Ref(other), b.Ref(lone)});
  b.ast.rules[r2].body = b.Choice({b.Seq({b.Bytes("b"), b.Ref(r3), b.Empty()}), b.Bytes("c")});
  b.ast.rules[r3].body = b.Seq({b.Bytes("d"), b.Repeat(b.Ref(r3), 0, 1)});
  b.ast.rules[other].body = b.Seq({b.Ref(r3), b.Bytes("e")});
  const AstRightLinear rl = FindAstRightLinear(b.ast, std::vector<uint8_t>(5, 0));
  CHECK(rl.pure == (std::vector<uint8_t>{0, 1, 1, 0, 1}));
  CHECK(rl.entry == (std::vector<uint8_t>{1, 1, 1, 1, 1}));
  CHECK(AstRightLinearGroup(b.ast, rl, r2) == (std::vector<RuleId>{r2, r3}));
  CHECK(AstRightLinearGroup(b.ast, rl, r3) == (std::vector<RuleId>{r3}));  // refers to itself
  CHECK(AstRightLinearGroup(b.ast, rl, lone).empty());                       // refers to nothing
  CHECK(AstRightLinearGroup(b.ast, rl, root).empty());                       // not pure
  // Excluded (a lookahead, a budget, a loop): not pure, nor is what tail-calls it.
  std::vector<uint8_t> excluded(5, 0);
  excluded[r3] = 1;
  const AstRightLinear without_r3 = FindAstRightLinear(b.ast, excluded);
  CHECK(without_r3.pure == (std::vector<uint8_t>{0, 0, 0, 0, 1}));
  BuildGrammarFsm(b.ast);  // the merging pass's rules and groups equal these
}

TEST(ATagDispatchsTagRulesAreEntriesOnTheAstSideOnly) {
  // root ::= TagDispatch(("<s>", r), stop_eos=false, stop_str="s>") ; r ::= "1". The dispatch
  // reaches r through its table, not a rule edge: the merging pass does not make r an entry,
  // the AST side does, and the check (run by BuildGrammarFsm here) allows exactly that.
  AstBuilder b;
  const RuleId root = b.DeclareRule("root");
  const RuleId tag_rule = b.Rule("r", b.Bytes("1"));
  TagDispatchDef dispatch;
  dispatch.tags.push_back({"<s>", tag_rule});
  dispatch.stop_eos = false;
  dispatch.stop_strings.push_back("s>");
  b.ast.rules[root].body = b.TagDispatch(dispatch);
  const AstRightLinear rl = FindAstRightLinear(b.ast, std::vector<uint8_t>{1, 0});
  CHECK_EQ(rl.entry[tag_rule], 1);
  BuildGrammarFsm(b.ast);
}

TEST(ACompressibleRepetitionWithoutACountedLoopIsPureInTheDfasOnly) {
  // root ::= "x" tail ; tail ::= ("ab"){0,65}. With the threshold at 64 the repetition is
  // compressible, but with 128-byte tokens a counted loop needs more than 2 + 128 / 2 optional
  // copies, so it lowers to explicit copies: no loop in tail's DFA, which the merging pass
  // finds pure. The AST side cannot know that before the body's DFA exists and keeps tail out
  // (the difference the check allows one way, ast_analysis_checks.cc).
  AstBuilder b;
  const RuleId root = b.DeclareRule("root");
  const RuleId tail = b.Rule("tail", b.Repeat(b.Bytes("ab"), 0, 65));
  b.ast.rules[root].body = b.Seq({b.Bytes("x"), b.Ref(tail)});
  FsmBuildLimits limits;
  limits.repetition_compression_threshold = kDefaultRepetitionCompressionThreshold;
  limits.max_token_bytes = 128;
  LoweringContext ctx(b.ast, limits);
  std::vector<uint8_t> excluded(2, 0);
  for (RuleId r = 0; r < 2; ++r) excluded[r] = ctx.ContainsCompressible(b.ast.rules[r].body);
  CHECK(excluded == (std::vector<uint8_t>{0, 1}));
  const AstRightLinear rl = FindAstRightLinear(b.ast, excluded);
  CHECK(rl.pure == (std::vector<uint8_t>{0, 0}));
  const GrammarFsm fsm = BuildGrammarFsm(b.ast, limits);
  CHECK(fsm.counted_loops.empty());
  // Merged in the DFAs: root's DFA no longer calls tail.
  for (NodeId n = fsm.rule_nodes[root].begin; n < fsm.rule_nodes[root].end; ++n) {
    CHECK_EQ(fsm.rule_edge_begin[n], fsm.rule_edge_begin[n + 1]);
  }
}

TEST(BuildPolicyNamesTheRulesWhoseErrorsStayAtCompile) {
  AstBuilder b;
  const RuleId root = b.DeclareRule("root");
  const RuleId counted = b.Rule("counted", b.Repeat(b.Class({{'a', 'z'}}), 1, -1));
  b.ast.rules[counted].min_json_chars = 1;
  b.ast.rules[counted].max_json_chars = 5;
  const RuleId budgeted = b.Rule("budgeted", b.Bytes("bb"));
  b.ast.rules[budgeted].max_tokens = 3;
  const RuleId value = b.Rule("value", b.Choice({b.Bytes("1"), b.Bytes("2")}));
  const RuleId item = b.Rule("item", b.Seq({b.Bytes("<"), b.Ref(value), b.Bytes(">")}));
  b.ast.rules[item].unique_item = true;
  const RuleId holder = b.Rule("holder", b.Repeat(b.Ref(item), 0, 3));
  b.ast.rules[holder].unique_items = true;
  const RuleId long_rep = b.Rule("long_rep", b.Repeat(b.Bytes("ab"), 0, 500));
  const RuleId plain = b.Rule("plain", b.Seq({b.Bytes("p"), b.Repeat(b.Class({{'0', '9'}}), 0, 4)}));
  b.ast.rules[root].body = b.Seq({b.Ref(counted), b.Ref(budgeted), b.Ref(holder), b.Ref(long_rep), b.Ref(plain)});
  FsmBuildLimits limits;
  limits.repetition_compression_threshold = kDefaultRepetitionCompressionThreshold;
  limits.max_token_bytes = 16;
  const RuleBuildPolicy policy = DecideRuleBuildPolicy(b.ast, limits);
  CHECK_EQ(policy.eager[root], kBuildOnFirstUse);
  CHECK_EQ(policy.eager[counted], kCountsJsonChars);
  CHECK_EQ(policy.eager[budgeted], kTokenBudget);
  CHECK_EQ(policy.eager[item], kUniqueItemRole);
  CHECK_EQ(policy.eager[holder], kUniqueItemRole);
  CHECK_EQ(policy.eager[value], kCalledByUniqueItem);
  CHECK_EQ(policy.eager[long_rep], kNoNodeBound);  // compressed with the threshold on
  CHECK_EQ(policy.eager[plain], kBuildOnFirstUse);
  CHECK(policy.lazy_node_bound[plain] > 0);
  CHECK_EQ(policy.lazy_node_bound[counted], 0);
  // The rules built on first use, plus the transient nodes of one try.
  CHECK(policy.total_lazy_node_bound > policy.lazy_node_bound[root] + policy.lazy_node_bound[plain]);
  // Without compression the long repetition is plain Thompson, bounded.
  const RuleBuildPolicy uncompressed = DecideRuleBuildPolicy(b.ast, {});
  CHECK_EQ(uncompressed.eager[long_rep], kBuildOnFirstUse);
  BuildGrammarFsm(b.ast, limits);  // every lazily buildable rule within its bound
}

TEST(NodeBoundOfASmallRuleIsTheNumberOfSetsOfItsNfaNodes) {
  // "ab" then a call: 3 NFA nodes and the start. A determinisation of 4 nodes makes at most
  // 2^4 states and can never pass its cap, so nothing under it becomes a #part rule.
  AstBuilder b;
  const RuleId root = b.DeclareRule("root");
  const RuleId leaf = b.Rule("leaf", b.Bytes("z"));
  const RuleId small = b.Rule("small", b.Seq({b.Bytes("ab"), b.Ref(leaf)}));
  b.ast.rules[root].body = b.Seq({b.Ref(small), b.Ref(small)});
  const RuleBuildPolicy policy = DecideRuleBuildPolicy(b.ast, {});
  CHECK_EQ(policy.lazy_node_bound[small], 16);
  CHECK_EQ(policy.lazy_node_bound[leaf], 4);  // one byte node and the start
  const GrammarFsm fsm = BuildGrammarFsm(b.ast);
  CHECK(fsm.rule_nodes[small].end - fsm.rule_nodes[small].begin <= 16);
}

TEST(NodeBoundCoversARuleSplitByTheDeterminisationFallback) {
  // [ab]*a[ab]{13}: 2^14 DFA states, past the cap of its small NFA, so the build splits the
  // body into #part rules. The rule and its parts stay within the rule's bound.
  AstBuilder b;
  const ExprId ab = b.Class({{'a', 'b'}});
  const RuleId root = b.Rule("root", b.Seq({b.Repeat(ab, 0, -1), b.Bytes("a"), b.Repeat(ab, 13, 13)}));
  const GrammarFsm fsm = BuildGrammarFsm(b.ast);
  CHECK(fsm.num_rules() > 1);  // the fallback ran
  const RuleBuildPolicy policy = DecideRuleBuildPolicy(b.ast, {});
  CHECK_EQ(policy.eager[root], kBuildOnFirstUse);
  CHECK(static_cast<int64_t>(fsm.num_nodes()) <= policy.lazy_node_bound[root]);
}

TEST(NodeBoundCountsARepeatedCompoundChildOnce) {
  // ("abc" [ab]*) twice in one sequence, the same expression node: the body's NFA may pass
  // the determinisation cap, and its fallback would make one #part rule of the repeated child,
  // so the fallback term counts that child once (debug builds compare the in-place search for
  // repeats with a sorted copy of the children).
  AstBuilder b;
  const ExprId part = b.Seq({b.Bytes("abc"), b.Repeat(b.Class({{'a', 'b'}}), 0, -1)});
  const RuleId root = b.Rule("root", b.Seq({part, part, b.Bytes("!")}));
  const RuleBuildPolicy policy = DecideRuleBuildPolicy(b.ast, {});
  CHECK_EQ(policy.eager[root], kBuildOnFirstUse);
  const GrammarFsm fsm = BuildGrammarFsm(b.ast);
  CHECK(static_cast<int64_t>(fsm.num_nodes()) <= policy.lazy_node_bound[root]);
}

}  // namespace
}  // namespace xg2_test
