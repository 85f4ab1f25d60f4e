#include "matcher/mask_cache/dense_set_sharing.h"

#include <mutex>

#include "support/dcheck.h"

namespace xg2 {

uint64_t DenseAcceptedSets::ContentHash(const std::vector<uint32_t>& bits) {
  // Four independent lanes so the loop is not one long dependency chain; the set was just
  // written by its classification, so this reads it from the cache.
  uint64_t lanes[4] = {bits.size(), 0x9E3779B97F4A7C15ull, 0xC2B2AE3D27D4EB4Full, 0x165667B19E3779F9ull};
  constexpr uint64_t kMultiplier = 0xFF51AFD7ED558CCDull;
  size_t w = 0;
  for (; w + 4 <= bits.size(); w += 4) {
    for (int lane = 0; lane < 4; ++lane) lanes[lane] = (lanes[lane] ^ bits[w + lane]) * kMultiplier;
  }
  for (; w < bits.size(); ++w) lanes[0] = (lanes[0] ^ bits[w]) * kMultiplier;
  uint64_t h = lanes[0];
  for (int lane = 1; lane < 4; ++lane) h = (h ^ (lanes[lane] >> 29) ^ lanes[lane]) * kMultiplier;
  return h ^ (h >> 32);
}

std::shared_ptr<const TokenClassification> DenseAcceptedSets::Share(
    std::shared_ptr<const TokenClassification> entry) {
  const std::shared_ptr<const AcceptedTokens>& accepted = entry->accepted;
  if (!accepted->as_bits()) return entry;
  const uint64_t hash = ContentHash(accepted->bits);
  std::shared_ptr<const AcceptedTokens> first;
  {
    std::lock_guard<ForkSafeMutex> lock(mutex_);
    std::vector<std::shared_ptr<const AcceptedTokens>>& same_hash = sets_[hash];
    for (const auto& candidate : same_hash) {
      if (candidate == accepted || candidate->bits == accepted->bits) {
        first = candidate;
        break;
      }
    }
    if (!first) {
      same_hash.push_back(accepted);
      return entry;
    }
  }
  if (first == accepted) return entry;
  auto shared = std::make_shared<TokenClassification>(*entry);
  shared->accepted = std::move(first);
  XG2_DCHECK(shared->accepted->bits == entry->accepted->bits, "a shared accepted set has the entry's content");
  return shared;
}

}  // namespace xg2
