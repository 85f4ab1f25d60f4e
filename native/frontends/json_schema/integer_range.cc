#include "frontends/json_schema/integer_range.h"

#include <vector>

namespace xg2 {

namespace {

int CompareMagnitudes(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return a.size() < b.size() ? -1 : 1;
  return a.compare(b) < 0 ? -1 : a == b ? 0 : 1;
}

std::string AddOne(std::string digits) {
  for (size_t i = digits.size(); i-- > 0;) {
    if (digits[i] != '9') {
      ++digits[i];
      return digits;
    }
    digits[i] = '0';
  }
  return "1" + digits;
}

// Requires digits >= 1.
std::string SubtractOne(std::string digits) {
  for (size_t i = digits.size(); i-- > 0;) {
    if (digits[i] != '0') {
      --digits[i];
      break;
    }
    digits[i] = '9';
  }
  size_t first = digits.find_first_not_of('0');
  return first == std::string::npos ? "0" : digits.substr(first);
}

BigInteger Make(bool negative, std::string magnitude) {
  return {negative && magnitude != "0", std::move(magnitude)};
}

bool AllOf(const std::string& digits, char c) {
  return digits.find_first_not_of(c) == std::string::npos;
}

Fragment DigitClass(char low, char high) {
  if (low == high) return Fragment::Literal(std::string(1, low));
  return Fragment::Atom(std::string("[") + low + "-" + high + "]");
}

Fragment AnyDigits(size_t count) {
  return Repeat(Fragment::Atom("[0-9]"), static_cast<int>(count), static_cast<int>(count));
}

// Digit strings of the same length as `s` that are >= s (leading zeros allowed). Flat: the
// string itself, or a shared prefix, a larger digit, then anything.
Fragment AtLeast(const std::string& s) {
  std::vector<Fragment> choices = {Fragment::Literal(s)};
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '9') continue;
    choices.push_back(Seq({Fragment::Literal(s.substr(0, i)), DigitClass(s[i] + 1, '9'),
                           AnyDigits(s.size() - i - 1)}));
  }
  return Alt(choices);
}

Fragment AtMost(const std::string& s) {
  std::vector<Fragment> choices = {Fragment::Literal(s)};
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '0') continue;
    choices.push_back(Seq({Fragment::Literal(s.substr(0, i)), DigitClass('0', s[i] - 1),
                           AnyDigits(s.size() - i - 1)}));
  }
  return Alt(choices);
}

// Digit strings of length |a| == |b| in [a, b]; requires a <= b.
Fragment SameLengthRange(const std::string& a, const std::string& b) {
  if (a == b) return Fragment::Literal(a);
  size_t i = 0;
  while (a[i] == b[i]) ++i;
  Fragment prefix = Fragment::Literal(a.substr(0, i));
  std::string low_rest = a.substr(i + 1), high_rest = b.substr(i + 1);
  char low = a[i], high = b[i];
  std::vector<Fragment> choices;
  // Invariant: the middle digits [middle_low, middle_high] take any rest.
  char middle_low = low, middle_high = high;
  if (!AllOf(low_rest, '0')) {
    choices.push_back(Seq({prefix, Fragment::Literal(std::string(1, low)), AtLeast(low_rest)}));
    ++middle_low;
  }
  bool high_separate = !AllOf(high_rest, '9');
  if (high_separate) --middle_high;
  if (middle_low <= middle_high) {
    choices.push_back(Seq({prefix, DigitClass(middle_low, middle_high), AnyDigits(low_rest.size())}));
  }
  if (high_separate) {
    choices.push_back(Seq({prefix, Fragment::Literal(std::string(1, high)), AtMost(high_rest)}));
  }
  return Alt(choices);
}

// Canonical spellings of naturals in [low, high] (high nullopt: unbounded); low >= 0.
Fragment NaturalRange(std::string low, const std::optional<std::string>& high) {
  std::vector<Fragment> choices;
  if (low == "0") {
    choices.push_back(Fragment::Literal("0"));
    low = "1";
  }
  if (high && CompareMagnitudes(low, *high) > 0) return Alt(choices);
  size_t low_length = low.size();
  if (high && high->size() == low_length) {
    choices.push_back(SameLengthRange(low, *high));
    return Alt(choices);
  }
  choices.push_back(SameLengthRange(low, std::string(low_length, '9')));
  Fragment first_digit = DigitClass('1', '9');
  Fragment digit = Fragment::Atom("[0-9]");
  if (!high) {
    choices.push_back(Seq({first_digit, Repeat(digit, static_cast<int>(low_length), -1)}));
    return Alt(choices);
  }
  size_t high_length = high->size();
  if (low_length + 1 < high_length) {
    choices.push_back(Seq({first_digit, Repeat(digit, static_cast<int>(low_length),
                                               static_cast<int>(high_length - 2))}));
  }
  choices.push_back(SameLengthRange("1" + std::string(high_length - 1, '0'), *high));
  return Alt(choices);
}

}  // namespace

int Compare(const BigInteger& a, const BigInteger& b) {
  if (a.negative != b.negative) return a.negative ? -1 : 1;
  int magnitude_order = CompareMagnitudes(a.magnitude, b.magnitude);
  return a.negative ? -magnitude_order : magnitude_order;
}

BigInteger Increment(const BigInteger& value) {
  if (!value.negative) return Make(false, AddOne(value.magnitude));
  return Make(true, SubtractOne(value.magnitude));
}

BigInteger Decrement(const BigInteger& value) {
  if (value.negative) return Make(true, AddOne(value.magnitude));
  if (value.magnitude == "0") return Make(true, "1");
  return Make(false, SubtractOne(value.magnitude));
}

std::optional<BigInteger> RoundJsonNumber(std::string_view lexeme, Rounding rounding,
                                          size_t max_digits) {
  size_t pos = 0;
  bool negative = pos < lexeme.size() && lexeme[pos] == '-';
  if (negative) ++pos;
  std::string mantissa;
  long long fraction_digits = 0;
  bool in_fraction = false;
  for (; pos < lexeme.size() && lexeme[pos] != 'e' && lexeme[pos] != 'E'; ++pos) {
    if (lexeme[pos] == '.') {
      in_fraction = true;
      continue;
    }
    mantissa.push_back(lexeme[pos]);
    if (in_fraction) ++fraction_digits;
  }
  long long exponent = 0;
  if (pos < lexeme.size()) {
    ++pos;
    bool exponent_negative = lexeme[pos] == '-';
    if (lexeme[pos] == '-' || lexeme[pos] == '+') ++pos;
    for (; pos < lexeme.size(); ++pos) {
      if (exponent < 1000000000) exponent = exponent * 10 + (lexeme[pos] - '0');
    }
    if (exponent_negative) exponent = -exponent;
  }
  size_t first = mantissa.find_first_not_of('0');
  if (first == std::string::npos) return BigInteger{};
  mantissa = mantissa.substr(first);
  // value = mantissa * 10^shift
  long long shift = exponent - fraction_digits;
  std::string integer_part;
  bool has_remainder = false;
  if (shift >= 0) {
    if (static_cast<long long>(mantissa.size()) + shift > static_cast<long long>(max_digits)) {
      return std::nullopt;
    }
    integer_part = mantissa + std::string(static_cast<size_t>(shift), '0');
  } else {
    long long kept = static_cast<long long>(mantissa.size()) + shift;
    integer_part = kept > 0 ? mantissa.substr(0, static_cast<size_t>(kept)) : "0";
    std::string dropped = kept > 0 ? mantissa.substr(static_cast<size_t>(kept)) : mantissa;
    has_remainder = !AllOf(dropped, '0');
    if (integer_part.size() > max_digits) return std::nullopt;
  }
  BigInteger truncated = Make(negative, integer_part);
  if (!has_remainder) return truncated;
  // Truncation moved toward zero; step away from zero where the rounding direction says so.
  bool away = negative ? rounding == Rounding::kFloor : rounding == Rounding::kCeiling;
  if (!away) return truncated;
  return negative ? Decrement(truncated) : Increment(truncated);
}

Fragment IntegerRangeFragment(const std::optional<BigInteger>& lower,
                              const std::optional<BigInteger>& upper) {
  if (lower && upper && Compare(*lower, *upper) > 0) return Fragment::Never();
  std::vector<Fragment> choices;
  bool includes_negatives = !lower || lower->negative;
  bool includes_non_negatives = !upper || !upper->negative;
  if (includes_negatives) {
    // Negative values v in [lower, min(upper, -1)] are "-" followed by |v|.
    std::string smallest_magnitude = includes_non_negatives ? "1" : upper->magnitude;
    std::optional<std::string> largest_magnitude;
    if (lower) largest_magnitude = lower->magnitude;
    choices.push_back(
        Seq({Fragment::Literal("-"), NaturalRange(smallest_magnitude, largest_magnitude)}));
  }
  if (includes_non_negatives) {
    std::string smallest = lower && !lower->negative ? lower->magnitude : "0";
    std::optional<std::string> largest;
    if (upper) largest = upper->magnitude;
    choices.push_back(NaturalRange(smallest, largest));
  }
  return Alt(choices);
}

}  // namespace xg2
