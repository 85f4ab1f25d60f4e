// The FSM builder's stages on small grammars: Thompson NFA -> subset construction ->
// minimisation checked state by state (counts, determinism, canonical form, the same
// language as std::regex on every string up to a length), then whole BuildGrammarFsm runs:
// nullability, counted loops, the determinisation fallback, right-linear merging and the
// shared rule-DFA table.
#include <regex>
#include <string>
#include <vector>

#include "check.h"
#include "fsm_test_support.h"
#include "grammar/fsm_invariants.h"
#include "grammar/token_literal.h"
#include "support/dcheck.h"

namespace xg2_test {
namespace {

static_assert(XG2_DCHECKS_ENABLED, "the native tests build the engine with its invariant checks");

// The three automata of `stages` and std::regex agree on every string up to `max_length`.
void CheckLanguage(const Stages& stages, const std::string& pattern, const std::string& alphabet, size_t max_length) {
  const std::regex oracle(pattern);
  for (const std::string& text : AllStrings(alphabet, max_length)) {
    const bool expected = std::regex_match(text, oracle);
    if (NfaAccepts(stages.nfa, text) != expected || DfaAccepts(stages.determinised, text) != expected ||
        DfaAccepts(stages.minimal, text) != expected) {
      Fail(__FILE__, __LINE__, "/" + pattern + "/ disagrees on '" + text + "'");
      return;
    }
  }
}

void CheckStageInvariants(const Stages& stages) {
  CheckFlatDfaInvariants(stages.determinised, "test determinisation");
  CheckRuleDfaInvariants(stages.minimal, 0, "test minimisation");
}

TEST(ClassicAbbMinimisesToFourStates) {
  AstBuilder b;
  const ExprId body = b.Seq({b.Repeat(b.Choice({b.Bytes("a"), b.Bytes("b")}), 0, -1), b.Bytes("abb")});
  const Stages stages = RunStages(b.ast, body);
  CHECK_EQ(stages.minimal.size(), 4);
  CHECK(stages.determinised.size() >= 4);
  CheckStageInvariants(stages);
  CheckLanguage(stages, "(a|b)*abb", "abc", 8);
}

TEST(SubsetConstructionKeepsTheExponentialLanguageExact) {
  // [ab]*a[ab]{3}: after any 'a', which of the next three bytes were 'a' -> 2^4 states.
  AstBuilder b;
  const ExprId ab = b.Class({{'a', 'b'}});
  const ExprId body = b.Seq({b.Repeat(ab, 0, -1), b.Bytes("a"), b.Repeat(ab, 3, 3)});
  const Stages stages = RunStages(b.ast, body);
  CHECK_EQ(stages.minimal.size(), 16);
  CheckStageInvariants(stages);
  CheckLanguage(stages, "[ab]*a[ab]{3}", "ab", 9);
}

TEST(EqualLanguagesGiveIdenticalMinimalDfas) {
  AstBuilder b;
  const Stages split = RunStages(b.ast, b.Choice({b.Bytes("ab"), b.Bytes("ac")}));
  const Stages factored = RunStages(b.ast, b.Seq({b.Bytes("a"), b.Choice({b.Bytes("b"), b.Bytes("c")})}));
  const Stages by_class = RunStages(b.ast, b.Seq({b.Bytes("a"), b.Class({{'b', 'c'}})}));
  CHECK_EQ(Describe(split.minimal), Describe(factored.minimal));
  CHECK_EQ(Describe(split.minimal), Describe(by_class.minimal));
  CHECK_EQ(split.minimal.size(), 3);
}

TEST(EveryMinimisationGivesTheCanonicalDfa) {
  // word{0,2} has 21 states and word{0,4} 41, both acyclic (the one-pass minimisation, which
  // these builds check against Moore's rounds and Hopcroft's algorithm). A trailing z* makes
  // them cyclic (Moore's rounds for the small one, Hopcroft's algorithm for the large one)
  // with as many states: the end state's language is z*, the one after a z. Written out as a
  // choice of the explicit strings, each gives the identical DFA.
  const std::string word = "abcdefghij";
  for (bool cyclic : {false, true}) {
    for (int copies : {2, 4}) {
      AstBuilder b;
      const ExprId tail = cyclic ? b.Repeat(b.Bytes("z"), 0, -1) : b.Empty();
      const Stages repeated = RunStages(b.ast, b.Seq({b.Repeat(b.Bytes(word), 0, copies), tail}));
      std::vector<ExprId> alternatives{b.Empty()};
      std::string text;
      for (int k = 0; k < copies; ++k) alternatives.push_back(b.Bytes(text += word));
      const Stages listed = RunStages(b.ast, b.Seq({b.Choice(alternatives), tail}));
      CHECK_EQ(repeated.minimal.size(), 10 * copies + 1);
      CHECK_EQ(repeated.determinised.size() <= 32, copies == 2);  // kMaxMooreNodes
      CHECK_EQ(Describe(repeated.minimal), Describe(listed.minimal));
      CheckStageInvariants(repeated);
      CHECK(DfaAccepts(repeated.minimal, word + word));
      CHECK(!DfaAccepts(repeated.minimal, word + "a"));
      CHECK_EQ(DfaAccepts(repeated.minimal, word + "zz"), cyclic);
    }
  }
}

TEST(LargeCyclicMachinesMinimiseToTheSameDfa) {
  // Above Moore's size limit, with a cycle (Hopcroft's algorithm). ([01]tail)* is minimal
  // as determinised (40 states). (0tail|1tail)* determinises into 79 states, the two copies
  // of the tail pairwise equivalent, and must come out as the same 40-state DFA.
  const std::string tail = "BCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmn";
  AstBuilder b;
  const Stages by_class = RunStages(b.ast, b.Repeat(b.Seq({b.Class({{'0', '1'}}), b.Bytes(tail)}), 0, -1));
  const Stages by_choice = RunStages(b.ast, b.Repeat(b.Choice({b.Bytes("0" + tail), b.Bytes("1" + tail)}), 0, -1));
  CHECK_EQ(by_class.determinised.size(), 40);
  CHECK_EQ(by_class.minimal.size(), 40);
  CHECK_EQ(by_choice.determinised.size(), 79);
  CHECK_EQ(by_choice.minimal.size(), 40);
  CHECK_EQ(Describe(by_class.minimal), Describe(by_choice.minimal));
  CheckStageInvariants(by_class);
  CheckStageInvariants(by_choice);
  for (const Stages* stages : {&by_class, &by_choice}) {
    CHECK(DfaAccepts(stages->minimal, ""));
    CHECK(DfaAccepts(stages->minimal, "0" + tail + "1" + tail));
    CHECK(!DfaAccepts(stages->minimal, "0" + tail.substr(0, 38)));
    CHECK(!DfaAccepts(stages->minimal, "0" + tail + "2"));
  }
}

TEST(AcyclicMachineMergesSharedSuffixes) {
  // The trie of the alternatives has a state per prefix; the minimal DFA shares the suffixes
  // "at", "rt" and "t": start, {at, art}, {at}, {t, rt}, {t}, and the end.
  AstBuilder b;
  const ExprId body = b.Choice({b.Bytes("cat"), b.Bytes("bat"), b.Bytes("hat"), b.Bytes("cart"), b.Bytes("bart")});
  const Stages stages = RunStages(b.ast, body);
  CHECK_EQ(stages.minimal.size(), 6);
  CHECK(stages.determinised.size() > 6);
  CheckStageInvariants(stages);
  CheckLanguage(stages, "(c|b)(at|art)|hat", "abchrt", 4);
}

TEST(CharacterClassesStepWholeUtf8Characters) {
  AstBuilder b;
  // [a-z é €] and a class across the surrogate block, which has no UTF-8 encoding.
  const Stages letters = RunStages(b.ast, b.Class({{'a', 'z'}, {0xE9, 0xE9}, {0x20AC, 0x20AC}}));
  CheckStageInvariants(letters);
  CHECK(DfaAccepts(letters.minimal, "q"));
  CHECK(DfaAccepts(letters.minimal, "\xC3\xA9"));
  CHECK(DfaAccepts(letters.minimal, "\xE2\x82\xAC"));
  CHECK(!DfaAccepts(letters.minimal, "\xC3"));
  CHECK(!DfaAccepts(letters.minimal, "\xA9"));
  CHECK(!DfaAccepts(letters.minimal, "\xE2\x82"));
  const Stages across = RunStages(b.ast, b.Class({{0xD000, 0xE000}}));
  CHECK(DfaAccepts(across.minimal, "\xED\x80\x80"));    // U+D000
  CHECK(!DfaAccepts(across.minimal, "\xED\xA0\x80"));   // U+D800, a surrogate
  CHECK(DfaAccepts(across.minimal, "\xEE\x80\x80"));    // U+E000
  for (const Stages* stages : {&letters, &across}) {
    for (const std::string& text : AllStrings("\x80\xA9\xC3\xE2\xED\xEE", 3)) {
      CHECK_EQ(NfaAccepts(stages->nfa, text), DfaAccepts(stages->minimal, text));
    }
  }
}

TEST(BuildGrammarFsmLaysOutRulesAndNullability) {
  AstBuilder b;
  const RuleId root = b.DeclareRule("root");
  const RuleId inner = b.Rule("inner", b.Repeat(b.Bytes("a"), 0, -1));
  b.ast.rules[root].body = b.Seq({b.Bytes("x"), b.Ref(inner), b.Bytes("y")});
  const GrammarFsm fsm = BuildGrammarFsm(b.ast);
  CheckGrammarFsmInvariants(fsm, "test");
  CHECK_EQ(fsm.num_rules(), 2);
  CHECK(!fsm.rule_nullable[root]);
  CHECK(fsm.rule_nullable[inner]);
  CHECK_EQ(fsm.rule_edges.size(), size_t{1});
  CHECK_EQ(fsm.rule_edges[0].rule, inner);
  CHECK(RuleAccepts(fsm, inner, "aaa"));
  CHECK(!RuleAccepts(fsm, inner, "ab"));
  CHECK_EQ(fsm.rule_nodes[0].size(), 4);  // x, <inner>, y, end
}

TEST(LongRepetitionBecomesOneCountedLoop) {
  AstBuilder b;
  b.Rule("root", b.Repeat(b.Class({{'a', 'z'}}), 0, 500));
  FsmBuildLimits limits;
  limits.repetition_compression_threshold = 64;
  limits.max_token_bytes = 4;
  const GrammarFsm compressed = BuildGrammarFsm(b.ast, limits);
  CheckGrammarFsmInvariants(compressed, "test");
  CHECK_EQ(compressed.counted_loops.size(), size_t{1});
  // 4-byte tokens over 1-byte iterations: 4 / 1 + 2 explicit copies after the loop copy.
  const int32_t chain = 4 / 1 + 2;
  CHECK_EQ(compressed.counted_loops[0].limit, 500 - chain);
  CHECK_EQ(compressed.node_loop[compressed.counted_loops[0].head], 0);
  CHECK_EQ(compressed.node_gate_loop[compressed.counted_loops[0].gate], 0);
  CHECK(compressed.num_nodes() <= chain + 3);
  limits.repetition_compression_threshold = 0;
  const GrammarFsm explicit_fsm = BuildGrammarFsm(b.ast, limits);
  CHECK(explicit_fsm.counted_loops.empty());
  CHECK_EQ(explicit_fsm.num_nodes(), 501);
  CHECK(RuleAccepts(explicit_fsm, 0, std::string(500, 'k')));
  CHECK(!RuleAccepts(explicit_fsm, 0, std::string(501, 'k')));
}

TEST(ExplodingDeterminisationIsSplitIntoRules) {
  // [ab]*a[ab]{22} needs 2^23 DFA states; the builder lowers its parts as rules instead.
  AstBuilder b;
  const ExprId ab = b.Class({{'a', 'b'}});
  b.Rule("root", b.Seq({b.Repeat(ab, 0, -1), b.Bytes("a"), b.Repeat(ab, 22, 22)}));
  const GrammarFsm fsm = BuildGrammarFsm(b.ast);
  CheckGrammarFsmInvariants(fsm, "test");
  CHECK(fsm.num_rules() > 1);
  bool has_part = false;
  for (const std::string& name : fsm.rule_names) has_part = has_part || name.find("#part") != std::string::npos;
  CHECK(has_part);
  CHECK(fsm.num_nodes() < 4096);
}

TEST(RightLinearChainIsMergedIntoTheRootDfa) {
  // root ::= "a" r2 ; r2 ::= "b" r3 | "c" ; r3 ::= "d": one DFA for {abd, ac}.
  AstBuilder b;
  const RuleId root = b.DeclareRule("root");
  const RuleId r2 = b.DeclareRule("r2");
  const RuleId r3 = b.Rule("r3", b.Bytes("d"));
  b.ast.rules[r2].body = b.Choice({b.Seq({b.Bytes("b"), b.Ref(r3)}), b.Bytes("c")});
  b.ast.rules[root].body = b.Seq({b.Bytes("a"), b.Ref(r2)});
  const GrammarFsm fsm = BuildGrammarFsm(b.ast);
  CheckGrammarFsmInvariants(fsm, "test");
  for (NodeId n = fsm.rule_nodes[root].begin; n < fsm.rule_nodes[root].end; ++n) {
    CHECK_EQ(fsm.rule_edge_begin[n], fsm.rule_edge_begin[n + 1]);
  }
  for (const std::string& text : AllStrings("abcd", 4)) {
    CHECK_EQ(RuleAccepts(fsm, root, text), text == "abd" || text == "ac");
  }
  // Only the merged root calls them: both members are emptied.
  CHECK_EQ(fsm.rule_nodes[r3].end - fsm.rule_nodes[r3].begin, 1);
  CHECK_EQ(fsm.rule_nodes[r2].end - fsm.rule_nodes[r2].begin, 1);
}

TEST(SharedRuleDfaTableServesTheSecondBuild) {
  // A body large enough to be keyed (fifty distinct words).
  AstBuilder b;
  std::vector<ExprId> words;
  for (int k = 0; k < 50; ++k) words.push_back(b.Bytes("shared_word_" + std::to_string(k) + "_native_test"));
  b.Rule("root", b.Choice(words));
  const GrammarFsm first = BuildGrammarFsm(b.ast);
  const uint64_t hits_before = GetSharedRuleDfaStats().hits;
  const GrammarFsm second = BuildGrammarFsm(b.ast);
  CHECK(GetSharedRuleDfaStats().hits > hits_before);
  CHECK_EQ(first.ToString(), second.ToString());
  CheckGrammarFsmInvariants(second, "test");
  CHECK(RuleAccepts(second, 0, "shared_word_7_native_test"));
  CHECK(!RuleAccepts(second, 0, "shared_word_50_native_test"));
}

TEST(TokenSetMarkersBecomeTokenSetEdges) {
  AstBuilder b;
  b.ast.token_sets.push_back({{3, 5, 9}, false});
  b.Rule("root", b.Seq({b.Bytes("a"), b.Bytes(TokenSetMarkerBytes(0)), b.Bytes("b")}));
  const GrammarFsm fsm = BuildGrammarFsm(b.ast);
  CheckGrammarFsmInvariants(fsm, "test");
  CHECK(fsm.has_token_sets());
  CHECK_EQ(fsm.token_set_edges.size(), size_t{1});
}

}  // namespace
}  // namespace xg2_test
