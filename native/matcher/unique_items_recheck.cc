// The cached fill's post-filter for unique items (grammar/grammar_fsm.h, "Unique items").
#include "matcher/grammar_matcher.h"

namespace xg2 {

void GrammarMatcher::RecheckUniqueItemTokens(uint32_t* words) {
  const std::vector<int32_t>& candidates = grammar_->unique_recheck_positions;
  if (candidates.empty() || !parser_.InsideUniqueItem()) return;
  const std::vector<int32_t>& sorted = tokenizer_->sorted_text_tokens();
  fill_recheck_.clear();
  for (int32_t pos : candidates) {
    const int32_t id = sorted[pos];
    if (words[id >> 5] & (1u << (id & 31))) {
      words[id >> 5] &= ~(1u << (id & 31));
      fill_recheck_.push_back(pos);
    }
  }
  // Ascending and distinct, as WalkTokens requires; it sets the bits the parser accepts.
  WalkTokens(fill_recheck_.data(), nullptr, fill_recheck_.size(), words);
}

}  // namespace xg2
