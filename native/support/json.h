// A small, strict JSON (RFC 8259) document model for frontends that read JSON input such
// as JSON Schemas. Unlike most DOMs it keeps object members in document order, because a
// schema's property order decides the order the generated grammar enforces, and it keeps
// each number's original spelling so that bounds can be handled exactly.
#ifndef XG2_SUPPORT_JSON_H_
#define XG2_SUPPORT_JSON_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "support/error.h"

namespace xg2 {

// Malformed JSON text; the message names line and column (1-based).
class JsonSyntaxError : public Error {
 public:
  using Error::Error;
};

enum class JsonKind : uint8_t { kNull, kBool, kNumber, kString, kArray, kObject };

class JsonValue {
 public:
  using Member = std::pair<std::string, JsonValue>;

  JsonValue() = default;  // null
  static JsonValue Bool(bool value);
  // `lexeme` must be a valid JSON number; `value` is its nearest double.
  static JsonValue Number(std::string lexeme, double value);
  static JsonValue String(std::string utf8);
  static JsonValue Array(std::vector<JsonValue> items);
  // Members in document order; keys are unique (the parser keeps a repeated key at its
  // first position with its last value, as Python's json module does).
  static JsonValue Object(std::vector<Member> members);

  JsonKind kind() const { return kind_; }
  bool is_null() const { return kind_ == JsonKind::kNull; }
  bool is_bool() const { return kind_ == JsonKind::kBool; }
  bool is_number() const { return kind_ == JsonKind::kNumber; }
  bool is_string() const { return kind_ == JsonKind::kString; }
  bool is_array() const { return kind_ == JsonKind::kArray; }
  bool is_object() const { return kind_ == JsonKind::kObject; }

  bool bool_value() const { return bool_; }
  double number_value() const { return number_; }
  // The number exactly as written in the source, e.g. "1.50e+3".
  const std::string& number_lexeme() const { return text_; }
  // True when the number has no fractional part (1, 1.0 and 1e2 all are integers).
  bool is_integral_number() const;
  const std::string& string_value() const { return text_; }
  const std::vector<JsonValue>& array_items() const {
    return kind_ == JsonKind::kArray ? *static_cast<const std::vector<JsonValue>*>(children_.get()) : kNoItems;
  }
  const std::vector<Member>& object_members() const {
    return kind_ == JsonKind::kObject ? *static_cast<const std::vector<Member>*>(children_.get()) : kNoMembers;
  }

  // The member named `key` of an object, or nullptr (also for non-objects).
  const JsonValue* Find(std::string_view key) const;

  // A hash that agrees with JsonEquals (equal values have equal hashes: numbers hash by
  // value, objects regardless of member order), computed once when the value is built from
  // its children's hashes. JsonEquals compares hashes first, so telling two different
  // subschemas apart costs one comparison instead of a walk down to where they differ.
  uint32_t structural_hash() const { return hash_; }

 private:
  JsonKind kind_ = JsonKind::kNull;
  bool bool_ = false;
  uint32_t hash_ = kNullHash;  // fits the padding after kind_ and bool_
  static constexpr uint32_t kNullHash = 0x9e3779b9u;
  double number_ = 0;
  std::string text_;  // number lexeme or string contents (UTF-8)
  // A value never changes once built, so copies share the items and members of arrays and
  // objects: schema merging copies whole subschemas (allOf distribution, $ref expansion),
  // and a copy costs one reference count instead of a walk over the subtree. One pointer
  // serves both, as the kind says (a value is one or the other, and a document has a node per
  // value, so two pointers would add a word to every one): kArray, a std::vector<JsonValue>;
  // kObject, a std::vector<Member>. Never null for those two; null for the other kinds, which
  // read the empty tables below.
  std::shared_ptr<const void> children_;
  static const std::vector<JsonValue> kNoItems;
  static const std::vector<Member> kNoMembers;
};

// Parses exactly one JSON value (surrounded by optional whitespace). Strings must be valid
// UTF-8 and escapes must not produce lone surrogates. Throws JsonSyntaxError, or
// ResourceLimitError when arrays/objects nest deeper than `max_depth`.
JsonValue ParseJson(std::string_view text, int max_depth = 512);

// The string literal Python's json.dumps(s, ensure_ascii=False) writes, quotes included.
std::string DumpJsonString(std::string_view utf8);

// Compact serialisation with separators (",", ":"); numbers keep their lexemes.
std::string DumpJson(const JsonValue& value);

// Whether DumpJson(a) == DumpJson(b), without writing either: the same kinds, number lexemes,
// strings, and members in the same order. Subtrees that copies share compare by address.
bool JsonIdentical(const JsonValue& a, const JsonValue& b);

// JSON equality as JSON Schema defines it (`const`, `enum`): numbers compare by value, objects
// ignore member order.
bool JsonEquals(const JsonValue& a, const JsonValue& b);

// Splits a JSON pointer ("/a/b~1c") into unescaped reference tokens. With `uri_fragment`,
// the pointer is first percent-decoded (as in "#/definitions/a%20b"). Throws
// InvalidArgumentError for a pointer that is neither empty nor starts with '/', for a bad
// "~" escape or a bad percent escape.
std::vector<std::string> SplitJsonPointer(std::string_view pointer, bool uri_fragment = false);
// Writes the reference token `escaped` ("a~1b") unescaped ("a/b") to `out`; false for a bad
// "~" escape.
bool UnescapeJsonPointerToken(std::string_view escaped, std::string* out);

// Escapes one reference token for use in a JSON pointer ("~" -> "~0", "/" -> "~1").
std::string EscapeJsonPointerToken(std::string_view token);
// Appends the escaped `token` to `out`.
void AppendJsonPointerToken(std::string_view token, std::string* out);

// Follows `pointer` from `root` (array tokens are decimal indices without leading zeros).
// Returns nullptr when no value lies there.
const JsonValue* ResolveJsonPointer(const JsonValue& root, std::string_view pointer,
                                    bool uri_fragment = false);

}  // namespace xg2

#endif  // XG2_SUPPORT_JSON_H_
