#include "support/json_canonical.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

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

// Reads one JSON value from text[*i] (whitespace around it skipped) and appends its key to
// *out; false on malformed text. `depth` bounds the recursion (a grammar's items are
// generated text, but a hand-written grammar's need not be shallow).
bool ReadValueKey(std::string_view text, size_t* i, std::string* out, int depth);

void SkipSpace(std::string_view text, size_t* i) {
  while (*i < text.size() && IsJsonSpace(text[*i])) ++*i;
}

void AppendPart(const std::string& part, std::string* out) {
  *out += std::to_string(part.size());
  out->push_back(':');
  *out += part;
}

// The end of the string token starting at text[i] (one past its closing quote), or npos.
size_t StringEnd(std::string_view text, size_t i) {
  for (size_t k = i + 1; k < text.size(); ++k) {
    if (text[k] == '\\') {
      ++k;
    } else if (text[k] == '"') {
      return k + 1;
    }
  }
  return std::string_view::npos;
}

bool ReadContainerKey(std::string_view text, size_t* i, std::string* out, int depth) {
  const bool object = text[*i] == '{';
  const char close = object ? '}' : ']';
  ++*i;
  std::vector<std::pair<std::string, std::string>> members;  // name key, value key
  std::vector<std::string> items;
  SkipSpace(text, i);
  if (*i < text.size() && text[*i] == close) {
    ++*i;
  } else {
    while (true) {
      std::string name;
      if (object) {
        SkipSpace(text, i);
        const size_t end = *i < text.size() && text[*i] == '"' ? StringEnd(text, *i) : std::string_view::npos;
        if (end == std::string_view::npos || !StringKey(text.substr(*i, end - *i), &name)) return false;
        *i = end;
        SkipSpace(text, i);
        if (*i >= text.size() || text[*i] != ':') return false;
        ++*i;
      }
      std::string value;
      if (!ReadValueKey(text, i, &value, depth + 1)) return false;
      if (object) {
        members.emplace_back(std::move(name), std::move(value));
      } else {
        items.push_back(std::move(value));
      }
      SkipSpace(text, i);
      if (*i >= text.size()) return false;
      if (text[(*i)++] == close) break;
      if (text[*i - 1] != ',') return false;
    }
  }
  if (!object) {
    out->push_back('a');
    for (const std::string& item : items) AppendPart(item, out);
    return true;
  }
  // Sorted by name, the last of a repeated name first among its equals, then kept alone.
  std::vector<size_t> order(members.size());
  for (size_t k = 0; k < order.size(); ++k) order[k] = k;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return members[a].first != members[b].first ? members[a].first < members[b].first : a > b;
  });
  out->push_back('o');
  for (size_t k = 0; k < order.size(); ++k) {
    if (k > 0 && members[order[k]].first == members[order[k - 1]].first) continue;
    AppendPart(members[order[k]].first, out);
    AppendPart(members[order[k]].second, out);
  }
  return true;
}

bool ReadValueKey(std::string_view text, size_t* i, std::string* out, int depth) {
  constexpr int kMaxDepth = 1000;
  SkipSpace(text, i);
  if (*i >= text.size() || depth > kMaxDepth) return false;
  if (text[*i] == '{' || text[*i] == '[') return ReadContainerKey(text, i, out, depth);
  size_t end = *i;
  if (text[*i] == '"') {
    end = StringEnd(text, *i);
    if (end == std::string_view::npos) return false;
  } else {
    while (end < text.size() && !IsJsonSpace(text[end]) && text[end] != ',' && text[end] != '}' &&
           text[end] != ']' && text[end] != ':') {
      ++end;
    }
  }
  const std::string key = CanonicalJsonScalar(text.substr(*i, end - *i));
  if (key.empty() || key[0] == 'r') return false;
  *out += key;
  *i = end;
  return true;
}

bool WholeValueKey(std::string_view text, std::string* out) {
  size_t i = 0;
  out->clear();
  if (!ReadValueKey(text, &i, out, 0)) return false;
  SkipSpace(text, &i);
  return i == text.size();
}

}  // namespace

std::string CanonicalJsonValue(std::string_view text) {
  std::string key;
  if (WholeValueKey(text, &key)) return key;
  size_t first = 0;
  SkipSpace(text, &first);
  if (first < text.size() && text[first] == '{' && WholeValueKey(std::string(text) + "}", &key)) return key;
  return "r" + std::string(text);
}

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
