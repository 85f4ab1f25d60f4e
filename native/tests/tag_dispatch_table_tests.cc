// The AST's TagDispatch table after the grammar passes, and the debug check that reads it.
// DropUnreachableRules (grammar/inline_rules.cc) keeps the dispatches of the rules it keeps,
// renumbered, so that a dropped rule's dispatch (its tags naming dropped rules as -1) does not
// stay in the table; the right-linear check (grammar/ast_analysis_checks.cc) excuses the rules
// the rules' own dispatches hand over to, and no rule that only a stray table entry names.
#include <string>
#include <vector>

#include "check.h"
#include "fsm_test_support.h"
#include "grammar/ast_analysis_checks.h"
#include "grammar/ast_rule_analyses.h"
#include "grammar/inline_rules.h"
#include "support/dcheck.h"

namespace xg2_test {
namespace {

TagDispatchDef Dispatch(std::vector<std::pair<std::string, RuleId>> tags) {
  TagDispatchDef dispatch;
  for (auto& [text, rule] : tags) dispatch.tags.push_back({text, rule});
  dispatch.stop_eos = false;
  dispatch.stop_strings.push_back("</s>");
  return dispatch;
}

// The record BuildGrammarFsm would fill for a grammar without synthetic rules, compressed
// repetitions or merged members, with the right-linear report the AST side gives.
AstCheckRecord RecordOf(const GrammarAst& ast, const GrammarFsm& fsm) {
  AstCheckRecord record;
  for (RuleId r = 0; r < fsm.num_rules(); ++r) {
    record.dfa_nodes.push_back(fsm.rule_nodes[r].size());
    std::vector<RuleId> callees;
    for (NodeId n = fsm.rule_nodes[r].begin; n < fsm.rule_nodes[r].end; ++n) {
      for (const RuleEdge* e = fsm.rule_edges_begin(n); e != fsm.rule_edges_end(n); ++e) callees.push_back(e->rule);
    }
    record.callees.push_back(callees);
    record.has_compressible.push_back(0);
  }
  const AstRightLinear ast_side = FindAstRightLinear(ast, std::vector<uint8_t>(ast.rules.size(), 0));
  record.right_linear.pure = ast_side.pure;
  record.right_linear.entry = ast_side.entry;
  record.right_linear.emptied.assign(ast.rules.size(), 0);
  return record;
}

}  // namespace

TEST(DroppingUnreachableRulesDropsTheirDispatchesAndRenumbersTheRest) {
  // root ::= TagDispatch(("<a>", r)) ; r ::= "1" root? ; stray ::= TagDispatch(("<b>", gone), ("<c>", r)) ;
  // gone ::= "2". Nothing calls stray: it and gone are dropped, and with them stray's dispatch,
  // which comes first in the table.
  AstBuilder b;
  const RuleId root = b.DeclareRule("root");
  const RuleId r = b.DeclareRule("r");
  const RuleId gone = b.Rule("gone", b.Bytes("2"));
  b.Rule("stray", b.TagDispatch(Dispatch({{"<b>", gone}, {"<c>", r}})));
  b.ast.rules[root].body = b.TagDispatch(Dispatch({{"<a>", r}}));
  b.ast.rules[r].body = b.Seq({b.Bytes("1"), b.Repeat(b.Ref(root), 0, 1)});
  CHECK_EQ(b.ast.tag_dispatches.size(), 2u);
  InlineSmallRules(&b.ast);
  CHECK_EQ(b.ast.rules.size(), 2u);
  CHECK_EQ(b.ast.tag_dispatches.size(), 1u);  // stray's dispatch is gone with stray
  const ExprNode& body = b.ast.node(b.ast.rules[b.ast.root_rule].body);
  CHECK(body.kind == ExprKind::kTagDispatch);
  CHECK_EQ(body.tag_dispatch, 0);
  if (b.ast.tag_dispatches.size() == 1 && body.tag_dispatch == 0) {
    const TagDispatchDef& kept = b.ast.tag_dispatches[0];
    CHECK_EQ(kept.tags.size(), 1u);
    CHECK_EQ(kept.tags[0].text, std::string("<a>"));
    CHECK_EQ(b.ast.rules[kept.tags[0].rule].name, std::string("r"));
  }
  for (const TagDispatchDef& dispatch : b.ast.tag_dispatches) {
    for (const TagDispatchDef::Tag& tag : dispatch.tags) {
      CHECK(tag.rule >= 0 && static_cast<size_t>(tag.rule) < b.ast.rules.size());
    }
  }
  BuildGrammarFsm(b.ast);  // and the debug checks agree on what is left
}

TEST(TheRightLinearCheckExcusesOnlyRulesThatALiveDispatchReaches) {
  // root ::= r "a" ; r ::= "b". r is a pure entry on both sides. A dispatch in the table that
  // no rule holds, naming r, must not excuse r from the comparison of entries: a record that
  // says r is no entry is caught.
  AstBuilder b;
  const RuleId root = b.DeclareRule("root");
  const RuleId r = b.Rule("r", b.Bytes("b"));
  b.ast.rules[root].body = b.Seq({b.Ref(r), b.Bytes("a")});
  b.ast.tag_dispatches.push_back(Dispatch({{"<b>", r}}));
  const GrammarFsm fsm = BuildGrammarFsm(b.ast);
  AstCheckRecord record = RecordOf(b.ast, fsm);
  CHECK_EQ(record.right_linear.entry[r], 1);
  CheckAstAnalyses(b.ast, {}, fsm, record);  // both sides agree: no complaint
  record.right_linear.entry[r] = 0;
  CHECK_THROWS(CheckAstAnalyses(b.ast, {}, fsm, record), InternalError, "entries differ");
  // A stray entry naming a dropped rule (-1) is not read either.
  b.ast.tag_dispatches.push_back(Dispatch({{"<c>", -1}}));
  record.right_linear.entry[r] = 1;
  CheckAstAnalyses(b.ast, {}, fsm, record);
}

}  // namespace xg2_test
