// The vocabularies derived for grammars that name tokens with Token(id) or use token sets
// (tokenizer/token_literals.h), one per set of ids, each with its own cross-grammar pool: the
// base pool's classifications belong to the base vocabulary, and grammars naming the same
// tokens (every Harmony tool set) share the derived one. One table per Python GrammarCompiler,
// whose cache charges each vocabulary once and evicts it with the grammars that hold it.
//
// Thread-safe and fork-safe: every table is guarded by one process-wide mutex, held only for
// a lookup or an update (never while a vocabulary is derived) and taken across fork(), so a
// child of fork() never inherits it locked or a table half updated. Invariant: at most one
// vocabulary per set of ids is ever stored, so every grammar naming those ids shares it (two
// compiles deriving the same ids at once both use the one stored first).
#ifndef XG2_COMPILER_DERIVED_VOCABULARIES_H_
#define XG2_COMPILER_DERIVED_VOCABULARIES_H_

#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "matcher/token_mask_cache.h"
#include "tokenizer/tokenizer_info.h"

namespace xg2 {

struct DerivedVocabulary {
  std::shared_ptr<const TokenizerInfo> vocabulary;
  std::shared_ptr<MaskCachePool> pool;  // null when the compiler shares no classifications
};

// The vocabulary derived from `base` for `ids` (sorted, unique), not cached; its pool has the
// limit of `base_pool` (none when `base_pool` is null).
DerivedVocabulary DeriveVocabulary(const TokenizerInfo& base, const std::vector<int32_t>& ids,
                                   const MaskCachePool* base_pool);

class DerivedVocabularies {
 public:
  using Ids = std::vector<int32_t>;

  // The stored vocabulary for `ids`, derived (outside the lock) and stored when absent.
  DerivedVocabulary FindOrDerive(const TokenizerInfo& base, const Ids& ids, const MaskCachePool* base_pool);

  std::optional<DerivedVocabulary> Find(const Ids& ids) const;
  // The ids whose stored vocabulary is `vocabulary`, if any.
  std::optional<Ids> IdsOf(const TokenizerInfo* vocabulary) const;
  // Every entry, oldest stored first.
  std::vector<std::pair<Ids, DerivedVocabulary>> Entries() const;
  size_t size() const;
  bool Remove(const Ids& ids);
  // Removes the oldest stored entry; false when empty.
  bool RemoveOldest();
  void Clear();

 private:
  using Entry = std::pair<Ids, DerivedVocabulary>;
  std::list<Entry> entries_;  // oldest first
  std::map<Ids, std::list<Entry>::iterator> index_;
};

}  // namespace xg2

#endif  // XG2_COMPILER_DERIVED_VOCABULARIES_H_
