// Little-endian byte streams for the serialized formats (matcher/grammar_serialization.h).
//
// The writer appends fixed-width integers, length-prefixed strings and vectors of integers.
// The reader checks every length against the bytes left before it reads or allocates, so a
// truncated or corrupt blob raises DeserializationError naming the field and offset, and a
// huge length prefix never turns into a huge allocation. Structs are written field by field
// (never as raw memory: padding bytes would make equal objects serialize differently).
#ifndef XG2_MATCHER_SERIAL_STREAM_H_
#define XG2_MATCHER_SERIAL_STREAM_H_

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "support/error.h"

namespace xg2 {

// A blob that cannot be read back: truncated, corrupt, of another format or engine version,
// or made for another tokenizer. The message names what did not match.
class DeserializationError : public Error {
 public:
  using Error::Error;
};

// Vectors of integers are copied as one block where the host's layout is the format's.
constexpr bool kLittleEndianHost = __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__;

class ByteWriter {
 public:
  template <typename T>
  void Int(T value) {
    static_assert(std::is_integral<T>::value, "integers only");
    using U = std::make_unsigned_t<T>;
    U bits = static_cast<U>(value);
    for (size_t i = 0; i < sizeof(T); ++i) out_.push_back(static_cast<char>((bits >> (8 * i)) & 0xFF));
  }
  void Bytes(std::string_view bytes) {
    Int<uint64_t>(bytes.size());
    out_.append(bytes.data(), bytes.size());
  }
  void Raw(std::string_view bytes) { out_.append(bytes.data(), bytes.size()); }
  template <typename T>
  void Ints(const std::vector<T>& values) {
    Int<uint64_t>(values.size());
    if (kLittleEndianHost) {
      if (!values.empty()) out_.append(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(T));
    } else {
      for (T v : values) Int<T>(v);
    }
  }
  std::string& text() { return out_; }

 private:
  std::string out_;
};

class ByteReader {
 public:
  // `what` names the blob in messages ("compiled grammar", "tokenizer info").
  ByteReader(std::string_view data, const char* what) : data_(data), what_(what) {}

  size_t offset() const { return offset_; }
  size_t left() const { return data_.size() - offset_; }

  template <typename T>
  T Int(const char* field) {
    static_assert(std::is_integral<T>::value, "integers only");
    Need(sizeof(T), field);
    using U = std::make_unsigned_t<T>;
    U bits = 0;
    for (size_t i = 0; i < sizeof(T); ++i) {
      bits |= static_cast<U>(static_cast<uint8_t>(data_[offset_ + i])) << (8 * i);
    }
    offset_ += sizeof(T);
    return static_cast<T>(bits);
  }
  bool Bool(const char* field) {
    const uint8_t value = Int<uint8_t>(field);
    if (value > 1) Fail(std::string(field) + " is " + std::to_string(value) + ", not a boolean");
    return value == 1;
  }
  std::string_view Raw(size_t size, const char* field) {
    Need(size, field);
    std::string_view out = data_.substr(offset_, size);
    offset_ += size;
    return out;
  }
  std::string Bytes(const char* field) { return std::string(Raw(Count(1, field), field)); }
  // An element count whose elements take at least `min_element_bytes` each (checked against
  // the bytes left, so the count cannot ask for more memory than the blob could fill).
  size_t Count(size_t min_element_bytes, const char* field) {
    const uint64_t count = Int<uint64_t>(field);
    if (min_element_bytes > 0 && count > left() / min_element_bytes) {
      Fail(std::string(field) + " claims " + std::to_string(count) + " elements, more than the " +
           std::to_string(left()) + " bytes left");
    }
    return static_cast<size_t>(count);
  }
  template <typename T>
  std::vector<T> Ints(const char* field) {
    std::vector<T> out(Count(sizeof(T), field));
    if (kLittleEndianHost) {
      if (!out.empty()) std::memcpy(out.data(), Raw(out.size() * sizeof(T), field).data(), out.size() * sizeof(T));
    } else {
      for (T& v : out) v = Int<T>(field);
    }
    return out;
  }
  [[noreturn]] void Fail(const std::string& message) const {
    throw DeserializationError(std::string(what_) + " blob is corrupt at byte " + std::to_string(offset_) +
                               ": " + message);
  }

 private:
  void Need(size_t size, const char* field) const {
    if (size > left()) {
      throw DeserializationError(std::string(what_) + " blob is truncated: " + field + " at byte " +
                                 std::to_string(offset_) + " needs " + std::to_string(size) + " bytes, " +
                                 std::to_string(left()) + " left");
    }
  }
  std::string_view data_;
  const char* what_;
  size_t offset_ = 0;
};

}  // namespace xg2

#endif  // XG2_MATCHER_SERIAL_STREAM_H_
