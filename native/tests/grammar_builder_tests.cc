// grammar/grammar_builder.h: the parser's simplifications, rule naming, the height and
// repetition limits, and the two ways of copying nodes in (Graft, AppendLasting) with their rule ids.
#include <string>
#include <vector>

#include "check.h"
#include "grammar/grammar_builder.h"
#include "support/compile_limits.h"
#include "support/error.h"

namespace xg2_test {
namespace {

using xg2::ExprId;
using xg2::ExprKind;
using xg2::GrammarAst;
using xg2::GrammarBuilder;
using xg2::RuleId;

TEST(GrammarBuilderSimplifiesAsTheParserDoes) {
  GrammarBuilder b;
  const RuleId root = b.AddRule("root");
  const ExprId a = b.Bytes("a");
  CHECK_EQ(b.Sequence(&a, 1), a);
  CHECK_EQ(b.Choice(&a, 1), a);
  CHECK_EQ(b.Repeat(a, 1, 1), a);
  const ExprId none = b.Sequence(nullptr, 0);
  const ExprId zero = b.Repeat(a, 0, 0);
  const ExprId empty_bytes = b.Bytes("");
  const ExprId both[] = {a, b.Repeat(a, 0, -1)};
  const ExprId seq = b.Sequence(both, 2);
  b.DefineRule(root, seq);
  GrammarAst ast = b.Finish(root);
  CHECK(ast.node(none).kind == ExprKind::kEmpty);
  CHECK(ast.node(zero).kind == ExprKind::kEmpty);
  CHECK(ast.node(empty_bytes).kind == ExprKind::kEmpty);
  CHECK(ast.node(seq).kind == ExprKind::kSequence);
  CHECK_EQ(ast.node(seq).children.size(), size_t{2});
  CHECK_EQ(ast.node(ast.node(seq).children[1]).max_repeat, -1);
  CHECK_EQ(ast.root_rule, root);
}

TEST(GrammarBuilderRefusesADuplicateRuleName) {
  GrammarBuilder b;
  b.AddRule("x");
  CHECK_EQ(b.FindRule("x"), 0);
  CHECK_EQ(b.FindRule("y"), -1);
  CHECK_THROWS(b.AddRule("x"), xg2::GrammarSyntaxError, "defined twice");
}

TEST(GrammarBuilderBoundsTheExpressionHeight) {
  GrammarBuilder b;
  ExprId expr = b.Bytes("a");
  for (int height = 1; height < xg2::kMaxExpressionHeight; ++height) expr = b.Repeat(expr, 0, 1);
  CHECK_THROWS(b.Repeat(expr, 0, 1), xg2::ResourceLimitError, "nests deeper");
}

TEST(GrammarBuilderChecksRepetitionBoundsAgainstTheCompileLimits) {
  xg2::CompileLimits limits;
  limits.max_repetition_bound = 10;
  xg2::ScopedCompileLimits scope(&limits);
  GrammarBuilder b;
  const ExprId a = b.Bytes("a");
  b.Repeat(a, 0, 10);
  CHECK_THROWS(b.Repeat(a, 0, 11), xg2::ResourceLimitError, "repetition bound");
  // Appended nodes are checked too: a body lowered under other limits is reused here.
  xg2::ExprNode repeat;
  repeat.kind = ExprKind::kRepeat;
  repeat.children = {0};
  repeat.max_repeat = 12;
  xg2::ExprNode leaf;
  leaf.kind = ExprKind::kBytes;
  leaf.bytes = "b";
  const std::vector<xg2::ExprNode> nodes = {leaf, repeat};
  CHECK_THROWS(b.AppendLasting(nodes, {1, 2}, {}), xg2::ResourceLimitError, "repetition bound");
}

TEST(GrammarBuilderAppendsAndGraftsWithTheTargetsRuleIds) {
  // The source: rule 0 ("callee") and an expression "x" callee.
  GrammarBuilder source;
  const RuleId callee = source.AddRule("callee");
  const RuleId body_rule = source.AddRule("body");
  const ExprId parts[] = {source.Bytes("x"), source.RuleRef(callee)};
  const ExprId body = source.Sequence(parts, 2);
  source.DefineRule(body_rule, body);
  source.DefineRule(callee, source.Empty());
  const GrammarAst lowered = source.Finish(body_rule);

  GrammarBuilder b;
  const RuleId root = b.AddRule("root");
  const RuleId target = b.AddRule("target");
  const ExprId padding = b.Bytes("pad");
  const ExprId grafted = b.Graft(lowered, body, {target, -1});
  const std::vector<xg2::ExprNode> nodes(lowered.nodes.begin(), lowered.nodes.begin() + body + 1);
  const ExprId offset = b.AppendLasting(nodes, {1, 1, 2}, {target, -1});
  const ExprId choices[] = {grafted, offset + body};
  b.DefineRule(root, b.Choice(choices, 2));
  b.DefineRule(target, padding);
  GrammarAst ast = b.Finish(root);
  for (ExprId copy : {grafted, offset + body}) {
    CHECK(ast.node(copy).kind == ExprKind::kSequence);
    CHECK_EQ(ast.node(ast.node(copy).children[0]).bytes, std::string("x"));
    CHECK_EQ(ast.node(ast.node(copy).children[1]).rule_id, target);
  }
}

TEST(GrammarBuilderAppendsLastingPayloadsWithoutCopyingThem) {
  // A literal too long to be inline and a class of several ranges: the appended nodes read
  // the lasting nodes' payloads in place (the frontend's prebuilt bodies live for the process).
  static const std::vector<xg2::ExprNode> lasting = [] {
    GrammarBuilder source;
    const RuleId rule = source.AddRule("body");
    const ExprId parts[] = {source.Bytes("a literal of some length"),
                            source.CharClass(std::vector<xg2::CodepointRange>{{'0', '9'}, {'a', 'f'}})};
    source.DefineRule(rule, source.Sequence(parts, 2));
    return source.Finish(rule).nodes;
  }();
  GrammarBuilder b;
  const RuleId root = b.AddRule("root");
  const ExprId offset = b.AppendLasting(lasting, {1, 1, 2}, {});
  b.DefineRule(root, offset + 2);
  const GrammarAst ast = b.Finish(root);
  CHECK(ast.node(offset).bytes == "a literal of some length");
  CHECK(ast.node(offset).bytes.data() == lasting[0].bytes.data());
  CHECK_EQ(ast.node(offset).bytes.owned_heap_bytes(), size_t{0});
  CHECK(ast.node(offset + 1).ranges == lasting[1].ranges);
  CHECK(ast.node(offset + 1).ranges.data() == lasting[1].ranges.data());
  const GrammarAst copy = ast;  // a copied grammar still reads the lasting payloads
  CHECK(copy.node(offset).bytes.data() == lasting[0].bytes.data());
}

}  // namespace
}  // namespace xg2_test
