// support/json_canonical.h: the keys uniqueItems compares (grammar/grammar_fsm.h, "Unique
// items"): equal exactly for equal JSON values.
#include <string>

#include "check.h"
#include "support/json_canonical.h"

namespace xg2_test {
namespace {

using xg2::CanonicalJsonScalar;
using xg2::CanonicalJsonValue;

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

TEST(CanonicalValuesCompareAsJson) {
  // Scalars key as CanonicalJsonScalar keys them.
  CHECK_EQ(CanonicalJsonValue("\"a\""), CanonicalJsonScalar("\"a\""));
  CHECK_EQ(CanonicalJsonValue(" 1.0 "), CanonicalJsonScalar("1"));
  // Objects: members in any order, names and values by JSON equality.
  CHECK_EQ(CanonicalJsonValue("{\"a\": 1, \"b\": \"x\"}"), CanonicalJsonValue("{\"b\":\"x\",\"\\u0061\":1.0}"));
  CHECK(CanonicalJsonValue("{\"a\": 1}") != CanonicalJsonValue("{\"a\": 2}"));
  CHECK(CanonicalJsonValue("{\"a\": 1}") != CanonicalJsonValue("{\"a\": 1, \"b\": 1}"));
  CHECK(CanonicalJsonValue("{}") != CanonicalJsonValue("[]"));
  CHECK(CanonicalJsonValue("{\"a\": \"1\"}") != CanonicalJsonValue("{\"a\": 1}"));
  // A repeated name keeps its last value.
  CHECK_EQ(CanonicalJsonValue("{\"a\": 1, \"a\": 2}"), CanonicalJsonValue("{\"a\": 2}"));
  // Nested containers; arrays keep their order.
  CHECK_EQ(CanonicalJsonValue("{\"a\": {\"c\": [1, {\"d\": null}]}}"),
           CanonicalJsonValue("{ \"a\" : { \"c\" : [ 1e0 , { \"d\" : null } ] } }"));
  CHECK(CanonicalJsonValue("[1, 2]") != CanonicalJsonValue("[2, 1]"));
  // Length prefixes keep parts apart: a name holding the text of another member.
  CHECK(CanonicalJsonValue("{\"a\": \"b\", \"c\": \"d\"}") != CanonicalJsonValue("{\"a\": \"b2:sc\"}"));
  // An object item without its closing brace reads as the object.
  CHECK_EQ(CanonicalJsonValue("{\"a\": 1, \"b\": \"x\""), CanonicalJsonValue("{\"b\": \"x\", \"a\": 1}"));
  CHECK_EQ(CanonicalJsonValue("{"), CanonicalJsonValue("{ }"));
  // Malformed text: equal only to the same spelling.
  CHECK(CanonicalJsonValue("[1") != CanonicalJsonValue("[1]"));
  CHECK(CanonicalJsonValue("{\"a\" 1}") != CanonicalJsonValue("{\"a\": 1}"));
}

}  // namespace
}  // namespace xg2_test
