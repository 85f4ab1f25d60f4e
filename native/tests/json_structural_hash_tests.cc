// support/json.h, structural_hash: equal values (JsonEquals: numbers by value, members in
// any order) have equal hashes, since JsonEquals answers false on differing hashes; and the
// hash tells apart the small values a schema is made of.
#include <algorithm>
#include <cstdio>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "check.h"
#include "support/json.h"

namespace xg2_test {
namespace {

using xg2::DumpJson;
using xg2::JsonEquals;
using xg2::JsonKind;
using xg2::JsonValue;
using xg2::ParseJson;

// JSON Schema equality written independently of json.cc: a canonical text with numbers
// printed from their values and members sorted by name.
std::string Canonical(const JsonValue& value) {
  switch (value.kind()) {
    case JsonKind::kNumber: {
      char buffer[64];
      std::snprintf(buffer, sizeof(buffer), "%.17g", value.number_value() == 0 ? 0.0 : value.number_value());
      return buffer;
    }
    case JsonKind::kArray: {
      std::string out = "[";
      for (const JsonValue& item : value.array_items()) out += Canonical(item) + ",";
      return out + "]";
    }
    case JsonKind::kObject: {
      std::vector<std::pair<std::string, std::string>> members;
      for (const auto& [key, member] : value.object_members()) members.emplace_back(key, Canonical(member));
      std::sort(members.begin(), members.end());
      std::string out = "{";
      for (const auto& [key, text] : members) out += key + ":" + text + ",";
      return out + "}";
    }
    default:
      return DumpJson(value);
  }
}

const std::vector<std::string> kTexts = {
    "null", "true", "false", "1", "1.0", "1e0", "10e-1", "-0", "0", "0.0", "2", "\"1\"", "\"a\"", "\"\\u0061\"",
    "\"b\"", "[]", "{}", "[1,2]", "[2,1]", "[1.0,2]", "[1,2,3]", "[[]]", "[{}]", "{\"a\":1,\"b\":2}",
    "{\"b\":2,\"a\":1}", "{\"b\":2.0,\"a\":1e0}", "{\"a\":1}", "{\"a\":1.0}", "{\"a\":2}", "{\"b\":1}",
    "{\"a\":{\"b\":[true,null]}}", "{\"a\":{\"b\":[true,false]}}", "{\"a\":{\"c\":[true,null]}}",
    "{\"a\":{\"b\":1,\"c\":2}}", "{\"a\":{\"c\":2,\"b\":1}}", "{\"a\":1,\"b\":1}", "{\"a\":2,\"b\":2}",
};

// JsonEquals agrees with the canonical texts on every pair, and equal values hash alike.
TEST(JsonEqualsAgreesWithCanonicalTextAndHashes) {
  for (const std::string& x : kTexts) {
    for (const std::string& y : kTexts) {
      const JsonValue a = ParseJson(x);
      const JsonValue b = ParseJson(y);
      const bool equal = Canonical(a) == Canonical(b);
      CHECK_EQ(JsonEquals(a, b), equal);
      if (equal) CHECK_EQ(a.structural_hash(), b.structural_hash());
    }
  }
}

// Values built by the factories hash as the parsed ones do (merges build schemas that way).
TEST(JsonHashOfBuiltValuesMatchesParsed) {
  const JsonValue parsed = ParseJson("{\"type\":\"string\",\"enum\":[\"x\",3,null,false]}");
  const JsonValue built = JsonValue::Object(
      {{"enum", JsonValue::Array({JsonValue::String("x"), JsonValue::Number("3.0", 3.0), JsonValue(),
                                  JsonValue::Bool(false)})},
       {"type", JsonValue::String("string")}});
  CHECK_EQ(parsed.structural_hash(), built.structural_hash());
  CHECK(JsonEquals(parsed, built));
}

// The values above that differ have different hashes (not required for correctness, but a
// hash that lumps them together would leave JsonEquals walking every pair again).
TEST(JsonHashTellsDifferentValuesApart) {
  std::set<std::string> canonical;
  std::set<uint32_t> hashes;
  for (const std::string& text : kTexts) {
    const JsonValue value = ParseJson(text);
    if (canonical.insert(Canonical(value)).second) hashes.insert(value.structural_hash());
  }
  CHECK_EQ(hashes.size(), canonical.size());
}

}  // namespace
}  // namespace xg2_test
