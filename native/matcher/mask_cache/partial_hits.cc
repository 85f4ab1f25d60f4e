// Classifications derived from others: the lookahead version from the FSM-only one, and a
// node's classification from a short-key hit plus its own long tokens.
#include "matcher/mask_cache/token_classification.h"

#include <algorithm>
#include <climits>
#include <stdexcept>
#include <string>

#include "matcher/mask_cache/classification_lists.h"
#include "matcher/mask_cache/classify_scratch.h"
#include "matcher/mask_cache/dense_stepper.h"

namespace xg2 {

TokenClassification RefineWithLookahead(const TokenClassification& fsm_only, const GrammarFsm& fsm,
                                        const LeaveSets& leave, NodeId node,
                                        const TokenizerInfo& tokenizer, uint64_t rows_owner) {
  const char* token_bytes = tokenizer.sorted_token_bytes().data();
  const int32_t* token_offsets = tokenizer.sorted_token_offsets().data();
  ClassifyScratch& s = Scratch();
  const size_t depth_slots = static_cast<size_t>(tokenizer.max_token_bytes()) + 1;
  s.EnsureDepth(depth_slots);
  DenseStepper stepper(fsm, s, rows_owner);
  TokenClassification out;
  out.accepted = fsm_only.accepted;
  // Same walk as ClassifyTokens, over the listed tokens only (none of them is accepted: each
  // fails at some byte). Invariant: `depth` bytes of the previous token were consumed and
  // its byte at `depth` failed, with `previous_uncertain` its verdict.
  s.path[0] = node;
  s.left_lookahead[0] = 0;
  int32_t depth = 0;
  bool previous_uncertain = false;
  int32_t shared = INT32_MAX;  // common prefix with the last kept token
  const size_t count = fsm_only.uncertain_positions.size();
  for (size_t k = 0; k < count; ++k) {
    const int32_t pos = fsm_only.uncertain_positions[k];
    const int32_t with_previous = fsm_only.uncertain_lcp[k];
    shared = std::min(shared, with_previous);
    bool uncertain = previous_uncertain;
    if (with_previous <= depth) {
      const char* bytes = token_bytes + token_offsets[pos];
      const int32_t size = token_offsets[pos + 1] - token_offsets[pos];
      depth = with_previous;
      uncertain = false;
      while (depth < size) {
        const uint8_t byte = static_cast<uint8_t>(bytes[depth]);
        const NodeId from = s.path[depth];
        const bool can_leave = depth > 0 && leave[from].test(byte);
        const NodeId next = stepper.Row(from)[byte];
        if (next < 0) {
          uncertain = s.left_lookahead[depth] || can_leave;
          break;
        }
        s.path[depth + 1] = next;
        s.left_lookahead[depth + 1] = s.left_lookahead[depth] || can_leave;
        ++depth;
      }
    }
    previous_uncertain = uncertain;
    if (uncertain) {
      out.uncertain_positions.push_back(pos);
      out.uncertain_lcp.push_back(out.uncertain_positions.size() == 1 ? 0 : shared);
      shared = INT32_MAX;
    }
  }
  Shrink(&out);
  return out;
}

TokenClassification ClassifyLongTokens(const GrammarFsm& fsm, const LeaveSets& leave, NodeId node,
                                       const TokenizerInfo& tokenizer, const LongTokenTable& long_tokens,
                                       uint64_t rows_owner) {
  const std::vector<int32_t>& sorted = tokenizer.sorted_text_tokens();
  const char* token_bytes = tokenizer.sorted_token_bytes().data();
  const int32_t* token_offsets = tokenizer.sorted_token_offsets().data();
  ClassifyScratch& s = Scratch();
  s.EnsureDepth(static_cast<size_t>(tokenizer.max_token_bytes()) + 1);
  DenseStepper stepper(fsm, s, rows_owner);
  TokenClassification out;
  auto accepted = std::make_shared<AcceptedTokens>();
  // The rules of ClassifyTokens, one token at a time. Invariant: path[0..depth] holds the
  // nodes after the first `depth` bytes of the previous token, all consumed (a token that
  // failed keeps only the bytes before its failing one), so a token sharing `lcp` bytes with
  // it resumes at min(lcp, depth).
  s.path[0] = node;
  s.left_lookahead[0] = 0;
  int32_t depth = 0;
  int32_t shared = INT32_MAX;  // common prefix with the last uncertain token
  // A token whose first byte fails is rejected (the parser cannot leave before the first
  // byte), so only the first-byte groups the node steps on are walked. The first token of a
  // group has lcp 0, which resets `depth` and `shared` as the skipped groups would have.
  const NodeId* root_row = stepper.Row(node);
  for (int first = 0; first < 256; ++first) {
    if (root_row[first] < 0) continue;
    const int32_t group_end = long_tokens.first_byte_begin[first + 1];
    for (int32_t k = long_tokens.first_byte_begin[first]; k < group_end; ++k) {
      const int32_t pos = long_tokens.positions[k];
      shared = std::min(shared, long_tokens.lcp[k]);
      const char* bytes = token_bytes + token_offsets[pos];
      const int32_t size = token_offsets[pos + 1] - token_offsets[pos];
      depth = std::min(depth, long_tokens.lcp[k]);
      bool uncertain = false;
      bool consumed = true;
      while (depth < size) {
        const uint8_t byte = static_cast<uint8_t>(bytes[depth]);
        const NodeId from = s.path[depth];
        const bool left = s.left_lookahead[depth] || (depth > 0 && leave[from].test(byte));
        const NodeId next = stepper.Row(from)[byte];
        if (next < 0) {
          uncertain = left;
          consumed = false;
          break;
        }
        s.path[depth + 1] = next;
        s.left_lookahead[depth + 1] = left;
        ++depth;
      }
      if (consumed) {
        accepted->ids.push_back(sorted[pos]);
      } else if (uncertain) {
        out.uncertain_positions.push_back(pos);
        out.uncertain_lcp.push_back(out.uncertain_positions.size() == 1 ? 0 : shared);
        shared = INT32_MAX;
      }
    }
  }
  std::sort(accepted->ids.begin(), accepted->ids.end());
  out.accepted = std::move(accepted);
  return out;
}

TokenClassification JoinShortAndLong(const TokenClassification& short_part, const TokenClassification& long_part,
                                     const TokenizerInfo& tokenizer, const LongTokenTable& long_tokens) {
  const std::vector<int32_t>& sorted = tokenizer.sorted_text_tokens();
  const std::vector<std::string>& decoded = tokenizer.decoded_tokens();
  const size_t words = long_tokens.short_bits.size();
  const AcceptedTokens& from_short = *short_part.accepted;
  const std::vector<int32_t>& long_ids = long_part.accepted->ids;  // ascending
  auto is_short_id = [&](int32_t id) { return (long_tokens.short_bits[id >> 5] >> (id & 31)) & 1; };
  TokenClassification out;
  if (!from_short.as_bits() && !AcceptedAsBits(static_cast<int64_t>(from_short.ids.size() + long_ids.size()), words)) {
    // A sparse set (a literal's few tokens): merge the two ascending id lists; the word
    // passes below would cost a scan of the whole vocabulary.
    auto accepted = std::make_shared<AcceptedTokens>();
    accepted->ids.reserve(from_short.ids.size() + long_ids.size());
    size_t j = 0;
    for (int32_t id : from_short.ids) {
      if (!is_short_id(id)) continue;
      while (j < long_ids.size() && long_ids[j] < id) accepted->ids.push_back(long_ids[j++]);
      accepted->ids.push_back(id);
    }
    accepted->ids.insert(accepted->ids.end(), long_ids.begin() + j, long_ids.end());
    out.accepted = std::move(accepted);
  } else {
    // Not the walks' accepted_bits, which must stay all zero between walks (ClassifyTokens).
    thread_local std::vector<uint32_t> bits;
    bits.assign(words, 0);
    if (from_short.as_bits()) {
      for (size_t w = 0; w < words; ++w) bits[w] = from_short.bits[w] & long_tokens.short_bits[w];
    } else {
      for (int32_t id : from_short.ids) {
        if (is_short_id(id)) bits[id >> 5] |= 1u << (id & 31);
      }
    }
    for (int32_t id : long_ids) bits[id >> 5] |= 1u << (id & 31);
    int64_t count = 0;
    for (size_t w = 0; w < words; ++w) count += __builtin_popcount(bits[w]);
    out.accepted = PackAccepted(bits, words, 0, words, count);
  }
  // Merge the short part's short uncertain tokens with the long part's list (both ascending
  // positions), recomputing the common prefix of each new neighbour pair.
  auto is_short = [&](int32_t pos) {
    return static_cast<int32_t>(decoded[sorted[pos]].size()) <= kShortTokenBytes;
  };
  const std::vector<int32_t>& a = short_part.uncertain_positions;
  const std::vector<int32_t>& b = long_part.uncertain_positions;
  size_t i = 0, j = 0;
  while (true) {
    while (i < a.size() && !is_short(a[i])) ++i;
    int32_t pos;
    if (i < a.size() && (j == b.size() || a[i] < b[j])) {
      pos = a[i++];
    } else if (j < b.size()) {
      pos = b[j++];
    } else {
      break;
    }
    out.uncertain_lcp.push_back(
        out.uncertain_positions.empty() ? 0 : SharedPrefixOfPositions(tokenizer, out.uncertain_positions.back(), pos));
    out.uncertain_positions.push_back(pos);
  }
  Shrink(&out);
  return out;
}

}  // namespace xg2
