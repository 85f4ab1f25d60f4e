// ComputeLeaveBytes (grammar/follow_sets.h) on a grammar small enough to write every node's
// set by hand: the first bytes of the rules a node calls (and, past a nullable callee, what
// follows the call inside the rule), and at an accepting node what follows its rule anywhere.
// Nodes that neither call a rule nor accept have the empty set.
#include <string>

#include "check.h"
#include "fsm_test_support.h"
#include "grammar/follow_sets.h"

namespace xg2_test {
namespace {

ByteSet Bytes(const std::string& bytes) {
  ByteSet set;
  for (char c : bytes) set.set(static_cast<uint8_t>(c));
  return set;
}

// The set's bytes in order, for the failure message.
std::string Listed(const ByteSet& set) {
  std::string bytes;
  for (int c = 0; c < 256; ++c) {
    if (set.test(c)) bytes += static_cast<char>(c);
  }
  return bytes;
}

// The one rule edge's callee at n, or -1 (this grammar's nodes call one rule at most).
RuleId Callee(const GrammarFsm& fsm, NodeId n) {
  const RuleEdge* begin = fsm.rule_edges_begin(n);
  const RuleEdge* end = fsm.rule_edges_end(n);
  CHECK(end - begin <= 1);
  return begin == end ? -1 : begin->rule;
}

}  // namespace

TEST(LeaveBytesOfCallingAndAcceptingNodes) {
  // root  ::= "a" item "e" | "{" value "}"
  // item  ::= "x" | "y" "z"
  // value ::= item "," | ""      (nullable: the call to it may be passed over)
  AstBuilder b;
  const RuleId root = b.DeclareRule("root");
  const RuleId item = b.DeclareRule("item");
  const RuleId value = b.DeclareRule("value");
  b.ast.rules[item].body = b.Choice({b.Bytes("x"), b.Bytes("yz")});
  b.ast.rules[value].body = b.Choice({b.Seq({b.Ref(item), b.Bytes(",")}), b.Empty()});
  b.ast.rules[root].body =
      b.Choice({b.Seq({b.Bytes("a"), b.Ref(item), b.Bytes("e")}), b.Seq({b.Bytes("{"), b.Ref(value), b.Bytes("}")})});
  const GrammarFsm fsm = BuildGrammarFsm(b.ast);
  CHECK_EQ(fsm.num_rules(), 3);
  const LeaveSets leave = ComputeLeaveBytes(fsm);
  CHECK_EQ(leave.size(), static_cast<size_t>(fsm.num_nodes()));

  int root_calls_item = 0, root_calls_value = 0, item_accepts = 0, value_start = 0, value_end = 0;
  for (NodeId n = 0; n < fsm.num_nodes(); ++n) {
    const RuleId rule = fsm.node_rule[n];
    const RuleId callee = Callee(fsm, n);
    const bool accepting = fsm.node_accepting[n];
    ByteSet expected;
    if (rule == root && callee == item) {
      expected = Bytes("xy");
      ++root_calls_item;
    } else if (rule == root && callee == value) {
      expected = Bytes("xy}");  // FIRST(value), then past the nullable call: "}"
      ++root_calls_value;
    } else if (rule == item && accepting) {
      expected = Bytes("e,");  // FOLLOW(item): after it in root and in value
      ++item_accepts;
    } else if (rule == value && callee == item) {
      CHECK(accepting);
      expected = Bytes("xy}");  // FIRST(item), and FOLLOW(value) as it accepts
      ++value_start;
    } else if (rule == value && accepting) {
      expected = Bytes("}");  // after "," : FOLLOW(value)
      ++value_end;
    } else {
      CHECK_EQ(callee, -1);  // root's accepting node: nothing follows the root
    }
    CHECK_EQ(std::to_string(n) + " " + Listed(leave[n]), std::to_string(n) + " " + Listed(expected));
  }
  CHECK_EQ(root_calls_item, 1);
  CHECK_EQ(root_calls_value, 1);
  CHECK(item_accepts >= 1);
  CHECK_EQ(value_start, 1);
  CHECK_EQ(value_end, 1);
}

}  // namespace xg2_test
