#include "frontends/ebnf/parsed_body_cache.h"

#include <algorithm>
#include <utility>

namespace xg2 {

namespace {

// Full-text hashes of spans offered once, kept for admission; the oldest are forgotten.
constexpr size_t kMaxOfferedOnce = 4096;

size_t NodeHeapBytes(const ExprNode& node) {
  size_t bytes = node.ranges.capacity() * sizeof(CodepointRange);
  if (node.bytes.size() > 15) bytes += node.bytes.capacity();
  if (node.children.size() > 4) bytes += node.children.size() * sizeof(ExprId);
  return bytes;
}

}  // namespace

ParsedBodyCache& ParsedBodyCache::Instance() {
  static ParsedBodyCache* cache = new ParsedBodyCache();  // never destroyed: used at exit
  return *cache;
}

uint64_t ParsedBodyCache::PrefixHash(std::string_view text) {
  return std::hash<std::string_view>()(text.substr(0, kPrefixBytes));
}

bool ParsedBodyCache::MayHold(uint64_t prefix_hash) const {
  const size_t bit = prefix_hash % kFilterBits;
  return (filter_[bit / 64].load(std::memory_order_acquire) >> (bit % 64)) & 1;
}

std::vector<std::shared_ptr<const ParsedBody>> ParsedBodyCache::EntriesStarting(std::string_view rest) {
  std::vector<std::shared_ptr<const ParsedBody>> entries;
  if (rest.size() < kMinBodyBytes) return entries;
  const uint64_t prefix_hash = PrefixHash(rest);
  if (!MayHold(prefix_hash)) return entries;
  std::lock_guard<ForkSafeMutex> lock(mutex_);
  auto it = by_prefix_.find(prefix_hash);
  if (it == by_prefix_.end()) return entries;
  for (const auto& entry : it->second) {
    if (rest.size() >= entry->text.size() && rest.compare(0, entry->text.size(), entry->text) == 0) {
      entries.push_back(entry);
    }
  }
  return entries;
}

void ParsedBodyCache::CountHit() {
  std::lock_guard<ForkSafeMutex> lock(mutex_);
  ++hits_;
}

bool ParsedBodyCache::Admit(std::string_view text) {
  const uint64_t full_hash = std::hash<std::string_view>()(text);
  std::lock_guard<ForkSafeMutex> lock(mutex_);
  if (offered_once_.count(full_hash) != 0) return true;
  offered_once_.insert(full_hash);
  offered_order_.push_back(full_hash);
  if (offered_order_.size() > kMaxOfferedOnce) {
    offered_once_.erase(offered_order_.front());
    offered_order_.pop_front();
  }
  return false;
}

void ParsedBodyCache::Store(std::shared_ptr<const ParsedBody> entry) {
  if (entry->bytes > kMaxBytes / 4) return;
  const uint64_t prefix_hash = PrefixHash(entry->text);
  std::lock_guard<ForkSafeMutex> lock(mutex_);
  std::vector<std::shared_ptr<const ParsedBody>>& bucket = by_prefix_[prefix_hash];
  for (const auto& held : bucket) {
    if (held->text == entry->text) return;  // another thread stored it first
  }
  bucket.push_back(entry);
  order_.push_back(entry);
  bytes_ += entry->bytes;
  ++stores_;
  const size_t bit = prefix_hash % kFilterBits;
  filter_[bit / 64].fetch_or(uint64_t{1} << (bit % 64), std::memory_order_release);
  bool evicted = false;
  while (bytes_ > kMaxBytes && !order_.empty()) {
    const std::shared_ptr<const ParsedBody> oldest = std::move(order_.front());
    order_.pop_front();
    auto it = by_prefix_.find(PrefixHash(oldest->text));
    std::vector<std::shared_ptr<const ParsedBody>>& held = it->second;
    held.erase(std::find(held.begin(), held.end(), oldest));
    if (held.empty()) by_prefix_.erase(it);
    bytes_ -= oldest->bytes;
    ++evictions_;
    evicted = true;
  }
  if (evicted) RebuildFilterLocked();
}

// Clears the bits of buckets that eviction emptied. A lookup racing with this may miss an
// entry it would have found, never find one that is not there (Find checks under the lock).
void ParsedBodyCache::RebuildFilterLocked() {
  std::array<uint64_t, kFilterBits / 64> bits{};
  for (const auto& bucket : by_prefix_) {
    const size_t bit = bucket.first % kFilterBits;
    bits[bit / 64] |= uint64_t{1} << (bit % 64);
  }
  for (size_t i = 0; i < bits.size(); ++i) filter_[i].store(bits[i], std::memory_order_release);
}

ParsedBodyCacheStats ParsedBodyCache::Stats() {
  std::lock_guard<ForkSafeMutex> lock(mutex_);
  ParsedBodyCacheStats stats;
  stats.entries = order_.size();
  stats.bytes = bytes_;
  stats.limit_bytes = kMaxBytes;
  stats.hits = hits_;
  stats.stores = stores_;
  stats.evictions = evictions_;
  return stats;
}

size_t ParsedBodyBytes(const ParsedBody& body) {
  size_t bytes = sizeof(ParsedBody) + body.text.capacity() + body.nodes.capacity() * sizeof(ExprNode) +
                 body.heights.capacity() * sizeof(int) + body.refs.capacity() * sizeof(ParsedBody::RuleRef);
  for (const ExprNode& node : body.nodes) bytes += NodeHeapBytes(node);
  for (const std::string& name : body.names) bytes += sizeof(std::string) + name.capacity();
  return bytes;
}

}  // namespace xg2
