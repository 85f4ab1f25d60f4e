// A grammar compiled for one tokenizer: the rule FSMs plus the vocabulary they are matched
// against. Built complete by its constructor (native/compiler/ compiles one, and
// matcher/grammar_serialization.h reassembles one from bytes) and immutable from then on:
// every member is const, so one instance is shared by every matcher and thread without locks.
// The parts that fill later are thread-safe: the mask cache, and the rule FSMs' snapshots
// (matcher/rule_dfa_snapshots.h), where a rule left unbuilt by the compile is built on first
// prediction (docs/lazy_rule_dfas.md; only with the compile's internal lazy_rule_dfas switch).
#ifndef XG2_MATCHER_COMPILED_GRAMMAR_H_
#define XG2_MATCHER_COMPILED_GRAMMAR_H_

#include <memory>
#include <string>
#include <vector>

#include "grammar/grammar_fsm.h"
#include "grammar/lazy_rule_builder.h"
#include "matcher/earley_parser.h"
#include "matcher/rule_dfa_snapshots.h"
#include "matcher/token_mask_cache.h"
#include "support/lazy_text.h"
#include "tokenizer/tokenizer_info.h"

namespace xg2 {

// What a CompiledGrammar is made of, gathered before it is built.
struct CompiledGrammarParts {
  GrammarFsm fsm;
  // Builds the rules `fsm` leaves unbuilt (grammar/lazy_rule_builder.h); null when it builds all.
  std::shared_ptr<LazyRuleBuilder> rule_builder;
  // The vocabulary the FSMs are matched against: the tokenizer's own, or the vocabulary
  // derived for the ids the grammar names with Token(id) (tokenizer/token_literals.h).
  std::shared_ptr<const TokenizerInfo> tokenizer;
  // The EBNF the grammar was built from (after frontend conversion), for inspection: the text,
  // or how to print it from the source when asked (compiler/grammar_compiler.cc).
  TextSource ebnf;
  EarleyLimits earley_limits;
  std::vector<int32_t> token_literal_ids;  // sorted
  std::vector<int32_t> stop_terminal_ids;  // sorted; a subset of token_literal_ids
  // Shares token classifications with other grammars of the same vocabulary (may be null).
  std::shared_ptr<MaskCachePool> pool;
  MaskCacheOptions cache_options;
};

struct CompiledGrammar {
  explicit CompiledGrammar(CompiledGrammarParts parts);

  // The rule FSMs as the compile built them: the first snapshot, never replaced. A parser's
  // items may be on nodes of a newer one (EarleyParser::fsm()).
  const std::shared_ptr<const GrammarFsm> fsm;
  const std::shared_ptr<const TokenizerInfo> tokenizer;
  // The EBNF the grammar was built from (after frontend conversion), for inspection and
  // serialization; printed on first use, so the compile prints nothing. The one member filled
  // after construction (thread-safe, support/lazy_text.h).
  const LazyText ebnf;
  // Token classifications per node, filled on demand by matchers (thread-safe).
  const std::shared_ptr<GrammarMaskCache> mask_cache;
  // Every snapshot of the rule FSMs since `fsm`, and the build of the rules it left unbuilt;
  // each new snapshot grows mask_cache's per-node tables before any reader can load it.
  const std::unique_ptr<RuleDfaSnapshots> snapshots;
  // What snapshots builds the rules the compile left unbuilt with (null: it left none).
  const std::shared_ptr<LazyRuleBuilder> rule_builder;
  // Limits of every matcher's parser (from the compile's CompileLimits).
  const EarleyLimits earley_limits;
  // Sorted ids the grammar names with Token(id) (tokenizer/token_literals.h), and those of them
  // that are stop tokens of the base vocabulary (Harmony `<|call|>`, `<|return|>`): accepting
  // one as a terminal that completes the grammar terminates the matcher.
  const std::vector<int32_t> token_literal_ids;
  const std::vector<int32_t> stop_terminal_ids;
  // Unique items (grammar/grammar_fsm.h, "Token-mask exactness"): the ascending positions in
  // the sorted vocabulary of the tokens whose last byte enters a final accepting node (one
  // without edges) of a unique_item rule (a string item's closing quote); empty without
  // unique items.
  const std::vector<int32_t> unique_recheck_positions;

  // The rule FSMs with every rule built ("build all first": serialization, FSM dumps): `fsm`
  // where the compile built them all, else the snapshot after building the rest.
  std::shared_ptr<const GrammarFsm> WholeFsm() const { return snapshots->BuildAll(); }

  // Counts the first snapshot, the latest where rules were built since, and what the builder
  // keeps for later builds (older snapshots that readers still hold are theirs).
  size_t MemoryBytes() const {
    const std::shared_ptr<const GrammarFsm> latest = snapshots->Latest();
    return sizeof(*this) + fsm->MemoryBytes() + (latest != fsm ? latest->MemoryBytes() : 0) + RuleBuilderBytes() +
           ebnf.MemoryBytes() + mask_cache->MemoryBytes() + unique_recheck_positions.capacity() * sizeof(int32_t);
  }
  // MemoryBytes without the token classifications built since the compile (by matchers and
  // the background precompute): what the compile built, read without walking those entries
  // under the mask cache's lock (which the precompute thread takes for every entry it adds).
  // The EBNF counts as it stands: its source until someone prints it, then the text.
  size_t BuiltBytes() const {
    return sizeof(*this) + fsm->MemoryBytes() + RuleBuilderBytes() + ebnf.MemoryBytes() + mask_cache->FixedBytes() +
           unique_recheck_positions.capacity() * sizeof(int32_t);
  }

 private:
  size_t RuleBuilderBytes() const { return rule_builder ? rule_builder->MemoryBytes() : 0; }
};

}  // namespace xg2

#endif  // XG2_MATCHER_COMPILED_GRAMMAR_H_
