// A byte-at-a-time UTF-8 decoder with eight states, for the mask cache's "UTF-8 region"
// shortcut (matcher/token_mask_cache.cc): a trie subtree whose tokens are all well-formed
// UTF-8 can be accepted wholesale at a DFA node that behaves like the decoder.
//
// Well-formed means RFC 3629 (no overlongs, no surrogates, nothing above U+10FFFF), the
// same byte ranges support/utf8.h encodes code point ranges with. A token may end inside a
// character (byte-level BPE splits characters); a "well-formed prefix" is a byte string that
// some well-formed string starts with.
#ifndef XG2_TOKENIZER_UTF8_DECODER_H_
#define XG2_TOKENIZER_UTF8_DECODER_H_

#include <cstdint>

namespace xg2 {

// Decoder states.
constexpr int8_t kUtf8Boundary = 0;  // between characters
constexpr int8_t kUtf8Need1 = 1;     // one continuation byte 80-BF left
constexpr int8_t kUtf8Need2 = 2;     // two left, the next one 80-BF
constexpr int8_t kUtf8Need3 = 3;     // three left, the next one 80-BF
constexpr int8_t kUtf8AfterE0 = 4;   // two left, the next one A0-BF (no overlongs)
constexpr int8_t kUtf8AfterED = 5;   // two left, the next one 80-9F (no surrogates)
constexpr int8_t kUtf8AfterF0 = 6;   // three left, the next one 90-BF (no overlongs)
constexpr int8_t kUtf8AfterF4 = 7;   // three left, the next one 80-8F (nothing above U+10FFFF)
constexpr int kUtf8DecoderStates = 8;
// Marks "not a well-formed prefix" where a state is stored in a byte.
constexpr uint8_t kUtf8Malformed = 0xFF;

// The decoder's step, or -1 where `byte` cannot follow in state `state`.
inline int8_t Utf8DecoderStep(int8_t state, uint8_t byte) {
  switch (state) {
    case kUtf8Boundary:
      if (byte < 0x80) return kUtf8Boundary;
      if (byte >= 0xC2 && byte <= 0xDF) return kUtf8Need1;
      if (byte == 0xE0) return kUtf8AfterE0;
      if (byte == 0xED) return kUtf8AfterED;
      if (byte >= 0xE1 && byte <= 0xEF) return kUtf8Need2;
      if (byte == 0xF0) return kUtf8AfterF0;
      if (byte >= 0xF1 && byte <= 0xF3) return kUtf8Need3;
      if (byte == 0xF4) return kUtf8AfterF4;
      return -1;
    case kUtf8Need1:
      return (byte & 0xC0) == 0x80 ? kUtf8Boundary : -1;
    case kUtf8Need2:
      return (byte & 0xC0) == 0x80 ? kUtf8Need1 : -1;
    case kUtf8Need3:
      return (byte & 0xC0) == 0x80 ? kUtf8Need2 : -1;
    case kUtf8AfterE0:
      return byte >= 0xA0 && byte <= 0xBF ? kUtf8Need1 : -1;
    case kUtf8AfterED:
      return byte >= 0x80 && byte <= 0x9F ? kUtf8Need1 : -1;
    case kUtf8AfterF0:
      return byte >= 0x90 && byte <= 0xBF ? kUtf8Need2 : -1;
    case kUtf8AfterF4:
      return byte >= 0x80 && byte <= 0x8F ? kUtf8Need2 : -1;
    default:
      return -1;
  }
}

}  // namespace xg2

#endif  // XG2_TOKENIZER_UTF8_DECODER_H_
