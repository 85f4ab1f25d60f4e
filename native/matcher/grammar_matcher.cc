#include "matcher/grammar_matcher.h"

#include <algorithm>
#include <cstring>
#include <iterator>

#include "grammar/token_literal.h"
#include "support/dcheck.h"
#include "support/error.h"

namespace xg2 {

namespace {

constexpr const char* kMatcherName = "GrammarMatcher";

// Returns the parser to the position it had when this was made, on destruction (also when an
// exception unwinds), unless Keep() was called.
class ParserRewind {
 public:
  explicit ParserRewind(EarleyParser& parser) : parser_(parser), position_(parser.position()) {}
  ~ParserRewind() {
    if (!keep_) parser_.PopTo(position_);
  }
  ParserRewind(const ParserRewind&) = delete;
  ParserRewind& operator=(const ParserRewind&) = delete;
  int32_t position() const { return position_; }
  void Keep() { keep_ = true; }

 private:
  EarleyParser& parser_;
  const int32_t position_;
  bool keep_ = false;
};

// Starts a parser budget that tells `notice` (may be null) once its work gets long, and
// takes the notice back from the parser on destruction (also when an exception unwinds):
// the notice lives on the caller's stack.
class LongWorkNoticeScope {
 public:
  LongWorkNoticeScope(EarleyParser& parser, WorkBudget budget, LongWorkNotice* notice) : parser_(parser) {
    parser_.SetWorkBudget(budget, notice);
  }
  ~LongWorkNoticeScope() { parser_.DropLongWorkNotice(); }
  LongWorkNoticeScope(const LongWorkNoticeScope&) = delete;
  LongWorkNoticeScope& operator=(const LongWorkNoticeScope&) = delete;

 private:
  EarleyParser& parser_;
};

}  // namespace

GrammarMatcher::GrammarMatcher(std::shared_ptr<const CompiledGrammar> grammar,
                               std::optional<std::vector<int32_t>> stop_token_ids,
                               bool terminate_without_stop_token)
    : grammar_(std::move(grammar)),
      tokenizer_(grammar_->tokenizer.get()),
      terminate_without_stop_token_(terminate_without_stop_token),
      parser_(grammar_->fsm, grammar_->earley_limits, grammar_->snapshots.get()) {
  // Stop tokens the grammar names as terminals end generation through the grammar (see
  // AcceptToken); the others are plain stops, allowed where the grammar is complete.
  const std::vector<int32_t>& literals = grammar_->token_literal_ids;
  std::vector<int32_t> requested = stop_token_ids ? *stop_token_ids : tokenizer_->stop_token_ids();
  if (!stop_token_ids) stop_terminal_ids_ = grammar_->stop_terminal_ids;
  for (int32_t id : requested) {
    if (id < 0 || id >= tokenizer_->vocab_size()) {
      throw InvalidArgumentError("stop token id " + std::to_string(id) +
                                 " is outside the vocabulary [0, " +
                                 std::to_string(tokenizer_->vocab_size()) + ")");
    }
    if (std::binary_search(literals.begin(), literals.end(), id)) {
      stop_terminal_ids_.push_back(id);
    } else {
      stop_token_ids_.push_back(id);
    }
  }
  std::sort(stop_terminal_ids_.begin(), stop_terminal_ids_.end());
  sorted_stop_token_ids_ = stop_token_ids_;
  std::sort(sorted_stop_token_ids_.begin(), sorted_stop_token_ids_.end());
}

bool GrammarMatcher::IsStop(int32_t token_id) const {
  return std::binary_search(sorted_stop_token_ids_.begin(), sorted_stop_token_ids_.end(), token_id);
}

bool GrammarMatcher::IsTerminated() {
  ExclusiveUse::Scope claim(in_use_, kMatcherName);
  return Terminated();
}

bool GrammarMatcher::Terminated() {
  return terminated_ || (terminate_without_stop_token_ && parser_.CanEnd()) || AtDeadEnd();
}

bool GrammarMatcher::StopTokensAllowed() {
  return Terminated() || (parser_.CanEnd() && !terminate_without_stop_token_);
}

bool GrammarMatcher::AtDeadEnd() {
  if (!stop_token_ids_.empty() || terminated_ || !parser_.CanEnd()) return false;
  if (dead_end_ == kUnknown) {
    bool any_token = false;
    if (parser_.scannable_begin() != parser_.scannable_end()) {
      std::vector<uint32_t> row(BitmaskWords(tokenizer_->vocab_size()), 0);
      parser_.SetWorkBudget(WorkBudget::kFill);
      // The cached classification decides without a vocabulary walk where it can: a token
      // some unguarded item's node accepts follows; else only uncertain tokens can.
      std::vector<int32_t> uncertain;
      if (CachedTokensFollow(&any_token, &uncertain)) {
        if (!any_token && !uncertain.empty()) WalkTokens(uncertain.data(), nullptr, uncertain.size(), row.data());
      } else {
        WalkTokens(nullptr, nullptr, tokenizer_->sorted_text_tokens().size(), row.data());
      }
      any_token = any_token || std::any_of(row.begin(), row.end(), [](uint32_t w) { return w != 0; });
    }
    if (!any_token && ActiveTokenSets()) {
      std::vector<uint32_t> row(BitmaskWords(tokenizer_->vocab_size()), 0);
      TryActiveTokenSets(row.data());
      any_token = std::any_of(row.begin(), row.end(), [](uint32_t w) { return w != 0; });
    }
    dead_end_ = any_token ? kNo : kYes;
  }
  return dead_end_ == kYes;
}

bool GrammarMatcher::CachedTokensFollow(bool* accepted_any, std::vector<int32_t>* uncertain) {
  GrammarMaskCache& cache = *grammar_->mask_cache;
  if (!cache.options().enabled) return false;
  *accepted_any = false;
  for (const EarleyItem* it = parser_.scannable_begin(); it != parser_.scannable_end(); ++it) {
    if (it->guard != LookaheadGuards::kNone) return false;  // a lookahead may veto: walk all
    if (parser_.CountDecidesTokens(*it, tokenizer_->max_token_bytes())) return false;  // so may a count
  }
  for (const EarleyItem* it = parser_.scannable_begin(); it != parser_.scannable_end(); ++it) {
    const TokenClassification& entry = cache.Get(it->node);
    if (entry.accepted->as_bits() || !entry.accepted->ids.empty()) {
      *accepted_any = true;
      return true;
    }
    uncertain->insert(uncertain->end(), entry.uncertain_positions.begin(), entry.uncertain_positions.end());
  }
  std::sort(uncertain->begin(), uncertain->end());
  uncertain->erase(std::unique(uncertain->begin(), uncertain->end()), uncertain->end());
  return true;
}

bool GrammarMatcher::IsCompleted() const {
  ExclusiveUse::Scope claim(in_use_, kMatcherName);
  return terminated_ || parser_.CanEnd();
}

int32_t GrammarMatcher::num_accepted_steps() const {
  ExclusiveUse::Scope claim(in_use_, kMatcherName);
  return AcceptedSteps();
}

GrammarMatcher GrammarMatcher::Fork() const {
  ExclusiveUse::Scope claim(in_use_, kMatcherName);
  return GrammarMatcher(*this);
}

bool GrammarMatcher::AcceptToken(int32_t token_id, LongWorkNotice* notice) {
  ExclusiveUse::Scope claim(in_use_, kMatcherName);
  return AcceptTokenUnclaimed(token_id, notice);
}

bool GrammarMatcher::AcceptTokenUnclaimed(int32_t token_id, LongWorkNotice* notice) {
  if (token_id < 0 || token_id >= tokenizer_->vocab_size()) {
    throw InvalidArgumentError("token id " + std::to_string(token_id) +
                               " is outside the vocabulary [0, " +
                               std::to_string(tokenizer_->vocab_size()) + ")");
  }
  if (Terminated()) return false;
  if (IsStop(token_id)) {
    if (terminate_without_stop_token_ || !parser_.CanEnd()) return false;
    step_start_.push_back(parser_.position());
    terminated_ = true;
    StateChanged();
    XG2_DCHECK_INVARIANTS(parser_.CheckStepHistory(step_start_, "accepting a stop token"));
    return true;
  }
  // A token without text can still be a member of a token set (grammar/grammar_fsm.h);
  // model padding (ids past the decoded tokens) never is.
  const bool text = tokenizer_->IsTextToken(token_id);
  if (!text && !grammar_->fsm->has_token_sets()) return false;
  if (token_id >= RealVocabSize()) return false;
  const std::string& bytes = tokenizer_->decoded_tokens()[token_id];
  ParserRewind rewind(parser_);
  LongWorkNoticeScope notice_scope(parser_, WorkBudget::kToken, notice);
  if (!parser_.AdvanceToken(token_id, bytes.data(), text ? static_cast<int32_t>(bytes.size()) : -1)) {
    return false;
  }
  rewind.Keep();
  step_start_.push_back(rewind.position());
  StateChanged();
  XG2_DCHECK_INVARIANTS(parser_.CheckStepHistory(step_start_, "accepting a token"));
  // A stop token accepted as a grammar terminal (Harmony `<|call|>`) that leaves the root
  // complete ends generation, as any stop token does; Rollback undoes it with the step.
  if (parser_.CanEnd() &&
      std::binary_search(stop_terminal_ids_.begin(), stop_terminal_ids_.end(), token_id)) {
    terminated_ = true;
  }
  return true;
}

bool GrammarMatcher::AcceptString(const std::string& bytes) {
  ExclusiveUse::Scope claim(in_use_, kMatcherName);
  if (Terminated()) return false;
  ParserRewind rewind(parser_);
  for (char byte : bytes) {
    parser_.SetWorkBudget(WorkBudget::kToken);  // each byte is charged as one token
    if (!parser_.Advance(static_cast<uint8_t>(byte))) return false;
  }
  rewind.Keep();
  step_start_.push_back(rewind.position());
  StateChanged();
  XG2_DCHECK_INVARIANTS(parser_.CheckStepHistory(step_start_, "accepting a string"));
  return true;
}

int32_t GrammarMatcher::ValidateTokens(const std::vector<int32_t>& tokens) {
  ExclusiveUse::Scope claim(in_use_, kMatcherName);
  int32_t accepted = 0;
  try {
    for (int32_t id : tokens) {
      if (!AcceptTokenUnclaimed(id)) break;
      ++accepted;
    }
  } catch (...) {
    RollbackUnclaimed(accepted);  // the state stays as it was before the call
    throw;
  }
  RollbackUnclaimed(accepted);
  return accepted;
}

void GrammarMatcher::Rollback(int32_t num_tokens) {
  ExclusiveUse::Scope claim(in_use_, kMatcherName);
  RollbackUnclaimed(num_tokens);
}

void GrammarMatcher::RollbackUnclaimed(int32_t num_tokens) {
  if (num_tokens < 0 || num_tokens > AcceptedSteps()) {
    throw InvalidArgumentError("cannot roll back " + std::to_string(num_tokens) +
                               " tokens: only " + std::to_string(AcceptedSteps()) +
                               " accepted since the last reset");
  }
  if (num_tokens == 0) return;
  int32_t target = step_start_[step_start_.size() - num_tokens];
  step_start_.resize(step_start_.size() - num_tokens);
  parser_.PopTo(target);
  terminated_ = false;  // a stop token can only be the last step
  StateChanged();
  XG2_DCHECK_INVARIANTS(parser_.CheckStepHistory(step_start_, "a rollback"));
}

void GrammarMatcher::Reset() {
  ExclusiveUse::Scope claim(in_use_, kMatcherName);
  parser_.Reset();
  step_start_.clear();
  terminated_ = false;
  StateChanged();
  XG2_DCHECK_INVARIANTS(parser_.CheckStepHistory(step_start_, "Reset"));
}

void GrammarMatcher::CheckRowWidth(int64_t num_words) const {
  const int64_t needed = BitmaskWords(tokenizer_->vocab_size());
  if (num_words < needed) {
    throw InvalidArgumentError("bitmask row has " + std::to_string(num_words) +
                               " words; the vocabulary needs " + std::to_string(needed));
  }
}

bool GrammarMatcher::BeginFill(uint32_t* words, int64_t num_words, const uint32_t* dense_start) {
  CheckRowWidth(num_words);
  const int64_t needed = BitmaskWords(tokenizer_->vocab_size());
  if (dense_start) {
    std::memcpy(words, dense_start, sizeof(uint32_t) * needed);
    std::memset(words + needed, 0, sizeof(uint32_t) * (num_words - needed));
  } else {
    std::memset(words, 0, sizeof(uint32_t) * num_words);
  }
  parser_.SetWorkBudget(WorkBudget::kFill);  // one budget for the whole fill
  return !Terminated();
}

bool GrammarMatcher::FinishFill(uint32_t* words) {
  const bool stops = StopTokensAllowed();
  for (int32_t id : stop_token_ids_) {
    if (stops) {
      words[id >> 5] |= 1u << (id & 31);
    } else {
      words[id >> 5] &= ~(1u << (id & 31));
    }
  }
  const int32_t vocab_size = tokenizer_->vocab_size();
  const int64_t needed = BitmaskWords(vocab_size);
  for (int64_t w = 0; w < needed; ++w) {
    uint32_t full = (w == needed - 1 && (vocab_size & 31)) ? ((1u << (vocab_size & 31)) - 1) : ~0u;
    if (words[w] != full) return true;
  }
  return false;
}

void GrammarMatcher::WalkTokens(const int32_t* positions, const int32_t* shared_with_previous,
                                size_t count, uint32_t* words) {
  bool first_byte_allowed[256];
  parser_.AllowedBytes(first_byte_allowed);
  const std::vector<int32_t>& sorted = tokenizer_->sorted_text_tokens();
  const std::vector<int32_t>& lcp = tokenizer_->lcp();
  const char* token_bytes = tokenizer_->sorted_token_bytes().data();
  const int32_t* token_offsets = tokenizer_->sorted_token_offsets().data();
  ParserRewind rewind(parser_);  // also when the work budget runs out mid-walk
  const int32_t base = rewind.position();
  // Invariant: the parser has consumed the first `depth` bytes of the previous token, and
  // if that token was longer, its byte at `depth` was rejected.
  int32_t depth = 0;
  int32_t previous = -1;
  for (size_t k = 0; k < count; ++k) {
    const int32_t pos = positions ? positions[k] : static_cast<int32_t>(k);
    // Common prefix with the previous walked token: the minimum LCP over the skipped range.
    int32_t shared = 0;
    if (shared_with_previous) {
      shared = shared_with_previous[k];
    } else if (previous >= 0) {
      shared = lcp[previous + 1];
      for (int32_t j = previous + 2; j <= pos && shared > 0; ++j) shared = std::min(shared, lcp[j]);
    }
    previous = pos;
    if (shared > depth) continue;  // shares the rejected byte of the previous token
    if (shared < depth) {
      parser_.PopTo(base + shared);
      depth = shared;
    }
    // The token's bytes from the sorted-order arena: ascending positions read it in order.
    const char* bytes = token_bytes + token_offsets[pos];
    if (depth == 0 && !first_byte_allowed[static_cast<uint8_t>(bytes[0])]) continue;
    const int32_t size = token_offsets[pos + 1] - token_offsets[pos];
    while (depth < size && parser_.Advance(static_cast<uint8_t>(bytes[depth]))) ++depth;
    if (depth == size) {
      words[sorted[pos] >> 5] |= 1u << (sorted[pos] & 31);
      NoteNextNodes();
    }
  }
}

void GrammarMatcher::NoteNextNodes() {
  if (fill_next_nodes_.size() >= kWarmNodesPerFill) return;
  for (const EarleyItem* it = parser_.scannable_begin(); it != parser_.scannable_end(); ++it) {
    if (fill_next_nodes_.size() >= kWarmNodesPerFill) return;
    if (std::find(fill_next_nodes_.begin(), fill_next_nodes_.end(), it->node) == fill_next_nodes_.end()) {
      fill_next_nodes_.push_back(it->node);
    }
  }
}

void GrammarMatcher::WarmNextEntries() {
  const GrammarMaskCache& cache = *grammar_->mask_cache;
  for (NodeId node : fill_next_nodes_) {
    const TokenClassification* entry = cache.Find(node);  // never builds: only what exists
    if (!entry) continue;
    const AcceptedTokens& accepted = *entry->accepted;
    __builtin_prefetch(accepted.as_bits() ? static_cast<const void*>(accepted.bits.data())
                                          : static_cast<const void*>(accepted.ids.data()));
    __builtin_prefetch(entry->uncertain_positions.data());
    __builtin_prefetch(entry->uncertain_lcp.data());
  }
  fill_next_nodes_.clear();
}

bool GrammarMatcher::FillNextTokenBitmaskReference(uint32_t* words, int64_t num_words) {
  ExclusiveUse::Scope claim(in_use_, kMatcherName);
  return FillReferenceUnclaimed(words, num_words);
}

bool GrammarMatcher::FillReferenceUnclaimed(uint32_t* words, int64_t num_words) {
  if (BeginFill(words, num_words)) {
    WalkTokens(nullptr, nullptr, tokenizer_->sorted_text_tokens().size(), words);
    if (grammar_->fsm->has_token_sets()) {
      ActiveTokenSets();
      TryActiveTokenSets(words);
    }
  }
  return FinishFill(words);
}

bool GrammarMatcher::FillNextTokenBitmask(uint32_t* words, int64_t num_words, LongWorkNotice* notice) {
  ExclusiveUse::Scope claim(in_use_, kMatcherName);
  return FillUnclaimed(words, num_words, notice);
}

bool GrammarMatcher::FillUnclaimed(uint32_t* words, int64_t num_words, LongWorkNotice* notice) {
  LongWorkNotice silent;
  if (!notice) notice = &silent;
  GrammarMaskCache& cache = *grammar_->mask_cache;
  if (!cache.options().enabled) {
    notice->Notify();
    return FillReferenceUnclaimed(words, num_words);
  }
  if (DeadEndUndecided()) notice->Notify();
  // A terminated matcher allows its stop tokens only (FinishFill sets them; no walk).
  if (Terminated()) return FillReferenceUnclaimed(words, num_words);
  CheckRowWidth(num_words);  // before any entry is built for a row that cannot take it

  fill_nodes_.clear();
  fill_next_nodes_.clear();
  for (const EarleyItem* it = parser_.scannable_begin(); it != parser_.scannable_end(); ++it) {
    // A pending lookahead can veto tokens the rule's DFA accepts: decide exactly. So can a
    // JSON character count near its bounds (grammar/grammar_fsm.h).
    if (it->guard != LookaheadGuards::kNone || parser_.CountDecidesTokens(*it, tokenizer_->max_token_bytes())) {
      notice->Notify();
      return FillReferenceUnclaimed(words, num_words);
    }
    // An item whose token budget is spent takes no byte of the next token; any other takes the
    // whole token as one, so its node's classification is exact.
    if (parser_.WithinBudget(*it)) fill_nodes_.push_back(it->node);
  }
  std::sort(fill_nodes_.begin(), fill_nodes_.end());
  fill_nodes_.erase(std::unique(fill_nodes_.begin(), fill_nodes_.end()), fill_nodes_.end());

  // Entries first: the row starts as a copy of the first dense accepted set (one pass over
  // the row instead of a clear and an OR).
  fill_entries_.clear();
  const AcceptedTokens* dense_start = nullptr;
  size_t uncertain_total = 0;
  for (NodeId node : fill_nodes_) {
    const TokenClassification* entry = cache.Find(node);
    if (!entry) {
      notice->Notify();
      entry = &cache.Get(node);
    }
    fill_entries_.push_back(entry);
    uncertain_total += entry->uncertain_positions.size();
    if (!dense_start && entry->accepted->as_bits()) dense_start = entry->accepted.get();
  }
  // RecheckUniqueItemTokens walks too, inside a unique item or near a finite one.
  if (uncertain_total > kShortWalkTokens ||
      (!grammar_->unique_recheck_positions.empty() && parser_.InsideUniqueItem()) || parser_.NearFiniteUniqueItem()) {
    notice->Notify();
  }
  BeginFill(words, num_words, dense_start ? dense_start->bits.data() : nullptr);
  const int64_t vocab_words = BitmaskWords(tokenizer_->vocab_size());
  fill_contributors_.clear();  // entries with uncertain tokens
  for (const TokenClassification* entry_pointer : fill_entries_) {
    const TokenClassification& entry = *entry_pointer;
    if (!entry.uncertain_positions.empty()) fill_contributors_.push_back(&entry);
    const AcceptedTokens& accepted = *entry.accepted;
    if (&accepted == dense_start) continue;
    if (accepted.as_bits()) {
      const uint32_t* bits = accepted.bits.data();
      for (int64_t w = 0; w < vocab_words; ++w) words[w] |= bits[w];
    } else {
      for (int32_t id : accepted.ids) words[id >> 5] |= 1u << (id & 31);
    }
  }
  if (fill_contributors_.size() == 1) {
    // One list, already sorted and with its prefix lengths: walk it as stored (tokens that
    // another node accepts are walked too; their bit is simply set again).
    const TokenClassification& only = *fill_contributors_[0];
    WalkTokens(only.uncertain_positions.data(), only.uncertain_lcp.data(),
               only.uncertain_positions.size(), words);
  } else if (fill_contributors_.size() > 1) {
    // The union of the sorted lists, in order, without tokens another node already accepts.
    const std::vector<int32_t>& sorted = tokenizer_->sorted_text_tokens();
    const size_t position_words = (sorted.size() + 63) / 64;
    size_t total = 0;
    for (const TokenClassification* entry : fill_contributors_) total += entry->uncertain_positions.size();
    fill_uncertain_.clear();
    if (total * fill_contributors_.size() <= position_words) {
      // Short lists: merged pairwise (cheaper than clearing and scanning a bitset over the
      // whole vocabulary).
      for (const TokenClassification* entry : fill_contributors_) {
        const std::vector<int32_t>& list = entry->uncertain_positions;
        fill_merged_.clear();
        std::set_union(fill_uncertain_.begin(), fill_uncertain_.end(), list.begin(), list.end(),
                       std::back_inserter(fill_merged_));
        fill_uncertain_.swap(fill_merged_);
      }
      fill_uncertain_.erase(std::remove_if(fill_uncertain_.begin(), fill_uncertain_.end(),
                                           [&](int32_t pos) {
                                             const int32_t id = sorted[pos];
                                             return (words[id >> 5] & (1u << (id & 31))) != 0;
                                           }),
                            fill_uncertain_.end());
    } else {
      // Long lists: a bitset over sorted positions (linear, no sort), read in order.
      fill_position_bits_.assign(position_words, 0);
      for (const TokenClassification* entry : fill_contributors_) {
        for (int32_t pos : entry->uncertain_positions) fill_position_bits_[pos >> 6] |= uint64_t{1} << (pos & 63);
      }
      for (size_t w = 0; w < position_words; ++w) {
        for (uint64_t bits = fill_position_bits_[w]; bits; bits &= bits - 1) {
          const int32_t pos = static_cast<int32_t>(w * 64 + __builtin_ctzll(bits));
          const int32_t id = sorted[pos];
          if (!(words[id >> 5] & (1u << (id & 31)))) fill_uncertain_.push_back(pos);
        }
      }
    }
    XG2_DCHECK(std::is_sorted(fill_uncertain_.begin(), fill_uncertain_.end()) &&
                   std::adjacent_find(fill_uncertain_.begin(), fill_uncertain_.end()) == fill_uncertain_.end(),
               "the uncertain positions of a fill are ascending and distinct (WalkTokens' contract)");
    WalkTokens(fill_uncertain_.data(), nullptr, fill_uncertain_.size(), words);
  }
  if (grammar_->fsm->has_token_sets()) {
    ActiveTokenSets();
    OrActiveTokenSets(words);
  }
  RecheckUniqueItemTokens(words);
  WarmNextEntries();
  if (dense_start) WarmCallTargets();
  return FinishFill(words);
}

bool GrammarMatcher::ActiveTokenSets() {
  fill_token_sets_.clear();
  const GrammarFsm& fsm = parser_.fsm();  // the snapshot of the parser's items
  if (!fsm.has_token_sets()) return false;
  for (const EarleyItem* it = parser_.scannable_begin(); it != parser_.scannable_end(); ++it) {
    if (!parser_.WithinBudget(*it)) continue;
    for (const TokenSetEdge* e = fsm.token_set_edges_begin(it->node); e != fsm.token_set_edges_end(it->node); ++e) {
      fill_token_sets_.push_back(e->set);
    }
  }
  std::sort(fill_token_sets_.begin(), fill_token_sets_.end());
  fill_token_sets_.erase(std::unique(fill_token_sets_.begin(), fill_token_sets_.end()), fill_token_sets_.end());
  return !fill_token_sets_.empty();
}

void GrammarMatcher::OrActiveTokenSets(uint32_t* words) {
  // Sets range over the real tokens: padding ids are never allowed (tokenizer_info.h).
  const int32_t vocab_size = RealVocabSize();
  const int64_t vocab_words = BitmaskWords(vocab_size);
  for (int32_t set_index : fill_token_sets_) {
    const TokenSetDef& set = grammar_->fsm->token_sets[set_index];
    if (!set.excluded) {
      for (int32_t id : set.ids) {
        if (id < vocab_size) words[id >> 5] |= 1u << (id & 31);
      }
      continue;
    }
    // Every id but the excluded ones: whole words, then the excluded ids of each word kept
    // as they were.
    size_t k = 0;
    for (int64_t w = 0; w < vocab_words; ++w) {
      uint32_t members = ~0u;
      for (; k < set.ids.size() && (set.ids[k] >> 5) == w; ++k) members &= ~(1u << (set.ids[k] & 31));
      while (k < set.ids.size() && (set.ids[k] >> 5) < w) ++k;
      words[w] |= members;
    }
    if (vocab_size & 31) words[vocab_words - 1] &= (1u << (vocab_size & 31)) - 1;
  }
}

void GrammarMatcher::TryActiveTokenSets(uint32_t* words) {
  const int32_t vocab_size = RealVocabSize();
  ParserRewind rewind(parser_);
  for (int32_t id = 0; id < vocab_size; ++id) {
    if (words[id >> 5] & (1u << (id & 31))) continue;
    bool member = false;
    for (int32_t set_index : fill_token_sets_) member = member || grammar_->fsm->token_sets[set_index].Contains(id);
    if (!member) continue;
    if (parser_.AdvanceToken(id, nullptr, -1)) {
      words[id >> 5] |= 1u << (id & 31);
      parser_.PopTo(rewind.position());
    }
  }
}

std::string GrammarMatcher::FindJumpForwardString() {
  ExclusiveUse::Scope claim(in_use_, kMatcherName);
  constexpr int32_t kMaxJumpForwardBytes = 4096;
  if (Terminated()) return "";
  ParserRewind rewind(parser_);
  parser_.SetWorkBudget(WorkBudget::kFill);
  std::string forced;
  bool allowed[256];
  while (!parser_.CanEnd() &&
         static_cast<int32_t>(forced.size()) < kMaxJumpForwardBytes) {
    parser_.AllowedBytes(allowed);
    int only = -1;
    for (int b = 0; b < 256; ++b) {
      if (!allowed[b]) continue;
      if (only >= 0) {
        only = -2;
        break;
      }
      only = b;
    }
    // A token literal (grammar/token_literal.h) is a special token, not text to jump over.
    if (only < 0 || IsTokenLiteralByte(static_cast<uint8_t>(only)) ||
        !parser_.Advance(static_cast<uint8_t>(only))) {
      break;
    }
    forced.push_back(static_cast<char>(only));
  }
  // Cut a trailing incomplete UTF-8 character.
  size_t end = forced.size();
  size_t lead = end;
  while (lead > 0 && (static_cast<uint8_t>(forced[lead - 1]) & 0xC0) == 0x80) --lead;
  if (lead > 0) {
    uint8_t c = static_cast<uint8_t>(forced[lead - 1]);
    size_t need = c < 0x80 ? 1 : (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : 4;
    if (end - (lead - 1) < need) end = lead - 1;
  }
  forced.resize(end);
  return forced;
}

}  // namespace xg2
