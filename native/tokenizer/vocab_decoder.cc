#include "tokenizer/vocab_decoder.h"

#include <array>
#include <cstdint>

#include "support/error.h"

namespace xg2 {
namespace {

// GPT-2's byte alphabet: bytes that are printable Latin-1 stand for themselves; the other 68
// bytes (controls, space, DEL, NBSP, soft hyphen) are mapped, in increasing order, to the code
// points U+0100..U+0143. So "Ġ" (U+0120) is the space and "Ċ" (U+010A) the newline.
constexpr uint32_t kByteLevelAlphabetEnd = 0x144;

bool IsSelfMappedByte(uint32_t byte) {
  return (byte >= 0x21 && byte <= 0x7E) || (byte >= 0xA1 && byte <= 0xAC) ||
         (byte >= 0xAE && byte <= 0xFF);
}

// Code point -> byte, or -1 for code points outside the alphabet.
const std::array<int16_t, kByteLevelAlphabetEnd>& ByteLevelInverse() {
  static const std::array<int16_t, kByteLevelAlphabetEnd> table = [] {
    std::array<int16_t, kByteLevelAlphabetEnd> inverse;
    inverse.fill(-1);
    uint32_t next_stand_in = 0x100;
    for (uint32_t byte = 0; byte < 256; ++byte) {
      uint32_t code_point = IsSelfMappedByte(byte) ? byte : next_stand_in++;
      inverse[code_point] = static_cast<int16_t>(byte);
    }
    return inverse;
  }();
  return table;
}

// Decodes the UTF-8 code point at text[pos], advancing pos. Returns false on malformed input.
// Only the lead byte and continuation bytes are checked: that is enough to tell alphabet
// members, which are all at most two bytes long, from anything else.
bool NextCodePoint(const std::string& text, size_t& pos, uint32_t& code_point) {
  auto lead = static_cast<unsigned char>(text[pos]);
  size_t length = lead < 0x80 ? 1 : (lead >> 5) == 0x6 ? 2 : (lead >> 4) == 0xE ? 3
                                  : (lead >> 3) == 0x1E ? 4 : 0;
  if (length == 0 || pos + length > text.size()) return false;
  code_point = length == 1 ? lead : lead & (0x7F >> length);
  for (size_t i = 1; i < length; ++i) {
    auto continuation = static_cast<unsigned char>(text[pos + i]);
    if ((continuation & 0xC0) != 0x80) return false;
    code_point = (code_point << 6) | (continuation & 0x3F);
  }
  pos += length;
  return true;
}

// Appends the bytes a byte-level token stands for to `out` (when not null); false (out
// unspecified) when some code point is outside the alphabet.
bool DecodeByteLevelToken(const std::string& token, std::string* out) {
  const auto& inverse = ByteLevelInverse();
  size_t pos = 0;
  while (pos < token.size()) {
    uint32_t code_point;
    if (!NextCodePoint(token, pos, code_point) || code_point >= kByteLevelAlphabetEnd ||
        inverse[code_point] < 0) {
      return false;
    }
    if (out != nullptr) out->push_back(static_cast<char>(inverse[code_point]));
  }
  return true;
}

int HexDigitValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// The byte of a sentencepiece byte token "<0xAB>", or -1.
int ByteFallbackTokenValue(const std::string& token) {
  if (token.size() != 6 || token.compare(0, 3, "<0x") != 0 || token[5] != '>') return -1;
  int high = HexDigitValue(token[3]);
  int low = HexDigitValue(token[4]);
  return high < 0 || low < 0 ? -1 : high * 16 + low;
}

const char kSpaceMarker[] = "\xE2\x96\x81";  // "▁" U+2581, sentencepiece's space
constexpr size_t kSpaceMarkerLength = 3;

std::string DecodeByteFallbackToken(const std::string& token) {
  int byte = ByteFallbackTokenValue(token);
  if (byte >= 0) return std::string(1, static_cast<char>(byte));
  std::string out;
  out.reserve(token.size());
  for (size_t pos = 0; pos < token.size();) {
    if (token.compare(pos, kSpaceMarkerLength, kSpaceMarker) == 0) {
      out.push_back(' ');
      pos += kSpaceMarkerLength;
    } else {
      out.push_back(token[pos++]);
    }
  }
  return out;
}

}  // namespace

VocabType DetectVocabType(const std::vector<std::string>& encoded_tokens) {
  size_t byte_tokens = 0;
  size_t space_marker_tokens = 0;
  size_t raw_space_tokens = 0;
  size_t byte_level_marker_tokens = 0;
  size_t outside_byte_level_alphabet = 0;
  for (const std::string& token : encoded_tokens) {
    if (ByteFallbackTokenValue(token) >= 0) ++byte_tokens;
    if (token.find(kSpaceMarker) != std::string::npos) ++space_marker_tokens;
    if (token.find(' ') != std::string::npos) ++raw_space_tokens;
    if (token.find("\xC4\xA0") != std::string::npos || token.find("\xC4\x8A") != std::string::npos) {
      ++byte_level_marker_tokens;  // "Ġ" or "Ċ"
    }
    if (!DecodeByteLevelToken(token, nullptr)) ++outside_byte_level_alphabet;
  }
  if (byte_tokens > 0 && space_marker_tokens > raw_space_tokens) return VocabType::kByteFallback;
  if (byte_level_marker_tokens > 0 && outside_byte_level_alphabet * 100 <= encoded_tokens.size()) {
    return VocabType::kByteLevel;
  }
  return VocabType::kRaw;
}

std::vector<std::string> DecodeVocabulary(const std::vector<std::string>& encoded_tokens,
                                          VocabType type) {
  if (type != VocabType::kRaw && type != VocabType::kByteFallback &&
      type != VocabType::kByteLevel) {
    throw InvalidArgumentError("unknown vocab type " + std::to_string(static_cast<int>(type)));
  }
  std::vector<std::string> decoded;
  decoded.reserve(encoded_tokens.size());
  for (const std::string& token : encoded_tokens) {
    switch (type) {
      case VocabType::kRaw:
        decoded.push_back(token);
        break;
      case VocabType::kByteFallback:
        decoded.push_back(DecodeByteFallbackToken(token));
        break;
      case VocabType::kByteLevel: {
        std::string bytes;
        bytes.reserve(token.size());
        if (!DecodeByteLevelToken(token, &bytes)) bytes = token;
        decoded.push_back(std::move(bytes));
        break;
      }
    }
  }
  return decoded;
}

}  // namespace xg2
