#include "matcher/mask_cache/mask_cache_pool.h"

#include <functional>

namespace xg2 {

NodeCacheKeys CanonicalSubFsmKeys(const GrammarFsm& fsm, const LeaveSets& leave,
                                  const std::vector<uint8_t>& leavable, NodeId node, int32_t depth) {
  // Breadth-first numbering from `node`; nodes first seen beyond `depth` bytes are written
  // as a single "beyond" marker: a token never reaches them, so their details do not matter.
  // The numbering lives in per-thread flat arrays (number[n] = -1 outside this walk), so a
  // key costs one pass over the sub-DFA and two string allocations.
  struct KeyScratch {
    std::vector<int32_t> number;
    std::vector<NodeId> order;
    std::vector<int32_t> node_depth;
    std::vector<int32_t> key;
    std::vector<int32_t> leave_part;
  };
  thread_local KeyScratch s;
  if (s.number.size() < static_cast<size_t>(fsm.num_nodes())) s.number.resize(fsm.num_nodes(), -1);
  s.order.assign(1, node);
  s.node_depth.assign(1, 0);
  s.key.clear();
  s.leave_part.clear();
  s.number[node] = 0;
  for (size_t k = 0; k < s.order.size(); ++k) {
    const NodeId n = s.order[k];
    // Written for the start node too: a cycle can bring the walk back to it, and then it is
    // consulted like any other.
    s.key.push_back(leavable[n] ? -3 : -4);
    if (leave[n].any()) {
      s.leave_part.push_back(static_cast<int32_t>(k));
      for (int w = 0; w < 256; w += 32) {
        // 32 bits of the set at a time (bitset has no word access).
        s.leave_part.push_back(static_cast<int32_t>(((leave[n] >> w) & ByteSet(0xffffffffULL)).to_ulong()));
      }
    }
    if (s.node_depth[k] >= depth) {
      s.key.push_back(-2);  // edges out of a node at the horizon are never taken
      continue;
    }
    s.key.push_back(fsm.byte_edge_begin[n + 1] - fsm.byte_edge_begin[n]);
    for (const ByteEdge* e = fsm.byte_edges_begin(n); e != fsm.byte_edges_end(n); ++e) {
      int32_t& number = s.number[e->target];
      if (number < 0) {
        number = static_cast<int32_t>(s.order.size());
        s.order.push_back(e->target);
        s.node_depth.push_back(s.node_depth[k] + 1);
      }
      s.key.push_back((e->lo << 8) | e->hi);
      s.key.push_back(number);
    }
  }
  for (NodeId n : s.order) s.number[n] = -1;
  const size_t key_bytes = s.key.size() * sizeof(int32_t);
  const size_t leave_bytes = s.leave_part.size() * sizeof(int32_t);
  std::string fsm_only;
  fsm_only.reserve(1 + key_bytes);
  fsm_only.push_back('T');
  fsm_only.append(reinterpret_cast<const char*>(s.key.data()), key_bytes);
  std::string with_lookahead;
  with_lookahead.reserve(fsm_only.size() + 1 + leave_bytes);
  with_lookahead = fsm_only;
  with_lookahead.push_back('L');
  with_lookahead.append(reinterpret_cast<const char*>(s.leave_part.data()), leave_bytes);
  return NodeCacheKeys{PoolKey(std::move(fsm_only)), PoolKey(std::move(with_lookahead))};
}

std::shared_ptr<const TokenClassification> MaskCachePool::Find(const PoolKey& key) {
  std::lock_guard<ForkSafeMutex> lock(mutex_);
  auto it = index_.find(IndexKey{key.bytes, key.hash});
  if (it == index_.end()) return nullptr;
  lru_.splice(lru_.begin(), lru_, it->second);
  return it->second->entry;
}

void MaskCachePool::AddRef(const void* object, int64_t bytes) {
  if (refs_[object]++ == 0) bytes_ += bytes;
}

void MaskCachePool::Release(const void* object, int64_t bytes) {
  auto it = refs_.find(object);
  if (--it->second == 0) {
    bytes_ -= bytes;
    refs_.erase(it);
  }
}

void MaskCachePool::Insert(PoolKey key, std::shared_ptr<const TokenClassification> entry) {
  const int64_t own = static_cast<int64_t>(entry->OwnBytes());
  const int64_t accepted = static_cast<int64_t>(entry->accepted->MemoryBytes());
  // A slot is charged and released by the capacity of the key it holds (the one copy; the
  // index refers to it), so bytes() cannot drift with evictions.
  auto slot_bytes = [](const Slot& slot) {
    return static_cast<int64_t>(slot.key.bytes.capacity() + sizeof(Slot) + 4 * sizeof(void*));
  };
  std::lock_guard<ForkSafeMutex> lock(mutex_);
  if (index_.count(IndexKey{key.bytes, key.hash}) ||
      (limit_bytes_ >= 0 &&
       own + accepted + static_cast<int64_t>(key.bytes.size() + sizeof(Slot)) > limit_bytes_)) {
    return;
  }
  lru_.push_front({std::move(key), std::move(entry)});
  index_.emplace(IndexKey{lru_.front().key.bytes, lru_.front().key.hash}, lru_.begin());
  bytes_ += slot_bytes(lru_.front());
  AddRef(lru_.front().entry.get(), own);
  AddRef(lru_.front().entry->accepted.get(), accepted);
  while (limit_bytes_ >= 0 && bytes_ > limit_bytes_ && !lru_.empty()) {
    const Slot& victim = lru_.back();
    bytes_ -= slot_bytes(victim);
    Release(victim.entry.get(), static_cast<int64_t>(victim.entry->OwnBytes()));
    Release(victim.entry->accepted.get(), static_cast<int64_t>(victim.entry->accepted->MemoryBytes()));
    index_.erase(IndexKey{victim.key.bytes, victim.key.hash});
    lru_.pop_back();
  }
}

int64_t MaskCachePool::bytes() const {
  std::lock_guard<ForkSafeMutex> lock(mutex_);
  return bytes_;
}

size_t MaskCachePool::size() const {
  std::lock_guard<ForkSafeMutex> lock(mutex_);
  return lru_.size();
}

void MaskCachePool::Clear() {
  std::lock_guard<ForkSafeMutex> lock(mutex_);
  lru_.clear();
  index_.clear();
  refs_.clear();
  bytes_ = 0;
}

}  // namespace xg2
