#include "matcher/vocabulary_index.h"

#include <algorithm>
#include <functional>
#include <stdexcept>

#include "support/dcheck.h"
#include "tokenizer/utf8_decoder.h"

namespace xg2 {
namespace {

std::unique_ptr<const VocabularyAttachment> BuildIndex(const TokenizerInfo& tokenizer) {
  return std::make_unique<const VocabularyIndex>(tokenizer);
}

}  // namespace

const VocabularyIndex& VocabularyIndex::Of(const TokenizerInfo& tokenizer) {
  const VocabularyAttachment& attachment = tokenizer.Attachment(&BuildIndex);
  // The index is the only attachment a vocabulary is given (grep Attachment).
  XG2_DCHECK(dynamic_cast<const VocabularyIndex*>(&attachment) != nullptr,
             "the vocabulary's attachment is not its VocabularyIndex");
  return static_cast<const VocabularyIndex&>(attachment);
}

VocabularyIndex::VocabularyIndex(const TokenizerInfo& tokenizer) : tokenizer_(tokenizer) {
  ScanTokens();
  BuildTrie();
  BuildChildLists();
  BuildLongTokens();
  XG2_DCHECK_INVARIANTS(CheckInvariants());
}

void VocabularyIndex::CheckInvariants() const {
  const int32_t size = static_cast<int32_t>(trie_.size());
  const int32_t tokens = static_cast<int32_t>(tokenizer_.sorted_text_tokens().size());
  XG2_DCHECK(trie_tokens_.size() == trie_.size(), "the trie's two halves differ in length");
  // Pre-order: a node's subtree is [i, subtree_end); its exact tokens come first, then its
  // children's token ranges, contiguous and in byte order.
  for (int32_t i = 0; i < size; ++i) {
    const TokenTrieNode& t = trie_[i];
    const TokenTrieTokens& r = trie_tokens_[i];
    XG2_DCHECK(t.depth >= 1 && t.subtree_end > i && t.subtree_end <= size, "trie node out of pre-order");
    XG2_DCHECK(r.token_begin <= r.exact_end && r.exact_end <= r.token_end && r.token_end <= tokens,
               "trie node's token ranges are not nested");
    XG2_DCHECK((r.suffix_bytes >= 0) == (r.token_end - r.token_begin >= kTrieSuffixBytesMinTokens) &&
                   r.suffix_bytes < static_cast<int32_t>(trie_suffix_bytes_.size()),
               "trie node's suffix-byte set is missing or out of range");
    int32_t next_token = r.exact_end;
    int previous_byte = -1;
    for (int32_t c = i + 1; c < t.subtree_end; c = trie_[c].subtree_end) {
      XG2_DCHECK(trie_[c].depth == t.depth + 1 && trie_[c].byte > previous_byte, "trie children out of byte order");
      XG2_DCHECK(trie_tokens_[c].token_begin == next_token, "trie children's tokens are not contiguous");
      previous_byte = trie_[c].byte;
      next_token = trie_tokens_[c].token_end;
    }
    XG2_DCHECK(next_token == r.token_end, "trie node's tokens are not its exact tokens and its children's");
  }
  for (int b = 0; b < 256; ++b) {
    const int32_t root = trie_root_child_[b];
    XG2_DCHECK(root < 0 || (trie_[root].depth == 1 && trie_[root].byte == b), "trie root child misplaced");
  }
  for (size_t k = 0; k + 1 < trie_child_begin_.size(); ++k) {
    for (int32_t j = trie_child_begin_[k] + 1; j < trie_child_begin_[k + 1]; ++j) {
      XG2_DCHECK(trie_children_[j - 1].byte() < trie_children_[j].byte(), "trie child list out of byte order");
    }
  }
  for (size_t k = 1; k < long_tokens_.positions.size(); ++k) {
    XG2_DCHECK(long_tokens_.positions[k - 1] < long_tokens_.positions[k], "long tokens out of sorted order");
  }
}

void VocabularyIndex::ScanTokens() {
  const std::vector<int32_t>& sorted = tokenizer_.sorted_text_tokens();
  const std::vector<std::string>& decoded = tokenizer_.decoded_tokens();
  const size_t count = sorted.size();
  sorted_ascii_bytes_.assign(count, {0, 0});
  sorted_well_formed_.assign(count, 0);
  sorted_characters_.assign(count, 0);
  for (size_t pos = 0; pos < count; ++pos) {
    int8_t state = kUtf8Boundary;
    auto& ascii = sorted_ascii_bytes_[pos];
    int32_t characters = 0;
    for (char c : decoded[sorted[pos]]) {
      const uint8_t byte = static_cast<uint8_t>(c);
      if (byte < 64) ascii.first |= uint64_t{1} << byte;
      else if (byte < 128) ascii.second |= uint64_t{1} << (byte - 64);
      characters += state == kUtf8Boundary ? 1 : 0;
      state = Utf8DecoderStep(state, byte);
      if (state < 0) break;
    }
    sorted_well_formed_[pos] = state >= 0;
    sorted_characters_[pos] = static_cast<uint8_t>(std::min(characters, kMaxCountedCharacters));
    if (state >= 0 && characters > kMaxUtf8ChainCharacters) many_character_tokens_.emplace_back(characters, sorted[pos]);
  }
  std::sort(many_character_tokens_.begin(), many_character_tokens_.end(), std::greater<>());
}

void VocabularyIndex::BuildTrie() {
  const std::vector<int32_t>& sorted = tokenizer_.sorted_text_tokens();
  const std::vector<int32_t>& lcp = tokenizer_.lcp();
  const std::vector<std::string>& decoded = tokenizer_.decoded_tokens();
  const int32_t count = static_cast<int32_t>(sorted.size());
  // open[d - 1]: the node of depth d on the path to the current token, with below[d - 1] the
  // bytes seen below it so far. A token with common prefix `shared` with the previous one
  // closes the open nodes deeper than `shared` and opens one node per remaining byte.
  std::vector<int32_t> open;
  std::vector<ByteMask> below;
  std::vector<uint16_t> longest;  // longest[d - 1]: longest token seen so far below open[d - 1]
  std::vector<int8_t> prefix_state;  // prefix_state[d - 1]: UTF-8 decoder state after open[d - 1]
  // malformed_before[p]: tokens at sorted positions < p that are not well-formed UTF-8
  // prefixes (a subtree is well-formed when its range holds none).
  std::vector<int32_t> malformed_before(count + 1, 0);
  for (int32_t pos = 0; pos < count; ++pos) {
    malformed_before[pos + 1] = malformed_before[pos] + (sorted_well_formed_[pos] ? 0 : 1);
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
    const std::string& bytes = decoded[sorted[pos]];
    close_deeper_than(static_cast<size_t>(lcp[pos]), pos);
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
  trie_.shrink_to_fit();
  trie_tokens_.shrink_to_fit();
  trie_suffix_bytes_.shrink_to_fit();
  trie_suffix_max_length_.shrink_to_fit();
}

void VocabularyIndex::BuildChildLists() {
  // A node's children are i + 1 and then each one's subtree end. Only nodes with a
  // suffix_bytes entry can have enough children, and TrieChild packs 24-bit indices.
  trie_child_begin_.assign(trie_suffix_bytes_.size() + 1, 0);
  if (trie_.size() >= (size_t{1} << 24)) return;
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

void VocabularyIndex::BuildLongTokens() {
  const std::vector<int32_t>& sorted = tokenizer_.sorted_text_tokens();
  const std::vector<std::string>& decoded = tokenizer_.decoded_tokens();
  LongTokenTable& table = long_tokens_;
  table.short_bits.assign((static_cast<size_t>(tokenizer_.vocab_size()) + 31) / 32, 0);
  const std::string* previous = nullptr;
  for (int32_t pos = 0; pos < static_cast<int32_t>(sorted.size()); ++pos) {
    const int32_t id = sorted[pos];
    const std::string& bytes = decoded[id];
    if (static_cast<int32_t>(bytes.size()) <= kShortTokenBytes) {
      table.short_bits[id >> 5] |= 1u << (id & 31);
      continue;
    }
    int32_t shared = 0;
    if (previous != nullptr) {
      const size_t limit = std::min(previous->size(), bytes.size());
      while (static_cast<size_t>(shared) < limit && (*previous)[shared] == bytes[shared]) ++shared;
    }
    table.positions.push_back(pos);
    table.lcp.push_back(shared);
    previous = &bytes;
  }
  // Sorted order compares bytes as unsigned (std::string's ordering), so each first byte's
  // tokens are one run, the runs in byte order.
  const size_t count = table.positions.size();
  size_t k = 0;
  for (int b = 0; b < 256; ++b) {
    table.first_byte_begin[b] = static_cast<int32_t>(k);
    while (k < count && static_cast<uint8_t>(decoded[sorted[table.positions[k]]][0]) == b) ++k;
  }
  table.first_byte_begin[256] = static_cast<int32_t>(k);
  if (k != count) throw std::logic_error("long tokens are not grouped by first byte");
}

size_t RegionOutsiders::MemoryBytes() const {
  size_t bytes = sizeof(*this) + tails.capacity() * sizeof(std::string);
  for (const std::string& tail : tails) bytes += tail.capacity();
  return bytes + (tail_lcp.capacity() + group_begin.capacity() + positions.capacity()) * sizeof(int32_t);
}

size_t VocabularyIndex::MemoryBytes() const {
  size_t bytes = sizeof(*this);
  bytes += trie_.capacity() * sizeof(TokenTrieNode) + trie_tokens_.capacity() * sizeof(TokenTrieTokens) +
           trie_suffix_bytes_.capacity() * sizeof(ByteMask) +
           trie_suffix_max_length_.capacity() * sizeof(uint16_t) + trie_child_begin_.capacity() * sizeof(int32_t) +
           trie_children_.capacity() * sizeof(TrieChild);
  bytes += (long_tokens_.positions.capacity() + long_tokens_.lcp.capacity()) * sizeof(int32_t) +
           long_tokens_.short_bits.capacity() * sizeof(uint32_t);
  bytes += sorted_ascii_bytes_.capacity() * sizeof(sorted_ascii_bytes_[0]) + sorted_well_formed_.capacity() +
           sorted_characters_.capacity() + many_character_tokens_.capacity() * sizeof(many_character_tokens_[0]);
  std::lock_guard<ForkSafeMutex> lock(region_mutex_);
  for (const auto& entry : class_sets_) bytes += entry.second->bits.capacity() * sizeof(uint32_t);
  for (const auto& entry : outsider_sets_) bytes += entry.second->MemoryBytes();
  for (const auto& entry : prefix_tables_) bytes += entry.second->MemoryBytes();
  return bytes;
}

}  // namespace xg2
