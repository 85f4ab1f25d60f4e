#include "support/json.h"

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <iterator>
#include <unordered_map>

#include "support/dcheck.h"
#include "support/utf8.h"

namespace xg2 {

const std::vector<JsonValue> JsonValue::kNoItems;
const std::vector<JsonValue::Member> JsonValue::kNoMembers;

namespace {

// Structural hashes (JsonValue::structural_hash): each kind is salted so that, say, the
// string "1" and the number 1 differ; arrays combine their items in order, objects add up
// one term per member so that the order of the members does not count.
constexpr uint32_t kBoolSalt = 0x85ebca6bu, kNumberSalt = 0xc2b2ae35u, kStringSalt = 0x27d4eb2fu,
                   kArraySalt = 0x165667b1u, kObjectSalt = 0xd3a2646cu;

uint32_t Mix(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ULL;
  x ^= x >> 33;
  return static_cast<uint32_t>(x);
}

uint32_t TextHash(std::string_view text, uint32_t salt) {
  return Mix(std::hash<std::string_view>()(text) ^ salt);
}

}  // namespace

JsonValue JsonValue::Bool(bool value) {
  JsonValue v;
  v.kind_ = JsonKind::kBool;
  v.bool_ = value;
  v.hash_ = Mix(kBoolSalt + (value ? 1 : 0));
  return v;
}

JsonValue JsonValue::Number(std::string lexeme, double value) {
  JsonValue v;
  v.kind_ = JsonKind::kNumber;
  v.text_ = std::move(lexeme);
  v.number_ = value;
  XG2_DCHECK(std::strtod(v.text_.c_str(), nullptr) == value,
             "a number's value is its lexeme's nearest double (its structural hash reads the value)");
  // JsonEquals compares numbers by value (1, 1.0 and 1e0 are equal; so are 0 and -0).
  uint64_t bits = 0;
  const double canonical = value == 0 ? 0.0 : value;
  static_assert(sizeof(bits) == sizeof(canonical), "a double is 64 bits");
  std::memcpy(&bits, &canonical, sizeof(bits));
  v.hash_ = Mix(bits ^ kNumberSalt);
  return v;
}

JsonValue JsonValue::String(std::string utf8) {
  JsonValue v;
  v.kind_ = JsonKind::kString;
  v.text_ = std::move(utf8);
  v.hash_ = TextHash(v.text_, kStringSalt);
  return v;
}

JsonValue JsonValue::Array(std::vector<JsonValue> items) {
  JsonValue v;
  v.kind_ = JsonKind::kArray;
  uint64_t hash = kArraySalt ^ items.size();
  for (const JsonValue& item : items) hash = Mix(hash * 31 + item.hash_);
  v.hash_ = static_cast<uint32_t>(hash);
  v.children_ = std::make_shared<const std::vector<JsonValue>>(std::move(items));
  return v;
}

JsonValue JsonValue::Object(std::vector<Member> members) {
  JsonValue v;
  v.kind_ = JsonKind::kObject;
  uint32_t sum = 0;
  for (const Member& member : members) {
    sum += Mix((uint64_t{TextHash(member.first, kObjectSalt)} << 32) | member.second.hash_);
  }
  v.hash_ = Mix(sum ^ (uint64_t{kObjectSalt} << 32) ^ members.size());
  v.children_ = std::make_shared<const std::vector<Member>>(std::move(members));
  return v;
}

bool JsonValue::is_integral_number() const {
  return kind_ == JsonKind::kNumber && std::isfinite(number_) && std::floor(number_) == number_;
}

// Schemas look up a dozen keywords in every object, most of them absent: a member whose
// length or first byte differs is passed over without a call to compare the rest.
const JsonValue* JsonValue::Find(std::string_view key) const {
  for (const Member& member : object_members()) {
    const std::string& name = member.first;
    if (name.size() != key.size()) continue;
    if (key.empty() || (name[0] == key[0] && std::memcmp(name.data(), key.data(), key.size()) == 0)) {
      return &member.second;
    }
  }
  return nullptr;
}

namespace {

// Recursive-descent parser. Invariant: `pos_` is the offset of the next unread byte.
class JsonParser {
 public:
  JsonParser(std::string_view text, int max_depth) : text_(text), max_depth_(max_depth) {}

  JsonValue ParseDocument() {
    SkipWhitespace();
    JsonValue value = ParseValue(0);
    SkipWhitespace();
    if (pos_ != text_.size()) Fail("unexpected text after the JSON value");
    return value;
  }

 private:
  [[noreturn]] void Fail(const std::string& what) const {
    int line = 1, column = 1;
    for (size_t i = 0; i < pos_ && i < text_.size(); ++i) {
      if (text_[i] == '\n') {
        ++line;
        column = 1;
      } else if ((static_cast<unsigned char>(text_[i]) & 0xC0) != 0x80) {
        ++column;
      }
    }
    throw JsonSyntaxError("invalid JSON at line " + std::to_string(line) + ", column " +
                          std::to_string(column) + ": " + what);
  }

  bool AtEnd() const { return pos_ >= text_.size(); }
  char Peek() const { return AtEnd() ? '\0' : text_[pos_]; }

  void SkipWhitespace() {
    while (!AtEnd() && (Peek() == ' ' || Peek() == '\t' || Peek() == '\n' || Peek() == '\r')) {
      ++pos_;
    }
  }

  void Expect(char c) {
    if (Peek() != c || AtEnd()) Fail(std::string("expected '") + c + "'");
    ++pos_;
  }

  void ExpectWord(std::string_view word) {
    if (text_.substr(pos_, word.size()) != word) Fail("invalid literal");
    pos_ += word.size();
  }

  JsonValue ParseValue(int depth) {
    if (AtEnd()) Fail("unexpected end of input");
    switch (Peek()) {
      case '{':
        return ParseObject(depth + 1);
      case '[':
        return ParseArray(depth + 1);
      case '"':
        return JsonValue::String(ParseString());
      case 't':
        ExpectWord("true");
        return JsonValue::Bool(true);
      case 'f':
        ExpectWord("false");
        return JsonValue::Bool(false);
      case 'n':
        ExpectWord("null");
        return JsonValue();
      default:
        if (Peek() == '-' || (Peek() >= '0' && Peek() <= '9')) return ParseNumber();
        Fail("unexpected character");
    }
  }

  void CheckDepth(int depth) const {
    if (depth > max_depth_) {
      throw ResourceLimitError("JSON nesting deeper than " + std::to_string(max_depth_) +
                               " levels");
    }
  }

  // Members and items collect on stacks shared by all levels (each level leaves them as it
  // found them) and move into a vector of their exact size when the container closes: a
  // vector per container grown by doubling would allocate and move several times.
  JsonValue ParseObject(int depth) {
    CheckDepth(depth);
    Expect('{');
    const size_t first = member_stack_.size();
    SkipWhitespace();
    if (Peek() == '}') {
      ++pos_;
      return JsonValue::Object({});
    }
    // Duplicate keys are found by a scan while the object is small, and through an index
    // once it has kIndexedMembers members: most schema objects have a handful of keys, and
    // an index per object cost more than the rest of the parse.
    constexpr size_t kIndexedMembers = 16;
    std::unordered_map<std::string, size_t> index_of_key;
    while (true) {
      SkipWhitespace();
      if (Peek() != '"') Fail("expected a string key");
      std::string key = ParseString();
      SkipWhitespace();
      Expect(':');
      SkipWhitespace();
      JsonValue value = ParseValue(depth);
      const size_t count = member_stack_.size() - first;
      size_t duplicate = count;
      if (count < kIndexedMembers) {
        for (size_t m = 0; m < count; ++m) {
          if (member_stack_[first + m].first == key) duplicate = m;
        }
      } else {
        if (index_of_key.empty()) {
          for (size_t m = 0; m < count; ++m) index_of_key.emplace(member_stack_[first + m].first, m);
        }
        auto found = index_of_key.find(key);
        if (found != index_of_key.end()) {
          duplicate = found->second;
        } else {
          index_of_key.emplace(key, count);
        }
      }
      if (duplicate < count) {
        member_stack_[first + duplicate].second = std::move(value);
      } else {
        member_stack_.emplace_back(std::move(key), std::move(value));
      }
      SkipWhitespace();
      if (Peek() == ',') {
        ++pos_;
        continue;
      }
      Expect('}');
      std::vector<JsonValue::Member> members(std::make_move_iterator(member_stack_.begin() + first),
                                             std::make_move_iterator(member_stack_.end()));
      member_stack_.resize(first);
      return JsonValue::Object(std::move(members));
    }
  }

  JsonValue ParseArray(int depth) {
    CheckDepth(depth);
    Expect('[');
    const size_t first = item_stack_.size();
    SkipWhitespace();
    if (Peek() == ']') {
      ++pos_;
      return JsonValue::Array({});
    }
    while (true) {
      SkipWhitespace();
      JsonValue item = ParseValue(depth);
      item_stack_.push_back(std::move(item));
      SkipWhitespace();
      if (Peek() == ',') {
        ++pos_;
        continue;
      }
      Expect(']');
      std::vector<JsonValue> items(std::make_move_iterator(item_stack_.begin() + first),
                                   std::make_move_iterator(item_stack_.end()));
      item_stack_.resize(first);
      return JsonValue::Array(std::move(items));
    }
  }

  bool ConsumeDigits() {
    size_t start = pos_;
    while (!AtEnd() && Peek() >= '0' && Peek() <= '9') ++pos_;
    return pos_ > start;
  }

  JsonValue ParseNumber() {
    size_t start = pos_;
    if (Peek() == '-') ++pos_;
    if (Peek() == '0') {
      ++pos_;
    } else if (!ConsumeDigits()) {
      Fail("invalid number");
    }
    if (Peek() == '.') {
      ++pos_;
      if (!ConsumeDigits()) Fail("expected digits after the decimal point");
    }
    if (Peek() == 'e' || Peek() == 'E') {
      ++pos_;
      if (Peek() == '+' || Peek() == '-') ++pos_;
      if (!ConsumeDigits()) Fail("expected digits in the exponent");
    }
    std::string lexeme(text_.substr(start, pos_ - start));
    double value = std::strtod(lexeme.c_str(), nullptr);
    return JsonValue::Number(std::move(lexeme), value);
  }

  uint32_t ParseHex4() {
    if (pos_ + 4 > text_.size()) Fail("truncated \\u escape");
    uint32_t value = 0;
    for (int i = 0; i < 4; ++i) {
      char c = text_[pos_++];
      value <<= 4;
      if (c >= '0' && c <= '9') {
        value |= c - '0';
      } else if (c >= 'a' && c <= 'f') {
        value |= c - 'a' + 10;
      } else if (c >= 'A' && c <= 'F') {
        value |= c - 'A' + 10;
      } else {
        Fail("invalid hex digit in \\u escape");
      }
    }
    return value;
  }

  // After "\u": one escaped code point, combining a surrogate pair.
  uint32_t ParseUnicodeEscape() {
    uint32_t unit = ParseHex4();
    if (unit >= 0xDC00 && unit <= 0xDFFF) Fail("lone low surrogate in \\u escape");
    if (unit < 0xD800 || unit > 0xDBFF) return unit;
    if (text_.substr(pos_, 2) != "\\u") Fail("lone high surrogate in \\u escape");
    pos_ += 2;
    uint32_t low = ParseHex4();
    if (low < 0xDC00 || low > 0xDFFF) Fail("lone high surrogate in \\u escape");
    return 0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00);
  }

  // Copies one raw UTF-8 encoded character, validating it.
  void CopyUtf8Character(std::string* out) {
    unsigned char lead = static_cast<unsigned char>(text_[pos_]);
    int length = lead < 0x80 ? 1 : lead >= 0xC2 && lead <= 0xDF ? 2
                               : lead >= 0xE0 && lead <= 0xEF ? 3
                               : lead >= 0xF0 && lead <= 0xF4 ? 4
                                                              : 0;
    if (length == 0 || pos_ + length > text_.size()) Fail("invalid UTF-8");
    uint32_t cp = length == 1 ? lead : lead & (0x7F >> length);
    for (int i = 1; i < length; ++i) {
      unsigned char next = static_cast<unsigned char>(text_[pos_ + i]);
      if ((next & 0xC0) != 0x80) Fail("invalid UTF-8");
      cp = (cp << 6) | (next & 0x3F);
    }
    bool overlong = (length == 3 && cp < 0x800) || (length == 4 && cp < 0x10000);
    if (overlong || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) Fail("invalid UTF-8");
    out->append(text_.substr(pos_, length));
    pos_ += length;
  }

  std::string ParseString() {
    Expect('"');
    std::string out;
    while (true) {
      if (AtEnd()) Fail("unterminated string");
      char c = Peek();
      if (c == '"') {
        ++pos_;
        return out;
      }
      if (static_cast<unsigned char>(c) < 0x20) Fail("control character in string");
      if (c != '\\') {
        // A run of plain ASCII (most of a schema's strings) is copied at once.
        size_t end = pos_;
        while (end < text_.size()) {
          const unsigned char byte = static_cast<unsigned char>(text_[end]);
          if (byte < 0x20 || byte >= 0x80 || byte == '"' || byte == '\\') break;
          ++end;
        }
        if (end > pos_) {
          out.append(text_.substr(pos_, end - pos_));
          pos_ = end;
        } else {
          CopyUtf8Character(&out);
        }
        continue;
      }
      ++pos_;
      char escape = Peek();
      ++pos_;
      switch (escape) {
        case '"': out.push_back('"'); break;
        case '\\': out.push_back('\\'); break;
        case '/': out.push_back('/'); break;
        case 'b': out.push_back('\b'); break;
        case 'f': out.push_back('\f'); break;
        case 'n': out.push_back('\n'); break;
        case 'r': out.push_back('\r'); break;
        case 't': out.push_back('\t'); break;
        case 'u': AppendUtf8(ParseUnicodeEscape(), &out); break;
        default: --pos_; Fail("invalid escape in string");
      }
    }
  }

  std::string_view text_;
  int max_depth_;
  size_t pos_ = 0;
  std::vector<JsonValue::Member> member_stack_;  // the open objects' members, outermost first
  std::vector<JsonValue> item_stack_;            // the open arrays' items, outermost first
};

void DumpJsonTo(const JsonValue& value, std::string* out) {
  switch (value.kind()) {
    case JsonKind::kNull: out->append("null"); return;
    case JsonKind::kBool: out->append(value.bool_value() ? "true" : "false"); return;
    case JsonKind::kNumber: out->append(value.number_lexeme()); return;
    case JsonKind::kString: out->append(DumpJsonString(value.string_value())); return;
    case JsonKind::kArray: {
      out->push_back('[');
      bool first = true;
      for (const JsonValue& item : value.array_items()) {
        if (!first) out->push_back(',');
        first = false;
        DumpJsonTo(item, out);
      }
      out->push_back(']');
      return;
    }
    case JsonKind::kObject: {
      out->push_back('{');
      bool first = true;
      for (const auto& member : value.object_members()) {
        if (!first) out->push_back(',');
        first = false;
        out->append(DumpJsonString(member.first));
        out->push_back(':');
        DumpJsonTo(member.second, out);
      }
      out->push_back('}');
      return;
    }
  }
}

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::string PercentDecode(std::string_view text) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '%') {
      out.push_back(text[i]);
      continue;
    }
    if (i + 2 >= text.size()) {
      throw InvalidArgumentError("truncated percent escape in URI fragment");
    }
    int high = HexValue(text[i + 1]), low = HexValue(text[i + 2]);
    if (high < 0 || low < 0) throw InvalidArgumentError("bad percent escape in URI fragment");
    out.push_back(static_cast<char>(high * 16 + low));
    i += 2;
  }
  return out;
}

}  // namespace

JsonValue ParseJson(std::string_view text, int max_depth) {
  return JsonParser(text, max_depth).ParseDocument();
}

std::string DumpJsonString(std::string_view utf8) {
  static const char kHex[] = "0123456789abcdef";
  std::string out = "\"";
  for (char c : utf8) {
    switch (c) {
      case '"': out.append("\\\""); break;
      case '\\': out.append("\\\\"); break;
      case '\b': out.append("\\b"); break;
      case '\f': out.append("\\f"); break;
      case '\n': out.append("\\n"); break;
      case '\r': out.append("\\r"); break;
      case '\t': out.append("\\t"); break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          out.append("\\u00");
          out.push_back(kHex[(c >> 4) & 0xF]);
          out.push_back(kHex[c & 0xF]);
        } else {
          out.push_back(c);
        }
    }
  }
  out.push_back('"');
  return out;
}

std::string DumpJson(const JsonValue& value) {
  std::string out;
  DumpJsonTo(value, &out);
  return out;
}

bool JsonIdentical(const JsonValue& a, const JsonValue& b) {
  if (&a == &b) return true;
  // Identical values are equal, so their hashes agree.
  if (a.kind() != b.kind() || a.structural_hash() != b.structural_hash()) return false;
  switch (a.kind()) {
    case JsonKind::kNull: return true;
    case JsonKind::kBool: return a.bool_value() == b.bool_value();
    case JsonKind::kNumber: return a.number_lexeme() == b.number_lexeme();
    case JsonKind::kString: return a.string_value() == b.string_value();
    case JsonKind::kArray: {
      const auto& x = a.array_items();
      const auto& y = b.array_items();
      if (&x == &y) return true;
      if (x.size() != y.size()) return false;
      for (size_t i = 0; i < x.size(); ++i) {
        if (!JsonIdentical(x[i], y[i])) return false;
      }
      return true;
    }
    case JsonKind::kObject: {
      const auto& x = a.object_members();
      const auto& y = b.object_members();
      if (&x == &y) return true;
      if (x.size() != y.size()) return false;
      for (size_t i = 0; i < x.size(); ++i) {
        if (x[i].first != y[i].first || !JsonIdentical(x[i].second, y[i].second)) return false;
      }
      return true;
    }
  }
  return false;
}

bool JsonEquals(const JsonValue& a, const JsonValue& b) {
  if (a.kind() != b.kind() || a.structural_hash() != b.structural_hash()) return false;
  switch (a.kind()) {
    case JsonKind::kNull: return true;
    case JsonKind::kBool: return a.bool_value() == b.bool_value();
    case JsonKind::kNumber:
      return a.number_lexeme() == b.number_lexeme() || a.number_value() == b.number_value();
    case JsonKind::kString: return a.string_value() == b.string_value();
    case JsonKind::kArray: {
      const auto& x = a.array_items();
      const auto& y = b.array_items();
      if (&x == &y) return true;  // copies share their items (equality is reflexive)
      if (x.size() != y.size()) return false;
      for (size_t i = 0; i < x.size(); ++i) {
        if (!JsonEquals(x[i], y[i])) return false;
      }
      return true;
    }
    case JsonKind::kObject: {
      if (&a.object_members() == &b.object_members()) return true;
      if (a.object_members().size() != b.object_members().size()) return false;
      for (const auto& member : a.object_members()) {
        const JsonValue* other = b.Find(member.first);
        if (other == nullptr || !JsonEquals(member.second, *other)) return false;
      }
      return true;
    }
  }
  return false;
}

bool UnescapeJsonPointerToken(std::string_view escaped, std::string* out) {
  if (escaped.find('~') == std::string_view::npos) {
    out->assign(escaped);  // most tokens: nothing to unescape
    return true;
  }
  out->clear();
  for (size_t i = 0; i < escaped.size(); ++i) {
    if (escaped[i] != '~') {
      out->push_back(escaped[i]);
      continue;
    }
    const char next = i + 1 < escaped.size() ? escaped[i + 1] : '\0';
    if (next != '0' && next != '1') return false;
    out->push_back(next == '0' ? '~' : '/');
    ++i;
  }
  return true;
}

std::vector<std::string> SplitJsonPointer(std::string_view pointer, bool uri_fragment) {
  std::string decoded = uri_fragment ? PercentDecode(pointer) : std::string(pointer);
  std::vector<std::string> tokens;
  if (decoded.empty()) return tokens;
  if (decoded[0] != '/') throw InvalidArgumentError("JSON pointer must start with '/'");
  const std::string_view rest(decoded);
  for (size_t start = 1; start <= rest.size();) {
    size_t end = rest.find('/', start);
    if (end == std::string_view::npos) end = rest.size();
    tokens.emplace_back();
    if (!UnescapeJsonPointerToken(rest.substr(start, end - start), &tokens.back())) {
      throw InvalidArgumentError("bad '~' escape in JSON pointer");
    }
    start = end + 1;
  }
  return tokens;
}

void AppendJsonPointerToken(std::string_view token, std::string* out) {
  // Most tokens need no escape: the run before the first '~' or '/' is appended at once.
  size_t plain = 0;
  while (plain < token.size() && token[plain] != '~' && token[plain] != '/') ++plain;
  out->append(token.substr(0, plain));
  for (char c : token.substr(plain)) {
    if (c == '~') {
      out->append("~0");
    } else if (c == '/') {
      out->append("~1");
    } else {
      out->push_back(c);
    }
  }
}

std::string EscapeJsonPointerToken(std::string_view token) {
  std::string out;
  AppendJsonPointerToken(token, &out);
  return out;
}

namespace {

// Parses an array index token: "0" or digits without a leading zero.
bool ParseArrayIndex(const std::string& token, size_t* index) {
  if (token.empty() || token.size() > 9 || (token.size() > 1 && token[0] == '0')) return false;
  size_t value = 0;
  for (char c : token) {
    if (c < '0' || c > '9') return false;
    value = value * 10 + (c - '0');
  }
  *index = value;
  return true;
}

}  // namespace

const JsonValue* ResolveJsonPointer(const JsonValue& root, std::string_view pointer,
                                    bool uri_fragment) {
  const JsonValue* current = &root;
  for (const std::string& token : SplitJsonPointer(pointer, uri_fragment)) {
    if (current->is_object()) {
      current = current->Find(token);
    } else if (current->is_array()) {
      size_t index = 0;
      if (!ParseArrayIndex(token, &index) || index >= current->array_items().size()) {
        return nullptr;
      }
      current = &current->array_items()[index];
    } else {
      return nullptr;
    }
    if (current == nullptr) return nullptr;
  }
  return current;
}

}  // namespace xg2
