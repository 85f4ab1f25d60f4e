// Recursive-descent reader of Lark grammar text. Line structure follows Lark: a definition
// ends at the end of its line unless the next non-blank line starts with `|`; inside ( ) and
// [ ] newlines are free. Escapes in literals and regexes are decoded as Lark decodes them
// (lark/load_grammar.py, eval_escaping): \n \f \t \r \xHH \uHHHH \UHHHHHHHH become the
// character, \" becomes ", \\ a backslash (in a regex it stays an escaped backslash), and
// any other backslash pair is kept as written.
#include "frontends/lark/lark_parser.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "support/error.h"
#include "support/utf8.h"

namespace xg2 {
namespace lark {

std::string Where(const Position& position) {
  return "Lark grammar, line " + std::to_string(position.line) + ", column " +
         std::to_string(position.column) + ": ";
}

namespace {

constexpr int kMaxNesting = 200;
constexpr int64_t kMaxCount = 1000000000;

bool IsNameStart(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool IsNameChar(char c) { return IsNameStart(c) || (c >= '0' && c <= '9'); }
bool IsDigit(char c) { return c >= '0' && c <= '9'; }

class Parser {
 public:
  explicit Parser(std::string_view text) : text_(text) {
    line_starts_.push_back(0);
    for (size_t i = 0; i < text.size(); ++i) {
      if (text[i] == '\n') line_starts_.push_back(i + 1);
    }
  }

  Grammar Parse() {
    Grammar grammar;
    for (;;) {
      SkipAll();
      if (AtEnd()) break;
      if (Peek() == '%') {
        ParseDirective(&grammar);
      } else {
        grammar.definitions.push_back(ParseDefinition());
      }
      SkipInline();
      if (!AtEnd() && Peek() != '\n') Fail(pos_, std::string("unexpected ") + Describe(Peek()));
    }
    return grammar;
  }

 private:
  // ---- positions and errors -------------------------------------------------------------

  Position At(size_t offset) const {
    size_t line = std::upper_bound(line_starts_.begin(), line_starts_.end(), offset) - line_starts_.begin();
    return {static_cast<int>(line), static_cast<int>(offset - line_starts_[line - 1] + 1)};
  }

  [[noreturn]] void Fail(size_t offset, const std::string& message) const {
    throw GrammarSyntaxError(Where(At(offset)) + message);
  }

  static std::string Describe(char c) {
    if (c == '\n') return "end of line";
    if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7F) return "character";
    return std::string("'") + c + "'";
  }

  // ---- characters -----------------------------------------------------------------------

  bool AtEnd() const { return pos_ >= text_.size(); }
  char Peek(size_t ahead = 0) const { return pos_ + ahead < text_.size() ? text_[pos_ + ahead] : '\0'; }
  bool LookingAt(std::string_view s) const { return text_.substr(pos_, s.size()) == s; }

  void Expect(char c, const char* what) {
    if (Peek() != c || AtEnd()) Fail(pos_, std::string("expected ") + what);
    ++pos_;
  }

  // Spaces and comments (`//` as in Lark, `#` as in llguidance) up to the end of the line.
  void SkipInline() {
    for (;;) {
      char c = Peek();
      if (!AtEnd() && (c == ' ' || c == '\t' || c == '\r' || c == '\f')) {
        ++pos_;
      } else if (LookingAt("//") || (!AtEnd() && c == '#')) {
        while (!AtEnd() && Peek() != '\n') ++pos_;
      } else {
        return;
      }
    }
  }

  void SkipAll() {
    for (;;) {
      SkipInline();
      if (AtEnd() || Peek() != '\n') return;
      ++pos_;
    }
  }

  void SkipSpace(int depth) { depth > 0 ? SkipAll() : SkipInline(); }

  std::string ReadName() {
    size_t start = pos_;
    if (!IsNameStart(Peek())) Fail(pos_, "expected a name");
    while (!AtEnd() && IsNameChar(Peek())) ++pos_;
    return std::string(text_.substr(start, pos_ - start));
  }

  int64_t ReadCount(const char* what) {
    size_t start = pos_;
    if (!IsDigit(Peek())) Fail(pos_, std::string("expected ") + what);
    int64_t value = 0;
    while (IsDigit(Peek())) {
      value = value * 10 + (Peek() - '0');
      if (value > kMaxCount) Fail(start, std::string(what) + " is too large");
      ++pos_;
    }
    return value;
  }

  // Uppercase (after leading underscores) is a terminal, lowercase a rule; Lark allows no mix.
  bool IsTerminalName(const std::string& name, size_t offset) const {
    bool upper = false, lower = false;
    for (char c : name) {
      upper |= (c >= 'A' && c <= 'Z');
      lower |= (c >= 'a' && c <= 'z');
    }
    if (upper && lower) {
      Fail(offset, "name '" + name + "' mixes cases: rules are lowercase, terminals UPPERCASE");
    }
    if (!upper && !lower) Fail(offset, "name '" + name + "' has no letter");
    return upper;
  }

  // ---- statements -----------------------------------------------------------------------

  Definition ParseDefinition() {
    Definition def;
    size_t start = pos_;
    def.position = At(start);
    while (Peek() == '?' || Peek() == '!') ++pos_;  // tree-shaping modifiers: no language effect
    size_t name_at = pos_;
    def.name = ReadName();
    def.terminal = IsTerminalName(def.name, name_at);
    if (def.terminal && name_at != start) Fail(start, "terminal '" + def.name + "' cannot take ? or !");
    if (Peek() == '{') Fail(pos_, "templates (" + def.name + "{...}) are not supported");
    if (Peek() == '[') {
      if (def.terminal) Fail(pos_, "terminal '" + def.name + "' cannot take attributes");
      ParseAttributes(&def);
    }
    if (Peek() == '.') {  // priority: decides between parses, never which strings parse
      ++pos_;
      if (Peek() == '-') ++pos_;
      ReadCount("a priority");
    }
    SkipInline();
    if (Peek() != ':' || AtEnd()) Fail(pos_, "expected ':' after '" + def.name + "'");
    ++pos_;
    def.body = ParseChoice(0);
    return def;
  }

  void ParseAttributes(Definition* def) {
    ++pos_;  // '['
    for (;;) {
      SkipInline();
      size_t key_at = pos_;
      std::string key = ReadName();
      SkipInline();
      if (key != "max_tokens") Fail(key_at, "rule attribute '" + key + "' is not supported");
      Expect('=', "'=' after max_tokens");
      SkipInline();
      def->max_tokens = ReadCount("a token count");
      SkipInline();
      if (Peek() == ',') {
        ++pos_;
        continue;
      }
      Expect(']', "']' closing the rule attributes");
      return;
    }
  }

  void ParseDirective(Grammar* grammar) {
    size_t start = pos_;
    ++pos_;  // '%'
    std::string word = IsNameStart(Peek()) ? ReadName() : std::string();
    if (word == "ignore") {
      SkipInline();
      grammar->ignores.push_back(ParseChoice(0));
    } else if (word == "import") {
      ParseImport(grammar);
    } else if (word == "llguidance") {
      SkipInline();
      size_t json_at = pos_;
      std::string options = ReadJsonObject();
      std::string inner = options.substr(1, options.size() - 2);
      if (inner.find_first_not_of(" \t\r\n") != std::string::npos) {
        Fail(json_at, "%llguidance options are not supported (only %llguidance {})");
      }
    } else {
      Fail(start, "directive %" + word + " is not supported");
    }
  }

  void ParseImport(Grammar* grammar) {
    SkipInline();
    size_t path_at = pos_;
    std::string library = IsNameStart(Peek()) ? ReadName() : std::string();
    if (library != "common") {
      Fail(path_at, "%import from '" + (library.empty() ? std::string(1, Peek()) : library) +
                        "' is not supported: only the common library (%import common.NAME)");
    }
    if (Peek() == '.') {
      ++pos_;
      Import import{ReadName(), "", At(path_at)};
      if (Peek() == '.') Fail(pos_, "%import path too deep: only common.NAME");
      SkipInline();
      if (LookingAt("->")) {
        pos_ += 2;
        SkipInline();
        import.alias = ReadName();
      } else {
        import.alias = import.name;
      }
      grammar->imports.push_back(std::move(import));
      return;
    }
    SkipInline();
    Expect('(', "'.NAME' or '(NAME, ...)' after %import common");
    for (;;) {
      SkipInline();
      size_t at = pos_;
      std::string name = ReadName();
      grammar->imports.push_back({name, name, At(at)});
      SkipInline();
      if (Peek() == ',') {
        ++pos_;
        continue;
      }
      Expect(')', "')' closing the import list");
      return;
    }
  }

  // ---- expressions ----------------------------------------------------------------------

  void Enter(int depth) const {
    if (depth > kMaxNesting) Fail(pos_, "expression nested deeper than " + std::to_string(kMaxNesting));
  }

  Expr ParseChoice(int depth) {
    Enter(depth);
    Expr choice;
    choice.kind = ExprKind::kChoice;
    choice.position = At(pos_);
    choice.children.push_back(ParseAlias(depth));
    for (;;) {
      SkipSpace(depth);
      if (depth == 0 && Peek() == '\n' && !AtEnd()) {
        size_t saved = pos_;
        SkipAll();
        if (Peek() != '|' || AtEnd()) {
          pos_ = saved;
          break;
        }
      }
      if (Peek() != '|' || AtEnd()) break;
      ++pos_;
      choice.children.push_back(ParseAlias(depth));
    }
    if (choice.children.size() == 1) return std::move(choice.children[0]);
    return choice;
  }

  Expr ParseAlias(int depth) {
    Expr sequence = ParseSequence(depth);
    SkipSpace(depth);
    if (LookingAt("->")) {  // tree alias: no language effect
      pos_ += 2;
      SkipInline();
      ReadName();
    }
    return sequence;
  }

  Expr ParseSequence(int depth) {
    Expr sequence;
    sequence.kind = ExprKind::kSequence;
    sequence.position = At(pos_);
    for (;;) {
      SkipSpace(depth);
      char c = Peek();
      if (AtEnd() || c == '|' || c == ')' || c == ']' || (c == '\n' && depth == 0) || LookingAt("->")) break;
      sequence.children.push_back(ParsePostfix(depth));
    }
    if (sequence.children.size() == 1) return std::move(sequence.children[0]);
    return sequence;
  }

  Expr ParsePostfix(int depth) {
    size_t atom_at = pos_;
    Expr atom = ParseAtom(depth);
    bool name_atom = atom.kind == ExprKind::kName;
    size_t after_atom = pos_;
    SkipInline();
    char c = Peek();
    if (AtEnd()) return atom;
    if (c == '{' && name_atom && pos_ == after_atom && !IsDigit(Peek(1)) && Peek(1) != ',') {
      Fail(pos_, "templates (" + atom.text + "{...}) are not supported");
    }
    int64_t min = 0, max = -1;
    size_t op_at = pos_;
    if (c == '?') {
      max = 1;
      ++pos_;
    } else if (c == '*') {
      ++pos_;
    } else if (c == '+') {
      min = 1;
      ++pos_;
    } else if (c == '~') {
      ++pos_;
      SkipInline();
      min = max = ReadCount("a repetition count after '~'");
      if (LookingAt("..")) {
        pos_ += 2;
        max = ReadCount("a repetition bound after '..'");
      }
    } else if (c == '{') {  // llguidance: {n}, {m,}, {,n}, {m,n}
      ++pos_;
      SkipInline();
      if (IsDigit(Peek())) min = ReadCount("a repetition count");
      SkipInline();
      if (Peek() == ',') {
        ++pos_;
        SkipInline();
        if (IsDigit(Peek())) max = ReadCount("a repetition bound");
      } else {
        max = min;
      }
      SkipInline();
      Expect('}', "'}' closing the repetition");
    } else {
      pos_ = after_atom;
      return atom;
    }
    if (max >= 0 && min > max) Fail(op_at, "repetition minimum " + std::to_string(min) + " is above its maximum " + std::to_string(max));
    size_t after_op = pos_;
    SkipInline();
    char next = Peek();
    if (!AtEnd() && (next == '?' || next == '*' || next == '+' || next == '~')) {
      Fail(pos_, "misplaced operator: one repetition per expression (use parentheses)");
    }
    pos_ = after_op;
    Expr repeat;
    repeat.kind = ExprKind::kRepeat;
    repeat.position = At(atom_at);
    repeat.min = min;
    repeat.max = max;
    repeat.children.push_back(std::move(atom));
    return repeat;
  }

  Expr ParseAtom(int depth) {
    Enter(depth);
    Expr atom;
    atom.position = At(pos_);
    size_t start = pos_;
    char c = Peek();
    if (c == '(' || c == '[') {
      ++pos_;
      Expr inner = ParseChoice(depth + 1);
      SkipAll();
      Expect(c == '(' ? ')' : ']', c == '(' ? "')'" : "']'");
      if (c == '(') return inner;
      atom.kind = ExprKind::kRepeat;
      atom.min = 0;
      atom.max = 1;
      atom.children.push_back(std::move(inner));
      return atom;
    }
    if (c == '"') {
      atom.kind = ExprKind::kLiteral;
      atom.text = ReadString();
      if (Peek() == 'i') {
        ++pos_;
        atom.case_insensitive = true;
      }
      size_t after = pos_;
      SkipInline();
      if (!LookingAt("..")) {
        pos_ = after;
        if (atom.text.empty()) Fail(start, "empty string literal (Lark allows no empty terminal)");
        return atom;
      }
      pos_ += 2;
      SkipInline();
      size_t second_at = pos_;
      if (Peek() != '"') Fail(pos_, "expected a string after '..'");
      std::string last = ReadString();
      atom.kind = ExprKind::kRange;
      atom.first = SingleCodePoint(atom.text, start);
      atom.last = SingleCodePoint(last, second_at);
      if (atom.case_insensitive || Peek() == 'i') Fail(start, "a range cannot take the i flag");
      if (atom.first > atom.last) Fail(start, "range bounds are reversed");
      return atom;
    }
    if (c == '/') {
      atom.kind = ExprKind::kRegex;
      ReadRegex(&atom);
      return atom;
    }
    if (c == '%') {
      if (!LookingAt("%json")) Fail(pos_, "only %json may appear inside a rule");
      pos_ += 5;
      SkipAll();
      atom.kind = ExprKind::kJson;
      atom.text = ReadJsonObject();
      return atom;
    }
    if (c == '<') {
      ReadSpecialToken(&atom);
      return atom;
    }
    if (c == '@') Fail(pos_, "grammar references (@name) are not supported");
    if (c == '\'') Fail(pos_, "single-quoted strings are not Lark syntax; use \"...\"");
    if (IsNameStart(c)) {
      atom.kind = ExprKind::kName;
      atom.text = ReadName();
      IsTerminalName(atom.text, start);
      return atom;
    }
    Fail(pos_, "unexpected " + Describe(c));
  }

  char32_t SingleCodePoint(const std::string& utf8, size_t offset) const {
    size_t length = utf8.empty() ? 0 : (static_cast<unsigned char>(utf8[0]) < 0x80 ? 1
                                       : static_cast<unsigned char>(utf8[0]) < 0xE0 ? 2
                                       : static_cast<unsigned char>(utf8[0]) < 0xF0 ? 3 : 4);
    if (utf8.empty() || utf8.size() != length) Fail(offset, "a range bound must be one character");
    unsigned char b0 = utf8[0];
    if (length == 1) return b0;
    char32_t cp = b0 & (0x7F >> length);
    for (size_t i = 1; i < length; ++i) cp = (cp << 6) | (static_cast<unsigned char>(utf8[i]) & 0x3F);
    return cp;
  }

  // Reads \x, \u or \U digits after the escape letter at pos_ - 1; returns the code point.
  char32_t ReadHexEscape(char kind, size_t escape_at) {
    int digits = kind == 'x' ? 2 : kind == 'u' ? 4 : 8;
    char32_t cp = 0;
    for (int i = 0; i < digits; ++i) {
      char h = Peek();
      int value = IsDigit(h) ? h - '0' : (h >= 'a' && h <= 'f') ? h - 'a' + 10 : (h >= 'A' && h <= 'F') ? h - 'A' + 10 : -1;
      if (value < 0 || AtEnd()) Fail(escape_at, std::string("\\") + kind + " needs " + std::to_string(digits) + " hex digits");
      cp = cp * 16 + value;
      ++pos_;
    }
    if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) Fail(escape_at, "escape is not a Unicode scalar value");
    return cp;
  }

  // Decodes one Lark escape (pos_ at the backslash) into `out`. `in_regex`: \\ stays escaped.
  void DecodeEscape(std::string* out, bool in_regex) {
    size_t escape_at = pos_;
    ++pos_;
    if (AtEnd() || Peek() == '\n') Fail(escape_at, "literal ends inside an escape");
    char c = Peek();
    ++pos_;
    switch (c) {
      case 'n': out->push_back('\n'); return;
      case 'f': out->push_back('\f'); return;
      case 't': out->push_back('\t'); return;
      case 'r': out->push_back('\r'); return;
      case 'x': case 'u': case 'U': AppendUtf8(ReadHexEscape(c, escape_at), out); return;
      case '"': out->push_back('"'); return;
      case '\\': *out += in_regex ? "\\\\" : "\\"; return;
      default:
        out->push_back('\\');
        out->push_back(c);
        return;
    }
  }

  std::string ReadString() {
    size_t start = pos_;
    ++pos_;  // '"'
    std::string out;
    for (;;) {
      if (AtEnd() || Peek() == '\n') Fail(start, "unterminated string literal");
      char c = Peek();
      if (c == '"') {
        ++pos_;
        return out;
      }
      if (c == '\\') {
        DecodeEscape(&out, false);
      } else {
        out.push_back(c);
        ++pos_;
      }
    }
  }

  void ReadRegex(Expr* atom) {
    size_t start = pos_;
    ++pos_;  // '/'
    std::string pattern;
    for (;;) {
      if (AtEnd() || Peek() == '\n') Fail(start, "unterminated regular expression");
      char c = Peek();
      if (c == '/') {
        ++pos_;
        break;
      }
      if (c == '\\' && Peek(1) == '/') {
        pattern.push_back('/');
        pos_ += 2;
      } else if (c == '\\') {
        DecodeEscape(&pattern, true);
      } else {
        pattern.push_back(c);
        ++pos_;
      }
    }
    if (pattern.empty()) Fail(start, "empty regular expression");
    while (!AtEnd() && std::string_view("imslux").find(Peek()) != std::string_view::npos) atom->flags.push_back(text_[pos_++]);
    atom->text = std::move(pattern);
  }

  // A JSON object, balanced on braces outside JSON strings; returned as written.
  std::string ReadJsonObject() {
    size_t start = pos_;
    if (Peek() != '{' || AtEnd()) Fail(pos_, "expected a JSON object '{...}'");
    int depth = 0;
    bool in_string = false;
    while (!AtEnd()) {
      char c = text_[pos_++];
      if (in_string) {
        if (c == '\\') {
          ++pos_;
        } else if (c == '"') {
          in_string = false;
        }
      } else if (c == '"') {
        in_string = true;
      } else if (c == '{') {
        ++depth;
      } else if (c == '}' && --depth == 0) {
        return std::string(text_.substr(start, pos_ - start));
      }
    }
    Fail(start, "unterminated JSON object");
  }

  // llguidance special tokens: <|name|> or another <...> spelling of the tokenizer, <[id]>.
  void ReadSpecialToken(Expr* atom) {
    size_t start = pos_;
    size_t close = text_.find('>', pos_ + 1);
    size_t newline = text_.find('\n', pos_);
    if (close == std::string_view::npos || (newline != std::string_view::npos && newline < close)) {
      Fail(start, "unterminated special token '<...>'");
    }
    atom->kind = ExprKind::kSpecialToken;
    std::string_view token = text_.substr(start, close + 1 - start);
    pos_ = close + 1;
    if (token.size() > 4 && token[1] == '[' && token[token.size() - 2] == ']') {
      std::string_view digits = token.substr(2, token.size() - 4);
      if (digits.empty() || digits.size() > 9 || !std::all_of(digits.begin(), digits.end(), IsDigit)) {
        Fail(start, "token id '" + std::string(token) + "' must be <[N]> with a decimal id");
      }
      atom->token_id = std::stoll(std::string(digits));
      return;
    }
    if (token.size() <= 2) Fail(start, "empty special token '<>'");
    atom->text = std::string(token);
  }

  std::string_view text_;
  size_t pos_ = 0;
  std::vector<size_t> line_starts_;
};

}  // namespace

Grammar ParseLark(std::string_view text) { return Parser(text).Parse(); }

}  // namespace lark
}  // namespace xg2
