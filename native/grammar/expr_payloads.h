// The payloads of grammar leaves (grammar_ast.h, ExprNode): the bytes of a kBytes node and the
// code-point ranges of a kCharClass node. Each is 16 bytes, against 32 for a std::string and 24
// for a std::vector, so that a whole ExprNode fits 80 bytes: a frontend writes one node per
// grammar expression, and the node table is most of what a compile's frontend writes.
//
// Both read like the standard containers they replace (size, [], begin/end, ==), and both hold
// their contents in one of three ways:
// - inline, in the object itself (up to 15 bytes; one range), with no heap block at all;
// - owned, a heap block of exactly the contents' size, copied when the payload is copied;
// - borrowed (Borrow), a pointer to contents that live for the whole process, copied as a
//   pointer. Only the process-wide tables of the JSON Schema frontend (its parsed character
//   classes and its lowered prebuilt bodies, frontends/json_schema/ebnf_builder.cc) lend theirs:
//   every grammar copied from one that borrows shares the same contents, so they must never be
//   freed.
#ifndef XG2_GRAMMAR_EXPR_PAYLOADS_H_
#define XG2_GRAMMAR_EXPR_PAYLOADS_H_

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <iosfwd>
#include <string>
#include <string_view>
#include <vector>

namespace xg2 {

// Inclusive range of Unicode code points [first, last].
struct CodepointRange {
  uint32_t first;
  uint32_t last;
  bool operator==(const CodepointRange& o) const { return first == o.first && last == o.last; }
};

// A byte string (a kBytes node's literal). Invariant: tag_byte() is the size when inline
// (0..kInlineCapacity), else kOwnedTag or kBorrowedTag with the pointer and size stored in
// the first twelve bytes.
class ExprBytes {
 public:
  ExprBytes() noexcept { SetInlineSize(0); }
  ExprBytes(std::string_view text) { Assign(text); }  // NOLINT(runtime/explicit)
  ExprBytes(const std::string& text) { Assign(text); }  // NOLINT(runtime/explicit)
  ExprBytes(const char* text) { Assign(std::string_view(text)); }  // NOLINT(runtime/explicit)
  ExprBytes(const ExprBytes& other) { CopyFrom(other); }
  ExprBytes(ExprBytes&& other) noexcept { Steal(&other); }
  ExprBytes& operator=(const ExprBytes& other) {
    if (this != &other) {
      Release();
      CopyFrom(other);
    }
    return *this;
  }
  ExprBytes& operator=(ExprBytes&& other) noexcept {
    if (this != &other) {
      Release();
      Steal(&other);
    }
    return *this;
  }
  ~ExprBytes() { Release(); }

  // A payload that reads `lasting` in place; `lasting` must live for the process.
  static ExprBytes Borrow(std::string_view lasting);

  size_t size() const { return IsInline() ? tag_byte() : HeapSize(); }
  bool empty() const { return size() == 0; }
  const char* data() const { return IsInline() ? reinterpret_cast<const char*>(raw_) : HeapData(); }
  char operator[](size_t i) const { return data()[i]; }
  const char* begin() const { return data(); }
  const char* end() const { return data() + size(); }
  operator std::string_view() const { return std::string_view(data(), size()); }  // NOLINT(runtime/explicit)
  std::string str() const { return std::string(data(), size()); }
  void clear() {
    Release();
    SetInlineSize(0);
  }
  // Heap bytes this payload owns (0 when inline or borrowed), for memory accounting.
  size_t owned_heap_bytes() const { return tag_byte() == kOwnedTag ? HeapSize() : 0; }

  friend bool operator==(const ExprBytes& a, const ExprBytes& b) {
    return std::string_view(a) == std::string_view(b);
  }
  friend bool operator==(const ExprBytes& a, std::string_view b) { return std::string_view(a) == b; }
  friend bool operator==(std::string_view a, const ExprBytes& b) { return a == std::string_view(b); }
  // Each kind of text a payload is compared with is named, so that no comparison has to choose
  // between converting the text to a payload and the payload to a view.
  friend bool operator==(const ExprBytes& a, const std::string& b) { return std::string_view(a) == b; }
  friend bool operator==(const std::string& a, const ExprBytes& b) { return a == std::string_view(b); }
  friend bool operator==(const ExprBytes& a, const char* b) { return std::string_view(a) == b; }
  friend bool operator==(const char* a, const ExprBytes& b) { return a == std::string_view(b); }
  friend bool operator!=(const ExprBytes& a, const ExprBytes& b) { return !(a == b); }
  friend bool operator!=(const ExprBytes& a, std::string_view b) { return !(a == b); }
  friend bool operator!=(std::string_view a, const ExprBytes& b) { return !(a == b); }
  friend bool operator!=(const ExprBytes& a, const std::string& b) { return !(a == b); }
  friend bool operator!=(const std::string& a, const ExprBytes& b) { return !(a == b); }
  friend bool operator!=(const ExprBytes& a, const char* b) { return !(a == b); }
  friend bool operator!=(const char* a, const ExprBytes& b) { return !(a == b); }

 private:
  static constexpr size_t kInlineCapacity = 15;
  static constexpr uint8_t kOwnedTag = 0x40;
  static constexpr uint8_t kBorrowedTag = 0x41;

  uint8_t tag_byte() const { return raw_[15]; }
  bool IsInline() const { return tag_byte() <= kInlineCapacity; }
  void SetInlineSize(size_t size) { raw_[15] = static_cast<uint8_t>(size); }
  const char* HeapData() const {
    const char* pointer;
    std::memcpy(&pointer, raw_, sizeof(pointer));
    return pointer;
  }
  size_t HeapSize() const {
    uint32_t size;
    std::memcpy(&size, raw_ + 8, sizeof(size));
    return size;
  }
  void SetHeap(const char* pointer, size_t size, uint8_t tag);
  void Assign(std::string_view text);
  void CopyFrom(const ExprBytes& other) {
    if (other.tag_byte() == kOwnedTag) {
      Assign(other);
    } else {
      std::memcpy(raw_, other.raw_, sizeof(raw_));
    }
  }
  void Steal(ExprBytes* other) {
    std::memcpy(raw_, other->raw_, sizeof(raw_));
    other->SetInlineSize(0);
  }
  void Release() {
    if (tag_byte() == kOwnedTag) delete[] HeapData();
  }

  alignas(8) uint8_t raw_[16];
};

std::ostream& operator<<(std::ostream& out, const ExprBytes& bytes);

// A list of code-point ranges (a kCharClass node's class). Invariant: a list of at most one
// range is inline; a longer one is owned or borrowed.
class ExprRanges {
 public:
  ExprRanges() = default;
  ExprRanges(const CodepointRange* ranges, size_t count) { Assign(ranges, count); }
  ExprRanges(const std::vector<CodepointRange>& ranges) { Assign(ranges.data(), ranges.size()); }  // NOLINT(runtime/explicit)
  ExprRanges(std::initializer_list<CodepointRange> ranges) { Assign(ranges.begin(), ranges.size()); }
  ExprRanges(const ExprRanges& other) { CopyFrom(other); }
  ExprRanges(ExprRanges&& other) noexcept { Steal(&other); }
  ExprRanges& operator=(const ExprRanges& other) {
    if (this != &other) {
      Release();
      CopyFrom(other);
    }
    return *this;
  }
  ExprRanges& operator=(ExprRanges&& other) noexcept {
    if (this != &other) {
      Release();
      Steal(&other);
    }
    return *this;
  }
  ~ExprRanges() { Release(); }

  // A payload that reads `lasting` in place; `lasting` must live for the process and not change.
  static ExprRanges Borrow(const std::vector<CodepointRange>& lasting) { return Borrow(lasting.data(), lasting.size()); }
  static ExprRanges Borrow(const ExprRanges& lasting) { return Borrow(lasting.data(), lasting.size()); }

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  const CodepointRange* data() const { return mode_ == Mode::kInline ? &one_ : heap_; }
  const CodepointRange& operator[](size_t i) const { return data()[i]; }
  const CodepointRange* begin() const { return data(); }
  const CodepointRange* end() const { return data() + size_; }
  std::vector<CodepointRange> to_vector() const { return std::vector<CodepointRange>(begin(), end()); }
  // Heap bytes this payload owns (0 when inline or borrowed), for memory accounting.
  size_t owned_heap_bytes() const { return mode_ == Mode::kOwned ? size_ * sizeof(CodepointRange) : 0; }

  friend bool operator==(const ExprRanges& a, const ExprRanges& b) {
    if (a.size_ != b.size_) return false;
    for (size_t i = 0; i < a.size_; ++i) {
      if (!(a[i] == b[i])) return false;
    }
    return true;
  }
  friend bool operator!=(const ExprRanges& a, const ExprRanges& b) { return !(a == b); }

 private:
  enum class Mode : uint8_t { kInline, kOwned, kBorrowed };

  static ExprRanges Borrow(const CodepointRange* lasting, size_t count);
  void Assign(const CodepointRange* ranges, size_t count);
  void CopyFrom(const ExprRanges& other) {
    if (other.mode_ == Mode::kOwned) {
      Assign(other.heap_, other.size_);
    } else {
      std::memcpy(static_cast<void*>(this), &other, sizeof(*this));
    }
  }
  void Steal(ExprRanges* other) {
    std::memcpy(static_cast<void*>(this), other, sizeof(*this));
    other->size_ = 0;
    other->mode_ = Mode::kInline;
  }
  void Release() {
    if (mode_ == Mode::kOwned) delete[] heap_;
  }

  uint32_t size_ = 0;
  Mode mode_ = Mode::kInline;
  union {
    CodepointRange one_{0, 0};
    const CodepointRange* heap_;
  };
};

static_assert(sizeof(ExprBytes) == 16 && sizeof(ExprRanges) == 16, "a leaf payload is two words");

}  // namespace xg2

#endif  // XG2_GRAMMAR_EXPR_PAYLOADS_H_
