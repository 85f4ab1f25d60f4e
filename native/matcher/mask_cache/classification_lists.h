// Building a TokenClassification's parts: uncertain lists with their common-prefix table, and
// accepted sets packed as bits or ids.
#ifndef XG2_MATCHER_MASK_CACHE_CLASSIFICATION_LISTS_H_
#define XG2_MATCHER_MASK_CACHE_CLASSIFICATION_LISTS_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "matcher/mask_cache/token_classification.h"
#include "tokenizer/tokenizer_info.h"

namespace xg2 {

// Appends the sorted positions [begin, end) to an uncertain list. `shared_before` is the
// common prefix length of `begin`'s token with the list's previous entry; inside the range
// the vocabulary's own LCP table applies.
inline void AppendUncertainRange(TokenClassification* out, int32_t begin, int32_t end, int32_t shared_before,
                                 const std::vector<int32_t>& lcp) {
  out->uncertain_positions.push_back(begin);
  out->uncertain_lcp.push_back(out->uncertain_positions.size() == 1 ? 0 : shared_before);
  for (int32_t p = begin + 1; p < end; ++p) {
    out->uncertain_positions.push_back(p);
    out->uncertain_lcp.push_back(lcp[p]);
  }
}

// Accepted ids listed one by one up to this count (ClassifyScratch::accepted_list).
constexpr int64_t kListedAccepts = 512;

// Whether an accepted set of `count` tokens is stored as a bitset over the vocabulary's `words`
// words rather than as an id list. A fill ORs an id list into its row one id at a time (a
// read-modify-write of a scattered word each, chained where neighbouring ids share a word) but
// a bitset a word at a time, vectorised, and the first bitset of a fill is copied in place of
// clearing the row, so a bitset costs a fill about one streaming read of the row. A set denser
// than one id per kWordsPerListedAccept words is cheaper to fill as a bitset (a JSON value start
// accepts every number token: about one id per five words), at up to that many times the
// memory of its list.
constexpr int64_t kWordsPerListedAccept = 8;
inline bool AcceptedAsBits(int64_t count, size_t words) {
  return count * kWordsPerListedAccept > static_cast<int64_t>(words);
}

// Packs the accepted bits, all of which lie in words [lo, hi) of `bits`. `summary`, where
// given, has bit w set for every non-zero word w (ClassifyScratch::accepted_summary): an id
// list is then read from those words alone.
std::shared_ptr<const AcceptedTokens> PackAccepted(const std::vector<uint32_t>& bits, size_t words, size_t lo,
                                                   size_t hi, int64_t count,
                                                   const std::vector<uint64_t>* summary = nullptr);

// Releases the spare capacity of the uncertain lists.
void Shrink(TokenClassification* c);

// Common prefix length of the tokens at sorted positions `a` and `b` (the lcp of an
// uncertain list whose neighbours need not be neighbours in the vocabulary).
int32_t SharedPrefixOfPositions(const TokenizerInfo& tokenizer, int32_t a, int32_t b);

}  // namespace xg2

#endif  // XG2_MATCHER_MASK_CACHE_CLASSIFICATION_LISTS_H_
