// Recursive-descent parser for the EBNF dialect of docs/ebnf.md.
//
// One pass over the text: a Lexer hands out tokens on demand and the Parser looks at most
// two tokens ahead (to see where the next `name ::=` starts a rule, and to tell a
// lookahead `(=` from a group). Rule references are recorded while parsing and resolved
// once every rule is known, so references may point forward.
#include "frontends/ebnf/ebnf_parser.h"

#include <algorithm>
#include <cstdio>
#include <deque>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "grammar/grammar_builder.h"
#include "grammar/token_literal.h"
#include "support/cancellation.h"
#include "support/compile_limits.h"
#include "support/error.h"
#include "support/utf8.h"

namespace xg2 {
namespace {

// Groups nested deeper than this are refused (the parser recurses once per group).
constexpr int kMaxNestingDepth = 1000;
// Expression trees taller than this are refused, so that every later recursive walk of
// the tree (printing, lowering) has a bounded depth.
static_assert(kMaxExpressionHeight == 2 * kMaxNestingDepth,
              "the parser and grammar/grammar_builder.h bound expression trees alike");

constexpr uint32_t kSurrogateFirst = 0xD800;
constexpr uint32_t kSurrogateLast = 0xDFFF;

// Marks helpers that the recursive parse functions call but that must not be inlined into
// them: their locals (tokens, nodes) would otherwise enlarge every recursive frame, and
// frame size times kMaxNestingDepth is the stack a deeply nested grammar needs.
#define XG2_EBNF_NOINLINE __attribute__((noinline))

std::string Hex(uint32_t value, int digits) {
  char buffer[16];
  std::snprintf(buffer, sizeof(buffer), "%0*X", digits, static_cast<unsigned>(value));
  return buffer;
}

// The grammar text plus error reporting by byte offset.
class SourceText {
 public:
  explicit SourceText(std::string_view text) : text_(text) {}

  std::string_view text() const { return text_; }
  size_t size() const { return text_.size(); }
  // The byte at `offset`, or '\0' past the end (the lexer never treats '\0' as syntax).
  char At(size_t offset) const { return offset < text_.size() ? text_[offset] : '\0'; }

  // "line L, column C", both 1-based; columns count characters (UTF-8 lead bytes).
  std::string Position(size_t offset) const {
    offset = std::min(offset, text_.size());
    size_t line = 1;
    size_t line_start = 0;
    for (size_t i = 0; i < offset; ++i) {
      if (text_[i] == '\n') {
        ++line;
        line_start = i + 1;
      }
    }
    size_t column = 1;
    for (size_t i = line_start; i < offset; ++i) {
      if ((static_cast<unsigned char>(text_[i]) & 0xC0) != 0x80) ++column;
    }
    return "line " + std::to_string(line) + ", column " + std::to_string(column);
  }

  [[noreturn]] void Fail(size_t offset, const std::string& what) const {
    throw GrammarSyntaxError("EBNF grammar error at " + Position(offset) + ": " + what);
  }
  [[noreturn]] void FailLimit(size_t offset, const std::string& what) const {
    throw ResourceLimitError("EBNF grammar error at " + Position(offset) + ": " + what);
  }

 private:
  std::string_view text_;
};

enum class TokenKind {
  kIdentifier,  // rule name
  kDefine,      // ::=
  kLiteral,     // "..." or '...'
  kCharClass,   // [...]
  kAnyChar,     // .
  kLeftParen,
  kRightParen,
  kEquals,      // only meaningful right after '(' (a lookahead)
  kPipe,
  kQuestion,
  kStar,
  kPlus,
  kRepeat,      // {m}, {m,}, {m,n}, {,n}
  kComma,       // only inside the arguments of a built-in (TagDispatch, Token)
  kNumber,      // a decimal integer, only inside the arguments of Token(...)
  kEnd,
};

struct Token {
  TokenKind kind = TokenKind::kEnd;
  size_t offset = 0;                   // byte offset of the token's first character
  std::string text;                    // kIdentifier: the name; kLiteral: UTF-8 bytes
  std::vector<CodepointRange> ranges;  // kCharClass: normalized and non-empty
  int32_t min_repeat = 0;              // kRepeat
  int32_t max_repeat = -1;             // kRepeat; -1: unbounded
  int64_t number = 0;                  // kNumber
  int64_t max_tokens = -1;             // kIdentifier followed by `[max_tokens=N]` (a rule attribute)
  int64_t min_json_chars = -1;         // kIdentifier followed by `[json_chars=M..N]` (a rule attribute)
  int64_t max_json_chars = -1;         //   N, or -1 for `[json_chars=M..]`
  bool unique_item = false;            // `[unique_item]`
  bool unique_items = false;           // `[unique_items]`
  bool has_attribute() const { return max_tokens >= 0 || min_json_chars >= 0 || unique_item || unique_items; }
};

bool IsIdentifierStart(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_';
}
bool IsIdentifierChar(char c) {
  return IsIdentifierStart(c) || (c >= '0' && c <= '9') || c == '.' || c == '-';
}
bool IsDigit(char c) { return c >= '0' && c <= '9'; }
int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Splits the text into tokens. Invariant: pos_ is always at a character boundary of
// valid UTF-8 or at a byte the lexer is about to reject.
class Lexer {
 public:
  explicit Lexer(const SourceText& source) : source_(source) {}

  // Lexes the next token into `token`, overwriting all of it; its string and vector keep
  // their capacity, so a parser that recycles tokens allocates only for growth.
  XG2_EBNF_NOINLINE void Next(Token* out) {
    SkipSpaceAndComments();
    Token& token = *out;
    token.kind = TokenKind::kEnd;
    token.offset = pos_;
    token.text.clear();
    token.ranges.clear();
    token.min_repeat = 0;
    token.max_repeat = -1;
    token.number = 0;
    token.max_tokens = -1;
    token.min_json_chars = -1;
    token.max_json_chars = -1;
    token.unique_item = false;
    token.unique_items = false;
    if (pos_ >= source_.size()) return;  // kEnd
    char c = source_.At(pos_);
    if (IsIdentifierStart(c)) return LexIdentifier(token);
    switch (c) {
      case ':': return LexDefine(token);
      case '"':
      case '\'': return LexLiteral(token);
      case '[': return LexCharClass(token);
      case '{': return LexRepeatBounds(token);
      case '.': return Single(TokenKind::kAnyChar, token);
      case '(': return Single(TokenKind::kLeftParen, token);
      case ')': return Single(TokenKind::kRightParen, token);
      case '=': return Single(TokenKind::kEquals, token);
      case '|': return Single(TokenKind::kPipe, token);
      case '?': return Single(TokenKind::kQuestion, token);
      case '*': return Single(TokenKind::kStar, token);
      case '+': return Single(TokenKind::kPlus, token);
      case ',': return Single(TokenKind::kComma, token);
      default: break;
    }
    if (IsDigit(c)) return LexNumber(token);
    size_t start = pos_;
    uint32_t cp = DecodeSourceChar();
    if (cp >= 0x21 && cp < 0x7F) {
      source_.Fail(start, std::string("unexpected character '") + static_cast<char>(cp) + "'");
    }
    source_.Fail(start, "unexpected character U+" + Hex(cp, 4));
  }

 private:
  // Each Lex* starts on a token that Next has reset, at pos_ == token.offset.
  void Single(TokenKind kind, Token& token) {
    token.kind = kind;
    ++pos_;
  }

  void SkipSpaceAndComments() {
    while (pos_ < source_.size()) {
      char c = source_.At(pos_);
      if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
        ++pos_;
      } else if (c == '#') {
        while (pos_ < source_.size() && source_.At(pos_) != '\n') ++pos_;
      } else {
        return;
      }
    }
  }

  void LexIdentifier(Token& token) {
    token.kind = TokenKind::kIdentifier;
    while (pos_ < source_.size() && IsIdentifierChar(source_.At(pos_))) ++pos_;
    token.text.assign(source_.text().substr(token.offset, pos_ - token.offset));
    // Rule attributes, written right after the name: `[max_tokens=N]` (xgrammar's) and
    // `[json_chars=M..N]` / `[json_chars=M..]`, `[unique_item]` and `[unique_items]`
    // (grammar/grammar_fsm.h), in any order.
    for (;;) {
      constexpr std::string_view kMaxTokens = "[max_tokens=";
      constexpr std::string_view kJsonChars = "[json_chars=";
      constexpr std::string_view kUniqueItem = "[unique_item]";
      constexpr std::string_view kUniqueItems = "[unique_items]";
      const size_t attribute = pos_;
      if (source_.text().substr(pos_, kUniqueItem.size()) == kUniqueItem) {
        pos_ += kUniqueItem.size() - 1;
        token.unique_item = true;
      } else if (source_.text().substr(pos_, kUniqueItems.size()) == kUniqueItems) {
        pos_ += kUniqueItems.size() - 1;
        token.unique_items = true;
      } else if (source_.text().substr(pos_, kMaxTokens.size()) == kMaxTokens) {
        pos_ += kMaxTokens.size();
        token.max_tokens = ReadAttributeCount(attribute, "max_tokens", "the number of tokens");
      } else if (source_.text().substr(pos_, kJsonChars.size()) == kJsonChars) {
        pos_ += kJsonChars.size();
        token.min_json_chars = ReadAttributeCount(attribute, "json_chars", "the fewest characters");
        if (source_.text().substr(pos_, 2) != "..") source_.Fail(pos_, "expected '..' after the json_chars minimum");
        pos_ += 2;
        if (IsDigit(source_.At(pos_))) {
          token.max_json_chars = ReadAttributeCount(attribute, "json_chars", "the most characters");
          if (token.max_json_chars < token.min_json_chars) {
            source_.Fail(attribute, "json_chars: the maximum is below the minimum");
          }
        }
      } else {
        return;
      }
      if (source_.At(pos_) != ']') source_.Fail(pos_, "expected ']' to close the rule attribute");
      ++pos_;
    }
  }

  // The decimal count at pos_ of attribute `name` (at most 2147483647).
  int64_t ReadAttributeCount(size_t attribute, std::string_view name, const char* what) {
    if (!IsDigit(source_.At(pos_))) source_.Fail(pos_, std::string("expected ") + what + " after '" + std::string(name) + "='");
    int64_t value = 0;
    while (IsDigit(source_.At(pos_))) {
      value = std::min<int64_t>(value * 10 + (source_.At(pos_) - '0'), int64_t{1} << 40);
      ++pos_;
    }
    if (value > INT32_MAX) source_.Fail(attribute, std::string(name) + " exceeds 2147483647");
    return value;
  }

  // Decimal digits; values above kMaxTokenLiteralId are kept saturated for the error message.
  void LexNumber(Token& token) {
    token.kind = TokenKind::kNumber;
    while (IsDigit(source_.At(pos_))) {
      token.number = std::min<int64_t>(token.number * 10 + (source_.At(pos_) - '0'),
                                       int64_t{1} << 40);
      ++pos_;
    }
  }

  void LexDefine(Token& token) {
    if (source_.text().substr(pos_, 3) != "::=") source_.Fail(pos_, "expected '::='");
    token.kind = TokenKind::kDefine;
    pos_ += 3;
  }

  // A literal ends at its matching quote on the same line; the other quote character
  // needs no escape inside it.
  void LexLiteral(Token& token) {
    token.kind = TokenKind::kLiteral;
    char quote = source_.At(pos_++);
    const std::string_view text = source_.text();
    while (true) {
      // A run of ASCII bytes that are neither the quote, a backslash nor a line end (most of
      // a literal) stands for itself: copied at once, not code point by code point.
      size_t run_end = pos_;
      while (run_end < text.size()) {
        const char c = text[run_end];
        if (static_cast<unsigned char>(c) >= 0x80 || c == quote || c == '\\' || c == '\n') break;
        ++run_end;
      }
      token.text.append(text.data() + pos_, run_end - pos_);
      pos_ = run_end;
      if (pos_ >= source_.size() || source_.At(pos_) == '\n') {
        source_.Fail(token.offset, "unterminated string literal");
      }
      if (source_.At(pos_) == quote) break;
      AppendUtf8(LexCodepoint(), &token.text);
    }
    ++pos_;
  }

  // `[`, optional `^`, then items (a character or a range `a-z`) up to `]`. A `-` that
  // is first or right before `]` stands for itself.
  void LexCharClass(Token& token) {
    token.kind = TokenKind::kCharClass;
    // Grammars repeat a few classes many times (`[ \n\t]`, `[0-9]`, a JSON string's
    // character): a class spelled as before reuses its normalised ranges.
    const std::string_view spelling = ClassSpelling(pos_);
    if (!spelling.empty()) {
      auto cached = class_ranges_.find(spelling);
      if (cached != class_ranges_.end()) {
        token.ranges = cached->second;
        pos_ += spelling.size();
        return;
      }
    }
    ++pos_;
    bool negated = source_.At(pos_) == '^';
    if (negated) ++pos_;
    std::vector<CodepointRange> ranges;
    while (true) {
      if (pos_ >= source_.size() || source_.At(pos_) == '\n') {
        source_.Fail(token.offset, "unterminated character class");
      }
      if (source_.At(pos_) == ']') break;
      size_t item_offset = pos_;
      uint32_t first = LexCodepoint();
      uint32_t last = first;
      if (source_.At(pos_) == '-' && pos_ + 1 < source_.size() && source_.At(pos_ + 1) != ']') {
        ++pos_;
        if (source_.At(pos_) == '\n') source_.Fail(token.offset, "unterminated character class");
        last = LexCodepoint();
        if (last < first) {
          source_.Fail(item_offset, "character range " + DescribeRange(first, last) +
                                        " is reversed (start > end)");
        }
      }
      ranges.push_back({first, last});
    }
    ++pos_;
    if (ranges.empty()) source_.Fail(token.offset, "empty character class");
    token.ranges = NormalizeRanges(std::move(ranges), negated);
    if (token.ranges.empty()) source_.Fail(token.offset, "character class matches no character");
    if (!spelling.empty()) class_ranges_.emplace(spelling, token.ranges);
  }

  // The source text of the class opening at `open` ('[' to the first unescaped ']'), or empty
  // when it does not close on its line (LexCharClass then reports the error).
  std::string_view ClassSpelling(size_t open) const {
    for (size_t at = open + 1; at < source_.size(); ++at) {
      const char c = source_.At(at);
      if (c == '\n') break;
      if (c == '\\') {
        ++at;
      } else if (c == ']') {
        return source_.text().substr(open, at + 1 - open);
      }
    }
    return {};
  }

  static std::string DescribeRange(uint32_t first, uint32_t last) {
    return "U+" + Hex(first, 4) + "-U+" + Hex(last, 4);
  }

  // `{m}`, `{m,}`, `{m,n}` or `{,n}`; spaces are allowed around the numbers.
  void LexRepeatBounds(Token& token) {
    token.kind = TokenKind::kRepeat;
    ++pos_;
    SkipBlanks();
    bool has_min = IsDigit(source_.At(pos_));
    token.min_repeat = has_min ? LexBound() : 0;
    SkipBlanks();
    if (source_.At(pos_) == ',') {
      ++pos_;
      SkipBlanks();
      bool has_max = IsDigit(source_.At(pos_));
      if (!has_min && !has_max) source_.Fail(pos_, "expected a number in repetition bounds");
      token.max_repeat = has_max ? LexBound() : -1;
      SkipBlanks();
    } else if (has_min) {
      token.max_repeat = token.min_repeat;
    } else {
      source_.Fail(pos_, "expected a number in repetition bounds");
    }
    if (source_.At(pos_) != '}') source_.Fail(pos_, "expected '}' to close repetition bounds");
    ++pos_;
    if (token.max_repeat >= 0 && token.min_repeat > token.max_repeat) {
      source_.Fail(token.offset, "repetition lower bound " + std::to_string(token.min_repeat) +
                                     " exceeds upper bound " + std::to_string(token.max_repeat));
    }
  }

  void SkipBlanks() {
    while (source_.At(pos_) == ' ' || source_.At(pos_) == '\t') ++pos_;
  }

  // Decimal digits at pos_ (at least one); refuses values above the configured bound.
  int32_t LexBound() {
    const int64_t max_bound = CurrentCompileLimits().max_repetition_bound;
    size_t start = pos_;
    int64_t value = 0;
    while (IsDigit(source_.At(pos_))) {
      value = value * 10 + (source_.At(pos_) - '0');
      if (value > max_bound) {
        source_.FailLimit(start, "repetition bound exceeds the limit of " +
                                     std::to_string(max_bound));
      }
      ++pos_;
    }
    return static_cast<int32_t>(value);
  }

  // One character of a literal or class body: an escape or a raw UTF-8 character.
  uint32_t LexCodepoint() {
    if (source_.At(pos_) == '\\') return LexEscape();
    return DecodeSourceChar();
  }

  uint32_t LexEscape() {
    size_t start = pos_;
    ++pos_;  // the backslash
    if (pos_ >= source_.size()) source_.Fail(start, "unterminated escape sequence");
    char c = source_.At(pos_);
    switch (c) {
      case 'n': ++pos_; return '\n';
      case 'r': ++pos_; return '\r';
      case 't': ++pos_; return '\t';
      case '\\': case '"': case '\'': case '[': case ']': case '-': case '^':
        ++pos_;
        return static_cast<unsigned char>(c);
      case 'x': ++pos_; return LexHexCodepoint(start, 2);
      case 'u': ++pos_; return LexHexCodepoint(start, 4);
      case 'U': ++pos_; return LexHexCodepoint(start, 8);
      default: break;
    }
    if (static_cast<unsigned char>(c) >= 0x21 && static_cast<unsigned char>(c) < 0x7F) {
      source_.Fail(start, std::string("invalid escape sequence '\\") + c + "'");
    }
    source_.Fail(start, "invalid escape sequence (a backslash followed by a "
                        "non-printable or non-ASCII character)");
  }

  // Exactly `digits` hex digits naming a code point that has a UTF-8 encoding.
  uint32_t LexHexCodepoint(size_t escape_start, int digits) {
    uint32_t cp = 0;
    for (int i = 0; i < digits; ++i) {
      int value = HexValue(source_.At(pos_));
      if (value < 0) {
        std::string escape(source_.text().substr(escape_start, 2));
        source_.Fail(escape_start, "escape sequence '" + escape + "' needs exactly " +
                                       std::to_string(digits) + " hex digits");
      }
      cp = cp * 16 + static_cast<uint32_t>(value);
      ++pos_;
    }
    if (cp > kMaxCodepoint) {
      source_.Fail(escape_start, "code point U+" + Hex(cp, 4) + " is beyond U+10FFFF");
    }
    if (cp >= kSurrogateFirst && cp <= kSurrogateLast) {
      source_.Fail(escape_start, "code point U+" + Hex(cp, 4) +
                                     " is a surrogate, which has no UTF-8 encoding");
    }
    return cp;
  }

  // Decodes one UTF-8 character of the source and advances past it; rejects malformed,
  // overlong and surrogate encodings.
  uint32_t DecodeSourceChar() {
    size_t start = pos_;
    unsigned char lead = static_cast<unsigned char>(source_.At(pos_));
    int length = lead < 0x80                  ? 1
                 : lead >= 0xC2 && lead < 0xE0 ? 2
                 : lead >= 0xE0 && lead < 0xF0 ? 3
                 : lead >= 0xF0 && lead < 0xF5 ? 4
                                               : 0;
    auto fail = [&]() {
      source_.Fail(start, "invalid UTF-8 (malformed sequence starting with byte 0x" +
                              Hex(lead, 2) + ")");
    };
    if (length == 0) fail();
    uint32_t cp = length == 1 ? lead : lead & (0xFFu >> (length + 1));
    ++pos_;
    for (int k = 1; k < length; ++k) {
      unsigned char cont = static_cast<unsigned char>(source_.At(pos_));
      if (pos_ >= source_.size() || (cont & 0xC0) != 0x80) fail();
      cp = (cp << 6) | (cont & 0x3F);
      ++pos_;
    }
    static const uint32_t kMinForLength[] = {0, 0, 0x80, 0x800, 0x10000};
    bool surrogate = cp >= kSurrogateFirst && cp <= kSurrogateLast;
    if (cp < kMinForLength[length] || cp > kMaxCodepoint || surrogate) fail();
    return cp;
  }

  const SourceText& source_;
  size_t pos_ = 0;
  // Normalised ranges by class spelling (views into the source, which outlives the lexer).
  std::unordered_map<std::string_view, std::vector<CodepointRange>> class_ranges_;
};

class Parser {
 public:
  Parser(std::string_view text, std::string_view root_rule_name)
      : source_(text), lexer_(source_), root_rule_name_(root_rule_name) {
    // Generated grammars run to megabytes: growing the node table by doubling moved (and the
    // allocator coalesced) more than parsing took. About one node per kBytesPerNode bytes, up
    // to kMaxReservedNodes (a long literal is one node: beyond, the table grows as needed).
    constexpr size_t kBytesPerNode = 6;
    constexpr size_t kMaxReservedNodes = size_t{1} << 16;
    const size_t expected_nodes = std::min(text.size() / kBytesPerNode + 16, kMaxReservedNodes);
    ast_.nodes.reserve(expected_nodes);
    heights_.reserve(expected_nodes);
  }

  GrammarAst Parse() {
    while (Peek().kind != TokenKind::kEnd) {
      ThrowIfCancelled();
      ParseRule();
    }
    ResolveRuleRefs();
    auto root = rule_ids_.find(root_rule_name_);
    if (root == rule_ids_.end()) {
      source_.Fail(source_.size(), "the grammar defines no root rule '" + root_rule_name_ + "'");
    }
    ast_.root_rule = root->second;
    return std::move(ast_);
  }

 private:
  // A rule reference seen before all rules are known.
  struct PendingRuleRef {
    ExprId node;
    std::string_view name;  // a view of the source
    size_t offset;
  };

  // `ahead` < kMaxLookahead.
  const Token& Peek(size_t ahead = 0) {
    while (num_lookahead_ <= ahead) {
      lexer_.Next(&ring_[(ring_head_ + num_lookahead_) & (kRingSize - 1)]);
      ++num_lookahead_;
    }
    return ring_[(ring_head_ + ahead) & (kRingSize - 1)];
  }

  // The next token, taken off the lookahead. The reference stays valid until the next Take
  // (the ring has a slot more than the lookahead can fill); the caller may move from it.
  Token& Take() {
    Peek();
    Token& token = ring_[ring_head_];
    ring_head_ = (ring_head_ + 1) & (kRingSize - 1);
    --num_lookahead_;
    return token;
  }

  bool At(TokenKind kind) { return Peek().kind == kind; }
  bool AtRuleStart() {
    return At(TokenKind::kIdentifier) && Peek(1).kind == TokenKind::kDefine;
  }
  bool AtLookahead() {
    return At(TokenKind::kLeftParen) && Peek(1).kind == TokenKind::kEquals;
  }
  bool AtRuleEnd() { return At(TokenKind::kEnd) || AtRuleStart(); }

  // name ::= choice [ (= choice) ]
  void ParseRule() {
    if (!At(TokenKind::kIdentifier)) FailUnexpected(Peek(), "a rule name");
    const Token& name_token = Take();
    const size_t name_offset = name_token.offset;
    const int64_t max_tokens = name_token.max_tokens;
    const int64_t min_json_chars = name_token.min_json_chars, max_json_chars = name_token.max_json_chars;
    const bool unique_item = name_token.unique_item, unique_items = name_token.unique_items;
    // An identifier is spelled in the source as it is: the name is a view of the source.
    const std::string_view name = source_.text().substr(name_offset, name_token.text.size());
    if (!At(TokenKind::kDefine)) {
      FailUnexpected(Peek(), "'::=' after rule name '" + std::string(name) + "'");
    }
    Take();
    RuleId id = DeclareRule(name, name_offset);
    ast_.rules[id].max_tokens = static_cast<int32_t>(max_tokens);
    ast_.rules[id].min_json_chars = static_cast<int32_t>(min_json_chars);
    ast_.rules[id].max_json_chars = static_cast<int32_t>(max_json_chars);
    ast_.rules[id].unique_item = unique_item;
    ast_.rules[id].unique_items = unique_items;
    rule_tag_dispatches_.clear();
    ExprId body = ParseChoice(0);
    LiftTagDispatches(body, name, name_offset);
    ExprId lookahead = -1;
    if (AtLookahead()) {
      lookahead = ParseLookahead();
      if (!AtRuleEnd()) {
        source_.Fail(Peek().offset,
                     "a lookahead '(= ...)' must be the last element of a rule body");
      }
    }
    if (!AtRuleEnd()) FailUnexpected(Peek(), "the end of rule '" + std::string(name) + "'");
    ast_.rules[id].body = body;
    ast_.rules[id].lookahead = lookahead;
  }

  // Every TagDispatch of the rule just parsed other than its whole body moves into a rule of
  // its own (a TagDispatch is lowered as a whole rule, grammar_ast.h): the node is copied to
  // a new rule and turns into a reference to it in place.
  XG2_EBNF_NOINLINE void LiftTagDispatches(ExprId body, std::string_view owner, size_t owner_offset) {
    int counter = 0;
    for (ExprId node : rule_tag_dispatches_) {
      if (node == body) continue;
      std::string name;
      do {
        name = std::string(owner) + "_tag_dispatch_" + std::to_string(++counter);
      } while (rule_ids_.count(name) != 0);
      lifted_names_.push_back(std::move(name));
      RuleId lifted = DeclareRule(lifted_names_.back(), owner_offset);
      ast_.rules[lifted].body = AddLeaf(ast_.node(node));
      ExprNode ref;
      ref.kind = ExprKind::kRuleRef;
      ref.rule_id = lifted;
      ast_.node(node) = std::move(ref);
    }
    rule_tag_dispatches_.clear();
  }

  // Adds the rule `name` (a view that outlives the parser's use of it: of the source, or of
  // lifted_names_) with no body yet; a second definition of a name is an error.
  RuleId DeclareRule(std::string_view name, size_t offset) {
    auto inserted = rule_ids_.emplace(name, static_cast<RuleId>(ast_.rules.size()));
    if (!inserted.second) {
      source_.Fail(offset, "rule '" + std::string(name) + "' is already defined at " +
                               source_.Position(rule_offsets_[inserted.first->second]));
    }
    RuleDef rule;
    rule.name = std::string(name);
    ast_.rules.push_back(std::move(rule));
    rule_offsets_.push_back(offset);
    return inserted.first->second;
  }

  ExprId ParseLookahead() {
    size_t open = Take().offset;  // '('
    Take();                       // '='
    ExprId expr = ParseChoice(1);
    ExpectClosingParen(open);
    return expr;
  }

  // sequence ('|' sequence)*; one alternative is returned as is.
  ExprId ParseChoice(int depth) {
    size_t offset = Peek().offset;
    const size_t first = pending_.size();
    ExprId alternative = ParseSequence(depth);
    pending_.push_back(alternative);
    while (At(TokenKind::kPipe)) {
      Take();
      alternative = ParseSequence(depth);
      pending_.push_back(alternative);
    }
    return TakePending(ExprKind::kChoice, first, offset);
  }

  // The nodes pending_[first..] as the children of a new `kind` node (one is returned as
  // is), taken off pending_. Children are collected on that one shared stack (each level
  // leaves it as it found it) so that a node allocates its children once, at their size.
  ExprId TakePending(ExprKind kind, size_t first, size_t offset) {
    if (pending_.size() - first == 1) {
      const ExprId only = pending_[first];
      pending_.resize(first);
      return only;
    }
    ExprChildren children(pending_.data() + first, pending_.size() - first);
    pending_.resize(first);
    return AddCompound(kind, std::move(children), offset);
  }

  // postfix*; stops before anything that cannot start an element and before the next
  // rule's `name ::=` or a lookahead `(=`. No element is kEmpty, one is returned as is.
  ExprId ParseSequence(int depth) {
    size_t offset = Peek().offset;
    const size_t first = pending_.size();
    while (AtElementStart() && !AtRuleStart() && !AtLookahead()) {
      ThrowIfCancelled();
      const ExprId element = ParsePostfix(depth);
      pending_.push_back(element);
    }
    if (pending_.size() == first) return AddEmpty();
    return TakePending(ExprKind::kSequence, first, offset);
  }

  bool AtElementStart() {
    switch (Peek().kind) {
      case TokenKind::kIdentifier:
      case TokenKind::kLiteral:
      case TokenKind::kCharClass:
      case TokenKind::kAnyChar:
      case TokenKind::kLeftParen:
        return true;
      default:
        return false;
    }
  }

  // primary followed by any number of ? * + {m,n}.
  ExprId ParsePostfix(int depth) {
    ExprId expr = ParsePrimary(depth);
    while (true) {
      const Token& op = Peek();
      int32_t lo = 0;
      int32_t hi = -1;
      switch (op.kind) {
        case TokenKind::kQuestion: hi = 1; break;
        case TokenKind::kStar: break;
        case TokenKind::kPlus: lo = 1; break;
        case TokenKind::kRepeat: lo = op.min_repeat; hi = op.max_repeat; break;
        default: return expr;
      }
      expr = AddRepeat(expr, lo, hi, op.offset);
      Take();
    }
  }

  ExprId ParsePrimary(int depth) {
    if (At(TokenKind::kLeftParen)) {
      size_t open = Take().offset;
      return ParseGroup(open, depth + 1);
    }
    return ParseAtom();
  }

  // A rule reference, literal, class or `.`.
  XG2_EBNF_NOINLINE ExprId ParseAtom() {
    Token& token = Take();
    switch (token.kind) {
      case TokenKind::kIdentifier: return ParseRuleRef(token);
      case TokenKind::kLiteral: {
        ExprNode node;
        if (!token.text.empty()) {
          node.kind = ExprKind::kBytes;
          node.bytes = std::move(token.text);
        }
        return AddLeaf(std::move(node));
      }
      case TokenKind::kCharClass: return AddCharClass(std::move(token.ranges));
      case TokenKind::kAnyChar: return AddCharClass(NormalizeRanges({}, /*negate=*/true));
      default: FailUnexpected(token, "an expression");
    }
  }

  // `name` is the token just taken.
  ExprId ParseRuleRef(const Token& name) {
    if (name.has_attribute()) {
      source_.Fail(name.offset, "a rule attribute ([max_tokens=N], [json_chars=M..N], [unique_item], [unique_items]) belongs on a rule definition, not on a reference to '" + name.text + "'");
    }
    if (name.text == "TagDispatch" && At(TokenKind::kLeftParen)) return ParseTagDispatch();
    if (name.text == "Token" && At(TokenKind::kLeftParen)) return ParseTokenLiteral();
    if (name.text == "TokenSet" && At(TokenKind::kLeftParen)) return ParseTokenSet(false);
    if (name.text == "ExcludeToken" && At(TokenKind::kLeftParen)) return ParseTokenSet(true);
    ExprNode node;
    node.kind = ExprKind::kRuleRef;
    ExprId id = AddLeaf(std::move(node));
    pending_refs_.push_back({id, source_.text().substr(name.offset, name.text.size()), name.offset});
    return id;
  }

  // Token(id, ...) after the name: one of the listed tokens (grammar/token_literal.h).
  XG2_EBNF_NOINLINE ExprId ParseTokenLiteral() {
    std::vector<std::string> spellings = ParseTokenIds();
    std::vector<ExprId> alternatives;
    for (std::string& bytes : spellings) {
      ExprNode node;
      node.kind = ExprKind::kBytes;
      node.bytes = std::move(bytes);
      alternatives.push_back(AddLeaf(std::move(node)));
    }
    if (alternatives.size() == 1) return alternatives[0];
    return AddCompound(ExprKind::kChoice, std::move(alternatives), 0);
  }

  // TokenSet(id, ...) / ExcludeToken(id, ...) after the name: one whole token that is (is not)
  // listed (grammar_ast.h TokenSetDef), spelled as the set's marker (grammar/token_literal.h).
  XG2_EBNF_NOINLINE ExprId ParseTokenSet(bool excluded) {
    size_t open = Peek().offset;
    TokenSetDef set;
    set.ids = ParseTokenIdNumbers();
    set.excluded = excluded;
    if (!excluded && set.ids.empty()) source_.Fail(open, "TokenSet() needs at least one token id");
    ExprNode node;
    node.kind = ExprKind::kBytes;
    node.bytes = TokenSetMarkerBytes(ast_.AddTokenSet(std::move(set)));
    return AddLeaf(std::move(node));
  }

  // '(' [number (',' number)* [',']] ')': the listed token ids.
  std::vector<int32_t> ParseTokenIdNumbers() {
    size_t open = Take().offset;  // '('
    std::vector<int32_t> ids;
    while (!At(TokenKind::kRightParen)) {
      if (!At(TokenKind::kNumber)) FailUnexpected(Peek(), "a token id");
      Token id = Take();
      if (id.number > kMaxTokenLiteralId) {
        source_.Fail(id.offset, "token id " + std::to_string(id.number) + " exceeds the limit of " +
                                    std::to_string(kMaxTokenLiteralId));
      }
      ids.push_back(static_cast<int32_t>(id.number));
      if (!At(TokenKind::kComma)) break;
      Take();
    }
    ExpectClosingParen(open);
    return ids;
  }

  // '(' number (',' number)* [','] ')': the spellings of the listed token ids.
  std::vector<std::string> ParseTokenIds() {
    size_t open = Peek().offset;
    std::vector<std::string> spellings;
    for (int32_t id : ParseTokenIdNumbers()) spellings.push_back(TokenLiteralBytes(id));
    if (spellings.empty()) source_.Fail(open, "Token() needs at least one token id");
    return spellings;
  }

  // TagDispatch(("tag", rule), ..., stop_eos=B, stop_str=(S, ...), loop_after_dispatch=B,
  // excludes=(S, ...)) after the name; see docs/ebnf.md. A tag is one or more string
  // literals and Token(id) terms, concatenated.
  XG2_EBNF_NOINLINE ExprId ParseTagDispatch() {
    size_t open = Take().offset;  // '('
    int32_t index = static_cast<int32_t>(ast_.tag_dispatches.size());
    ast_.tag_dispatches.emplace_back();
    std::vector<std::string> seen_options;
    while (!At(TokenKind::kRightParen)) {
      if (At(TokenKind::kLeftParen)) {
        ParseDispatchTag(index);
      } else if (At(TokenKind::kIdentifier) && Peek(1).kind == TokenKind::kEquals) {
        Token option = Take();
        Take();  // '='
        if (std::find(seen_options.begin(), seen_options.end(), option.text) != seen_options.end()) {
          source_.Fail(option.offset, "TagDispatch option '" + option.text + "' is given twice");
        }
        seen_options.push_back(option.text);
        ParseDispatchOption(index, option);
      } else {
        FailUnexpected(Peek(), "a (\"tag\", rule) pair or an option of TagDispatch");
      }
      if (!At(TokenKind::kComma)) break;
      Take();
    }
    ExpectClosingParen(open);
    ExprNode node;
    node.kind = ExprKind::kTagDispatch;
    node.tag_dispatch = index;
    ExprId id = AddLeaf(std::move(node));
    rule_tag_dispatches_.push_back(id);
    return id;
  }

  void ParseDispatchTag(int32_t index) {
    size_t open = Take().offset;  // '('
    TagDispatchDef::Tag tag;
    tag.text = ParseConcatenatedString("a tag string");
    if (!At(TokenKind::kComma)) FailUnexpected(Peek(), "',' after the tag string");
    Take();
    if (!At(TokenKind::kIdentifier)) FailUnexpected(Peek(), "the name of the tag's rule");
    Token rule = Take();
    ExpectClosingParen(open);
    TagDispatchDef& def = ast_.tag_dispatches[index];
    pending_tag_refs_.push_back({index, static_cast<int32_t>(def.tags.size()), rule.text, rule.offset});
    def.tags.push_back(std::move(tag));
  }

  // One or more string literals and Token(id) terms; the result must be non-empty.
  std::string ParseConcatenatedString(const std::string& what) {
    size_t offset = Peek().offset;
    std::string text;
    bool any = false;
    while (true) {
      if (At(TokenKind::kLiteral)) {
        text += Take().text;
      } else if (At(TokenKind::kIdentifier) && Peek().text == "Token" &&
                 Peek(1).kind == TokenKind::kLeftParen) {
        size_t token_offset = Take().offset;
        std::vector<std::string> ids = ParseTokenIds();
        if (ids.size() != 1) source_.Fail(token_offset, "a Token() inside a string takes one id");
        text += ids[0];
      } else {
        break;
      }
      any = true;
    }
    if (!any) FailUnexpected(Peek(), what);
    if (text.empty()) source_.Fail(offset, what + " must not be empty");
    return text;
  }

  void ParseDispatchOption(int32_t index, const Token& option) {
    TagDispatchDef& def = ast_.tag_dispatches[index];
    if (option.text == "stop_eos") {
      def.stop_eos = ParseBool(option);
    } else if (option.text == "loop_after_dispatch") {
      def.loop_after_dispatch = ParseBool(option);
    } else if (option.text == "stop_str") {
      def.stop_strings = ParseStringTuple("a stop string");
    } else if (option.text == "excludes") {
      def.excludes = ParseStringTuple("an excluded string");
    } else {
      source_.Fail(option.offset, "unknown TagDispatch option '" + option.text +
                                      "' (expected stop_eos, stop_str, loop_after_dispatch or "
                                      "excludes)");
    }
  }

  bool ParseBool(const Token& option) {
    if (At(TokenKind::kIdentifier) && (Peek().text == "true" || Peek().text == "false")) {
      return Take().text == "true";
    }
    FailUnexpected(Peek(), "true or false for '" + option.text + "'");
  }

  // '(' [string (',' string)* [',']] ')', or a single string.
  std::vector<std::string> ParseStringTuple(const std::string& what) {
    std::vector<std::string> strings;
    if (!At(TokenKind::kLeftParen)) {
      strings.push_back(ParseConcatenatedString(what));
      return strings;
    }
    size_t open = Take().offset;
    while (!At(TokenKind::kRightParen)) {
      strings.push_back(ParseConcatenatedString(what));
      if (!At(TokenKind::kComma)) break;
      Take();
    }
    ExpectClosingParen(open);
    return strings;
  }

  // After '(' at `open`: choice ')'.
  ExprId ParseGroup(size_t open, int depth) {
    if (depth > kMaxNestingDepth) FailTooDeep(open);
    if (At(TokenKind::kEquals)) FailMisplacedLookahead(open);
    ExprId expr = ParseChoice(depth);
    ExpectClosingParen(open);
    return expr;
  }

  XG2_EBNF_NOINLINE void ExpectClosingParen(size_t open) {
    if (At(TokenKind::kRightParen)) {
      Take();
      return;
    }
    if (AtLookahead()) FailMisplacedLookahead(Peek().offset);
    FailUnexpected(Peek(), "')' to close the '(' at " + source_.Position(open));
  }

  [[noreturn]] XG2_EBNF_NOINLINE void FailTooDeep(size_t open) {
    source_.FailLimit(open, "parentheses nest deeper than the limit of " +
                                std::to_string(kMaxNestingDepth));
  }

  [[noreturn]] XG2_EBNF_NOINLINE void FailMisplacedLookahead(size_t offset) {
    source_.Fail(offset, "a lookahead '(= ...)' is allowed only at the end of a rule body");
  }

  [[noreturn]] XG2_EBNF_NOINLINE void FailUnexpected(const Token& token,
                                                     const std::string& expected) {
    switch (token.kind) {
      case TokenKind::kQuestion:
      case TokenKind::kStar:
      case TokenKind::kPlus:
      case TokenKind::kRepeat:
        source_.Fail(token.offset, "repetition operator " + Describe(token) +
                                       " does not follow an expression");
      case TokenKind::kNumber:
      case TokenKind::kComma:
        // Only meaningful inside a built-in's arguments; elsewhere a stray character.
        source_.Fail(token.offset, std::string("unexpected character '") +
                                       source_.At(token.offset) + "'");
      default:
        source_.Fail(token.offset, "expected " + expected + ", found " + Describe(token));
    }
  }

  static std::string Describe(const Token& token) {
    switch (token.kind) {
      case TokenKind::kIdentifier: return "rule name '" + token.text + "'";
      case TokenKind::kDefine: return "'::='";
      case TokenKind::kLiteral: return "a string literal";
      case TokenKind::kCharClass: return "a character class";
      case TokenKind::kAnyChar: return "'.'";
      case TokenKind::kLeftParen: return "'('";
      case TokenKind::kRightParen: return "')'";
      case TokenKind::kEquals: return "'='";
      case TokenKind::kPipe: return "'|'";
      case TokenKind::kQuestion: return "'?'";
      case TokenKind::kStar: return "'*'";
      case TokenKind::kPlus: return "'+'";
      case TokenKind::kRepeat: return "'{...}'";
      case TokenKind::kComma: return "','";
      case TokenKind::kNumber: return "a number";
      case TokenKind::kEnd: return "the end of the grammar";
    }
    return "a token";
  }

  void ResolveRuleRefs() {
    for (const PendingRuleRef& ref : pending_refs_) {
      auto found = rule_ids_.find(ref.name);
      if (found == rule_ids_.end()) source_.Fail(ref.offset, "undefined rule '" + std::string(ref.name) + "'");
      ast_.node(ref.node).rule_id = found->second;
    }
    for (const PendingTagRef& ref : pending_tag_refs_) {
      auto found = rule_ids_.find(ref.name);
      if (found == rule_ids_.end()) source_.Fail(ref.offset, "undefined rule '" + ref.name + "'");
      ast_.tag_dispatches[ref.dispatch].tags[ref.tag].rule = found->second;
    }
  }

  XG2_EBNF_NOINLINE ExprId AddCharClass(std::vector<CodepointRange> ranges) {
    ExprNode node;
    node.kind = ExprKind::kCharClass;
    node.ranges = std::move(ranges);
    return AddLeaf(std::move(node));
  }

  // {1,1} is the expression itself and {0,0} the empty string.
  XG2_EBNF_NOINLINE ExprId AddRepeat(ExprId child, int32_t lo, int32_t hi, size_t offset) {
    if (lo == 1 && hi == 1) return child;
    if (hi == 0) return AddLeaf(ExprNode{});
    ExprNode node;
    node.kind = ExprKind::kRepeat;
    node.children = {child};
    node.min_repeat = lo;
    node.max_repeat = hi;
    return AddNode(std::move(node), offset);
  }

  XG2_EBNF_NOINLINE ExprId AddCompound(ExprKind kind, ExprChildren children, size_t offset) {
    ExprNode node;
    node.kind = kind;
    node.children = std::move(children);
    return AddNode(std::move(node), offset);
  }

  ExprId AddLeaf(ExprNode node) { return AddNode(std::move(node), 0); }
  XG2_EBNF_NOINLINE ExprId AddEmpty() { return AddLeaf(ExprNode{}); }

  // Adds a node and records its height; `offset` locates the error when too tall.
  XG2_EBNF_NOINLINE ExprId AddNode(ExprNode node, size_t offset) {
    int height = 1;
    for (ExprId child : node.children) height = std::max(height, heights_[child] + 1);
    if (height > kMaxExpressionHeight) {
      source_.FailLimit(offset, "expression nests deeper than the limit of " +
                                    std::to_string(kMaxExpressionHeight));
    }
    heights_.push_back(height);
    return ast_.AddNode(std::move(node));
  }

  SourceText source_;
  Lexer lexer_;
  std::string root_rule_name_;
  // Rules declared after the text's, defined by the caller (ParseEbnfWithExternalRules); null
  // when none. The names outlive the parse (rule_ids_ keys view them).
  // Tokens are lexed into a ring and never moved: ring_[ring_head_] and the num_lookahead_
  // (<= kMaxLookahead) slots after it are lexed, not yet taken; the slot before ring_head_
  // holds the token taken last.
  static constexpr size_t kMaxLookahead = 2;
  // kMaxLookahead + 1 slots are needed; a power of two makes the wrap-around a mask.
  static constexpr size_t kRingSize = 4;
  static_assert(kRingSize > kMaxLookahead && (kRingSize & (kRingSize - 1)) == 0, "ring size");
  Token ring_[kRingSize];
  size_t ring_head_ = 0;
  size_t num_lookahead_ = 0;
  GrammarAst ast_;
  std::vector<int> heights_;  // heights_[id]: height of the tree under node id
  // Keys view the source or lifted_names_ (whose strings never move).
  std::unordered_map<std::string_view, RuleId> rule_ids_;
  std::deque<std::string> lifted_names_;  // names of the rules LiftTagDispatches adds
  std::vector<size_t> rule_offsets_;  // rule_offsets_[id]: where rule id's name is
  std::vector<PendingRuleRef> pending_refs_;
  std::vector<ExprId> pending_;  // children being collected (ParseChoice, ParseSequence)
  // A TagDispatch tag's rule, seen before all rules are known.
  struct PendingTagRef {
    int32_t dispatch;
    int32_t tag;
    std::string name;
    size_t offset;
  };
  std::vector<PendingTagRef> pending_tag_refs_;
  std::vector<ExprId> rule_tag_dispatches_;  // kTagDispatch nodes of the rule being parsed
};

}  // namespace

GrammarAst ParseEbnf(std::string_view text, std::string_view root_rule_name) {
  return Parser(text, root_rule_name).Parse();
}

std::vector<CodepointRange> ParseEbnfCharClass(std::string_view spelled) {
  const SourceText source(spelled);
  Lexer lexer(source);
  Token token;
  lexer.Next(&token);
  std::vector<CodepointRange> ranges;
  if (token.kind == TokenKind::kCharClass) {
    ranges = std::move(token.ranges);
  } else if (token.kind == TokenKind::kAnyChar) {
    ranges = NormalizeRanges({}, /*negate=*/true);
  } else {
    source.Fail(0, "expected a character class");
  }
  lexer.Next(&token);
  if (token.kind != TokenKind::kEnd) source.Fail(token.offset, "expected the end of the character class");
  return ranges;
}

}  // namespace xg2
