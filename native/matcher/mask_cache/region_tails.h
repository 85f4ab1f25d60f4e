// Classification by tails at a root whose tokens are mostly consumed wholesale (a UTF-8
// region with one boundary node, a long chain's loop head).
#ifndef XG2_MATCHER_MASK_CACHE_REGION_TAILS_H_
#define XG2_MATCHER_MASK_CACHE_REGION_TAILS_H_

#include <cstdint>
#include <vector>

#include "grammar/follow_sets.h"
#include "matcher/mask_cache/classify_scratch.h"
#include "matcher/mask_cache/dense_stepper.h"
#include "matcher/mask_cache/token_classification.h"
#include "tokenizer/tokenizer_info.h"

namespace xg2 {

// The region-root classification by tails (VocabularyIndex::Utf8RegionOutsiders): every
// token of the region set is accepted, and each other token takes the verdict of its tail
// walked from `node`, the region's only boundary node (SingleBoundaryRegion). Tails are
// walked in ascending order sharing prefixes, as RefineWithLookahead walks its list: a
// tail that shares more than the failing depth of the previous one shares its verdict. On a
// JSON string body this walks about 2,500 tails instead of the tens of thousands of trie
// nodes around the few thousand tokens holding a quote, a backslash or a control byte.
ClassificationPair ClassifyRegionOutsiders(const TokenIdSet& region_tokens, const RegionOutsiders& outsiders,
                                           const LeaveSets& leave, const std::vector<uint8_t>& leavable,
                                           NodeId node, const TokenizerInfo& tokenizer, bool want_fsm_only,
                                           DenseStepper& stepper, ClassifyScratch& s);

}  // namespace xg2

#endif  // XG2_MATCHER_MASK_CACHE_REGION_TAILS_H_
