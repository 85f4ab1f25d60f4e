// Adaptive token-mask cache (paper section 3.4, appendix B) with JIT construction (3.2) and a
// cross-grammar pool with perfect and partial hits (3.3).
//
// For a scannable node n of rule R, every token is classified using R's own DFA:
//  * accepted  - its bytes can all be consumed along R's byte edges from n. Any Earley item
//                (n, origin) with no pending lookahead then accepts the token, whatever the
//                context, so the token is in the mask.
//  * rejected  - the byte walk fails, and at no node after n on the way could the parser
//                leave R (complete it, or call a rule) in a way that consumes the token's
//                next byte: no derivation through the item consumes the token. (What n
//                itself completes or calls is already in the same Earley set and classified
//                there.)
//  * uncertain - otherwise; only the full parser, with its context, can decide.
// "Could leave" has two strengths, giving the two versions the paper stores (section 3.3):
//  * FSM-only: the node has a rule edge or is accepting (R's FSM alone says leaving is
//    possible; the byte that follows is unknown).
//  * FSM + lookahead (context expansion): additionally the byte is in the node's leave set
//    (grammar/follow_sets.h: first bytes of callees and what can follow R in this grammar).
// Both share the accepted set; uncertain(lookahead) is a subset of uncertain(FSM-only).
// The mask at a parser position is the union of the accepted sets of its scannable nodes,
// plus the uncertain (lookahead version) tokens that the full parser accepts.
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
#ifndef XG2_MATCHER_TOKEN_MASK_CACHE_H_
#define XG2_MATCHER_TOKEN_MASK_CACHE_H_

#include <array>
#include <atomic>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "grammar/follow_sets.h"
#include "grammar/grammar_fsm.h"
#include "matcher/fsm_hash.h"
#include "tokenizer/tokenizer_info.h"

namespace xg2 {

// Accepted tokens of one node, as a bitset over token ids or as an ascending id list,
// whichever is smaller. Shared by the FSM-only and the lookahead version of a node.
struct AcceptedTokens {
  std::vector<uint32_t> bits;
  std::vector<int32_t> ids;

  bool as_bits() const { return !bits.empty(); }
  size_t MemoryBytes() const { return sizeof(*this) + bits.capacity() * 4 + ids.capacity() * 4; }
};

// The classification of the vocabulary at one node. Uncertain tokens are positions in
// TokenizerInfo::sorted_text_tokens() (ascending), the order the parser walk needs.
struct TokenClassification {
  std::shared_ptr<const AcceptedTokens> accepted;
  std::vector<int32_t> uncertain_positions;
  // uncertain_lcp[k]: common prefix length of uncertain tokens k-1 and k (0 for k == 0), so
  // a walk over this list alone needs no scan of the vocabulary's LCP table.
  std::vector<int32_t> uncertain_lcp;

  // Without the (possibly shared) accepted set.
  size_t OwnBytes() const {
    return sizeof(*this) + uncertain_positions.capacity() * 4 + uncertain_lcp.capacity() * 4;
  }
  size_t MemoryBytes() const { return OwnBytes() + accepted->MemoryBytes(); }
};

// Both versions of a node's classification (see the file comment).
struct ClassificationPair {
  TokenClassification fsm_only;
  TokenClassification with_lookahead;
};

// Classifies the vocabulary at `node` in one walk of the token trie, sharing the work of
// common prefixes and skipping whole subtrees once their prefix is decided. Subtrees are
// accepted wholesale where the DFA loops on their bytes, runs along a repetition chain, or
// sits in a UTF-8 region (a string body that consumes every well-formed character; the
// trie records which subtrees are well-formed UTF-8); at a region's boundary node the walk
// starts from the tokenizer's shared set of tokens the region consumes
// (TokenizerInfo::Utf8RegionTokens) and visits only the tokens outside it; when the root is
// the region's only boundary node, those are decided by their tails (the bytes from the
// first one outside the region, TokenizerInfo::Utf8RegionOutsiders), each walked once, and so
// is the loop head of a long bounded string whose copies walk alike within a token's reach.
// A node along a chain or loop of one character class (a UUID's hex digits, \d+) reads the
// class's table (TokenizerInfo::ClassPrefixTable, built on the background thread the first
// time the class is met) instead of walking the trie under the class's bytes. `leavable[n]`:
// n has a rule edge or is accepting. With `want_fsm_only` false, the FSM-only uncertain list
// is left empty (the walk is the same). `rows_owner`: a number naming `fsm` for as long as it
// lives (GrammarMaskCache's serial); the thread's dense DFA rows are then kept for the next
// walk over the same DFA. 0: nothing is kept.
// `work_budget` >= 0 bounds the walk (trie nodes visited plus tokens accepted in bulk; a
// UTF-8 region or chain root, which starts from a shared dense set, counts as over budget):
// past it the walk stops, sets `*over_budget` and returns nothing usable.
ClassificationPair ClassifyTokens(const GrammarFsm& fsm, const LeaveSets& leave,
                                  const std::vector<uint8_t>& leavable, NodeId node,
                                  const TokenizerInfo& tokenizer, bool want_fsm_only, uint64_t rows_owner = 0,
                                  int64_t work_budget = -1, bool* over_budget = nullptr);

// Nodes whose walk stays within this budget (ClassifyTokens' work units) are classified
// straight away and kept by their grammar alone, bypassing the cross-grammar pool: their
// pool keys, lookups and inserts (a kilobyte-long canonical key, four lookups, five
// inserts: about 10 us) cost more than the walk itself. Positions inside a property-name
// literal are the typical case: a few dozen trie nodes each. So are string bodies classified
// by tails, whose truncated key would run over the rest of the rule.
constexpr int64_t kPoolBypassWork = 4000;

// Partial hit: the lookahead version of a node from its FSM-only version, re-checking only
// the FSM-only uncertain tokens against `leave` (the accepted set is shared).
TokenClassification RefineWithLookahead(const TokenClassification& fsm_only, const GrammarFsm& fsm,
                                        const LeaveSets& leave, NodeId node,
                                        const TokenizerInfo& tokenizer, uint64_t rows_owner = 0);

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

// Short-token reuse. The verdict on a token of at most kShortTokenBytes bytes depends only
// on the DFA within that many bytes of the node, so a classification stored under the
// node's short key (the truncated key at that depth, tagged apart) is exact for the short
// tokens of every node with the same short key; only the few long tokens need a walk of
// their own. This is what makes the copies of a bounded repetition cheap: the nodes of
// json_char{0,128} differ in how far the chain goes on, which no token under 17 bytes
// can tell apart, and the Llama 3 vocabulary has 1,566 tokens over 16 bytes of 128,256.
constexpr int32_t kShortTokenBytes = 16;

// The tokenizer's long tokens (over kShortTokenBytes bytes), in sorted_text_tokens() order,
// and the ids of its short text tokens as a bitset.
struct LongTokenTable {
  std::vector<int32_t> positions;  // ascending positions in sorted_text_tokens()
  std::vector<int32_t> lcp;        // lcp[k]: common prefix of long tokens k-1 and k (0 for k == 0)
  // The long tokens whose first byte is b are positions[first_byte_begin[b] ..
  // first_byte_begin[b + 1]) (sorted order groups them), so a walk skips the groups whose
  // first byte the node does not step on.
  std::array<int32_t, 257> first_byte_begin{};
  std::vector<uint32_t> short_bits;
};
LongTokenTable BuildLongTokenTable(const TokenizerInfo& tokenizer);

// The lookahead classification of the long tokens at `node` alone (accepted set and
// uncertain list over those tokens only); `rows_owner` as for ClassifyTokens.
TokenClassification ClassifyLongTokens(const GrammarFsm& fsm, const LeaveSets& leave, NodeId node,
                                       const TokenizerInfo& tokenizer, const LongTokenTable& long_tokens,
                                       uint64_t rows_owner = 0);

// The short tokens' verdicts from `short_part` (a lookahead classification of a node with
// the same short key) joined with `long_part` (ClassifyLongTokens at this node).
TokenClassification JoinShortAndLong(const TokenClassification& short_part, const TokenClassification& long_part,
                                     const TokenizerInfo& tokenizer, const LongTokenTable& long_tokens);

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
  // The pool's tokenizer's long-token table, built on first use.
  const LongTokenTable& long_tokens(const TokenizerInfo& tokenizer) {
    std::call_once(long_tokens_once_, [&] { long_tokens_ = BuildLongTokenTable(tokenizer); });
    return long_tokens_;
  }

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
  mutable std::mutex mutex_;
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
  std::once_flag long_tokens_once_;
  LongTokenTable long_tokens_;
};

struct MaskCacheOptions {
  bool enabled = true;       // false: every fill is the reference walk (ablation baseline)
  bool cross_grammar = true; // share classifications through the pool
  // Partial JIT (paper section 3.2): right after compilation, classify on the process's
  // background thread the first `precompute` scannable nodes in document order (those a
  // matcher reaches in its first tokens), then the 8 with the highest estimated cost.
  // 0 = pure JIT; a negative value classifies every scannable node synchronously
  // (ahead-of-time, for ablation).
  int32_t precompute = 32;
};

// Per compiled grammar: node -> classification (lookahead version), built the first time a
// matcher needs it (JIT) and shared by every matcher of the grammar. Thread-safe; lookups of
// built entries take no lock.
class GrammarMaskCache {
 public:
  GrammarMaskCache(std::shared_ptr<const GrammarFsm> fsm, std::shared_ptr<const TokenizerInfo> tokenizer,
                   std::shared_ptr<MaskCachePool> pool, MaskCacheOptions options);

  const TokenClassification& Get(NodeId node) {
    if (const TokenClassification* hit = slots_[node].load(std::memory_order_acquire)) return *hit;
    return Build(node);
  }
  // Queues the partial-JIT work described by options().precompute on the process's one
  // background thread (newest grammar first). Matchers never wait for it: a node they need
  // that is not built yet is built on their own thread.
  static void StartPrecompute(const std::shared_ptr<GrammarMaskCache>& cache);
  const MaskCacheOptions& options() const { return options_; }
  int64_t built_nodes() const { return built_.load(); }
  // Nanoseconds spent building entries (classifying, refining or looking up the pool).
  int64_t build_nanoseconds() const { return build_ns_.load(); }
  size_t MemoryBytes() const;
  // Serialization (matcher/mask_cache_transfer.cc): the classifications built so far, by
  // ascending node; and installing one in a cache (a deserialized grammar's), which the
  // caller has checked against this cache's FSM and vocabulary. Import keeps an entry that
  // is already built, so a racing matcher's build is never replaced.
  std::vector<std::pair<NodeId, std::shared_ptr<const TokenClassification>>> ExportBuilt() const;
  void ImportBuilt(NodeId node, std::shared_ptr<const TokenClassification> entry);

 private:
  const TokenClassification& Build(NodeId node);
  // Hierarchical keys of `node`; false where its rule has no hierarchical hash, or while
  // the grammar's hashes are not computed yet and the background schedule will compute them.
  bool HierarchicalKeys(NodeId node, NodeCacheKeys* keys);
  // The grammar's hierarchical FSM hashes (once; thread-safe).
  void ComputeHashes();
  static uint64_t NextSerial();

  std::shared_ptr<const GrammarFsm> fsm_;
  std::shared_ptr<const TokenizerInfo> tokenizer_;
  std::shared_ptr<MaskCachePool> pool_;
  MaskCacheOptions options_;
  const uint64_t serial_;  // names this cache's DFA to ClassifyTokens (rows_owner)
  LeaveSets leave_;
  std::vector<uint8_t> leavable_;
  std::unique_ptr<std::atomic<const TokenClassification*>[]> slots_;
  // Hierarchical FSM hashes: computed by the background schedule's task (StartPrecompute),
  // or on the first pool lookup where there is no background schedule (precompute <= 0).
  std::once_flag hashes_once_;
  std::atomic<bool> hashes_ready_{false};
  FsmHashes hashes_;
  std::vector<std::string> lookahead_keys_;  // per rule, filled under mutex_
  std::vector<uint8_t> lookahead_key_done_;
  mutable std::mutex mutex_;
  std::vector<std::shared_ptr<const TokenClassification>> owned_;
  std::atomic<int64_t> built_{0};
  std::atomic<int64_t> build_ns_{0};
};

// Blocks until the process's background thread (partial JIT, tokenizer tables) has nothing
// queued or running. For tests that need the background's results in place.
void WaitForBackgroundWork();

}  // namespace xg2

#endif  // XG2_MATCHER_TOKEN_MASK_CACHE_H_
