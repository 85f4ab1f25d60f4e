// The vocabulary indexes the token-mask cache walks (matcher/token_mask_cache.h): the text
// tokens as a flat byte trie with child lists, the long tokens, and the per-tokenizer tables
// of UTF-8 regions and character classes built on first request. One VocabularyIndex per
// TokenizerInfo (derived vocabularies included), kept with it as its attachment
// (TokenizerInfo::Attachment), so every grammar and compiler of a vocabulary shares it.
// The tokenizer layer holds the vocabulary only; what a walk over it needs lives here.
#ifndef XG2_MATCHER_VOCABULARY_INDEX_H_
#define XG2_MATCHER_VOCABULARY_INDEX_H_

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "support/fork_safe_mutex.h"
#include "tokenizer/tokenizer_info.h"

namespace xg2 {

// The text tokens as a byte trie, flattened in depth-first pre-order (children by byte), the
// layout llguidance uses for its vocabulary walks: a walk visits nodes in index order and
// skips a whole subtree by jumping to `subtree_end`. Because children are ordered by byte,
// pre-order visits tokens in TokenizerInfo::sorted_text_tokens() order, so every subtree's
// tokens are one contiguous range of sorted positions.
//
// A node is split in two parallel arrays by how often a walk reads it. TokenTrieNode holds
// what every visited node needs (8 bytes: most visits are to a child whose byte the DFA
// rejects, and the walk is bound by loading these); TokenTrieTokens what only a node whose
// byte was consumed, or whose subtree gets one verdict, needs.
struct TokenTrieNode {
  int32_t subtree_end;  // index of the first node after this node's subtree
  uint16_t depth;       // prefix length in bytes (>= 1; the root is implicit)
  uint8_t byte;         // the prefix's last byte
  // When every token of the subtree is a well-formed UTF-8 prefix (tokenizer/utf8_decoder.h):
  // the decoder's state after this node's prefix; otherwise kUtf8Malformed.
  uint8_t utf8_state;
};
static_assert(sizeof(TokenTrieNode) == 8, "the hot half of a trie node is 8 bytes");

struct TokenTrieTokens {
  int32_t token_begin;  // first sorted position whose token starts with this prefix
  int32_t exact_end;    // [token_begin, exact_end): tokens equal to this prefix (duplicates)
  int32_t token_end;    // [token_begin, token_end): every token in the subtree
  // Index into VocabularyIndex::trie_suffix_bytes() of the set of bytes that follow this
  // prefix anywhere in the subtree, or -1 (kept only for subtrees of at least
  // kTrieSuffixBytesMinTokens tokens). A walk whose DFA node loops on all of them accepts
  // the whole subtree without visiting it.
  int32_t suffix_bytes;
};

// A set of byte values as four 64-bit words.
struct ByteMask {
  uint64_t words[4] = {0, 0, 0, 0};
  void Set(uint8_t b) { words[b >> 6] |= uint64_t{1} << (b & 63); }
  ByteMask& operator|=(const ByteMask& o) {
    for (int i = 0; i < 4; ++i) words[i] |= o.words[i];
    return *this;
  }
  int Count() const {
    return __builtin_popcountll(words[0]) + __builtin_popcountll(words[1]) + __builtin_popcountll(words[2]) +
           __builtin_popcountll(words[3]);
  }
  // True when every byte of this set is in `other`.
  bool SubsetOf(const ByteMask& other) const {
    return !((words[0] & ~other.words[0]) | (words[1] & ~other.words[1]) | (words[2] & ~other.words[2]) |
             (words[3] & ~other.words[3]));
  }
};

constexpr int32_t kTrieSuffixBytesMinTokens = 8;

// Trie nodes with at least this many children also list them (VocabularyIndex::trie_children).
constexpr int32_t kTrieChildListMinChildren = 8;

// One entry of a trie node's child list: the child's index in the trie and its byte, packed
// so that a scan of a list for the bytes a DFA node steps on reads one small array.
struct TrieChild {
  uint32_t packed;  // node index << 8 | byte
  uint8_t byte() const { return static_cast<uint8_t>(packed & 0xFF); }
  int32_t node() const { return static_cast<int32_t>(packed >> 8); }
};

// A set of token ids as a bitset (bit id % 32 of word id / 32), with its size.
struct TokenIdSet {
  std::vector<uint32_t> bits;
  int64_t count = 0;
};

// The text tokens outside a UTF-8 region set (VocabularyIndex::Utf8RegionTokens), grouped by
// tail. A token's tail starts at its first byte the region's language does not take (an
// ASCII byte outside the set, or a byte the UTF-8 decoder rejects) when that byte is at a
// character boundary; otherwise the tail is the whole token. At a region whose only
// boundary node is its root, the bytes before the tail loop back to the root, so a token's
// verdict there is its tail's verdict from the root (mask_cache/region_tails.h), and a tail
// shared by many tokens (`",` ends dozens) is walked once.
// Invariant: tails are distinct and ascending; tokens of tails[i] are
// positions[group_begin[i] .. group_begin[i + 1]), ascending sorted_text_tokens() positions.
struct RegionOutsiders {
  std::vector<std::string> tails;
  std::vector<int32_t> tail_lcp;  // common prefix length with the previous tail (0 for the first)
  std::vector<int32_t> group_begin;
  std::vector<int32_t> positions;
  size_t MemoryBytes() const;
};

// A character class: a set of ASCII bytes, plus every well-formed multi-byte UTF-8
// character when `multibyte`. A token is in the class's language when it is a well-formed
// UTF-8 prefix of class characters (its last character may be cut short). Otherwise its
// class prefix is its longest prefix of whole class characters, and its tail the rest: it
// starts at a byte that begins no class character, at a character boundary, or at the start
// of the character the token breaks off inside.
struct CharacterClass {
  ByteMask ascii;  // bytes >= 0x80 are ignored
  bool multibyte = false;
  bool operator==(const CharacterClass& o) const {
    return ascii.words[0] == o.ascii.words[0] && ascii.words[1] == o.ascii.words[1] && multibyte == o.multibyte;
  }
};

// A class's language in the token trie, for the class roots of the mask cache
// (mask_cache/dense_stepper.h, DenseStepper::ClassRoot). Built by one walk of the trie under
// the bytes that begin a class character, down to where each token leaves the language:
//  * `members`: the tokens in the language, as (characters, id), ascending characters (a
//    character the token ends inside counts), and `all_members` as a set;
//  * `entries`: one per trie subtree where the tokens leave the language, grouped by the
//    first byte of their tail. A subtree's tokens share their class prefix of
//    `prefix_characters` whole characters and their tail, which starts at byte
//    `tail_start` of the token: at the subtree's own byte when that byte begins no class
//    character at a character boundary, else at the start of the character it breaks.
// Invariant: entries[first_byte_begin[b] .. first_byte_begin[b + 1]) are the entries whose
// tail starts with byte b, in trie order.
struct ClassPrefixes {
  struct Entry {
    int32_t trie_node;          // the subtree (VocabularyIndex::trie())
    int32_t prefix_characters;  // whole class characters before the tail
    int32_t tail_start;         // the tail's first byte's index in the token
  };
  std::array<int32_t, 257> first_byte_begin{};
  std::vector<Entry> entries;
  std::vector<std::pair<int32_t, int32_t>> members;
  TokenIdSet all_members;
  size_t MemoryBytes() const {
    return sizeof(*this) + entries.capacity() * sizeof(Entry) + members.capacity() * sizeof(members[0]) +
           all_members.bits.capacity() * sizeof(uint32_t);
  }
};

// Short-token reuse (mask_cache/token_classification.h). The verdict on a token of at most
// kShortTokenBytes bytes depends only on the DFA within that many bytes of the node, so a
// classification stored under the node's short key (the truncated key at that depth, tagged
// apart) is exact for the short tokens of every node with the same short key; only the few
// long tokens need a walk of their own. This is what makes the copies of a bounded
// repetition cheap: the nodes of json_char{0,128} differ in how far the chain goes on, which
// no token under 17 bytes can tell apart, and the Llama 3 vocabulary has 1,566 tokens over
// 16 bytes of 128,256.
constexpr int32_t kShortTokenBytes = 16;

// The tokenizer's long tokens (over kShortTokenBytes bytes), in sorted_text_tokens() order,
// and the ids of its short text tokens as a bitset.
struct LongTokenTable {
  std::vector<int32_t> positions;  // ascending positions in sorted_text_tokens()
  std::vector<int32_t> lcp;        // lcp[k]: common prefix of long tokens k-1 and k (0 for k == 0)
  // The long tokens whose first byte is b are positions[first_byte_begin[b] ..
  // first_byte_begin[b + 1]) (sorted order groups them), so a walk skips the groups whose
  // first byte the node does not step on.
  std::array<int32_t, 257> first_byte_begin{};
  std::vector<uint32_t> short_bits;
};

// Immutable after construction except for the tables built on first request, each behind
// region_mutex_ (a ForkSafeMutex: the tables are long-lived and shared across threads).
class VocabularyIndex final : public VocabularyAttachment {
 public:
  // The index of `tokenizer`: built on the first call for it (vocabulary constructors call
  // this eagerly, so compiles do not pay for it), then the same object. Thread-safe.
  static const VocabularyIndex& Of(const TokenizerInfo& tokenizer);

  explicit VocabularyIndex(const TokenizerInfo& tokenizer);

  const TokenizerInfo& tokenizer() const { return tokenizer_; }

  // The text tokens as a flat byte trie (see TokenTrieNode), and per node its tokens.
  const std::vector<TokenTrieNode>& trie() const { return trie_; }
  const std::vector<TokenTrieTokens>& trie_tokens() const { return trie_tokens_; }
  const std::vector<ByteMask>& trie_suffix_bytes() const { return trie_suffix_bytes_; }
  // trie_root_child()[b]: the trie index of the depth-1 node for byte b, or -1. A walk that
  // steps on few first bytes visits only their subtrees, instead of loading each of the
  // (up to 256) depth-1 nodes scattered over the trie.
  const std::array<int32_t, 256>& trie_root_child() const { return trie_root_child_; }
  // Parallel to trie_suffix_bytes(): the longest token of that subtree, in bytes.
  const std::vector<uint16_t>& trie_suffix_max_length() const { return trie_suffix_max_length_; }
  // The children of a node whose suffix_bytes index is k, when it has at least
  // kTrieChildListMinChildren of them: trie_children()[trie_child_begin()[k] ..
  // trie_child_begin()[k + 1]) in byte order (an empty range otherwise). Visiting the
  // children a DFA node steps on through this list skips the others without loading them:
  // siblings lie a whole subtree apart in the trie (after a space, hundreds of them).
  const std::vector<int32_t>& trie_child_begin() const { return trie_child_begin_; }
  const std::vector<TrieChild>& trie_children() const { return trie_children_; }
  const LongTokenTable& long_tokens() const { return long_tokens_; }

  // The text tokens that are well-formed UTF-8 prefixes (tokenizer/utf8_decoder.h) whose
  // ASCII bytes all lie in `ascii` (its bytes >= 0x80 are ignored): the tokens a UTF-8
  // region with that ASCII self-loop set accepts wholesale at a character boundary
  // (mask_cache/token_classifier.cc). Built on the first request for a set and kept, so every
  // grammar and compiler of this vocabulary shares it (JSON string bodies all ask for the
  // same set); nullptr once kMaxUtf8RegionSets sets are kept. Thread-safe.
  std::shared_ptr<const TokenIdSet> Utf8RegionTokens(const ByteMask& ascii) const;
  static constexpr size_t kMaxUtf8RegionSets = 32;

  // The tokens outside Utf8RegionTokens(ascii), by tail (RegionOutsiders). Built on first
  // request and kept like the region sets; nullptr once kMaxUtf8RegionSets are kept.
  // Thread-safe.
  std::shared_ptr<const RegionOutsiders> Utf8RegionOutsiders(const ByteMask& ascii) const;

  // The tokens of Utf8RegionTokens(ascii) that start at most `max_characters` characters (a
  // character the token ends inside counts): those a bounded repetition of one character
  // with `max_characters` copies left accepts wholesale (the copies of a JSON string with
  // maxLength). Counts 1..kMaxUtf8ChainCharacters are built on first request and kept like
  // the region sets (nullptr once kMaxUtf8ChainSets are kept). A larger count is the region
  // set itself from the longest token's bytes on (no token starts more characters than it
  // has bytes), else a copy of the region set less its tokens of more characters
  // (many_character_tokens_: a few hundred at most), made per call and not kept: a string's
  // copies ask for a different count at each position. nullptr for counts below 1 or from
  // kMaxCountedCharacters on (below the longest token). Thread-safe.
  std::shared_ptr<const TokenIdSet> Utf8ChainTokens(const ByteMask& ascii, int32_t max_characters) const;
  static constexpr int32_t kMaxUtf8ChainCharacters = 32;
  static constexpr size_t kMaxUtf8ChainSets = 96;
  // Characters are counted up to this many per token (sorted_characters_ saturates there).
  static constexpr int32_t kMaxCountedCharacters = 255;

  // The class's ClassPrefixes if built, else nullptr; `*first_request` (optional) is set
  // true for the one caller that should have it built (BuildClassPrefixTable), once per
  // class while the tables kept are within kMaxClassTables and kMaxClassTableBytes.
  // Thread-safe.
  std::shared_ptr<const ClassPrefixes> FindClassPrefixTable(const CharacterClass& cls,
                                                            bool* first_request = nullptr) const;
  // Builds and keeps the class's table (a walk of the trie under the class's first bytes:
  // about a millisecond for a narrow class, so the mask cache has it built in the background
  // rather than in a fill). Thread-safe; idempotent.
  void BuildClassPrefixTable(const CharacterClass& cls) const;
  static constexpr int32_t kAnyCharacterCount = 1 << 30;
  // Tables kept per vocabulary, by count and by bytes: a narrow class's table (digits, hex
  // digits) is a few kilobytes, a wide one's (a JSON string's characters) covers about the
  // whole trie, one or two megabytes.
  static constexpr size_t kMaxClassTables = 32;
  static constexpr size_t kMaxClassTableBytes = size_t{32} << 20;

  size_t MemoryBytes() const override;

 private:
  void ScanTokens();
  void BuildTrie();
  void BuildChildLists();
  void BuildLongTokens();
  // The invariants written on the structures above (debug and sanitizer builds).
  void CheckInvariants() const;
  // The sets of Utf8RegionTokens (max_characters kAnyCharacterCount) and Utf8ChainTokens.
  std::shared_ptr<const TokenIdSet> Utf8ClassTokens(const ByteMask& ascii, int32_t max_characters) const;
  // The kept table of `cls` or nullptr; requires region_mutex_.
  std::shared_ptr<const ClassPrefixes> ClassPrefixTableLocked(const CharacterClass& cls) const;

  // The vocabulary owns this index (its attachment), so the reference never dangles.
  const TokenizerInfo& tokenizer_;
  std::vector<TokenTrieNode> trie_;
  std::vector<TokenTrieTokens> trie_tokens_;
  std::array<int32_t, 256> trie_root_child_;
  std::vector<ByteMask> trie_suffix_bytes_;
  std::vector<uint16_t> trie_suffix_max_length_;
  std::vector<int32_t> trie_child_begin_;
  std::vector<TrieChild> trie_children_;
  LongTokenTable long_tokens_;
  // Per sorted position: the token's ASCII bytes as two words (bytes 0-63, 64-127), and
  // whether it is a well-formed UTF-8 prefix (only those can be in a region set).
  std::vector<std::pair<uint64_t, uint64_t>> sorted_ascii_bytes_;
  std::vector<uint8_t> sorted_well_formed_;
  // Per sorted position: the characters the token starts (a well-formed prefix's length in
  // characters, the last one possibly incomplete), at most kMaxCountedCharacters.
  std::vector<uint8_t> sorted_characters_;
  // The well-formed tokens that start more than kMaxUtf8ChainCharacters characters, as
  // (characters, id), most characters first.
  std::vector<std::pair<int32_t, int32_t>> many_character_tokens_;
  struct ClassSetKey {
    uint64_t ascii_low;
    uint64_t ascii_high;
    int32_t max_characters;
    bool operator==(const ClassSetKey& o) const {
      return ascii_low == o.ascii_low && ascii_high == o.ascii_high && max_characters == o.max_characters;
    }
  };
  mutable ForkSafeMutex region_mutex_;
  mutable std::vector<std::pair<ClassSetKey, std::shared_ptr<const TokenIdSet>>> class_sets_;
  mutable std::vector<std::pair<ClassSetKey, std::shared_ptr<const RegionOutsiders>>> outsider_sets_;
  mutable std::vector<std::pair<CharacterClass, std::shared_ptr<const ClassPrefixes>>> prefix_tables_;
  mutable std::vector<CharacterClass> prefix_table_requests_;
  mutable size_t prefix_table_bytes_ = 0;
};

}  // namespace xg2

#endif  // XG2_MATCHER_VOCABULARY_INDEX_H_
