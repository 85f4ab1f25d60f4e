// matcher/mask_cache/dense_set_sharing.h: entries whose dense accepted sets have equal content
// end up reading one copy; everything else about an entry is kept, and other sets are untouched.
#include <memory>
#include <vector>

#include "check.h"
#include "matcher/mask_cache/dense_set_sharing.h"

namespace {

using xg2::AcceptedTokens;
using xg2::DenseAcceptedSets;
using xg2::TokenClassification;

std::shared_ptr<const TokenClassification> Entry(std::vector<uint32_t> bits, std::vector<int32_t> ids,
                                                 std::vector<int32_t> uncertain) {
  auto accepted = std::make_shared<AcceptedTokens>();
  accepted->bits = std::move(bits);
  accepted->ids = std::move(ids);
  auto entry = std::make_shared<TokenClassification>();
  entry->accepted = std::move(accepted);
  entry->uncertain_lcp.assign(uncertain.size(), 0);
  entry->uncertain_positions = std::move(uncertain);
  return entry;
}

}  // namespace

TEST(DenseSetsOfEqualContentShareTheFirstCopy) {
  DenseAcceptedSets sets;
  std::vector<uint32_t> bits(40, 0xFFFFFFFFu);
  bits[39] = 0x7u;
  auto first = Entry(bits, {}, {});
  auto second = Entry(bits, {}, {3, 9});
  CHECK(sets.Share(first) == first);  // the first of its content is kept as it is
  auto shared = sets.Share(second);
  CHECK(shared->accepted == first->accepted);
  CHECK(shared->uncertain_positions == second->uncertain_positions);
  CHECK(shared->uncertain_lcp == second->uncertain_lcp);
  CHECK(second->accepted != first->accepted);  // the argument itself is not changed
  CHECK(sets.Share(first) == first);  // sharing again changes nothing
}

TEST(DenseSetsThatDifferInOneBitStayApart) {
  DenseAcceptedSets sets;
  std::vector<uint32_t> bits(40, 0xFFFFFFFFu);
  auto first = Entry(bits, {}, {});
  for (size_t word : {size_t{0}, size_t{17}, size_t{39}}) {
    std::vector<uint32_t> other = bits;
    other[word] ^= 1u << 5;
    auto entry = Entry(other, {}, {});
    CHECK(sets.Share(entry) == entry);
  }
  CHECK(sets.Share(first) == first);
  std::vector<uint32_t> longer = bits;
  longer.push_back(0xFFFFFFFFu);  // same words where both have them, one more
  auto entry = Entry(longer, {}, {});
  CHECK(sets.Share(entry) == entry);
}

TEST(IdListSetsAreNotShared) {
  DenseAcceptedSets sets;
  auto first = Entry({}, {1, 4, 7}, {});
  auto second = Entry({}, {1, 4, 7}, {});
  CHECK(sets.Share(first) == first);
  CHECK(sets.Share(second) == second);
}
