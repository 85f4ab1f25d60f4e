#include "matcher/earley_parser.h"

#include <algorithm>

#include "grammar/token_literal.h"
#include "support/dcheck.h"
#include "support/json_canonical.h"
#include "support/error.h"

namespace xg2 {

namespace {
inline size_t HashItem(const EarleyItem& item) {
  uint64_t key = (static_cast<uint64_t>(static_cast<uint32_t>(item.node)) << 32) ^
                 static_cast<uint32_t>(item.origin);
  key ^= (static_cast<uint64_t>(static_cast<uint32_t>(item.guard)) << 47) ^
         (static_cast<uint64_t>(static_cast<uint32_t>(item.guard_in)) << 17) ^
         (static_cast<uint64_t>(static_cast<uint32_t>(item.count)) * 0x9e3779b97f4a7c15ULL);
  key ^= key >> 33;
  key *= 0xff51afd7ed558ccdULL;
  key ^= key >> 33;
  return static_cast<size_t>(key);
}
}  // namespace

bool ItemSet::Insert(const EarleyItem& item) {
  if ((size_ + 1) * 2 > items_.size()) Grow();
  size_t mask = items_.size() - 1;
  for (size_t i = HashItem(item) & mask;; i = (i + 1) & mask) {
    if (stamps_[i] != generation_) {
      stamps_[i] = generation_;
      items_[i] = item;
      ++size_;
      return true;
    }
    if (items_[i] == item) return false;
  }
}

void ItemSet::Clear() {
  size_ = 0;
  if (++generation_ == 0) {  // wrapped: stale stamps could alias, so wipe them
    std::fill(stamps_.begin(), stamps_.end(), 0);
    generation_ = 1;
  }
}

void ItemSet::Grow() {
  std::vector<EarleyItem> old_items;
  std::vector<uint32_t> old_stamps;
  old_items.swap(items_);
  old_stamps.swap(stamps_);
  size_t capacity = std::max<size_t>(64, old_items.size() * 2);
  items_.assign(capacity, EarleyItem{});
  stamps_.assign(capacity, 0);
  uint32_t old_generation = generation_;
  generation_ = 1;
  size_ = 0;
  for (size_t i = 0; i < old_items.size(); ++i) {
    if (old_stamps[i] == old_generation) Insert(old_items[i]);
  }
}

LookaheadGuards::LookaheadGuards() { Intern({}); }

GuardId LookaheadGuards::Intern(std::vector<NodeId> nodes) {
  auto it = ids_.find(nodes);
  if (it != ids_.end()) return it->second;
  GuardId id = static_cast<GuardId>(sets_.size());
  ids_.emplace(nodes, id);
  sets_.push_back(std::move(nodes));
  return id;
}

GuardId LookaheadGuards::Add(GuardId guard, NodeId start) {
  std::vector<NodeId> nodes = sets_[guard];
  auto pos = std::lower_bound(nodes.begin(), nodes.end(), start);
  if (pos != nodes.end() && *pos == start) return guard;
  nodes.insert(pos, start);
  return Intern(std::move(nodes));
}

GuardId LookaheadGuards::Step(GuardId guard, uint8_t byte, const GrammarFsm& fsm) {
  if (guard == kNone) return kNone;
  uint64_t key = (static_cast<uint64_t>(guard) << 8) | byte;
  auto it = steps_.find(key);
  if (it != steps_.end()) return it->second;
  std::vector<NodeId> next;
  GuardId result = kNone;
  for (NodeId n : sets_[guard]) {
    NodeId t = fsm.StepByte(n, byte);
    if (t < 0) {
      result = kDead;
      break;
    }
    if (!fsm.node_accepting[t]) next.push_back(t);  // an accepted assertion is satisfied
  }
  if (result != kDead) {
    std::sort(next.begin(), next.end());
    next.erase(std::unique(next.begin(), next.end()), next.end());
    result = Intern(std::move(next));
  }
  steps_.emplace(key, result);
  return result;
}

EarleyParser::EarleyParser(std::shared_ptr<const GrammarFsm> fsm, EarleyLimits limits, RuleDfaSnapshots* snapshots)
    : fsm_(std::move(fsm)), snapshots_(snapshots), limits_(limits) {
  if (fsm_->has_unique_items()) finite_unique_ = FindFiniteUniqueRules(*fsm_);
  Reset();
}

void EarleyParser::SetWorkBudget(WorkBudget budget, LongWorkNotice* notice) {
  budget_ = budget;
  work_left_ = budget == WorkBudget::kToken ? limits_.max_work_per_token : limits_.max_work_per_fill;
  long_work_notice_ = notice;
  notify_below_ = notice ? std::max<int64_t>(0, work_left_ - kShortWork) : 0;
}

void EarleyParser::Spend(int64_t work) {
  work_left_ -= work;
  if (work_left_ >= notify_below_) return;
  if (long_work_notice_) {
    LongWorkNotice* notice = long_work_notice_;
    long_work_notice_ = nullptr;
    notify_below_ = 0;
    notice->Notify();
  }
  if (work_left_ < 0) {
    const bool token = budget_ == WorkBudget::kToken;
    throw ResourceLimitError(
        std::string("Earley parser work for one ") + (token ? "token" : "mask fill") + " exceeded " +
        std::to_string(token ? limits_.max_work_per_token : limits_.max_work_per_fill) +
        " operations (CompileLimits." + (token ? "max_earley_work_per_token" : "max_earley_work_per_fill") +
        "; grammar too ambiguous)");
  }
}

void EarleyParser::Reset() {
  SetWorkBudget(WorkBudget::kToken);
  scannable_.clear();
  waiters_.clear();
  can_end_.clear();
  step_at_.clear();
  byte_at_.clear();
  unique_sets_at_.clear();
  unique_sets_.clear();
  if (fsm_->has_unique_items()) unique_sets_.push_back({-1, std::string()});  // the empty set
  pending_byte_ = 0;
  scannable_begin_.assign(1, 0);
  waiters_begin_.assign(1, 0);
  BeginSet();
  AddItem({Predict(fsm_->root_rule).start, 0, LookaheadGuards::kNone, LookaheadGuards::kNone, 0});
  CloseSet();
  XG2_DCHECK_INVARIANTS(CheckChartInvariants("Reset"));
}

void EarleyParser::BeginSet() {
  pending_.clear();
  seen_.Clear();
  if (!retired_fsms_.empty()) retired_fsms_.clear();
}

GrammarFsm::RuleEntry EarleyParser::PredictUnbuilt(RuleId rule) {
  if (!snapshots_) {
    ThrowInternalError(__FILE__, __LINE__,
                       "the parser predicted rule " + std::to_string(rule) + ", which has no DFA, and has no rule builder");
  }
  std::shared_ptr<const GrammarFsm> next = snapshots_->BuildRule(rule);
  XG2_DCHECK(next->num_nodes() >= fsm_->num_nodes(), "a newer FSM snapshot has fewer nodes");
  retired_fsms_.push_back(std::move(fsm_));
  fsm_ = std::move(next);
  return fsm_->RuleAt(rule);
}

void EarleyParser::AddItem(const EarleyItem& added) {
  EarleyItem item = added;
  const GrammarFsm& g = *fsm_;
  if (!g.counted_loops.empty()) {
    // The gate redirect and the reset outside loops (see the header). A counting rule holds
    // no loop node, and its items keep their character count.
    const int32_t gate = g.node_gate_loop[item.node];
    if (gate >= 0 && item.count < g.counted_loops[gate].limit) {
      item.node = g.counted_loops[gate].head;
      ++item.count;
    } else if (gate >= 0 || (g.node_loop[item.node] < 0 && !g.CountsJsonChars(item.node) &&
                             !g.HoldsUniqueValues(item.node))) {
      item.count = 0;
    }
  }
  if (seen_.Insert(item)) pending_.push_back(item);
}

void EarleyParser::CloseSet() {
  const GrammarFsm& g = *fsm_;
  // The set being closed is for position `here` (its history slot is pushed at the end).
  const int32_t here = static_cast<int32_t>(can_end_.size());
  const size_t waiters_start = waiters_.size();
  bool can_end = false;
  try {
    CloseSetItems(here, &can_end);
  } catch (...) {
    waiters_.resize(waiters_start);  // the set is not pushed: the history stays as it was
    if (g.has_unique_items()) unique_sets_.resize(unique_sets_at_.empty() ? 1 : unique_sets_at_.back());
    throw;
  }
  const GrammarFsm& closed = *fsm_;  // the predictions may have moved fsm_ to a newer snapshot
  for (const EarleyItem& item : pending_) {
    if (closed.byte_edge_begin[item.node] != closed.byte_edge_begin[item.node + 1]) scannable_.push_back(item);
  }
  std::sort(waiters_.begin() + waiters_start, waiters_.end(),
            [](const EarleyWaiter& a, const EarleyWaiter& b) { return a.rule < b.rule; });
  scannable_begin_.push_back(static_cast<int32_t>(scannable_.size()));
  waiters_begin_.push_back(static_cast<int32_t>(waiters_.size()));
  can_end_.push_back(can_end);
  step_at_.push_back(here == 0 ? 0 : step_);
  if (g.has_unique_items()) {
    byte_at_.push_back(here == 0 ? 0 : static_cast<uint8_t>(pending_byte_));
    unique_sets_at_.push_back(static_cast<int32_t>(unique_sets_.size()));
  }
}

int32_t EarleyParser::ResumeWithValue(int32_t set, int32_t origin, int32_t here, std::string* value) {
  if (value->empty()) {
    std::string text;
    for (int32_t p = origin + 1; p < here; ++p) text.push_back(static_cast<char>(byte_at_[p]));
    if (origin < here) text.push_back(static_cast<char>(pending_byte_));
    *value = CanonicalJsonValue(text);
  }
  int64_t work = 1;
  for (int32_t s = set; s > 0; s = unique_sets_[s].parent) {
    ++work;
    if (unique_sets_[s].value == *value) {
      Spend(work);
      return -1;
    }
  }
  Spend(work);
  unique_sets_.push_back({set, *value});
  return static_cast<int32_t>(unique_sets_.size()) - 1;
}

void EarleyParser::CloseSetItems(int32_t here, bool* can_end) {
  for (size_t i = 0; i < pending_.size(); ++i) {
    // Read per item: a prediction may move fsm_ to a newer snapshot, whose new nodes only it
    // has (the older one stays alive in retired_fsms_ for the edge loop below).
    const GrammarFsm& g = *fsm_;
    if (static_cast<int32_t>(pending_.size()) > limits_.max_items_per_step) {
      throw ResourceLimitError("Earley step exceeded " + std::to_string(limits_.max_items_per_step) +
                               " items (CompileLimits.max_earley_items_per_step; grammar too ambiguous)");
    }
    const EarleyItem item = pending_[i];
    int64_t work = 1;
    // Predict.
    for (const RuleEdge* e = g.rule_edges_begin(item.node); e != g.rule_edges_end(item.node); ++e) {
      ++work;
      waiters_.push_back({e->rule, e->target, item.origin, item.guard_in, item.guard, item.count});
      const GrammarFsm::RuleEntry callee = Predict(e->rule);
      AddItem({callee.start, here, item.guard, item.guard, 0});
      // Nullable rules carry no assertion (checked at build time), so the guard is unchanged.
      if (callee.nullable) AddItem({e->target, item.origin, item.guard_in, item.guard, item.count});
    }
    // Complete (a counting rule only with at least its minimum of characters).
    if (g.node_accepting[item.node] && HasEnoughChars(item)) {
      RuleId rule = g.node_rule[item.node];
      GuardId after = item.guard;
      const NodeId lookahead = g.RuleAt(rule).lookahead;  // built: the item is on one of its nodes
      if (lookahead >= 0) after = guards_.Add(after, lookahead);
      if (item.origin == 0 && rule == g.root_rule && after == LookaheadGuards::kNone) {
        *can_end = true;
      }
      if (item.origin < here) {
        const bool unique_item = g.IsUniqueItemRule(rule);
        std::string value;  // the item's value, read on the first holder that waits for it
        const EarleyWaiter* begin = waiters_.data() + waiters_begin_[item.origin];
        const EarleyWaiter* end = waiters_.data() + waiters_begin_[item.origin + 1];
        const EarleyWaiter* w = std::lower_bound(
            begin, end, rule, [](const EarleyWaiter& a, RuleId r) { return a.rule < r; });
        const EarleyWaiter* first = w;
        for (; w != end && w->rule == rule; ++w) {
          if (w->guard_at_call != item.guard_in) continue;
          int32_t count = w->count;
          if (unique_item) {
            // Every caller of a unique_item rule is a holder (grammar_fsm.h, checked by the builder).
            count = ResumeWithValue(w->count, item.origin, here, &value);
            if (count < 0) continue;  // a value the holder's array has already
          }
          AddItem({w->target, w->origin, w->caller_guard_in, after, count});
        }
        work += w - first;
      }
    }
    Spend(work);
  }
}

bool EarleyParser::Advance(uint8_t byte) {
  token_items_.clear();
  return AdvanceMerging(byte);
}

bool EarleyParser::AdvanceMerging(uint8_t byte) {
  const GrammarFsm& g = *fsm_;
  const int32_t pos = position();
  BeginSet();
  for (const EarleyItem& item : token_items_) AddItem(item);
  Spend(scannable_begin_[pos + 1] - scannable_begin_[pos]);
  for (int32_t i = scannable_begin_[pos]; i < scannable_begin_[pos + 1]; ++i) {
    const EarleyItem& item = scannable_[i];
    NodeId next = g.StepByte(item.node, byte);
    if (next < 0 || !WithinBudget(item)) continue;
    const int32_t count = CountAfterStep(item, next);
    if (count < 0) continue;  // past the rule's most JSON characters
    GuardId guard = guards_.Step(item.guard, byte, g);
    if (guard != LookaheadGuards::kDead) AddItem({next, item.origin, item.guard_in, guard, count});
  }
  if (pending_.empty()) return false;
  pending_byte_ = byte;
  CloseSet();
  if (g.has_unique_items() && !can_end_.back() &&
      (scannable_begin_[pos + 2] == scannable_begin_[pos + 1] || (finite_unique_ && !FiniteUniqueItemsLive(pos + 1)))) {
    // A unique item's repeated value blocked every way on, or every way on is inside a
    // finite item that only used values complete (see the file comment).
    PopTo(pos);
    return false;
  }
  XG2_DCHECK_INVARIANTS(CheckChartInvariants("a byte step"));
  return true;
}

void EarleyParser::CollectTokenSetItems(int32_t token_id) {
  const GrammarFsm& g = *fsm_;
  token_items_.clear();
  const int32_t pos = position();
  Spend(scannable_begin_[pos + 1] - scannable_begin_[pos]);
  for (int32_t i = scannable_begin_[pos]; i < scannable_begin_[pos + 1]; ++i) {
    const EarleyItem& item = scannable_[i];
    if (!WithinBudget(item)) continue;
    for (const TokenSetEdge* e = g.token_set_edges_begin(item.node); e != g.token_set_edges_end(item.node); ++e) {
      if (!g.token_sets[e->set].Contains(token_id)) continue;
      // A pending lookahead reads the token as its marker, as the rule does.
      GuardId guard = item.guard;
      if (guard != LookaheadGuards::kNone) {
        const std::string marker = TokenSetMarkerBytes(e->set);
        for (size_t k = 0; k < marker.size() && guard != LookaheadGuards::kDead; ++k) {
          guard = guards_.Step(guard, static_cast<uint8_t>(marker[k]), g);
        }
      }
      if (guard != LookaheadGuards::kDead) {
        token_items_.push_back({e->target, item.origin, item.guard_in, guard, item.count});
      }
    }
  }
}

bool EarleyParser::AdvanceToken(int32_t token_id, const char* data, int32_t size) {
  if (!fsm_->has_token_sets()) {
    return size > 0 && AdvanceString(data, size) == size;
  }
  const int32_t start = position();
  CollectTokenSetItems(token_id);
  if (size > 0) {
    std::vector<EarleyItem> taken;
    taken.swap(token_items_);  // the byte steps before the last one add nothing
    const int32_t before_last = AdvanceString(data, size - 1);
    taken.swap(token_items_);
    if (before_last == size - 1) {
      try {
        if (AdvanceMerging(static_cast<uint8_t>(data[size - 1]))) return true;
      } catch (...) {
        PopTo(start);
        throw;
      }
    }
    PopTo(start);
  }
  if (token_items_.empty()) return false;
  BeginSet();
  for (const EarleyItem& item : token_items_) AddItem(item);
  pending_byte_ = 0;
  CloseSet();
  XG2_DCHECK_INVARIANTS(CheckChartInvariants("a token step without text"));
  return true;
}

int32_t EarleyParser::AdvanceString(const char* data, int32_t size) {
  int32_t consumed = 0;
  while (consumed < size && Advance(static_cast<uint8_t>(data[consumed]))) ++consumed;
  return consumed;
}

void EarleyParser::PopTo(int32_t target) {
  XG2_DCHECK(target >= 0 && target <= position(),
             "rollback to position " + std::to_string(target) + " of " + std::to_string(position()));
  can_end_.resize(target + 1);
  step_at_.resize(target + 1);
  if (fsm_->has_unique_items()) {
    byte_at_.resize(target + 1);
    unique_sets_at_.resize(target + 1);
    unique_sets_.resize(unique_sets_at_.back());
  }
  scannable_begin_.resize(target + 2);
  waiters_begin_.resize(target + 2);
  scannable_.resize(scannable_begin_.back());
  waiters_.resize(waiters_begin_.back());
  XG2_DCHECK_INVARIANTS(CheckChartInvariants("a rollback"));
}

void EarleyParser::AllowedBytes(bool allowed[256]) const {
  std::fill(allowed, allowed + 256, false);
  const int32_t pos = position();
  for (int32_t i = scannable_begin_[pos]; i < scannable_begin_[pos + 1]; ++i) {
    const EarleyItem& item = scannable_[i];
    const NodeId n = item.node;
    for (const ByteEdge* e = fsm_->byte_edges_begin(n); e != fsm_->byte_edges_end(n); ++e) {
      if (CountAfterStep(item, e->target) < 0) continue;
      std::fill(allowed + e->lo, allowed + e->hi + 1, true);
    }
  }
}

}  // namespace xg2
