// support/json.h, JsonIdentical: true exactly when the two values dump to the same text
// (the merge memo of the JSON Schema frontend keys merges by it instead of by DumpJson).
#include <string>
#include <vector>

#include "check.h"
#include "support/json.h"

namespace xg2_test {
namespace {

using xg2::DumpJson;
using xg2::JsonIdentical;
using xg2::JsonValue;
using xg2::ParseJson;

// JsonIdentical must agree with comparing the dumped texts, both ways, on every pair.
TEST(JsonIdenticalAgreesWithDumpedText) {
  const std::vector<std::string> texts = {
      "null", "true", "false", "1", "1.0", "1e0", "-0", "0", "\"a\"", "\"\\u0061\"", "\"b\"", "[]", "{}",
      "[1,2]", "[2,1]", "[1,2,3]", "{\"a\":1,\"b\":2}", "{\"b\":2,\"a\":1}", "{\"a\":1}", "{\"a\":1.0}",
      "{\"a\":{\"b\":[true,null]}}", "{\"a\":{\"b\":[true,false]}}", "{\"a\":{\"c\":[true,null]}}",
  };
  for (const std::string& x : texts) {
    for (const std::string& y : texts) {
      const JsonValue a = ParseJson(x);
      const JsonValue b = ParseJson(y);
      CHECK_EQ(JsonIdentical(a, b), DumpJson(a) == DumpJson(b));
    }
  }
}

// A copy shares its members with the original (json.h); the shortcut must not change the answer.
TEST(JsonIdenticalOnSharedCopies) {
  const JsonValue original = ParseJson("{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"integer\"}}}");
  const JsonValue copy = original;
  CHECK(JsonIdentical(original, copy));
  const JsonValue rebuilt = JsonValue::Object(original.object_members());
  CHECK(JsonIdentical(original, rebuilt));
  std::vector<JsonValue::Member> members = original.object_members();
  members.back().second = JsonValue::Bool(true);
  CHECK(!JsonIdentical(original, JsonValue::Object(members)));
}

}  // namespace
}  // namespace xg2_test
