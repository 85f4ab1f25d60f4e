// GrammarMaskCache's export and import of built classifications (token_mask_cache.h), used
// by matcher/grammar_serialization.cc to carry a grammar's classifications in its blob.
#include <unordered_map>

#include "matcher/token_mask_cache.h"
#include "support/error.h"

namespace xg2 {

std::vector<std::pair<NodeId, std::shared_ptr<const TokenClassification>>> GrammarMaskCache::ExportBuilt() const {
  std::lock_guard<ForkSafeMutex> lock(mutex_);
  // Slots hold raw pointers; the owning pointers are in owned_ (in build order).
  std::unordered_map<const TokenClassification*, std::shared_ptr<const TokenClassification>> owner;
  owner.reserve(owned_.size());
  for (const auto& entry : owned_) owner.emplace(entry.get(), entry);
  std::vector<std::pair<NodeId, std::shared_ptr<const TokenClassification>>> out;
  out.reserve(owned_.size());
  const NodeTables& t = *table_versions_.back();
  for (NodeId n = 0; n < t.fsm->num_nodes(); ++n) {
    const TokenClassification* built = t.slots[n].load(std::memory_order_acquire);
    if (built) out.emplace_back(n, owner.at(built));
  }
  return out;
}

void GrammarMaskCache::ImportBuilt(NodeId node, std::shared_ptr<const TokenClassification> entry) {
  if (node < 0 || node >= fsm().num_nodes() || !entry || !entry->accepted) {
    throw InvalidArgumentError("ImportBuilt: node " + std::to_string(node) + " outside the grammar or no entry");
  }
  std::lock_guard<ForkSafeMutex> lock(mutex_);
  Slot& slot = slots_.load(std::memory_order_relaxed)[node];
  if (slot.load(std::memory_order_acquire)) return;
  owned_.push_back(entry);
  slot.store(entry.get(), std::memory_order_release);
  built_.fetch_add(1);
}

}  // namespace xg2
