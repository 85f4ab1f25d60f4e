// Adaptive token-mask cache (paper section 3.4, appendix B) with JIT construction (3.2) and a
// cross-grammar pool keyed by FSM structure (3.3).
//
// For a scannable node n of rule R, every token is classified using only R's own DFA:
//  * accepted  - its bytes can all be consumed along R's byte edges from n. Any Earley item
//                (n, origin) with no pending lookahead then accepts the token, whatever the
//                context, so the token is in the mask.
//  * rejected  - the byte walk fails, and at no node after n on the way could the parser
//                leave R (complete it, or call a rule) with the token's next byte in the
//                node's leave set (grammar/follow_sets.h): no derivation through the item
//                consumes the token. (What n itself completes or calls is already in the
//                same Earley set and classified there.)
//  * uncertain - otherwise; only the full parser, with its context, can decide.
// The mask at a parser position is the union of the accepted sets of its scannable nodes,
// plus the uncertain tokens that the full parser accepts (checked by the reference walk
// restricted to them).
//
// Classification depends only on the DFA reachable from n within `max_token_bytes` steps and
// on the leave sets of those nodes; that truncated sub-DFA, written in canonical
// breadth-first numbering, is the pool key. Equal keys mean equal classifications, across
// rules and grammars (and across the copies of a long repetition, whose nodes far from its
// end all look alike within one token's reach: repetition compression in cache space).
#ifndef XG2_MATCHER_TOKEN_MASK_CACHE_H_
#define XG2_MATCHER_TOKEN_MASK_CACHE_H_

#include <atomic>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "grammar/follow_sets.h"
#include "grammar/grammar_fsm.h"
#include "tokenizer/tokenizer_info.h"

namespace xg2 {

// The classification of the vocabulary at one node. Accepted tokens are stored either as a
// bitset over token ids or as an id list, whichever is smaller; uncertain tokens as positions
// in TokenizerInfo::sorted_text_tokens() (ascending), the order the walk needs.
struct TokenClassification {
  std::vector<uint32_t> accepted_bits;
  std::vector<int32_t> accepted_ids;
  std::vector<int32_t> uncertain_positions;
  // uncertain_lcp[k]: common prefix length of uncertain tokens k-1 and k (0 for k == 0), so
  // a walk over this list alone needs no scan of the vocabulary's LCP table.
  std::vector<int32_t> uncertain_lcp;

  bool accepted_as_bits() const { return !accepted_bits.empty(); }
  size_t MemoryBytes() const {
    return sizeof(*this) + accepted_bits.capacity() * 4 + accepted_ids.capacity() * 4 +
           uncertain_positions.capacity() * 4 + uncertain_lcp.capacity() * 4;
  }
};

// Classifies the vocabulary at `node` (see the file comment).
TokenClassification ClassifyTokens(const GrammarFsm& fsm, const std::vector<ByteSet>& leave,
                                   NodeId node, const TokenizerInfo& tokenizer);

// Canonical description of the DFA reachable from `node` within `depth` bytes, with the
// leave sets of its nodes.
std::string CanonicalSubFsmKey(const GrammarFsm& fsm, const std::vector<ByteSet>& leave,
                               NodeId node, int32_t depth);

// Thread-safe LRU pool of classifications shared by every grammar of one tokenizer.
class MaskCachePool {
 public:
  explicit MaskCachePool(int64_t limit_bytes) : limit_bytes_(limit_bytes) {}

  std::shared_ptr<const TokenClassification> Find(const std::string& key);
  void Insert(const std::string& key, std::shared_ptr<const TokenClassification> entry);

  int64_t bytes() const;
  int64_t limit_bytes() const { return limit_bytes_; }
  int64_t hits() const { return hits_.load(); }
  int64_t misses() const { return misses_.load(); }
  size_t size() const;
  void Clear();

 private:
  struct Slot {
    std::string key;
    std::shared_ptr<const TokenClassification> entry;
    int64_t bytes;
  };
  mutable std::mutex mutex_;
  std::list<Slot> lru_;  // most recent first
  std::unordered_map<std::string, std::list<Slot>::iterator> index_;
  int64_t bytes_ = 0;
  int64_t limit_bytes_;
  std::atomic<int64_t> hits_{0};
  std::atomic<int64_t> misses_{0};
};

struct MaskCacheOptions {
  bool enabled = true;       // false: every fill is the reference walk (ablation baseline)
  bool cross_grammar = true; // share classifications through the pool
  // Partial JIT (paper section 3.2): right after compilation, classify the `precompute`
  // nodes with the highest estimated cost on a background thread. 0 = pure JIT; a negative
  // value classifies every scannable node synchronously (ahead-of-time, for ablation).
  int32_t precompute = 8;
};

// Per compiled grammar: node -> classification, built the first time a matcher needs it
// (JIT) and shared by every matcher of the grammar. Thread-safe; lookups of built entries
// take no lock.
class GrammarMaskCache {
 public:
  GrammarMaskCache(std::shared_ptr<const GrammarFsm> fsm, std::shared_ptr<const TokenizerInfo> tokenizer,
                   std::shared_ptr<MaskCachePool> pool, MaskCacheOptions options);

  const TokenClassification& Get(NodeId node);
  // Starts the partial-JIT work described by options().precompute. Matchers never wait for
  // it: a node they need that is not built yet is built on their own thread.
  static void StartPrecompute(const std::shared_ptr<GrammarMaskCache>& cache);
  const MaskCacheOptions& options() const { return options_; }
  int64_t built_nodes() const { return built_.load(); }
  size_t MemoryBytes() const;

 private:
  std::shared_ptr<const GrammarFsm> fsm_;
  std::shared_ptr<const TokenizerInfo> tokenizer_;
  std::shared_ptr<MaskCachePool> pool_;
  MaskCacheOptions options_;
  std::vector<ByteSet> leave_;
  std::unique_ptr<std::atomic<const TokenClassification*>[]> slots_;
  mutable std::mutex mutex_;
  std::vector<std::shared_ptr<const TokenClassification>> owned_;
  std::atomic<int64_t> built_{0};
};

}  // namespace xg2

#endif  // XG2_MATCHER_TOKEN_MASK_CACHE_H_
