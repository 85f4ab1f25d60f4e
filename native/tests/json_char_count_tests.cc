// JSON character counts (grammar/grammar_fsm.h): the completion lengths of support/
// completion_lengths.h, the builder's product with the phases of a JSON character, and the
// checker's view of the new tables.
#include <string>
#include <vector>

#include "check.h"
#include "fsm_test_support.h"
#include "grammar/fsm_invariants.h"
#include "support/completion_lengths.h"
#include "support/dcheck.h"
#include "support/error.h"

namespace xg2_test {
namespace {

TEST(CompletionLengthsOfAChainAndALoop) {
  // 0 -1-> 1 -1-> 2 (accepting), 2 -1-> 2: from 0 every length from 2 on; from 1, from 1 on.
  const CompletionLengths lengths = ComputeCompletionLengths(3, {0, 0, 1}, {{0, 1, 1}, {1, 2, 1}, {2, 2, 1}}, 64);
  CHECK(lengths.fewest == (std::vector<int32_t>{2, 1, 0}));
  CHECK(lengths.most == (std::vector<int32_t>{-1, -1, -1}));
  CHECK_EQ(lengths.max_gap, 0);
}

TEST(CompletionLengthsMeasureGapsThatRecur) {
  // Blocks of three units: 0 -> 1 -> 2 -> 0 (accepting): lengths 0, 3, 6, ... from 0.
  const CompletionLengths lengths = ComputeCompletionLengths(3, {1, 0, 0}, {{0, 1, 1}, {1, 2, 1}, {2, 0, 1}}, 64);
  CHECK(lengths.fewest == (std::vector<int32_t>{0, 2, 1}));
  CHECK_EQ(lengths.most[0], -1);
  CHECK_EQ(lengths.max_gap, 2);
  CHECK(CountWindowIsDecided(0, 4, lengths.max_gap));   // no minimum
  CHECK(CountWindowIsDecided(4, -1, lengths.max_gap));  // no maximum
  CHECK(CountWindowIsDecided(4, 6, lengths.max_gap));
  CHECK(!CountWindowIsDecided(4, 5, lengths.max_gap));  // 4..5 meets 0..inf but holds no length
}

TEST(CompletionLengthsWeightZeroEdgesStayInOneUnit) {
  // 0 -0-> 1 -1-> 2 (accepting): a unit of two steps.
  const CompletionLengths lengths = ComputeCompletionLengths(3, {0, 0, 1}, {{0, 1, 0}, {1, 2, 1}}, 64);
  CHECK(lengths.fewest == (std::vector<int32_t>{1, 1, 0}));
  CHECK(lengths.most == (std::vector<int32_t>{1, 1, 0}));
}

// root ::= counted; counted[json_chars=lo..hi] ::= body
GrammarFsm CountingFsm(const std::string& body_bytes, int32_t lo, int32_t hi) {
  AstBuilder b;
  const RuleId root = b.DeclareRule("root");
  const RuleId counted = b.Rule("counted", b.Repeat(b.Bytes(body_bytes), 0, -1));
  b.ast.rules[counted].min_json_chars = lo;
  b.ast.rules[counted].max_json_chars = hi;
  b.ast.rules[root].body = b.Ref(counted);
  return BuildGrammarFsm(b.ast);
}

TEST(EscapesAndPairsEndOneCharacter) {
  // \u00e9 (six bytes) ends one character, at its last byte.
  const GrammarFsm fsm = CountingFsm("\\u00e9", 0, 3);
  CheckGrammarFsmInvariants(fsm, "a test");
  int32_t ends = 0;
  for (NodeId n = fsm.rule_nodes[1].begin; n < fsm.rule_nodes[1].end; ++n) ends += fsm.node_char_end[n];
  CHECK_EQ(ends, 1);  // the start, reached again after each escape
  CHECK_EQ(fsm.node_fewest_chars[fsm.rule_start[1]], 0);
  CHECK_EQ(fsm.node_most_chars[fsm.rule_start[1]], -1);
  // A surrogate pair: the high half ends the character, the low half adds nothing.
  const GrammarFsm pair = CountingFsm("\\ud83d\\ude00", 1, 2);
  CheckGrammarFsmInvariants(pair, "a test");
  CHECK(!pair.rule_nullable[1]);
}

TEST(BodiesThatAreNotJsonCharactersAreRefused) {
  CHECK_THROWS(CountingFsm("a\"", 0, 3), GrammarSyntaxError, "JSON string characters");
  CHECK_THROWS(CountingFsm("\\u00", 0, 3), GrammarSyntaxError, "JSON string characters");
  CHECK_THROWS(CountingFsm("abc", 4, 5), GrammarSyntaxError, "gaps");
}

TEST(CheckerRejectsBrokenCharacterTables) {
  const GrammarFsm fsm = CountingFsm("ab", 2, 9);
  CheckGrammarFsmInvariants(fsm, "a test");
  auto expect = [&](auto breaks, const std::string& fragment) {
    GrammarFsm broken = fsm;
    breaks(&broken);
    CHECK_THROWS(CheckGrammarFsmInvariants(broken, "a test"), InternalError, fragment);
  };
  expect([](GrammarFsm* f) { f->node_char_end[0] = 1; }, "outside a counting rule");
  expect([](GrammarFsm* f) { f->rule_max_json_chars[1] = 1; }, "counts 2..1");
  expect([](GrammarFsm* f) { f->node_fewest_chars.pop_back(); }, "one entry per rule / node");
  expect([](GrammarFsm* f) { f->rule_nullable[1] = 1; }, "says otherwise");
}

}  // namespace
}  // namespace xg2_test
