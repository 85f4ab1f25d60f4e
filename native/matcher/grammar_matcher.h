// Per-request matching state: an Earley parser over a compiled grammar plus the token
// history needed for rollback, and the token-mask computation.
#ifndef XG2_MATCHER_GRAMMAR_MATCHER_H_
#define XG2_MATCHER_GRAMMAR_MATCHER_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "matcher/compiled_grammar.h"
#include "matcher/earley_parser.h"
#include "support/exclusive_use.h"

namespace xg2 {

// Number of 32-bit words in one bitmask row for `vocab_size` tokens.
inline int64_t BitmaskWords(int64_t vocab_size) { return (vocab_size + 31) / 32; }

// One matcher serves one caller at a time: every public call claims it (ExclusiveUse), and a
// call from a second thread while one is running throws ConcurrentUseError, doing nothing.
//
// Stop tokens: a plain stop token (one of the stop ids the grammar does not name) is a stop
// everywhere, even when its text is also ordinary text: the mask allows it exactly where
// AcceptToken accepts it, where the grammar may end, and accepting it terminates.
// A matcher with no plain stop token (stop_token_ids = [], a tokenizer without EOS) cannot
// end by a token, so it terminates by itself once the output is complete and no token can
// follow (a dead end); a complete output that can still be extended keeps it going. A
// grammar with no complete sentence at a dead end then never terminates (the caller's
// length limit ends it), but its mask is never empty before a dead end either.
//
// Work (EarleyLimits): each accepted token (AcceptToken, each token of ValidateTokens) and
// each byte of AcceptString may cost max_work_per_token parser operations; each mask fill,
// FindJumpForwardString and dead-end check max_work_per_fill. Past a budget the call throws
// ResourceLimitError and the matcher state is as it was before the call (a fill's row is
// then unspecified).
class GrammarMatcher {
 public:
  // `stop_token_ids` overrides the tokenizer's stop tokens when given. Stop tokens that the
  // grammar names as terminals (CompiledGrammar::token_literal_ids) are not plain stops: they
  // are accepted where the grammar allows them and terminate the matcher when it completes.
  GrammarMatcher(std::shared_ptr<const CompiledGrammar> grammar,
                 std::optional<std::vector<int32_t>> stop_token_ids,
                 bool terminate_without_stop_token);

  // Accepts one token; false (state unchanged) if the grammar forbids it here.
  // Throws InvalidArgumentError for ids outside [0, vocab_size). `notice`, when given, is
  // told once the parser's work for the token passes EarleyParser::kShortWork operations.
  bool AcceptToken(int32_t token_id, LongWorkNotice* notice = nullptr);
  // Accepts raw text as one history step (rolled back by rollback(1)).
  bool AcceptString(const std::string& bytes);
  // Length of the longest prefix of `tokens` that would be accepted; state unchanged.
  int32_t ValidateTokens(const std::vector<int32_t>& tokens);
  // Undoes the last `num_tokens` accepted tokens / strings.
  void Rollback(int32_t num_tokens);
  void Reset();

  // Writes the allowed-token bitmask into `words` (`num_words` >= BitmaskWords(vocab));
  // bits beyond the vocabulary are cleared. Returns false iff every token is allowed.
  // Uses the grammar's token-mask cache unless it is disabled. `notice`, when given, is told
  // before any long work the fill does: building a cache entry, the reference walk of the
  // vocabulary, deciding a dead end, or walking more than kShortWalkTokens uncertain tokens
  // through the parser. A fill from cached rows with a short walk (a cheap estimate: a short
  // walk may still meet a deep parse, bounded by the fill's work budget) never tells it.
  bool FillNextTokenBitmask(uint32_t* words, int64_t num_words, LongWorkNotice* notice = nullptr);
  // The same mask by the exact reference computation only: a walk of the sorted vocabulary
  // through the parser, sharing the work of common prefixes. Kept as the test oracle.
  bool FillNextTokenBitmaskReference(uint32_t* words, int64_t num_words);
  bool IsTerminated();
  // True when the output so far is a complete sentence (a stop token would be accepted).
  bool IsCompleted() const;
  // The longest byte string every continuation must start with (cut to whole UTF-8
  // characters); empty when there is a choice or the grammar may end here.
  std::string FindJumpForwardString();
  // An independent copy in the current state.
  GrammarMatcher Fork() const;

  int32_t num_accepted_steps() const;
  const CompiledGrammar& grammar() const { return *grammar_; }

  // One claim held over many steps (a draft-tree traversal): the calls of a Claimed skip
  // the per-call claim, so no other thread can interleave between them. Throws
  // ConcurrentUseError, as any call does, when the matcher is in use.
  class Claimed {
   public:
    explicit Claimed(GrammarMatcher& matcher) : matcher_(matcher), scope_(matcher.in_use_, "GrammarMatcher") {}
    bool AcceptToken(int32_t token_id) { return matcher_.AcceptTokenUnclaimed(token_id); }
    void Rollback(int32_t num_tokens) { matcher_.RollbackUnclaimed(num_tokens); }
    bool IsTerminated() { return matcher_.Terminated(); }
    bool FillNextTokenBitmask(uint32_t* words, int64_t num_words) { return matcher_.FillUnclaimed(words, num_words); }
    int32_t num_accepted_steps() const { return matcher_.AcceptedSteps(); }
    int64_t vocab_size() const { return matcher_.tokenizer_->vocab_size(); }

   private:
    GrammarMatcher& matcher_;
    ExclusiveUse::Scope scope_;
  };
  const std::vector<int32_t>& stop_token_ids() const { return stop_token_ids_; }

 private:
  // The calls without the claim (public calls claim once and use these).
  bool Terminated();
  bool AcceptTokenUnclaimed(int32_t token_id, LongWorkNotice* notice = nullptr);
  void RollbackUnclaimed(int32_t num_tokens);
  bool FillReferenceUnclaimed(uint32_t* words, int64_t num_words);
  bool FillUnclaimed(uint32_t* words, int64_t num_words, LongWorkNotice* notice = nullptr);
  // Whether Terminated() would now decide a dead end by a walk of the vocabulary (AtDeadEnd).
  bool DeadEndUndecided() const {
    return stop_token_ids_.empty() && !terminated_ && dead_end_ == kUnknown && parser_.CanEnd();
  }
  // Walking this many uncertain tokens through the parser costs a few microseconds: a fill
  // that walks more tells its LongWorkNotice.
  static constexpr size_t kShortWalkTokens = 64;
  int32_t AcceptedSteps() const { return static_cast<int32_t>(step_start_.size()); }
  // Whether the mask allows (and AcceptToken accepts) the plain stop tokens now.
  bool StopTokensAllowed();
  // Complete, without a plain stop token to end with, and no token can follow (see the
  // class comment); decided by a walk of the vocabulary, remembered until the state changes.
  bool AtDeadEnd();
  // From the mask cache: whether an unguarded item's node accepts a token (`accepted_any`),
  // else the sorted union of the nodes' uncertain positions. False (nothing decided) when
  // the cache is off or an item carries a lookahead guard.
  bool CachedTokensFollow(bool* accepted_any, std::vector<int32_t>* uncertain);
  // Also numbers the next step for the parser's token budgets (EarleyParser::SetStep).
  void StateChanged() {
    dead_end_ = kUnknown;
    parser_.SetStep(AcceptedSteps() + 1);
  }

  bool IsStop(int32_t token_id) const;
  // Ids below this are the tokenizer's tokens; the rest of vocab_size() is model padding.
  int32_t RealVocabSize() const { return static_cast<int32_t>(tokenizer_->decoded_tokens().size()); }
  // Shared head of both fills: validates, clears (or starts from `dense_start`, a bitset of
  // the vocabulary's words, saving a pass over the row), sets stop tokens. Returns false when
  // the grammar part of the mask is empty by construction (terminated matcher).
  bool BeginFill(uint32_t* words, int64_t num_words, const uint32_t* dense_start = nullptr);
  // Throws InvalidArgumentError when a row of `num_words` words cannot hold the vocabulary.
  void CheckRowWidth(int64_t num_words) const;
  // Sets the plain stop tokens' bits to StopTokensAllowed() (a stop token whose text is also
  // ordinary text may have been set by the walk) and returns whether the row needs applying.
  bool FinishFill(uint32_t* words);
  // Runs the parser over the tokens at `positions` (ascending indices into the sorted
  // vocabulary; all of them when null) and sets the bits of those it accepts. `shared`, when
  // given, holds each token's common prefix length with the previous one in the list.
  void WalkTokens(const int32_t* positions, const int32_t* shared, size_t count, uint32_t* words);
  void WalkAllTokens(uint32_t* words);
  // Reads the start of the cached entries of fill_next_nodes_ (the nodes the walked tokens
  // that the mask allows lead to), so the fill after the sampled token finds them in the
  // processor's cache (see FillUnclaimed).
  void WarmNextEntries();
  // Adds the parser's current scannable nodes to fill_next_nodes_ (WalkTokens, after a token
  // it accepts).
  void NoteNextNodes();
  static constexpr size_t kWarmNodesPerFill = 16;
  // Call-target warming (call_target_warming.cc): at a fill that starts from a dense accepted
  // set (free text), prefetches the first lines of the mask-cache entries of the rules that
  // the fill nodes' rules call (a TagDispatch's tag bodies), kWarmLinesPerFill lines per fill
  // in turn, so the fill after a trigger finds them in the processor's cache. Addresses are collected once per rule and kept while the
  // entries exist (published entries are immutable and live as long as the grammar).
  void WarmCallTargets();
  // The first nodes of the rules `rule` calls, and of the rules those start by calling.
  void CollectCallTargets(RuleId rule, std::vector<NodeId>* targets) const;
  // The lines to prefetch for `targets`; false when an entry is not built yet.
  bool CollectWarmLines(const std::vector<NodeId>& targets, std::vector<const void*>* lines) const;
  struct CallWarmList {
    RuleId rule;
    std::vector<NodeId> targets;
    std::vector<const void*> lines;  // distinct cache lines
    size_t next_line;                // where the next fill's prefetches start
    bool complete;
  };
  static constexpr size_t kMaxCallWarmTargets = 8;
  static constexpr size_t kMaxCallWarmRules = 8;
  static constexpr size_t kWarmLinesPerList = 2;
  static constexpr size_t kWarmLinesPerFill = 4;
  // Token sets (grammar/grammar_fsm.h): the sets of the token-set edges out of the current
  // set's items (sorted, unique), into fill_token_sets_; whether any item is guarded.
  bool ActiveTokenSets();
  // ORs the members of fill_token_sets_ into `words`: exact, as a token-set edge ends inside
  // its rule at a live DFA node (the fast path, used when no item is guarded).
  void OrActiveTokenSets(uint32_t* words);
  // The reference for token sets: every member of an active set not yet in `words` is tried
  // by a real token step, and set when the parser takes it.
  void TryActiveTokenSets(uint32_t* words);
  // Unique items (grammar/grammar_fsm.h, "Token-mask exactness"): inside a unique_item rule,
  // clears and walks through the parser again every token of `words` that could complete the
  // item at its end (CompiledGrammar::unique_recheck_positions), so that a repeated value is
  // never allowed from a cached row; in a finite item rule or its holder
  // (EarleyParser::NearFiniteUniqueItem), walks every allowed token. Nothing to do elsewhere
  // (unique_items_recheck.cc).
  void RecheckUniqueItemTokens(uint32_t* words);

  std::shared_ptr<const CompiledGrammar> grammar_;
  const TokenizerInfo* tokenizer_;
  std::vector<int32_t> stop_token_ids_;
  // Sorted stop tokens that the grammar names with Token(id): accepted only as terminals, and
  // accepting one that completes the grammar terminates the matcher.
  std::vector<int32_t> stop_terminal_ids_;
  // stop_token_ids_ sorted, for IsStop: a handful of ids, where a per-vocabulary flag table
  // would cost every matcher a vocabulary-sized allocation at construction.
  std::vector<int32_t> sorted_stop_token_ids_;
  bool terminate_without_stop_token_;
  EarleyParser parser_;
  // Per accepted step: the parser position before it; whether it was a stop token.
  std::vector<int32_t> step_start_;
  bool terminated_ = false;
  enum DeadEnd : int8_t { kUnknown, kNo, kYes };
  DeadEnd dead_end_ = kUnknown;
  ExclusiveUse in_use_;
  // Scratch for the cached fill (kept to avoid allocation per token).
  std::vector<NodeId> fill_nodes_;
  std::vector<int32_t> fill_uncertain_;
  std::vector<int32_t> fill_merged_;
  std::vector<const TokenClassification*> fill_entries_;       // per fill node
  std::vector<const TokenClassification*> fill_contributors_;
  std::vector<uint64_t> fill_position_bits_;
  std::vector<int32_t> fill_token_sets_;
  // Distinct scannable nodes after the tokens a fill's walk accepted (at most
  // kWarmNodesPerFill), for WarmNextEntries.
  std::vector<NodeId> fill_next_nodes_;
  std::vector<int32_t> fill_recheck_;
  // Per rule met at a dense fill (at most kMaxCallWarmRules), for WarmCallTargets.
  std::vector<CallWarmList> call_warm_;
};

}  // namespace xg2

#endif  // XG2_MATCHER_GRAMMAR_MATCHER_H_
