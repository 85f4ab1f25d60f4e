// The tables a VocabularyIndex builds on first request: the token sets of UTF-8 regions and
// chains, the tokens outside a region by tail, and the class-prefix tables.
#include <algorithm>
#include <string_view>

#include "matcher/vocabulary_index.h"
#include "tokenizer/utf8_decoder.h"

namespace xg2 {

std::shared_ptr<const TokenIdSet> VocabularyIndex::Utf8RegionTokens(const ByteMask& ascii) const {
  return Utf8ClassTokens(ascii, kAnyCharacterCount);
}

std::shared_ptr<const TokenIdSet> VocabularyIndex::Utf8ChainTokens(const ByteMask& ascii,
                                                                   int32_t max_characters) const {
  if (max_characters < 1) return nullptr;
  if (max_characters <= kMaxUtf8ChainCharacters) return Utf8ClassTokens(ascii, max_characters);
  if (max_characters >= tokenizer_.max_token_bytes()) return Utf8RegionTokens(ascii);
  if (max_characters >= kMaxCountedCharacters) return nullptr;
  std::shared_ptr<const TokenIdSet> region = Utf8RegionTokens(ascii);
  if (!region) return nullptr;
  auto set = std::make_shared<TokenIdSet>(*region);
  for (const auto& [characters, id] : many_character_tokens_) {
    if (characters <= max_characters) break;
    uint32_t& word = set->bits[id >> 5];
    const uint32_t bit = 1u << (id & 31);
    if (word & bit) {
      word &= ~bit;
      --set->count;
    }
  }
  return set;
}

std::shared_ptr<const TokenIdSet> VocabularyIndex::Utf8ClassTokens(const ByteMask& ascii,
                                                                   int32_t max_characters) const {
  const ClassSetKey key{ascii.words[0], ascii.words[1], max_characters};
  const size_t cap = max_characters == kAnyCharacterCount ? kMaxUtf8RegionSets : kMaxUtf8ChainSets;
  auto find = [&]() -> std::pair<bool, std::shared_ptr<const TokenIdSet>> {
    size_t same_kind = 0;
    for (const auto& [k, set] : class_sets_) {
      if (k == key) return {true, set};
      same_kind += (k.max_characters == kAnyCharacterCount) == (max_characters == kAnyCharacterCount) ? 1 : 0;
    }
    return {same_kind >= cap, nullptr};  // (full, none)
  };
  {
    std::lock_guard<ForkSafeMutex> lock(region_mutex_);
    auto [done, set] = find();
    if (done) return set;
  }
  // Built outside the lock (one pass over a table; a fraction of a millisecond); a racing
  // thread's equal copy is dropped.
  const std::vector<int32_t>& sorted = tokenizer_.sorted_text_tokens();
  auto set = std::make_shared<TokenIdSet>();
  set->bits.assign((static_cast<size_t>(tokenizer_.vocab_size()) + 31) / 32, 0);
  const size_t count = sorted.size();
  for (size_t pos = 0; pos < count; ++pos) {
    const auto& bytes = sorted_ascii_bytes_[pos];
    if (!sorted_well_formed_[pos] || ((bytes.first & ~key.ascii_low) | (bytes.second & ~key.ascii_high)) ||
        sorted_characters_[pos] > max_characters) {
      continue;
    }
    const int32_t id = sorted[pos];
    set->bits[id >> 5] |= 1u << (id & 31);
    ++set->count;
  }
  std::lock_guard<ForkSafeMutex> lock(region_mutex_);
  auto [done, existing] = find();
  if (done) return existing;
  class_sets_.emplace_back(key, set);
  return set;
}

std::shared_ptr<const RegionOutsiders> VocabularyIndex::Utf8RegionOutsiders(const ByteMask& ascii) const {
  const ClassSetKey key{ascii.words[0], ascii.words[1], kAnyCharacterCount};
  auto find = [&]() -> std::pair<bool, std::shared_ptr<const RegionOutsiders>> {
    for (const auto& [k, set] : outsider_sets_) {
      if (k == key) return {true, set};
    }
    return {outsider_sets_.size() >= kMaxUtf8RegionSets, nullptr};  // (full, none)
  };
  {
    std::lock_guard<ForkSafeMutex> lock(region_mutex_);
    auto [done, set] = find();
    if (done) return set;
  }
  // Built outside the lock (one pass over the tokens and a sort of the outsiders, a few
  // thousand on the vocabularies we know); a racing thread's equal copy is dropped.
  const std::vector<int32_t>& sorted = tokenizer_.sorted_text_tokens();
  const std::vector<std::string>& decoded = tokenizer_.decoded_tokens();
  std::vector<std::pair<std::string_view, int32_t>> outsiders;  // (tail, position)
  const size_t count = sorted.size();
  for (size_t pos = 0; pos < count; ++pos) {
    const auto& ascii_bytes = sorted_ascii_bytes_[pos];
    if (sorted_well_formed_[pos] && !((ascii_bytes.first & ~key.ascii_low) | (ascii_bytes.second & ~key.ascii_high))) {
      continue;  // in the region set
    }
    const std::string& bytes = decoded[sorted[pos]];
    int8_t state = kUtf8Boundary;
    size_t tail = 0;
    for (size_t i = 0; i < bytes.size(); ++i) {
      const uint8_t byte = static_cast<uint8_t>(bytes[i]);
      const bool outside_set = byte < 0x80 && !((ascii.words[byte >> 6] >> (byte & 63)) & 1);
      const int8_t next = outside_set ? int8_t{-1} : Utf8DecoderStep(state, byte);
      if (next < 0) {
        tail = state == kUtf8Boundary ? i : 0;
        break;
      }
      state = next;
    }
    outsiders.emplace_back(std::string_view(bytes).substr(tail), static_cast<int32_t>(pos));
  }
  std::sort(outsiders.begin(), outsiders.end());
  auto set = std::make_shared<RegionOutsiders>();
  set->positions.reserve(outsiders.size());
  for (size_t i = 0; i < outsiders.size(); ++i) {
    const std::string_view tail = outsiders[i].first;
    if (i == 0 || tail != outsiders[i - 1].first) {
      const std::string_view previous = set->tails.empty() ? std::string_view() : std::string_view(set->tails.back());
      const size_t limit = std::min(previous.size(), tail.size());
      const auto shared = std::mismatch(previous.begin(), previous.begin() + limit, tail.begin()).first - previous.begin();
      set->tail_lcp.push_back(static_cast<int32_t>(shared));
      set->tails.emplace_back(tail);
      set->group_begin.push_back(static_cast<int32_t>(set->positions.size()));
    }
    set->positions.push_back(outsiders[i].second);
  }
  set->group_begin.push_back(static_cast<int32_t>(set->positions.size()));
  std::lock_guard<ForkSafeMutex> lock(region_mutex_);
  auto [done, existing] = find();
  if (done) return existing;
  outsider_sets_.emplace_back(key, set);
  return set;
}

std::shared_ptr<const ClassPrefixes> VocabularyIndex::ClassPrefixTableLocked(const CharacterClass& cls) const {
  for (const auto& [c, table] : prefix_tables_) {
    if (c == cls) return table;
  }
  return nullptr;
}

std::shared_ptr<const ClassPrefixes> VocabularyIndex::FindClassPrefixTable(const CharacterClass& cls,
                                                                           bool* first_request) const {
  if (first_request) *first_request = false;
  std::lock_guard<ForkSafeMutex> lock(region_mutex_);
  if (std::shared_ptr<const ClassPrefixes> table = ClassPrefixTableLocked(cls)) return table;
  if (!first_request || prefix_table_requests_.size() >= kMaxClassTables || prefix_table_bytes_ >= kMaxClassTableBytes ||
      std::find(prefix_table_requests_.begin(), prefix_table_requests_.end(), cls) != prefix_table_requests_.end()) {
    return nullptr;
  }
  prefix_table_requests_.push_back(cls);
  *first_request = true;
  return nullptr;
}

void VocabularyIndex::BuildClassPrefixTable(const CharacterClass& cls) const {
  {
    std::lock_guard<ForkSafeMutex> lock(region_mutex_);
    if (ClassPrefixTableLocked(cls) || prefix_tables_.size() >= kMaxClassTables) return;
  }
  // Built outside the lock; a racing thread's equal copy is dropped.
  const std::vector<int32_t>& sorted = tokenizer_.sorted_text_tokens();
  const std::vector<std::string>& decoded = tokenizer_.decoded_tokens();
  auto in_ascii = [&cls](uint8_t byte) { return byte < 0x80 && ((cls.ascii.words[byte >> 6] >> (byte & 63)) & 1); };
  // The decoder's step inside the language: ASCII class bytes at a boundary, multi-byte
  // characters when the class has them.
  auto step = [&](int8_t state, uint8_t byte) -> int8_t {
    if (state == kUtf8Boundary) {
      if (byte < 0x80) return in_ascii(byte) ? kUtf8Boundary : int8_t{-1};
      return cls.multibyte ? Utf8DecoderStep(state, byte) : int8_t{-1};
    }
    return Utf8DecoderStep(state, byte);
  };
  std::vector<std::pair<uint8_t, ClassPrefixes::Entry>> found;  // (tail's first byte, entry)
  auto table = std::make_shared<ClassPrefixes>();
  // Per depth d of the current path (all in the language): the decoder state after d bytes,
  // whole characters so far, and the depth where the current character started.
  std::vector<int8_t> state(static_cast<size_t>(tokenizer_.max_token_bytes()) + 1, kUtf8Boundary);
  std::vector<int32_t> characters(state.size(), 0), char_start(state.size(), 0);
  for (int first = 0; first < 256; ++first) {
    const int32_t begin = trie_root_child_[first];
    if (begin < 0 || step(kUtf8Boundary, static_cast<uint8_t>(first)) < 0) continue;
    const int32_t end = trie_[begin].subtree_end;
    for (int32_t i = begin; i < end;) {
      const TokenTrieNode& t = trie_[i];
      const int32_t d = t.depth;
      const int8_t from = state[d - 1];
      const int8_t next = step(from, t.byte);
      if (next < 0) {
        const int32_t tail = from == kUtf8Boundary ? d - 1 : char_start[d - 1];
        const std::string& token = decoded[sorted[trie_tokens_[i].token_begin]];
        found.push_back({static_cast<uint8_t>(token[tail]), {i, characters[d - 1], tail}});
        i = t.subtree_end;
        continue;
      }
      state[d] = next;
      characters[d] = characters[d - 1] + (next == kUtf8Boundary ? 1 : 0);
      char_start[d] = from == kUtf8Boundary ? d - 1 : char_start[d - 1];
      const int32_t counted = characters[d] + (next == kUtf8Boundary ? 0 : 1);
      for (int32_t p = trie_tokens_[i].token_begin; p < trie_tokens_[i].exact_end; ++p) {
        table->members.push_back({counted, sorted[p]});
      }
      ++i;
    }
  }
  std::stable_sort(table->members.begin(), table->members.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  table->all_members.bits.assign((static_cast<size_t>(tokenizer_.vocab_size()) + 31) / 32, 0);
  for (const auto& [count, id] : table->members) table->all_members.bits[id >> 5] |= 1u << (id & 31);
  table->all_members.count = static_cast<int64_t>(table->members.size());
  std::stable_sort(found.begin(), found.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  table->entries.reserve(found.size());
  size_t k = 0;
  for (int b = 0; b < 256; ++b) {
    table->first_byte_begin[b] = static_cast<int32_t>(table->entries.size());
    for (; k < found.size() && found[k].first == b; ++k) table->entries.push_back(found[k].second);
  }
  table->first_byte_begin[256] = static_cast<int32_t>(table->entries.size());
  std::lock_guard<ForkSafeMutex> lock(region_mutex_);
  if (ClassPrefixTableLocked(cls) || prefix_tables_.size() >= kMaxClassTables) return;
  prefix_table_bytes_ += table->MemoryBytes();
  prefix_tables_.emplace_back(cls, table);
}

}  // namespace xg2
