// Exact decimal numbers for schema bounds: a JSON number lexeme read without rounding.
#ifndef XG2_FRONTENDS_JSON_SCHEMA_DECIMAL_H_
#define XG2_FRONTENDS_JSON_SCHEMA_DECIMAL_H_

#include <optional>
#include <string>
#include <string_view>

namespace xg2 {

// value = (negative ? -1 : 1) * digits * 10^exponent. Invariant: `digits` has no leading or
// trailing zeros ("" for zero, which is never negative).
struct Decimal {
  bool negative = false;
  std::string digits;
  long long exponent = 0;
  bool is_zero() const { return digits.empty(); }
};

// nullopt when the lexeme's exponent is absurdly large (|e| > 10^6).
std::optional<Decimal> ParseDecimal(std::string_view lexeme);
int CompareDecimal(const Decimal& a, const Decimal& b);
bool IsIntegral(const Decimal& value);
// True when a / b is an integer (b must be non-zero).
bool Divides(const Decimal& b, const Decimal& a);

}  // namespace xg2

#endif  // XG2_FRONTENDS_JSON_SCHEMA_DECIMAL_H_
