// The token-mask cache on FSM snapshots with unbuilt rules (docs/lazy_rule_dfas.md, "The mask
// cache on partial snapshots"): leave sets from the AST contexts contain the exact ones and
// never change as rules are built; masks made from the cache's classifications equal the
// reference masks (every token run through the parser) before and after a prediction grows
// the snapshot, on a sequence of snapshots built by hand, with and without the pool and the
// background precompute; refused growths; and parsers on several threads growing one cache
// while others read it (the case ThreadSanitizer is for).
#include <algorithm>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "check.h"
#include "fsm_test_support.h"
#include "grammar/follow_sets.h"
#include "matcher/earley_parser.h"
#include "matcher/rule_dfa_snapshots.h"
#include "matcher/token_mask_cache.h"
#include "support/dcheck.h"
#include "tokenizer/tokenizer_info.h"

namespace xg2_test {
namespace {

// root  ::= "{" value ("," value)* "}" | "a" item "e"
// value ::= item | "b"+ | ""
// item  ::= [x-z]+ "q" | "c" item
// In rule order, so that each rule's nodes follow the previous rule's: dropping the last k
// rules leaves an older snapshot. value is nullable: the root's leave sets then read its
// FIRST and what follows it; item is called from two contexts ("e" and ",}").
struct Grammar {
  GrammarAst ast;
  GrammarFsm whole;
};

Grammar MakeGrammar() {
  AstBuilder b;
  const RuleId root = b.DeclareRule("root");
  const RuleId value = b.DeclareRule("value");
  const RuleId item = b.DeclareRule("item");
  b.ast.rules[item].body =
      b.Choice({b.Seq({b.Repeat(b.Class({{'x', 'z'}}), 1, -1), b.Bytes("q")}), b.Seq({b.Bytes("c"), b.Ref(item)})});
  b.ast.rules[value].body = b.Choice({b.Ref(item), b.Repeat(b.Bytes("b"), 1, -1), b.Empty()});
  b.ast.rules[root].body =
      b.Choice({b.Seq({b.Bytes("{"), b.Ref(value), b.Repeat(b.Seq({b.Bytes(","), b.Ref(value)}), 0, -1), b.Bytes("}")}),
                b.Seq({b.Bytes("a"), b.Ref(item), b.Bytes("e")})});
  Grammar g{b.ast, BuildGrammarFsm(b.ast)};
  CHECK_EQ(g.whole.num_rules(), 3);  // no synthetic rule: the AST's rules are the FSM's
  return g;
}

// Every string of one or two bytes over the grammar's alphabet and some longer ones, so that
// tokens cross rule boundaries ("{xq,", "cxy", "q}") in both directions.
std::shared_ptr<const TokenizerInfo> MakeVocabulary() {
  const std::string alphabet = "{},abceqxyz";
  std::vector<std::string> tokens;
  for (char c : alphabet) tokens.push_back(std::string(1, c));
  for (char c : alphabet) {
    for (char d : alphabet) tokens.push_back(std::string{c, d});
  }
  std::mt19937 random(11);
  for (int i = 0; i < 300; ++i) {
    std::string token(3 + random() % 4, ' ');
    for (char& c : token) c = alphabet[random() % alphabet.size()];
    tokens.push_back(token);
  }
  const int32_t size = static_cast<int32_t>(tokens.size());
  return std::make_shared<const TokenizerInfo>(tokens, VocabType::kRaw, size, std::vector<int32_t>{},
                                               std::vector<int32_t>{}, false);
}

bool ParserTakes(EarleyParser* parser, const std::string& bytes) {
  const int32_t before = parser->position();
  const int32_t consumed = parser->AdvanceString(bytes.data(), static_cast<int32_t>(bytes.size()));
  parser->PopTo(before);
  return consumed == static_cast<int32_t>(bytes.size());
}

// The reference mask: every text token run through the parser.
std::vector<uint8_t> ReferenceMask(EarleyParser* parser, const TokenizerInfo& vocabulary) {
  std::vector<uint8_t> mask(vocabulary.vocab_size(), 0);
  for (int32_t id : vocabulary.sorted_text_tokens()) mask[id] = ParserTakes(parser, vocabulary.decoded_tokens()[id]);
  return mask;
}

// The mask a matcher makes from the cache (token_classification.h): the accepted tokens of
// each scannable item's node, and the uncertain ones the parser takes.
std::vector<uint8_t> CacheMask(EarleyParser* parser, GrammarMaskCache* cache, const TokenizerInfo& vocabulary) {
  std::vector<NodeId> nodes;  // copied first: running a token may grow the parser's snapshot
  for (const EarleyItem* it = parser->scannable_begin(); it != parser->scannable_end(); ++it) nodes.push_back(it->node);
  std::vector<uint8_t> mask(vocabulary.vocab_size(), 0);
  for (NodeId node : nodes) {
    const TokenClassification& entry = cache->Get(node);
    const AcceptedTokens& accepted = *entry.accepted;
    if (accepted.as_bits()) {
      for (int32_t id = 0; id < vocabulary.vocab_size(); ++id) {
        if (accepted.bits[id >> 5] >> (id & 31) & 1) mask[id] = 1;
      }
    } else {
      for (int32_t id : accepted.ids) mask[id] = 1;
    }
    for (int32_t position : entry.uncertain_positions) {
      const int32_t id = vocabulary.sorted_text_tokens()[position];
      if (!mask[id] && ParserTakes(parser, vocabulary.decoded_tokens()[id])) mask[id] = 1;
    }
  }
  return mask;
}

// Prefixes of documents (each a prefix of the language): the start, inside and after each rule.
const std::vector<std::string> kPrefixes = {"",     "{",    "{b",    "{bb",   "{x",   "{xyq", "{xq,",  "{xq,c",
                                            "{,",   "{}",   "{c",    "{cc",   "{b,x", "a",    "ac",    "acx",
                                            "axq",  "axqe", "{xq,b", "acczq", "{ccy", "{,,",  "{xq,,"};

// A lazy grammar: the first snapshot with rules 1 and 2 unbuilt, a builder that hands out
// the next larger hand-made snapshot holding the asked rule, and a mask cache grown by the
// snapshots' publish listener, as CompiledGrammar wires them.
struct LazyGrammar {
  std::vector<std::shared_ptr<const GrammarFsm>> sequence;  // rules from 1, from 2, none unbuilt
  std::unique_ptr<RuleDfaSnapshots> snapshots;
  std::shared_ptr<GrammarMaskCache> cache;

  LazyGrammar(const Grammar& g, std::shared_ptr<const TokenizerInfo> vocabulary, std::shared_ptr<MaskCachePool> pool,
              MaskCacheOptions options) {
    for (RuleId from : {1, 2, 3}) sequence.push_back(std::make_shared<const GrammarFsm>(WithRulesUnbuiltFrom(g.whole, from)));
    auto contexts = std::make_shared<const RuleByteContexts>(AstRuleByteContexts(g.ast, {}));
    snapshots = std::make_unique<RuleDfaSnapshots>(sequence[0], [this](const GrammarFsm& latest, RuleId rule) {
      for (const auto& snapshot : sequence) {
        if (snapshot->num_nodes() >= latest.num_nodes() && snapshot->IsBuilt(rule)) return *snapshot;
      }
      return latest;
    });
    cache = std::make_shared<GrammarMaskCache>(sequence[0], std::move(vocabulary), std::move(pool), options, contexts);
    snapshots->SetPublishListener([c = cache.get()](const std::shared_ptr<const GrammarFsm>& next) { c->GrowTo(next); });
  }
};

TEST(LeaveSetsFromContextsContainTheExactOnesAndKeepThemAsRulesAreBuilt) {
  const Grammar g = MakeGrammar();
  const RuleByteContexts contexts = AstRuleByteContexts(g.ast, {});
  const LeaveSets exact = ComputeLeaveBytes(g.whole);
  const LeaveSets bound(g.whole.num_nodes(), LeaveBytesFromContexts(g.whole, contexts, 0, g.whole.num_nodes()));
  for (NodeId n = 0; n < g.whole.num_nodes(); ++n) CHECK((exact[n] & ~bound[n]).none());
  // A partial snapshot gives each of its nodes the set it has in the whole grammar, and the
  // appended nodes' sets extend it to the whole grammar's.
  for (RuleId from : {1, 2}) {
    const GrammarFsm partial = WithRulesUnbuiltFrom(g.whole, from);
    CHECK_THROWS(ComputeLeaveBytes(partial), InternalError, "need every rule DFA built");
    const LeaveSets older(partial.num_nodes(), LeaveBytesFromContexts(partial, contexts, 0, partial.num_nodes()));
    for (NodeId n = 0; n < partial.num_nodes(); ++n) CHECK(older[n] == bound[n]);
    const LeaveSets grown(older, g.whole.num_nodes(),
                          LeaveBytesFromContexts(g.whole, contexts, partial.num_nodes(), g.whole.num_nodes()));
    for (NodeId n = 0; n < g.whole.num_nodes(); ++n) CHECK(grown[n] == bound[n]);
  }
}

// Masks from a lazy grammar's cache equal the reference masks at every prefix, and equal the
// masks of the eager grammar's cache (exact leave sets) with an eager parser.
void CheckMasksMatch(std::shared_ptr<MaskCachePool> pool, MaskCacheOptions options) {
  const Grammar g = MakeGrammar();
  const auto vocabulary = MakeVocabulary();
  LazyGrammar lazy(g, vocabulary, pool, options);
  CHECK(lazy.cache->leave_sets_from_contexts());
  if (options.precompute != 0) GrammarMaskCache::StartPrecompute(lazy.cache);
  auto whole = std::make_shared<const GrammarFsm>(g.whole);
  GrammarMaskCache eager_cache(whole, vocabulary, pool, options);
  CHECK(!eager_cache.leave_sets_from_contexts());
  EarleyParser eager(whole);
  for (const std::string& prefix : kPrefixes) {
    EarleyParser parser(lazy.sequence[0], {}, lazy.snapshots.get());
    CHECK_EQ(parser.AdvanceString(prefix.data(), static_cast<int32_t>(prefix.size())),
             static_cast<int32_t>(prefix.size()));
    eager.Reset();
    eager.AdvanceString(prefix.data(), static_cast<int32_t>(prefix.size()));
    // The first mask starts on the first snapshot: its entries are built before any growth
    // (running its uncertain tokens through the parser then predicts and builds rules).
    if (prefix.empty()) CHECK_EQ(lazy.snapshots->builds(), 0);
    const std::vector<uint8_t> from_cache = CacheMask(&parser, lazy.cache.get(), *vocabulary);
    const std::vector<uint8_t> reference = ReferenceMask(&parser, *vocabulary);
    CHECK(from_cache == reference);
    CHECK(CacheMask(&eager, &eager_cache, *vocabulary) == reference);
    CHECK(ReferenceMask(&eager, *vocabulary) == reference);
  }
  CHECK(lazy.snapshots->builds() >= 1);
  CHECK(lazy.snapshots->Latest()->IsBuilt(2));
  WaitForBackgroundWork();
  CHECK(lazy.cache->built_nodes() > 0);
}

TEST(MasksOnPartialSnapshotsEqualTheReferenceBeforeAndAfterGrowing) { CheckMasksMatch(nullptr, MaskCacheOptions{}); }

TEST(MasksOnPartialSnapshotsThroughThePoolWithoutBackground) {
  MaskCacheOptions options;
  options.precompute = 0;  // the pool's first lookup hashes the grammar on the matcher's thread
  CheckMasksMatch(std::make_shared<MaskCachePool>(int64_t{1} << 24), options);
}

TEST(MasksOnPartialSnapshotsWithTheBackgroundSchedule) {
  MaskCacheOptions options;
  options.precompute = 8;  // the schedule runs over the built rules while the parsers build more
  CheckMasksMatch(std::make_shared<MaskCachePool>(int64_t{1} << 24), options);
}

TEST(MaskCacheRefusesGrowthThatWouldNotStayExact) {
  const Grammar g = MakeGrammar();
  const auto vocabulary = MakeVocabulary();
  auto first = std::make_shared<const GrammarFsm>(WithRulesUnbuiltFrom(g.whole, 1));
  CHECK_THROWS(GrammarMaskCache(first, vocabulary, nullptr, MaskCacheOptions{}), InternalError,
               "needs the AST byte contexts");
  const RuleByteContexts contexts = AstRuleByteContexts(g.ast, {});
  GrammarMaskCache cache(first, vocabulary, nullptr, MaskCacheOptions{}, std::make_shared<const RuleByteContexts>(contexts));
  // Contexts that change a rule the cache has read.
  RuleByteContexts changed = contexts;
  changed.follow[0].set('!');
  CHECK_THROWS(cache.GrowTo(std::make_shared<const GrammarFsm>(g.whole), std::make_shared<const RuleByteContexts>(changed)),
               InternalError, "change an older rule's");
  // Contexts that miss a rule of the snapshot (a synthetic rule a build made).
  GrammarFsm with_extra_rule = g.whole;
  with_extra_rule.rule_start.push_back(kUnbuiltRule);
  with_extra_rule.rule_nullable.push_back(0);
  with_extra_rule.rule_lookahead.push_back(-1);
  with_extra_rule.rule_names.push_back("extra");
  with_extra_rule.rule_nodes.push_back(NodeBlock{with_extra_rule.num_nodes(), with_extra_rule.num_nodes()});
  CHECK_THROWS(cache.GrowTo(std::make_shared<const GrammarFsm>(with_extra_rule)), InternalError, "cover 3 rules");
  // A smaller snapshot.
  cache.GrowTo(std::make_shared<const GrammarFsm>(WithRulesUnbuiltFrom(g.whole, 2)));
  CHECK_THROWS(cache.GrowTo(first), InternalError, "fewer nodes");
  // An eager cache keeps the exact sets; a grown snapshot must leave them unchanged.
  GrammarMaskCache eager(std::make_shared<const GrammarFsm>(g.whole), vocabulary, nullptr, MaskCacheOptions{});
  CHECK(!eager.leave_sets_from_contexts());
  eager.GrowTo(std::make_shared<const GrammarFsm>(g.whole));
}

// Parsers on several threads share one lazy grammar: their predictions grow the cache (under
// the build mutex) while the others read entries and build their own; every mask stays the
// reference. Several rounds, each on a fresh grammar, for different interleavings.
TEST(ReadersAndGrowersOnSeveralThreadsKeepMasksExact) {
  const Grammar g = MakeGrammar();
  const auto vocabulary = MakeVocabulary();
  auto pool = std::make_shared<MaskCachePool>(int64_t{1} << 24);
  constexpr int kThreads = 4;
  constexpr int kRounds = 4;
  for (int round = 0; round < kRounds; ++round) {
    MaskCacheOptions options;
    options.precompute = round % 2 == 0 ? 8 : 0;
    LazyGrammar lazy(g, vocabulary, round % 2 == 0 ? pool : nullptr, options);
    if (options.precompute != 0) GrammarMaskCache::StartPrecompute(lazy.cache);
    std::vector<int> exact(kThreads, 0);
    std::vector<std::thread> threads;
    for (int k = 0; k < kThreads; ++k) {
      threads.emplace_back([&, k] {
        bool all = true;
        for (size_t p = 0; p < kPrefixes.size(); ++p) {
          // Each thread walks the prefixes from a different place, so builds come from all.
          const std::string& prefix = kPrefixes[(p + k * 5) % kPrefixes.size()];
          EarleyParser parser(lazy.sequence[0], {}, lazy.snapshots.get());
          all = all && parser.AdvanceString(prefix.data(), static_cast<int32_t>(prefix.size())) ==
                           static_cast<int32_t>(prefix.size());
          all = all && CacheMask(&parser, lazy.cache.get(), *vocabulary) == ReferenceMask(&parser, *vocabulary);
        }
        exact[k] = all;
      });
    }
    for (std::thread& t : threads) t.join();
    for (int k = 0; k < kThreads; ++k) CHECK_EQ(exact[k], 1);
    CHECK(lazy.snapshots->builds() >= 1 && lazy.snapshots->builds() <= 2);
    WaitForBackgroundWork();
  }
}

}  // namespace
}  // namespace xg2_test
