// Token literals: grammar terminals that only one specific token can produce (a special token
// such as gpt-oss `<|channel|>`, written `Token(200005)` in EBNF).
//
// The matcher works on bytes, so a token literal is spelled as a byte string that no text can
// contain: the lead byte 0xFF followed by kTokenLiteralDigits base-7 digits, each stored as a
// byte in [0xF8, 0xFE]. All of these bytes are invalid in UTF-8, and every other terminal of a
// grammar (literals, classes, `.`) is valid UTF-8, so only the token itself can produce them.
// A grammar that uses token literals is matched against a derived vocabulary
// (tokenizer/token_literals.h) in which each literal's token decodes to its spelling and every
// ordinary token containing such a byte is dropped.
//
// Invariants: every spelling is exactly kTokenLiteralSize bytes; distinct ids have distinct
// spellings; a run of token-literal bytes in any matched text is a concatenation of whole
// spellings (ordinary text never contains these bytes), so spellings cannot be misaligned.
#ifndef XG2_GRAMMAR_TOKEN_LITERAL_H_
#define XG2_GRAMMAR_TOKEN_LITERAL_H_

#include <cstdint>
#include <string>
#include <string_view>

namespace xg2 {

constexpr uint8_t kTokenLiteralLead = 0xFF;
constexpr uint8_t kTokenLiteralDigitBase = 0xF8;
constexpr int kTokenLiteralDigits = 7;
constexpr int kTokenLiteralSize = 1 + kTokenLiteralDigits;
// 7^7 - 1: the largest token id a literal can name.
constexpr int32_t kMaxTokenLiteralId = 823542;

// True for the bytes a token literal spelling is made of (and that UTF-8 never uses).
inline bool IsTokenLiteralByte(uint8_t byte) { return byte >= kTokenLiteralDigitBase; }

// The spelling of token `id` (0 <= id <= kMaxTokenLiteralId).
inline std::string TokenLiteralBytes(int32_t id) {
  std::string out(kTokenLiteralSize, static_cast<char>(kTokenLiteralLead));
  for (int i = kTokenLiteralDigits; i >= 1; --i) {
    out[i] = static_cast<char>(kTokenLiteralDigitBase + id % 7);
    id /= 7;
  }
  return out;
}

// Decodes the spelling at `bytes[pos]`; -1 when no well-formed spelling starts there.
inline int32_t DecodeTokenLiteral(std::string_view bytes, size_t pos) {
  if (pos + kTokenLiteralSize > bytes.size() ||
      static_cast<uint8_t>(bytes[pos]) != kTokenLiteralLead) {
    return -1;
  }
  int32_t id = 0;
  for (int i = 1; i <= kTokenLiteralDigits; ++i) {
    uint8_t digit = static_cast<uint8_t>(bytes[pos + i]);
    if (digit < kTokenLiteralDigitBase || digit > kTokenLiteralDigitBase + 6) return -1;
    id = id * 7 + (digit - kTokenLiteralDigitBase);
  }
  return id;
}

// Token-set markers: the terminal "one whole token from token set k" (TokenSet / ExcludeToken,
// grammar_ast.h TokenSetDef) is spelled kTokenLiteralLead, kTokenLiteralLead, then k in the
// same seven base-7 digits. No token ever decodes to these bytes (the derived vocabulary drops
// every token with a byte >= 0xF8), so the byte-level scan never crosses a marker; only the
// token step of the Earley parser does (EarleyParser::AdvanceToken), at a token boundary.
// A marker and a token literal differ in their second byte, so neither is a prefix of the other.
constexpr int kTokenSetMarkerSize = 2 + kTokenLiteralDigits;

inline std::string TokenSetMarkerBytes(int32_t set) {
  return std::string(1, static_cast<char>(kTokenLiteralLead)) + TokenLiteralBytes(set);
}

// The set index of the marker at `bytes[pos]`; -1 when none starts there.
inline int32_t DecodeTokenSetMarker(std::string_view bytes, size_t pos) {
  if (pos + kTokenSetMarkerSize > bytes.size() ||
      static_cast<uint8_t>(bytes[pos]) != kTokenLiteralLead) {
    return -1;
  }
  return DecodeTokenLiteral(bytes, pos + 1);
}

}  // namespace xg2

#endif  // XG2_GRAMMAR_TOKEN_LITERAL_H_
