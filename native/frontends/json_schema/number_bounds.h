// Exact grammars for JSON numbers (type "number") with decimal bounds and multipleOf.
//
// Bounded sides are written without exponent notation: whether m·10^e lies above a bound
// depends on how the digit count of m relates to e, which no regular language captures.
// Numbers on an unbounded side (e.g. the positive half of `minimum: -2.5`) keep exponents.
#ifndef XG2_FRONTENDS_JSON_SCHEMA_NUMBER_BOUNDS_H_
#define XG2_FRONTENDS_JSON_SCHEMA_NUMBER_BOUNDS_H_

#include <optional>

#include "frontends/json_schema/decimal.h"
#include "frontends/json_schema/ebnf_builder.h"
#include "frontends/json_schema/regular_language.h"

namespace xg2 {

// Numbers x with x >= bound (x > bound when `strict`); nullopt when the bound has more
// than `max_digits` digits before or after the point.
std::optional<Fragment> NumberAtLeast(const Decimal& bound, bool strict, size_t max_digits);
// Numbers x with x <= bound (x < bound when `strict`).
std::optional<Fragment> NumberAtMost(const Decimal& bound, bool strict, size_t max_digits);
// Numbers (no exponent) that are integer multiples of `divisor` (> 0): a remainder
// automaton over the decimal digits, the divisor scaled to an integer. nullopt when the
// scaled divisor exceeds `max_divisor`.
std::optional<CodepointDfa> MultipleOfDfa(const Decimal& divisor, long long max_divisor);

}  // namespace xg2

#endif  // XG2_FRONTENDS_JSON_SCHEMA_NUMBER_BOUNDS_H_
