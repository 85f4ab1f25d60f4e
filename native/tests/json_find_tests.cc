// support/json.h, JsonValue::Find: the member named exactly `key`, whatever the names beside
// it share with it (length, first byte, a prefix), or nullptr.
#include <string>

#include "check.h"
#include "support/json.h"

namespace xg2_test {
namespace {

using xg2::JsonValue;
using xg2::ParseJson;

TEST(JsonFindMatchesWholeNamesOnly) {
  const JsonValue object = ParseJson(
      "{\"type\":1,\"typo\":2,\"tape\":3,\"types\":4,\"t\":5,\"\":6,\"maxItems\":7,\"maxLength\":8}");
  auto value_of = [&](const std::string& key) {
    const JsonValue* found = object.Find(key);
    return found == nullptr ? -1.0 : found->number_value();
  };
  CHECK_EQ(value_of("type"), 1.0);
  CHECK_EQ(value_of("typo"), 2.0);  // same length and first byte as "type"
  CHECK_EQ(value_of("tape"), 3.0);
  CHECK_EQ(value_of("types"), 4.0);
  CHECK_EQ(value_of("t"), 5.0);
  CHECK_EQ(value_of(""), 6.0);
  CHECK_EQ(value_of("maxItems"), 7.0);
  CHECK_EQ(value_of("maxLength"), 8.0);
  CHECK_EQ(value_of("typf"), -1.0);  // the length and first byte of a member, another name
  CHECK_EQ(value_of("ty"), -1.0);    // a prefix of a member
  CHECK_EQ(value_of("maxitems"), -1.0);
  CHECK(ParseJson("[1]").Find("type") == nullptr);
  CHECK(ParseJson("{}").Find("") == nullptr);
}

}  // namespace
}  // namespace xg2_test
