// matcher/mask_cache/classification_lists.h: AcceptedAsBits switches an accepted set from an
// id list to a bitset once it holds more than one id per kWordsPerListedAccept words, and
// PackAccepted gives the same set of ids in either representation, with or without the
// summary of non-zero words.
#include <algorithm>
#include <cstdint>
#include <memory>
#include <set>
#include <vector>

#include "check.h"
#include "matcher/mask_cache/classification_lists.h"

namespace {

using xg2::AcceptedAsBits;
using xg2::AcceptedTokens;
using xg2::kWordsPerListedAccept;
using xg2::PackAccepted;

// A row of `words` words with the given ids set, and the summary a classification keeps of
// it (bit w of the summary for each non-zero word w).
struct Row {
  std::vector<uint32_t> bits;
  std::vector<uint64_t> summary;
  size_t lo = 0, hi = 0;  // words [lo, hi) hold every set bit
};

Row RowOf(size_t words, const std::vector<int32_t>& ids) {
  Row row;
  row.bits.assign(words, 0);
  row.summary.assign((words + 63) / 64, 0);
  row.lo = words;
  for (int32_t id : ids) {
    const size_t w = static_cast<size_t>(id) / 32;
    row.bits[w] |= 1u << (id % 32);
    row.summary[w / 64] |= uint64_t{1} << (w % 64);
    row.lo = std::min(row.lo, w);
    row.hi = std::max(row.hi, w + 1);
  }
  if (ids.empty()) row.lo = row.hi = 0;
  return row;
}

std::set<int32_t> IdsOf(const AcceptedTokens& accepted) {
  std::set<int32_t> ids;
  if (!accepted.as_bits()) return std::set<int32_t>(accepted.ids.begin(), accepted.ids.end());
  for (size_t w = 0; w < accepted.bits.size(); ++w) {
    for (int b = 0; b < 32; ++b) {
      if (accepted.bits[w] >> b & 1u) ids.insert(static_cast<int32_t>(w * 32 + b));
    }
  }
  return ids;
}

// `count` ids spread over a vocabulary of `words` words (every `stride`-th id from `first`).
std::vector<int32_t> SpreadIds(int64_t count, int32_t first, int32_t stride) {
  std::vector<int32_t> ids;
  for (int64_t k = 0; k < count; ++k) ids.push_back(first + static_cast<int32_t>(k) * stride);
  return ids;
}

}  // namespace

TEST(AcceptedAsBitsSwitchesAboveOneIdPerListedWords) {
  for (size_t words : {size_t{1}, size_t{8}, size_t{100}, size_t{4000}, size_t{4001}}) {
    const int64_t at_switch = static_cast<int64_t>(words) / kWordsPerListedAccept;
    // Up to words / kWordsPerListedAccept ids (rounded down) stay a list; one more is a bitset.
    CHECK(!AcceptedAsBits(at_switch, words));
    CHECK(AcceptedAsBits(at_switch + 1, words));
    CHECK(!AcceptedAsBits(0, words));
  }
  // A JSON value start over a 128k vocabulary (4,000 words): 500 ids stay a list, 501 do not.
  CHECK(!AcceptedAsBits(500, 4000));
  CHECK(AcceptedAsBits(501, 4000));
}

TEST(PackAcceptedGivesTheSameSetAsListOrBitset) {
  const size_t words = 4000;  // a 128,000-token vocabulary
  const int64_t at_switch = static_cast<int64_t>(words) / kWordsPerListedAccept;
  for (int64_t count : {int64_t{0}, int64_t{1}, at_switch - 1, at_switch, at_switch + 1, int64_t{3000}}) {
    for (int32_t stride : {1, 7, 31, 41}) {
      if (count * stride >= static_cast<int64_t>(words) * 32 - 5) continue;
      const std::vector<int32_t> ids = SpreadIds(count, 5, stride);
      const Row row = RowOf(words, ids);
      const std::set<int32_t> expected(ids.begin(), ids.end());
      for (const std::vector<uint64_t>* summary : {static_cast<const std::vector<uint64_t>*>(nullptr), &row.summary}) {
        const std::shared_ptr<const AcceptedTokens> packed = PackAccepted(row.bits, words, row.lo, row.hi, count, summary);
        CHECK_EQ(packed->as_bits(), AcceptedAsBits(count, words));
        if (packed->as_bits()) {
          CHECK_EQ(packed->bits.size(), words);  // a bitset spans the whole vocabulary
        } else {
          CHECK(packed->ids == ids);  // an id list is in ascending order
        }
        CHECK(IdsOf(*packed) == expected);
      }
    }
  }
}

TEST(PackAcceptedListsIdsAtTheEdgesOfItsWords) {
  // Bit 31 of a word and bit 0 of the next, the first and the last id of the vocabulary.
  const size_t words = 200;
  const std::vector<int32_t> ids = {0, 31, 32, 63, 64 * 32 - 1, 64 * 32, static_cast<int32_t>(words * 32 - 1)};
  const Row row = RowOf(words, ids);
  const int64_t count = static_cast<int64_t>(ids.size());
  CHECK(!AcceptedAsBits(count, words));
  const std::set<int32_t> expected(ids.begin(), ids.end());
  CHECK(IdsOf(*PackAccepted(row.bits, words, row.lo, row.hi, count, &row.summary)) == expected);
  CHECK(IdsOf(*PackAccepted(row.bits, words, row.lo, row.hi, count)) == expected);
  // The same ids in a small vocabulary are dense enough for a bitset, and give the same set.
  const size_t few_words = 50;
  const std::vector<int32_t> low = {0, 31, 32, 63, static_cast<int32_t>(few_words * 32 - 1), 100, 101};
  const Row small = RowOf(few_words, low);
  CHECK(AcceptedAsBits(static_cast<int64_t>(low.size()), few_words));
  const auto packed = PackAccepted(small.bits, few_words, small.lo, small.hi, static_cast<int64_t>(low.size()));
  CHECK(packed->as_bits());
  CHECK(IdsOf(*packed) == std::set<int32_t>(low.begin(), low.end()));
}
