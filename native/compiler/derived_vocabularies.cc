#include "compiler/derived_vocabularies.h"

#include <mutex>

#include "matcher/vocabulary_index.h"
#include "support/fork_safe_mutex.h"
#include "tokenizer/token_literals.h"

namespace xg2 {
namespace {

ForkSafeMutex& TablesMutex() {
  // Leaked on purpose: compile threads may still use a table while statics are destroyed.
  static ForkSafeMutex* mutex = new ForkSafeMutex();
  return *mutex;
}

}  // namespace

DerivedVocabulary DeriveVocabulary(const TokenizerInfo& base, const std::vector<int32_t>& ids,
                                   const MaskCachePool* base_pool) {
  DerivedVocabulary derived;
  derived.vocabulary = WithTokenLiterals(base, ids);
  VocabularyIndex::Of(*derived.vocabulary);  // built outside the tables' lock
  if (base_pool != nullptr) derived.pool = std::make_shared<MaskCachePool>(base_pool->limit_bytes());
  return derived;
}

DerivedVocabulary DerivedVocabularies::FindOrDerive(const TokenizerInfo& base, const Ids& ids,
                                                    const MaskCachePool* base_pool) {
  if (std::optional<DerivedVocabulary> found = Find(ids)) return *found;
  DerivedVocabulary derived = DeriveVocabulary(base, ids, base_pool);
  std::lock_guard<ForkSafeMutex> lock(TablesMutex());
  auto it = index_.find(ids);
  if (it != index_.end()) return it->second->second;
  entries_.emplace_back(ids, derived);
  index_.emplace(ids, std::prev(entries_.end()));
  return derived;
}

std::optional<DerivedVocabulary> DerivedVocabularies::Find(const Ids& ids) const {
  std::lock_guard<ForkSafeMutex> lock(TablesMutex());
  auto it = index_.find(ids);
  if (it == index_.end()) return std::nullopt;
  return it->second->second;
}

std::optional<DerivedVocabularies::Ids> DerivedVocabularies::IdsOf(const TokenizerInfo* vocabulary) const {
  std::lock_guard<ForkSafeMutex> lock(TablesMutex());
  for (const Entry& entry : entries_) {
    if (entry.second.vocabulary.get() == vocabulary) return entry.first;
  }
  return std::nullopt;
}

std::vector<std::pair<DerivedVocabularies::Ids, DerivedVocabulary>> DerivedVocabularies::Entries() const {
  std::lock_guard<ForkSafeMutex> lock(TablesMutex());
  return {entries_.begin(), entries_.end()};
}

size_t DerivedVocabularies::size() const {
  std::lock_guard<ForkSafeMutex> lock(TablesMutex());
  return entries_.size();
}

bool DerivedVocabularies::Remove(const Ids& ids) {
  std::list<Entry> removed;  // destroyed after the lock is released
  std::lock_guard<ForkSafeMutex> lock(TablesMutex());
  auto it = index_.find(ids);
  if (it == index_.end()) return false;
  removed.splice(removed.end(), entries_, it->second);
  index_.erase(it);
  return true;
}

bool DerivedVocabularies::RemoveOldest() {
  std::list<Entry> removed;  // destroyed after the lock is released
  std::lock_guard<ForkSafeMutex> lock(TablesMutex());
  if (entries_.empty()) return false;
  index_.erase(entries_.front().first);
  removed.splice(removed.end(), entries_, entries_.begin());
  return true;
}

void DerivedVocabularies::Clear() {
  std::list<Entry> removed;  // destroyed after the lock is released
  std::lock_guard<ForkSafeMutex> lock(TablesMutex());
  index_.clear();
  removed.swap(entries_);
}

}  // namespace xg2
