#include "matcher/mask_cache/classification_lists.h"

#include <algorithm>
#include <string>

namespace xg2 {

std::shared_ptr<const AcceptedTokens> PackAccepted(const std::vector<uint32_t>& bits, size_t words, size_t lo,
                                                   size_t hi, int64_t count,
                                                   const std::vector<uint64_t>* summary) {
  auto accepted = std::make_shared<AcceptedTokens>();
  if (AcceptedAsBits(count, words)) {
    accepted->bits.assign(words, 0);
    std::copy(bits.begin() + lo, bits.begin() + hi, accepted->bits.begin() + lo);
    return accepted;
  }
  accepted->ids.reserve(count);
  auto read_word = [&](size_t w) {
    for (uint32_t word = bits[w]; word; word &= word - 1) {
      accepted->ids.push_back(static_cast<int32_t>(w * 32 + __builtin_ctz(word)));
    }
  };
  if (summary) {
    for (size_t sw = lo / 64; sw < (hi + 63) / 64; ++sw) {
      for (uint64_t nonzero = (*summary)[sw]; nonzero; nonzero &= nonzero - 1) {
        read_word(sw * 64 + static_cast<size_t>(__builtin_ctzll(nonzero)));
      }
    }
  } else {
    for (size_t w = lo; w < hi; ++w) read_word(w);
  }
  return accepted;
}

void Shrink(TokenClassification* c) {
  c->uncertain_positions.shrink_to_fit();
  c->uncertain_lcp.shrink_to_fit();
}

int32_t SharedPrefixOfPositions(const TokenizerInfo& tokenizer, int32_t a, int32_t b) {
  const std::string& x = tokenizer.decoded_tokens()[tokenizer.sorted_text_tokens()[a]];
  const std::string& y = tokenizer.decoded_tokens()[tokenizer.sorted_text_tokens()[b]];
  const size_t limit = std::min(x.size(), y.size());
  return static_cast<int32_t>(std::mismatch(x.begin(), x.begin() + limit, y.begin()).first - x.begin());
}

}  // namespace xg2
