// Regex -> grammar expression in two passes. RegexParser reads the pattern into a small tree
// (character sets, sequences, alternations, repeats, anchors); TermEmitter turns the tree
// into terms, optionally rewriting every character into its JSON string encoding and letting
// any text precede / follow unanchored ends (search semantics). The terms print as EBNF in
// the docs/ebnf.md dialect and build the grammar nodes a parse of that text would give.
//
// Dialect choices, where Python `re` and ECMAScript disagree:
//   \d = [0-9] and \w = [A-Za-z0-9_] (ASCII, as in ECMAScript);
//   \s = the ECMAScript WhiteSpace + LineTerminator set (includes U+FEFF; unlike Python it
//        excludes U+001C..U+001F and U+0085);
//   .  = any character except \n (Python; ECMAScript also excludes \r, U+2028, U+2029);
//   $  = the end of the text (ECMAScript; Python also matches before a final \n);
//   [], [^], {,n} and {,} are rejected rather than guessed at; `{` that does not start a
//   quantifier is a literal.
#include "frontends/regex/regex_converter.h"

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "support/error.h"

namespace xg2 {
namespace {

constexpr char32_t kMaxCodePoint = 0x10FFFF;
constexpr char32_t kFirstSurrogate = 0xD800;
constexpr char32_t kLastSurrogate = 0xDFFF;
constexpr uint32_t kUnbounded = UINT32_MAX;
constexpr uint32_t kMaxRepeatBound = 100000;
constexpr int kMaxGroupDepth = 256;

// ---------------------------------------------------------------------------------------
// Sets of code points.

struct CodePointRange {
  char32_t first;
  char32_t last;  // inclusive
};

// A set of Unicode scalar values. Invariant: ranges_ is sorted, disjoint, non-adjacent and
// holds no surrogate (no UTF-8 text contains one, so they can never match).
class CodePointSet {
 public:
  CodePointSet() = default;

  // Normalises arbitrary (unsorted, overlapping) ranges.
  static CodePointSet FromRanges(std::vector<CodePointRange> ranges) {
    CodePointSet set;
    std::sort(ranges.begin(), ranges.end(),
              [](const CodePointRange& a, const CodePointRange& b) { return a.first < b.first; });
    for (CodePointRange r : ranges) {
      if (r.first <= kLastSurrogate && r.last >= kFirstSurrogate) {
        if (r.first < kFirstSurrogate) set.AppendSorted({r.first, kFirstSurrogate - 1});
        if (r.last > kLastSurrogate) set.AppendSorted({kLastSurrogate + 1, r.last});
      } else {
        set.AppendSorted(r);
      }
    }
    return set;
  }
  static CodePointSet Of(char32_t c) { return FromRanges({{c, c}}); }
  static CodePointSet Span(char32_t first, char32_t last) { return FromRanges({{first, last}}); }
  static CodePointSet All() { return Span(0, kMaxCodePoint); }

  const std::vector<CodePointRange>& ranges() const { return ranges_; }
  bool empty() const { return ranges_.empty(); }
  bool IsSingle() const { return ranges_.size() == 1 && ranges_[0].first == ranges_[0].last; }
  bool Contains(char32_t c) const {
    auto it = std::upper_bound(ranges_.begin(), ranges_.end(), c,
                               [](char32_t v, const CodePointRange& r) { return v < r.first; });
    return it != ranges_.begin() && std::prev(it)->last >= c;
  }

  CodePointSet Complement() const {
    std::vector<CodePointRange> gaps;
    char32_t next = 0;
    for (const CodePointRange& r : ranges_) {
      if (r.first > next) gaps.push_back({next, r.first - 1});
      next = r.last + 1;
    }
    if (next <= kMaxCodePoint) gaps.push_back({next, kMaxCodePoint});
    return FromRanges(std::move(gaps));
  }
  CodePointSet Union(const CodePointSet& other) const {
    std::vector<CodePointRange> all = ranges_;
    all.insert(all.end(), other.ranges_.begin(), other.ranges_.end());
    return FromRanges(std::move(all));
  }
  CodePointSet Minus(const CodePointSet& other) const {
    return Complement().Union(other).Complement();
  }

 private:
  // `r` starts at or after every range already present.
  void AppendSorted(CodePointRange r) {
    if (!ranges_.empty() && r.first <= ranges_.back().last + 1) {
      ranges_.back().last = std::max(ranges_.back().last, r.last);
    } else {
      ranges_.push_back(r);
    }
  }

  std::vector<CodePointRange> ranges_;
};

CodePointSet DigitSet() { return CodePointSet::Span('0', '9'); }
CodePointSet WordSet() {
  return CodePointSet::FromRanges({{'0', '9'}, {'A', 'Z'}, {'a', 'z'}, {'_', '_'}});
}
CodePointSet SpaceSet() {
  return CodePointSet::FromRanges({{'\t', '\r'},
                                   {' ', ' '},
                                   {0xA0, 0xA0},
                                   {0x1680, 0x1680},
                                   {0x2000, 0x200A},
                                   {0x2028, 0x2029},
                                   {0x202F, 0x202F},
                                   {0x205F, 0x205F},
                                   {0x3000, 0x3000},
                                   {0xFEFF, 0xFEFF}});
}
CodePointSet AnyExceptNewline() { return CodePointSet::Of('\n').Complement(); }

// ---------------------------------------------------------------------------------------
// The regex tree.

enum class NodeKind { kCharSet, kSequence, kAlternation, kRepeat, kStartAnchor, kEndAnchor };

struct Node {
  NodeKind kind = NodeKind::kSequence;
  size_t offset = 0;           // where the construct starts in the pattern (for errors)
  CodePointSet chars;          // kCharSet: the characters it matches (may be empty)
  std::vector<Node> children;  // kSequence, kAlternation: the parts; kRepeat: the operand
  uint32_t min = 0;            // kRepeat
  uint32_t max = 0;            // kRepeat; kUnbounded when there is no upper bound
  bool has_anchor = false;     // a ^ or $ is somewhere inside
  bool can_match = true;       // false when no string matches (e.g. [^\s\S])
};

Node MakeCharSet(CodePointSet chars, size_t offset) {
  Node node;
  node.kind = NodeKind::kCharSet;
  node.offset = offset;
  node.can_match = !chars.empty();
  node.chars = std::move(chars);
  return node;
}

Node MakeAnchor(NodeKind kind, size_t offset) {
  Node node;
  node.kind = kind;
  node.offset = offset;
  node.has_anchor = true;
  return node;
}

// An empty sequence is the empty string.
Node MakeSequenceOrAlternation(NodeKind kind, std::vector<Node> children, size_t offset) {
  if (children.size() == 1) return std::move(children[0]);
  Node node;
  node.kind = kind;
  node.offset = offset;
  node.can_match = kind == NodeKind::kSequence;
  for (const Node& child : children) {
    node.has_anchor |= child.has_anchor;
    if (kind == NodeKind::kSequence) {
      node.can_match &= child.can_match;
    } else {
      node.can_match |= child.can_match;
    }
  }
  node.children = std::move(children);
  return node;
}

Node MakeRepeat(Node operand, uint32_t min, uint32_t max, size_t offset) {
  Node node;
  node.kind = NodeKind::kRepeat;
  node.offset = offset;
  node.min = min;
  node.max = max;
  node.has_anchor = operand.has_anchor;
  node.can_match = min == 0 || operand.can_match;
  node.children.push_back(std::move(operand));
  return node;
}

// ---------------------------------------------------------------------------------------
// `$` before the end of the pattern, as in `^(/?[a-z]*($|/))*$` or `^$x*$`: once `$` has
// matched, the rest of the match must be empty. Every node splits into what it matches
// without passing a `$` (free) and what it matches having passed one (ended, which nothing
// but the empty string may follow); the pattern is then free | ended$, with `$` only at the
// ends. Only used where `$` sits elsewhere and no `^` stands after the start (a `^` after
// an asserted end would need the same split for the start).

Node Never(size_t offset) { return MakeCharSet(CodePointSet(), offset); }
Node Epsilon(size_t offset) { return MakeSequenceOrAlternation(NodeKind::kSequence, {}, offset); }

// Flattening concatenation and union (an empty sequence is the empty string; a node that
// cannot match empties a sequence and drops out of an alternation).
Node Concat(const Node& a, const Node& b) {
  if (!a.can_match || !b.can_match) return Never(a.offset);
  std::vector<Node> parts;
  for (const Node* part : {&a, &b}) {
    if (part->kind == NodeKind::kSequence) {
      parts.insert(parts.end(), part->children.begin(), part->children.end());
    } else {
      parts.push_back(*part);
    }
  }
  return parts.empty() ? Epsilon(a.offset) : MakeSequenceOrAlternation(NodeKind::kSequence, std::move(parts), a.offset);
}

Node Union(const Node& a, const Node& b) {
  if (!a.can_match) return b;
  if (!b.can_match) return a;
  std::vector<Node> parts;
  for (const Node* part : {&a, &b}) {
    if (part->kind == NodeKind::kAlternation) {
      parts.insert(parts.end(), part->children.begin(), part->children.end());
    } else {
      parts.push_back(*part);
    }
  }
  return MakeSequenceOrAlternation(NodeKind::kAlternation, std::move(parts), a.offset);
}

// Whether the empty string matches (an anchor counts as empty).
bool MatchesEmpty(const Node& node) {
  if (!node.can_match) return false;
  switch (node.kind) {
    case NodeKind::kCharSet: return false;
    case NodeKind::kStartAnchor:
    case NodeKind::kEndAnchor: return true;
    case NodeKind::kRepeat: return node.min == 0 || MatchesEmpty(node.children[0]);
    case NodeKind::kSequence:
      return std::all_of(node.children.begin(), node.children.end(), MatchesEmpty);
    case NodeKind::kAlternation:
      return std::any_of(node.children.begin(), node.children.end(), MatchesEmpty);
  }
  return false;
}

bool HasStartAnchor(const Node& node) {
  return node.kind == NodeKind::kStartAnchor ||
         std::any_of(node.children.begin(), node.children.end(), HasStartAnchor);
}

struct EndSplit {
  Node free;
  Node ended;
};

// Precondition: no `^` inside `node`.
EndSplit SplitAtEnd(const Node& node) {
  const size_t at = node.offset;
  if (!node.has_anchor || !node.can_match) return {node, Never(at)};
  switch (node.kind) {
    case NodeKind::kEndAnchor: return {Never(at), Epsilon(at)};
    case NodeKind::kSequence: {
      EndSplit split{Epsilon(at), Never(at)};
      for (const Node& child : node.children) {
        EndSplit part = SplitAtEnd(child);
        Node ended = Union(Concat(split.ended, MatchesEmpty(child) ? Epsilon(at) : Never(at)),
                           Concat(split.free, part.ended));
        split = {Concat(split.free, part.free), std::move(ended)};
      }
      return split;
    }
    case NodeKind::kAlternation: {
      EndSplit split{Never(at), Never(at)};
      for (const Node& child : node.children) {
        EndSplit part = SplitAtEnd(child);
        split = {Union(split.free, part.free), Union(split.ended, part.ended)};
      }
      return split;
    }
    case NodeKind::kRepeat: {
      // An ended iteration after j free ones; the iterations after it must match empty,
      // or there are none and j + 1 iterations already reach the minimum.
      EndSplit part = SplitAtEnd(node.children[0]);
      if (node.max == 0 || !part.ended.can_match) return {MakeRepeat(part.free, node.min, node.max, at), Never(at)};
      const uint32_t fewest = MatchesEmpty(node.children[0]) || node.min == 0 ? 0 : node.min - 1;
      const uint32_t most = node.max == kUnbounded ? kUnbounded : node.max - 1;
      Node before = most == 0 ? Epsilon(at) : MakeRepeat(part.free, fewest, most, at);
      return {MakeRepeat(part.free, node.min, node.max, at), Concat(before, part.ended)};
    }
    default: return {node, Never(at)};
  }
}

// The pattern as free | ended$ when it holds a `$` and no `^` past its leading ones
// (nullopt otherwise: the pattern is refused as it is).
std::optional<Node> EndAnchorsMovedToTheEnd(const Node& root) {
  std::vector<Node> items = root.kind == NodeKind::kSequence ? root.children : std::vector<Node>{root};
  size_t leading = 0;
  while (leading < items.size() && items[leading].kind == NodeKind::kStartAnchor) ++leading;
  Node rest = MakeSequenceOrAlternation(NodeKind::kSequence, {items.begin() + leading, items.end()}, root.offset);
  if (HasStartAnchor(rest) || !rest.has_anchor) return std::nullopt;
  EndSplit split = SplitAtEnd(rest);
  Node ended = Concat(split.ended, MakeAnchor(NodeKind::kEndAnchor, root.offset));
  Node body = Union(split.free, ended);
  if (!body.can_match) return std::nullopt;
  std::vector<Node> anchors(items.begin(), items.begin() + leading);
  return Concat(MakeSequenceOrAlternation(NodeKind::kSequence, std::move(anchors), root.offset), body);
}

// ---------------------------------------------------------------------------------------
// Parsing.

[[noreturn]] void FailAt(size_t offset, const std::string& what) {
  throw RegexError("regex: " + what + " at offset " + std::to_string(offset));
}

bool IsAsciiDigit(char32_t c) { return c >= '0' && c <= '9'; }
bool IsAsciiLetter(char32_t c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
int HexValue(char32_t c) {
  if (c >= '0' && c <= '9') return static_cast<int>(c - '0');
  if (c >= 'a' && c <= 'f') return static_cast<int>(c - 'a' + 10);
  if (c >= 'A' && c <= 'F') return static_cast<int>(c - 'A' + 10);
  return -1;
}

// Decodes strict UTF-8 (no overlongs, surrogates or values above U+10FFFF).
void DecodeUtf8(std::string_view text, std::vector<char32_t>* code_points,
                std::vector<size_t>* offsets) {
  size_t i = 0;
  while (i < text.size()) {
    const auto lead = static_cast<unsigned char>(text[i]);
    size_t length = lead < 0x80 ? 1 : (lead >> 5) == 0x6 ? 2 : (lead >> 4) == 0xE ? 3
                                    : (lead >> 3) == 0x1E ? 4 : 0;
    if (length == 0 || i + length > text.size()) FailAt(i, "invalid UTF-8 in pattern");
    char32_t c = length == 1 ? lead : lead & (0x7F >> length);
    for (size_t k = 1; k < length; ++k) {
      const auto byte = static_cast<unsigned char>(text[i + k]);
      if ((byte & 0xC0) != 0x80) FailAt(i, "invalid UTF-8 in pattern");
      c = (c << 6) | (byte & 0x3F);
    }
    static constexpr char32_t kSmallestOfLength[] = {0, 0, 0x80, 0x800, 0x10000};
    if (c < kSmallestOfLength[length] || c > kMaxCodePoint ||
        (c >= kFirstSurrogate && c <= kLastSurrogate)) {
      FailAt(i, "invalid UTF-8 in pattern");
    }
    code_points->push_back(c);
    offsets->push_back(i);
    i += length;
  }
  offsets->push_back(text.size());
}

struct Quantifier {
  uint32_t min = 0;
  uint32_t max = 0;
};

// What one escape sequence denotes: a single code point, or a class such as \d.
struct Escape {
  bool is_single = true;
  char32_t code_point = 0;
  CodePointSet chars;  // set when !is_single
};

class RegexParser {
 public:
  explicit RegexParser(std::string_view pattern) { DecodeUtf8(pattern, &text_, &offsets_); }

  Node Parse() {
    Node root = ParseAlternation(0);
    if (!AtEnd()) Fail("unbalanced ')'");  // only ')' stops an alternation early
    return root;
  }

 private:
  bool AtEnd() const { return pos_ >= text_.size(); }
  char32_t Peek(size_t ahead = 0) const {
    return pos_ + ahead < text_.size() ? text_[pos_ + ahead] : 0;
  }
  bool LookingAt(std::u32string_view s) const {
    return text_.size() - pos_ >= s.size() &&
           std::equal(s.begin(), s.end(), text_.begin() + static_cast<std::ptrdiff_t>(pos_));
  }
  size_t Offset() const { return offsets_[pos_]; }
  [[noreturn]] void Fail(const std::string& what) const { FailAt(Offset(), what); }

  Node ParseAlternation(int depth) {
    const size_t start = Offset();
    std::vector<Node> branches;
    branches.push_back(ParseSequence(depth));
    while (!AtEnd() && Peek() == '|') {
      ++pos_;
      branches.push_back(ParseSequence(depth));
    }
    return MakeSequenceOrAlternation(NodeKind::kAlternation, std::move(branches), start);
  }

  Node ParseSequence(int depth) {
    const size_t start = Offset();
    std::vector<Node> items;
    while (!AtEnd() && Peek() != '|' && Peek() != ')') items.push_back(ParseRepeat(depth));
    return MakeSequenceOrAlternation(NodeKind::kSequence, std::move(items), start);
  }

  Node ParseRepeat(int depth) {
    if (LooksAtQuantifier()) Fail("nothing to repeat");
    const size_t start = Offset();
    Node atom = ParseAtom(depth);
    if (!LooksAtQuantifier()) return atom;
    const size_t quantifier_offset = Offset();
    if (atom.kind == NodeKind::kStartAnchor || atom.kind == NodeKind::kEndAnchor) {
      Fail("nothing to repeat (an anchor cannot be quantified)");
    }
    const Quantifier q = ParseQuantifier();
    if (!AtEnd() && Peek() == '?') {
      ++pos_;  // lazy: changes which match is found, not which strings match
    } else if (!AtEnd() && Peek() == '+') {
      FailAt(quantifier_offset, "possessive quantifier is not supported");
    }
    if (LooksAtQuantifier()) Fail("multiple repeat");
    return MakeRepeat(std::move(atom), q.min, q.max, start);
  }

  // `{` starts a quantifier only in the forms {m} {m,} {m,n} (and the rejected {,n} {,});
  // otherwise it is a literal, as in both Python and ECMAScript.
  bool LooksAtQuantifier() const {
    if (AtEnd()) return false;
    const char32_t c = Peek();
    if (c == '*' || c == '+' || c == '?') return true;
    if (c != '{') return false;
    size_t i = pos_ + 1;
    const size_t first_digits = i;
    while (i < text_.size() && IsAsciiDigit(text_[i])) ++i;
    const bool has_min = i > first_digits;
    if (i < text_.size() && text_[i] == ',') {
      ++i;
      while (i < text_.size() && IsAsciiDigit(text_[i])) ++i;
      return i < text_.size() && text_[i] == '}';
    }
    return has_min && i < text_.size() && text_[i] == '}';
  }

  Quantifier ParseQuantifier() {
    const size_t start = Offset();
    const char32_t c = text_[pos_++];
    if (c == '*') return {0, kUnbounded};
    if (c == '+') return {1, kUnbounded};
    if (c == '?') return {0, 1};
    if (Peek() == ',') {
      FailAt(start, "'{,n}' is a repeat in Python but literal text in ECMAScript; write {0,n}");
    }
    Quantifier q;
    q.min = ParseBound(start);
    q.max = q.min;
    if (Peek() == ',') {
      ++pos_;
      q.max = Peek() == '}' ? kUnbounded : ParseBound(start);
    }
    ++pos_;  // '}'
    if (q.max != kUnbounded && q.min > q.max) {
      FailAt(start, "repeat {" + std::to_string(q.min) + "," + std::to_string(q.max) +
                        "} has min greater than max");
    }
    return q;
  }

  uint32_t ParseBound(size_t quantifier_offset) {
    uint32_t value = 0;
    while (IsAsciiDigit(Peek())) {
      value = value * 10 + static_cast<uint32_t>(text_[pos_++] - '0');
      if (value > kMaxRepeatBound) {
        throw ResourceLimitError("regex: repetition bound above " +
                                 std::to_string(kMaxRepeatBound) + " at offset " +
                                 std::to_string(quantifier_offset));
      }
    }
    return value;
  }

  Node ParseAtom(int depth) {
    const size_t start = Offset();
    const char32_t c = text_[pos_];
    switch (c) {
      case '(':
        return ParseGroup(depth);
      case '[':
        return ParseClass();
      case '.':
        ++pos_;
        return MakeCharSet(AnyExceptNewline(), start);
      case '^':
        ++pos_;
        return MakeAnchor(NodeKind::kStartAnchor, start);
      case '$':
        ++pos_;
        return MakeAnchor(NodeKind::kEndAnchor, start);
      case '\\': {
        const Escape e = ParseEscape(/*in_class=*/false);
        return MakeCharSet(e.is_single ? CodePointSet::Of(e.code_point) : e.chars, start);
      }
      default:
        ++pos_;
        return MakeCharSet(CodePointSet::Of(c), start);
    }
  }

  Node ParseGroup(int depth) {
    const size_t open = Offset();
    if (depth >= kMaxGroupDepth) {
      throw ResourceLimitError("regex: groups nested deeper than " +
                               std::to_string(kMaxGroupDepth) + " at offset " +
                               std::to_string(open));
    }
    ++pos_;  // '('
    if (Peek() == '?') ParseGroupPrefix(open);
    Node inner = ParseAlternation(depth + 1);
    if (AtEnd()) FailAt(open, "missing ')' for this '('");
    ++pos_;  // ')'
    return inner;
  }

  // After "(?": accepts "?:", "?P<name>", "?<name>" and names everything else.
  void ParseGroupPrefix(size_t open) {
    ++pos_;  // '?'
    const char32_t c = Peek();
    if (c == ':') {
      ++pos_;
      return;
    }
    if (LookingAt(U"P<") || (c == '<' && Peek(1) != '=' && Peek(1) != '!')) {
      pos_ += c == 'P' ? 2 : 1;
      ParseGroupName(open);
      return;
    }
    if (LookingAt(U"<=")) FailAt(open, "look-behind (?<=...) is not supported");
    if (LookingAt(U"<!")) FailAt(open, "negative look-behind (?<!...) is not supported");
    if (c == '=') FailAt(open, "look-ahead (?=...) is not supported");
    if (c == '!') FailAt(open, "negative look-ahead (?!...) is not supported");
    if (LookingAt(U"P=")) FailAt(open, "back-reference (?P=name) is not supported");
    if (c == '>') FailAt(open, "atomic group (?>...) is not supported");
    if (c == '#') FailAt(open, "comment group (?#...) is not supported");
    if (c == '(') FailAt(open, "conditional group (?(...)...) is not supported");
    if (std::u32string_view(U"aiLmsux-").find(c) != std::u32string_view::npos) {
      FailAt(open, "inline flags (?flags) are not supported");
    }
    FailAt(open, "unknown group construct '(?'");
  }

  void ParseGroupName(size_t open) {
    std::u32string name;
    while (!AtEnd() && Peek() != '>') {
      const char32_t c = text_[pos_++];
      const bool valid = c == '_' || IsAsciiLetter(c) || c >= 0x80 ||
                         (IsAsciiDigit(c) && !name.empty());
      if (!valid) FailAt(open, "bad group name");
      name.push_back(c);
    }
    if (AtEnd() || name.empty()) FailAt(open, "bad group name");
    ++pos_;  // '>'
    if (!group_names_.insert(name).second) FailAt(open, "duplicate group name");
  }

  Node ParseClass() {
    const size_t open = Offset();
    ++pos_;  // '['
    const bool negated = Peek() == '^';
    if (negated) ++pos_;
    if (Peek() == ']') {
      FailAt(open,
             "'[]' and '[^]' mean different things in Python and ECMAScript; escape the ']'");
    }
    std::vector<CodePointRange> ranges;
    while (true) {
      if (AtEnd()) FailAt(open, "unterminated character class");
      if (Peek() == ']') break;
      const size_t item_offset = Offset();
      const Escape low = ParseClassAtom();
      const bool is_range = Peek() == '-' && pos_ + 1 < text_.size() && Peek(1) != ']';
      if (!is_range) {
        AddToRanges(low, &ranges);
        continue;
      }
      ++pos_;  // '-'
      const Escape high = ParseClassAtom();
      if (!low.is_single || !high.is_single) {
        FailAt(item_offset, "a class escape like \\d cannot bound a range");
      }
      if (low.code_point > high.code_point) FailAt(item_offset, "bad character range");
      ranges.push_back({low.code_point, high.code_point});
    }
    ++pos_;  // ']'
    CodePointSet chars = CodePointSet::FromRanges(std::move(ranges));
    return MakeCharSet(negated ? chars.Complement() : chars, open);
  }

  static void AddToRanges(const Escape& e, std::vector<CodePointRange>* ranges) {
    if (e.is_single) {
      ranges->push_back({e.code_point, e.code_point});
    } else {
      ranges->insert(ranges->end(), e.chars.ranges().begin(), e.chars.ranges().end());
    }
  }

  Escape ParseClassAtom() {
    if (Peek() == '\\') return ParseEscape(/*in_class=*/true);
    Escape e;
    e.code_point = text_[pos_++];
    return e;
  }

  // At a backslash.
  Escape ParseEscape(bool in_class) {
    const size_t start = Offset();
    ++pos_;  // '\'
    if (AtEnd()) FailAt(start, "trailing backslash");
    const char32_t c = text_[pos_++];
    Escape e;
    auto single = [&e](char32_t code_point) {
      e.code_point = code_point;
      return e;
    };
    auto set = [&e](CodePointSet chars) {
      e.is_single = false;
      e.chars = std::move(chars);
      return e;
    };
    switch (c) {
      case 'n': return single('\n');
      case 'r': return single('\r');
      case 't': return single('\t');
      case 'f': return single('\f');
      case 'v': return single('\v');
      case 'd': return set(DigitSet());
      case 'D': return set(DigitSet().Complement());
      case 'w': return set(WordSet());
      case 'W': return set(WordSet().Complement());
      case 's': return set(SpaceSet());
      case 'S': return set(SpaceSet().Complement());
      case '0':
        if (IsAsciiDigit(Peek())) FailAt(start, "octal escape is not supported");
        return single(0);
      case 'x': return single(ParseHex(start, 2));
      case 'u': return single(ParseUnicodeEscape(start));
      case 'U': return single(ParseHex(start, 8));
      case 'b':
        if (in_class) return single('\b');
        FailAt(start, "word boundary \\b is not supported");
      case 'B': FailAt(start, "word boundary \\B is not supported");
      case 'A':
      case 'Z':
      case 'z':
      case 'G': FailAt(start, "anchor escape is not supported; use ^ and $");
      case 'k': FailAt(start, "back-reference \\k<name> is not supported");
      case 'p':
      case 'P': FailAt(start, "Unicode property escape \\p{...} is not supported");
      case 'c': FailAt(start, "control escape \\cX is not supported");
      default:
        break;
    }
    if (IsAsciiDigit(c)) {
      FailAt(start, in_class ? "octal escape is not supported"
                             : "back-reference \\" + std::string(1, static_cast<char>(c)) +
                                   " is not supported");
    }
    if (IsAsciiLetter(c)) {
      FailAt(start, "unknown escape \\" + std::string(1, static_cast<char>(c)));
    }
    return single(c);  // an escaped metacharacter or other punctuation stands for itself
  }

  // After "\u": \uHHHH (a UTF-16 surrogate pair written as two escapes is one character)
  // or \u{H...}.
  char32_t ParseUnicodeEscape(size_t start) {
    if (Peek() == '{') {
      ++pos_;
      char32_t value = 0;
      size_t digits = 0;
      while (!AtEnd() && HexValue(Peek()) >= 0) {
        value = value * 16 + static_cast<char32_t>(HexValue(text_[pos_++]));
        if (++digits > 6) FailAt(start, "bad \\u{...} escape");
      }
      if (digits == 0 || AtEnd() || Peek() != '}' || value > kMaxCodePoint) {
        FailAt(start, "bad \\u{...} escape");
      }
      ++pos_;
      return value;
    }
    const char32_t unit = ParseHex(start, 4);
    const bool high_surrogate = unit >= 0xD800 && unit <= 0xDBFF;
    if (high_surrogate && LookingAt(U"\\u")) {
      const size_t saved = pos_;
      pos_ += 2;
      bool four_hex = pos_ + 4 <= text_.size();
      for (size_t k = 0; four_hex && k < 4; ++k) four_hex = HexValue(text_[pos_ + k]) >= 0;
      if (four_hex) {
        const char32_t low = ParseHex(start, 4);
        if (low >= 0xDC00 && low <= 0xDFFF) {
          return 0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00);
        }
      }
      pos_ = saved;
    }
    return unit;  // a lone surrogate: kept, and later dropped from every set
  }

  char32_t ParseHex(size_t start, size_t digits) {
    char32_t value = 0;
    for (size_t k = 0; k < digits; ++k) {
      const int digit = AtEnd() ? -1 : HexValue(Peek());
      if (digit < 0) FailAt(start, "bad hexadecimal escape");
      value = value * 16 + static_cast<char32_t>(digit);
      ++pos_;
    }
    if (value > kMaxCodePoint) FailAt(start, "code point above U+10FFFF");
    return value;
  }

  std::vector<char32_t> text_;
  std::vector<size_t> offsets_;  // offsets_[i]: byte offset of text_[i]; one extra at the end
  size_t pos_ = 0;               // index into text_
  std::set<std::u32string> group_names_;
};

// ---------------------------------------------------------------------------------------
// Rendering EBNF.

void AppendUtf8(char32_t c, std::string* out) {
  if (c < 0x80) {
    out->push_back(static_cast<char>(c));
  } else if (c < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (c >> 6)));
    out->push_back(static_cast<char>(0x80 | (c & 0x3F)));
  } else if (c < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (c >> 12)));
    out->push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (c & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (c >> 18)));
    out->push_back(static_cast<char>(0x80 | ((c >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (c & 0x3F)));
  }
}

std::string HexEscape(char prefix, char32_t c, int digits) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out = {'\\', prefix};
  for (int shift = 4 * (digits - 1); shift >= 0; shift -= 4) out.push_back(kHex[(c >> shift) & 0xF]);
  return out;
}

// Non-ASCII controls, spaces and format characters: written as \uHHHH so that the grammar
// text stays readable.
bool IsInvisible(char32_t c) {
  return (c >= 0x80 && c <= 0xA0) || c == 0xAD || c == 0x1680 || (c >= 0x2000 && c <= 0x200F) ||
         (c >= 0x2028 && c <= 0x202F) || (c >= 0x205F && c <= 0x206F) || c == 0x3000 ||
         c == 0xFEFF;
}

// One code point inside an EBNF literal ("...") or class ([...]).
void AppendEbnfChar(char32_t c, bool in_class, std::string* out) {
  switch (c) {
    case '\n': *out += "\\n"; return;
    case '\r': *out += "\\r"; return;
    case '\t': *out += "\\t"; return;
    case '\\': *out += "\\\\"; return;
    case '"': *out += in_class ? "\"" : "\\\""; return;
    case ']':
    case '[':
    case '-':
    case '^':
      if (in_class) out->push_back('\\');
      out->push_back(static_cast<char>(c));
      return;
    default:
      break;
  }
  if (c < 0x20 || c == 0x7F) {
    *out += HexEscape('x', c, 2);
  } else if (IsInvisible(c)) {
    *out += HexEscape('u', c, 4);
  } else {
    AppendUtf8(c, out);
  }
}

// A class for a set of at least two characters: `.`, `[...]` or `[^...]`, whichever lists
// fewer ranges.
std::string ClassSyntax(const CodePointSet& chars) {
  const CodePointSet complement = chars.Complement();
  if (complement.empty()) return ".";
  const bool negate = complement.ranges().size() < chars.ranges().size();
  std::string out = negate ? "[^" : "[";
  for (const CodePointRange& r : (negate ? complement : chars).ranges()) {
    AppendEbnfChar(r.first, true, &out);
    if (r.last == r.first) continue;
    if (r.last > r.first + 1) out.push_back('-');
    AppendEbnfChar(r.last, true, &out);
  }
  out.push_back(']');
  return out;
}

// A sequence of regular-expression terms under construction: one tree with two views, the
// EBNF it prints (Render) and the grammar nodes a parse of that text gives (Build), so the
// printed text of a pattern is always the grammar the compiler uses (issue 39: no EBNF text
// round trip). Adjacent literal text is merged into one literal; literal pieces hold the
// text to match, escaped only when rendered. Nested terms are shared, not copied, when a
// sequence is appended to another.
class TermSequence {
 public:
  enum class PieceKind {
    kLiteral,      // `text`, to match as is
    kClass,        // one character of `chars` (at least two of them), printed `.` or [...]
    kAlternation,  // one of `branches` (at least two), printed in parentheses
    kRepeat        // `branches[0]` repeated min..max times; must be wrapped before another postfix
  };

  void AppendText(std::string_view text) {
    if (pieces_.empty() || pieces_.back().kind != PieceKind::kLiteral) {
      pieces_.push_back(Piece(PieceKind::kLiteral));
    }
    pieces_.back().text += text;
  }
  void AppendClass(CodePointSet chars) {
    Piece piece(PieceKind::kClass);
    piece.chars = std::move(chars);
    pieces_.push_back(std::move(piece));
  }
  // At least two branches.
  void AppendAlternation(std::vector<TermSequence> branches) {
    Piece piece(PieceKind::kAlternation);
    piece.branches = std::make_shared<const std::vector<TermSequence>>(std::move(branches));
    pieces_.push_back(std::move(piece));
  }
  // `body` is not empty and {min,max} is neither {1,1} nor an upper bound of 0.
  void AppendRepeat(TermSequence body, uint32_t min, uint32_t max) {
    Piece piece(PieceKind::kRepeat);
    piece.branches = std::make_shared<const std::vector<TermSequence>>(1, std::move(body));
    piece.min = min;
    piece.max = max;
    pieces_.push_back(std::move(piece));
  }
  void Append(const TermSequence& other) {
    for (const Piece& piece : other.pieces_) {
      if (piece.kind == PieceKind::kLiteral) {
        AppendText(piece.text);
      } else {
        pieces_.push_back(piece);
      }
    }
  }

  bool empty() const { return pieces_.empty(); }
  // True when the rendering is one term that a postfix operator may follow directly.
  bool TakesPostfix() const { return pieces_.size() == 1 && pieces_[0].kind != PieceKind::kRepeat; }

  std::string Render() const {
    if (pieces_.empty()) return "\"\"";
    std::string out;
    for (const Piece& piece : pieces_) {
      if (!out.empty()) out.push_back(' ');
      RenderPiece(piece, &out);
    }
    return out;
  }

  // The nodes ParseEbnf gives for Render()'s text, in the same order (children first, left to
  // right): a sequence of two or more pieces is one kSequence, a parenthesised operand is the
  // node of what is inside, `""` is kEmpty (grammar/grammar_builder.h simplifies as the parser).
  ExprId Build(GrammarBuilder* builder) const {
    if (pieces_.size() == 1) return BuildPiece(pieces_[0], builder);
    std::vector<ExprId> parts;
    parts.reserve(pieces_.size());
    for (const Piece& piece : pieces_) parts.push_back(BuildPiece(piece, builder));
    return builder->Sequence(parts.data(), parts.size());
  }

 private:
  struct Piece {
    explicit Piece(PieceKind piece_kind) : kind(piece_kind) {}
    PieceKind kind;
    std::string text;    // kLiteral
    CodePointSet chars;  // kClass
    // kAlternation: the branches; kRepeat: the body alone. Immutable once built.
    std::shared_ptr<const std::vector<TermSequence>> branches;
    uint32_t min = 0;  // kRepeat
    uint32_t max = 0;  // kRepeat; kUnbounded when there is no upper bound
  };

  static void RenderPiece(const Piece& piece, std::string* out) {
    switch (piece.kind) {
      case PieceKind::kLiteral: {
        out->push_back('"');
        std::vector<char32_t> code_points;
        std::vector<size_t> offsets;
        DecodeUtf8(piece.text, &code_points, &offsets);  // our own UTF-8: always valid
        for (char32_t c : code_points) AppendEbnfChar(c, false, out);
        out->push_back('"');
        return;
      }
      case PieceKind::kClass:
        *out += ClassSyntax(piece.chars);
        return;
      case PieceKind::kAlternation:
        out->push_back('(');
        for (size_t i = 0; i < piece.branches->size(); ++i) {
          if (i > 0) *out += " | ";
          *out += (*piece.branches)[i].Render();
        }
        out->push_back(')');
        return;
      case PieceKind::kRepeat: {
        const TermSequence& body = piece.branches->front();
        if (body.TakesPostfix()) {
          *out += body.Render();
        } else {
          *out += "(" + body.Render() + ")";
        }
        *out += PostfixSyntax(piece.min, piece.max);
        return;
      }
    }
  }

  static std::string PostfixSyntax(uint32_t min, uint32_t max) {
    if (min == 0 && max == 1) return "?";
    if (min == 0 && max == kUnbounded) return "*";
    if (min == 1 && max == kUnbounded) return "+";
    if (min == max) return "{" + std::to_string(min) + "}";
    if (max == kUnbounded) return "{" + std::to_string(min) + ",}";
    return "{" + std::to_string(min) + "," + std::to_string(max) + "}";
  }

  static ExprId BuildPiece(const Piece& piece, GrammarBuilder* builder) {
    switch (piece.kind) {
      case PieceKind::kLiteral:
        return builder->Bytes(piece.text);
      case PieceKind::kClass: {
        std::vector<CodepointRange> ranges;
        ranges.reserve(piece.chars.ranges().size());
        for (const CodePointRange& r : piece.chars.ranges()) ranges.push_back({r.first, r.last});
        return builder->CharClass(NormalizeRanges(std::move(ranges), /*negate=*/false));
      }
      case PieceKind::kAlternation: {
        std::vector<ExprId> choices;
        choices.reserve(piece.branches->size());
        for (const TermSequence& branch : *piece.branches) choices.push_back(branch.Build(builder));
        return builder->Choice(choices.data(), choices.size());
      }
      case PieceKind::kRepeat: {
        const ExprId body = piece.branches->front().Build(builder);
        const int32_t max = piece.max == kUnbounded ? -1 : static_cast<int32_t>(piece.max);
        return builder->Repeat(body, static_cast<int32_t>(piece.min), max);
      }
    }
    return -1;
  }

  std::vector<Piece> pieces_;
};

std::string Utf8Of(char32_t c) {
  std::string out;
  AppendUtf8(c, &out);
  return out;
}

// Where a node sits, for anchors and search padding.
struct Placement {
  bool at_start = false;   // a leading ^ is allowed here (nothing can precede it)
  bool at_end = false;     // a trailing $ is allowed here
  bool pad_start = false;  // search mode, not yet anchored: any text may precede
  bool pad_end = false;    // search mode, not yet anchored: any text may follow
};

// The regex tree as terms (TermSequence), which print as EBNF or build grammar nodes.
class TermEmitter {
 public:
  explicit TermEmitter(const RegexOptions& options) : options_(options) {}

  TermSequence EmitPattern(const Node& root) {
    TermSequence out;
    Emit(root, Placement{true, true, options_.search, options_.search}, &out);
    return out;
  }

 private:

  // Precondition: node.can_match.
  void Emit(const Node& node, Placement where, TermSequence* out) {
    if (!node.has_anchor && (where.pad_start || where.pad_end)) {
      TermSequence body;
      Emit(node, Placement{}, &body);
      if (where.pad_start || body.empty()) EmitAnyText(out);
      out->Append(body);
      if (where.pad_end && !body.empty()) EmitAnyText(out);
      return;
    }
    switch (node.kind) {
      case NodeKind::kCharSet:
        EmitCharSet(node.chars, out);
        return;
      case NodeKind::kSequence:
        EmitSequence(node.children.data(), node.children.data() + node.children.size(), where,
                     out);
        return;
      case NodeKind::kStartAnchor:
      case NodeKind::kEndAnchor:
        EmitSequence(&node, &node + 1, where, out);
        return;
      case NodeKind::kAlternation: {
        std::vector<TermSequence> branches;
        for (const Node& child : node.children) {
          if (!child.can_match) continue;
          branches.emplace_back();
          Emit(child, where, &branches.back());
        }
        AppendAlternation(std::move(branches), out);
        return;
      }
      case NodeKind::kRepeat: {
        const Node& operand = node.children[0];
        if (node.max == 0 || !operand.can_match) return;  // only the empty string
        TermSequence body;
        Emit(operand, Placement{}, &body);
        AppendRepeat(std::move(body), node.min, node.max, out);
        return;
      }
    }
  }

  // Leading ^ and trailing $ items are consumed here when the placement allows them; an
  // anchor anywhere else reaches this function again with a placement that does not.
  void EmitSequence(const Node* first, const Node* last, Placement where, TermSequence* out) {
    bool anchored_start = false;
    bool anchored_end = false;
    for (; first != last && first->kind == NodeKind::kStartAnchor; ++first) {
      if (!where.at_start) {
        FailAt(first->offset, "'^' is only supported at the start of the pattern or of a "
                              "top-level alternative");
      }
      anchored_start = true;
    }
    for (; last != first && (last - 1)->kind == NodeKind::kEndAnchor; --last) {
      if (!where.at_end) {
        FailAt((last - 1)->offset, "'$' is only supported at the end of the pattern or of a "
                                   "top-level alternative");
      }
      anchored_end = true;
    }
    const bool pad_start = where.pad_start && !anchored_start;
    const bool pad_end = where.pad_end && !anchored_end;
    if (first == last) {
      if (pad_start || pad_end) EmitAnyText(out);
      return;
    }
    for (const Node* item = first; item != last; ++item) {
      const bool is_first = item == first;
      const bool is_last = item + 1 == last;
      Emit(*item,
           Placement{is_first && where.at_start, is_last && where.at_end, is_first && pad_start,
                     is_last && pad_end},
           out);
    }
  }

  void AppendAlternation(std::vector<TermSequence> branches, TermSequence* out) {
    if (branches.size() == 1) {
      out->Append(branches[0]);
    } else {
      out->AppendAlternation(std::move(branches));
    }
  }

  void AppendRepeat(TermSequence body, uint32_t min, uint32_t max, TermSequence* out) {
    if (body.empty()) return;  // the empty string repeated
    if (min == 1 && max == 1) {
      out->Append(body);
      return;
    }
    out->AppendRepeat(std::move(body), min, max);
  }

  // Any text at all: the search-mode prefix / suffix.
  void EmitAnyText(TermSequence* out) {
    TermSequence one_char;
    EmitCharSet(CodePointSet::All(), &one_char);
    AppendRepeat(std::move(one_char), 0, kUnbounded, out);
  }

  // Precondition: !chars.empty().
  void EmitCharSet(const CodePointSet& chars, TermSequence* out) {
    if (options_.json_string_body) {
      EmitJsonEncodedCharSet(chars, out);
    } else {
      AppendCharOrClass(chars, out);
    }
  }

  // The JSON string-body encodings of the characters in `chars`: characters that JSON must
  // escape appear only escaped (\" \\ \b \f \n \r \t, else \u00XX in either hex case);
  // every other character appears only raw.
  void EmitJsonEncodedCharSet(const CodePointSet& chars, TermSequence* out) {
    static const CodePointSet kMustEscape =
        CodePointSet::FromRanges({{0, 0x1F}, {'"', '"'}, {'\\', '\\'}});
    static constexpr std::pair<char32_t, char> kShortEscapes[] = {
        {'"', '"'}, {'\\', '\\'}, {'\b', 'b'}, {'\f', 'f'}, {'\n', 'n'}, {'\r', 'r'}, {'\t', 't'}};

    std::vector<TermSequence> branches;
    const CodePointSet raw = chars.Minus(kMustEscape);
    if (!raw.empty()) {
      branches.emplace_back();
      AppendCharOrClass(raw, &branches.back());
    }

    std::vector<CodePointRange> short_letters;
    for (const auto& [c, letter] : kShortEscapes) {
      if (chars.Contains(c)) short_letters.push_back({static_cast<char32_t>(letter), static_cast<char32_t>(letter)});
    }
    if (!short_letters.empty()) {
      branches.emplace_back();
      branches.back().AppendText("\\");
      AppendCharOrClass(CodePointSet::FromRanges(std::move(short_letters)), &branches.back());
    }

    for (char32_t high_nibble = 0; high_nibble < 2; ++high_nibble) {
      std::vector<CodePointRange> digits;
      for (char32_t low_nibble = 0; low_nibble < 16; ++low_nibble) {
        const char32_t c = high_nibble * 16 + low_nibble;
        const bool has_short_escape = c == '\b' || c == '\f' || c == '\n' || c == '\r' || c == '\t';
        if (has_short_escape || !chars.Contains(c)) continue;
        const char32_t digit = low_nibble < 10 ? '0' + low_nibble : 'a' + low_nibble - 10;
        digits.push_back({digit, digit});
        if (low_nibble >= 10) digits.push_back({digit - 'a' + 'A', digit - 'a' + 'A'});
      }
      if (digits.empty()) continue;
      branches.emplace_back();
      branches.back().AppendText("\\u00" + std::string(1, static_cast<char>('0' + high_nibble)));
      AppendCharOrClass(CodePointSet::FromRanges(std::move(digits)), &branches.back());
    }
    AppendAlternation(std::move(branches), out);
  }

  static void AppendCharOrClass(const CodePointSet& chars, TermSequence* out) {
    if (chars.IsSingle()) {
      out->AppendText(Utf8Of(chars.ranges()[0].first));
    } else {
      out->AppendClass(chars);
    }
  }

  const RegexOptions options_;
};

// The terms of `pattern`, after the checks every entry shares.
TermSequence PatternTerms(std::string_view pattern, const RegexOptions& options) {
  const Node root = RegexParser(pattern).Parse();
  if (!root.can_match) {
    throw RegexError("regex: the pattern matches no string (e.g. an empty class) at offset 0");
  }
  try {
    return TermEmitter(options).EmitPattern(root);
  } catch (const RegexError& misplaced) {
    // A `$` before the end: read again with the end anchors moved out (SplitAtEnd); patterns
    // that read as they are keep their terms unchanged. Otherwise the first error stands.
    std::optional<Node> moved = EndAnchorsMovedToTheEnd(root);
    if (!moved) throw;
    try {
      return TermEmitter(options).EmitPattern(*moved);
    } catch (const RegexError&) {
      throw misplaced;
    }
  }
}

}  // namespace

std::string RegexToEbnf(std::string_view pattern, const RegexOptions& options) {
  return PatternTerms(pattern, options).Render();
}

ExprId RegexToGrammar(std::string_view pattern, const RegexOptions& options, GrammarBuilder* builder,
                      std::string* ebnf) {
  const TermSequence terms = PatternTerms(pattern, options);
  if (ebnf != nullptr) *ebnf = terms.Render();
  return terms.Build(builder);
}

}  // namespace xg2
