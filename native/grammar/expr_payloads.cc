#include "grammar/expr_payloads.h"

#include <algorithm>
#include <limits>
#include <ostream>

#include "support/dcheck.h"

namespace xg2 {

void ExprBytes::SetHeap(const char* pointer, size_t size, uint8_t tag) {
  XG2_DCHECK(size <= std::numeric_limits<uint32_t>::max(), "a literal's size fits 32 bits");
  const uint32_t size32 = static_cast<uint32_t>(size);
  std::memcpy(raw_, &pointer, sizeof(pointer));
  std::memcpy(raw_ + 8, &size32, sizeof(size32));
  raw_[15] = tag;
}

void ExprBytes::Assign(std::string_view text) {
  if (text.size() <= kInlineCapacity) {
    std::memcpy(raw_, text.data(), text.size());
    SetInlineSize(text.size());
    return;
  }
  char* block = new char[text.size()];
  std::memcpy(block, text.data(), text.size());
  SetHeap(block, text.size(), kOwnedTag);
}

ExprBytes ExprBytes::Borrow(std::string_view lasting) {
  ExprBytes bytes;
  if (lasting.size() <= kInlineCapacity) {
    bytes.Assign(lasting);  // as cheap to copy as a pointer, and read without one
  } else {
    bytes.SetHeap(lasting.data(), lasting.size(), kBorrowedTag);
  }
  return bytes;
}

std::ostream& operator<<(std::ostream& out, const ExprBytes& bytes) { return out << std::string_view(bytes); }

void ExprRanges::Assign(const CodepointRange* ranges, size_t count) {
  XG2_DCHECK(count <= std::numeric_limits<uint32_t>::max(), "a class's range count fits 32 bits");
  size_ = static_cast<uint32_t>(count);
  if (count <= 1) {
    mode_ = Mode::kInline;
    one_ = count == 1 ? ranges[0] : CodepointRange{0, 0};
    return;
  }
  CodepointRange* block = new CodepointRange[count];
  std::copy(ranges, ranges + count, block);
  mode_ = Mode::kOwned;
  heap_ = block;
}

ExprRanges ExprRanges::Borrow(const CodepointRange* lasting, size_t count) {
  ExprRanges ranges;
  if (count <= 1) {
    ranges.Assign(lasting, count);  // inline: as cheap to copy as a pointer
  } else {
    XG2_DCHECK(count <= std::numeric_limits<uint32_t>::max(), "a class's range count fits 32 bits");
    ranges.size_ = static_cast<uint32_t>(count);
    ranges.mode_ = Mode::kBorrowed;
    ranges.heap_ = lasting;
  }
  return ranges;
}

}  // namespace xg2
