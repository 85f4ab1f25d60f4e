#include "frontends/json_schema/decimal.h"

#include <algorithm>
#include <cstdlib>

namespace xg2 {

std::optional<Decimal> ParseDecimal(std::string_view lexeme) {
  Decimal value;
  size_t i = 0;
  if (i < lexeme.size() && lexeme[i] == '-') {
    value.negative = true;
    ++i;
  }
  std::string digits;
  long long exponent = 0;
  bool in_fraction = false;
  for (; i < lexeme.size() && lexeme[i] != 'e' && lexeme[i] != 'E'; ++i) {
    if (lexeme[i] == '.') {
      in_fraction = true;
      continue;
    }
    digits.push_back(lexeme[i]);
    if (in_fraction) --exponent;
  }
  if (i < lexeme.size()) {
    std::string_view written = lexeme.substr(i + 1);
    if (written.size() > 8) return std::nullopt;
    long long e = std::atoll(std::string(written[0] == '+' ? written.substr(1) : written).c_str());
    if (e > 1000000 || e < -1000000) return std::nullopt;
    exponent += e;
  }
  size_t first = digits.find_first_not_of('0');
  if (first == std::string::npos) return Decimal{};
  digits.erase(0, first);
  while (digits.back() == '0') {
    digits.pop_back();
    ++exponent;
  }
  value.digits = digits;
  value.exponent = exponent;
  return value;
}

namespace {

// Compares magnitudes.
int CompareMagnitude(const Decimal& a, const Decimal& b) {
  if (a.is_zero() || b.is_zero()) return a.is_zero() == b.is_zero() ? 0 : (a.is_zero() ? -1 : 1);
  // The position of the leading digit decides first.
  long long lead_a = static_cast<long long>(a.digits.size()) + a.exponent;
  long long lead_b = static_cast<long long>(b.digits.size()) + b.exponent;
  if (lead_a != lead_b) return lead_a < lead_b ? -1 : 1;
  size_t length = std::max(a.digits.size(), b.digits.size());
  for (size_t k = 0; k < length; ++k) {
    char x = k < a.digits.size() ? a.digits[k] : '0';
    char y = k < b.digits.size() ? b.digits[k] : '0';
    if (x != y) return x < y ? -1 : 1;
  }
  return 0;
}

}  // namespace

int CompareDecimal(const Decimal& a, const Decimal& b) {
  if (a.negative != b.negative) return a.negative ? -1 : 1;
  int magnitude = CompareMagnitude(a, b);
  return a.negative ? -magnitude : magnitude;
}

bool IsIntegral(const Decimal& value) { return value.exponent >= 0; }

bool Divides(const Decimal& b, const Decimal& a) {
  if (a.is_zero()) return true;
  // a / b = (A / B) * 10^(ea - eb): integral iff B divides A * 10^(ea - eb), done digit by
  // digit on the decimal strings (long division keeps only the remainder).
  long long shift = a.exponent - b.exponent;
  // With shift < 0, B * 10^-shift would have to divide A, which has no trailing zeros.
  if (shift < 0) return false;
  if (shift > 100000 || b.digits.size() > 18) return false;  // refused by the caller's limits
  unsigned long long divisor = std::strtoull(b.digits.c_str(), nullptr, 10);
  unsigned long long remainder = 0;
  auto step = [&](char digit) {
    remainder = (remainder * 10 + static_cast<unsigned long long>(digit - '0')) % divisor;
  };
  for (char digit : a.digits) step(digit);
  for (long long k = 0; k < shift; ++k) step('0');
  return remainder == 0;
}

}  // namespace xg2
