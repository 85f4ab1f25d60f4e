// Counted loops through the one-pass (acyclic) minimisation: a compressed repetition of a
// JSON-character-like body (bounded strings, `json_char{m,n}`) gives a rule DFA with no back
// edge, so Minimize classes it sinks first like any acyclic machine. These builds run with
// the engine's invariant checks, so every such Minimize also rebuilds its result by Moore's
// rounds / Hopcroft's algorithm and throws if the two differ (CheckAcyclicMinimisation);
// the tests below add the language: the compressed FSM, run with its counters as the parser
// runs them, against the explicit expansion on random strings around the bounds.
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "check.h"
#include "fsm_test_support.h"
#include "grammar/fsm_invariants.h"
#include "support/dcheck.h"

namespace xg2_test {
namespace {

static_assert(XG2_DCHECKS_ENABLED, "the native tests build the engine with its invariant checks");

// A JSON string character in miniature: a letter, a short escape, or a \u escape with two
// hex digits (a prefix code: no character is a prefix of another).
ExprId MiniJsonChar(AstBuilder* b) {
  const ExprId hex = b->Class({{'0', '9'}, {'a', 'f'}});
  return b->Choice({b->Class({{'a', 'z'}}), b->Seq({b->Bytes("\\"), b->Class({{'n', 'n'}, {'t', 't'}})}),
                    b->Seq({b->Bytes("\\u"), hex, hex})});
}

// Acceptance by rule `rule` of `fsm` with counted loops, as EarleyParser::AddItem runs them:
// arriving at a gate with count < limit continues at the head with count + 1; a gate (at the
// limit) or a node outside every loop resets the count; steps inside a loop keep it.
bool CountedRuleAccepts(const GrammarFsm& fsm, RuleId rule, const std::string& text) {
  auto settle = [&fsm](NodeId n, int32_t count) {
    if (fsm.counted_loops.empty()) return std::make_pair(n, 0);
    const int32_t gate = fsm.node_gate_loop[n];
    if (gate >= 0 && count < fsm.counted_loops[gate].limit) return std::make_pair(fsm.counted_loops[gate].head, count + 1);
    if (gate >= 0 || fsm.node_loop[n] < 0) return std::make_pair(n, 0);
    return std::make_pair(n, count);
  };
  auto [node, count] = settle(fsm.rule_start[rule], 0);
  for (char c : text) {
    const NodeId next = fsm.StepByte(node, static_cast<uint8_t>(c));
    if (next < 0) return false;
    std::tie(node, count) = settle(next, count);
  }
  return fsm.node_accepting[node];
}

// `count` random characters of MiniJsonChar's language, now and then a byte outside it.
std::string RandomChars(std::mt19937* rng, int32_t count) {
  static const std::vector<std::string> pieces = {"a", "q", "z", "\\n", "\\t", "\\u0f", "\\ua9"};
  std::string out;
  for (int32_t i = 0; i < count; ++i) out += pieces[(*rng)() % pieces.size()];
  if ((*rng)() % 8 == 0) out.insert((*rng)() % (out.size() + 1), (*rng)() % 2 ? "\\" : "A");
  return out;
}

// "\"" char{lo,hi} "\"" built with compression (threshold 64, 8-byte tokens) and without,
// accepting the same strings; the compressed one holds `loops` counted loops.
void CheckBoundedString(int32_t lo, int32_t hi, size_t loops) {
  AstBuilder b;
  b.Rule("root", b.Seq({b.Bytes("\""), b.Repeat(MiniJsonChar(&b), lo, hi), b.Bytes("\"")}));
  FsmBuildLimits limits;
  limits.repetition_compression_threshold = 64;
  limits.max_token_bytes = 8;
  const GrammarFsm compressed = BuildGrammarFsm(b.ast, limits);
  CheckGrammarFsmInvariants(compressed, "test");
  CHECK_EQ(compressed.counted_loops.size(), loops);
  limits.repetition_compression_threshold = 0;
  const GrammarFsm explicit_fsm = BuildGrammarFsm(b.ast, limits);
  CHECK(explicit_fsm.counted_loops.empty());
  std::mt19937 rng(static_cast<uint32_t>(lo * 7919 + hi));
  const int32_t top = hi < 0 ? lo + 40 : hi;
  int32_t disagreements = 0, accepted = 0;
  for (int trial = 0; trial < 400; ++trial) {
    // Lengths near each bound and in between.
    const int32_t anchors[] = {lo, top, static_cast<int32_t>(rng() % (top + 1))};
    const int32_t length = std::max(0, anchors[trial % 3] + static_cast<int32_t>(rng() % 5) - 2);
    std::string text = "\"" + RandomChars(&rng, length) + "\"";
    if (trial % 11 == 0) text.pop_back();  // unterminated
    const bool expected = RuleAccepts(explicit_fsm, 0, text);
    accepted += expected;
    if (CountedRuleAccepts(compressed, 0, text) != expected) ++disagreements;
  }
  CHECK_EQ(disagreements, 0);
  CHECK(accepted > 50);  // the walk reaches the language, not only its complement
}

TEST(BoundedStringWithAFoldedOptionalPartMatchesItsExpansion) {
  CheckBoundedString(0, 300, 1);
  CheckBoundedString(3, 300, 1);
}

TEST(BoundedStringWithAFoldedMandatoryPartMatchesItsExpansion) {
  CheckBoundedString(300, 300, 1);
  CheckBoundedString(200, -1, 1);
}

TEST(BoundedStringWithBothPartsFoldedMatchesItsExpansion) { CheckBoundedString(150, 400, 2); }

TEST(ACountedLoopMachineIsMinimisedToTheSameDfaAsWithoutTheOnePass) {
  // The determinised machine of a folded optional part, minimised: acceptance, counter
  // roles and the loop's head and gate survive (the invariant checks inside Minimize compare
  // it with the general path).
  AstBuilder b;
  const ExprId body = b.Seq({b.Bytes("\""), b.Repeat(MiniJsonChar(&b), 0, 100), b.Bytes("\"")});
  b.Rule("root", body);
  FsmBuildLimits limits;
  limits.repetition_compression_threshold = 64;
  limits.max_token_bytes = 8;
  const GrammarFsm fsm = BuildGrammarFsm(b.ast, limits);
  CHECK_EQ(fsm.counted_loops.size(), size_t{1});
  const CountedLoop& loop = fsm.counted_loops[0];
  CHECK_EQ(fsm.node_loop[loop.head], 0);
  CHECK_EQ(fsm.node_gate_loop[loop.gate], 0);
  CHECK(fsm.node_loop[loop.gate] < 0);
  // Explicit copies after the loop copy: 8-byte tokens over 1-byte characters, 8 / 1 + 2.
  CHECK_EQ(loop.limit, 100 - (8 / 1 + 2));
  // Minimal: T = 10 copies after h (the loop copy, then 9 explicit ones) end at T + 1
  // boundaries (h, the gate, ..., R[0]), each but R[0] followed by a character's 3 inner
  // states (after "\\", after "\\u", after one hex digit); with the start (before the opening
  // quote; the state after it is h's) and the end, 4T + 3. A boundary merged away or
  // kept apart wrongly would change the count.
  const int32_t chain = 8 / 1 + 2;
  CHECK_EQ(fsm.rule_nodes[0].size(), 4 * chain + 3);
}

}  // namespace
}  // namespace xg2_test
