// The cross-grammar pool of classifications (paper section 3.3) and its keys.
//
// Pool keys (cross-grammar cache). Classification depends only on the DFA reachable from n
// and on the leave sets of those nodes, so an FSM-only entry is keyed by "the same FSM, the
// same node" and a lookahead entry by that plus the leave sets. Two key kinds are used, both
// in both versions, each with its own tag so they never collide:
//  * Hierarchical FSM hashes (paper Algorithms 1 and 2, matcher/fsm_hash.h): rule FSMs are
//    hashed bottom-up over the reference graph (leaf FSMs, acyclic references in topological
//    order, simple reference cycles); the breadth-first numbering the hash walks is stable,
//    so (rule hash, node number) names the same node in every equal FSM. The lookahead key
//    adds a hash of the rule's leave sets in that numbering. O(1) per lookup after one pass
//    per grammar; looked up first.
//  * The truncated canonical sub-DFA key: the DFA reachable from n within one token's reach
//    (max_token_bytes), in canonical breadth-first numbering, with each node's leavable flag
//    (FSM-only) or leave set (lookahead). Kept because it is strictly better at sharing:
//    whenever two nodes have equal hierarchical keys they have equal truncated keys (the
//    truncated sub-DFA is a function of the rule FSM and the node), but not conversely. It
//    ignores what classification never reads: callee structure, the rule's parts beyond one
//    token's reach (a string body inlined into two different object rules, the copies of a
//    long repetition), and it exists for rules the hierarchical hash cannot name (reference
//    cycles that are not simple, and every rule above one: the JSON `value` rule of any
//    recursive schema). On 26 JSONSchemaBench schemas (bench/fill_profile.py) hierarchical
//    keys alone gave 24 pool hits in 1519 lookups; the truncated key 284. Its cost is a walk
//    of that sub-DFA per lookup, paid only when the hierarchical key misses.
// A hit on either kind is stored under the other kind too.
#ifndef XG2_MATCHER_MASK_CACHE_MASK_CACHE_POOL_H_
#define XG2_MATCHER_MASK_CACHE_MASK_CACHE_POOL_H_

#include <atomic>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "matcher/mask_cache/token_classification.h"
#include "support/fork_safe_mutex.h"

namespace xg2 {

// A pool key with its hash, computed once: a truncated key runs to kilobytes, and one build
// looks each of its keys up and inserts it (MaskCachePool::Find, Insert).
struct PoolKey {
  std::string bytes;
  size_t hash = 0;
  PoolKey() = default;
  explicit PoolKey(std::string key) : bytes(std::move(key)), hash(std::hash<std::string>{}(bytes)) {}
};

// Truncated canonical sub-DFA keys of `node` (see the file comment): the FSM-only key and
// the lookahead key (FSM-only key plus leave sets).
struct NodeCacheKeys {
  PoolKey fsm_only;
  PoolKey with_lookahead;
};
NodeCacheKeys CanonicalSubFsmKeys(const GrammarFsm& fsm, const LeaveSets& leave,
                                  const std::vector<uint8_t>& leavable, NodeId node, int32_t depth);

// Thread-safe, byte-limited LRU pool of classifications shared by every grammar of one
// compiler (one tokenizer). One entry may sit under several keys and one accepted set may
// be shared by several entries; each is counted once in bytes(). Counters say how node
// lookups ended.
class MaskCachePool {
 public:
  explicit MaskCachePool(int64_t limit_bytes) : limit_bytes_(limit_bytes) {}

  // Looks up without counting (the caller records the outcome).
  std::shared_ptr<const TokenClassification> Find(const PoolKey& key);
  // Keeps `key` (moved in: one copy of each key, shared by the LRU list and the index).
  void Insert(PoolKey key, std::shared_ptr<const TokenClassification> entry);

  void RecordPerfectHit() { perfect_hits_.fetch_add(1, std::memory_order_relaxed); }
  void RecordPartialHit() { partial_hits_.fetch_add(1, std::memory_order_relaxed); }
  // A partial hit through a short key (kShortTokenBytes); also counted in partial_hits().
  void RecordShortTokenHit() {
    RecordPartialHit();
    short_token_hits_.fetch_add(1, std::memory_order_relaxed);
  }
  void RecordMiss() { misses_.fetch_add(1, std::memory_order_relaxed); }
  // A node classified within kPoolBypassWork: kept by its grammar, not looked up further.
  void RecordBypass() { bypasses_.fetch_add(1, std::memory_order_relaxed); }

  int64_t bytes() const;
  int64_t limit_bytes() const { return limit_bytes_; }
  int64_t perfect_hits() const { return perfect_hits_.load(); }
  int64_t partial_hits() const { return partial_hits_.load(); }
  int64_t short_token_hits() const { return short_token_hits_.load(); }
  int64_t hits() const { return perfect_hits() + partial_hits(); }
  int64_t misses() const { return misses_.load(); }
  int64_t bypasses() const { return bypasses_.load(); }
  size_t size() const;
  void Clear();

 private:
  struct Slot {
    PoolKey key;
    std::shared_ptr<const TokenClassification> entry;
  };
  // The index refers to the key held by its slot (list nodes never move).
  struct IndexKey {
    std::string_view bytes;
    size_t hash;
    bool operator==(const IndexKey& other) const { return hash == other.hash && bytes == other.bytes; }
  };
  struct IndexKeyHash {
    size_t operator()(const IndexKey& key) const { return key.hash; }
  };
  void AddRef(const void* object, int64_t bytes);
  void Release(const void* object, int64_t bytes);
  mutable ForkSafeMutex mutex_;
  std::list<Slot> lru_;  // most recent first
  std::unordered_map<IndexKey, std::list<Slot>::iterator, IndexKeyHash> index_;
  // Slots referring to each entry / accepted set (counted in bytes_ while non-zero).
  std::unordered_map<const void*, int32_t> refs_;
  int64_t bytes_ = 0;
  int64_t limit_bytes_;
  std::atomic<int64_t> perfect_hits_{0};
  std::atomic<int64_t> partial_hits_{0};
  std::atomic<int64_t> misses_{0};
  std::atomic<int64_t> short_token_hits_{0};
  std::atomic<int64_t> bypasses_{0};
};

}  // namespace xg2

#endif  // XG2_MATCHER_MASK_CACHE_MASK_CACHE_POOL_H_
