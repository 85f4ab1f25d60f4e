// Token classification at one scannable node (paper section 3.4, appendix B).
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
#ifndef XG2_MATCHER_MASK_CACHE_TOKEN_CLASSIFICATION_H_
#define XG2_MATCHER_MASK_CACHE_TOKEN_CLASSIFICATION_H_

#include <array>
#include <cstdint>
#include <memory>
#include <vector>

#include "grammar/follow_sets.h"
#include "grammar/grammar_fsm.h"
#include "matcher/vocabulary_index.h"
#include "tokenizer/tokenizer_info.h"

namespace xg2 {


// Accepted tokens of one node, as a bitset over token ids once dense enough to fill faster (AcceptedAsBits,
// mask_cache/classification_lists.h), else as an ascending id list. Shared by both versions of a node.
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
// (VocabularyIndex::Utf8RegionTokens) and visits only the tokens outside it; when the root is
// the region's only boundary node, those are decided by their tails (the bytes from the
// first one outside the region, VocabularyIndex::Utf8RegionOutsiders), each walked once, and so
// is the loop head of a long bounded string whose copies walk alike within a token's reach.
// A node along a chain or loop of one character class (a UUID's hex digits, \d+) reads the
// class's table (VocabularyIndex::FindClassPrefixTable, built on the background thread the first
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

// Short-token reuse: the short tokens' verdicts are shared through the node's short key,
// the long ones walked (kShortTokenBytes, LongTokenTable: matcher/vocabulary_index.h).

// The lookahead classification of the long tokens at `node` alone (accepted set and
// uncertain list over those tokens only); `rows_owner` as for ClassifyTokens.
TokenClassification ClassifyLongTokens(const GrammarFsm& fsm, const LeaveSets& leave, NodeId node,
                                       const TokenizerInfo& tokenizer, const LongTokenTable& long_tokens,
                                       uint64_t rows_owner = 0);

// The short tokens' verdicts from `short_part` (a lookahead classification of a node with
// the same short key) joined with `long_part` (ClassifyLongTokens at this node).
TokenClassification JoinShortAndLong(const TokenClassification& short_part, const TokenClassification& long_part,
                                     const TokenizerInfo& tokenizer, const LongTokenTable& long_tokens);

}  // namespace xg2

#endif  // XG2_MATCHER_MASK_CACHE_TOKEN_CLASSIFICATION_H_
