#include "support/json_canonical.h"

#include <cstdint>

#include "support/utf8.h"

namespace xg2 {

namespace {

bool IsJsonSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }
bool IsDigit(char c) { return c >= '0' && c <= '9'; }

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Reads four hex digits at text[i]; -1 when they are not there.
int32_t ReadHex4(std::string_view text, size_t i) {
  if (i + 4 > text.size()) return -1;
  int32_t value = 0;
  for (size_t k = 0; k < 4; ++k) {
    const int digit = HexValue(text[i + k]);
    if (digit < 0) return -1;
    value = value * 16 + digit;
  }
  return value;
}

// "s" + the decoded string, or false on malformed text.
bool StringKey(std::string_view text, std::string* out) {
  if (text.size() < 2 || text.front() != '"' || text.back() != '"') return false;
  out->assign("s");
  const std::string_view body = text.substr(1, text.size() - 2);
  for (size_t i = 0; i < body.size(); ++i) {
    if (body[i] != '\\') {
      if (body[i] == '"') return false;
      out->push_back(body[i]);
      continue;
    }
    if (++i == body.size()) return false;
    switch (body[i]) {
      case '"': out->push_back('"'); break;
      case '\\': out->push_back('\\'); break;
      case '/': out->push_back('/'); break;
      case 'b': out->push_back('\b'); break;
      case 'f': out->push_back('\f'); break;
      case 'n': out->push_back('\n'); break;
      case 'r': out->push_back('\r'); break;
      case 't': out->push_back('\t'); break;
      case 'u': {
        int32_t cp = ReadHex4(body, i + 1);
        if (cp < 0) return false;
        i += 4;
        // A high surrogate followed by an escaped low surrogate is one code point.
        if (cp >= 0xD800 && cp < 0xDC00 && body.substr(i + 1, 2) == "\\u") {
          const int32_t low = ReadHex4(body, i + 3);
          if (low >= 0xDC00 && low < 0xE000) {
            cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
            i += 6;
          }
        }
        // A lone surrogate gets its 3-byte form, so two spellings of it still key alike
        // (Python's json keeps lone surrogates).
        AppendUtf8(static_cast<uint32_t>(cp), out);
        break;
      }
      default: return false;
    }
  }
  return true;
}

// "n" + sign + significant digits + "e" + exponent of the last digit, or false on malformed
// text. Zero (any sign) is "n0". An exponent beyond 10^17 keeps its digits as written next
// to the adjustment, so that such values key alike only when spelled with the same exponent.
bool NumberKey(std::string_view text, std::string* out) {
  size_t i = 0;
  const bool negative = i < text.size() && text[i] == '-';
  if (negative) ++i;
  std::string digits;
  int64_t adjust = 0;  // the power of ten of the last digit in `digits`, before the exponent
  const size_t int_start = i;
  while (i < text.size() && IsDigit(text[i])) digits.push_back(text[i++]);
  if (i == int_start) return false;
  if (i < text.size() && text[i] == '.') {
    ++i;
    const size_t frac_start = i;
    while (i < text.size() && IsDigit(text[i])) {
      digits.push_back(text[i++]);
      --adjust;
    }
    if (i == frac_start) return false;
  }
  std::string exponent_text;
  bool exponent_negative = false;
  if (i < text.size() && (text[i] == 'e' || text[i] == 'E')) {
    ++i;
    if (i < text.size() && (text[i] == '+' || text[i] == '-')) exponent_negative = text[i++] == '-';
    const size_t exp_start = i;
    while (i < text.size() && IsDigit(text[i])) exponent_text.push_back(text[i++]);
    if (i == exp_start) return false;
  }
  if (i != text.size()) return false;
  size_t first = digits.find_first_not_of('0');
  if (first == std::string::npos) {
    out->assign("n0");
    return true;
  }
  digits.erase(0, first);
  while (digits.back() == '0') {
    digits.pop_back();
    ++adjust;
  }
  const size_t exp_first = exponent_text.find_first_not_of('0');
  exponent_text.erase(0, exp_first == std::string::npos ? exponent_text.size() : exp_first);
  out->assign(negative ? "n-" : "n+");
  *out += digits;
  if (exponent_text.size() <= 17) {
    int64_t exponent = 0;
    for (char c : exponent_text) exponent = exponent * 10 + (c - '0');
    *out += "e" + std::to_string((exponent_negative ? -exponent : exponent) + adjust);
  } else {
    *out += std::string("E") + (exponent_negative ? "-" : "+") + exponent_text + "a" + std::to_string(adjust);
  }
  return true;
}

}  // namespace

std::string CanonicalJsonScalar(std::string_view text) {
  while (!text.empty() && IsJsonSpace(text.front())) text.remove_prefix(1);
  while (!text.empty() && IsJsonSpace(text.back())) text.remove_suffix(1);
  std::string key;
  if (!text.empty() && text.front() == '"') {
    if (StringKey(text, &key)) return key;
  } else if (text == "true" || text == "false" || text == "null") {
    return "l" + std::string(text);
  } else if (!text.empty() && (text.front() == '-' || IsDigit(text.front()))) {
    if (NumberKey(text, &key)) return key;
  }
  return "r" + std::string(text);
}

}  // namespace xg2
