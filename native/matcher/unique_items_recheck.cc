// The cached fill's post-filter for unique items (grammar/grammar_fsm.h, "Unique items").
#include <unordered_set>
#include <utility>
#include <vector>

#include "matcher/grammar_matcher.h"

namespace xg2 {

// Up from each scanning item through the holders that called its rule: a rule instance is
// (rule, origin), and its callers are the waiters at its origin for that rule, whose targets
// are in the calling rule. Each instance is visited once.
bool EarleyParser::InsideUniqueItem() const {
  const GrammarFsm& g = *fsm_;
  if (!g.has_unique_items()) return false;
  std::vector<std::pair<RuleId, int32_t>> open;
  for (const EarleyItem* it = scannable_begin(); it != scannable_end(); ++it) {
    const RuleId rule = g.node_rule[it->node];
    if (g.IsUniqueItemRule(rule)) return true;
    open.emplace_back(rule, it->origin);
  }
  std::unordered_set<int64_t> visited;
  while (!open.empty()) {
    const auto [rule, origin] = open.back();
    open.pop_back();
    if (!visited.insert((int64_t{origin} << 32) | static_cast<uint32_t>(rule)).second) continue;
    const EarleyWaiter* end = waiters_.data() + waiters_begin_[origin + 1];
    for (const EarleyWaiter* w = waiters_.data() + waiters_begin_[origin]; w != end; ++w) {
      if (w->rule != rule) continue;
      const RuleId caller = g.node_rule[w->target];
      if (g.IsUniqueItemRule(caller)) return true;
      open.emplace_back(caller, w->origin);
    }
  }
  return false;
}

void GrammarMatcher::RecheckUniqueItemTokens(uint32_t* words) {
  const std::vector<int32_t>& sorted = tokenizer_->sorted_text_tokens();
  if (parser_.NearFiniteUniqueItem()) {
    // In a finite item or its holder any accepted token may end at a prefix that only used
    // values complete, or open an item when every value is used: the parser decides each.
    fill_recheck_.clear();
    for (size_t pos = 0; pos < sorted.size(); ++pos) {
      const int32_t id = sorted[pos];
      if (words[id >> 5] & (1u << (id & 31))) {
        words[id >> 5] &= ~(1u << (id & 31));
        fill_recheck_.push_back(static_cast<int32_t>(pos));
      }
    }
    WalkTokens(fill_recheck_.data(), nullptr, fill_recheck_.size(), words);
    return;
  }
  const std::vector<int32_t>& candidates = grammar_->unique_recheck_positions;
  if (candidates.empty() || !parser_.InsideUniqueItem()) return;
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
