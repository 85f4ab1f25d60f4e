#include "tokenizer/special_token_text.h"

#include <algorithm>
#include <set>

#include "support/utf8.h"

namespace xg2 {

SpecialTokenText::SpecialTokenText(const std::vector<std::string>& decoded_tokens,
                                   const std::vector<int32_t>& special_token_ids) {
  std::set<int32_t> ids(special_token_ids.begin(), special_token_ids.end());
  std::unordered_map<std::string, int32_t> count;
  for (int32_t id : ids) {
    if (id < 0 || static_cast<size_t>(id) >= decoded_tokens.size()) continue;
    const std::string& text = decoded_tokens[id];
    // Valid UTF-8 only: then a match in valid UTF-8 input starts and ends on character
    // boundaries, so the plain pieces around it stay valid UTF-8.
    if (text.empty() || !IsValidUtf8(text)) continue;
    if (++count[text] == 1) by_text_[text] = id;
  }
  for (const auto& [text, n] : count) {
    if (n > 1) by_text_.erase(text);
  }
  trie_.emplace_back();
  for (const auto& [text, id] : by_text_) {
    ids_.emplace(id, std::string_view(text));
    starts_[static_cast<uint8_t>(text[0])] = true;
    int32_t node = 0;
    for (char c : text) {
      uint8_t byte = static_cast<uint8_t>(c);
      int32_t next = Child(node, byte);
      if (next < 0) {
        next = static_cast<int32_t>(trie_.size());
        trie_.emplace_back();  // may reallocate: index trie_[node] again below
        auto& children = trie_[node].children;
        children.insert(std::lower_bound(children.begin(), children.end(), std::make_pair(byte, 0)),
                        {byte, next});
      }
      node = next;
    }
    trie_[node].token_id = id;
  }
}

int32_t SpecialTokenText::Child(int32_t node, uint8_t byte) const {
  const auto& children = trie_[node].children;
  auto it = std::lower_bound(children.begin(), children.end(), std::make_pair(byte, 0));
  return it != children.end() && it->first == byte ? it->second : -1;
}

int32_t SpecialTokenText::IdOfText(std::string_view text) const {
  if (by_text_.empty()) return -1;
  auto it = by_text_.find(std::string(text));
  return it == by_text_.end() ? -1 : it->second;
}

std::vector<SpecialTokenText::Piece> SpecialTokenText::Split(std::string_view text) const {
  std::vector<Piece> pieces;
  size_t start = 0;  // first byte not yet in a piece
  size_t i = 0;
  while (i < text.size()) {
    if (!starts_[static_cast<uint8_t>(text[i])]) {
      ++i;
      continue;
    }
    // Walk the trie from i, remembering the longest special text that ends on the way.
    int32_t node = 0, best_id = -1;
    size_t best_end = i;
    for (size_t j = i; j < text.size(); ++j) {
      node = Child(node, static_cast<uint8_t>(text[j]));
      if (node < 0) break;
      if (trie_[node].token_id >= 0) {
        best_id = trie_[node].token_id;
        best_end = j + 1;
      }
    }
    if (best_id < 0) {
      ++i;
      continue;
    }
    if (i > start) pieces.push_back({text.substr(start, i - start), -1});
    pieces.push_back({text.substr(i, best_end - i), best_id});
    i = start = best_end;
  }
  if (start < text.size()) pieces.push_back({text.substr(start), -1});
  return pieces;
}

}  // namespace xg2
