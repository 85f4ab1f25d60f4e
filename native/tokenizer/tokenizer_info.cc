#include "tokenizer/tokenizer_info.h"

#include <algorithm>
#include <cstdint>
#include <string_view>

#include "support/dcheck.h"
#include "support/error.h"

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
}

const SpecialTokenText& TokenizerInfo::special_token_text() const {
  std::call_once(special_token_text_once_, [this] {
    special_token_text_ = std::make_unique<const SpecialTokenText>(decoded_tokens_, special_token_ids_);
  });
  return *special_token_text_;
}

const VocabularyAttachment& TokenizerInfo::Attachment(AttachmentBuilder build) const {
  if (const VocabularyAttachment* built = attachment_.load(std::memory_order_acquire)) return *built;
  std::lock_guard<ForkSafeMutex> lock(attachment_mutex_);
  if (const VocabularyAttachment* built = attachment_.load(std::memory_order_relaxed)) return *built;
  attachment_owner_ = build(*this);
  attachment_.store(attachment_owner_.get(), std::memory_order_release);
  return *attachment_owner_;
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
  if (const VocabularyAttachment* attached = attachment_.load(std::memory_order_acquire)) {
    bytes += attached->MemoryBytes();
  }
  return bytes;
}

}  // namespace xg2
