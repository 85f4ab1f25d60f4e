// The rule nullability LoweringContext computes (its worklist fixpoint shares expression
// memo entries between the rules it examines, see ComputeRuleNullable): on a chain declared
// caller first, where an answer "not nullable" goes stale when a callee becomes nullable,
// and on random grammars of shared subexpressions, against AstRuleNullable (an independent
// fixpoint over the same AST).
#include <random>
#include <vector>

#include "check.h"
#include "fsm_test_support.h"
#include "grammar/ast_rule_analyses.h"
#include "grammar/lowering_context.h"

namespace xg2_test {
namespace {

std::vector<uint8_t> LoweringNullability(const GrammarAst& ast) {
  LoweringContext ctx(ast, FsmBuildLimits{});
  std::vector<uint8_t> nullable(ast.rules.size());
  for (size_t r = 0; r < ast.rules.size(); ++r) nullable[r] = ctx.RuleNullable(static_cast<RuleId>(r));
  return nullable;
}

TEST(NullabilityReachesRulesThatWereFoundNotNullableBefore) {
  // a ::= b c ; b ::= c ; c ::= "" ; d ::= "x" c. a and b are examined (and found not
  // nullable, sharing the node `c`) before c; both must be looked at again once c is.
  AstBuilder b;
  const RuleId a = b.DeclareRule("a");
  const RuleId rb = b.DeclareRule("b");
  const RuleId c = b.DeclareRule("c");
  const ExprId ref_c = b.Ref(c);
  b.ast.rules[a].body = b.Seq({b.Ref(rb), ref_c});
  b.ast.rules[rb].body = ref_c;
  b.ast.rules[c].body = b.Empty();
  b.Rule("d", b.Seq({b.Bytes("x"), ref_c}));
  CHECK(LoweringNullability(b.ast) == (std::vector<uint8_t>{1, 1, 1, 0}));
}

// A random grammar of `num_rules` rules whose bodies share expression nodes (as inlining
// makes them): each body is drawn from a pool that grows with every node made, and each
// rule is named by two reference nodes.
GrammarAst RandomSharedGrammar(std::mt19937* rng, int num_rules) {
  AstBuilder b;
  for (int r = 0; r < num_rules; ++r) b.DeclareRule("r" + std::to_string(r));
  std::vector<ExprId> pool = {b.Empty(), b.Bytes("x")};
  for (int copy = 0; copy < 2; ++copy) {  // two reference nodes per rule, as inlining leaves them
    for (int r = 0; r < num_rules; ++r) pool.push_back(b.Ref(r));
  }
  auto pick = [&]() { return pool[(*rng)() % pool.size()]; };
  for (int k = 0; k < 4 * num_rules; ++k) {
    switch ((*rng)() % 3) {
      case 0: pool.push_back(b.Seq({pick(), pick()})); break;
      case 1: pool.push_back(b.Choice({pick(), pick()})); break;
      default: pool.push_back(b.Repeat(pick(), static_cast<int32_t>((*rng)() % 2), 3)); break;
    }
  }
  for (int r = 0; r < num_rules; ++r) b.ast.rules[r].body = pick();
  return b.ast;
}

TEST(NullabilityOfSharedBodiesMatchesTheAstAnalysis) {
  std::mt19937 rng(5);
  for (int round = 0; round < 500; ++round) {
    const GrammarAst ast = RandomSharedGrammar(&rng, 2 + static_cast<int>(rng() % 8));
    const AstNullability reference = AstRuleNullable(ast, ComputeRuleBodyOrder(ast));
    CHECK(LoweringNullability(ast) == reference.rule);
  }
}

}  // namespace
}  // namespace xg2_test
