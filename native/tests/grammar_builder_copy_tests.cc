// GrammarBuilder::CopySubtree: a copy of a finished block is what building the same expression
// again appends (node for node, orphans included), with the block's heights, and a copy of a
// block that holds a copy is a copy too.
#include <functional>
#include <string>
#include <vector>

#include "check.h"
#include "grammar/grammar_ast_equality.h"
#include "grammar/grammar_builder.h"
#include "support/error.h"

namespace xg2_test {
namespace {

using xg2::CodepointRange;
using xg2::ExprId;
using xg2::ExprKind;
using xg2::GrammarAst;
using xg2::GrammarBuilder;
using xg2::RuleId;

// "x" ([a-c] | callee)* ("y"){0,0} "z": a sequence over a repetition over a choice with a class
// and a reference, and an orphan (the {0,0} repetition's operand, left behind by Empty()).
ExprId BuildSample(GrammarBuilder* b, RuleId callee) {
  const ExprId choices[] = {b->CharClass({CodepointRange{'a', 'c'}}), b->RuleRef(callee)};
  const ExprId loop = b->Repeat(b->Choice(choices, 2), 0, -1);
  const ExprId parts[] = {b->Bytes("x"), loop, b->Repeat(b->Bytes("y"), 0, 0), b->Bytes("z")};
  return b->Sequence(parts, 4);
}

// root ::= sample | "-" | sample, the second sample from `second` (given the first's block).
GrammarAst TwoSamples(const std::function<ExprId(GrammarBuilder*, RuleId, ExprId, ExprId)>& second) {
  GrammarBuilder b;
  const RuleId root = b.AddRule("root");
  const RuleId callee = b.AddRule("callee");
  b.Bytes("padding before the block");
  const ExprId first = static_cast<ExprId>(b.node_count());
  const ExprId sample = BuildSample(&b, callee);
  const ExprId choices[] = {sample, b.Bytes("-"), second(&b, callee, first, sample)};
  b.DefineRule(root, b.Choice(choices, 3));
  b.DefineRule(callee, b.Empty());
  return b.Finish(root);
}

TEST(CopySubtreeAppendsWhatBuildingAgainWould) {
  const GrammarAst rebuilt =
      TwoSamples([](GrammarBuilder* b, RuleId callee, ExprId, ExprId) { return BuildSample(b, callee); });
  const GrammarAst copied =
      TwoSamples([](GrammarBuilder* b, RuleId, ExprId first, ExprId root) { return b->CopySubtree(first, root); });
  CHECK(xg2::SameGrammarAst(rebuilt, copied));
  // The copy is a second tree, not the first one again: each node keeps one parent.
  const ExprId body = copied.rules[copied.root_rule].body;
  const auto& alternatives = copied.node(body).children;
  CHECK(alternatives[0] != alternatives[2]);
  CHECK(copied.node(alternatives[2]).kind == ExprKind::kSequence);
  CHECK_EQ(copied.node(copied.node(alternatives[2]).children[0]).bytes, std::string("x"));
}

TEST(CopySubtreeCopiesABlockThatHoldsACopy) {
  // The outer block is Repeat(Seq(sample, copy of sample)); copying it must give what building
  // the outer expression again gives (whose own inner copy is a copy again).
  auto build_outer = [](GrammarBuilder* b, RuleId callee) {
    const ExprId inner_first = static_cast<ExprId>(b->node_count());
    const ExprId inner = BuildSample(b, callee);
    const ExprId parts[] = {inner, b->CopySubtree(inner_first, inner)};
    return b->Repeat(b->Sequence(parts, 2), 1, 3);
  };
  auto grammar = [&](bool copy_outer) {
    GrammarBuilder b;
    const RuleId root = b.AddRule("root");
    const RuleId callee = b.AddRule("callee");
    const ExprId first = static_cast<ExprId>(b.node_count());
    const ExprId outer = build_outer(&b, callee);
    const ExprId again = copy_outer ? b.CopySubtree(first, outer) : build_outer(&b, callee);
    const ExprId parts[] = {outer, again};
    b.DefineRule(root, b.Sequence(parts, 2));
    b.DefineRule(callee, b.Bytes("c"));
    return b.Finish(root);
  };
  CHECK(xg2::SameGrammarAst(grammar(false), grammar(true)));
}

TEST(CopySubtreeKeepsTheBlocksHeights) {
  // A chain one below the height limit, copied: one more level fits, the next does not, as for
  // the original (a copy whose heights restarted at 1 would take both).
  GrammarBuilder b;
  const ExprId first = static_cast<ExprId>(b.node_count());
  ExprId chain = b.Bytes("a");
  for (int height = 1; height < xg2::kMaxExpressionHeight - 1; ++height) chain = b.Repeat(chain, 0, 1);
  const ExprId copy = b.CopySubtree(first, chain);
  CHECK_EQ(static_cast<size_t>(copy) + 1, b.node_count());
  const ExprId taller = b.Repeat(copy, 0, 1);
  CHECK_THROWS(b.Repeat(taller, 0, 1), xg2::ResourceLimitError, "nests deeper");
}

}  // namespace
}  // namespace xg2_test
