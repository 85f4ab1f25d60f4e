// grammar/grammar_builder.h, the constructors structural tags build with: token literals,
// token sets, tag dispatch rules, token budgets, embedding a whole grammar, and finishing in
// the order a parse of the printed grammar numbers things.
#include <string>
#include <vector>

#include "check.h"
#include "grammar/grammar_builder.h"
#include "grammar/token_literal.h"
#include "support/dcheck.h"
#include "support/error.h"

namespace xg2_test {
namespace {

using xg2::ExprId;
using xg2::ExprKind;
using xg2::GrammarAst;
using xg2::GrammarBuilder;
using xg2::RuleId;
using xg2::TagDispatchDef;

TEST(GrammarBuilderSpellsTokenLiteralsAndChecksTheirIds) {
  GrammarBuilder b;
  const RuleId root = b.AddRule("root");
  const ExprId token = b.TokenLiteral(200005);
  b.DefineRule(root, token);
  CHECK_THROWS(b.TokenLiteral(xg2::kMaxTokenLiteralId + 1), xg2::GrammarSyntaxError, "token id");
  CHECK_THROWS(b.TokenLiteral(-1), xg2::GrammarSyntaxError, "token id");
  GrammarAst ast = b.Finish(root);
  CHECK(ast.node(token).kind == ExprKind::kBytes);
  CHECK_EQ(ast.node(token).bytes, xg2::TokenLiteralBytes(200005));
  CHECK_EQ(xg2::PrintEbnf(ast), std::string("root ::= Token(200005)\n"));
}

TEST(GrammarBuilderTokenSetsShareAnIndexPerSet) {
  GrammarBuilder b;
  const RuleId root = b.AddRule("root");
  const ExprId parts[] = {b.TokenSet({7, 3, 7}, false), b.TokenSet({3, 7}, false), b.TokenSet({3, 7}, true),
                          b.TokenSet({}, true)};
  b.DefineRule(root, b.Sequence(parts, 4));
  CHECK_THROWS(b.TokenSet({xg2::kMaxTokenLiteralId + 1}, true), xg2::GrammarSyntaxError, "token id");
  CHECK_THROWS(b.TokenSet({}, false), xg2::InternalError, "at least one token");
  GrammarAst ast = b.Finish(root);
  CHECK_EQ(ast.token_sets.size(), size_t{3});
  CHECK_EQ(ast.node(parts[0]).bytes, ast.node(parts[1]).bytes);
  CHECK_EQ(xg2::DecodeTokenSetMarker(ast.node(parts[2]).bytes, 0), 1);
  CHECK(ast.token_sets[0].ids == std::vector<int32_t>({3, 7}));
  CHECK(!ast.token_sets[0].excluded && ast.token_sets[1].excluded);
  CHECK_EQ(xg2::PrintEbnf(ast),
           std::string("root ::= TokenSet(3, 7) TokenSet(3, 7) ExcludeToken(3, 7) ExcludeToken()\n"));
}

TagDispatchDef Dispatch(RuleId tag_rule) {
  TagDispatchDef def;
  def.tags.push_back({"<t>", tag_rule});
  def.stop_eos = false;
  def.stop_strings = {"</s>"};
  def.excludes = {"<x>"};
  return def;
}

TEST(GrammarBuilderDefinesTagDispatchRulesWhole) {
  GrammarBuilder b;
  const RuleId root = b.AddRule("root");
  const RuleId after = b.AddRule("after");
  b.DefineTagDispatchRule(root, Dispatch(after));
  b.DefineRule(after, b.Bytes("a"));
  b.SetMaxTokens(after, 3);
  GrammarAst ast = b.Finish(root);
  CHECK(ast.node(ast.rules[root].body).kind == ExprKind::kTagDispatch);
  CHECK_EQ(ast.tag_dispatches.size(), size_t{1});
  CHECK_EQ(ast.tag_dispatches[0].tags[0].rule, after);
  CHECK_EQ(xg2::PrintEbnf(ast),
           std::string("root ::= TagDispatch((\"<t>\", after), stop_eos=false, stop_str=(\"</s>\",), "
                       "loop_after_dispatch=true, excludes=(\"<x>\",))\nafter[max_tokens=3] ::= \"a\"\n"));
}

TEST(GrammarBuilderRefusesMalformedTagDispatchesAndBudgets) {
  GrammarBuilder b;
  const RuleId root = b.AddRule("root");
  TagDispatchDef empty_tag = Dispatch(root);
  empty_tag.tags[0].text.clear();
  CHECK_THROWS(b.DefineTagDispatchRule(root, empty_tag), xg2::InternalError, "not empty");
  CHECK_THROWS(b.DefineTagDispatchRule(root, Dispatch(5)), xg2::InternalError, "added rule");
  TagDispatchDef empty_exclude = Dispatch(root);
  empty_exclude.excludes.push_back("");
  CHECK_THROWS(b.DefineTagDispatchRule(root, empty_exclude), xg2::InternalError, "not empty");
  CHECK_THROWS(b.SetMaxTokens(root, -2), xg2::InternalError, "token budget");
}

// A grammar as the parser gives one: token sets, a tag dispatch, a lookahead, attributes.
GrammarAst SourceGrammar() {
  GrammarBuilder s;
  const RuleId root = s.AddRule("root");
  const RuleId item = s.AddRule("item");
  const RuleId text = s.AddRule("text");
  const ExprId parts[] = {s.TokenSet({9}, false), s.RuleRef(item), s.RuleRef(text)};
  s.DefineRule(root, s.Sequence(parts, 3));
  s.DefineRule(item, s.TokenSet({1, 2}, true), s.Bytes("!"));
  s.SetJsonCharCount(item, 1, 4);
  s.DefineTagDispatchRule(text, Dispatch(item));
  return s.Finish(root);
}

TEST(GrammarBuilderEmbedsAWholeGrammarUnderAPrefix) {
  GrammarBuilder b;
  const RuleId root = b.AddRule("root");
  const ExprId own = b.TokenSet({1, 2}, true);  // the same set as the source's item: one index
  std::vector<RuleId> embedded = b.Embed(SourceGrammar(), "p_");
  CHECK_EQ(embedded.size(), size_t{3});
  CHECK_THROWS(b.Embed(SourceGrammar(), "p_"), xg2::GrammarSyntaxError, "defined twice");
  const ExprId parts[] = {own, b.RuleRef(embedded[0])};
  b.DefineRule(root, b.Sequence(parts, 2));
  GrammarAst ast = b.Finish(root);
  CHECK_EQ(ast.token_sets.size(), size_t{2});
  CHECK_EQ(ast.rules[embedded[1]].min_json_chars, 1);
  CHECK_EQ(ast.tag_dispatches[0].tags[0].rule, embedded[1]);
  CHECK_EQ(xg2::PrintEbnf(ast),
           std::string("root ::= ExcludeToken(1, 2) p_root\n"
                       "p_root ::= TokenSet(9) p_item p_text\n"
                       "p_item[json_chars=1..4] ::= ExcludeToken(1, 2) (= \"!\")\n"
                       "p_text ::= TagDispatch((\"<t>\", p_item), stop_eos=false, stop_str=(\"</s>\",), "
                       "loop_after_dispatch=true, excludes=(\"<x>\",))\n"));
}

TEST(GrammarBuilderFinishesInThePrintedOrder) {
  GrammarBuilder b;
  const RuleId root = b.AddRule("root");
  const RuleId later = b.AddRule("later");
  const RuleId text = b.AddRule("text");
  // Built out of order: later's body first, with a token set and a node no rule reaches.
  const ExprId unused = b.Bytes("unused");
  const ExprId later_parts[] = {b.TokenSet({4}, false), b.Bytes("b")};
  b.DefineRule(later, b.Sequence(later_parts, 2));
  b.DefineTagDispatchRule(text, Dispatch(later));
  const ExprId root_parts[] = {b.TokenSet({5}, false), b.RuleRef(text), b.RuleRef(later)};
  b.DefineRule(root, b.Choice(root_parts, 3));
  CHECK(unused >= 0);
  const std::vector<RuleId> order = {root, text, later};
  GrammarAst ast = b.FinishInPrintedOrder(root, order);
  CHECK_EQ(ast.root_rule, 0);
  CHECK_EQ(ast.rules[1].name, std::string("text"));
  // Rule by rule, children before parents: root's three leaves then its choice, text's
  // dispatch, later's two leaves then its sequence; the unreached node is gone.
  CHECK_EQ(ast.nodes.size(), size_t{8});
  CHECK_EQ(ast.rules[0].body, 3);
  CHECK_EQ(ast.rules[1].body, 4);
  CHECK_EQ(ast.rules[2].body, 7);
  CHECK_EQ(ast.node(3).children.size(), size_t{3});
  CHECK_EQ(ast.node(3).children[0], 0);
  CHECK_EQ(ast.node(3).children[2], 2);
  // Token sets and dispatches are numbered at their first mention.
  CHECK(ast.token_sets[0].ids == std::vector<int32_t>({5}));
  CHECK_EQ(xg2::DecodeTokenSetMarker(ast.node(5).bytes, 0), 1);
  CHECK_EQ(ast.tag_dispatches[0].tags[0].rule, 2);
  CHECK_EQ(xg2::PrintEbnf(ast),
           std::string("root ::= TokenSet(5) | text | later\n"
                       "text ::= TagDispatch((\"<t>\", later), stop_eos=false, stop_str=(\"</s>\",), "
                       "loop_after_dispatch=true, excludes=(\"<x>\",))\n"
                       "later ::= TokenSet(4) \"b\"\n"));
}

TEST(GrammarBuilderFinishInPrintedOrderNeedsEveryRuleOnce) {
  GrammarBuilder b;
  const RuleId root = b.AddRule("root");
  const RuleId other = b.AddRule("other");
  b.DefineRule(root, b.RuleRef(other));
  b.DefineRule(other, b.Bytes("o"));
  CHECK_THROWS(b.FinishInPrintedOrder(root, {root, root}), xg2::InternalError, "every rule once");
}

}  // namespace
}  // namespace xg2_test
