// matcher/vocabulary_index.h: the index of a vocabulary is built once and shared, its trie
// holds every text token exactly once in sorted order, and its invariants hold (the checks
// run here: the binary is built with XG2_FORCE_DCHECKS).
#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "check.h"
#include "matcher/vocabulary_index.h"

namespace {

using xg2::TokenizerInfo;
using xg2::VocabularyIndex;

// Tokens sharing prefixes, duplicates, multi-byte and malformed UTF-8, long tokens, an
// empty (never text) token, and one special id.
TokenizerInfo MixedVocabulary() {
  std::vector<std::string> tokens = {"a", "ab", "abc", "abc", "b", " ", " the", " then", "\xC3\xA9", "\xC3",
                                     "\xFF", "", std::string(40, 'x'), std::string(20, 'x') + "y", "<s>"};
  std::mt19937 random(7);
  const std::string alphabet = "ab {}\",:0123456789\xC3\xA9";
  for (int i = 0; i < 400; ++i) {
    std::string token(1 + random() % 12, ' ');  // short: the long tokens are the two above
    for (char& c : token) c = alphabet[random() % alphabet.size()];
    tokens.push_back(token);
  }
  const int32_t special = 14;  // "<s>"
  return TokenizerInfo(tokens, xg2::VocabType::kRaw, static_cast<int32_t>(tokens.size()) + 3, {}, {special}, false);
}

TEST(VocabularyIndexIsBuiltOncePerVocabulary) {
  TokenizerInfo info = MixedVocabulary();
  const size_t before = info.MemoryBytes();
  const VocabularyIndex& index = VocabularyIndex::Of(info);
  CHECK(&VocabularyIndex::Of(info) == &index);
  CHECK(&index.tokenizer() == &info);
  CHECK(info.MemoryBytes() >= before + index.MemoryBytes());
}

TEST(VocabularyTrieHoldsEveryTextTokenOnceInSortedOrder) {
  TokenizerInfo info = MixedVocabulary();
  const VocabularyIndex& index = VocabularyIndex::Of(info);
  // Walking the trie in pre-order and listing each node's exact tokens gives the sorted
  // text tokens; each token's bytes are the path to its node.
  std::vector<int32_t> listed;
  std::string path;
  for (size_t i = 0; i < index.trie().size(); ++i) {
    const xg2::TokenTrieNode& node = index.trie()[i];
    path.resize(node.depth - 1);
    path.push_back(static_cast<char>(node.byte));
    const xg2::TokenTrieTokens& range = index.trie_tokens()[i];
    for (int32_t p = range.token_begin; p < range.exact_end; ++p) {
      const int32_t id = info.sorted_text_tokens()[p];
      CHECK_EQ(info.decoded_tokens()[id], path);
      listed.push_back(id);
    }
  }
  CHECK(listed == info.sorted_text_tokens());
  CHECK(std::find(listed.begin(), listed.end(), 14) == listed.end());  // the special id
  CHECK(std::find(listed.begin(), listed.end(), 11) == listed.end());  // the empty token
  const xg2::LongTokenTable& long_tokens = index.long_tokens();
  CHECK_EQ(long_tokens.positions.size(), size_t{2});
}

TEST(VocabularyRegionSetsAreWellFormedTokensOfTheirBytes) {
  TokenizerInfo info = MixedVocabulary();
  const VocabularyIndex& index = VocabularyIndex::Of(info);
  xg2::ByteMask letters;
  letters.Set('a');
  letters.Set('b');
  std::shared_ptr<const xg2::TokenIdSet> set = index.Utf8RegionTokens(letters);
  CHECK(set != nullptr);
  CHECK(index.Utf8RegionTokens(letters) == set);  // kept and shared
  auto in_set = [&](int32_t id) { return ((set->bits[id >> 5] >> (id & 31)) & 1) != 0; };
  // Well-formed UTF-8 prefixes ("\xC3" alone is one, "\xFF" is not) with only a and b as
  // ASCII bytes.
  CHECK(in_set(0) && in_set(1) && !in_set(2) && in_set(8) && in_set(9) && !in_set(10));
  for (int32_t id : info.sorted_text_tokens()) {
    const std::string& bytes = info.decoded_tokens()[id];
    const bool other_ascii = std::any_of(bytes.begin(), bytes.end(), [](char c) {
      return static_cast<uint8_t>(c) < 0x80 && c != 'a' && c != 'b';
    });
    const bool ascii_only = std::all_of(bytes.begin(), bytes.end(), [](char c) { return static_cast<uint8_t>(c) < 0x80; });
    if (other_ascii) CHECK(!in_set(id));
    if (ascii_only && !other_ascii) CHECK(in_set(id));
  }
}

}  // namespace
