#include "tokenizer/tokenizer_info.h"

#include <algorithm>
#include <cstdint>
#include <string_view>

#include "support/dcheck.h"
#include "support/error.h"
#include "tokenizer/utf8_decoder.h"

namespace xg2 {

TokenizerInfo::TokenizerInfo(std::vector<std::string> decoded_tokens, VocabType vocab_type,
                             int32_t vocab_size, std::vector<int32_t> stop_token_ids,
                             std::vector<int32_t> special_token_ids, bool add_prefix_space)
    : decoded_tokens_(std::move(decoded_tokens)),
      vocab_type_(vocab_type),
      vocab_size_(vocab_size),
      stop_token_ids_(std::move(stop_token_ids)),
      special_token_ids_(std::move(special_token_ids)),
      add_prefix_space_(add_prefix_space) {
  // Checked before any per-id table is allocated.
  if (vocab_size_ < 1 || vocab_size_ > kMaxVocabSize) {
    throw InvalidArgumentError("vocab_size must be in [1, " + std::to_string(kMaxVocabSize) + "], got " +
                               std::to_string(vocab_size_));
  }
  if (vocab_size_ < static_cast<int32_t>(decoded_tokens_.size())) {
    throw InvalidArgumentError("vocab_size " + std::to_string(vocab_size_) +
                               " is smaller than the tokenizer's vocabulary (" +
                               std::to_string(decoded_tokens_.size()) + " tokens)");
  }
  auto check_id = [&](int32_t id, const char* what) {
    if (id < 0 || id >= vocab_size_) {
      throw InvalidArgumentError(std::string(what) + " id " + std::to_string(id) +
                                 " is outside the vocabulary [0, " + std::to_string(vocab_size_) +
                                 ")");
    }
  };
  is_text_.assign(vocab_size_, 0);
  is_stop_.assign(vocab_size_, 0);
  for (size_t i = 0; i < decoded_tokens_.size(); ++i) is_text_[i] = !decoded_tokens_[i].empty();
  for (int32_t id : special_token_ids_) {
    check_id(id, "special token");
    is_text_[id] = 0;
  }
  for (int32_t id : stop_token_ids_) {
    check_id(id, "stop token");
    is_text_[id] = 0;
    is_stop_[id] = 1;
  }
  for (int32_t id = 0; id < static_cast<int32_t>(decoded_tokens_.size()); ++id) {
    if (is_text_[id]) sorted_text_tokens_.push_back(id);
  }
  std::sort(sorted_text_tokens_.begin(), sorted_text_tokens_.end(), [&](int32_t a, int32_t b) {
    const std::string& sa = decoded_tokens_[a];
    const std::string& sb = decoded_tokens_[b];
    return sa != sb ? sa < sb : a < b;
  });
  for (int32_t id : sorted_text_tokens_) {
    max_token_bytes_ = std::max(max_token_bytes_, static_cast<int32_t>(decoded_tokens_[id].size()));
  }
  sorted_token_offsets_.reserve(sorted_text_tokens_.size() + 1);
  sorted_token_offsets_.push_back(0);
  for (int32_t id : sorted_text_tokens_) {
    const std::string& token = decoded_tokens_[id];
    if (sorted_token_bytes_.size() + token.size() > static_cast<size_t>(INT32_MAX)) {
      throw InvalidArgumentError("the vocabulary's text tokens exceed 2 GiB in total");
    }
    sorted_token_bytes_ += token;
    sorted_token_offsets_.push_back(static_cast<int32_t>(sorted_token_bytes_.size()));
  }
  XG2_DCHECK_INVARIANTS(CheckSortedTokenBytes());
  lcp_.assign(sorted_text_tokens_.size(), 0);
  for (size_t i = 1; i < sorted_text_tokens_.size(); ++i) {
    const std::string& prev = decoded_tokens_[sorted_text_tokens_[i - 1]];
    const std::string& cur = decoded_tokens_[sorted_text_tokens_[i]];
    size_t n = std::min(prev.size(), cur.size());
    size_t k = 0;
    while (k < n && prev[k] == cur[k]) ++k;
    lcp_[i] = static_cast<int32_t>(k);
  }
  if (max_token_bytes_ > UINT16_MAX) {
    throw InvalidArgumentError("a token is longer than " + std::to_string(UINT16_MAX) + " bytes");
  }
  BuildTrie();
}

const SpecialTokenText& TokenizerInfo::special_token_text() const {
  std::call_once(special_token_text_once_, [this] {
    special_token_text_ = std::make_unique<const SpecialTokenText>(decoded_tokens_, special_token_ids_);
  });
  return *special_token_text_;
}

void TokenizerInfo::BuildTrie() {
  // open[d - 1]: the node of depth d on the path to the current token, with below[d - 1] the
  // bytes seen below it so far. A token with common prefix `shared` with the previous one
  // closes the open nodes deeper than `shared` and opens one node per remaining byte.
  std::vector<int32_t> open;
  std::vector<ByteMask> below;
  std::vector<uint16_t> longest;  // longest[d - 1]: longest token seen so far below open[d - 1]
  std::vector<int8_t> prefix_state;  // prefix_state[d - 1]: UTF-8 decoder state after open[d - 1]
  const int32_t count = static_cast<int32_t>(sorted_text_tokens_.size());
  // malformed_before[p]: tokens at sorted positions < p that are not well-formed UTF-8
  // prefixes (a subtree is well-formed when its range holds none).
  std::vector<int32_t> malformed_before(count + 1, 0);
  sorted_ascii_bytes_.assign(count, {0, 0});
  sorted_well_formed_.assign(count, 0);
  sorted_characters_.assign(count, 0);
  for (int32_t pos = 0; pos < count; ++pos) {
    int8_t state = kUtf8Boundary;
    auto& ascii = sorted_ascii_bytes_[pos];
    int32_t characters = 0;
    for (char c : decoded_tokens_[sorted_text_tokens_[pos]]) {
      const uint8_t byte = static_cast<uint8_t>(c);
      if (byte < 64) ascii.first |= uint64_t{1} << byte;
      else if (byte < 128) ascii.second |= uint64_t{1} << (byte - 64);
      characters += state == kUtf8Boundary ? 1 : 0;
      state = Utf8DecoderStep(state, byte);
      if (state < 0) break;
    }
    sorted_well_formed_[pos] = state >= 0;
    sorted_characters_[pos] = static_cast<uint8_t>(std::min(characters, 255));
    malformed_before[pos + 1] = malformed_before[pos] + (state < 0 ? 1 : 0);
  }
  auto close_deeper_than = [&](size_t depth, int32_t position) {
    while (open.size() > depth) {
      TokenTrieNode& node = trie_[open.back()];
      TokenTrieTokens& tokens = trie_tokens_[open.back()];
      node.subtree_end = static_cast<int32_t>(trie_.size());
      tokens.token_end = position;
      const bool well_formed = prefix_state.back() >= 0 &&
                               malformed_before[tokens.token_end] == malformed_before[tokens.token_begin];
      node.utf8_state = well_formed ? static_cast<uint8_t>(prefix_state.back()) : kUtf8Malformed;
      if (tokens.token_end - tokens.token_begin >= kTrieSuffixBytesMinTokens) {
        tokens.suffix_bytes = static_cast<int32_t>(trie_suffix_bytes_.size());
        trie_suffix_bytes_.push_back(below.back());
        trie_suffix_max_length_.push_back(longest.back());
      }
      ByteMask mine = below.back();
      mine.Set(node.byte);
      const uint16_t my_longest = longest.back();
      open.pop_back();
      prefix_state.pop_back();
      below.pop_back();
      longest.pop_back();
      if (!below.empty()) {
        below.back() |= mine;
        longest.back() = std::max(longest.back(), my_longest);
      }
    }
  };
  for (int32_t pos = 0; pos < count; ++pos) {
    const std::string& bytes = decoded_tokens_[sorted_text_tokens_[pos]];
    close_deeper_than(static_cast<size_t>(lcp_[pos]), pos);
    for (size_t d = open.size(); d < bytes.size(); ++d) {
      open.push_back(static_cast<int32_t>(trie_.size()));
      below.emplace_back();
      longest.push_back(0);
      const int8_t parent_state = d == 0 ? kUtf8Boundary : prefix_state.back();
      prefix_state.push_back(parent_state < 0 ? -1 : Utf8DecoderStep(parent_state, static_cast<uint8_t>(bytes[d])));
      trie_.push_back({-1, static_cast<uint16_t>(d + 1), static_cast<uint8_t>(bytes[d]), kUtf8Malformed});
      trie_tokens_.push_back({pos, pos, -1, -1});
    }
    // Sorted order puts a token before every longer token it prefixes, and duplicates next
    // to each other, so the exact range of the deepest open node grows by one here.
    trie_tokens_[open.back()].exact_end = pos + 1;
    longest.back() = std::max(longest.back(), static_cast<uint16_t>(bytes.size()));
  }
  close_deeper_than(0, count);
  trie_root_child_.fill(-1);
  for (size_t i = 0; i < trie_.size(); i = static_cast<size_t>(trie_[i].subtree_end)) {
    trie_root_child_[trie_[i].byte] = static_cast<int32_t>(i);
  }
  // Child lists (a node's children are i + 1 and then each one's subtree end). Only nodes
  // with a suffix_bytes entry can have enough children, and TrieChild packs 24-bit indices.
  trie_child_begin_.assign(trie_suffix_bytes_.size() + 1, 0);
  if (trie_.size() < (size_t{1} << 24)) {
    std::vector<int32_t> list_of(trie_suffix_bytes_.size(), -1);
    std::vector<std::vector<TrieChild>> lists;
    for (int32_t i = 0; i < static_cast<int32_t>(trie_.size()); ++i) {
      const int32_t k = trie_tokens_[i].suffix_bytes;
      if (k < 0) continue;
      int32_t children = 0;
      for (int32_t c = i + 1; c < trie_[i].subtree_end; c = trie_[c].subtree_end) ++children;
      if (children < kTrieChildListMinChildren) continue;
      list_of[k] = static_cast<int32_t>(lists.size());
      lists.emplace_back();
      for (int32_t c = i + 1; c < trie_[i].subtree_end; c = trie_[c].subtree_end) {
        lists.back().push_back({static_cast<uint32_t>(c) << 8 | trie_[c].byte});
      }
    }
    for (size_t k = 0; k < list_of.size(); ++k) {
      trie_child_begin_[k] = static_cast<int32_t>(trie_children_.size());
      if (list_of[k] >= 0) {
        const std::vector<TrieChild>& list = lists[static_cast<size_t>(list_of[k])];
        trie_children_.insert(trie_children_.end(), list.begin(), list.end());
      }
    }
    trie_child_begin_.back() = static_cast<int32_t>(trie_children_.size());
  }
  trie_.shrink_to_fit();
  trie_tokens_.shrink_to_fit();
  trie_suffix_bytes_.shrink_to_fit();
  trie_suffix_max_length_.shrink_to_fit();
}

std::shared_ptr<const TokenIdSet> TokenizerInfo::Utf8RegionTokens(const ByteMask& ascii) const {
  return Utf8ClassTokens(ascii, kAnyCharacterCount);
}

std::shared_ptr<const TokenIdSet> TokenizerInfo::Utf8ChainTokens(const ByteMask& ascii, int32_t max_characters) const {
  if (max_characters < 1 || max_characters > kMaxUtf8ChainCharacters) return nullptr;
  return Utf8ClassTokens(ascii, max_characters);
}

std::shared_ptr<const TokenIdSet> TokenizerInfo::Utf8ClassTokens(const ByteMask& ascii, int32_t max_characters) const {
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
  auto set = std::make_shared<TokenIdSet>();
  set->bits.assign((static_cast<size_t>(vocab_size_) + 31) / 32, 0);
  const size_t count = sorted_text_tokens_.size();
  for (size_t pos = 0; pos < count; ++pos) {
    const auto& bytes = sorted_ascii_bytes_[pos];
    if (!sorted_well_formed_[pos] || ((bytes.first & ~key.ascii_low) | (bytes.second & ~key.ascii_high)) ||
        sorted_characters_[pos] > max_characters) {
      continue;
    }
    const int32_t id = sorted_text_tokens_[pos];
    set->bits[id >> 5] |= 1u << (id & 31);
    ++set->count;
  }
  std::lock_guard<ForkSafeMutex> lock(region_mutex_);
  auto [done, existing] = find();
  if (done) return existing;
  class_sets_.emplace_back(key, set);
  return set;
}

std::shared_ptr<const ClassPrefixes> TokenizerInfo::ClassPrefixTableLocked(const CharacterClass& cls) const {
  for (const auto& [c, table] : prefix_tables_) {
    if (c == cls) return table;
  }
  return nullptr;
}

std::shared_ptr<const ClassPrefixes> TokenizerInfo::FindClassPrefixTable(const CharacterClass& cls,
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

void TokenizerInfo::BuildClassPrefixTable(const CharacterClass& cls) const {
  {
    std::lock_guard<ForkSafeMutex> lock(region_mutex_);
    if (ClassPrefixTableLocked(cls) || prefix_tables_.size() >= kMaxClassTables) return;
  }
  // Built outside the lock; a racing thread's equal copy is dropped.
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
  std::vector<int8_t> state(static_cast<size_t>(max_token_bytes_) + 1, kUtf8Boundary);
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
        const std::string& token = decoded_tokens_[sorted_text_tokens_[trie_tokens_[i].token_begin]];
        found.push_back({static_cast<uint8_t>(token[tail]), {i, characters[d - 1], tail}});
        i = t.subtree_end;
        continue;
      }
      state[d] = next;
      characters[d] = characters[d - 1] + (next == kUtf8Boundary ? 1 : 0);
      char_start[d] = from == kUtf8Boundary ? d - 1 : char_start[d - 1];
      const int32_t counted = characters[d] + (next == kUtf8Boundary ? 0 : 1);
      for (int32_t p = trie_tokens_[i].token_begin; p < trie_tokens_[i].exact_end; ++p) {
        table->members.push_back({counted, sorted_text_tokens_[p]});
      }
      ++i;
    }
  }
  std::stable_sort(table->members.begin(), table->members.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  table->all_members.bits.assign((static_cast<size_t>(vocab_size_) + 31) / 32, 0);
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

size_t RegionOutsiders::MemoryBytes() const {
  size_t bytes = sizeof(*this) + tails.capacity() * sizeof(std::string);
  for (const std::string& tail : tails) bytes += tail.capacity();
  return bytes + (tail_lcp.capacity() + group_begin.capacity() + positions.capacity()) * sizeof(int32_t);
}

std::shared_ptr<const RegionOutsiders> TokenizerInfo::Utf8RegionOutsiders(const ByteMask& ascii) const {
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
  std::vector<std::pair<std::string_view, int32_t>> outsiders;  // (tail, position)
  const size_t count = sorted_text_tokens_.size();
  for (size_t pos = 0; pos < count; ++pos) {
    const auto& ascii_bytes = sorted_ascii_bytes_[pos];
    if (sorted_well_formed_[pos] && !((ascii_bytes.first & ~key.ascii_low) | (ascii_bytes.second & ~key.ascii_high))) {
      continue;  // in the region set
    }
    const std::string& bytes = decoded_tokens_[sorted_text_tokens_[pos]];
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

bool TokenizerInfo::IsStopToken(int32_t id) const {
  return id >= 0 && id < vocab_size_ && is_stop_[id];
}

void TokenizerInfo::CheckSortedTokenBytes() const {
  XG2_DCHECK(sorted_token_offsets_.size() == sorted_text_tokens_.size() + 1,
             "sorted_token_offsets() has one offset per sorted position, plus the end");
  for (size_t p = 0; p < sorted_text_tokens_.size(); ++p) {
    const std::string_view token(sorted_token_bytes_.data() + sorted_token_offsets_[p],
                                 sorted_token_offsets_[p + 1] - sorted_token_offsets_[p]);
    XG2_DCHECK(token == decoded_tokens_[sorted_text_tokens_[p]],
               "sorted_token_bytes() spells sorted_text_tokens() in order");
  }
}

size_t TokenizerInfo::MemoryBytes() const {
  size_t bytes = sizeof(*this);
  for (const auto& t : decoded_tokens_) bytes += t.capacity();
  bytes += decoded_tokens_.capacity() * sizeof(std::string);
  bytes += (is_text_.capacity() + is_stop_.capacity());
  bytes += (sorted_text_tokens_.capacity() + lcp_.capacity() + sorted_token_offsets_.capacity()) * sizeof(int32_t);
  bytes += sorted_token_bytes_.capacity();
  bytes += trie_.capacity() * sizeof(TokenTrieNode) + trie_tokens_.capacity() * sizeof(TokenTrieTokens) +
           trie_suffix_bytes_.capacity() * sizeof(ByteMask) +
           trie_suffix_max_length_.capacity() * sizeof(uint16_t) + trie_child_begin_.capacity() * sizeof(int32_t) +
           trie_children_.capacity() * sizeof(TrieChild);
  bytes += sorted_ascii_bytes_.capacity() * sizeof(sorted_ascii_bytes_[0]) + sorted_well_formed_.capacity() +
           sorted_characters_.capacity();
  std::lock_guard<ForkSafeMutex> lock(region_mutex_);
  for (const auto& entry : class_sets_) bytes += entry.second->bits.capacity() * sizeof(uint32_t);
  for (const auto& entry : outsider_sets_) bytes += entry.second->MemoryBytes();
  for (const auto& entry : prefix_tables_) bytes += entry.second->MemoryBytes();
  return bytes;
}

}  // namespace xg2
