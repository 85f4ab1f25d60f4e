#include "matcher/rule_dfa_snapshots.h"

#include <algorithm>
#include <mutex>
#include <utility>
#include <vector>

#include "support/dcheck.h"

namespace xg2 {

namespace {

// Whether the first `count` entries of `older` and `newer` are equal (false where either is
// shorter).
template <typename T>
bool SamePrefix(const std::vector<T>& older, const std::vector<T>& newer, size_t count) {
  return older.size() >= count && newer.size() >= count && std::equal(older.begin(), older.begin() + count, newer.begin());
}

bool SameEdges(const GrammarFsm& older, const GrammarFsm& newer, NodeId n) {
  auto same = [](const auto* a, const auto* a_end, const auto* b, const auto* b_end, auto equal) {
    return a_end - a == b_end - b && std::equal(a, a_end, b, equal);
  };
  return same(older.byte_edges_begin(n), older.byte_edges_end(n), newer.byte_edges_begin(n), newer.byte_edges_end(n),
              [](const ByteEdge& x, const ByteEdge& y) { return x.lo == y.lo && x.hi == y.hi && x.target == y.target; }) &&
         same(older.rule_edges_begin(n), older.rule_edges_end(n), newer.rule_edges_begin(n), newer.rule_edges_end(n),
              [](const RuleEdge& x, const RuleEdge& y) { return x.rule == y.rule && x.target == y.target; }) &&
         (!older.has_token_sets() ||
          same(older.token_set_edges_begin(n), older.token_set_edges_end(n), newer.token_set_edges_begin(n),
               newer.token_set_edges_end(n),
               [](const TokenSetEdge& x, const TokenSetEdge& y) { return x.set == y.set && x.target == y.target; }));
}

std::string RuleViolation(const GrammarFsm& older, const GrammarFsm& newer, RuleId r) {
  const size_t i = static_cast<size_t>(r);
  if (older.rule_names[i] != newer.rule_names[i]) return "rule " + std::to_string(r) + " changed its name";
  if (!older.IsBuilt(r)) return "";
  const std::string rule = "built rule " + std::to_string(r) + " (" + older.rule_names[i] + ") changed its ";
  if (older.rule_start[i] != newer.rule_start[i]) return rule + "start";
  if (!(older.rule_nodes[i] == newer.rule_nodes[i])) return rule + "node block";
  if (older.rule_nullable[i] != newer.rule_nullable[i]) return rule + "nullability";
  if (older.rule_lookahead[i] != newer.rule_lookahead[i]) return rule + "lookahead";
  auto same_at = [i](const auto& a, const auto& b) { return a.empty() || (b.size() > i && a[i] == b[i]); };
  if (!same_at(older.rule_max_tokens, newer.rule_max_tokens)) return rule + "token budget";
  if (!same_at(older.rule_min_json_chars, newer.rule_min_json_chars) ||
      !same_at(older.rule_max_json_chars, newer.rule_max_json_chars) ||
      !same_at(older.rule_chars_slack, newer.rule_chars_slack)) {
    return rule + "JSON character count";
  }
  if (!same_at(older.rule_unique, newer.rule_unique)) return rule + "unique-items role";
  return "";
}

std::string NodeViolation(const GrammarFsm& older, const GrammarFsm& newer, NodeId n) {
  const size_t i = static_cast<size_t>(n);
  const std::string node = "node " + std::to_string(n) + " changed its ";
  if (older.node_rule[i] != newer.node_rule[i]) return node + "rule";
  if (older.node_accepting[i] != newer.node_accepting[i]) return node + "acceptance";
  if (!SameEdges(older, newer, n)) return node + "edges";
  auto same_at = [i](const auto& a, const auto& b) { return a.empty() || (b.size() > i && a[i] == b[i]); };
  if (!same_at(older.node_loop, newer.node_loop) || !same_at(older.node_gate_loop, newer.node_gate_loop)) {
    return node + "counted loop";
  }
  if (!same_at(older.node_char_end, newer.node_char_end) || !same_at(older.node_fewest_chars, newer.node_fewest_chars) ||
      !same_at(older.node_most_chars, newer.node_most_chars)) {
    return node + "JSON character fields";
  }
  return "";
}

[[maybe_unused]] void CheckExtends(const GrammarFsm& older, const GrammarFsm& newer);

}  // namespace

std::string SnapshotPrefixViolation(const GrammarFsm& older, const GrammarFsm& newer) {
  if (older.root_rule != newer.root_rule) return "the root rule changed";
  if (newer.num_rules() < older.num_rules()) return "rules were removed";
  if (newer.num_nodes() < older.num_nodes()) return "nodes were removed";
  if (older.has_lookahead != newer.has_lookahead || !(older.token_sets == newer.token_sets)) {
    return "a per-grammar field (lookahead flag, token sets) changed";
  }
  if (newer.counted_loops.size() < older.counted_loops.size() ||
      !std::equal(older.counted_loops.begin(), older.counted_loops.end(), newer.counted_loops.begin(),
                  [](const CountedLoop& x, const CountedLoop& y) {
                    return x.head == y.head && x.gate == y.gate && x.limit == y.limit;
                  })) {
    return "a counted loop changed";
  }
  for (RuleId r = 0; r < older.num_rules(); ++r) {
    std::string why = RuleViolation(older, newer, r);
    if (!why.empty()) return why;
  }
  for (NodeId n = 0; n < older.num_nodes(); ++n) {
    std::string why = NodeViolation(older, newer, n);
    if (!why.empty()) return why;
  }
  return "";
}

namespace {

[[maybe_unused]] void CheckExtends(const GrammarFsm& older, const GrammarFsm& newer) {
  const std::string why = SnapshotPrefixViolation(older, newer);
  if (!why.empty()) ThrowInternalError(__FILE__, __LINE__, "a new FSM snapshot does not extend the last: " + why);
}

}  // namespace

RuleDfaSnapshots::RuleDfaSnapshots(std::shared_ptr<const GrammarFsm> first, Builder builder)
    : first_(std::move(first)), builder_(std::move(builder)), latest_(first_) {}

std::shared_ptr<const GrammarFsm> RuleDfaSnapshots::Latest() const {
  std::lock_guard<ForkSafeMutex> lock(mutex_);
  return latest_;
}

int64_t RuleDfaSnapshots::builds() const {
  std::lock_guard<ForkSafeMutex> lock(mutex_);
  return builds_;
}

std::shared_ptr<const GrammarFsm> RuleDfaSnapshots::BuildRule(RuleId rule) {
  std::lock_guard<ForkSafeMutex> lock(mutex_);
  // Another reader may have built it since this one loaded its snapshot.
  if (latest_->IsBuilt(rule)) return latest_;
  if (!builder_) {
    ThrowInternalError(__FILE__, __LINE__,
                       "rule " + std::to_string(rule) + " has no DFA and the grammar has no rule builder");
  }
  auto next = std::make_shared<const GrammarFsm>(builder_(*latest_, rule));
  if (!next->IsBuilt(rule)) {
    ThrowInternalError(__FILE__, __LINE__, "the rule builder left rule " + std::to_string(rule) + " unbuilt");
  }
  XG2_DCHECK_INVARIANTS(CheckExtends(*latest_, *next));
  if (listener_) listener_(next);
  latest_ = std::move(next);
  ++builds_;
  return latest_;
}

std::shared_ptr<const GrammarFsm> RuleDfaSnapshots::BuildAll() {
  std::shared_ptr<const GrammarFsm> latest = Latest();
  // A build may add (built) synthetic rules: the bound is read again each time.
  for (RuleId r = 0; r < latest->num_rules(); ++r) {
    if (!latest->IsBuilt(r)) latest = BuildRule(r);
  }
  return latest;
}

}  // namespace xg2
