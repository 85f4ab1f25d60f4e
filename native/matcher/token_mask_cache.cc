#include "matcher/token_mask_cache.h"

#include <algorithm>
#include <climits>
#include <thread>

namespace xg2 {

TokenClassification ClassifyTokens(const GrammarFsm& fsm, const std::vector<ByteSet>& leave,
                                   NodeId node, const TokenizerInfo& tokenizer) {
  const std::vector<int32_t>& sorted = tokenizer.sorted_text_tokens();
  const std::vector<int32_t>& lcp = tokenizer.lcp();
  const std::vector<std::string>& decoded = tokenizer.decoded_tokens();
  const int32_t max_bytes = tokenizer.max_token_bytes();

  // path[d]: the DFA node after d bytes of the current token. left[d]: whether the parser
  // could have left the rule before byte d with that byte next (at some node path[j],
  // 1 <= j < d, with byte j in leave[path[j]]). Leaving at path[0] needs no check: the
  // parser's closure has already put the resulting items (resumed callers, predicted
  // callees) into the same set, where they are classified in their own right.
  // Invariant: `depth` bytes of the previous token were consumed; if it was longer, its next
  // byte had no edge, and `previous_uncertain` records how that failure was classified.
  std::vector<NodeId> path(max_bytes + 1);
  std::vector<uint8_t> left(max_bytes + 1);
  path[0] = node;
  left[0] = 0;
  int32_t depth = 0;
  bool previous_uncertain = false;

  TokenClassification result;
  std::vector<int32_t> accepted;
  for (size_t i = 0; i < sorted.size(); ++i) {
    const std::string& bytes = decoded[sorted[i]];
    const int32_t size = static_cast<int32_t>(bytes.size());
    bool uncertain = previous_uncertain;  // used when the token shares the failing byte
    if (lcp[i] <= depth) {
      depth = lcp[i];
      uncertain = false;
      while (depth < size) {
        const uint8_t byte = static_cast<uint8_t>(bytes[depth]);
        const bool can_leave = depth > 0 && leave[path[depth]].test(byte);
        NodeId next = fsm.StepByte(path[depth], byte);
        if (next < 0) {
          uncertain = left[depth] || can_leave;
          break;
        }
        path[depth + 1] = next;
        left[depth + 1] = left[depth] || can_leave;
        ++depth;
      }
    }
    previous_uncertain = uncertain;
    if (depth == size) {
      accepted.push_back(sorted[i]);
    } else if (uncertain) {
      result.uncertain_positions.push_back(static_cast<int32_t>(i));
    }
  }

  const size_t words = (static_cast<size_t>(tokenizer.vocab_size()) + 31) / 32;
  if (accepted.size() > words) {
    result.accepted_bits.assign(words, 0);
    for (int32_t id : accepted) result.accepted_bits[id >> 5] |= 1u << (id & 31);
  } else {
    std::sort(accepted.begin(), accepted.end());
    result.accepted_ids = std::move(accepted);
  }
  result.uncertain_lcp.assign(result.uncertain_positions.size(), 0);
  for (size_t k = 1; k < result.uncertain_positions.size(); ++k) {
    int32_t shared = INT32_MAX;
    for (int32_t j = result.uncertain_positions[k - 1] + 1; j <= result.uncertain_positions[k]; ++j) {
      shared = std::min(shared, lcp[j]);
    }
    result.uncertain_lcp[k] = shared;
  }
  result.accepted_bits.shrink_to_fit();
  result.accepted_ids.shrink_to_fit();
  result.uncertain_positions.shrink_to_fit();
  return result;
}

std::string CanonicalSubFsmKey(const GrammarFsm& fsm, const std::vector<ByteSet>& leave,
                               NodeId node, int32_t depth) {
  // Breadth-first numbering from `node`; nodes first seen beyond `depth` bytes are written
  // as a single "beyond" marker: a token never reaches them, so their details do not matter.
  std::unordered_map<NodeId, int32_t> ids;
  std::vector<NodeId> order{node};
  std::vector<int32_t> node_depth{0};
  ids.emplace(node, 0);
  std::string key;
  auto put = [&key](int32_t v) { key.append(reinterpret_cast<const char*>(&v), sizeof v); };
  for (size_t k = 0; k < order.size(); ++k) {
    NodeId n = order[k];
    // Written for the start node too: a cycle can bring the walk back to it, and then its
    // leave set is consulted like any other.
    if (leave[n].any()) {
      put(-3);
      for (int w = 0; w < 256; w += 32) {
        uint32_t bits = 0;
        for (int b = 0; b < 32; ++b) bits |= static_cast<uint32_t>(leave[n].test(w + b)) << b;
        put(static_cast<int32_t>(bits));
      }
    }
    if (node_depth[k] >= depth) {
      put(-2);  // edges out of a node at the horizon are never taken
      continue;
    }
    put(fsm.byte_edge_begin[n + 1] - fsm.byte_edge_begin[n]);
    for (const ByteEdge* e = fsm.byte_edges_begin(n); e != fsm.byte_edges_end(n); ++e) {
      auto [it, inserted] = ids.emplace(e->target, static_cast<int32_t>(order.size()));
      if (inserted) {
        order.push_back(e->target);
        node_depth.push_back(node_depth[k] + 1);
      }
      put((e->lo << 8) | e->hi);
      put(it->second);
    }
  }
  return key;
}

std::shared_ptr<const TokenClassification> MaskCachePool::Find(const std::string& key) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = index_.find(key);
  if (it == index_.end()) {
    misses_.fetch_add(1);
    return nullptr;
  }
  hits_.fetch_add(1);
  lru_.splice(lru_.begin(), lru_, it->second);
  return it->second->entry;
}

void MaskCachePool::Insert(const std::string& key, std::shared_ptr<const TokenClassification> entry) {
  int64_t size = static_cast<int64_t>(entry->MemoryBytes() + key.capacity() + sizeof(Slot));
  std::lock_guard<std::mutex> lock(mutex_);
  if (index_.count(key) || (limit_bytes_ >= 0 && size > limit_bytes_)) return;
  lru_.push_front({key, std::move(entry), size});
  index_.emplace(key, lru_.begin());
  bytes_ += size;
  while (limit_bytes_ >= 0 && bytes_ > limit_bytes_ && !lru_.empty()) {
    bytes_ -= lru_.back().bytes;
    index_.erase(lru_.back().key);
    lru_.pop_back();
  }
}

int64_t MaskCachePool::bytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return bytes_;
}

size_t MaskCachePool::size() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return lru_.size();
}

void MaskCachePool::Clear() {
  std::lock_guard<std::mutex> lock(mutex_);
  lru_.clear();
  index_.clear();
  bytes_ = 0;
}

GrammarMaskCache::GrammarMaskCache(std::shared_ptr<const GrammarFsm> fsm,
                                   std::shared_ptr<const TokenizerInfo> tokenizer,
                                   std::shared_ptr<MaskCachePool> pool, MaskCacheOptions options)
    : fsm_(std::move(fsm)),
      tokenizer_(std::move(tokenizer)),
      pool_(std::move(pool)),
      options_(options),
      leave_(ComputeLeaveBytes(*fsm_)),
      slots_(new std::atomic<const TokenClassification*>[fsm_->num_nodes()]) {
  for (int32_t i = 0; i < fsm_->num_nodes(); ++i) slots_[i].store(nullptr, std::memory_order_relaxed);
}

const TokenClassification& GrammarMaskCache::Get(NodeId node) {
  if (const TokenClassification* hit = slots_[node].load(std::memory_order_acquire)) return *hit;
  // Built outside the lock: two threads may race to build the same node; the first to
  // publish wins and both results are identical.
  std::shared_ptr<const TokenClassification> entry;
  std::string key;
  if (pool_ && options_.cross_grammar) {
    key = CanonicalSubFsmKey(*fsm_, leave_, node, tokenizer_->max_token_bytes());
    entry = pool_->Find(key);
  }
  if (!entry) {
    entry = std::make_shared<const TokenClassification>(ClassifyTokens(*fsm_, leave_, node, *tokenizer_));
    if (pool_ && options_.cross_grammar) pool_->Insert(key, entry);
  }
  std::lock_guard<std::mutex> lock(mutex_);
  if (const TokenClassification* raced = slots_[node].load(std::memory_order_acquire)) return *raced;
  owned_.push_back(entry);
  slots_[node].store(entry.get(), std::memory_order_release);
  built_.fetch_add(1);
  return *entry;
}

void GrammarMaskCache::StartPrecompute(const std::shared_ptr<GrammarMaskCache>& cache) {
  const MaskCacheOptions& options = cache->options_;
  if (!options.enabled || options.precompute == 0) return;
  const GrammarFsm& fsm = *cache->fsm_;
  // Estimated cost of classifying a node: how many tokens start with a byte it accepts
  // (the others fail on their first byte at no cost).
  std::vector<int64_t> first_byte_tokens(256, 0);
  for (int32_t id : cache->tokenizer_->sorted_text_tokens()) {
    ++first_byte_tokens[static_cast<uint8_t>(cache->tokenizer_->decoded_tokens()[id][0])];
  }
  std::vector<std::pair<int64_t, NodeId>> costs;
  for (NodeId n = 0; n < fsm.num_nodes(); ++n) {
    if (fsm.node_rule[n] < 0) continue;  // lookahead DFA nodes are never items
    int64_t cost = 0;
    for (const ByteEdge* e = fsm.byte_edges_begin(n); e != fsm.byte_edges_end(n); ++e) {
      for (int b = e->lo; b <= e->hi; ++b) cost += first_byte_tokens[b];
    }
    if (cost > 0) costs.emplace_back(cost, n);
  }
  std::sort(costs.begin(), costs.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  if (options.precompute < 0) {
    for (const auto& [cost, node] : costs) cache->Get(node);
    return;
  }
  costs.resize(std::min<size_t>(costs.size(), options.precompute));
  std::thread([cache, costs]() {
    for (const auto& [cost, node] : costs) cache->Get(node);
  }).detach();
}

size_t GrammarMaskCache::MemoryBytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  size_t bytes = sizeof(*this) + sizeof(void*) * fsm_->num_nodes();
  for (const auto& e : owned_) bytes += e->MemoryBytes();
  return bytes;
}

}  // namespace xg2
