// The inlining pass (grammar/inline_rules.cc) on small grammars: which rules it inlines and
// which stay calls. A rule's size is its body's node count with its inlinable callees
// expanded, counted once per occurrence (a node shared by two parents counts twice), so the
// tests below build bodies right at the size limit and share nodes between parents: a memo
// that counted a shared node once, or remembered a callee's size where a reference to it
// counts as one node, moves a rule across the limit.
#include <string>
#include <vector>

#include "check.h"
#include "fsm_test_support.h"
#include "grammar/inline_rules.h"

namespace xg2_test {
namespace {

constexpr int32_t kLimit = InlineOptions{}.max_inlined_size;

// A sequence of `n` one-byte nodes: n + 1 nodes in all.
ExprId Letters(AstBuilder* b, int n) {
  std::vector<ExprId> letters;
  for (int i = 0; i < n; ++i) letters.push_back(b->Bytes(std::string(1, static_cast<char>('a' + i % 26))));
  return b->Seq(letters);
}

// The names of the rules left after the pass, in order (the root first here), space-separated.
std::string RuleNames(const GrammarAst& ast) {
  std::string names;
  for (const RuleDef& rule : ast.rules) names += (names.empty() ? "" : " ") + rule.name;
  return names;
}

// Whether any node reachable from rule r's body is a reference.
bool HasReference(const GrammarAst& ast, RuleId r) {
  std::vector<ExprId> stack{ast.rules[r].body};
  while (!stack.empty()) {
    const ExprNode& node = ast.node(stack.back());
    stack.pop_back();
    if (node.kind == ExprKind::kRuleRef) return true;
    for (ExprId child : node.children) stack.push_back(child);
  }
  return false;
}

}  // namespace

TEST(InliningExpandsSmallRulesAndDropsThem) {
  // root ::= "[" ws item ws "]" ; ws ::= " "? ; item ::= "x" | "y"
  AstBuilder b;
  const RuleId root = b.DeclareRule("root");
  const RuleId ws = b.Rule("ws", b.Repeat(b.Bytes(" "), 0, 1));
  const RuleId item = b.Rule("item", b.Choice({b.Bytes("x"), b.Bytes("y")}));
  b.ast.rules[root].body = b.Seq({b.Bytes("["), b.Ref(ws), b.Ref(item), b.Ref(ws), b.Bytes("]")});
  InlineSmallRules(&b.ast);
  CHECK_EQ(RuleNames(b.ast), std::string("root"));
  CHECK(!HasReference(b.ast, 0));
  CHECK_EQ(PrintEbnf(b.ast), PrintEbnf([] {
             AstBuilder e;
             e.Rule("root", e.Seq({e.Bytes("["), e.Repeat(e.Bytes(" "), 0, 1), e.Choice({e.Bytes("x"), e.Bytes("y")}),
                                   e.Repeat(e.Bytes(" "), 0, 1), e.Bytes("]")}));
             return e.ast;
           }()));
}

TEST(InliningKeepsRecursiveRulesAsCalls) {
  // root ::= v ; v ::= "x" | "[" v "]" (calls itself) ; a ::= "(" b ")" | "y" ; b ::= a "!"
  // (a and b call each other): all three recursive rules stay, root keeps its calls.
  AstBuilder b;
  const RuleId root = b.DeclareRule("root");
  const RuleId v = b.DeclareRule("v");
  const RuleId a = b.DeclareRule("a");
  const RuleId bb = b.DeclareRule("b");
  b.ast.rules[root].body = b.Seq({b.Ref(v), b.Ref(a)});
  b.ast.rules[v].body = b.Choice({b.Bytes("x"), b.Seq({b.Bytes("["), b.Ref(v), b.Bytes("]")})});
  b.ast.rules[a].body = b.Choice({b.Seq({b.Bytes("("), b.Ref(bb), b.Bytes(")")}), b.Bytes("y")});
  b.ast.rules[bb].body = b.Seq({b.Ref(a), b.Bytes("!")});
  InlineSmallRules(&b.ast);
  CHECK_EQ(RuleNames(b.ast), std::string("root v a b"));
}

TEST(InliningStopsAtTheSizeLimit) {
  // at ::= kLimit nodes (inlined) ; over ::= kLimit + 1 nodes (stays a call)
  AstBuilder b;
  const RuleId root = b.DeclareRule("root");
  const RuleId at = b.Rule("at", Letters(&b, kLimit - 1));
  const RuleId over = b.Rule("over", Letters(&b, kLimit));
  b.ast.rules[root].body = b.Seq({b.Ref(at), b.Ref(over)});
  InlineSmallRules(&b.ast);
  CHECK_EQ(RuleNames(b.ast), std::string("root over"));
}

TEST(InliningSizesARuleWithItsInlinedCalleesExpanded) {
  // half ::= 48 nodes (inlined) ; pair ::= half half: 1 + 48 + 48 = 97 nodes, one too many ;
  // big ::= kLimit + 1 nodes (a call) ; small ::= big big "z": 1 + 1 + 1 + 1 = 4 nodes.
  AstBuilder b;
  const RuleId root = b.DeclareRule("root");
  const RuleId half = b.Rule("half", Letters(&b, 47));
  const RuleId pair = b.Rule("pair", b.Seq({b.Ref(half), b.Ref(half)}));
  const RuleId big = b.Rule("big", Letters(&b, kLimit));
  const RuleId small = b.Rule("small", b.Seq({b.Ref(big), b.Ref(big), b.Bytes("z")}));
  b.ast.rules[root].body = b.Seq({b.Ref(pair), b.Ref(small)});
  InlineSmallRules(&b.ast);
  CHECK_EQ(RuleNames(b.ast), std::string("root pair big"));
}

TEST(InliningCountsASharedNodeOncePerParent) {
  // One node `half` (48 nodes) is the child of two parents: twice in pair's sequence, and
  // in the body of other. pair ::= half half is 97 nodes (a call); other ::= half "!" is 50
  // (inlined). A size memo that took a node seen before as free would inline pair.
  AstBuilder b;
  const RuleId root = b.DeclareRule("root");
  const ExprId half = Letters(&b, 47);
  const RuleId pair = b.Rule("pair", b.Seq({half, half}));
  const RuleId other = b.Rule("other", b.Seq({half, b.Bytes("!")}));
  b.ast.rules[root].body = b.Seq({b.Ref(pair), b.Ref(other)});
  InlineSmallRules(&b.ast);
  CHECK_EQ(RuleNames(b.ast), std::string("root pair"));
}

TEST(InliningCountsASharedReferenceToABigRuleAsOneNode) {
  // The reference node `to_big` is shared by the bodies of one and two; big (kLimit + 1
  // nodes) stays a call, so each reference counts one node and both callers are inlined. A
  // memo that stored big's own size for the shared reference would keep `two` as a call.
  AstBuilder b;
  const RuleId root = b.DeclareRule("root");
  const RuleId big = b.Rule("big", Letters(&b, kLimit));
  const ExprId to_big = b.Ref(big);
  const RuleId one = b.Rule("one", b.Seq({to_big, b.Bytes("1")}));
  const RuleId two = b.Rule("two", b.Seq({to_big, b.Bytes("2")}));
  b.ast.rules[root].body = b.Choice({b.Ref(one), b.Ref(two)});
  InlineSmallRules(&b.ast);
  CHECK_EQ(RuleNames(b.ast), std::string("root big"));
}

TEST(InliningKeepsRulesThatKeepTheirOwnItems) {
  // look ::= "a" (= "b") keeps its lookahead; counted ::= "c" has a token budget.
  AstBuilder b;
  const RuleId root = b.DeclareRule("root");
  const RuleId look = b.Rule("look", b.Bytes("a"));
  b.ast.rules[look].lookahead = b.Bytes("b");
  const RuleId counted = b.Rule("counted", b.Bytes("c"));
  b.ast.rules[counted].max_tokens = 2;
  b.ast.rules[root].body = b.Seq({b.Ref(look), b.Ref(counted)});
  InlineSmallRules(&b.ast);
  CHECK_EQ(RuleNames(b.ast), std::string("root look counted"));
}

TEST(InliningKeepsTheEntryOfARightLinearGroupThatKeepsACall) {
  // root ::= key "!" key2 "?" ; key ::= "k" tail ; tail ::= "y" | "z" tail ; key2 ::= "i" last ;
  // last ::= "j". key is small, but it enters (root calls it, not in tail position) the
  // right-linear group {key, tail}, and tail, which calls itself, stays a call: the FSM
  // builder merges the group into one DFA, so key stays a call too. key2 enters the group
  // {key2, last}, where last is inlined and no call is left: key2 is inlined as well.
  AstBuilder b;
  const RuleId root = b.DeclareRule("root");
  const RuleId key = b.DeclareRule("key");
  const RuleId tail = b.DeclareRule("tail");
  const RuleId key2 = b.DeclareRule("key2");
  const RuleId last = b.Rule("last", b.Bytes("j"));
  b.ast.rules[key].body = b.Seq({b.Bytes("k"), b.Ref(tail)});
  b.ast.rules[tail].body = b.Choice({b.Bytes("y"), b.Seq({b.Bytes("z"), b.Ref(tail)})});
  b.ast.rules[key2].body = b.Seq({b.Bytes("i"), b.Ref(last)});
  b.ast.rules[root].body = b.Seq({b.Ref(key), b.Bytes("!"), b.Ref(key2), b.Bytes("?")});
  InlineSmallRules(&b.ast);
  CHECK_EQ(RuleNames(b.ast), std::string("root key tail"));
}

TEST(InliningReadsTailPositionAlongEveryPathOfASharedNode) {
  // key ::= t "!" | t, with one reference node to t in both places: in tail position on one
  // path, not on the other. So key is not right-linear, and though it calls t, which calls
  // itself, nothing merges it with t: small, it is inlined. A walk that read the shared
  // node's position once, on the tail path, would take key for the entry of a right-linear
  // group and keep it.
  AstBuilder b;
  const RuleId root = b.DeclareRule("root");
  const RuleId key = b.DeclareRule("key");
  const RuleId t = b.DeclareRule("t");
  const ExprId to_t = b.Ref(t);
  b.ast.rules[key].body = b.Choice({b.Seq({to_t, b.Bytes("!")}), to_t});
  b.ast.rules[t].body = b.Choice({b.Bytes("y"), b.Seq({b.Bytes("z"), b.Ref(t)})});
  b.ast.rules[root].body = b.Seq({b.Ref(key), b.Bytes("?")});
  InlineSmallRules(&b.ast);
  CHECK_EQ(RuleNames(b.ast), std::string("root t"));
}

TEST(InliningKeepsCallsCopiedPastTheRepetitionLimit) {
  // c is kLimit nodes. Under 40 x 40 copies (two nested bounded repetitions) inlining it would
  // add more than the limit of copied nodes: that reference stays a call. Under 10 x 10 it is
  // inlined, and so is the reference outside any repetition.
  AstBuilder b;
  const RuleId root = b.DeclareRule("root");
  const RuleId c = b.Rule("c", Letters(&b, kLimit - 1));
  const ExprId many = b.Repeat(b.Repeat(b.Ref(c), 40, 40), 40, 40);
  const ExprId few = b.Repeat(b.Repeat(b.Ref(c), 10, 10), 10, 10);
  b.ast.rules[root].body = b.Seq({b.Ref(c), many, few});
  InlineSmallRules(&b.ast);
  CHECK_EQ(RuleNames(b.ast), std::string("root c"));
  if (b.ast.rules.size() == 2) {
    // The one call left is the one under 40 x 40 copies.
    const ExprNode& body = b.ast.node(b.ast.rules[0].body);
    CHECK(b.ast.node(body.children[0]).kind == ExprKind::kSequence);
    const ExprNode& inner = b.ast.node(b.ast.node(body.children[1]).children[0]);
    CHECK(b.ast.node(inner.children[0]).kind == ExprKind::kRuleRef);
    const ExprNode& inner_few = b.ast.node(b.ast.node(body.children[2]).children[0]);
    CHECK(b.ast.node(inner_few.children[0]).kind == ExprKind::kSequence);
  }
}

TEST(InliningKeepsCallsOfAWideFanout) {
  // c is kLimit nodes. wide names it 43 times (43 x kLimit nodes, past the fanout limit):
  // the references stay calls. narrow names it 42 times and inlines it. shared names it
  // through one reference node repeated 43 times in its sequence: one node, 43 places,
  // past the limit as well.
  AstBuilder b;
  const RuleId root = b.DeclareRule("root");
  const RuleId c = b.Rule("c", Letters(&b, kLimit - 1));
  auto calls = [&](int n, bool one_node) {
    std::vector<ExprId> refs;
    const ExprId ref = b.Ref(c);
    for (int i = 0; i < n; ++i) refs.push_back(one_node ? ref : b.Ref(c));
    return b.Seq(refs);
  };
  const RuleId wide = b.Rule("wide", calls(43, false));
  const RuleId narrow = b.Rule("narrow", calls(42, false));
  const RuleId shared = b.Rule("shared", calls(43, true));
  b.ast.rules[root].body = b.Choice({b.Ref(wide), b.Ref(narrow), b.Ref(shared)});
  InlineSmallRules(&b.ast);
  CHECK_EQ(RuleNames(b.ast), std::string("root c wide narrow shared"));
  const auto calls_left = [&](RuleId r) {
    int n = 0;
    for (ExprId child : b.ast.node(b.ast.rules[r].body).children) n += b.ast.node(child).kind == ExprKind::kRuleRef;
    return n;
  };
  if (b.ast.rules.size() == 5) {
    CHECK_EQ(calls_left(2), 43);
    CHECK_EQ(calls_left(3), 0);
    CHECK_EQ(calls_left(4), 43);
  }
}

TEST(InliningCutsALongChainOfAliasesAtTheSameRule) {
  // root ::= r1 ; r1 ::= r2 ; ... ; r1199 ::= "x". The sizing walk goes down the chain from
  // the root and stops 1000 rules deep: r1000 stays a call (one node), the rest are inlined.
  constexpr int kChain = 1200;
  AstBuilder b;
  const RuleId root = b.DeclareRule("root");
  for (int i = 1; i < kChain; ++i) b.DeclareRule("r" + std::to_string(i));
  for (int i = 0; i + 1 < kChain; ++i) b.ast.rules[i].body = b.Ref(i + 1);
  b.ast.rules[kChain - 1].body = b.Bytes("x");
  CHECK_EQ(root, 0);
  InlineSmallRules(&b.ast);
  CHECK_EQ(RuleNames(b.ast), std::string("root r1000"));
  if (b.ast.rules.size() == 2) {
    CHECK(b.ast.node(b.ast.rules[0].body).kind == ExprKind::kRuleRef);
    CHECK(b.ast.node(b.ast.rules[1].body).kind == ExprKind::kBytes);
  }
}

}  // namespace xg2_test
