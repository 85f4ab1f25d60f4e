// NormalizeRanges and PrintEbnf (see grammar_ast.h).
#include "grammar/grammar_ast.h"

#include <algorithm>
#include <cstdio>

#include "grammar/automaton_literal.h"
#include "grammar/token_literal.h"
#include "support/error.h"

// Marks leaf printing helpers that must not be inlined into the recursive printer: their
// string temporaries would otherwise enlarge every frame of the recursion.
#define XG2_PRINT_NOINLINE __attribute__((noinline))

namespace xg2 {
namespace {

constexpr uint32_t kSurrogateFirst = 0xD800;
constexpr uint32_t kSurrogateLast = 0xDFFF;

// Drops what has no UTF-8 encoding: code points above kMaxCodepoint and the surrogate
// block. Ranges with first > last are malformed and dropped as well.
std::vector<CodepointRange> KeepEncodable(const std::vector<CodepointRange>& ranges) {
  std::vector<CodepointRange> kept;
  kept.reserve(ranges.size() + 1);
  for (CodepointRange r : ranges) {
    if (r.first > r.last || r.first > kMaxCodepoint) continue;
    r.last = std::min(r.last, kMaxCodepoint);
    if (r.last < kSurrogateFirst || r.first > kSurrogateLast) {
      kept.push_back(r);
      continue;
    }
    if (r.first < kSurrogateFirst) kept.push_back({r.first, kSurrogateFirst - 1});
    if (r.last > kSurrogateLast) kept.push_back({kSurrogateLast + 1, r.last});
  }
  return kept;
}

// Sorts and merges overlapping or adjacent ranges. Input ranges are valid (first <= last
// <= kMaxCodepoint), so `last + 1` cannot overflow.
std::vector<CodepointRange> SortAndMerge(std::vector<CodepointRange> ranges) {
  std::sort(ranges.begin(), ranges.end(), [](const CodepointRange& a, const CodepointRange& b) {
    return a.first != b.first ? a.first < b.first : a.last < b.last;
  });
  std::vector<CodepointRange> merged;
  for (const CodepointRange& r : ranges) {
    if (!merged.empty() && r.first <= merged.back().last + 1) {
      merged.back().last = std::max(merged.back().last, r.last);
    } else {
      merged.push_back(r);
    }
  }
  return merged;
}

// Complement within [0, kMaxCodepoint] of sorted, disjoint ranges.
std::vector<CodepointRange> Complement(const std::vector<CodepointRange>& ranges) {
  std::vector<CodepointRange> result;
  uint32_t next = 0;  // smallest code point not yet covered or emitted
  for (const CodepointRange& r : ranges) {
    if (r.first > next) result.push_back({next, r.first - 1});
    next = r.last + 1;
  }
  if (next <= kMaxCodepoint) result.push_back({next, kMaxCodepoint});
  return result;
}

}  // namespace

// Surrogates and code points above kMaxCodepoint are removed in both modes: a class
// matches UTF-8 encodings, and those have none. Ranges on either side of the surrogate
// block stay separate (they are not adjacent as code points).
bool TokenSetDef::Contains(int32_t id) const {
  return std::binary_search(ids.begin(), ids.end(), id) != excluded;
}

int32_t GrammarAst::AddTokenSet(TokenSetDef set) {
  std::sort(set.ids.begin(), set.ids.end());
  set.ids.erase(std::unique(set.ids.begin(), set.ids.end()), set.ids.end());
  for (size_t i = 0; i < token_sets.size(); ++i) {
    if (token_sets[i] == set) return static_cast<int32_t>(i);
  }
  token_sets.push_back(std::move(set));
  return static_cast<int32_t>(token_sets.size() - 1);
}

size_t GrammarAstMemoryBytes(const GrammarAst& ast) {
  size_t bytes = sizeof(ast) + ast.nodes.capacity() * sizeof(ExprNode) + ast.rules.capacity() * sizeof(RuleDef);
  for (const ExprNode& node : ast.nodes) {
    // Children beyond the inline ones, and payloads that are neither inline nor borrowed, are on the heap.
    if (node.children.size() > 4) bytes += node.children.size() * sizeof(ExprId);
    bytes += node.bytes.owned_heap_bytes() + node.ranges.owned_heap_bytes();
  }
  for (const RuleDef& rule : ast.rules) bytes += rule.name.size() > 15 ? rule.name.capacity() : 0;
  for (const TagDispatchDef& dispatch : ast.tag_dispatches) {
    bytes += sizeof(dispatch);
    for (const auto& tag : dispatch.tags) bytes += sizeof(tag) + tag.text.size();
    for (const std::string& s : dispatch.stop_strings) bytes += sizeof(s) + s.size();
    for (const std::string& s : dispatch.excludes) bytes += sizeof(s) + s.size();
  }
  for (const TokenSetDef& set : ast.token_sets) bytes += sizeof(set) + set.ids.capacity() * sizeof(int32_t);
  for (const auto& literal : ast.automata) {
    // Shared between grammars: charged to each that holds it (an upper bound).
    bytes += sizeof(*literal) + literal->accepting.capacity() + literal->edge_begin.capacity() * sizeof(int32_t) +
             literal->edges.capacity() * sizeof(AutomatonLiteral::CodepointEdge) +
             literal->byte_begin.capacity() * sizeof(int32_t) +
             literal->byte_edges.capacity() * sizeof(AutomatonLiteral::ByteEdge);
  }
  return bytes;
}

std::vector<CodepointRange> NormalizeRanges(std::vector<CodepointRange> ranges, bool negate) {
  std::vector<CodepointRange> normalized = SortAndMerge(KeepEncodable(ranges));
  if (!negate) return normalized;
  return SortAndMerge(KeepEncodable(Complement(normalized)));
}

namespace {

// Binding strength of an expression's printed form; a child printed where a stronger one
// is needed gets parentheses.
enum class Precedence { kChoice, kSequence, kPostfix, kAtom };

std::string Hex(uint32_t value, int digits) {
  char buffer[16];
  std::snprintf(buffer, sizeof(buffer), "%0*X", digits, static_cast<unsigned>(value));
  return buffer;
}

// Escape for a code point that is printed in escaped form (always ASCII output).
std::string EscapeCodepoint(uint32_t cp) {
  switch (cp) {
    case '\n': return "\\n";
    case '\r': return "\\r";
    case '\t': return "\\t";
    default: break;
  }
  if (cp < 0x80) return "\\x" + Hex(cp, 2);
  if (cp <= 0xFFFF) return "\\u" + Hex(cp, 4);
  return "\\U" + Hex(cp, 8);
}

// Prints one code point inside a literal (`in_class` false) or a character class.
std::string PrintCodepoint(uint32_t cp, bool in_class) {
  bool printable = cp >= 0x20 && cp < 0x7F;
  if (!printable) return EscapeCodepoint(cp);
  char c = static_cast<char>(cp);
  bool special = c == '\\' || (in_class ? (c == ']' || c == '[' || c == '^' || c == '-')
                                        : (c == '"'));
  return special ? std::string{'\\', c} : std::string{c};
}

// Decodes `bytes` as UTF-8; the dialect can only spell code points, so anything else is
// unprintable. Returns false on invalid UTF-8.
bool DecodeUtf8(const std::string& bytes, std::vector<uint32_t>* out) {
  size_t i = 0;
  while (i < bytes.size()) {
    unsigned char lead = static_cast<unsigned char>(bytes[i]);
    int length = lead < 0x80 ? 1 : lead >= 0xC2 && lead < 0xE0 ? 2
               : lead >= 0xE0 && lead < 0xF0 ? 3 : lead >= 0xF0 && lead < 0xF5 ? 4 : 0;
    if (length == 0 || i + length > bytes.size()) return false;
    uint32_t cp = length == 1 ? lead : lead & (0xFF >> (length + 1));
    for (int k = 1; k < length; ++k) {
      unsigned char cont = static_cast<unsigned char>(bytes[i + k]);
      if ((cont & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (cont & 0x3F);
    }
    static const uint32_t kMinForLength[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < kMinForLength[length] || cp > kMaxCodepoint ||
        (cp >= kSurrogateFirst && cp <= kSurrogateLast)) {
      return false;
    }
    out->push_back(cp);
    i += length;
  }
  return true;
}

bool IsValidRuleName(const std::string& name) {
  if (name.empty()) return false;
  auto is_start = [](char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_';
  };
  auto is_rest = [&](char c) {
    return is_start(c) || (c >= '0' && c <= '9') || c == '.' || c == '-';
  };
  return is_start(name[0]) && std::all_of(name.begin() + 1, name.end(), is_rest);
}

class EbnfPrinter {
 public:
  explicit EbnfPrinter(const GrammarAst& ast) : ast_(ast) {}

  std::string PrintGrammar() {
    for (const RuleDef& rule : ast_.rules) {
      if (!IsValidRuleName(rule.name)) Fail("rule name '" + rule.name + "' cannot be printed");
      out_ += rule.name;
      if (rule.max_tokens >= 0) out_ += "[max_tokens=" + std::to_string(rule.max_tokens) + "]";
      if (rule.counts_json_chars()) {
        out_ += "[json_chars=" + std::to_string(rule.min_json_chars) + "..";
        if (rule.max_json_chars >= 0) out_ += std::to_string(rule.max_json_chars);
        out_ += "]";
      }
      if (rule.unique_item) out_ += "[unique_item]";
      if (rule.unique_items) out_ += "[unique_items]";
      out_ += " ::= ";
      if (NodeAt(rule.body).kind == ExprKind::kAutomaton) {
        PrintAutomatonRuleBody(rule);
        continue;
      }
      Print(rule.body, Precedence::kChoice);
      if (rule.lookahead >= 0) {
        out_ += " (= ";
        Print(rule.lookahead, Precedence::kChoice);
        out_ += ")";
      }
      out_ += "\n";
    }
    return std::move(out_);
  }

 private:
  [[noreturn]] static void Fail(const std::string& what) {
    throw GrammarSyntaxError("PrintEbnf: " + what);
  }

  // Out of line so that the recursive printer's frames hold no message temporaries.
  [[noreturn]] XG2_PRINT_NOINLINE static void FailMalformed(const char* what) { Fail(what); }

  XG2_PRINT_NOINLINE const ExprNode& NodeAt(ExprId id) const {
    if (id < 0 || static_cast<size_t>(id) >= ast_.nodes.size()) {
      Fail("expression id " + std::to_string(id) + " out of range");
    }
    return ast_.node(id);
  }

  static Precedence PrecedenceOf(const ExprNode& node) {
    switch (node.kind) {
      case ExprKind::kBytes:
        // Text mixed with token literals prints as a sequence of pieces.
        return SplitTokenLiterals(node.bytes.str()).size() > 1 ? Precedence::kSequence : Precedence::kAtom;
      case ExprKind::kChoice: return Precedence::kChoice;
      case ExprKind::kSequence: return Precedence::kSequence;
      case ExprKind::kRepeat: return Precedence::kPostfix;
      default: return Precedence::kAtom;
    }
  }

  // Appends `id` so that it parses back as one unit in a context needing `needed`.
  void Print(ExprId id, Precedence needed) {
    const ExprNode& node = NodeAt(id);
    bool parenthesize = PrecedenceOf(node) < needed;
    if (parenthesize) out_ += "(";
    PrintUnparenthesized(node);
    if (parenthesize) out_ += ")";
  }

  void PrintUnparenthesized(const ExprNode& node) {
    switch (node.kind) {
      case ExprKind::kEmpty: out_ += "\"\""; return;
      case ExprKind::kBytes: PrintBytes(node.bytes.str()); return;
      case ExprKind::kTagDispatch: PrintTagDispatch(node.tag_dispatch); return;
      case ExprKind::kAutomaton: FailMalformed("an automaton literal prints only as a whole rule body");
      case ExprKind::kCharClass: PrintCharClass(node.ranges.to_vector()); return;
      case ExprKind::kRuleRef: PrintRuleRef(node.rule_id); return;
      case ExprKind::kSequence: PrintJoined(node.children, " ", Precedence::kPostfix); return;
      case ExprKind::kChoice:
        if (node.children.empty()) FailMalformed("a choice with no alternatives cannot be printed");
        PrintJoined(node.children, " | ", Precedence::kSequence);
        return;
      case ExprKind::kRepeat: PrintRepeat(node); return;
    }
    FailMalformed("unknown expression kind");
  }

  void PrintJoined(const ExprChildren& children, const char* separator,
                   Precedence needed) {
    if (children.empty()) {
      out_ += "\"\"";
      return;
    }
    for (size_t i = 0; i < children.size(); ++i) {
      if (i > 0) out_ += separator;
      Print(children[i], needed);
    }
  }

  // Pieces of `bytes`: runs of text and single token literal spellings, in order.
  static std::vector<std::string> SplitTokenLiterals(const std::string& bytes) {
    std::vector<std::string> pieces;
    size_t start = 0;
    for (size_t i = 0; i < bytes.size();) {
      if (DecodeTokenSetMarker(bytes, i) >= 0) {
        if (i > start) pieces.push_back(bytes.substr(start, i - start));
        pieces.push_back(bytes.substr(i, kTokenSetMarkerSize));
        i += kTokenSetMarkerSize;
        start = i;
        continue;
      }
      if (DecodeTokenLiteral(bytes, i) < 0) {
        ++i;
        continue;
      }
      if (i > start) pieces.push_back(bytes.substr(start, i - start));
      pieces.push_back(bytes.substr(i, kTokenLiteralSize));
      i += kTokenLiteralSize;
      start = i;
    }
    if (start < bytes.size() || pieces.empty()) pieces.push_back(bytes.substr(start));
    return pieces;
  }

  // A byte string: literals, with token literal spellings as Token(id).
  XG2_PRINT_NOINLINE void PrintBytes(const std::string& bytes) {
    std::vector<std::string> pieces = SplitTokenLiterals(bytes);
    for (size_t i = 0; i < pieces.size(); ++i) {
      if (i > 0) out_ += " ";
      int32_t set = DecodeTokenSetMarker(pieces[i], 0);
      int32_t id = DecodeTokenLiteral(pieces[i], 0);
      if (set >= 0 && pieces[i].size() == static_cast<size_t>(kTokenSetMarkerSize) &&
          set < static_cast<int32_t>(ast_.token_sets.size())) {
        const TokenSetDef& def = ast_.token_sets[set];
        out_ += def.excluded ? "ExcludeToken(" : "TokenSet(";
        for (size_t k = 0; k < def.ids.size(); ++k) out_ += (k ? ", " : "") + std::to_string(def.ids[k]);
        out_ += ")";
      } else if (id >= 0 && pieces[i].size() == static_cast<size_t>(kTokenLiteralSize)) {
        out_ += "Token(" + std::to_string(id) + ")";
      } else {
        PrintLiteral(pieces[i]);
      }
    }
  }

  XG2_PRINT_NOINLINE void PrintStringTuple(const std::vector<std::string>& strings) {
    out_ += "(";
    for (size_t i = 0; i < strings.size(); ++i) {
      if (i > 0) out_ += ", ";
      PrintBytes(strings[i]);
    }
    if (strings.size() == 1) out_ += ",";
    out_ += ")";
  }

  // The automaton's right-linear rules (automaton_literal.h), after "name ::= ".
  XG2_PRINT_NOINLINE void PrintAutomatonRuleBody(const RuleDef& rule) {
    const int32_t index = ast_.node(rule.body).automaton;
    if (index < 0 || static_cast<size_t>(index) >= ast_.automata.size()) {
      Fail("automaton index " + std::to_string(index) + " out of range");
    }
    if (rule.lookahead >= 0) Fail("rule '" + rule.name + "': an automaton literal body with a lookahead cannot be printed");
    out_ += PrintAutomatonRules(*ast_.automata[index], rule.name);
    out_ += "\n";
  }

  XG2_PRINT_NOINLINE void PrintTagDispatch(int32_t index) {
    if (index < 0 || static_cast<size_t>(index) >= ast_.tag_dispatches.size()) {
      Fail("TagDispatch index " + std::to_string(index) + " out of range");
    }
    const TagDispatchDef& def = ast_.tag_dispatches[index];
    out_ += "TagDispatch(";
    for (const TagDispatchDef::Tag& tag : def.tags) {
      out_ += "(";
      PrintBytes(tag.text);
      out_ += ", ";
      PrintRuleRef(tag.rule);
      out_ += "), ";
    }
    out_ += std::string("stop_eos=") + (def.stop_eos ? "true" : "false") + ", stop_str=";
    PrintStringTuple(def.stop_strings);
    out_ += std::string(", loop_after_dispatch=") + (def.loop_after_dispatch ? "true" : "false") +
            ", excludes=";
    PrintStringTuple(def.excludes);
    out_ += ")";
  }

  XG2_PRINT_NOINLINE void PrintLiteral(const std::string& bytes) {
    std::vector<uint32_t> codepoints;
    if (!DecodeUtf8(bytes, &codepoints)) Fail("a literal is not valid UTF-8");
    out_ += '"';
    for (uint32_t cp : codepoints) out_ += PrintCodepoint(cp, /*in_class=*/false);
    out_ += '"';
  }

  XG2_PRINT_NOINLINE void PrintRuleRef(RuleId rule_id) {
    if (rule_id < 0 || static_cast<size_t>(rule_id) >= ast_.rules.size()) {
      Fail("rule id " + std::to_string(rule_id) + " out of range");
    }
    out_ += ast_.rules[rule_id].name;
  }

  // Prints the shorter of the class and its negation; the full set prints as `.`.
  XG2_PRINT_NOINLINE void PrintCharClass(const std::vector<CodepointRange>& ranges) {
    std::vector<CodepointRange> normalized = NormalizeRanges(ranges, false);
    if (normalized.empty()) Fail("an empty character class cannot be printed");
    std::vector<CodepointRange> complement = NormalizeRanges(normalized, true);
    if (complement.empty()) {
      out_ += ".";
      return;
    }
    bool negate = complement.size() < normalized.size();
    out_ += negate ? "[^" : "[";
    for (const CodepointRange& r : negate ? complement : normalized) {
      out_ += PrintCodepoint(r.first, /*in_class=*/true);
      if (r.last != r.first) out_ += "-" + PrintCodepoint(r.last, /*in_class=*/true);
    }
    out_ += "]";
  }

  void PrintRepeat(const ExprNode& node) {
    if (node.children.size() != 1) FailMalformed("a repetition must have exactly one child");
    // A repeated repetition prints as stacked operators (`"a"?*`), which the parser reads
    // back the same way; parentheses here could exceed the parser's nesting limit.
    Print(node.children[0], Precedence::kPostfix);
    PrintRepeatSuffix(node.min_repeat, node.max_repeat);
  }

  XG2_PRINT_NOINLINE void PrintRepeatSuffix(int32_t lo, int32_t hi) {
    if (lo < 0 || (hi >= 0 && hi < lo)) Fail("invalid repetition bounds");
    if (lo == 0 && hi == 1) {
      out_ += "?";
    } else if (lo == 0 && hi < 0) {
      out_ += "*";
    } else if (lo == 1 && hi < 0) {
      out_ += "+";
    } else if (lo == hi) {
      out_ += "{" + std::to_string(lo) + "}";
    } else {
      out_ += "{" + std::to_string(lo) + "," + (hi < 0 ? "" : std::to_string(hi)) + "}";
    }
  }

  const GrammarAst& ast_;
  std::string out_;
};

}  // namespace

std::string PrintEbnf(const GrammarAst& ast) { return EbnfPrinter(ast).PrintGrammar(); }

}  // namespace xg2
