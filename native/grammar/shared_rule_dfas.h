// The process-wide table of shared rule DFAs (grammar_fsm.h GetSharedRuleDfaStats) and the
// content keys that find a rule body, or a right-linear group, in it.
#ifndef XG2_GRAMMAR_SHARED_RULE_DFAS_H_
#define XG2_GRAMMAR_SHARED_RULE_DFAS_H_

#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "grammar/fsm_automata.h"
#include "grammar/grammar_ast.h"
#include "grammar/lowering_context.h"
#include "grammar/rule_dfa_build.h"
#include "support/fork_safe_mutex.h"

namespace xg2 {
namespace fsm_build {

// Shared rule DFAs. Many rule bodies recur in grammar after grammar: the JSON Schema
// frontend writes the same text for a string format (format "date-time" with RFC 3339 leap
// seconds lowers to 24 rule DFAs of some 740 states each, 5 ms to determinise and
// minimise), for a bounded string (json_char{0,64}: 1,300 states, 0.6 ms), and a server
// compiles the same sub-schema in many grammars. A rule body whose expansion is large
// enough is looked up by its content in a process-wide table before it is lowered.
//
// A body may refer to rules of its grammar. Lowering reads a referenced rule only through
// its id, compared with other ids (sorted, or tested for equality), and through its
// nullability (whether a repetition around it is compressed). So the key names each
// referenced rule by its rank among the body's distinct referenced ids, with its
// nullability; the stored DFA's rule edges hold those ranks, and a hit maps rank k back to
// the k-th smallest id referenced in the grammar at hand. That map is increasing, so the DFA
// is exactly the one a build would give (each node's rule edges stay sorted). Otherwise the
// DFA is a function of the body and the compression settings alone (while no repetition has
// been lifted, see LoweringContext::Pristine).
constexpr int64_t kMinSharedBodySize = 48;      // expression nodes, repetitions unrolled
constexpr int32_t kMinSharedMergedNodes = 2000;  // DFA nodes of a right-linear group's members
constexpr size_t kMaxSharedDfaBytes = 32 << 20;  // the table's memory bound (keys + DFAs)

struct SharedRuleDfa {
  Dfa dfa;
  // A rule body ('R' keys): the NFA the build held at its peak, with the subset states, and
  // what the build took from the node budget. A right-linear group ('M' keys): net_nodes is
  // the number of states its subset construction made.
  int64_t nfa_nodes = 0;
  int64_t net_nodes = 0;
  // A rule body: for each counted loop of the DFA, the repetition it folds (its position in
  // the key's node order), which iterations, and the explicit copies after the loop copy, so
  // that a hit sets the loop's limit from the repetition's bounds in the grammar at hand.
  struct LoopOrigin {
    int32_t node;
    bool optional;
    int64_t chain;
  };
  std::vector<LoopOrigin> loops;
};

class SharedRuleDfas {
 public:
  static SharedRuleDfas& Instance() {
    static SharedRuleDfas* table = new SharedRuleDfas();  // never destroyed: used at exit
    return *table;
  }
  std::shared_ptr<const SharedRuleDfa> Find(const std::string& key) {
    std::lock_guard<ForkSafeMutex> lock(mutex_);
    auto it = entries_.find(key);
    if (it == entries_.end()) {
      ++misses_;
      return nullptr;
    }
    ++hits_;
    return it->second;
  }
  // Oldest entries go first when the table would pass its memory bound.
  void Store(const std::string& key, std::shared_ptr<const SharedRuleDfa> entry) {
    const size_t bytes = Bytes(key, *entry);
    if (bytes > kMaxSharedDfaBytes / 4) return;
    std::lock_guard<ForkSafeMutex> lock(mutex_);
    if (!entries_.emplace(key, std::move(entry)).second) return;
    order_.push_back(key);
    bytes_ += bytes;
    while (bytes_ > kMaxSharedDfaBytes && !order_.empty()) {
      auto it = entries_.find(order_.front());
      bytes_ -= Bytes(it->first, *it->second);
      entries_.erase(it);
      order_.pop_front();
      ++evictions_;
    }
  }
  SharedRuleDfaStats Stats() {
    std::lock_guard<ForkSafeMutex> lock(mutex_);
    SharedRuleDfaStats stats;
    stats.entries = entries_.size();
    stats.bytes = bytes_;
    stats.limit_bytes = kMaxSharedDfaBytes;
    stats.hits = hits_;
    stats.misses = misses_;
    stats.evictions = evictions_;
    return stats;
  }

 private:
  static size_t Bytes(const std::string& key, const SharedRuleDfa& e) {
    return 2 * key.size() + e.dfa.nodes.size() * sizeof(Dfa::Node) + e.dfa.byte_edges.size() * sizeof(ByteEdge) +
           e.dfa.rule_edges.size() * sizeof(RuleEdge) + e.dfa.loops.size() * sizeof(CountedLoop) +
           e.loops.size() * sizeof(SharedRuleDfa::LoopOrigin) + 256;
  }
  ForkSafeMutex mutex_;
  std::unordered_map<std::string, std::shared_ptr<const SharedRuleDfa>> entries_;
  std::deque<std::string> order_;
  size_t bytes_ = 0;
  uint64_t hits_ = 0, misses_ = 0, evictions_ = 0;
};

// Writes the content key of a rule body into `key`: the settings the lowering reads, then the
// expression DAG reachable from the body, each distinct node once in depth-first order, its
// children named by their position in that order, a rule reference by the rank of its rule
// among the body's referenced rules (referenced_rules(), ascending) and that rule's
// nullability. A compressed repetition's iteration count (mandatory, then optional) is
// written as kFoldedCount where it is certainly folded into a counted loop: the count then
// only sets the loop's limit (SharedRuleDfa::loops), so `json_char{0,256}` and
// `json_char{0,4096}` share one DFA. False (no key) for a body that holds a TagDispatch, or
// whose expansion is smaller than kMinSharedBodySize (cheaper to build than to key).
// `stamp`/`local` are per-grammar working memory, one entry per AST node, `rank` one per
// rule.
class BodyKeyWriter {
 public:
  explicit BodyKeyWriter(const GrammarAst& ast)
      : ast_(ast), stamp_(ast.nodes.size(), 0), local_(ast.nodes.size(), 0), rank_(ast.rules.size(), -1) {}

  bool Write(ExprId body, LoweringContext* ctx, std::string* key);

  // The rules the last written body refers to, ascending: rank k is referenced_rules()[k].
  const std::vector<RuleId>& referenced_rules() const { return refs_; }
  // The last written body's expression nodes in key order, and the position of one of them.
  ExprId node_at(int32_t position) const { return order_[position]; }
  int32_t position_of(ExprId e) const { return local_[e]; }

 private:
  // LowerCompressed folds `count` iterations into a counted loop when count - chain >= 2,
  // where chain (explicit copies after the loop copy) is at most max_token_bytes + 2.
  static constexpr int32_t kFoldedCount = -2;
  // The most words Write spends on `node`: kind, its payload, child count, children.
  static size_t MaxWords(const ExprNode& node) {
    size_t payload = 0;
    switch (node.kind) {
      case ExprKind::kBytes: payload = 1 + (node.bytes.size() + 3) / 4; break;
      case ExprKind::kCharClass: payload = 1 + 2 * node.ranges.size(); break;
      case ExprKind::kRepeat: payload = 3; break;
      case ExprKind::kRuleRef: payload = 2; break;
      default: break;
    }
    return 2 + payload + node.children.size();
  }
  static int32_t FoldedOrExact(int64_t count, int32_t max_token_bytes) {
    return count >= static_cast<int64_t>(max_token_bytes) + 4 ? kFoldedCount : static_cast<int32_t>(count);
  }
  const GrammarAst& ast_;
  std::vector<uint32_t> stamp_;
  std::vector<int32_t> local_;
  std::vector<int32_t> rank_;
  std::vector<ExprId> order_, stack_;
  std::vector<RuleId> refs_;
  std::vector<int32_t> words_;  // the key being written, before it is copied into the string
  uint32_t generation_ = 0;
};

// BuildRuleDfa for a rule body, through the shared table where the body is large and closed.
// A hit takes from the budget what the build would have (and throws where the build would
// have run out: at the end of its subset construction it held the NFA and all the states).
Dfa BuildRuleDfaShared(const GrammarAst& ast, ExprId body, int64_t* budget, LoweringContext* ctx,
                       const std::string& owner, BuildScratch* scratch, BodyKeyWriter* keys);

}  // namespace fsm_build
}  // namespace xg2

#endif  // XG2_GRAMMAR_SHARED_RULE_DFAS_H_
