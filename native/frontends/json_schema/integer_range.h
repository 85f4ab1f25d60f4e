// Exact grammars for integer ranges: the canonical decimal spellings ("-"? no leading
// zeros, no "-0") of the integers in [lower, upper], for bounds of any size.
#ifndef XG2_FRONTENDS_JSON_SCHEMA_INTEGER_RANGE_H_
#define XG2_FRONTENDS_JSON_SCHEMA_INTEGER_RANGE_H_

#include <optional>
#include <string>
#include <string_view>

#include "frontends/json_schema/ebnf_builder.h"

namespace xg2 {

// An arbitrary-size integer. Invariant: `magnitude` has no leading zeros ("0" for zero) and
// zero is never negative.
struct BigInteger {
  bool negative = false;
  std::string magnitude = "0";
};

int Compare(const BigInteger& a, const BigInteger& b);
BigInteger Increment(const BigInteger& value);
BigInteger Decrement(const BigInteger& value);

enum class Rounding { kCeiling, kFloor };

// The JSON number `lexeme` (e.g. "-12.5e3") rounded to an integer. nullopt when the result
// would have more than `max_digits` digits.
std::optional<BigInteger> RoundJsonNumber(std::string_view lexeme, Rounding rounding,
                                          size_t max_digits);

// Integers in [lower, upper]; a missing bound is unbounded. Never when the range is empty.
Fragment IntegerRangeFragment(const std::optional<BigInteger>& lower,
                              const std::optional<BigInteger>& upper);

}  // namespace xg2

#endif  // XG2_FRONTENDS_JSON_SCHEMA_INTEGER_RANGE_H_
