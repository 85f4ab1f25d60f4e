#include "frontends/json_schema/ebnf_builder.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <deque>
#include <iterator>
#include <memory>
#include <mutex>
#include <new>

#include "frontends/ebnf/ebnf_parser.h"
#include "frontends/json_schema/fragment_node_memo.h"
#include "grammar/automaton_literal.h"
#include "grammar/grammar_builder.h"
#include "support/cancellation.h"
#include "support/dcheck.h"
#include "support/fork_safe_mutex.h"
#include "support/error.h"

namespace xg2 {

namespace {
size_t LoweredNodesBound(const FragmentNode& shape);
}  // namespace

// Nodes in chunks: a node's address is stable for the arena's life, and all are destroyed
// together with it. The process arena is shared by every thread (a lock guards it); a
// conversion's arena is used by its own thread only.
class FragmentArena {
 public:
  explicit FragmentArena(bool shared) : shared_(shared) {}
  FragmentArena(const FragmentArena&) = delete;
  FragmentArena& operator=(const FragmentArena&) = delete;
  ~FragmentArena() {
    for (size_t c = 0; c < chunks_.size(); ++c) {
      const size_t used = c + 1 == chunks_.size() ? used_in_last_ : kChunkNodes;
      for (size_t i = 0; i < used; ++i) chunks_[c][i].~FragmentNode();
      ::operator delete(chunks_[c]);
    }
  }

  // The leaf node (no children, no built grammar, no automaton) of `kind` spelled `text`
  // whose structural hash is `hash`, when this conversion arena has made one; else null
  // (always null in the process arena, which does not intern). Lets a maker skip building a
  // shape, and its text, for a leaf that recurs (a grammar names a few classes, literals and
  // rules many times). Finds exactly the node Intern would return for such a shape.
  const FragmentNode* FindLeaf(FragmentNode::Kind kind, std::string_view text, size_t hash) const {
    if (shared_ || slots_.empty()) return nullptr;
    const size_t mask = slots_.size() - 1;
    for (size_t slot = hash & mask; slots_[slot] != nullptr; slot = (slot + 1) & mask) {
      const FragmentNode& node = *slots_[slot];
      if (node.hash == hash && node.kind == kind && node.binding == Fragment::Binding::kAtom && node.min == 0 &&
          node.max == -1 && node.built == nullptr && node.automaton == nullptr && node.children.empty() &&
          node.text == text) {
        return &node;
      }
    }
    return nullptr;
  }

  // The node shaped like `shape`: in a conversion's arena, the one made earlier with that
  // shape when there is one (hash-consing), else a new node that takes `shape`'s contents.
  // The process arena does not intern (LastingBodyOf keys its nodes by address).
  const FragmentNode* Intern(FragmentNode&& shape) {
    if (shared_) {
      std::lock_guard<ForkSafeMutex> lock(mutex_);
      return Allocate(std::move(shape));
    }
    if (2 * (interned_ + 1) > slots_.size()) Grow();
    const size_t mask = slots_.size() - 1;
    size_t slot = shape.hash & mask;
    for (; slots_[slot] != nullptr; slot = (slot + 1) & mask) {
      if (SameShape(*slots_[slot], shape)) return slots_[slot];
    }
    const FragmentNode* node = Allocate(std::move(shape));
    slots_[slot] = node;
    ++interned_;
    return node;
  }

 private:
  static constexpr size_t kChunkNodes = 256;
  static constexpr size_t kChunkChildren = 1024;

  // Equal fields and the same children (by address): then the trees are equal too.
  static bool SameShape(const FragmentNode& a, const FragmentNode& b) {
    return a.hash == b.hash && a.kind == b.kind && a.binding == b.binding && a.min == b.min && a.max == b.max &&
           a.built == b.built && a.automaton == b.automaton && a.children == b.children && a.text == b.text;
  }

  // Makes the node (its lowered_nodes_bound computed here: an interned shape found again
  // needs none).
  FragmentNode* Allocate(FragmentNode&& shape) {
    shape.lowered_nodes_bound = LoweredNodesBound(shape);
    if (chunks_.empty() || used_in_last_ == kChunkNodes) {
      chunks_.push_back(static_cast<FragmentNode*>(::operator new(kChunkNodes * sizeof(FragmentNode))));
      used_in_last_ = 0;
    }
    FragmentNode* node = new (chunks_.back() + used_in_last_) FragmentNode(std::move(shape));
    ++used_in_last_;
    if (!node->children.empty()) node->children = FragmentChildren(Keep(node->children), node->children.size());
    return node;
  }

  // A copy of `children` (the maker's buffer) that lives as long as the arena.
  const FragmentNode* const* Keep(const FragmentChildren& children) {
    const size_t count = children.size();
    const FragmentNode** kept;
    if (count > kChunkChildren / 4) {  // a long list gets a block of its own
      child_blocks_.emplace_back(new const FragmentNode*[count]);
      kept = child_blocks_.back().get();
    } else {
      if (count > kChunkChildren - children_used_) {
        child_blocks_.emplace_back(new const FragmentNode*[kChunkChildren]);
        child_chunk_ = child_blocks_.back().get();
        children_used_ = 0;
      }
      kept = child_chunk_ + children_used_;
      children_used_ += count;
    }
    std::copy(children.begin(), children.end(), kept);
    return kept;
  }

  // Open addressing with linear probing, at most half full (slots_.size() a power of two).
  void Grow() {
    std::vector<const FragmentNode*> old = std::move(slots_);
    slots_.assign(old.empty() ? 256 : 2 * old.size(), nullptr);
    const size_t mask = slots_.size() - 1;
    for (const FragmentNode* node : old) {
      if (node == nullptr) continue;
      size_t slot = node->hash & mask;
      while (slots_[slot] != nullptr) slot = (slot + 1) & mask;
      slots_[slot] = node;
    }
  }

  const bool shared_;
  ForkSafeMutex mutex_;  // the process arena's
  std::vector<FragmentNode*> chunks_;
  size_t used_in_last_ = 0;
  // The nodes' children lists (Keep): chunks of kChunkChildren pointers, filled in turn, and
  // a block of its own for each long list.
  std::vector<std::unique_ptr<const FragmentNode*[]>> child_blocks_;
  const FragmentNode** child_chunk_ = nullptr;
  size_t children_used_ = kChunkChildren;
  std::vector<const FragmentNode*> slots_;  // the interned nodes (conversion arenas)
  size_t interned_ = 0;
};

namespace {

using NodePtr = const FragmentNode*;
using Kind = FragmentNode::Kind;
using Binding = Fragment::Binding;

const std::shared_ptr<FragmentArena>& ProcessArenaOwner() {
  static const auto* const arena = new std::shared_ptr<FragmentArena>(std::make_shared<FragmentArena>(true));
  return *arena;  // never destroyed: its nodes back process-wide caches
}

// The innermost open FragmentArenaScope's arena on this thread; null: the process arena.
thread_local const std::shared_ptr<FragmentArena>* current_arena = nullptr;

// FragmentNode::lowered_nodes_bound of `shape`, whose children are made. Lowering appends at
// most one node per fragment node beside its children's (the builder only drops nodes), and a
// graft at most the expression's nodes.
size_t LoweredNodesBound(const FragmentNode& shape) {
  constexpr size_t kSaturated = size_t{1} << 40;  // a tree with more nodes than memory holds
  if (shape.built != nullptr) return shape.built->nodes.size();
  size_t bound = 1;
  for (NodePtr child : shape.children) bound = std::min(kSaturated, bound + child->lowered_nodes_bound);
  return bound;
}

NodePtr Intern(FragmentNode&& shape) {
  return current_arena != nullptr ? (*current_arena)->Intern(std::move(shape))
                                  : ProcessArenaOwner()->Intern(std::move(shape));
}

size_t Mix(size_t hash, size_t value) {
  hash ^= value + 0x9E3779B97F4A7C15ull + (hash << 6) + (hash >> 2);
  return hash;
}

// Bytes of `byte` inside a printed literal.
size_t EscapedSize(unsigned char byte) {
  switch (byte) {
    case '"':
    case '\\':
    case '\n':
    case '\r':
    case '\t': return 2;
    default: return byte < 0x20 || byte == 0x7F ? 4 : 1;
  }
}

void AppendEscaped(std::string_view bytes, std::string* out) {
  out->push_back('"');
  for (char c : bytes) {
    unsigned char byte = static_cast<unsigned char>(c);
    switch (c) {
      case '"': out->append("\\\""); break;
      case '\\': out->append("\\\\"); break;
      case '\n': out->append("\\n"); break;
      case '\r': out->append("\\r"); break;
      case '\t': out->append("\\t"); break;
      default:
        if (byte < 0x20 || byte == 0x7F) {
          char escaped[8];
          std::snprintf(escaped, sizeof(escaped), "\\x%02X", byte);
          out->append(escaped);
        } else {
          out->push_back(c);  // ASCII or a byte of a UTF-8 sequence (the input is UTF-8)
        }
    }
  }
  out->push_back('"');
}

// What parentheses add when a node of `binding` is printed where `needed` binds.
size_t ParenSize(Binding binding, Binding needed) {
  return static_cast<int>(binding) <= static_cast<int>(needed) ? 0 : 2;
}

size_t DecimalDigits(int value) {
  size_t digits = 1;
  for (; value >= 10; value /= 10) ++digits;
  return digits;
}

// RepeatSuffix(min, max).size(), without building it (every repetition needs its size).
size_t RepeatSuffixSize(int min, int max) {
  if ((min == 0 && max == 1) || (min == 0 && max < 0) || (min == 1 && max < 0)) return 1;
  if (max < 0) return DecimalDigits(min) + 3;
  if (min == max) return DecimalDigits(min) + 2;
  return DecimalDigits(min) + DecimalDigits(max) + 3;
}

std::string RepeatSuffix(int min, int max) {
  if (min == 0 && max == 1) return "?";
  if (min == 0 && max < 0) return "*";
  if (min == 1 && max < 0) return "+";
  if (max < 0) return "{" + std::to_string(min) + ",}";
  if (min == max) return "{" + std::to_string(min) + "}";
  return "{" + std::to_string(min) + "," + std::to_string(max) + "}";
}

size_t LeafHash(Kind kind, std::string_view text) {
  return Mix(Mix(static_cast<size_t>(kind), std::hash<std::string_view>()(text)), 0);
}

// The leaf this thread's conversion arena already has for (kind, text), or null.
NodePtr ExistingLeaf(Kind kind, std::string_view text, size_t hash) {
  return current_arena != nullptr ? (*current_arena)->FindLeaf(kind, text, hash) : nullptr;
}

// A leaf the arena was found not to have (ExistingLeaf): `hash` is LeafHash(kind, text).
NodePtr NewLeaf(Kind kind, std::string text, size_t printed_size, size_t hash,
                std::shared_ptr<const GrammarAst> built = nullptr) {
  XG2_DCHECK(hash == LeafHash(kind, text), "a leaf's hash is LeafHash of its kind and text");
  FragmentNode shape;
  shape.kind = kind;
  shape.hash = hash;
  shape.text = std::move(text);
  shape.printed_size = printed_size;
  shape.built = std::move(built);
  return Intern(std::move(shape));
}

NodePtr MakeLeaf(Kind kind, std::string text, size_t printed_size,
                 std::shared_ptr<const GrammarAst> built = nullptr) {
  const size_t hash = LeafHash(kind, text);
  if (built == nullptr) {
    if (NodePtr existing = ExistingLeaf(kind, text, hash)) return existing;
  }
  return NewLeaf(kind, std::move(text), printed_size, hash, std::move(built));
}

// The bytes are hashed once, and copied only when the arena has no such literal yet.
NodePtr LiteralNode(std::string_view bytes) {
  const size_t hash = LeafHash(Kind::kLiteral, bytes);
  if (NodePtr existing = ExistingLeaf(Kind::kLiteral, bytes, hash)) return existing;
  size_t size = 2;
  for (char c : bytes) size += EscapedSize(static_cast<unsigned char>(c));
  return NewLeaf(Kind::kLiteral, std::string(bytes), size, hash);
}

// A compound node over `children` (copied when the node is new); printed_size and hash from
// theirs.
NodePtr MakeCompound(Kind kind, Binding binding, FragmentChildren children, int min = 0, int max = -1) {
  FragmentNode shape;
  shape.kind = kind;
  shape.binding = binding;
  shape.min = min;
  shape.max = max;
  size_t hash = Mix(Mix(Mix(static_cast<size_t>(kind), static_cast<size_t>(min)), static_cast<size_t>(max)), 1);
  for (const NodePtr& child : children) hash = Mix(hash, child->hash);
  shape.hash = hash;
  switch (kind) {
    case Kind::kSequence: {
      size_t size = children.size() - 1;
      for (const NodePtr& child : children) size += child->printed_size + ParenSize(child->binding, Binding::kSequence);
      shape.printed_size = size;
      break;
    }
    case Kind::kAlternation: {
      size_t size = 3 * (children.size() - 1);
      for (const NodePtr& child : children) size += child->printed_size;
      shape.printed_size = size;
      break;
    }
    case Kind::kRepeat:
      shape.printed_size =
          children[0]->printed_size + ParenSize(children[0]->binding, Binding::kAtom) + RepeatSuffixSize(min, max);
      break;
    case Kind::kLookahead:
      shape.printed_size = children[0]->printed_size + 4 + children[1]->printed_size + 1;
      break;
    default: XG2_DCHECK(false, "a compound fragment node");
  }
  shape.children = children;
  return Intern(std::move(shape));
}

void AppendNode(const FragmentNode& node, std::string* out);

void AppendNodeAs(const FragmentNode& node, Binding needed, std::string* out) {
  if (ParenSize(node.binding, needed) == 0) return AppendNode(node, out);
  out->push_back('(');
  AppendNode(node, out);
  out->push_back(')');
}

void AppendNode(const FragmentNode& node, std::string* out) {
  switch (node.kind) {
    case Kind::kEmpty: out->append("\"\""); return;
    case Kind::kLiteral: AppendEscaped(node.text, out); return;
    case Kind::kRule:
    case Kind::kCharClass:
    case Kind::kExpression: out->append(node.text); return;
    case Kind::kAutomaton: {
      const size_t before = out->size();
      AppendAutomatonRules(*node.automaton, node.text, out);
      XG2_DCHECK(out->size() - before == node.printed_size, "an automaton rule prints as many bytes as it charged");
      return;
    }
    case Kind::kSequence:
      for (size_t i = 0; i < node.children.size(); ++i) {
        if (i > 0) out->push_back(' ');
        AppendNodeAs(*node.children[i], Binding::kSequence, out);
      }
      return;
    case Kind::kAlternation:
      for (size_t i = 0; i < node.children.size(); ++i) {
        if (i > 0) out->append(" | ");
        AppendNodeAs(*node.children[i], Binding::kAlternation, out);
      }
      return;
    case Kind::kRepeat:
      AppendNodeAs(*node.children[0], Binding::kAtom, out);
      out->append(RepeatSuffix(node.min, node.max));
      return;
    case Kind::kLookahead:
      AppendNodeAs(*node.children[0], Binding::kAlternation, out);
      out->append(" (= ");
      AppendNodeAs(*node.children[1], Binding::kAlternation, out);
      out->push_back(')');
      return;
  }
}

bool SameNode(const FragmentNode& a, const FragmentNode& b) {
  if (&a == &b) return true;
  if (a.hash != b.hash || a.kind != b.kind || a.printed_size != b.printed_size || a.min != b.min ||
      a.max != b.max || a.children.size() != b.children.size() || a.text != b.text) {
    return false;
  }
  if (a.kind == Kind::kAutomaton && !SameAutomatonLiteral(*a.automaton, *b.automaton)) return false;
  for (size_t i = 0; i < a.children.size(); ++i) {
    if (!SameNode(*a.children[i], *b.children[i])) return false;
  }
  return true;
}

bool IsRuleName(std::string_view text) {
  if (text.empty() || (text[0] >= '0' && text[0] <= '9')) return false;
  for (char c : text) {
    const bool word = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
    if (!word) return false;
  }
  return true;
}

}  // namespace

FragmentArenaScope::FragmentArenaScope() : FragmentArenaScope(std::make_shared<FragmentArena>(false)) {}

FragmentArenaScope::FragmentArenaScope(std::shared_ptr<FragmentArena> arena)
    : arena_(std::move(arena)), previous_(current_arena) {
  current_arena = &arena_;
}

FragmentArenaScope::~FragmentArenaScope() {
  XG2_DCHECK(current_arena == &arena_, "fragment arena scopes end in the reverse order of their start");
  current_arena = previous_;
}

std::shared_ptr<FragmentArena> ProcessFragmentArena() { return ProcessArenaOwner(); }

Fragment Fragment::Never() { return Fragment(nullptr); }

Fragment Fragment::Epsilon() {
  static const NodePtr kEpsilon = [] {
    FragmentArenaScope process(ProcessArenaOwner());  // the constant outlives every conversion
    return MakeLeaf(Kind::kEmpty, "", 2);
  }();
  return Fragment(kEpsilon);
}

Fragment Fragment::Literal(std::string_view bytes) {
  if (bytes.empty()) return Epsilon();
  return Fragment(LiteralNode(bytes));
}

Fragment Fragment::Rule(std::string name) {
  XG2_DCHECK(IsRuleName(name), "'" + name + "' is a rule name");
  const size_t size = name.size();
  return Fragment(MakeLeaf(Kind::kRule, std::move(name), size));
}

Fragment Fragment::CharClass(std::string spelled) {
  XG2_DCHECK(spelled.size() >= 3 && spelled.front() == '[' && spelled.back() == ']', "a class is spelled [...]");
  const size_t size = spelled.size();
  return Fragment(MakeLeaf(Kind::kCharClass, std::move(spelled), size));
}

Fragment Fragment::Built(std::string ebnf, std::shared_ptr<const GrammarAst> grammar) {
  XG2_DCHECK(grammar != nullptr && grammar->root_rule >= 0, "a built fragment has its nodes");
  XG2_DCHECK(!ebnf.empty() && ebnf.front() == '(' && ebnf.back() == ')', "a built fragment prints as one atom");
  const size_t size = ebnf.size();
  return Fragment(MakeLeaf(Kind::kExpression, std::move(ebnf), size, std::move(grammar)));
}

Fragment Fragment::Atom(std::string text) {
  if (!text.empty() && text.front() == '[') return CharClass(std::move(text));
  if (!IsRuleName(text)) throw InternalError("Fragment::Atom: '" + text + "' is neither a rule name nor a class");
  return Rule(std::move(text));
}

bool Fragment::epsilon() const { return node_ != nullptr && node_->kind == Kind::kEmpty; }

std::string Fragment::text() const {
  std::string out;
  if (node_ == nullptr) return out;
  out.reserve(node_->printed_size);
  AppendNode(*node_, &out);
  XG2_DCHECK(out.size() == node_->printed_size, "a fragment's printed size is the size of its text");
  return out;
}

size_t Fragment::text_size() const { return node_ == nullptr ? 0 : node_->printed_size; }

Fragment::Binding Fragment::binding() const { return node_ == nullptr ? Binding::kAtom : node_->binding; }

std::string Fragment::TextAs(Binding needed) const {
  std::string text;
  AppendTextAs(needed, &text);
  return text;
}

void Fragment::AppendTextAs(Binding needed, std::string* out) const {
  if (node_ != nullptr) AppendNodeAs(*node_, needed, out);
}

bool Fragment::operator==(const Fragment& other) const {
  if (node_ == nullptr || other.node_ == nullptr) return node_ == other.node_;
  return SameNode(*node_, *other.node_);
}

size_t Fragment::hash() const { return node_ == nullptr ? 0 : node_->hash; }

// The children Seq and Alt collect go to a buffer per thread that keeps its capacity between
// calls (neither calls itself or the other while it fills one, so each needs only one); one
// that a huge alternation grew is given back rather than kept for the thread's life.
std::vector<NodePtr>& ClearedScratch(std::vector<NodePtr>* scratch) {
  constexpr size_t kMaxKeptCapacity = size_t{1} << 12;
  if (scratch->capacity() > kMaxKeptCapacity) std::vector<NodePtr>().swap(*scratch);
  scratch->clear();
  return *scratch;
}

// Seq and Alt over a vector of operands or a braced list of references to them. The tree
// follows the text the operands would print as: a sequence operand's parts join the
// sequence, and a literal operand right after a literal operand merges into it.
template <typename Iterator>
Fragment SeqOf(Iterator begin, Iterator end) {
  thread_local std::vector<NodePtr> scratch;
  std::vector<NodePtr>& children = ClearedScratch(&scratch);
  int count = 0;
  const Fragment* only = nullptr;  // with count == 1 and nothing merged: that operand
  bool merged = false;
  bool ends_with_literal_operand = false;
  for (Iterator it = begin; it != end; ++it) {
    const Fragment& part = *it;
    if (part.never()) return Fragment::Never();
    if (part.epsilon()) continue;
    const FragmentNode& node = *part.node();
    if (node.kind == Kind::kLiteral && ends_with_literal_operand) {
      children.back() = LiteralNode(children.back()->text + node.text);
      merged = true;
      continue;
    }
    ++count;
    if (node.kind == Kind::kSequence) {
      children.insert(children.end(), node.children.begin(), node.children.end());
    } else {
      children.push_back(part.node_);
    }
    ends_with_literal_operand = node.kind == Kind::kLiteral;
    only = &part;
    merged = false;
  }
  if (count == 0) return Fragment::Epsilon();
  if (count == 1 && !merged) return *only;
  if (children.size() == 1) return Fragment(children[0]);
  return Fragment(MakeCompound(Kind::kSequence, Binding::kSequence, FragmentChildren(children.data(), children.size())));
}

// Alternatives are deduplicated as operands (before an alternation operand's choices join).
template <typename Iterator>
Fragment AltOf(Iterator begin, Iterator end) {
  struct HashOf {
    size_t operator()(const Fragment* fragment) const { return fragment->hash(); }
  };
  struct Equal {
    bool operator()(const Fragment* a, const Fragment* b) const { return *a == *b; }
  };
  // Most alternations have a handful of choices: those are compared with the kept ones in
  // place (hash first), which keeps the same first occurrences as the set, without its nodes.
  constexpr size_t kMaxScannedChoices = 16;
  const size_t count = static_cast<size_t>(std::distance(begin, end));
  std::vector<const Fragment*> kept;
  kept.reserve(count);  // one allocation, not one per doubling
  std::unordered_set<const Fragment*, HashOf, Equal> seen;
  const bool scan = count <= kMaxScannedChoices;
  for (Iterator it = begin; it != end; ++it) {
    const Fragment& choice = *it;
    if (choice.never()) continue;
    if (scan) {
      const size_t hash = choice.hash();
      auto same = [&](const Fragment* other) { return other->hash() == hash && *other == choice; };
      if (std::any_of(kept.begin(), kept.end(), same)) continue;
    } else if (!seen.insert(&choice).second) {
      continue;
    }
    kept.push_back(&choice);
  }
  if (kept.empty()) return Fragment::Never();
  if (kept.size() == 1) return *kept[0];
  thread_local std::vector<NodePtr> scratch;
  std::vector<NodePtr>& children = ClearedScratch(&scratch);
  for (const Fragment* choice : kept) {
    const FragmentNode& node = *choice->node();
    if (node.kind == Kind::kAlternation) {
      children.insert(children.end(), node.children.begin(), node.children.end());
    } else {
      children.push_back(choice->node_);
    }
  }
  return Fragment(
      MakeCompound(Kind::kAlternation, Binding::kAlternation, FragmentChildren(children.data(), children.size())));
}

Fragment Seq(const std::vector<Fragment>& parts) { return SeqOf(parts.begin(), parts.end()); }
Fragment Seq(std::initializer_list<FragmentRef> parts) { return SeqOf(parts.begin(), parts.end()); }
Fragment Alt(const std::vector<Fragment>& choices) { return AltOf(choices.begin(), choices.end()); }
Fragment Alt(std::initializer_list<FragmentRef> choices) { return AltOf(choices.begin(), choices.end()); }

Fragment Repeat(const Fragment& body, int min, int max) {
  if (max == 0) return Fragment::Epsilon();
  if (body.never()) return min == 0 ? Fragment::Epsilon() : Fragment::Never();
  if (body.epsilon()) return body;
  if (min == 1 && max == 1) return body;
  const NodePtr children[] = {body.node_};
  return Fragment(MakeCompound(Kind::kRepeat, Binding::kQuantified, FragmentChildren(children, 1), min, max));
}

namespace {

// Rule names: [A-Za-z_][A-Za-z0-9_]*, at most this long before numbering.
constexpr size_t kMaxNameLength = 48;
// Atoms up to this length are inlined instead of becoming rules.
constexpr size_t kMaxInlineAtomLength = 40;

std::string SanitizeName(std::string_view hint) {
  std::string name;
  name.reserve(std::min(hint.size(), kMaxNameLength) + 2);  // room for the "r_" prefix
  for (char c : hint) {
    bool word = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    if (word) {
      name.push_back(c);
    } else if (!name.empty() && name.back() != '_') {
      name.push_back('_');
    }
    if (name.size() >= kMaxNameLength) break;
  }
  while (!name.empty() && name.back() == '_') name.pop_back();
  if (name.empty() || (name[0] >= '0' && name[0] <= '9')) name.insert(0, "r_");
  return name;
}

}  // namespace

void RuleSet::CheckTotalBytes(size_t bytes, size_t max_total_bytes) {
  if (bytes > max_total_bytes) {
    throw ResourceLimitError("generated grammar exceeds " + std::to_string(max_total_bytes) + " bytes");
  }
}

void RuleSet::AddBytes(size_t bytes) {
  total_bytes_ += bytes;
  CheckTotalBytes(total_bytes_, max_total_bytes_);
}

// The first free name of base, base_2, base_3, ... Names are never freed, so the search
// resumes where the last one for the same base stopped (a schema with hundreds of
// definitions under one hint would otherwise try every earlier number again, quadratic).
size_t RuleSet::ReserveIndex(std::string_view hint) {
  std::string base = SanitizeName(hint);
  const size_t index = rules_.size();
  // Takes `name` for the new rule unless it is claimed or some rule has it.
  auto take = [&](const std::string& name) {
    return claimed_.count(name) == 0 && index_of_name_.try_emplace(name, index).second;
  };
  int& next = next_suffix_[base];  // the next number to try; past 2, base_2 .. base_(next-1) are taken
  if (next == 0) next = 2;
  std::string name = base;
  if (next > 2 || !take(name)) {
    for (;; ++next) {
      name = base + "_" + std::to_string(next);
      if (take(name)) break;
    }
    ++next;
  }
  XG2_DCHECK(index_of_name_.at(name) == index, "a reserved name is the new rule's");
  const size_t bytes = name.size();
  rules_.emplace_back(std::move(name), std::nullopt);
  AddBytes(bytes);
  return index;
}

std::string RuleSet::Reserve(std::string_view hint) { return rules_[ReserveIndex(hint)].name; }

void RuleSet::Discard(const std::string& name) { rules_.at(index_of_name_.at(name)).discarded = true; }

void RuleSet::Define(const std::string& name, const Fragment& body) { DefineAt(index_of_name_.at(name), body); }

void RuleSet::DefineAt(size_t index, const Fragment& body) {
  Rule& rule = rules_.at(index);
  XG2_DCHECK(!body.never(), "rule '" + rule.name + "' is defined with a body");
  rule.body = body;
  AddBytes(body.text_size());
}

Fragment RuleSet::ReferenceTo(size_t index) {
  Rule& rule = rules_[index];
  if (rule.reference == nullptr) rule.reference = Fragment::Rule(rule.name).node();
  XG2_DCHECK(rule.reference->kind == FragmentNode::Kind::kRule && rule.reference->text == rule.name,
             "a rule's cached reference names it");
  return Fragment(rule.reference);
}

std::optional<Fragment> RuleSet::DefineAutomaton(std::string_view hint, std::shared_ptr<const AutomatonLiteral> literal) {
  std::string name = Reserve(hint);
  std::vector<std::string> state_names;
  for (int32_t s = 1; s < literal->num_states(); ++s) {
    if (literal->edge_begin[s] == literal->edge_begin[s + 1]) continue;  // printed inline
    state_names.push_back(AutomatonStateRuleName(name, s));
    if (index_of_name_.count(state_names.back()) > 0 || claimed_.count(state_names.back()) > 0) {
      Discard(name);
      return std::nullopt;
    }
  }
  for (std::string& state_name : state_names) Claim(std::move(state_name));
  // Printed only when text is asked for (AppendNode): a compile reads the size alone.
  FragmentNode shape;
  shape.kind = FragmentNode::Kind::kAutomaton;
  shape.binding = Fragment::Binding::kAlternation;
  shape.hash = Mix(Mix(static_cast<size_t>(shape.kind), std::hash<std::string>()(name)), literal->hash);
  shape.printed_size = AutomatonRulesPrintedSize(*literal, name);
  shape.text = name;
  shape.automaton = std::move(literal);
  Define(name, Fragment(Intern(std::move(shape))));
  return Fragment::Rule(name);
}

void RuleSet::ReserveNamed(const std::string& name) {
  index_of_name_.emplace(name, rules_.size());
  rules_.emplace_back(name, std::nullopt);
}

void RuleSet::DefineNamed(const std::string& name, const Fragment& body) {
  ReserveNamed(name);
  Define(name, body);
}

Fragment RuleSet::Share(std::string_view hint, const Fragment& body) {
  return ShareLazily(body, [hint] { return hint; });
}

std::optional<Fragment> RuleSet::Existing(const Fragment& body) {
  if (body.never()) return body;
  if (body.binding() == Fragment::Binding::kAtom && body.text_size() <= kMaxInlineAtomLength) {
    return body;
  }
  auto found = name_of_body_.find(body);
  if (found != name_of_body_.end()) return ReferenceTo(found->second);
  return std::nullopt;
}

Fragment RuleSet::DefineShared(std::string_view hint, const Fragment& body) {
  const size_t index = ReserveIndex(hint);
  DefineAt(index, body);
  name_of_body_.emplace(body, index);
  return ReferenceTo(index);
}

Fragment RuleSet::ShareWithLookahead(std::string_view hint, const Fragment& body, const Fragment& lookahead) {
  const NodePtr children[] = {body.node_, lookahead.node_};
  Fragment with_lookahead(
      MakeCompound(FragmentNode::Kind::kLookahead, Fragment::Binding::kAtom, FragmentChildren(children, 2)));
  auto found = name_of_body_.find(with_lookahead);
  if (found != name_of_body_.end()) return ReferenceTo(found->second);
  const size_t index = ReserveIndex(hint);
  DefineAt(index, with_lookahead);
  name_of_body_.emplace(with_lookahead, index);
  return ReferenceTo(index);
}

Fragment RuleSet::ShareCountingJsonChars(std::string_view hint, const Fragment& body, long long min, long long max) {
  XG2_DCHECK(min >= 0 && min <= INT32_MAX && max <= INT32_MAX && (max < 0 || max >= min),
             "a JSON character count is 0 <= min <= max <= 2^31-1 (max -1: unbounded)");
  auto& named = counted_name_of_body_[{min, max}];
  auto found = named.find(body);
  if (found != named.end()) return ReferenceTo(found->second);
  const std::string attribute =
      "[json_chars=" + std::to_string(min) + ".." + (max >= 0 ? std::to_string(max) : std::string()) + "]";
  const size_t index = ReserveIndex(hint);
  DefineAt(index, body);
  Rule& rule = rules_[index];
  rule.attribute = attribute;
  rule.min_json_chars = static_cast<int32_t>(min);
  rule.max_json_chars = static_cast<int32_t>(max);
  AddBytes(attribute.size());
  named.emplace(body, index);
  return ReferenceTo(index);
}

Fragment RuleSet::ShareUniqueItem(std::string_view hint, const Fragment& body) {
  auto found = unique_item_name_of_body_.find(body);
  if (found != unique_item_name_of_body_.end()) return ReferenceTo(found->second);
  const size_t index = ReserveIndex(hint);
  DefineAt(index, body);
  Rule& rule = rules_[index];
  rule.attribute = "[unique_item]";
  rule.unique_item = true;
  AddBytes(rule.attribute.size());
  unique_item_name_of_body_.emplace(body, index);
  return ReferenceTo(index);
}

void RuleSet::MarkUniqueItems(const std::string& name) {
  Rule& rule = rules_.at(index_of_name_.at(name));
  XG2_DCHECK(rule.attribute.empty(), "a [unique_items] rule has no other attribute");
  rule.attribute = "[unique_items]";
  rule.unique_items = true;
  AddBytes(rule.attribute.size());
}

bool RuleSet::IsDefined(const std::string& name) const {
  auto found = index_of_name_.find(name);
  return found != index_of_name_.end() && rules_[found->second].body.has_value();
}

std::vector<std::pair<std::string, Fragment>> RuleSet::Definitions() const {
  std::vector<std::pair<std::string, Fragment>> definitions;
  for (const Rule& rule : rules_) {
    XG2_DCHECK(rule.attribute.empty(), "Definitions() would drop a rule attribute (a JSON character count)");
    if (!rule.discarded && rule.body) definitions.emplace_back(rule.name, *rule.body);
  }
  return definitions;
}

// Share(hint, body) on a fresh body takes the first free name of hint, hint_2, ...; the
// definitions were made that way in their own set, where the names before each were those
// of the definitions before it. Here the same names are taken by the same earlier
// definitions, so where each name is free (and unclaimed) Share would pick it again.
bool RuleSet::AddShared(const std::vector<std::pair<std::string, Fragment>>& definitions, bool productive) {
  std::vector<const std::pair<std::string, Fragment>*> fresh;
  for (const auto& definition : definitions) {
    // Lasting bodies are lowered into node lists of their own, which hold no automaton table.
    if (definition.second.node()->kind == FragmentNode::Kind::kAutomaton) return false;
    auto shared = name_of_body_.find(definition.second);
    if (shared != name_of_body_.end()) {
      if (rules_[shared->second].name != definition.first) return false;
      continue;
    }
    if (index_of_name_.count(definition.first) > 0 || claimed_.count(definition.first) > 0) return false;
    fresh.push_back(&definition);
  }
  for (const auto* definition : fresh) {
    const size_t index = rules_.size();
    index_of_name_.emplace(definition->first, index);
    Rule& rule = rules_.emplace_back(definition->first, definition->second);
    rule.productive = productive;
    rule.lasting = true;
    AddBytes(definition->first.size() + definition->second.text_size());
    name_of_body_.emplace(definition->second, index);
  }
  return true;
}

std::string RuleSet::Print() const {
  size_t size = 0;
  for (const Rule& rule : rules_) size += rule.name.size() + 6 + (rule.body ? rule.body->text_size() : 0);
  std::string out;
  out.reserve(size);
  for (const Rule& rule : rules_) {
    if (rule.discarded) continue;
    out += rule.name;
    out += rule.attribute;
    out += " ::= ";
    if (rule.lasting) {
      out += LastingBodyOf(rule.body->node()).printed;
    } else if (rule.body) {
      rule.body->AppendTextAs(Fragment::Binding::kAlternation, &out);
    }
    out.push_back('\n');
  }
  return out;
}

namespace {

// The code-point ranges of the class spelled `spelled`, parsed once per process: a few
// spellings (a JSON string's characters, digits, key characters) recur in every schema. The
// entries are never freed (the pointer stays valid); past kMaxCachedClasses spellings, null
// (the caller parses the class itself), so that patterns' classes cannot grow it forever.
const std::vector<CodepointRange>* ProcessClassRanges(const std::string& spelled) {
  constexpr size_t kMaxCachedClasses = 4096;
  using Ranges = std::vector<CodepointRange>;
  static ForkSafeMutex mutex;
  static auto* cache = new std::unordered_map<std::string, std::unique_ptr<const Ranges>>();  // never destroyed
  {
    std::lock_guard<ForkSafeMutex> lock(mutex);
    auto found = cache->find(spelled);
    if (found != cache->end()) return found->second.get();
    if (cache->size() >= kMaxCachedClasses) return nullptr;
  }
  auto parsed = std::make_unique<const Ranges>(ParseEbnfCharClass(spelled));
  std::lock_guard<ForkSafeMutex> lock(mutex);
  if (cache->size() >= kMaxCachedClasses) return nullptr;
  return cache->emplace(spelled, std::move(parsed)).first->second.get();
}

// Lowers fragment trees into one GrammarBuilder: the nodes ParseEbnf makes of their text.
class FragmentLowering {
 public:
  explicit FragmentLowering(GrammarBuilder* builder) : builder_(builder) {}

  ExprId Lower(const FragmentNode& node, int depth) {
    using Kind = FragmentNode::Kind;
    // The parser refuses text nested this deep; so does the lowering, before recursing.
    if (depth > kMaxExpressionHeight) {
      throw ResourceLimitError("expression nests deeper than the limit of " + std::to_string(kMaxExpressionHeight));
    }
    switch (node.kind) {
      case Kind::kEmpty: return builder_->Empty();
      case Kind::kLiteral: return builder_->Bytes(node.text);
      case Kind::kRule: return builder_->RuleRef(RuleOf(node));
      case Kind::kCharClass: return builder_->CharClass(ClassRanges(node));
      case Kind::kExpression:
        XG2_DCHECK(node.built != nullptr, "an expression fragment carries its nodes (Fragment::Built)");
        return builder_->Graft(*node.built, node.built->rules[node.built->root_rule].body);
      case Kind::kRepeat: return builder_->Repeat(Lower(*node.children[0], depth + 1), node.min, node.max);
      case Kind::kSequence:
      case Kind::kAlternation: {
        // Children collect on one stack shared by all levels (each leaves it as it found it).
        const size_t first = pending_.size();
        for (const auto& child : node.children) {
          const ExprId id = Lower(*child, depth + 1);
          pending_.push_back(id);
        }
        const ExprId id = node.kind == Kind::kSequence
                              ? builder_->Sequence(pending_.data() + first, pending_.size() - first)
                              : builder_->Choice(pending_.data() + first, pending_.size() - first);
        pending_.resize(first);
        return id;
      }
      case Kind::kLookahead:
      case Kind::kAutomaton: break;
    }
    throw InternalError("a lookahead or automaton fragment is the body of a rule, never a part of one");
  }

  // Defines `rule` with the lowered `body` (a lookahead body sets the rule's lookahead).
  void DefineRule(RuleId rule, const FragmentNode& body) {
    if (body.kind == FragmentNode::Kind::kLookahead) {
      const ExprId expression = Lower(*body.children[0], 1);
      builder_->DefineRule(rule, expression, Lower(*body.children[1], 1));
    } else if (body.kind == FragmentNode::Kind::kAutomaton) {
      builder_->DefineAutomatonRule(rule, body.automaton);
    } else {
      builder_->DefineRule(rule, Lower(body, 1));
    }
  }

  // DefineRule for a lasting body (LastingBodyOf): its nodes appended, as lowered once.
  void DefineLastingRule(RuleId rule, const LastingBody& lasting) {
    std::vector<RuleId> rule_of;
    rule_of.reserve(lasting.callees.size());
    for (const std::string& callee : lasting.callees) {
      const RuleId id = builder_->FindRule(callee);
      if (id < 0) throw GrammarSyntaxError("generated grammar: undefined rule '" + callee + "'");
      rule_of.push_back(id);
    }
    const ExprId offset = builder_->AppendLasting(lasting.nodes, lasting.heights, rule_of);
    builder_->DefineRule(rule, offset + lasting.body, lasting.lookahead < 0 ? -1 : offset + lasting.lookahead);
  }

 private:
  // Grammars repeat a few classes and references many times, and a conversion's arena makes
  // each one node (hash-consing): so both are looked up by node, and each class spelling is
  // read and each rule name hashed about once per grammar. A class the process cache holds is
  // borrowed by the grammar's node (grammar/expr_payloads.h), one parsed here is copied.
  ExprRanges ClassRanges(const FragmentNode& node) {
    const KnownClass* known = class_ranges_.Find(&node);
    if (known == nullptr) {
      KnownClass found{ProcessClassRanges(node.text), true};
      if (found.ranges == nullptr) {
        parsed_here_.push_back(ParseEbnfCharClass(node.text));
        found = KnownClass{&parsed_here_.back(), false};
      }
      class_ranges_.Add(&node, found);
      known = class_ranges_.Find(&node);
    }
    return known->lasting ? ExprRanges::Borrow(*known->ranges) : ExprRanges(*known->ranges);
  }
  RuleId RuleOf(const FragmentNode& node) {
    if (const RuleId* known = rule_of_.Find(&node)) return *known;
    const RuleId rule = builder_->FindRule(node.text);
    if (rule < 0) throw GrammarSyntaxError("generated grammar: undefined rule '" + node.text + "'");
    rule_of_.Add(&node, rule);
    return rule;
  }

  struct KnownClass {
    const std::vector<CodepointRange>* ranges;
    bool lasting;  // in the process cache (ProcessClassRanges), never freed
  };

  GrammarBuilder* builder_;
  FragmentNodeMemo<KnownClass> class_ranges_;
  std::deque<std::vector<CodepointRange>> parsed_here_;  // classes the process cache had no room for
  FragmentNodeMemo<RuleId> rule_of_;
  std::vector<ExprId> pending_;
};

void CollectCallees(const FragmentNode& node, std::vector<std::string>* callees,
                    std::unordered_set<std::string_view>* seen) {
  if (node.kind == FragmentNode::Kind::kRule && seen->insert(node.text).second) callees->push_back(node.text);
  for (const auto& child : node.children) CollectCallees(*child, callees, seen);
}

LastingBody BuildLastingBody(const FragmentNode* body) {
  LastingBody lasting;
  lasting.fragment = body;
  lasting.printed.reserve(body->printed_size);
  AppendNodeAs(*body, Fragment::Binding::kAlternation, &lasting.printed);
  std::unordered_set<std::string_view> seen;
  CollectCallees(*body, &lasting.callees, &seen);
  // Lowered in a grammar of its own whose first rules stand for the callees.
  GrammarBuilder builder;
  for (const std::string& callee : lasting.callees) builder.AddRule(callee);
  const RuleId self = builder.AddRule("xg2_lasting_body");
  FragmentLowering lowering(&builder);
  lowering.DefineRule(self, *body);
  const size_t count = builder.node_count();
  for (const std::string& callee : lasting.callees) builder.DefineRule(builder.FindRule(callee), builder.Empty());
  GrammarAst ast = builder.Finish(self);
  lasting.body = ast.rules[self].body;
  lasting.lookahead = ast.rules[self].lookahead;
  ast.nodes.resize(count);
  lasting.nodes = std::move(ast.nodes);
  lasting.heights.reserve(count);
  for (const ExprNode& node : lasting.nodes) {
    int height = 1;
    for (ExprId child : node.children) height = std::max(height, lasting.heights[child] + 1);
    lasting.heights.push_back(height);
  }
  return lasting;
}

}  // namespace

// Keys are nodes of the process arena, never freed, so no address that keys an entry is reused.
const LastingBody& LastingBodyOf(const FragmentNode* body) {
  static ForkSafeMutex mutex;
  static auto* cache = new std::unordered_map<const FragmentNode*, std::unique_ptr<LastingBody>>();  // never destroyed
  {
    std::lock_guard<ForkSafeMutex> lock(mutex);
    auto found = cache->find(body);
    if (found != cache->end()) return *found->second;
  }
  auto built = std::make_unique<LastingBody>(BuildLastingBody(body));
  std::lock_guard<ForkSafeMutex> lock(mutex);
  return *cache->emplace(body, std::move(built)).first->second;
}

GrammarAst RuleSet::Lower(const std::string& root) const {
  GrammarBuilder builder;
  std::vector<std::pair<const Rule*, RuleId>> live;
  live.reserve(rules_.size());
  size_t nodes_bound = 0;
  for (const Rule& rule : rules_) {
    if (rule.discarded) continue;
    live.emplace_back(&rule, builder.AddRule(rule.name));
    nodes_bound += !rule.body     ? 1
                   : rule.lasting ? LastingBodyOf(rule.body->node()).nodes.size()
                                  : rule.body->node()->lowered_nodes_bound;
  }
  // The node table grows once, not by doubling (each doubling moves every node built so far),
  // and has room for what the passes after the frontend add: SinkLeadingTerminals
  // (grammar/sink_leading_terminals.h) adds at most one node per rule, InlineSmallRules none.
  // Bounded: a grammar that large stops at a limit long before it is built.
  constexpr size_t kMaxReservedNodes = size_t{1} << 20;
  builder.ReserveNodes(std::min(nodes_bound + live.size(), kMaxReservedNodes));
  FragmentLowering lowering(&builder);
  for (const auto& [rule, id] : live) {
    ThrowIfCancelled();
    if (!rule->body) {
      builder.DefineRule(id, builder.Empty());  // what "name ::= " parses as
    } else if (rule->lasting) {
      lowering.DefineLastingRule(id, LastingBodyOf(rule->body->node()));
    } else {
      lowering.DefineRule(id, *rule->body->node());
    }
    if (rule->min_json_chars >= 0) builder.SetJsonCharCount(id, rule->min_json_chars, rule->max_json_chars);
    if (rule->unique_item) builder.SetUniqueItem(id);
    if (rule->unique_items) builder.SetUniqueItems(id);
  }
  const RuleId root_id = builder.FindRule(root);
  if (root_id < 0) throw GrammarSyntaxError("generated grammar: no root rule '" + root + "'");
  return builder.Finish(root_id);
}

}  // namespace xg2
