// UTF-8 helpers shared by the frontends and the FSM builder.
#ifndef XG2_SUPPORT_UTF8_H_
#define XG2_SUPPORT_UTF8_H_

#include <cstdint>
#include <string>
#include <vector>

namespace xg2 {

// Appends the UTF-8 encoding of `codepoint` (<= 0x10FFFF). A surrogate gets its 3-byte form,
// which is not valid UTF-8: only callers that use the bytes as a key pass one.
void AppendUtf8(uint32_t codepoint, std::string* out);

// One step of a byte-range sequence: the bytes of a UTF-8 encoded character, each within
// [lo[i], hi[i]]. Every character of a code point range is covered by a few such sequences.
struct Utf8ByteSequence {
  int length = 0;
  uint8_t lo[4] = {0, 0, 0, 0};
  uint8_t hi[4] = {0, 0, 0, 0};
};

// Splits the code point range [first, last] (no surrogates inside) into byte-range
// sequences whose union is exactly the set of UTF-8 encodings of the range.
std::vector<Utf8ByteSequence> Utf8RangeSequences(uint32_t first, uint32_t last);

// True when `bytes` is well-formed UTF-8 (no overlongs, surrogates or values > 0x10FFFF).
bool IsValidUtf8(const std::string& bytes);

}  // namespace xg2

#endif  // XG2_SUPPORT_UTF8_H_
