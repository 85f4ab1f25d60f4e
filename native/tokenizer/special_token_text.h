// The text of a vocabulary's special tokens, for frontends that turn special-token text in
// their input ("<|channel|>" in a structural tag) into the token itself (`Token(id)`).
//
// Only texts that name exactly one special id are kept: a text shared by several special
// ids (or one that is not valid UTF-8) stays plain text. Built once per TokenizerInfo
// (TokenizerInfo::special_token_text()).
#ifndef XG2_TOKENIZER_SPECIAL_TOKEN_TEXT_H_
#define XG2_TOKENIZER_SPECIAL_TOKEN_TEXT_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace xg2 {

class SpecialTokenText {
 public:
  // One piece of a split string: plain text (token_id < 0) or a special token.
  struct Piece {
    std::string_view text;  // the piece's bytes (for a token, the token's text)
    int32_t token_id = -1;
  };

  SpecialTokenText() = default;  // no special tokens
  SpecialTokenText(const std::vector<std::string>& decoded_tokens,
                   const std::vector<int32_t>& special_token_ids);
  // Not copyable: ids_ views the keys of by_text_.
  SpecialTokenText(const SpecialTokenText&) = delete;
  SpecialTokenText& operator=(const SpecialTokenText&) = delete;

  bool empty() const { return by_text_.empty(); }
  // The special id whose text is exactly `text`, or -1.
  int32_t IdOfText(std::string_view text) const;
  // Whether `id` is a special token whose text names only it.
  bool HasId(int32_t id) const { return ids_.count(id) != 0; }

  // `text` as plain pieces and special tokens, left to right; at each position the longest
  // special text that starts there wins (a special token containing another is preferred),
  // and the scan resumes after it. One pass over `text`: a trie walk from each position
  // whose byte can start a special text. Pieces view `text` and this table.
  std::vector<Piece> Split(std::string_view text) const;

 private:
  struct TrieNode {
    std::vector<std::pair<uint8_t, int32_t>> children;  // sorted by byte
    int32_t token_id = -1;                               // a special text ends here
  };
  int32_t Child(int32_t node, uint8_t byte) const;

  std::unordered_map<std::string, int32_t> by_text_;
  std::unordered_map<int32_t, std::string_view> ids_;  // views into by_text_'s keys
  std::vector<TrieNode> trie_;                          // node 0 is the root
  bool starts_[256] = {};                               // bytes that begin some special text
};

}  // namespace xg2

#endif  // XG2_TOKENIZER_SPECIAL_TOKEN_TEXT_H_
