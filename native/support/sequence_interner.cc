#include "support/sequence_interner.h"

#include <algorithm>

namespace xg2 {

int32_t SequenceInterner::Intern(const int32_t* data, size_t size) {
  if (2 * (spans_.size() + 1) > slots_.size()) Grow();
  const uint64_t hash = Hash(data, size);
  const size_t mask = slots_.size() - 1;
  for (size_t i = hash & mask;; i = (i + 1) & mask) {
    const int32_t id = slots_[i];
    if (id < 0) {
      slots_[i] = static_cast<int32_t>(spans_.size());
      spans_.push_back({words_.size(), size});
      hashes_.push_back(hash);
      words_.insert(words_.end(), data, data + size);
      return slots_[i];
    }
    if (hashes_[id] == hash && spans_[id].size == size && std::equal(data, data + size, begin(id))) return id;
  }
}

uint64_t SequenceInterner::Hash(const int32_t* data, size_t size) {
  uint64_t h = 0x9E3779B97F4A7C15ull ^ size;
  for (size_t i = 0; i < size; ++i) {
    h ^= static_cast<uint32_t>(data[i]);
    h *= 0xFF51AFD7ED558CCDull;
    h ^= h >> 29;
  }
  return h;
}

void SequenceInterner::Grow() {
  slots_.assign(std::max<size_t>(64, 2 * slots_.size()), -1);
  const size_t mask = slots_.size() - 1;
  for (size_t id = 0; id < spans_.size(); ++id) {
    size_t i = hashes_[id] & mask;
    while (slots_[i] >= 0) i = (i + 1) & mask;
    slots_[i] = static_cast<int32_t>(id);
  }
}

}  // namespace xg2
