#include "support/utf8.h"

#include <algorithm>

namespace xg2 {

void AppendUtf8(uint32_t cp, std::string* out) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

namespace {

// Largest code point whose encoding has `length` bytes.
uint32_t MaxCodepointOfLength(int length) {
  switch (length) {
    case 1: return 0x7F;
    case 2: return 0x7FF;
    case 3: return 0xFFFF;
    default: return 0x10FFFF;
  }
}

int EncodedLength(uint32_t cp) { return cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4; }

// Recursive split: a range [first, last] of equal-length encodings is emitted as one
// sequence when, at every continuation position, the low and high code points cover the full
// 6-bit span (so the byte ranges are independent); otherwise it is split on the boundary
// of the leading continuation block.
void SplitSameLength(uint32_t first, uint32_t last, int length,
                     std::vector<Utf8ByteSequence>* out) {
  if (length == 1) {
    Utf8ByteSequence seq;
    seq.length = 1;
    seq.lo[0] = static_cast<uint8_t>(first);
    seq.hi[0] = static_cast<uint8_t>(last);
    out->push_back(seq);
    return;
  }
  // Split where the trailing continuation bytes are not a full block.
  for (int i = 1; i < length; ++i) {
    uint32_t block = (1u << (6 * i)) - 1;  // low bits covered by the last i continuation bytes
    if ((first & ~block) != (last & ~block)) {
      if ((first & block) != 0) {
        SplitSameLength(first, first | block, length, out);
        SplitSameLength((first | block) + 1, last, length, out);
        return;
      }
      if ((last & block) != block) {
        SplitSameLength(first, (last & ~block) - 1, length, out);
        SplitSameLength(last & ~block, last, length, out);
        return;
      }
    }
  }
  std::string lo_bytes, hi_bytes;
  AppendUtf8(first, &lo_bytes);
  AppendUtf8(last, &hi_bytes);
  Utf8ByteSequence seq;
  seq.length = length;
  for (int i = 0; i < length; ++i) {
    seq.lo[i] = static_cast<uint8_t>(lo_bytes[i]);
    seq.hi[i] = static_cast<uint8_t>(hi_bytes[i]);
  }
  out->push_back(seq);
}

}  // namespace

std::vector<Utf8ByteSequence> Utf8RangeSequences(uint32_t first, uint32_t last) {
  std::vector<Utf8ByteSequence> out;
  while (first <= last) {
    int length = EncodedLength(first);
    uint32_t chunk_last = std::min(last, MaxCodepointOfLength(length));
    SplitSameLength(first, chunk_last, length, &out);
    if (chunk_last == last) break;
    first = chunk_last + 1;
  }
  return out;
}

bool IsValidUtf8(const std::string& bytes) {
  size_t i = 0, n = bytes.size();
  while (i < n) {
    uint8_t c = static_cast<uint8_t>(bytes[i]);
    int length;
    uint32_t cp;
    if (c < 0x80) {
      ++i;
      continue;
    } else if ((c & 0xE0) == 0xC0) {
      length = 2, cp = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      length = 3, cp = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      length = 4, cp = c & 0x07;
    } else {
      return false;
    }
    if (i + length > n) return false;
    for (int k = 1; k < length; ++k) {
      uint8_t cc = static_cast<uint8_t>(bytes[i + k]);
      if ((cc & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (cc & 0x3F);
    }
    if (EncodedLength(cp) != length || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
      return false;
    }
    i += length;
  }
  return true;
}

}  // namespace xg2
