#include "frontends/json_schema/number_bounds.h"

#include <string>
#include <vector>

#include "frontends/json_schema/integer_range.h"

namespace xg2 {

namespace {

Fragment Digits0() { return Repeat(Fragment::Atom("[0-9]"), 0, -1); }
Fragment Digits1() { return Repeat(Fragment::Atom("[0-9]"), 1, -1); }
// Digits with at least one non-zero (a fraction tail that is > 0).
Fragment NonZeroDigits() { return Seq({Digits0(), Fragment::Atom("[1-9]"), Digits0()}); }
Fragment AnyFraction() { return Optional(Seq({Fragment::Literal("."), Digits1()})); }
Fragment Natural() {
  return Alt({Fragment::Literal("0"), Seq({Fragment::Atom("[1-9]"), Digits0()})});
}
Fragment DigitClass(char lo, char hi) {
  if (lo == hi) return Fragment::Literal(std::string(1, lo));
  return Fragment::Atom(std::string("[") + lo + "-" + hi + "]");
}
// Any magnitude, exponents included.
Fragment AnyMagnitude() {
  return Seq({Natural(), AnyFraction(),
              Optional(Seq({Fragment::Atom("[eE]"), Optional(Fragment::Atom("[+\\-]")), Digits1()}))});
}
Fragment ZeroMagnitude() {
  return Seq({Fragment::Literal("0"), Optional(Seq({Fragment::Literal("."), Repeat(Fragment::Literal("0"), 1, -1)}))});
}

// |bound| as integer part and fraction digits (no trailing zeros).
struct Split {
  BigInteger integer;
  std::string fraction;
};
std::optional<Split> SplitDecimal(const Decimal& value, size_t max_digits) {
  Split split;
  if (value.is_zero()) return split;
  long long size = static_cast<long long>(value.digits.size());
  long long integer_digits = size + value.exponent;
  if (integer_digits > static_cast<long long>(max_digits) ||
      -value.exponent > static_cast<long long>(max_digits)) {
    return std::nullopt;
  }
  if (value.exponent >= 0) {
    split.integer.magnitude = value.digits + std::string(static_cast<size_t>(value.exponent), '0');
  } else if (integer_digits > 0) {
    split.integer.magnitude = value.digits.substr(0, static_cast<size_t>(integer_digits));
    split.fraction = value.digits.substr(static_cast<size_t>(integer_digits));
  } else {
    split.fraction = std::string(static_cast<size_t>(-integer_digits), '0') + value.digits;
  }
  return split;
}

// Fraction digits d (after the point, at position k of `f`) with 0.d >= 0.f (> when strict).
Fragment FractionAtLeast(const std::string& f, size_t k, bool strict) {
  std::vector<Fragment> choices;
  if (f[k] < '9') choices.push_back(Seq({DigitClass(f[k] + 1, '9'), Digits0()}));
  Fragment rest = k + 1 == f.size() ? (strict ? NonZeroDigits() : Digits0()) : FractionAtLeast(f, k + 1, strict);
  choices.push_back(Seq({Fragment::Literal(std::string(1, f[k])), rest}));
  return Alt(choices);
}

// Fraction digits d (at least one) at position k with 0.d <= 0.f (< when strict); a
// proper prefix of f is smaller since f has no trailing zeros.
Fragment FractionAtMost(const std::string& f, size_t k, bool strict) {
  std::vector<Fragment> choices;
  if (f[k] > '0') choices.push_back(Seq({DigitClass('0', f[k] - 1), Digits0()}));
  Fragment rest = k + 1 == f.size()
                      ? (strict ? Fragment::Never() : Repeat(Fragment::Literal("0"), 0, -1))
                      : Optional(FractionAtMost(f, k + 1, strict));
  if (k + 1 == f.size() && strict) {
    // equal so far and nothing may follow that keeps it <= f except ending, which is equal
  } else {
    choices.push_back(Seq({Fragment::Literal(std::string(1, f[k])), rest}));
  }
  return Alt(choices);
}

// Magnitudes (no exponent) >= m (> when strict).
Fragment MagnitudeAtLeast(const Split& m, bool strict) {
  std::vector<Fragment> choices = {
      Seq({IntegerRangeFragment(Increment(m.integer), std::nullopt), AnyFraction()})};
  Fragment fraction = m.fraction.empty()
                          ? (strict ? Seq({Fragment::Literal("."), NonZeroDigits()}) : AnyFraction())
                          : Seq({Fragment::Literal("."), FractionAtLeast(m.fraction, 0, strict)});
  choices.push_back(Seq({Fragment::Literal(m.integer.magnitude), fraction}));
  return Alt(choices);
}

// Magnitudes (no exponent) <= m (< when strict).
Fragment MagnitudeAtMost(const Split& m, bool strict) {
  std::vector<Fragment> choices;
  if (m.integer.magnitude != "0") {
    choices.push_back(Seq({IntegerRangeFragment(BigInteger{}, Decrement(m.integer)), AnyFraction()}));
  }
  Fragment fraction = Fragment::Never();
  if (m.fraction.empty()) {
    if (!strict) fraction = Optional(Seq({Fragment::Literal("."), Repeat(Fragment::Literal("0"), 1, -1)}));
  } else {
    fraction = Optional(Seq({Fragment::Literal("."), FractionAtMost(m.fraction, 0, strict)}));
  }
  choices.push_back(Seq({Fragment::Literal(m.integer.magnitude), fraction}));
  return Alt(choices);
}

}  // namespace

std::optional<Fragment> NumberAtLeast(const Decimal& bound, bool strict, size_t max_digits) {
  std::optional<Split> m = SplitDecimal(bound, max_digits);
  if (!m) return std::nullopt;
  Fragment minus = Fragment::Literal("-");
  if (bound.is_zero()) {
    if (strict) return MagnitudeAtLeast(*m, true);
    return Alt({AnyMagnitude(), Seq({minus, ZeroMagnitude()})});
  }
  if (!bound.negative) return MagnitudeAtLeast(*m, strict);
  return Alt({AnyMagnitude(), Seq({minus, MagnitudeAtMost(*m, strict)})});
}

std::optional<Fragment> NumberAtMost(const Decimal& bound, bool strict, size_t max_digits) {
  std::optional<Split> m = SplitDecimal(bound, max_digits);
  if (!m) return std::nullopt;
  Fragment minus = Fragment::Literal("-");
  if (bound.is_zero()) {
    if (strict) return Seq({minus, MagnitudeAtLeast(*m, true)});
    return Alt({Seq({minus, AnyMagnitude()}), ZeroMagnitude()});
  }
  if (bound.negative) return Seq({minus, MagnitudeAtLeast(*m, strict)});
  return Alt({Seq({minus, AnyMagnitude()}), MagnitudeAtMost(*m, strict)});
}

std::optional<CodepointDfa> MultipleOfDfa(const Decimal& divisor, long long max_divisor) {
  // divisor = a * 10^-k with a a positive integer.
  long long k = divisor.exponent < 0 ? -divisor.exponent : 0;
  std::string a_digits = divisor.digits + std::string(divisor.exponent > 0 ? static_cast<size_t>(divisor.exponent) : 0, '0');
  if (a_digits.size() > 18 || k > 18) return std::nullopt;
  long long a = std::stoll(a_digits);
  if (a > max_divisor) return std::nullopt;
  // x is a multiple iff x * 10^k is an integer divisible by a: remainders of the digits
  // read so far, the fraction digits beyond k must be zeros.
  std::vector<long long> power(static_cast<size_t>(k) + 1, 1 % a);  // 10^i mod a
  for (long long i = 1; i <= k; ++i) power[static_cast<size_t>(i)] = power[static_cast<size_t>(i) - 1] * 10 % a;
  CodepointDfa dfa;
  // Layout: 0 start, 1 after '-', 2 after a leading "0", then int(r) at 3 + r, dot(r) at
  // 3 + a + r, frac(r, j) for 1 <= j <= max(k, 1) at 3 + 2a + (j - 1) * a + r.
  long long fraction_levels = std::max<long long>(k, 1);
  size_t total = static_cast<size_t>(3 + 2 * a + fraction_levels * a);
  dfa.states.resize(total);
  auto int_state = [&](long long r) { return static_cast<int32_t>(3 + r); };
  auto dot_state = [&](long long r) { return static_cast<int32_t>(3 + a + r); };
  auto frac_state = [&](long long r, long long j) { return static_cast<int32_t>(3 + 2 * a + (j - 1) * a + r); };
  auto digit_edges = [&](int32_t from, long long r, auto target_of) {
    for (uint32_t d = 0; d <= 9; ++d) {
      int32_t t = target_of((r * 10 + d) % a, d);
      if (t >= 0) dfa.states[from].edges.push_back({'0' + d, '0' + d, t});
    }
  };
  for (int32_t start : {0, 1}) {
    if (start == 0) dfa.states[0].edges.push_back({'-', '-', 1});
    dfa.states[start].edges.push_back({'0', '0', 2});
    for (uint32_t d = 1; d <= 9; ++d) dfa.states[start].edges.push_back({'0' + d, '0' + d, int_state(d % a)});
  }
  dfa.states[2].accepting = true;
  dfa.states[2].edges.push_back({'.', '.', dot_state(0)});
  for (long long r = 0; r < a; ++r) {
    int32_t s = int_state(r);
    digit_edges(s, r, [&](long long next, uint32_t) { return int_state(next); });
    // '.' (0x2E) sorts before the digits.
    dfa.states[s].edges.insert(dfa.states[s].edges.begin(), {'.', '.', dot_state(r)});
    dfa.states[s].accepting = r * power[static_cast<size_t>(k)] % a == 0;
    // After the point: the first fraction digit.
    int32_t dot = dot_state(r);
    digit_edges(dot, r, [&](long long next, uint32_t d) {
      if (k >= 1) return frac_state(next, 1);
      return d == 0 ? frac_state(r, 1) : -1;
    });
    for (long long j = 1; j <= fraction_levels; ++j) {
      int32_t f = frac_state(r, j);
      if (j < k) {
        digit_edges(f, r, [&](long long next, uint32_t) { return frac_state(next, j + 1); });
      } else {
        dfa.states[f].edges.push_back({'0', '0', f});  // digits beyond k must be zeros
      }
      long long scale = j <= k ? power[static_cast<size_t>(k - j)] : 1;
      dfa.states[f].accepting = r * scale % a == 0;
    }
  }
  return Minimized(dfa);
}

}  // namespace xg2
