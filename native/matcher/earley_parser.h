// Earley parser over the rule FSMs of a GrammarFsm, stepping one byte at a time
// (paper section 2 and appendix B). An item (node, origin) means: inside the rule that owns
// `node`, started at byte position `origin`, the rule's DFA is at `node`.
//
// The chart is kept as a stack of per-position sets (the history), so rolling back any
// number of bytes is a truncation and forking is a copy. Per position only what later steps
// need is stored:
//  * the scannable items (nodes with byte edges), which the next byte advances;
//  * the waiters (rule, target node, origin) of items that called a rule there, which
//    a later completion of that rule resumes; sorted by rule for lookup;
//  * whether the root rule can end at that position.
// Nullable rules are handled at prediction time (Aycock-Horspool): a waiter on a nullable
// rule is advanced over it immediately, so completions never need the current set.
//
// Lookahead assertions are enforced exactly with guards: when a rule with an assertion
// completes, the resumed item carries a guard, the set of lookahead-DFA nodes still to be
// matched by the text that follows. Scanning steps the guard along with the item; a guard
// whose DFA dies kills the item, one that reaches acceptance is dropped. Items predicted by
// a guarded item inherit its guard (the callee's text is what follows), and remember the
// guard they started with (`guard_in`) so their completion resumes only the callers that
// predicted them under that guard. Grammars without assertions only ever see guard 0.
//
// Compressed repetitions (grammar/grammar_fsm.h) add a counter to the item: `count` is the
// number of iterations folded into the loop head so far, meaningful only at the loop's nodes
// (0 everywhere else). Every item is normalised when it is added (AddItem): an item on
// a loop's gate goes back to the head with count + 1 while count < limit, and an item outside
// every loop has count 0. Waiters keep the caller's count, so a rule called from inside the
// loop copy resumes it with the right count. The count lives in the chart like the rest of
// the item, so rollback (truncation) and fork (copy) stay exact.
//
// JSON character counts (grammar/grammar_fsm.h) use the same field in the items of a
// counting rule, which holds no loop: the characters completed since the item's origin. A
// byte step adds the target's node_char_end and is refused past the rule's maximum
// (CountAfterStep); the rule completes only at its minimum or above (HasEnoughChars).
//
// Unique items (grammar/grammar_fsm.h) use the same field in the items of a holder rule: the
// id of the set of values its unique_item callees completed with (unique_sets_). A completion
// of a unique_item rule resumes a waiting holder item only with a value not in its set
// (ResumeWithValue). A byte step whose new set has no item left that can scan or end is
// refused (a completion blocked this way leaves nothing), so Advance stays exact. Where an
// item rule's language is finite, a byte step is also refused when every item that can scan
// is inside such an item whose text no unused value extends, or in its holder where only
// another item may follow and every value is used (FiniteUniqueItemsLive).
#ifndef XG2_MATCHER_EARLEY_PARSER_H_
#define XG2_MATCHER_EARLEY_PARSER_H_

#include <cstdint>
#include <map>
#include <memory>
#include <unordered_map>
#include <vector>

#include "grammar/grammar_fsm.h"
#include "matcher/rule_dfa_snapshots.h"

namespace xg2 {

// Index into LookaheadGuards; 0 is "no pending assertion".
using GuardId = int32_t;

struct EarleyItem {
  NodeId node;
  int32_t origin;
  GuardId guard_in;  // guard in force when the item's rule was predicted
  GuardId guard;     // guard in force now
  int32_t count = 0;  // compressed-repetition counter (see the file comment)
  bool operator==(const EarleyItem& o) const {
    return node == o.node && origin == o.origin && guard_in == o.guard_in && guard == o.guard &&
           count == o.count;
  }
};

struct EarleyWaiter {
  RuleId rule;
  NodeId target;
  int32_t origin;
  GuardId caller_guard_in;  // the calling item's guard_in, kept when it resumes
  GuardId guard_at_call;    // the guard the callee was predicted under
  int32_t count;            // the calling item's repetition counter
};

// Interned sets of pending lookahead-DFA nodes, with a memo of byte steps.
class LookaheadGuards {
 public:
  static constexpr GuardId kNone = 0;
  static constexpr GuardId kDead = -1;

  LookaheadGuards();
  // How many guards are interned: valid ids are [0, size()).
  GuardId size() const { return static_cast<GuardId>(sets_.size()); }
  // The guard `guard` plus a new assertion starting at lookahead node `start`.
  GuardId Add(GuardId guard, NodeId start);
  // The guard after the text advances by `byte`; kDead if an assertion fails.
  GuardId Step(GuardId guard, uint8_t byte, const GrammarFsm& fsm);

 private:
  GuardId Intern(std::vector<NodeId> nodes);
  std::vector<std::vector<NodeId>> sets_;
  std::map<std::vector<NodeId>, GuardId> ids_;
  std::unordered_map<uint64_t, GuardId> steps_;
};

struct EarleyLimits {
  // Upper bound on items created in one byte step; a grammar that exceeds it (pathological
  // ambiguity) makes the step fail with ResourceLimitError instead of running unboundedly.
  int32_t max_items_per_step = 1 << 20;
  // Budgets of elementary operations (see EarleyParser::SetWorkBudget): for one token, and
  // for one query that walks many tokens (a mask fill). Items per step do not bound the
  // work: an ambiguous grammar completes O(n) items against O(n) waiters each at byte n.
  int64_t max_work_per_token = int64_t{1} << 18;
  int64_t max_work_per_fill = int64_t{1} << 28;
};

// Which of the EarleyLimits budgets a stretch of parser work draws on.
enum class WorkBudget { kToken, kFill };

// Told at most once, before work longer than handing a lock away and taking it back. The
// Python binding releases the GIL there, so a short call keeps it and a long one lets other
// threads run. Given to a parser budget (EarleyParser::SetWorkBudget) it is told once the
// budget has spent EarleyParser::kShortWork operations; the mask fill also tells it before
// its own long steps (GrammarMatcher::FillNextTokenBitmask).
struct LongWorkNotice {
  void (*before_long_work)(void* context) = nullptr;
  void* context = nullptr;
  void Notify() {
    if (!before_long_work) return;
    void (*call)(void*) = before_long_work;
    before_long_work = nullptr;  // once
    call(context);
  }
};

// Open-addressing set of items, cleared in O(1) by bumping a generation.
class ItemSet {
 public:
  // Returns true if the item was not present.
  bool Insert(const EarleyItem& item);
  void Clear();

 private:
  void Grow();
  std::vector<EarleyItem> items_;
  std::vector<uint32_t> stamps_;
  uint32_t generation_ = 1;
  size_t size_ = 0;
};

class EarleyParser {
 public:
  // `snapshots`, when given, is where `fsm` came from: the parser asks it to build a rule it
  // predicts that `fsm` has not built, and moves to the snapshot that has it
  // (docs/lazy_rule_dfas.md). It must outlive the parser.
  explicit EarleyParser(std::shared_ptr<const GrammarFsm> fsm, EarleyLimits limits = {},
                        RuleDfaSnapshots* snapshots = nullptr);

  // Number of bytes consumed so far.
  int32_t position() const { return static_cast<int32_t>(can_end_.size()) - 1; }

  // Consumes one byte. Returns false and leaves the parser unchanged if the grammar does
  // not allow it here.
  bool Advance(uint8_t byte);

  // Consumes bytes until one is rejected; returns how many were consumed (each accepted
  // byte stays consumed).
  int32_t AdvanceString(const char* data, int32_t size);

  // Consumes one whole token as one step: its bytes `data[0..size)` through the byte-level
  // scan (size < 0: the token has no text), and, when the grammar has token sets, each
  // token-set edge (grammar/grammar_fsm.h) of the current set whose set holds `token_id`, from
  // this position to the position after the token; both results are merged into that last
  // set before it is closed. A token with no text that a set takes gets a chart step of its
  // own (a position that consumed no byte). Returns false and leaves the parser unchanged if
  // neither path accepts the token.
  bool AdvanceToken(int32_t token_id, const char* data, int32_t size);

  // Numbers the history step (token or string) the following bytes belong to, for token
  // budgets (grammar/grammar_fsm.h): `step` is 1 + the number of steps accepted before it.
  // Every position records the step that created it; rollback and fork keep that exact.
  void SetStep(int32_t step) { step_ = step; }
  // False when `item` is in a budgeted rule that may take no byte of the current step.
  bool WithinBudget(const EarleyItem& item) const {
    if (fsm_->rule_max_tokens.empty()) return true;
    const int32_t budget = fsm_->rule_max_tokens[fsm_->node_rule[item.node]];
    return budget < 0 || step_ - step_at_[item.origin] <= budget;
  }

  // JSON character counts (grammar/grammar_fsm.h): the count of `item` after a byte step to
  // `next` (its own count outside counting rules), or -1 where no completion from `next`
  // fits the rule's count any more.
  int32_t CountAfterStep(const EarleyItem& item, NodeId next) const {
    if (!fsm_->CountsJsonChars(item.node)) return item.count;
    const int32_t count = item.count + fsm_->node_char_end[next];
    const RuleId rule = fsm_->node_rule[item.node];
    const int32_t fewest = fsm_->node_fewest_chars[next], most_after = fsm_->node_most_chars[next];
    const int32_t most = fsm_->rule_max_json_chars[rule];
    if (fewest < 0 || (most >= 0 && int64_t{count} + fewest > most)) return -1;
    if (most_after >= 0 && int64_t{count} + most_after < fsm_->rule_min_json_chars[rule]) return -1;
    return count;
  }
  // False when `item` is in a counting rule and has fewer characters than its minimum (it may
  // not complete the rule yet).
  bool HasEnoughChars(const EarleyItem& item) const {
    return !fsm_->CountsJsonChars(item.node) || item.count >= fsm_->rule_min_json_chars[fsm_->node_rule[item.node]];
  }
  // True when a token from `item` could cross its rule's character minimum or maximum, so
  // that the count decides which tokens it takes: the cached classification of its node
  // (which ignores counts) is not exact for it (grammar/grammar_fsm.h).
  bool CountDecidesTokens(const EarleyItem& item, int32_t max_token_bytes) const {
    if (!fsm_->CountsJsonChars(item.node)) return false;
    const RuleId rule = fsm_->node_rule[item.node];
    const int32_t most = fsm_->rule_max_json_chars[rule];
    return item.count < fsm_->rule_min_json_chars[rule] ||
           (most >= 0 && int64_t{item.count} + max_token_bytes + fsm_->rule_chars_slack[rule] > most);
  }

  // Unique items: whether an item of a unique_item rule is open now, scanning or waiting for
  // a rule it called (a token may complete it, also by completing that rule: an object item
  // ends with its last member's value). Defined in unique_items_recheck.cc.
  bool InsideUniqueItem() const;
  // Unique items over finite item languages (grammar/grammar_fsm.h): whether a scanning item
  // of the current position is in a finite item rule or in the holder of one, where any token
  // the cache accepts may leave a prefix that no unused value extends. Defined in
  // finite_unique_items.cc.
  bool NearFiniteUniqueItem() const;

  // Rolls back to an earlier position (0 <= position <= this->position()).
  void PopTo(int32_t position);

  // True when the text so far is a complete sentence of the root rule.
  bool CanEnd() const { return can_end_.back(); }

  // Marks every byte value that Advance could accept now: exact for grammars without
  // lookahead assertions, a superset otherwise (a guard may still reject the byte).
  void AllowedBytes(bool allowed[256]) const;

  void Reset();

  // Throws InternalError naming `stage` and the first broken chart invariant (see "Chart
  // invariants" below) of the history's shape and of the newest set. Every set is checked
  // when it becomes the newest, and rollback keeps a prefix, so checking after each push and
  // each rollback covers the whole history at the cost of one set. The parser calls it
  // through XG2_DCHECK_INVARIANTS (debug and sanitizer builds only); tests call it directly.
  void CheckChartInvariants(const char* stage) const;
  // Throws InternalError naming `stage` unless `step_start`, the position before each
  // accepted step (the caller's history: GrammarMatcher), numbers the chart's positions: it
  // is non-decreasing and within [0, position()], and every position p >= 1 was created by
  // the step k (1-based) with step_start[k-1] < p <= step_start[k] (the last one running to
  // position()). A step that created no position (a stop token, an empty string) is allowed.
  void CheckStepHistory(const std::vector<int32_t>& step_start, const char* stage) const;

  // Starts a fresh budget of limits.max_work_per_token or max_work_per_fill operations for
  // the bytes that follow. One operation is one scanned item, prediction, completion or
  // waiter visited, duplicates included. Past the budget, Advance throws ResourceLimitError
  // (naming the limit) and leaves the parser at the position it had before that byte.
  // `notice`, when given, is told once this budget has spent kShortWork operations (the next
  // SetWorkBudget forgets it).
  void SetWorkBudget(WorkBudget budget, LongWorkNotice* notice = nullptr);
  // Operations that cost about as much as handing the GIL away and back (a few microseconds).
  static constexpr int64_t kShortWork = 512;
  // Forgets the budget's notice (it lives on the caller's stack: drop it before returning).
  void DropLongWorkNotice() {
    long_work_notice_ = nullptr;
    notify_below_ = 0;
  }

  // The items of the current position that have byte edges (the only ones a byte advances).
  const EarleyItem* scannable_begin() const { return scannable_.data() + scannable_begin_[position()]; }
  const EarleyItem* scannable_end() const { return scannable_.data() + scannable_begin_[position() + 1]; }

  // The snapshot the parser reads: its items' nodes are nodes of it. A reference to it stays
  // valid until the next byte or token step (a prediction may move the parser to a newer
  // snapshot, which keeps every node of this one: grammar/grammar_fsm.h, "Snapshots").
  const GrammarFsm& fsm() const { return *fsm_; }

 private:
  friend class EarleyChartChecker;     // earley_parser_invariants.cc
  friend struct EarleyParserTestPeer;  // native/tests: breaks the chart on purpose

  void BeginSet();
  // The one accessor of the prediction step (and the root item): `rule`'s start, nullability
  // and lookahead, with its DFA built first where fsm_ has not built it.
  GrammarFsm::RuleEntry Predict(RuleId rule) {
    const GrammarFsm::RuleEntry entry = fsm_->RuleAt(rule);
    return entry.start != kUnbuiltRule ? entry : PredictUnbuilt(rule);
  }
  // Asks snapshots_ to build `rule` and moves fsm_ to the snapshot that has it; the one fsm_
  // leaves stays alive in retired_fsms_ until the next BeginSet, for the loops that hold it.
  GrammarFsm::RuleEntry PredictUnbuilt(RuleId rule);
  // The items the token-set edges of the current set take on `token_id`, into token_items_.
  void CollectTokenSetItems(int32_t token_id);
  // Advance(byte) with token_items_ added to the new set before it is closed.
  bool AdvanceMerging(uint8_t byte);
  void AddItem(const EarleyItem& item);
  // Runs predict / complete to a fixpoint on the pending items and closes the current set.
  // Throws ResourceLimitError (history unchanged) past a limit.
  void CloseSet();
  // The predict / complete loop of CloseSet for the set at position `here`.
  void CloseSetItems(int32_t here, bool* can_end);
  // Spends `work` operations of the budget; throws past it (callers undo their scratch).
  void Spend(int64_t work);
  // Unique items: the set `set` plus the value of the text [origin, here) (the bytes of the
  // history and pending_byte_), or -1 when the set holds that value already. `value` caches
  // the value's key across the waiters of one completion (empty until computed).
  int32_t ResumeWithValue(int32_t set, int32_t origin, int32_t here, std::string* value);

  std::shared_ptr<const GrammarFsm> fsm_;
  RuleDfaSnapshots* snapshots_ = nullptr;
  std::vector<std::shared_ptr<const GrammarFsm>> retired_fsms_;
  EarleyLimits limits_;
  int64_t work_left_ = 0;
  WorkBudget budget_ = WorkBudget::kToken;
  // Spend's one test covers both the notice and the limit: work_left_ below notify_below_
  // means the budget ran out or, while long_work_notice_ is set, passed kShortWork.
  LongWorkNotice* long_work_notice_ = nullptr;
  int64_t notify_below_ = 0;

  // History, one entry per position (CSR offsets have one more element).
  //
  // Chart invariants (CheckChartInvariants), with P = position():
  //  * Shape: can_end_ and step_at_ have P + 1 entries, scannable_begin_ and waiters_begin_
  //    P + 2; both offset arrays start at 0, never decrease, and end at the size of their
  //    array. Rollback truncates all six to a prefix; nothing else removes an entry.
  //  * Scannable items of position p: node in range, in a rule block (node_rule >= 0: a
  //    lookahead node only ever appears inside a guard) and with byte edges (the set keeps
  //    only those); 0 <= origin <= p; guard_in and guard interned ids (never kDead), and
  //    both 0 in a grammar without lookahead; an item predicted at p (origin == p) still
  //    has guard == guard_in (only a completion, which needs origin < p, adds a guard); no
  //    item twice (AddItem dedups through seen_).
  //  * Counters: count == 0 outside every loop and counting rule and on a loop's gate (AddItem
  //    normalises both), 0 <= count <= that loop's limit at a node of loop k, and
  //    0 <= count <= the rule's maximum (when bounded) in a counting rule.
  //  * Token budgets: an item of a budgeted rule at p satisfies
  //    step_at_[p] - step_at_[origin] <= the rule's budget (WithinBudget held for every
  //    byte or token-set edge that brought it there; such a rule has no rule edges, so
  //    nothing else creates its items after prediction).
  //  * Waiters of position p: sorted by rule; rule in range; target in a rule block;
  //    0 <= origin <= p; guard ids interned.
  //  * can_end_[0] == rule_nullable[root_rule] (at position 0 no guard exists yet, and the
  //    closure completes the root on exactly the nullable derivations).
  //  * Steps: step_at_[0] == 0, step_at_[p] >= 1 for p >= 1, non-decreasing, and never
  //    above step_ (the callers number steps upwards and set a lower step only after
  //    rolling back the positions of the higher ones).
  // Completed items are not stored (a completion resumes the waiters of its origin while
  // its set is closed), so the chart holds no completed item to check beyond can_end_.
  std::vector<EarleyItem> scannable_;
  std::vector<int32_t> scannable_begin_;
  std::vector<EarleyWaiter> waiters_;
  std::vector<int32_t> waiters_begin_;
  std::vector<uint8_t> can_end_;
  std::vector<int32_t> step_at_;  // per position: the step whose bytes created it (0 for the start)
  int32_t step_ = 1;

  // Unique items (empty unless the grammar has them). byte_at_[p]: the byte that created
  // position p (0 for position 0 and for a token step without text); unique_sets_at_[p]: the
  // size of unique_sets_ once position p was closed. A set is a list through `parent` (0 is the
  // empty set); an entry is made only by the set that closes after it, so rollback truncates
  // the store with the history (sets made at a later position are referenced only there).
  struct UniqueValueSet {
    int32_t parent;
    std::string value;  // support/json_canonical.h key
  };
  std::vector<uint8_t> byte_at_;
  std::vector<int32_t> unique_sets_at_;
  std::vector<UniqueValueSet> unique_sets_;
  int32_t pending_byte_ = 0;  // the byte of the set being closed

  // Unique items over finite item languages (grammar/grammar_fsm.h; finite_unique_items.cc):
  // null unless the grammar has a holder whose items are all one finite item rule.
  struct FiniteUniqueRules;
  std::shared_ptr<const FiniteUniqueRules> finite_unique_;
  static std::shared_ptr<const FiniteUniqueRules> FindFiniteUniqueRules(const GrammarFsm& g);
  // Whether the newest position (`here`, just closed) can still reach the end of every
  // finite unique item it is in with a value its holder has not used, or is not in one.
  bool FiniteUniqueItemsLive(int32_t here);
  // Whether some spelling completing `prefix` from `node` of a finite item rule reads as a
  // value not in the set `set`.
  bool CompletesWithUnusedValue(NodeId node, std::string* prefix, int32_t set);
  bool InUniqueSet(int32_t set, const std::string& value) const;

  // Scratch for the set under construction.
  std::vector<EarleyItem> pending_;
  std::vector<EarleyItem> token_items_;
  ItemSet seen_;
  LookaheadGuards guards_;
};

}  // namespace xg2

#endif  // XG2_MATCHER_EARLEY_PARSER_H_
