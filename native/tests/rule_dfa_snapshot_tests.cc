// FSM snapshots (grammar/grammar_fsm.h, "Snapshots"; matcher/rule_dfa_snapshots.h): the prefix
// check accepts a snapshot grown by appending a rule and rejects edits of what an older one
// had; a build runs once, tells the listener before it publishes, and fails loudly where it
// cannot run; and a parser that starts on a snapshot missing a rule builds it on the first
// prediction and accepts exactly the language of the whole grammar.
#include <algorithm>
#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "check.h"
#include "fsm_test_support.h"
#include "matcher/earley_parser.h"
#include "matcher/rule_dfa_snapshots.h"
#include "support/dcheck.h"

namespace xg2_test {
namespace {

// root ::= ("ab" | "cd") inner "e" ; inner ::= [x-z]+ "q" | "" : rule 1, called by the root,
// is the last block of the node space, so dropping it leaves a valid older snapshot.
GrammarFsm WholeFsm() {
  AstBuilder b;
  const RuleId root = b.DeclareRule("root");
  const RuleId inner = b.Rule("inner", b.Choice({b.Seq({b.Repeat(b.Class({{'x', 'z'}}), 1, -1), b.Bytes("q")}),
                                                 b.Empty()}));
  b.ast.rules[root].body = b.Seq({b.Choice({b.Bytes("ab"), b.Bytes("cd")}), b.Ref(inner), b.Bytes("e")});
  return BuildGrammarFsm(b.ast);
}

// `whole` with its last rule unbuilt: the snapshot a lazy compile would have published before
// the rule's first prediction.
GrammarFsm WithoutLastRule(const GrammarFsm& whole) { return WithRulesUnbuiltFrom(whole, whole.num_rules() - 1); }

TEST(SnapshotPrefixAcceptsAnAppendedRule) {
  const GrammarFsm whole = WholeFsm();
  const GrammarFsm older = WithoutLastRule(whole);
  CHECK(!older.IsBuilt(1) && older.IsBuilt(0) && whole.IsBuilt(1));
  CHECK_EQ(SnapshotPrefixViolation(older, whole), std::string());
  CHECK_EQ(SnapshotPrefixViolation(whole, whole), std::string());
  CHECK_EQ(SnapshotPrefixViolation(whole, older), std::string("nodes were removed"));
}

TEST(SnapshotPrefixRejectsEditsOfWhatTheOlderHad) {
  const GrammarFsm whole = WholeFsm();
  const GrammarFsm older = WithoutLastRule(whole);
  auto edited = [&](auto edit) {
    GrammarFsm newer = whole;
    edit(&newer);
    return SnapshotPrefixViolation(older, newer);
  };
  auto contains = [](const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; };
  CHECK(contains(edited([](GrammarFsm* f) { f->rule_nullable[0] = 1; }), "nullability"));
  CHECK(contains(edited([](GrammarFsm* f) { f->rule_start[0] += 1; }), "start"));
  CHECK(contains(edited([](GrammarFsm* f) { f->node_accepting[0] ^= 1; }), "acceptance"));
  CHECK(contains(edited([](GrammarFsm* f) { f->byte_edges[0].hi = 0xff; }), "edges"));
  CHECK(contains(edited([](GrammarFsm* f) { f->rule_names[1] = "renamed"; }), "name"));
  CHECK(contains(edited([](GrammarFsm* f) { f->root_rule = 1; }), "root"));
  // The unbuilt rule's fields are free: the build decides them.
  CHECK_EQ(edited([](GrammarFsm* f) { f->rule_nullable[1] ^= 1; }), std::string());
}

TEST(SnapshotsBuildOnceAndGrowTheListenerFirst) {
  const GrammarFsm whole = WholeFsm();
  auto first = std::make_shared<const GrammarFsm>(WithoutLastRule(whole));
  int builder_calls = 0;
  RuleDfaSnapshots snapshots(first, [&](const GrammarFsm& latest, RuleId rule) {
    ++builder_calls;
    CHECK_EQ(rule, 1);
    CHECK_EQ(latest.num_nodes(), first->num_nodes());
    return whole;
  });
  std::vector<int32_t> announced;
  snapshots.SetPublishListener([&](const std::shared_ptr<const GrammarFsm>& next) { announced.push_back(next->num_nodes()); });
  CHECK(snapshots.BuildRule(0) == first);  // built already: nothing to do
  std::shared_ptr<const GrammarFsm> built = snapshots.BuildRule(1);
  CHECK(built->IsBuilt(1));
  CHECK_EQ(built->num_nodes(), whole.num_nodes());
  CHECK(snapshots.BuildRule(1) == built);
  CHECK(snapshots.Latest() == built && snapshots.first() == first);
  CHECK_EQ(builder_calls, 1);
  CHECK_EQ(snapshots.builds(), 1);
  CHECK_EQ(announced.size(), size_t{1});
  CHECK_EQ(announced[0], whole.num_nodes());
}

TEST(SnapshotsRefuseBuildsThatCannotBeRight) {
  const GrammarFsm whole = WholeFsm();
  auto first = std::make_shared<const GrammarFsm>(WithoutLastRule(whole));
  RuleDfaSnapshots no_builder(first);
  CHECK_THROWS(no_builder.BuildRule(1), InternalError, "no rule builder");
  RuleDfaSnapshots leaves_it(first, [](const GrammarFsm& latest, RuleId) { return latest; });
  CHECK_THROWS(leaves_it.BuildRule(1), InternalError, "left rule 1 unbuilt");
  RuleDfaSnapshots rewrites(first, [&](const GrammarFsm&, RuleId) {
    GrammarFsm edited = whole;
    edited.node_accepting[0] ^= 1;
    return edited;
  });
  CHECK_THROWS(rewrites.BuildRule(1), InternalError, "does not extend the last");
  CHECK(rewrites.Latest() == first);  // nothing published
}

// Whether `parser` (reset) accepts `text` as a whole document.
bool Accepts(EarleyParser* parser, const std::string& text) {
  parser->Reset();
  const int32_t consumed = parser->AdvanceString(text.data(), static_cast<int32_t>(text.size()));
  return consumed == static_cast<int32_t>(text.size()) && parser->CanEnd();
}

TEST(ParserBuildsAnUnbuiltRuleOnPredictionAndKeepsTheLanguage) {
  const GrammarFsm whole = WholeFsm();
  auto first = std::make_shared<const GrammarFsm>(WithoutLastRule(whole));
  RuleDfaSnapshots snapshots(first, [&](const GrammarFsm&, RuleId) { return whole; });
  EarleyParser lazy(first, {}, &snapshots);
  CHECK_EQ(snapshots.builds(), 0);  // the root's start set predicts nothing yet
  EarleyParser eager(std::make_shared<const GrammarFsm>(whole));
  const std::vector<std::string> texts = {"abe", "cde", "abxqe", "cdxyzzqe", "abq", "abxe", "ab", "abxqq", "e", ""};
  for (const std::string& text : texts) {
    CHECK_EQ(Accepts(&lazy, text), Accepts(&eager, text));
  }
  CHECK(Accepts(&lazy, "abxyqe"));
  CHECK_EQ(snapshots.builds(), 1);
  CHECK_EQ(lazy.fsm().num_nodes(), whole.num_nodes());
  // Bytes allowed after each prefix agree too (what a mask is made of).
  for (const std::string prefix : {"a", "ab", "abx", "abxq", "cd"}) {
    lazy.Reset();
    eager.Reset();
    lazy.AdvanceString(prefix.data(), static_cast<int32_t>(prefix.size()));
    eager.AdvanceString(prefix.data(), static_cast<int32_t>(prefix.size()));
    bool lazy_bytes[256], eager_bytes[256];
    lazy.AllowedBytes(lazy_bytes);
    eager.AllowedBytes(eager_bytes);
    CHECK(std::equal(lazy_bytes, lazy_bytes + 256, eager_bytes));
  }
}

TEST(ParsersOnSeveralThreadsShareOneBuild) {
  const GrammarFsm whole = WholeFsm();
  auto first = std::make_shared<const GrammarFsm>(WithoutLastRule(whole));
  std::atomic<int> builder_calls{0};
  RuleDfaSnapshots snapshots(first, [&](const GrammarFsm&, RuleId) {
    ++builder_calls;
    return whole;
  });
  constexpr int kThreads = 4;
  std::vector<int> accepted(kThreads, 0);
  std::vector<std::thread> threads;
  for (int k = 0; k < kThreads; ++k) {
    threads.emplace_back([&, k] {
      EarleyParser parser(first, {}, &snapshots);
      accepted[k] = Accepts(&parser, "cdxzqe") && !Accepts(&parser, "cdxze");
    });
  }
  for (std::thread& t : threads) t.join();
  CHECK_EQ(builder_calls.load(), 1);
  CHECK_EQ(snapshots.builds(), 1);
  for (int k = 0; k < kThreads; ++k) CHECK_EQ(accepted[k], 1);
}

TEST(ParserWithoutBuilderReportsTheUnbuiltRule) {
  auto first = std::make_shared<const GrammarFsm>(WithoutLastRule(WholeFsm()));
  EarleyParser parser(first);
  CHECK_THROWS(parser.AdvanceString("ab", 2), InternalError, "has no DFA");
}

}  // namespace
}  // namespace xg2_test
