#include "matcher/mask_cache/region_tails.h"

#include <algorithm>
#include <string>

#include "matcher/mask_cache/classification_lists.h"

namespace xg2 {

ClassificationPair ClassifyRegionOutsiders(const TokenIdSet& region_tokens, const RegionOutsiders& outsiders,
                                           const LeaveSets& leave, const std::vector<uint8_t>& leavable,
                                           NodeId node, const TokenizerInfo& tokenizer, bool want_fsm_only,
                                           DenseStepper& stepper, ClassifyScratch& s) {
  const std::vector<int32_t>& sorted = tokenizer.sorted_text_tokens();
  const size_t words = (static_cast<size_t>(tokenizer.vocab_size()) + 31) / 32;
  std::vector<uint32_t> bits = region_tokens.bits;
  int64_t accepted_count = region_tokens.count;
  enum Verdict : uint8_t { kAccepted, kRejected, kUncertainLookaheadOnly, kUncertainFsmOnly, kUncertainBoth };
  std::vector<int32_t> uncertain_lookahead;
  std::vector<int32_t> uncertain_fsm;
  s.path[0] = node;
  s.left_lookahead[0] = 0;
  s.left_fsm[0] = 0;
  int32_t depth = 0;  // bytes of the previous tail consumed (its byte at `depth` failed unless accepted)
  Verdict previous = kRejected;
  const size_t tails = outsiders.tails.size();
  for (size_t i = 0; i < tails; ++i) {
    Verdict verdict = previous;
    const std::string& tail = outsiders.tails[i];
    const int32_t size = static_cast<int32_t>(tail.size());
    if (outsiders.tail_lcp[i] <= depth) {
      depth = std::min(outsiders.tail_lcp[i], size);
      verdict = kAccepted;
      while (depth < size) {
        const uint8_t byte = static_cast<uint8_t>(tail[depth]);
        const NodeId from = s.path[depth];
        const bool inner = depth > 0;
        const bool left_lookahead = s.left_lookahead[depth] || (inner && leave[from].test(byte));
        const bool left_fsm = s.left_fsm[depth] || (inner && leavable[from]);
        const NodeId next = stepper.Row(from)[byte];
        if (next < 0) {
          verdict = left_lookahead ? (left_fsm ? kUncertainBoth : kUncertainLookaheadOnly)
                                   : (left_fsm ? kUncertainFsmOnly : kRejected);
          break;
        }
        s.path[depth + 1] = next;
        s.left_lookahead[depth + 1] = left_lookahead;
        s.left_fsm[depth + 1] = left_fsm;
        ++depth;
      }
    }
    previous = verdict;
    if (verdict == kRejected) continue;
    for (int32_t g = outsiders.group_begin[i]; g < outsiders.group_begin[i + 1]; ++g) {
      const int32_t pos = outsiders.positions[g];
      if (verdict == kAccepted) {
        const int32_t id = sorted[pos];
        uint32_t& word = bits[static_cast<size_t>(id >> 5)];
        const uint32_t bit = 1u << (id & 31);
        if (!(word & bit)) ++accepted_count;
        word |= bit;
        continue;
      }
      if (verdict != kUncertainFsmOnly) uncertain_lookahead.push_back(pos);
      if (want_fsm_only && verdict != kUncertainLookaheadOnly) uncertain_fsm.push_back(pos);
    }
  }
  // Uncertain lists in sorted order, each with the common prefix of neighbouring tokens.
  auto finish = [&](std::vector<int32_t>& positions, TokenClassification* out) {
    std::sort(positions.begin(), positions.end());
    out->uncertain_positions = std::move(positions);
    out->uncertain_lcp.assign(out->uncertain_positions.size(), 0);
    for (size_t k = 1; k < out->uncertain_positions.size(); ++k) {
      out->uncertain_lcp[k] =
          SharedPrefixOfPositions(tokenizer, out->uncertain_positions[k - 1], out->uncertain_positions[k]);
    }
  };
  ClassificationPair out;
  finish(uncertain_lookahead, &out.with_lookahead);
  if (want_fsm_only) finish(uncertain_fsm, &out.fsm_only);
  if (AcceptedAsBits(accepted_count, words)) {
    auto accepted = std::make_shared<AcceptedTokens>();
    accepted->bits = std::move(bits);
    out.with_lookahead.accepted = std::move(accepted);
  } else {
    out.with_lookahead.accepted = PackAccepted(bits, words, 0, words, accepted_count);
  }
  out.fsm_only.accepted = out.with_lookahead.accepted;
  Shrink(&out.with_lookahead);
  Shrink(&out.fsm_only);
  return out;
}

}  // namespace xg2
