// Adaptive token-mask cache (paper section 3.4, appendix B) with JIT construction (3.2) and a
// cross-grammar pool with perfect and partial hits (3.3). The pieces:
//  * mask_cache/token_classification.h: what a node's classification is and how the
//    vocabulary is classified at a node (the trie walk, mask_cache/token_classifier.cc),
//    refined from its FSM-only version or joined from short and long tokens
//    (mask_cache/partial_hits.cc);
//  * mask_cache/dense_stepper.h: the rule DFA stepped through dense rows, and the shapes of
//    it that let the walk decide whole subtrees at once;
//  * mask_cache/mask_cache_pool.h: the cross-grammar pool and its keys;
//  * mask_cache/precompute_worker.h: the background thread of the partial JIT;
//  * mask_cache/dense_set_sharing.h: one copy per grammar of each distinct dense accepted set;
//  * this file: the per-grammar cache that matchers read, built on demand through the pool.
#ifndef XG2_MATCHER_TOKEN_MASK_CACHE_H_
#define XG2_MATCHER_TOKEN_MASK_CACHE_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "grammar/follow_sets.h"
#include "grammar/grammar_fsm.h"
#include "matcher/fsm_hash.h"
#include "matcher/mask_cache/dense_set_sharing.h"
#include "matcher/mask_cache/mask_cache_pool.h"
#include "matcher/mask_cache/token_classification.h"
#include "support/fork_safe_mutex.h"
#include "tokenizer/tokenizer_info.h"

namespace xg2 {

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
  // `fsm` is the grammar's first FSM snapshot. Where it has every rule built, the leave sets
  // are the exact ones of its DFAs (ComputeLeaveBytes) and `contexts` is not read. Where it
  // has an unbuilt rule (a lazy compile, docs/lazy_rule_dfas.md), `contexts` must cover its
  // rules, and every node's leave set comes from its own rule DFA and those contexts
  // (LeaveBytesFromContexts), for this snapshot and every later one: a node's set then never
  // changes as rules are built, so the entries built on it stay exact.
  GrammarMaskCache(std::shared_ptr<const GrammarFsm> fsm, std::shared_ptr<const TokenizerInfo> tokenizer,
                   std::shared_ptr<MaskCachePool> pool, MaskCacheOptions options,
                   std::shared_ptr<const RuleByteContexts> contexts = nullptr);

  // `node` is a node of a snapshot of the grammar's FSM that this cache has grown to (every
  // snapshot a reader can load: GrowTo runs before a snapshot is published).
  const TokenClassification& Get(NodeId node) {
    if (const TokenClassification* hit = slots_.load(std::memory_order_acquire)[node].load(std::memory_order_acquire)) {
      return *hit;
    }
    return Build(node);
  }
  // The entry of `node` if it is built; null otherwise (builds nothing).
  const TokenClassification* Find(NodeId node) const {
    return slots_.load(std::memory_order_acquire)[node].load(std::memory_order_acquire);
  }
  // Where Find reads `node`'s slot (for prefetching it).
  const void* SlotAddress(NodeId node) const { return &slots_.load(std::memory_order_acquire)[node]; }
  // Lazy rule DFAs (docs/lazy_rule_dfas.md): sizes the per-node tables for `next`, a snapshot
  // that the cache's latest one is a prefix of (grammar/grammar_fsm.h, "Snapshots"), keeping
  // every entry built: the older nodes keep their leave sets, the appended ones get theirs
  // from their own rule DFAs and the contexts. `contexts` covers `next`'s rules and extends
  // the cache's (a build that made synthetic rules adds theirs); null: the cache's, when
  // `next` has no new rule. On a cache with exact leave sets (a whole first snapshot) the
  // sets of `next` are recomputed and must be unchanged on the older nodes. Throws
  // InternalError where the entries would not stay exact. Called under the grammar's build
  // mutex (RuleDfaSnapshots' publish listener), before `next` is published.
  void GrowTo(std::shared_ptr<const GrammarFsm> next, std::shared_ptr<const RuleByteContexts> contexts = nullptr);
  // Whether the leave sets come from the AST contexts (a partial first snapshot) rather than
  // the exact DFA analysis.
  bool leave_sets_from_contexts() const { return leave_from_contexts_; }
  // Queues the partial-JIT work described by options().precompute on the process's one
  // background thread (newest grammar first). Matchers never wait for it: a node they need
  // that is not built yet is built on their own thread.
  static void StartPrecompute(const std::shared_ptr<GrammarMaskCache>& cache);
  const MaskCacheOptions& options() const { return options_; }
  int64_t built_nodes() const { return built_.load(); }
  // Nanoseconds spent building entries (classifying, refining or looking up the pool).
  int64_t build_nanoseconds() const { return build_ns_.load(); }
  size_t MemoryBytes() const;
  // Bytes of what the cache holds from construction on (slots and per-node tables), without
  // the classifications built since. Takes no lock: those members never change, so a caller
  // never waits for the precompute thread.
  size_t FixedBytes() const;
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

  using Slot = std::atomic<const TokenClassification*>;
  // The per-node tables of one FSM snapshot: immutable once published, except the slots,
  // which are stored to under mutex_ only. A newer version (GrowTo) copies the slots, so the
  // versions readers may still hold stay valid; all of them live as long as the cache.
  struct NodeTables {
    std::shared_ptr<const GrammarFsm> fsm;
    uint64_t serial;  // names this DFA to ClassifyTokens (rows_owner); new per version
    LeaveSets leave;
    std::vector<uint8_t> leavable;
    std::unique_ptr<Slot[]> slots;
  };
  // A version over `fsm` with empty slots: exact leave sets without `contexts`, else the
  // contexts' sets for the nodes after `older` (the version `fsm` extends, null for the
  // first) and `older`'s for the others.
  static std::unique_ptr<NodeTables> MakeTables(std::shared_ptr<const GrammarFsm> fsm, const NodeTables* older,
                                                const RuleByteContexts* contexts);
  // The latest version; its slots also in slots_, which Get reads (one load, as before).
  const NodeTables& tables() const { return *tables_.load(std::memory_order_acquire); }
  const GrammarFsm& fsm() const { return *tables().fsm; }

  // Decided by the first snapshot (see the constructor); never changes.
  const bool leave_from_contexts_;
  // The AST byte contexts of the latest version's rules (contexts mode), or null. Read and
  // replaced by the constructor and GrowTo only, which the grammar's build mutex serialises.
  std::shared_ptr<const RuleByteContexts> contexts_;
  std::shared_ptr<const TokenizerInfo> tokenizer_;
  std::shared_ptr<MaskCachePool> pool_;
  MaskCacheOptions options_;
  std::vector<std::unique_ptr<NodeTables>> table_versions_;  // under mutex_; the last is tables_
  std::atomic<const NodeTables*> tables_;
  std::atomic<Slot*> slots_;
  // Hierarchical FSM hashes: computed by the background schedule's task (StartPrecompute),
  // or on the first pool lookup where there is no background schedule (precompute <= 0), on
  // the snapshot latest then; nodes appended since have no hierarchical keys.
  std::once_flag hashes_once_;
  std::atomic<bool> hashes_ready_{false};
  FsmHashes hashes_;
  const NodeTables* hashed_tables_ = nullptr;  // the version hashes_ was computed on
  std::vector<std::string> lookahead_keys_;  // per rule, filled under mutex_
  std::vector<uint8_t> lookahead_key_done_;
  mutable ForkSafeMutex mutex_;
  std::vector<std::shared_ptr<const TokenClassification>> owned_;
  // Built entries pass through it before they are published, so that nodes accepting the same
  // dense set read one copy of it (the free-text nodes of a partly spelled trigger).
  DenseAcceptedSets dense_sets_;
  std::atomic<int64_t> built_{0};
  std::atomic<int64_t> build_ns_{0};
};

// Blocks until the process's background threads (partial JIT, tokenizer tables) have nothing
// queued or running. For tests that need the background's results in place.
void WaitForBackgroundWork();

}  // namespace xg2

#endif  // XG2_MATCHER_TOKEN_MASK_CACHE_H_
