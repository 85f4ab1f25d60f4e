// One copy per grammar of each distinct dense accepted set.
//
// Many scannable nodes of a grammar accept exactly the same tokens as a bitset over the
// whole vocabulary: the free-text nodes of a TagDispatch rule (paper section 4) at every
// automaton state of a partly spelled trigger whose next byte still only continues free
// text (`{"`, `{"name` of `{"name": `) accept what the free text at the automaton's root
// accepts. Each node's classification is built on its own, so each held its own copy of the
// bitset (a vocabulary's worth of bits). Fills read the accepted bitset of every live node:
// the free-text phase keeps the root's copy in the processor's cache, while the copy of a
// node first reached when a trigger starts was cold, and reading it made those fills several
// times slower than the free-text fills around them. Sharing one copy between the nodes
// makes those fills read the copy that free text kept warm, and saves the memory.
#ifndef XG2_MATCHER_MASK_CACHE_DENSE_SET_SHARING_H_
#define XG2_MATCHER_MASK_CACHE_DENSE_SET_SHARING_H_

#include <cstdint>
#include <memory>
#include <unordered_map>
#include <vector>

#include "matcher/mask_cache/token_classification.h"
#include "support/fork_safe_mutex.h"

namespace xg2 {

class DenseAcceptedSets {
 public:
  // `entry` itself, or an equal classification whose accepted set is the first set of the
  // same content that this table saw (a copy of `entry` with that set). Sets stored as id
  // lists are returned as they are: they are small, and a fill reads only their ids.
  // Thread-safe.
  std::shared_ptr<const TokenClassification> Share(std::shared_ptr<const TokenClassification> entry);

 private:
  static uint64_t ContentHash(const std::vector<uint32_t>& bits);

  ForkSafeMutex mutex_;
  // Content hash -> the distinct sets with that hash (almost always one).
  std::unordered_map<uint64_t, std::vector<std::shared_ptr<const AcceptedTokens>>> sets_;
};

}  // namespace xg2

#endif  // XG2_MATCHER_MASK_CACHE_DENSE_SET_SHARING_H_
