// SinkLeadingTerminals (grammar/sink_leading_terminals.h) on a grammar whose rules' references
// are met interleaved by the pass's walk: each rule must be judged on its own references only.
#include <string>

#include "check.h"
#include "fsm_test_support.h"
#include "grammar/sink_leading_terminals.h"

namespace xg2_test {

TEST(SinkLeadingTerminalsJudgesEachRuleOnItsOwnReferences) {
  // root ::= ":" a "," b | ":" a ";" c | "," b "!" c
  // a: always after ":" (sunk); b: always after "," (sunk); c: after ";" once and "!" once (kept).
  AstBuilder b;
  const RuleId root = b.DeclareRule("root");
  const RuleId a = b.Rule("a", b.Bytes("x"));
  const RuleId bb = b.Rule("b", b.Bytes("y"));
  const RuleId c = b.Rule("c", b.Bytes("z"));
  b.ast.rules[root].body = b.Choice({b.Seq({b.Bytes(":"), b.Ref(a), b.Bytes(","), b.Ref(bb)}),
                                     b.Seq({b.Bytes(":"), b.Ref(a), b.Bytes(";"), b.Ref(c)}),
                                     b.Seq({b.Bytes(","), b.Ref(bb), b.Bytes("!"), b.Ref(c)})});
  CHECK_EQ(SinkLeadingTerminals(&b.ast), 2);
  const std::string expected = PrintEbnf([] {
    AstBuilder e;
    const RuleId root = e.DeclareRule("root");
    const RuleId a = e.Rule("a", e.Seq({e.Bytes(":"), e.Bytes("x")}));
    const RuleId bb = e.Rule("b", e.Seq({e.Bytes(","), e.Bytes("y")}));
    const RuleId c = e.Rule("c", e.Bytes("z"));
    e.ast.rules[root].body = e.Choice({e.Seq({e.Ref(a), e.Ref(bb)}), e.Seq({e.Ref(a), e.Bytes(";"), e.Ref(c)}),
                                       e.Seq({e.Ref(bb), e.Bytes("!"), e.Ref(c)})});
    return e.ast;
  }());
  CHECK_EQ(PrintEbnf(b.ast), expected);
}

}  // namespace xg2_test
