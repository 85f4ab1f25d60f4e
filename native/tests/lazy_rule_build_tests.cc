// Rule DFAs built on first use (grammar/lazy_rule_builder.h): a grammar compiled lazily leaves
// rules unbuilt, and a parser over its snapshots (building each rule on first prediction)
// accepts, rejects and allows exactly what the parser of the eager build does -- per byte,
// and per token of a small vocabulary walked through the parser (the reference mask) -- on
// random walks of the eager grammar, from one thread and from several sharing the builds.
// Errors of the eager rules stay at compile, and a grammar the node bound does not fit is
// built whole.
#include <algorithm>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "check.h"
#include "fsm_test_support.h"
#include "grammar/follow_sets.h"
#include "grammar/fsm_invariants.h"
#include "grammar/lazy_rule_builder.h"
#include "matcher/earley_parser.h"
#include "matcher/rule_dfa_snapshots.h"
#include "support/dcheck.h"
#include "support/error.h"

namespace xg2_test {
namespace {

// root ::= "{" ws pair ("," ws pair)* "}" ; pair ::= str ws ":" ws value ;
// value ::= str | num | "[" ws (value ws ("," ws value ws)*)? "]" | "true" | obj ;
// obj ::= "{" ws (pair ("," ws pair)*)? "}" ; str ::= "\"" [a-c]* "\"" ; num ::= "-"? [0-9]+ ;
// ws ::= " "*  -- recursive, every rule but the root may wait.
GrammarAst JsonLikeAst() {
  AstBuilder b;
  const RuleId root = b.DeclareRule("root");
  const RuleId ws = b.Rule("ws", b.Repeat(b.Bytes(" "), 0, -1));
  const RuleId str = b.Rule("str", b.Seq({b.Bytes("\""), b.Repeat(b.Class({{'a', 'c'}}), 0, -1), b.Bytes("\"")}));
  const RuleId num = b.Rule("num", b.Seq({b.Repeat(b.Bytes("-"), 0, 1), b.Repeat(b.Class({{'0', '9'}}), 1, -1)}));
  const RuleId value = b.DeclareRule("value");
  const RuleId pair = b.Rule("pair", b.Seq({b.Ref(str), b.Ref(ws), b.Bytes(":"), b.Ref(ws), b.Ref(value)}));
  auto pairs = [&] { return b.Seq({b.Ref(pair), b.Repeat(b.Seq({b.Bytes(","), b.Ref(ws), b.Ref(pair)}), 0, -1)}); };
  const RuleId obj = b.Rule("obj", b.Seq({b.Bytes("{"), b.Ref(ws), b.Repeat(pairs(), 0, 1), b.Bytes("}")}));
  const ExprId items = b.Seq({b.Ref(value), b.Ref(ws), b.Repeat(b.Seq({b.Bytes(","), b.Ref(ws), b.Ref(value), b.Ref(ws)}), 0, -1)});
  b.ast.rules[value].body = b.Choice({b.Ref(str), b.Ref(num), b.Seq({b.Bytes("["), b.Ref(ws), b.Repeat(items, 0, 1), b.Bytes("]")}),
                                      b.Bytes("true"), b.Ref(obj)});
  b.ast.rules[root].body = b.Seq({b.Bytes("{"), b.Ref(ws), pairs(), b.Bytes("}")});
  return b.ast;
}

// root ::= head body tail ; head[max_tokens=4] ::= "h"+ (eager: a budget) ;
// body ::= ("x" | "y")* "z" part ; part ::= [ab]* "a" [ab]{13} "." (its DFA would pass the
// determinisation cap: lowering splits it into synthetic rules, made by the lazy build) ;
// tail ::= "t" (= "!") "!"?  -- a rule with a lookahead, itself built on first use.
GrammarAst MixedAst() {
  AstBuilder b;
  const RuleId root = b.DeclareRule("root");
  const RuleId head = b.Rule("head", b.Repeat(b.Bytes("h"), 1, -1));
  b.ast.rules[head].max_tokens = 4;
  const ExprId ab = b.Class({{'a', 'b'}});
  const RuleId part = b.Rule("part", b.Seq({b.Repeat(ab, 0, -1), b.Bytes("a"), b.Repeat(b.Class({{'a', 'b'}}), 13, 13), b.Bytes(".")}));
  const RuleId body = b.Rule("body", b.Seq({b.Repeat(b.Choice({b.Bytes("x"), b.Bytes("y")}), 0, -1), b.Bytes("z"), b.Ref(part)}));
  const RuleId bang = b.Rule("bang", b.Repeat(b.Bytes("!"), 0, 1));
  const RuleId tail = b.Rule("tail", b.Seq({b.Bytes("t"), b.Ref(bang)}));
  b.ast.rules[tail].lookahead = b.Bytes("!");
  b.ast.rules[root].body = b.Seq({b.Ref(head), b.Ref(body), b.Ref(tail), b.Bytes("!")});
  return b.ast;
}

int32_t UnbuiltRules(const GrammarFsm& fsm) {
  int32_t unbuilt = 0;
  for (RuleId r = 0; r < fsm.num_rules(); ++r) unbuilt += !fsm.IsBuilt(r);
  return unbuilt;
}

// A grammar compiled both ways, with the lazy one's snapshots and builder.
struct BothWays {
  explicit BothWays(const GrammarAst& ast, const FsmBuildLimits& limits = {})
      : eager(std::make_shared<const GrammarFsm>(BuildGrammarFsm(ast, limits))) {
    LazyGrammarFsm lazy = BuildGrammarFsmLazily(ast, limits);
    CHECK(lazy.builder != nullptr);
    first = std::make_shared<const GrammarFsm>(std::move(lazy.fsm));
    builder = lazy.builder;
    snapshots = std::make_unique<RuleDfaSnapshots>(
        first, [b = builder](const GrammarFsm& latest, RuleId rule) { return b->Build(latest, rule); });
  }
  std::shared_ptr<const GrammarFsm> eager, first;
  std::shared_ptr<LazyRuleBuilder> builder;
  std::unique_ptr<RuleDfaSnapshots> snapshots;
};

const std::vector<std::string>& Vocabulary() {
  static const std::vector<std::string> tokens = {"{", "}", "\"", "\"a", "ab\"", ":", ": ", ",", ", \"", "[", "]", " ",
                                                  "  ", "1", "-2", "true", "tr", "{\"", "\":", "h", "hh", "x", "yz", "z",
                                                  "a", "b", "ba", "aab", ".", "t", "t!", "!", "!!", "c\"", "0]"};
  return tokens;
}

// The tokens of Vocabulary() whose bytes `parser` can consume from where it is.
std::vector<uint8_t> ReferenceMask(EarleyParser* parser) {
  std::vector<uint8_t> mask;
  const int32_t here = parser->position();
  for (const std::string& token : Vocabulary()) {
    const int32_t consumed = parser->AdvanceString(token.data(), static_cast<int32_t>(token.size()));
    mask.push_back(consumed == static_cast<int32_t>(token.size()));
    parser->PopTo(here);
  }
  return mask;
}

// Random walks of the eager grammar (a byte the eager parser allows at each step), checking
// that the lazy parser allows the same bytes and tokens and agrees on completion; `invalid`
// also tries a byte the eager parser refuses, which the lazy one must refuse too.
void CompareWalks(const BothWays& grammar, uint32_t seed, int walks, int steps) {
  EarleyParser eager(grammar.eager);
  EarleyParser lazy(grammar.first, {}, grammar.snapshots.get());
  std::mt19937 random(seed);
  for (int walk = 0; walk < walks; ++walk) {
    eager.Reset();
    lazy.Reset();
    for (int step = 0; step < steps; ++step) {
      bool eager_bytes[256], lazy_bytes[256];
      eager.AllowedBytes(eager_bytes);
      lazy.AllowedBytes(lazy_bytes);
      CHECK(std::equal(eager_bytes, eager_bytes + 256, lazy_bytes));
      CHECK_EQ(eager.CanEnd(), lazy.CanEnd());
      CHECK(ReferenceMask(&eager) == ReferenceMask(&lazy));
      std::vector<uint8_t> allowed, refused;
      for (int c = 0; c < 256; ++c) (eager_bytes[c] ? allowed : refused).push_back(static_cast<uint8_t>(c));
      if (!refused.empty()) CHECK(!lazy.Advance(refused[random() % refused.size()]));
      if (allowed.empty()) break;
      const uint8_t next = allowed[random() % allowed.size()];
      CHECK(eager.Advance(next));
      CHECK(lazy.Advance(next));
    }
  }
}

TEST(LazyCompileLeavesRulesUnbuiltAndBuildsThemOnPrediction) {
  const BothWays grammar(JsonLikeAst());
  CHECK(grammar.first->IsBuilt(grammar.first->root_rule));
  CHECK(UnbuiltRules(*grammar.first) >= 5);
  CHECK(grammar.first->num_nodes() < grammar.eager->num_nodes());
  CheckGrammarFsmInvariants(*grammar.first, "the lazy compile");
  CompareWalks(grammar, 1, 40, 60);
  const std::shared_ptr<const GrammarFsm> latest = grammar.snapshots->Latest();
  CHECK(grammar.snapshots->builds() >= 1);
  CHECK_EQ(SnapshotPrefixViolation(*grammar.first, *latest), std::string());
  CheckGrammarFsmInvariants(*latest, "the lazy builds");
}

// root ::= ws key ":" value ; ws ::= " "* ; key ::= "k" [a-c]* ; value ::= "v" num ;
// num ::= [0-9]+ -- the parser's start predicts ws and, past the nullable ws, key: the compile
// builds them with the root, so a parser's start builds nothing; value and num wait.
TEST(TheRulesTheStartPredictsAreBuiltAtCompile) {
  AstBuilder b;
  const RuleId root = b.DeclareRule("root");
  const RuleId ws = b.Rule("ws", b.Repeat(b.Bytes(" "), 0, -1));
  const RuleId key = b.Rule("key", b.Seq({b.Bytes("k"), b.Repeat(b.Class({{'a', 'c'}}), 0, -1)}));
  const RuleId num = b.Rule("num", b.Repeat(b.Class({{'0', '9'}}), 1, -1));
  const RuleId value = b.Rule("value", b.Seq({b.Bytes("v"), b.Ref(num)}));
  b.ast.rules[root].body = b.Seq({b.Ref(ws), b.Ref(key), b.Bytes(":"), b.Ref(value)});
  const BothWays grammar(b.ast);
  const GrammarFsm& first = *grammar.first;
  CHECK(first.IsBuilt(ws));
  CHECK(first.IsBuilt(key));
  CHECK(!first.IsBuilt(value));
  CHECK(!first.IsBuilt(num));
  EarleyParser parser(grammar.first, {}, grammar.snapshots.get());
  CHECK_EQ(grammar.snapshots->builds(), 0);
  CompareWalks(grammar, 3, 20, 12);
  CHECK(grammar.snapshots->builds() >= 1);
}

TEST(LazyBuildsOfSplitRulesAndLookaheadsKeepTheLanguage) {
  const BothWays grammar(MixedAst());
  const GrammarFsm& first = *grammar.first;
  CHECK(first.IsBuilt(1));   // head: a token budget is built at compile
  CHECK(!first.IsBuilt(2));  // part
  CHECK(!first.IsBuilt(5));  // tail, whose lookahead DFA the compile built
  CHECK(first.rule_lookahead[5] >= 0);
  const int32_t rules_at_compile = first.num_rules();
  CompareWalks(grammar, 2, 30, 45);
  // Building `part` split it: its synthetic rules came with it, past the compile's rules.
  const std::shared_ptr<const GrammarFsm> latest = grammar.snapshots->Latest();
  CHECK(latest->IsBuilt(2));
  CHECK(latest->num_rules() > rules_at_compile);
  for (RuleId r = rules_at_compile; r < latest->num_rules(); ++r) CHECK(latest->IsBuilt(r));
  CheckGrammarFsmInvariants(*latest, "the lazy builds");
  EarleyParser lazy(grammar.first, {}, grammar.snapshots.get());
  auto accepts = [&](const std::string& text) {
    lazy.Reset();
    return lazy.AdvanceString(text.data(), static_cast<int32_t>(text.size())) == static_cast<int32_t>(text.size()) &&
           lazy.CanEnd();
  };
  const std::string thirteen(13, 'b');
  CHECK(accepts("hhxyzba" + thirteen + ".t!"));
  CHECK(accepts("hzba" + thirteen + ".t!!"));
  CHECK(!accepts("hhxyzba" + thirteen + ".t"));    // the lookahead needs a "!"
  CHECK(!accepts("hhxyzbb" + thirteen + ".t!"));   // no "a" 14 bytes before the "."
}

// The builder's byte contexts follow its snapshots: one entry per rule, the grammar rules'
// as a fresh AST analysis gives them and unchanged as a build adds synthetic rules, the same
// object while no build made a rule, and a synthetic rule's FIRST holding the bytes its DFA
// starts with. (ByteContexts reads analyses it computed once; in debug builds it compares
// every answer with a fresh AstRuleByteContexts.)
TEST(ByteContextsFollowTheSyntheticRulesFromAnalysesComputedOnce) {
  const GrammarAst ast = MixedAst();
  LazyGrammarFsm lazy = BuildGrammarFsmLazily(ast);
  CHECK(lazy.builder != nullptr);
  const RuleByteContexts fresh = AstRuleByteContexts(ast, {});
  const std::shared_ptr<const RuleByteContexts> at_compile = lazy.builder->ByteContexts();
  CHECK_EQ(at_compile->size(), static_cast<size_t>(lazy.fsm.num_rules()));
  CHECK(at_compile->nullable == fresh.nullable && at_compile->first == fresh.first && at_compile->follow == fresh.follow);
  CHECK(lazy.builder->ByteContexts() == at_compile);
  const GrammarFsm next = lazy.builder->Build(lazy.fsm, 2);  // part: its build splits it
  CHECK(next.num_rules() > lazy.fsm.num_rules());
  const std::shared_ptr<const RuleByteContexts> grown = lazy.builder->ByteContexts();
  CHECK(grown != at_compile);
  CHECK_EQ(grown->size(), static_cast<size_t>(next.num_rules()));
  for (size_t r = 0; r < ast.rules.size(); ++r) {
    CHECK(grown->nullable[r] == fresh.nullable[r] && grown->first[r] == fresh.first[r] && grown->follow[r] == fresh.follow[r]);
  }
  for (RuleId r = lazy.fsm.num_rules(); r < next.num_rules(); ++r) {
    CHECK_EQ(grown->nullable[r], next.rule_nullable[r]);
    const NodeId start = next.rule_start[r];
    for (const ByteEdge* e = next.byte_edges_begin(start); e != next.byte_edges_end(start); ++e) {
      for (int b = e->lo; b <= e->hi; ++b) CHECK(grown->first[r].test(b));
    }
  }
}

TEST(ParsersOnSeveralThreadsShareTheLazyBuilds) {
  const BothWays grammar(JsonLikeAst());
  constexpr int kThreads = 4;
  std::vector<std::thread> threads;
  for (int k = 0; k < kThreads; ++k) threads.emplace_back([&, k] { CompareWalks(grammar, 100 + k, 10, 40); });
  for (std::thread& t : threads) t.join();
  const std::shared_ptr<const GrammarFsm> latest = grammar.snapshots->Latest();
  // One build per rule built: a rule asked for by several threads is built once.
  CHECK_EQ(grammar.snapshots->builds(), UnbuiltRules(*grammar.first) - UnbuiltRules(*latest));
  CheckGrammarFsmInvariants(*latest, "the lazy builds");
}

TEST(LazyCompileRaisesTheEagerErrors) {
  {  // a budgeted rule that calls a rule
    AstBuilder b;
    const RuleId root = b.DeclareRule("root");
    const RuleId inner = b.Rule("inner", b.Bytes("i"));
    const RuleId budgeted = b.Rule("budgeted", b.Seq({b.Bytes("b"), b.Ref(inner)}));
    b.ast.rules[budgeted].max_tokens = 2;
    b.ast.rules[root].body = b.Seq({b.Ref(budgeted), b.Ref(inner)});
    CHECK_THROWS(BuildGrammarFsm(b.ast), GrammarSyntaxError, "token budget");
    CHECK_THROWS(BuildGrammarFsmLazily(b.ast), GrammarSyntaxError, "token budget");
  }
  {  // a lookahead on a nullable rule that would wait
    AstBuilder b;
    const RuleId root = b.DeclareRule("root");
    const RuleId maybe = b.Rule("maybe", b.Repeat(b.Bytes("m"), 0, 1));
    b.ast.rules[maybe].lookahead = b.Bytes("x");
    b.ast.rules[root].body = b.Seq({b.Ref(maybe), b.Bytes("x")});
    CHECK_THROWS(BuildGrammarFsm(b.ast), GrammarSyntaxError, "lookahead");
    CHECK_THROWS(BuildGrammarFsmLazily(b.ast), GrammarSyntaxError, "lookahead");
  }
  {  // no root
    GrammarAst empty;
    CHECK_THROWS(BuildGrammarFsmLazily(empty), GrammarSyntaxError, "no root");
  }
}

// The smallest node budget BuildGrammarFsm builds `ast` under (a binary search: a larger
// budget never makes a build fail).
int64_t SmallestWholeBudget(const GrammarAst& ast) {
  int64_t fails = 0, builds = 1 << 20;
  while (builds - fails > 1) {
    const int64_t mid = (fails + builds) / 2;
    FsmBuildLimits limits;
    limits.max_nodes = mid;
    bool built = true;
    try {
      BuildGrammarFsm(ast, limits);
    } catch (const ResourceLimitError&) {
      built = false;
    }
    (built ? builds : fails) = mid;
  }
  return builds;
}

// Under the smallest budget the whole build fits, no rule's bound fits beside the others'
// DFAs: the mixed choice cannot leave a rule unbuilt, and the grammar is built whole,
// exactly as BuildGrammarFsm builds it.
TEST(GrammarsTheMixedChoiceCannotFitAreBuiltWhole) {
  const GrammarAst ast = JsonLikeAst();
  FsmBuildLimits limits;
  limits.max_nodes = SmallestWholeBudget(ast);
  const LazyGrammarFsm lazy = BuildGrammarFsmLazily(ast, limits);
  CHECK(lazy.builder == nullptr);
  CHECK_EQ(UnbuiltRules(lazy.fsm), 0);
  CHECK_EQ(lazy.fsm.ToString(), BuildGrammarFsm(ast, limits).ToString());
}

// root ::= "<" big ">" value ; big ::= [a-z]{120} (a DFA of about 120 nodes under a bound of
// the determinisation cap of its 360-node NFA) ; the small rules of JsonLikeAst (value, str,
// num, obj, pair, ws), none of which the start predicts (the root begins with a byte).
GrammarAst OneLargeBoundAst(RuleId* big) {
  GrammarAst ast = JsonLikeAst();
  AstBuilder b;
  b.ast = std::move(ast);
  *big = b.Rule("big", b.Repeat(b.Class({{'a', 'z'}}), 120, 120));
  const RuleId value = 4;
  CHECK_EQ(b.ast.rules[value].name, std::string("value"));
  b.ast.rules[b.ast.root_rule].body = b.Seq({b.Bytes("<"), b.Ref(*big), b.Bytes(">"), b.Ref(value)});
  return b.ast;
}

// The bounds of the rules left to first use do not fit the budget, but leaving the one with
// the largest bound out of them does: the compile builds that rule (and the root), leaves the
// small rules unbuilt, keeps their bound within what its builds left of the budget (so no
// later build can fail), and the lazy parser walks as the eager one does.
TEST(TheMixedChoiceBuildsTheLargestBoundsAndLeavesTheRestUnbuilt) {
  RuleId big = -1;
  const GrammarAst ast = OneLargeBoundAst(&big);
  const RuleBuildPolicy policy = DecideRuleBuildPolicy(ast, {});
  std::vector<uint8_t> small_rules_built(ast.rules.size(), 1);
  int64_t largest_small_bound = 0;
  for (RuleId r = 0; r < static_cast<RuleId>(ast.rules.size()); ++r) {
    if (r == big || r == ast.root_rule || policy.eager[r] != kBuildOnFirstUse) continue;
    small_rules_built[r] = 0;
    largest_small_bound = std::max(largest_small_bound, policy.lazy_node_bound[r]);
  }
  CHECK(policy.lazy_node_bound[big] > largest_small_bound);
  // A budget that the bound of every waiting rule passes, and whose half still holds the
  // bound of the small ones.
  std::vector<uint8_t> root_built(ast.rules.size(), 0);
  root_built[ast.root_rule] = 1;
  FsmBuildLimits limits;
  limits.max_nodes = LazyNodeBound(policy, root_built) - 1;
  CHECK(2 * LazyNodeBound(policy, small_rules_built) <= limits.max_nodes);
  if (BuildGrammarFsmLazily(ast, limits).builder == nullptr) {
    CHECK(!"the lazy compile leaves the small rules unbuilt");
    return;
  }
  const BothWays grammar(ast, limits);
  const GrammarFsm& first = *grammar.first;
  CHECK(first.IsBuilt(big));
  for (RuleId r = 0; r < static_cast<RuleId>(ast.rules.size()); ++r) {
    if (!small_rules_built[r]) CHECK(!first.IsBuilt(r));
  }
  std::vector<uint8_t> built(ast.rules.size());
  for (RuleId r = 0; r < static_cast<RuleId>(ast.rules.size()); ++r) built[r] = first.IsBuilt(r);
  CHECK(LazyNodeBound(policy, built) <= grammar.builder->budget_left());
  CompareWalks(grammar, 5, 20, 150);  // past big's 120 bytes
  CHECK(grammar.snapshots->builds() >= 1);
  const std::shared_ptr<const GrammarFsm> all = grammar.snapshots->BuildAll();
  CHECK_EQ(UnbuiltRules(*all), 0);
  CHECK(grammar.builder->budget_left() >= 0);
  CheckGrammarFsmInvariants(*all, "building every rule after the mixed choice");
}

// root ::= x | y | z ; x ::= "x" F ; y ::= "y" F ; z ::= "z" F, with F ::= [ab]* "a" [ab]{13} "."
// one expression node shared by the three (a fragment, as inlining makes them) whose DFA
// would pass the determinisation cap. The lazy compile meets its fallback while building
// the fragments and builds the grammar whole on the same context, recording the fallback as
// the eager build's first try of x does: the FSM is BuildGrammarFsm's.
TEST(AGrammarWhoseFragmentFallsBackIsBuiltWholeAsEagerly) {
  AstBuilder b;
  const RuleId root = b.DeclareRule("root");
  const ExprId fragment = b.Seq({b.Repeat(b.Class({{'a', 'b'}}), 0, -1), b.Bytes("a"),
                                 b.Repeat(b.Class({{'a', 'b'}}), 13, 13), b.Bytes(".")});
  const RuleId x = b.Rule("x", b.Seq({b.Bytes("x"), fragment}));
  const RuleId y = b.Rule("y", b.Seq({b.Bytes("y"), fragment}));
  const RuleId z = b.Rule("z", b.Seq({b.Bytes("z"), fragment}));
  b.ast.rules[root].body = b.Choice({b.Ref(x), b.Ref(y), b.Ref(z)});
  const LazyGrammarFsm lazy = BuildGrammarFsmLazily(b.ast, {});
  CHECK(lazy.builder == nullptr);
  CHECK_EQ(UnbuiltRules(lazy.fsm), 0);
  const GrammarFsm eager = BuildGrammarFsm(b.ast, {});
  CHECK(eager.num_rules() > 4);  // the fragment fell back: its parts are rules of their own
  CHECK_EQ(lazy.fsm.ToString(), eager.ToString());
}

TEST(SnapshotsBuildEveryRuleOnRequest) {
  const BothWays grammar(MixedAst());
  const std::shared_ptr<const GrammarFsm> all = grammar.snapshots->BuildAll();
  CHECK_EQ(UnbuiltRules(*all), 0);
  CHECK(grammar.snapshots->Latest() == all);
  CheckGrammarFsmInvariants(*all, "building every rule");
  CHECK(grammar.snapshots->BuildAll() == all);  // nothing left to build
}

}  // namespace
}  // namespace xg2_test
