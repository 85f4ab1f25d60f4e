// Shared tails of the NFA builder (grammar/nfa_builder.cc, NfaBuilder::Lower): equal
// expressions at the ends of a choice's alternatives are lowered once, whether they are one
// node or distinct equal nodes, and expressions of the same kind and size that differ are
// not. The alternatives' tails have the same shape (kind, expanded size) in every case here,
// so structural ids decide; the NFA keeps the language either way.
#include <string>
#include <vector>

#include "check.h"
#include "fsm_test_support.h"
#include "grammar/lowering_context.h"

namespace xg2_test {
namespace {

// A sequence of one-byte nodes spelling `word`: a shared-tail candidate from 12 letters on.
ExprId Spelled(AstBuilder* b, const std::string& word) {
  std::vector<ExprId> letters;
  for (char c : word) letters.push_back(b->Bytes(std::string(1, c)));
  return b->Seq(letters);
}

const std::string kTail = "ABCDEFGHIJKL";
const std::string kOther = "ABCDEFGHIJKX";  // same shape as kTail, different bytes

// Lowers root ::= "a" T_0 | "b" T_1 | ... with fragments and shared tails on; the NFA.
Nfa LowerAlternatives(const std::vector<std::string>& tails) {
  AstBuilder b;
  std::vector<ExprId> alternatives;
  for (size_t k = 0; k < tails.size(); ++k) {
    alternatives.push_back(b.Seq({b.Bytes(std::string(1, static_cast<char>('a' + k))), Spelled(&b, tails[k])}));
  }
  b.Rule("root", b.Choice(alternatives));
  FsmBuildLimits limits;
  LoweringContext ctx(b.ast, limits);
  Nfa nfa;
  nfa.Reset();
  nfa.start = nfa.AddNode();
  int64_t budget = int64_t{1} << 22;
  nfa.accept = LowerRuleBody(b.ast, b.ast.rules[0].body, nfa.start, &nfa, &budget, &ctx, -1, "root", true);
  nfa.Finish();
  return nfa;
}

}  // namespace

TEST(EqualTailsOfDistinctNodesAreLoweredOnce) {
  const Nfa equal = LowerAlternatives({kTail, kTail});
  const Nfa different = LowerAlternatives({kTail, kOther});
  // One copy of the 12-letter tail less, one entry node more.
  CHECK_EQ(equal.num_nodes + 11, different.num_nodes);
  CHECK(NfaAccepts(equal, "a" + kTail));
  CHECK(NfaAccepts(equal, "b" + kTail));
  CHECK(!NfaAccepts(equal, "a" + kOther));
  CHECK(NfaAccepts(different, "b" + kOther));
  CHECK(!NfaAccepts(different, "b" + kTail));
}

TEST(EqualTailsAreSharedPastADifferentTailOfTheSameShape) {
  // The first and third tails are equal; the second has their shape but other bytes, so it
  // is met between them and the first must still count as the third's equal.
  const Nfa shared = LowerAlternatives({kTail, kOther, kTail});
  const Nfa unshared = LowerAlternatives({kTail, kOther, kTail.substr(0, 11) + "Y"});
  CHECK_EQ(shared.num_nodes + 11, unshared.num_nodes);
  CHECK(NfaAccepts(shared, "c" + kTail));
  CHECK(NfaAccepts(shared, "b" + kOther));
  CHECK(!NfaAccepts(shared, "c" + kOther));
}

}  // namespace xg2_test
