// Building blocks for frontends that build a grammar (issue 39: no EBNF text round trip):
// expression fragments that know the empty language, and a rule set that shares identical
// rule bodies, hands out unique, valid rule names and lowers itself to a GrammarAst
// (grammar/grammar_builder.h). A fragment is an immutable tree, hash-consed by structure so
// that equal bodies are found without printing them; EBNF text (docs/ebnf.md) is a printed
// view of it, for debugging APIs and the byte limit; nothing generated is parsed back.
//
// Fragment nodes live in an arena (FragmentArenaScope): a conversion opens one, every node it
// makes goes there, and all of them are freed together when the conversion is done. A
// fragment is a plain pointer into it: copying one costs nothing, and no node is freed on its
// own.
#ifndef XG2_FRONTENDS_JSON_SCHEMA_EBNF_BUILDER_H_
#define XG2_FRONTENDS_JSON_SCHEMA_EBNF_BUILDER_H_

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "grammar/grammar_ast.h"

namespace xg2 {

class Fragment;
struct FragmentNode;
class FragmentArena;

// Makes a fresh arena (or `arena`) the one this thread's new fragment nodes go to, until the
// scope ends (scopes nest). With no scope open, nodes go to the process arena, which is never
// freed: what is built once per process (the prebuilt string formats, constants such as
// string_formats.cc's kDigit) is made there, and nothing else may be.
class FragmentArenaScope {
 public:
  FragmentArenaScope();
  explicit FragmentArenaScope(std::shared_ptr<FragmentArena> arena);
  ~FragmentArenaScope();
  FragmentArenaScope(const FragmentArenaScope&) = delete;
  FragmentArenaScope& operator=(const FragmentArenaScope&) = delete;

 private:
  std::shared_ptr<FragmentArena> arena_;
  const std::shared_ptr<FragmentArena>* previous_;
};

// The arena that lives for the process (for FragmentArenaScope(ProcessFragmentArena()) around
// what a process-wide cache keeps).
std::shared_ptr<FragmentArena> ProcessFragmentArena();

// An operand of Seq and Alt, read in place: Seq({a, b}) would otherwise copy the text of each
// operand into a vector first. A temporary operand lives to the end of the full expression
// that contains the call, so Seq({a, Seq({b, c})}) is safe.
class FragmentRef {
 public:
  FragmentRef(const Fragment& fragment) : fragment_(&fragment) {}  // NOLINT(runtime/explicit)
  operator const Fragment&() const { return *fragment_; }            // NOLINT(runtime/explicit)

 private:
  const Fragment* fragment_;
};

// An expression, or `never` (the empty language, which EBNF cannot spell; combinators
// simplify it away: a sequence with a never part is never, an alternation drops it).
// Two fragments are equal exactly when their printed texts are (the tree is canonical: a
// sequence holds no sequence, adjacent literal operands merge as their text does, and a
// spelled atom's kind follows from its text).
class Fragment {
 public:
  // How loosely the printed text binds; an operand is parenthesised when it binds more
  // loosely than its context needs.
  enum class Binding { kAtom, kQuantified, kSequence, kAlternation };

  static Fragment Never();
  static Fragment Epsilon();
  // A literal matching exactly `bytes` (UTF-8).
  static Fragment Literal(std::string_view bytes);
  // A reference to the rule `name` of the rule set the fragment ends up in.
  static Fragment Rule(std::string name);
  // One code point of the class spelled `spelled` in EBNF ("[0-9]", "[^\"\\\\]").
  static Fragment CharClass(std::string spelled);
  // Text that is a single atom: a rule name (Rule) or a character class (CharClass); other
  // text throws InternalError.
  static Fragment Atom(std::string text);
  // An expression given twice: `ebnf`, its printed text (one atom, e.g. parenthesised), and
  // `grammar`, whose root rule's body is the nodes a parse of that text gives (naming no
  // rule). Lowered by grafting those nodes, never by parsing the text. What the regex
  // frontend builds for a pattern (regular_language.h, RegexFragment).
  static Fragment Built(std::string ebnf, std::shared_ptr<const GrammarAst> grammar);

  bool never() const { return node_ == nullptr; }
  bool epsilon() const;
  // The printed EBNF (valid unless never()); computed on each call.
  std::string text() const;
  // text().size(), without printing.
  size_t text_size() const;
  Binding binding() const;
  // The text, parenthesised unless it binds at least as tightly as `needed`.
  std::string TextAs(Binding needed) const;
  // Appends TextAs(needed) to `out`.
  void AppendTextAs(Binding needed, std::string* out) const;

  bool operator==(const Fragment& other) const;
  bool operator!=(const Fragment& other) const { return !(*this == other); }
  size_t hash() const;
  const FragmentNode* node() const { return node_; }

 private:
  template <typename Iterator>
  friend Fragment SeqOf(Iterator begin, Iterator end);
  template <typename Iterator>
  friend Fragment AltOf(Iterator begin, Iterator end);
  friend Fragment Repeat(const Fragment& body, int min, int max);
  friend class RuleSet;
  explicit Fragment(const FragmentNode* node) : node_(node) {}

  const FragmentNode* node_;  // null: never; in an arena that outlives every use of the fragment
};

struct FragmentHash {
  size_t operator()(const Fragment& fragment) const { return fragment.hash(); }
};

// The children of a FragmentNode, in order: a run of pointers that the node's arena holds
// (before a node is interned, its shape's run is its maker's buffer). A node's list is never
// changed, so it is a view: copying a node's children costs no allocation.
class FragmentChildren {
 public:
  FragmentChildren() = default;
  FragmentChildren(const FragmentNode* const* data, size_t size) : data_(data), size_(size) {}
  const FragmentNode* const* begin() const { return data_; }
  const FragmentNode* const* end() const { return data_ + size_; }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  const FragmentNode* operator[](size_t i) const { return data_[i]; }
  // The same children, by address.
  bool operator==(const FragmentChildren& other) const {
    if (size_ != other.size_) return false;
    for (size_t i = 0; i < size_; ++i) {
      if (data_[i] != other.data_[i]) return false;
    }
    return true;
  }

 private:
  const FragmentNode* const* data_ = nullptr;
  size_t size_ = 0;
};

// A node of a fragment's tree, made in an arena (FragmentArenaScope). Immutable once built
// (fragments are shared across threads: string_formats.h keeps prebuilt ones for the process).
// A conversion's arena hash-conses its nodes: a node is made only when the arena has none of
// the same kind, fields and children (by address), so within one conversion equal trees are
// almost always one node and Fragment::operator== ends at the address compare. Equality stays
// structural where that fails (a tree built over a process-arena node and an equal one over a
// conversion node; a hash collision).
struct FragmentNode {
  enum class Kind : uint8_t {
    kEmpty,        // ""
    kLiteral,      // `text` holds the bytes
    kRule,         // `text` holds the rule name
    kCharClass,    // `text` holds the class as spelled
    kExpression,   // `text` holds an EBNF expression, `built` its nodes (Fragment::Built)
    kSequence,     // children in order (>= 2, none a sequence)
    kAlternation,  // children (>= 2, none an alternation)
    kRepeat,       // children[0] repeated min..max times (max < 0: unbounded)
    kLookahead,    // a rule body children[0] with the lookahead children[1] (RuleSet only)
    // A rule body that is the automaton literal `automaton` (RuleSet::DefineAutomaton only);
    // `text` holds the rule's name, and the node prints as the literal's right-linear rules
    // under that name (grammar/automaton_literal.h), made when text is asked for.
    kAutomaton,
  };
  Kind kind = Kind::kEmpty;
  Fragment::Binding binding = Fragment::Binding::kAtom;
  int32_t min = 0;
  int32_t max = -1;
  std::string text;
  // kExpression: the nodes of `text` (its root rule's body).
  std::shared_ptr<const GrammarAst> built;
  std::shared_ptr<const AutomatonLiteral> automaton;  // kAutomaton
  FragmentChildren children;
  size_t printed_size = 0;  // bytes of the printed text
  // At least the number of grammar nodes lowering the tree appends (RuleSet::Lower reserves
  // the node table by it): 1 + the children's, a Built expression's node count (saturating).
  size_t lowered_nodes_bound = 0;
  size_t hash = 0;          // of the structure (equal trees hash alike)
};

Fragment Seq(const std::vector<Fragment>& parts);
Fragment Seq(std::initializer_list<FragmentRef> parts);
// Alternatives are deduplicated by text, keeping the first occurrence's position.
Fragment Alt(const std::vector<Fragment>& choices);
Fragment Alt(std::initializer_list<FragmentRef> choices);
// `body` repeated min..max times; max < 0 means unbounded. Requires 0 <= min <= max
// (when bounded).
Fragment Repeat(const Fragment& body, int min, int max);
inline Fragment Optional(const Fragment& body) { return Repeat(body, 0, 1); }

// A rule body that lives for the process (the prebuilt string formats, string_formats.h, which
// every conversion using a format adds with RuleSet::AddShared), printed and lowered once: a
// date-time body printed and lowered anew for every schema would cost several times what the
// rest of such a compile does. `nodes` is the lowered body, children before parents, a
// reference's rule id indexing `callees`; `body` and `lookahead` index `nodes`.
struct LastingBody {
  const FragmentNode* fragment = nullptr;  // in the process arena
  std::string printed;
  std::vector<ExprNode> nodes;
  std::vector<int> heights;
  std::vector<std::string> callees;
  ExprId body = -1;
  ExprId lookahead = -1;
};
// The process-wide entry for `body`, a node of the process arena (made on first use;
// thread-safe).
const LastingBody& LastingBodyOf(const FragmentNode* body);

// The rules of one grammar, printed in creation order.
class RuleSet {
 public:
  // The set's fragments must stay in an arena that outlives it (the conversion's).
  explicit RuleSet(size_t max_total_bytes) : max_total_bytes_(max_total_bytes) {}

  // A fresh rule name derived from `hint` (sanitised to [A-Za-z_][A-Za-z0-9_]*, shortened,
  // numbered when taken); its body must be given later with Define.
  std::string Reserve(std::string_view hint);
  // Defines a reserved rule. `body` must not be never.
  void Define(const std::string& name, const Fragment& body);
  // A fragment for `body`: itself when it is a short atom, else a reference to a rule with
  // exactly that body (an existing one when some rule already has it). Never stays never.
  Fragment Share(std::string_view hint, const Fragment& body);
  // Share(hint(), body), with `hint` called only when a new rule is named.
  template <typename HintFn>
  Fragment ShareLazily(const Fragment& body, HintFn&& hint) {
    if (std::optional<Fragment> existing = Existing(body)) return *std::move(existing);
    return DefineShared(hint(), body);
  }
  // A reference to a rule `name ::= body (= lookahead)` (an existing one with the same text,
  // else a fresh one): `lookahead` must follow every use of the reference. A rule with a
  // lookahead stays a rule (grammar/inline_rules.h never inlines one), so this also shares
  // one copy of `body` among many call sites where inlined copies would each add automaton
  // states. `body` and `lookahead` must not be never.
  Fragment ShareWithLookahead(std::string_view hint, const Fragment& body, const Fragment& lookahead);
  // A reference to a rule `name[json_chars=M..N] ::= body` (grammar/grammar_fsm.h, "JSON
  // character counts"; N < 0: unbounded): the strings of `body`, a regular language of JSON
  // string bodies, that are min..max JSON characters long. An existing rule with the same
  // body and count is reused. `body` must not be never.
  Fragment ShareCountingJsonChars(std::string_view hint, const Fragment& body, long long min, long long max);
  // Unique items (grammar/grammar_fsm.h): a reference to a rule `name[unique_item] ::= body`
  // (an existing one with the same body is reused), the item of a `[unique_items]` rule; and
  // marks the defined rule `name` as `name[unique_items]`. `body` must not be never.
  Fragment ShareUniqueItem(std::string_view hint, const Fragment& body);
  void MarkUniqueItems(const std::string& name);
  // A reference to a fresh rule whose body is the automaton literal `literal` (grammar_ast.h,
  // kAutomaton), which the FSM builder copies as its DFA; printed as its right-linear rules,
  // whose names (AutomatonStateRuleName) the set claims. Null when one of those names is taken
  // (the caller writes the language another way).
  std::optional<Fragment> DefineAutomaton(std::string_view hint, std::shared_ptr<const AutomatonLiteral> literal);
  // Reserves the claimed name `name` for a later Define.
  void ReserveNamed(const std::string& name);
  // Defines `name` (which must be free) with `body`; for fixed names such as "root".
  void DefineNamed(const std::string& name, const Fragment& body);

  // Keeps Reserve from ever handing out `name`, so that it can be defined later by name.
  void Claim(const std::string& name) { claimed_.insert(name); }
  // Drops a reserved rule that turned out not to be needed (nothing may refer to it).
  void Discard(const std::string& name);

  // The rules as a grammar rooted at the rule `root`, built directly (grammar_builder.h): the
  // nodes a parse of Print() would give. Throws GrammarSyntaxError when a body names a rule
  // the set does not have.
  GrammarAst Lower(const std::string& root) const;

  // Fragments remembered under a caller's key for the rest of the conversion (DfaToFragment
  // keys the regular languages it writes by their minimal DFA). Null when none.
  const Fragment* FindWritten(const std::string& key) const {
    auto it = written_.find(key);
    return it == written_.end() ? nullptr : &it->second;
  }
  void RememberWritten(std::string key, const Fragment& fragment) { written_.emplace(std::move(key), fragment); }

  bool IsDefined(const std::string& name) const;

  // The defined, not discarded rules in creation order: (name, body). Rule attributes are not
  // part of it: a set with a counting rule (ShareCountingJsonChars) has no Definitions.
  std::vector<std::pair<std::string, Fragment>> Definitions() const;
  // Bytes charged against the limit so far (names and bodies).
  size_t total_bytes() const { return total_bytes_; }
  // Throws the limit error of a rule set whose rules come to `bytes`.
  static void CheckTotalBytes(size_t bytes, size_t max_total_bytes);
  // Adds `definitions` (another rule set's Definitions()) exactly as the calls of Share that
  // made them there would add them here, and returns true; or returns false, changing
  // nothing, where those calls could name or share differently here: a name that is taken
  // or claimed, or a body that a rule of another name already has. A definition this set
  // already has (same name, shared body) is skipped, as Share would. `productive`: each of
  // the definitions derives a finite string (UnproductiveRules need not parse them again).
  // The definitions' bodies are printed and lowered once per process (LastingBody): pass only
  // definitions that are built once per process, as PrebuiltFormatGrammar's are.
  bool AddShared(const std::vector<std::pair<std::string, Fragment>>& definitions, bool productive);
  // Rules that derive no finite string (e.g. `a ::= "x" a`): a matcher could extend them
  // forever without ever completing.
  std::vector<std::string> UnproductiveRules() const;
  std::string Print() const;

 private:
  struct Rule {
    Rule(std::string rule_name, std::optional<Fragment> rule_body)
        : name(std::move(rule_name)), body(std::move(rule_body)) {}
    std::string name;
    std::optional<Fragment> body;  // nullopt until defined
    bool discarded = false;
    bool productive = false;  // known to derive a finite string (else UnproductiveRules decides)
    // Added by AddShared: the body is another set's, kept for the process by the caller (the
    // prebuilt formats), so Print and Lower reuse its LastingBody.
    bool lasting = false;
    // A JSON character count (ShareCountingJsonChars): printed after the name, e.g.
    // "[json_chars=0..254]", and its bounds (min -1: none; max -1: unbounded).
    std::string attribute;
    int32_t min_json_chars = -1;
    int32_t max_json_chars = -1;
    bool unique_item = false;   // "[unique_item]"
    bool unique_items = false;  // "[unique_items]"
    // Fragment::Rule(name), made on the first ReferenceTo: a rule shared from many places
    // hands out this node rather than hashing its name again each time.
    const FragmentNode* reference = nullptr;
  };
  void AddBytes(size_t bytes);
  // What Share returns for `body` without naming a rule: `body` itself (never, or a short
  // atom) or a reference to the rule that has this body; nullopt when Share must name one.
  std::optional<Fragment> Existing(const Fragment& body);
  // Names a new rule for `body` (which no rule has) and returns a reference to it.
  Fragment DefineShared(std::string_view hint, const Fragment& body);
  // Reserve and Define by the rule's index in rules_ (the name is looked up once, here).
  size_t ReserveIndex(std::string_view hint);
  void DefineAt(size_t index, const Fragment& body);
  // A reference to rules_[index] (Fragment::Rule of its name).
  Fragment ReferenceTo(size_t index);

  size_t max_total_bytes_;
  size_t total_bytes_ = 0;
  std::vector<Rule> rules_;
  std::unordered_map<std::string, size_t> index_of_name_;
  // The rule (index in rules_) that Share named for each body.
  std::unordered_map<Fragment, size_t, FragmentHash> name_of_body_;
  // ShareCountingJsonChars: the rule of each (body, count).
  std::map<std::pair<long long, long long>, std::unordered_map<Fragment, size_t, FragmentHash>> counted_name_of_body_;
  std::unordered_map<Fragment, size_t, FragmentHash> unique_item_name_of_body_;
  std::unordered_set<std::string> claimed_;
  std::unordered_map<std::string, int> next_suffix_;  // Reserve: where to resume per base name
  std::unordered_map<std::string, Fragment> written_;
};

}  // namespace xg2

#endif  // XG2_FRONTENDS_JSON_SCHEMA_EBNF_BUILDER_H_
