// The vocabulary as the matcher sees it: for every token id, the bytes it appends to the
// output, plus which ids are special (never grammar text) and which stop generation.
#ifndef XG2_TOKENIZER_TOKENIZER_INFO_H_
#define XG2_TOKENIZER_TOKENIZER_INFO_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "support/fork_safe_mutex.h"
#include "tokenizer/special_token_text.h"

namespace xg2 {

// A structure a higher layer derives from one vocabulary and keeps with it for the
// vocabulary's lifetime (the token-mask cache's vocabulary index, matcher/vocabulary_index.h).
// The tokenizer layer knows it only through this interface.
class VocabularyAttachment {
 public:
  virtual ~VocabularyAttachment() = default;
  virtual size_t MemoryBytes() const = 0;
};

// How a tokenizer's vocabulary strings encode bytes (same numbering as xgrammar's).
enum class VocabType : int32_t {
  kRaw = 0,           // strings are the bytes themselves (tiktoken, tekken)
  kByteFallback = 1,  // sentencepiece: "▁" is a space, "<0xAB>" is one byte
  kByteLevel = 2,     // GPT-2 byte-level BPE: each byte mapped to a printable code point
};

// The largest vocab_size a TokenizerInfo accepts. The largest real vocabularies have about
// 2^18 ids; the cap leaves room for padded and future models while refusing, before any
// per-id table is allocated, a size that could only be a mistake (2^31 - 1 would take GBs).
constexpr int32_t kMaxVocabSize = 1 << 22;

// Immutable after construction; shared by every compiled grammar and matcher of one model.
//
// Invariants:
//  * 1 <= vocab_size() <= kMaxVocabSize.
//  * vocab_size() >= decoded_tokens.size(); ids in [decoded_tokens.size(), vocab_size())
//    are model padding and are never allowed.
//  * Special ids and ids whose decoded text is empty are never "text" tokens: they are
//    excluded from sorted_text_tokens() and so never allowed inside grammar text. Stop
//    ids are allowed only where the grammar can end.
//  * sorted_text_tokens() lists the text token ids ordered by their bytes; lcp()[i] is the
//    length of the common prefix of entries i-1 and i (lcp()[0] == 0). The mask walk uses
//    it to reuse parser states across tokens that share a prefix.
class TokenizerInfo : public std::enable_shared_from_this<TokenizerInfo> {
 public:
  TokenizerInfo(std::vector<std::string> decoded_tokens, VocabType vocab_type, int32_t vocab_size,
                std::vector<int32_t> stop_token_ids, std::vector<int32_t> special_token_ids,
                bool add_prefix_space);

  int32_t vocab_size() const { return vocab_size_; }
  VocabType vocab_type() const { return vocab_type_; }
  // Whether the tokenizer prepends a space to the text it encodes (sentencepiece's dummy
  // prefix). decoded_tokens() are always what a token appends mid-sequence ("▁Hi" -> " Hi"),
  // so with this flag the first token of an encoded text carries a space that the tokenizer's
  // own decode drops (tokenizer/vocab_decoder.h).
  bool add_prefix_space() const { return add_prefix_space_; }
  const std::vector<std::string>& decoded_tokens() const { return decoded_tokens_; }
  const std::vector<int32_t>& stop_token_ids() const { return stop_token_ids_; }
  const std::vector<int32_t>& special_token_ids() const { return special_token_ids_; }

  const std::vector<int32_t>& sorted_text_tokens() const { return sorted_text_tokens_; }
  const std::vector<int32_t>& lcp() const { return lcp_; }
  // The bytes of sorted_text_tokens() concatenated in that order: position p's token is
  // sorted_token_bytes()[sorted_token_offsets()[p] .. sorted_token_offsets()[p + 1]). A walk
  // over ascending positions (the mask walk over a node's uncertain tokens) reads memory in
  // order, where decoded_tokens()[sorted_text_tokens()[p]] would load one scattered string
  // object per token (a cache miss each once a compile has evicted the tokenizer's tables).
  const std::string& sorted_token_bytes() const { return sorted_token_bytes_; }
  const std::vector<int32_t>& sorted_token_offsets() const { return sorted_token_offsets_; }
  // Length in bytes of the longest text token.
  int32_t max_token_bytes() const { return max_token_bytes_; }

  bool IsStopToken(int32_t id) const;
  // True for ids that can appear inside grammar text (not special, not empty, not padding).
  bool IsTextToken(int32_t id) const { return id >= 0 && id < vocab_size_ && is_text_[id]; }

  // Byte size of the tables, the attachment's included (for cache accounting).
  size_t MemoryBytes() const;

  using AttachmentBuilder = std::unique_ptr<const VocabularyAttachment> (*)(const TokenizerInfo&);
  // The vocabulary's attachment: built by `build` on the first call, under a lock (a racing
  // caller waits for that one build instead of making its own), and the same object on
  // every later call. Lock-free once built. Thread-safe and fork-safe.
  const VocabularyAttachment& Attachment(AttachmentBuilder build) const;

  // The special tokens' text table, built on first use (thread-safe) and kept.
  const SpecialTokenText& special_token_text() const;

 private:
  // Debug builds: sorted_token_bytes() and its offsets spell sorted_text_tokens() in order.
  void CheckSortedTokenBytes() const;

  std::vector<std::string> decoded_tokens_;
  VocabType vocab_type_;
  int32_t vocab_size_;
  std::vector<int32_t> stop_token_ids_;
  std::vector<int32_t> special_token_ids_;
  bool add_prefix_space_;
  std::vector<uint8_t> is_text_;
  std::vector<uint8_t> is_stop_;
  std::vector<int32_t> sorted_text_tokens_;
  std::vector<int32_t> lcp_;
  std::string sorted_token_bytes_;
  std::vector<int32_t> sorted_token_offsets_;
  int32_t max_token_bytes_ = 0;
  mutable std::once_flag special_token_text_once_;
  mutable std::unique_ptr<const SpecialTokenText> special_token_text_;
  // Written once, under attachment_mutex_; attachment_ is published after the object it
  // points to is complete (release), so a reader that sees it non-null needs no lock.
  mutable ForkSafeMutex attachment_mutex_;
  mutable std::unique_ptr<const VocabularyAttachment> attachment_owner_;
  mutable std::atomic<const VocabularyAttachment*> attachment_{nullptr};
};

}  // namespace xg2

#endif  // XG2_TOKENIZER_TOKENIZER_INFO_H_
