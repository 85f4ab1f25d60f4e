// Rule-level grammar syntax tree: what every frontend produces (EBNF and Lark by parsing,
// regex, JSON Schema and structural tags through the typed builder, grammar/grammar_builder.h)
// and what the FSM builder (grammar/fsm_builder.h) lowers into one finite-state machine per rule.
//
// Layout: all expression nodes of a grammar live in one arena (GrammarAst::nodes) and
// refer to each other by index, so a grammar is a few flat vectors that copy and hash
// cheaply. The invariants written on the fields below hold for every node a rule reaches;
// CheckGrammarAstInvariants (grammar/fsm_invariants.h) checks them where the FSM builder
// starts, in debug and sanitizer builds.
#ifndef XG2_GRAMMAR_GRAMMAR_AST_H_
#define XG2_GRAMMAR_GRAMMAR_AST_H_

#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <iterator>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "grammar/expr_payloads.h"

namespace xg2 {

struct AutomatonLiteral;  // grammar/automaton_literal.h

using ExprId = int32_t;
using RuleId = int32_t;

enum class ExprKind : uint8_t {
  kEmpty,      // matches the empty string
  kBytes,      // a literal byte string (UTF-8 for text literals); never empty
  kCharClass,  // one code point from `ranges`, emitted as its UTF-8 encoding
  kRuleRef,    // the rule `rule_id`
  kSequence,   // children in order
  kChoice,     // any one child
  kRepeat,     // children[0] repeated min_repeat..max_repeat times (max_repeat < 0: unbounded)
  // GrammarAst::tag_dispatches[tag_dispatch] (grammar/tag_dispatch.h). In a rule body only
  // ever the whole body (RuleDef::body): the EBNF parser lifts a TagDispatch written inside an
  // expression into a rule of its own. A lookahead written as one is the user's error,
  // reported as a GrammarSyntaxError when the lookahead is lowered (grammar/nfa_builder.cc).
  kTagDispatch,
  // GrammarAst::automata[automaton] (grammar/automaton_literal.h): a finished, minimal DFA a
  // frontend built, copied into the rule FSM as it is. A leaf; the frontends make it only
  // ever the whole body of a rule, which the passes keep whole (never inlined, sunk or
  // merged into its callers' bodies), so the FSM builder copies it instead of lowering it.
  kAutomaton,
};

// The fields that the passes' walks over the node table read (kind, rule id, repetition
// bounds, children) come first, in the node's first 48 bytes; the payloads of leaves follow,
// in two words each (grammar/expr_payloads.h).
// The children of an expression node. Nearly every node has at most four (a repetition has
// one, most sequences and choices two or three), and those are stored in the node itself, so
// the passes that walk the node table read them without following a pointer; a longer list
// lives on the heap. 24 bytes, as a std::vector. Invariant: the ids are inline exactly when
// capacity_ == kInline.
class ExprChildren {
 public:
  using value_type = ExprId;
  using iterator = ExprId*;
  using const_iterator = const ExprId*;

  ExprChildren() = default;
  ExprChildren(std::initializer_list<ExprId> ids) { Append(ids.begin(), ids.size()); }
  ExprChildren(const std::vector<ExprId>& ids) { Append(ids.data(), ids.size()); }  // NOLINT(runtime/explicit)
  ExprChildren(const ExprId* ids, size_t count) { Append(ids, count); }
  ExprChildren(const ExprChildren& other) { Append(other.data(), other.size()); }
  ExprChildren(ExprChildren&& other) noexcept { Steal(&other); }
  ExprChildren& operator=(const ExprChildren& other) {
    if (this != &other) {
      clear();
      Append(other.data(), other.size());
    }
    return *this;
  }
  ExprChildren& operator=(ExprChildren&& other) noexcept {
    if (this != &other) {
      Release();
      Steal(&other);
    }
    return *this;
  }
  ~ExprChildren() { Release(); }

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  ExprId* data() { return OnHeap() ? heap_ : inline_; }
  const ExprId* data() const { return OnHeap() ? heap_ : inline_; }
  iterator begin() { return data(); }
  iterator end() { return data() + size_; }
  const_iterator begin() const { return data(); }
  const_iterator end() const { return data() + size_; }
  std::reverse_iterator<const_iterator> rbegin() const { return std::reverse_iterator<const_iterator>(end()); }
  std::reverse_iterator<const_iterator> rend() const { return std::reverse_iterator<const_iterator>(begin()); }
  ExprId& operator[](size_t i) { return data()[i]; }
  ExprId operator[](size_t i) const { return data()[i]; }
  ExprId front() const { return data()[0]; }
  ExprId back() const { return data()[size_ - 1]; }

  void clear() { size_ = 0; }
  void push_back(ExprId id) { Append(&id, 1); }
  // Removes the child at `position`; later children move up one place.
  iterator erase(const_iterator position) {
    ExprId* at = data() + (position - data());
    std::memmove(at, at + 1, (end() - at - 1) * sizeof(ExprId));
    --size_;
    return at;
  }

 private:
  static constexpr uint32_t kInline = 4;

  bool OnHeap() const { return capacity_ > kInline; }
  void Append(const ExprId* ids, size_t count) {
    if (size_ + count > capacity_) Grow(size_ + count);
    std::memcpy(data() + size_, ids, count * sizeof(ExprId));
    size_ += static_cast<uint32_t>(count);
  }
  void Grow(size_t needed) {
    size_t capacity = capacity_;
    while (capacity < needed) capacity *= 2;
    ExprId* grown = new ExprId[capacity];
    std::memcpy(grown, data(), size_ * sizeof(ExprId));
    Release();
    heap_ = grown;
    capacity_ = static_cast<uint32_t>(capacity);
  }
  void Release() {
    if (OnHeap()) delete[] heap_;
    capacity_ = kInline;
  }
  // Takes `other`'s ids (its heap block, or a copy of its inline ones) and leaves it empty.
  void Steal(ExprChildren* other) {
    size_ = other->size_;
    capacity_ = other->capacity_;
    if (other->OnHeap()) {
      heap_ = other->heap_;
    } else {
      std::memcpy(inline_, other->inline_, size_ * sizeof(ExprId));
    }
    other->size_ = 0;
    other->capacity_ = kInline;
  }

  uint32_t size_ = 0;
  uint32_t capacity_ = kInline;
  union {
    ExprId inline_[kInline];
    ExprId* heap_;
  };
};

struct ExprNode {
  ExprKind kind = ExprKind::kEmpty;
  RuleId rule_id = -1;                 // kRuleRef
  int32_t min_repeat = 0;              // kRepeat
  int32_t max_repeat = -1;             // kRepeat; -1 means unbounded
  int32_t tag_dispatch = -1;           // kTagDispatch: index into GrammarAst::tag_dispatches
  int32_t automaton = -1;              // kAutomaton: index into GrammarAst::automata
  ExprChildren children;               // kSequence, kChoice (>= 1), kRepeat (exactly 1)
  ExprBytes bytes;                     // kBytes
  ExprRanges ranges;                   // kCharClass: sorted, disjoint, non-adjacent, non-empty
};

// Parameters of a TagDispatch (XGrammar 2, section 3.1): free text in which the first
// occurrence of a tag hands over to that tag's rule. See grammar/tag_dispatch.h for the
// exact semantics and the lowering.
struct TagDispatchDef {
  struct Tag {
    std::string text;  // non-empty UTF-8
    RuleId rule = -1;  // the grammar that follows the tag
  };
  std::vector<Tag> tags;
  // Free text may end at any character boundary (the model's end-of-sequence ends it).
  bool stop_eos = true;
  // Strings that end the dispatch; the stop string itself is part of the output.
  std::vector<std::string> stop_strings;
  // After a tag's rule completes: back to free text (true) or the dispatch ends (false).
  bool loop_after_dispatch = true;
  // Strings that may never occur in the free text.
  std::vector<std::string> excludes;
};

// A set of whole tokens, the terminal of TokenSet(ids) (excluded = false: exactly the listed
// ids) and ExcludeToken(ids) (excluded = true: every id of the vocabulary but the listed ones).
// Either way a plain stop token is never a member: the matcher handles stop tokens first.
// In rule bodies the set is a kBytes node spelling its marker (grammar/token_literal.h).
// Invariant: ids sorted and unique.
struct TokenSetDef {
  std::vector<int32_t> ids;
  bool excluded = false;
  bool operator==(const TokenSetDef& o) const { return excluded == o.excluded && ids == o.ids; }
  bool Contains(int32_t id) const;
};

struct RuleDef {
  std::string name;
  ExprId body = -1;
  // Optional rule-level lookahead assertion `(= ...)`: the rule may complete only where the
  // text that follows starts with a string of this expression. -1 when absent.
  ExprId lookahead = -1;
  // Token budget `name[max_tokens=N] ::= ...` (grammar/grammar_fsm.h, "Token budgets"): at most
  // N tokens may begin inside one match of the rule. -1 when absent.
  int32_t max_tokens = -1;
  // JSON character count `name[json_chars=M..N] ::= ...` (grammar/grammar_fsm.h, "JSON
  // character counts"): the rule matches the strings of its body that are M..N JSON string
  // characters long. min_json_chars is -1 when absent; max_json_chars -1 is unbounded.
  int32_t min_json_chars = -1;
  int32_t max_json_chars = -1;
  bool counts_json_chars() const { return min_json_chars >= 0; }
  // Unique items (grammar/grammar_fsm.h, "Unique items"): `name[unique_item] ::= ...` is an
  // item whose value (as JSON) must differ from the values of the earlier completions of
  // unique_item rules called by the same item of the caller, `name[unique_items] ::= ...`.
  bool unique_item = false;
  bool unique_items = false;
  // A rule the passes must keep whole (never inlined, merged or sunk): the parser applies
  // its lookahead, budget, count or item values to the rule's own items. (A rule whose body
  // is a TagDispatch or an automaton literal is kept whole too: KeptWhole below.)
  bool keeps_own_items() const {
    return lookahead >= 0 || max_tokens >= 0 || counts_json_chars() || unique_item || unique_items;
  }
};

struct GrammarAst {
  std::vector<ExprNode> nodes;
  std::vector<RuleDef> rules;
  std::vector<TagDispatchDef> tag_dispatches;
  std::vector<TokenSetDef> token_sets;  // indexed by the markers in the rule bodies
  // Automaton literals, shared (immutable) with the grammars copied from this one.
  std::vector<std::shared_ptr<const AutomatonLiteral>> automata;
  RuleId root_rule = -1;

  // The index of `set` in token_sets (added when new).
  int32_t AddTokenSet(TokenSetDef set);

  ExprId AddNode(ExprNode node) {
    nodes.push_back(std::move(node));
    return static_cast<ExprId>(nodes.size() - 1);
  }
  const ExprNode& node(ExprId id) const { return nodes[id]; }
  ExprNode& node(ExprId id) { return nodes[id]; }
};

// Whether the passes keep rule `r` whole: it keeps its own items (RuleDef), or its body is
// a TagDispatch or an automaton literal, which only ever stand as a whole rule body.
inline bool KeptWhole(const GrammarAst& ast, RuleId r) {
  const ExprKind body = ast.node(ast.rules[r].body).kind;
  return ast.rules[r].keeps_own_items() || body == ExprKind::kTagDispatch || body == ExprKind::kAutomaton;
}

// Code points that have a UTF-8 encoding (everything but the surrogate block).
constexpr uint32_t kMaxCodepoint = 0x10FFFF;

// Normalises a list of ranges (sort, merge overlapping and adjacent) and, when `negate`,
// complements it within [0, kMaxCodepoint] minus surrogates.
std::vector<CodepointRange> NormalizeRanges(std::vector<CodepointRange> ranges, bool negate);

// Approximate heap and inline bytes held by `ast` (its node and rule tables and what they own),
// for memory accounting.
size_t GrammarAstMemoryBytes(const GrammarAst& ast);

// Prints the grammar back as EBNF text that ParseEbnf accepts and that denotes the same
// language (used by tests and for debugging).
std::string PrintEbnf(const GrammarAst& ast);

}  // namespace xg2

#endif  // XG2_GRAMMAR_GRAMMAR_AST_H_
