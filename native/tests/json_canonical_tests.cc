// support/json_canonical.h: the keys uniqueItems compares (grammar/grammar_fsm.h, "Unique
// items"): equal exactly for equal JSON values.
#include <string>

#include "check.h"
#include "support/json_canonical.h"

namespace xg2_test {
namespace {

using xg2::CanonicalJsonScalar;

TEST(CanonicalStringsDecodeEveryEscape) {
  CHECK_EQ(CanonicalJsonScalar("\"a\""), CanonicalJsonScalar("\"\\u0061\""));
  CHECK_EQ(CanonicalJsonScalar("\"/\""), CanonicalJsonScalar("\"\\/\""));
  CHECK_EQ(CanonicalJsonScalar("\"\\n\\t\""), CanonicalJsonScalar("\"\\u000A\\u0009\""));
  CHECK_EQ(CanonicalJsonScalar("\"\xC3\xA9\""), CanonicalJsonScalar("\"\\u00e9\""));
  // A surrogate pair is the one character it encodes; a lone surrogate keys as itself.
  CHECK_EQ(CanonicalJsonScalar("\"\xF0\x9F\x98\x80\""), CanonicalJsonScalar("\"\\ud83d\\ude00\""));
  CHECK_EQ(CanonicalJsonScalar("\"\\ud800\""), CanonicalJsonScalar("\"\\uD800\""));
  CHECK(CanonicalJsonScalar("\"\\ud800\"") != CanonicalJsonScalar("\"\\ud800\\u0061\""));
  CHECK(CanonicalJsonScalar("\"a\"") != CanonicalJsonScalar("\"A\""));
  CHECK(CanonicalJsonScalar("\"\"") != CanonicalJsonScalar("\" \""));
  CHECK(CanonicalJsonScalar("\"a\\\\\"") != CanonicalJsonScalar("\"a\\\"\""));
}

TEST(CanonicalNumbersKeyByValue) {
  CHECK_EQ(CanonicalJsonScalar("1"), CanonicalJsonScalar("1.0"));
  CHECK_EQ(CanonicalJsonScalar("1"), CanonicalJsonScalar("10e-1"));
  CHECK_EQ(CanonicalJsonScalar("100"), CanonicalJsonScalar("1E+2"));
  CHECK_EQ(CanonicalJsonScalar("0"), CanonicalJsonScalar("-0.000e5"));
  CHECK_EQ(CanonicalJsonScalar("-1.50"), CanonicalJsonScalar("-15e-1"));
  CHECK(CanonicalJsonScalar("1") != CanonicalJsonScalar("-1"));
  CHECK(CanonicalJsonScalar("0.1") != CanonicalJsonScalar("0.01"));
  CHECK(CanonicalJsonScalar("12") != CanonicalJsonScalar("1.2"));
}

TEST(CanonicalKindsNeverMeet) {
  CHECK(CanonicalJsonScalar("1") != CanonicalJsonScalar("\"1\""));
  CHECK(CanonicalJsonScalar("true") != CanonicalJsonScalar("\"true\""));
  CHECK(CanonicalJsonScalar("null") != CanonicalJsonScalar("0"));
  CHECK_EQ(CanonicalJsonScalar(" true\n"), CanonicalJsonScalar("true"));
  // Not a scalar (or malformed): equal only to the same spelling.
  CHECK(CanonicalJsonScalar("[1]") != CanonicalJsonScalar("[1.0]"));
  CHECK(CanonicalJsonScalar("1.") != CanonicalJsonScalar("1"));
}

}  // namespace
}  // namespace xg2_test
