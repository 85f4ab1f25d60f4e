// The Earley chart's invariant checks (earley_parser.h, "Chart invariants").
#include <algorithm>
#include <string>
#include <tuple>
#include <vector>

#include "matcher/earley_parser.h"
#include "support/dcheck.h"

namespace xg2 {

namespace {
std::string Str(int64_t v) { return std::to_string(v); }
}  // namespace

// Reads the parser's history for EarleyParser::CheckChartInvariants and CheckStepHistory.
class EarleyChartChecker {
 public:
  EarleyChartChecker(const EarleyParser& parser, const char* stage)
      : p_(parser), g_(*parser.fsm_), stage_(stage), top_(parser.position()) {}

  void CheckChart() {
    CheckShape();
    CheckSteps();
    for (int32_t i = p_.scannable_begin_[top_]; i < p_.scannable_begin_[top_ + 1]; ++i) {
      CheckItem(p_.scannable_[i], "scannable item " + Str(i - p_.scannable_begin_[top_]));
    }
    CheckNoDuplicateItems();
    CheckWaiters();
    if (top_ == 0 && p_.can_end_[0] != g_.rule_nullable[g_.root_rule]) {
      Fail("can_end at position 0 is " + Str(p_.can_end_[0]) + " but the root rule's nullable flag is " +
           Str(g_.rule_nullable[g_.root_rule]));
    }
  }

  void CheckStepHistory(const std::vector<int32_t>& step_start) {
    int32_t previous = 0;
    for (size_t k = 0; k < step_start.size(); ++k) {
      if (step_start[k] < previous || step_start[k] > top_) {
        Fail("step " + Str(k + 1) + " starts at position " + Str(step_start[k]) + " (previous step at " +
             Str(previous) + ", chart at " + Str(top_) + ")");
      }
      previous = step_start[k];
    }
    // Position p belongs to the last step that started before it.
    size_t step = 0;
    for (int32_t p = 1; p <= top_; ++p) {
      while (step < step_start.size() && step_start[step] < p) ++step;
      if (p_.step_at_[p] != static_cast<int32_t>(step)) {
        Fail("position " + Str(p) + " was created by step " + Str(p_.step_at_[p]) + " but the caller's history puts it in step " +
             Str(step));
      }
    }
  }

 private:
  [[noreturn]] void Fail(const std::string& detail) const {
    throw InternalError(std::string("internal error: Earley chart invariant broken after ") + stage_ + ": " + detail);
  }

  void CheckOffsets(const std::vector<int32_t>& begin, size_t entries, const char* name) const {
    if (begin.size() != static_cast<size_t>(top_) + 2) {
      Fail(std::string(name) + " has " + Str(begin.size()) + " entries at position " + Str(top_));
    }
    if (begin[0] != 0) Fail(std::string(name) + "[0] is " + Str(begin[0]));
    if (begin[top_ + 1] < begin[top_]) Fail(std::string(name) + " decreases at position " + Str(top_));
    if (static_cast<size_t>(begin[top_ + 1]) != entries) {
      Fail(std::string(name) + " ends at " + Str(begin[top_ + 1]) + " of " + Str(entries) + " entries");
    }
  }

  void CheckShape() const {
    if (top_ < 0) Fail("no position in the history");
    if (p_.step_at_.size() != p_.can_end_.size()) {
      Fail("step_at has " + Str(p_.step_at_.size()) + " entries for " + Str(p_.can_end_.size()) + " positions");
    }
    CheckOffsets(p_.scannable_begin_, p_.scannable_.size(), "scannable_begin");
    CheckOffsets(p_.waiters_begin_, p_.waiters_.size(), "waiters_begin");
    // Unique items: one byte and one store size per position, the store no smaller.
    const size_t unique_history = g_.has_unique_items() ? p_.can_end_.size() : 0;
    if (p_.byte_at_.size() != unique_history || p_.unique_sets_at_.size() != unique_history) {
      Fail("byte_at / unique_sets_at have " + Str(p_.byte_at_.size()) + " / " + Str(p_.unique_sets_at_.size()) +
           " entries for " + Str(unique_history));
    }
    if (unique_history > 0 && p_.unique_sets_at_.back() != static_cast<int32_t>(p_.unique_sets_.size())) {
      Fail("the value-set store has " + Str(p_.unique_sets_.size()) + " entries, the newest position recorded " +
           Str(p_.unique_sets_at_.back()));
    }
  }

  void CheckSteps() const {
    if (p_.step_at_[0] != 0) Fail("position 0 records step " + Str(p_.step_at_[0]));
    if (top_ == 0) return;
    const int32_t step = p_.step_at_[top_];
    if (step < 1 || step < p_.step_at_[top_ - 1] || step > p_.step_) {
      Fail("position " + Str(top_) + " records step " + Str(step) + " after step " + Str(p_.step_at_[top_ - 1]) +
           " (current step " + Str(p_.step_) + ")");
    }
  }

  void CheckGuard(GuardId guard, const std::string& what) const {
    if (guard < 0 || guard >= p_.guards_.size()) Fail(what + " has guard " + Str(guard));
    if (!g_.has_lookahead && guard != LookaheadGuards::kNone) {
      Fail(what + " has guard " + Str(guard) + " in a grammar without lookahead");
    }
  }

  void CheckItem(const EarleyItem& item, const std::string& what) const {
    const std::string at = what + " of position " + Str(top_);
    if (item.node < 0 || item.node >= g_.num_nodes()) Fail(at + " is at node " + Str(item.node));
    if (g_.node_rule[item.node] < 0) Fail(at + " is at lookahead node " + Str(item.node));
    if (g_.byte_edge_begin[item.node] == g_.byte_edge_begin[item.node + 1]) {
      Fail(at + " is at node " + Str(item.node) + ", which has no byte edge");
    }
    if (item.origin < 0 || item.origin > top_) Fail(at + " has origin " + Str(item.origin));
    CheckGuard(item.guard_in, at);
    CheckGuard(item.guard, at);
    if (item.origin == top_ && item.guard != item.guard_in) {
      Fail(at + " was predicted here but its guard " + Str(item.guard) + " differs from guard_in " + Str(item.guard_in));
    }
    CheckCount(item, at);
    CheckBudget(item, at);
  }

  void CheckCount(const EarleyItem& item, const std::string& at) const {
    if (g_.HoldsUniqueValues(item.node)) {
      if (item.count < 0 || item.count >= static_cast<int32_t>(p_.unique_sets_.size())) {
        Fail(at + " holds the value set " + Str(item.count) + " of " + Str(p_.unique_sets_.size()));
      }
      return;
    }
    if (g_.CountsJsonChars(item.node)) {
      // Each JSON character is at least one byte of the text since the item's origin.
      const int32_t most = g_.rule_max_json_chars[g_.node_rule[item.node]];
      if (item.count < 0 || (most >= 0 && item.count > most) || item.count > top_ - item.origin) {
        Fail(at + " has the character count " + Str(item.count) + " in a rule of at most " + Str(most) +
             " characters, " + Str(top_ - item.origin) + " bytes after its origin");
      }
      return;
    }
    const int32_t loop = g_.counted_loops.empty() ? -1 : g_.node_loop[item.node];
    const bool gate = !g_.counted_loops.empty() && g_.node_gate_loop[item.node] >= 0;
    if (loop < 0 || gate) {
      if (item.count != 0) Fail(at + " has count " + Str(item.count) + " outside a loop or on a gate");
      return;
    }
    if (item.count < 0 || item.count > g_.counted_loops[loop].limit) {
      Fail(at + " has count " + Str(item.count) + " in loop " + Str(loop) + " of limit " +
           Str(g_.counted_loops[loop].limit));
    }
  }

  void CheckBudget(const EarleyItem& item, const std::string& at) const {
    if (g_.rule_max_tokens.empty()) return;
    const int32_t budget = g_.rule_max_tokens[g_.node_rule[item.node]];
    const int32_t used = p_.step_at_[top_] - p_.step_at_[item.origin];
    if (budget >= 0 && used > budget) {
      Fail(at + " spans " + Str(used) + " steps of a rule with a budget of " + Str(budget) + " tokens");
    }
  }

  void CheckNoDuplicateItems() const {
    std::vector<std::tuple<NodeId, int32_t, GuardId, GuardId, int32_t>> items;
    for (int32_t i = p_.scannable_begin_[top_]; i < p_.scannable_begin_[top_ + 1]; ++i) {
      const EarleyItem& item = p_.scannable_[i];
      items.emplace_back(item.node, item.origin, item.guard_in, item.guard, item.count);
    }
    std::sort(items.begin(), items.end());
    auto twice = std::adjacent_find(items.begin(), items.end());
    if (twice != items.end()) {
      Fail("position " + Str(top_) + " holds the item (node " + Str(std::get<0>(*twice)) + ", origin " +
           Str(std::get<1>(*twice)) + ") twice");
    }
  }

  void CheckWaiters() const {
    const int32_t begin = p_.waiters_begin_[top_];
    for (int32_t i = begin; i < p_.waiters_begin_[top_ + 1]; ++i) {
      const EarleyWaiter& w = p_.waiters_[i];
      const std::string at = "waiter " + Str(i - begin) + " of position " + Str(top_);
      if (w.rule < 0 || w.rule >= g_.num_rules()) Fail(at + " waits on rule " + Str(w.rule));
      if (i > begin && w.rule < p_.waiters_[i - 1].rule) Fail(at + " is out of rule order");
      if (w.target < 0 || w.target >= g_.num_nodes() || g_.node_rule[w.target] < 0) {
        Fail(at + " resumes at node " + Str(w.target));
      }
      if (w.origin < 0 || w.origin > top_) Fail(at + " has origin " + Str(w.origin));
      CheckGuard(w.caller_guard_in, at);
      CheckGuard(w.guard_at_call, at);
    }
  }

  const EarleyParser& p_;
  const GrammarFsm& g_;
  const char* stage_;
  const int32_t top_;
};

void EarleyParser::CheckChartInvariants(const char* stage) const { EarleyChartChecker(*this, stage).CheckChart(); }

void EarleyParser::CheckStepHistory(const std::vector<int32_t>& step_start, const char* stage) const {
  EarleyChartChecker(*this, stage).CheckStepHistory(step_start);
}

}  // namespace xg2
