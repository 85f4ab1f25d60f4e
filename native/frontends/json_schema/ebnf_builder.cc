#include "frontends/json_schema/ebnf_builder.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>

#include "support/cancellation.h"
#include "support/dcheck.h"
#include "support/error.h"

namespace xg2 {

Fragment Fragment::Never() { return Fragment("", Binding::kAtom, true); }

Fragment Fragment::Epsilon() { return Fragment("\"\"", Binding::kAtom, false); }

Fragment Fragment::Literal(std::string_view bytes) {
  if (bytes.empty()) return Epsilon();
  std::string text = "\"";
  for (char c : bytes) {
    unsigned char byte = static_cast<unsigned char>(c);
    switch (c) {
      case '"': text += "\\\""; break;
      case '\\': text += "\\\\"; break;
      case '\n': text += "\\n"; break;
      case '\r': text += "\\r"; break;
      case '\t': text += "\\t"; break;
      default:
        if (byte < 0x20 || byte == 0x7F) {
          char escaped[8];
          std::snprintf(escaped, sizeof(escaped), "\\x%02X", byte);
          text += escaped;
        } else {
          text.push_back(c);  // ASCII or a byte of a UTF-8 sequence (the input is UTF-8)
        }
    }
  }
  text.push_back('"');
  Fragment literal(std::move(text), Binding::kAtom, false);
  literal.literal_ = true;
  return literal;
}

Fragment Fragment::Atom(std::string text) {
  return Fragment(std::move(text), Binding::kAtom, false);
}

std::string Fragment::TextAs(Binding needed) const {
  std::string text;
  AppendTextAs(needed, &text);
  return text;
}

void Fragment::AppendTextAs(Binding needed, std::string* out) const {
  if (static_cast<int>(binding_) <= static_cast<int>(needed)) {
    out->append(text_);
    return;
  }
  out->push_back('(');
  out->append(text_);
  out->push_back(')');
}

// Seq and Alt over a vector of operands or a braced list of references to them.
template <typename Iterator>
Fragment SeqOf(Iterator begin, Iterator end) {
  std::string text;
  size_t capacity = 0;  // an upper bound: each part with parentheses and a separator
  for (Iterator it = begin; it != end; ++it) {
    const Fragment& part = *it;
    capacity += part.text().size() + 3;
  }
  text.reserve(capacity);
  int count = 0;
  // With one part left (count == 1): that part, or the literal merged into `text`.
  const Fragment* only = nullptr;
  bool merged = false;
  bool text_ends_with_literal = false;
  for (Iterator it = begin; it != end; ++it) {
    const Fragment& part = *it;
    if (part.never()) return Fragment::Never();
    if (part.epsilon()) continue;
    if (part.literal_ && text_ends_with_literal) {
      // Adjacent literals merge: drop the closing quote and the next opening quote.
      text.pop_back();
      text.append(part.text(), 1, std::string::npos);
      merged = true;
      continue;
    }
    if (count++ > 0) text.push_back(' ');
    part.AppendTextAs(Fragment::Binding::kSequence, &text);
    text_ends_with_literal = part.literal_;
    only = &part;
    merged = false;
  }
  if (count == 0) return Fragment::Epsilon();
  if (count == 1 && !merged) return *only;
  if (count == 1) {
    Fragment literal(std::move(text), Fragment::Binding::kAtom, false);
    literal.literal_ = true;
    return literal;
  }
  return Fragment(std::move(text), Fragment::Binding::kSequence, false);
}

template <typename Iterator>
Fragment AltOf(Iterator begin, Iterator end) {
  std::vector<const Fragment*> kept;
  std::unordered_set<std::string_view> seen;  // views of the choices' texts
  for (Iterator it = begin; it != end; ++it) {
    const Fragment& choice = *it;
    if (choice.never() || !seen.insert(choice.text()).second) continue;
    kept.push_back(&choice);
  }
  if (kept.empty()) return Fragment::Never();
  if (kept.size() == 1) return *kept[0];
  std::string text;
  size_t capacity = 0;  // an upper bound: each choice with parentheses and a separator
  for (const Fragment* choice : kept) capacity += choice->text().size() + 5;
  text.reserve(capacity);
  for (size_t i = 0; i < kept.size(); ++i) {
    if (i > 0) text += " | ";
    kept[i]->AppendTextAs(Fragment::Binding::kAlternation, &text);
  }
  return Fragment(std::move(text), Fragment::Binding::kAlternation, false);
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
  std::string suffix;
  if (min == 0 && max == 1) {
    suffix = "?";
  } else if (min == 0 && max < 0) {
    suffix = "*";
  } else if (min == 1 && max < 0) {
    suffix = "+";
  } else if (max < 0) {
    suffix = "{" + std::to_string(min) + ",}";
  } else if (min == max) {
    suffix = "{" + std::to_string(min) + "}";
  } else {
    suffix = "{" + std::to_string(min) + "," + std::to_string(max) + "}";
  }
  return Fragment(body.TextAs(Fragment::Binding::kAtom) + suffix, Fragment::Binding::kQuantified,
                  false);
}

namespace {

// Rule names: [A-Za-z_][A-Za-z0-9_]*, at most this long before numbering.
constexpr size_t kMaxNameLength = 48;
// Atoms up to this length are inlined instead of becoming rules.
constexpr size_t kMaxInlineAtomLength = 40;

std::string SanitizeName(std::string_view hint) {
  std::string name;
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
std::string RuleSet::Reserve(std::string_view hint) {
  std::string base = SanitizeName(hint);
  auto taken = [this](const std::string& name) {
    return index_of_name_.count(name) > 0 || claimed_.count(name) > 0;
  };
  int& next = next_suffix_[base];  // the next number to try; past 2, base_2 .. base_(next-1) are taken
  if (next == 0) next = 2;
  std::string name = base;
  if (next > 2 || taken(name)) {
    for (;; ++next) {
      name = base + "_" + std::to_string(next);
      if (!taken(name)) break;
    }
    ++next;
  }
  index_of_name_.emplace(name, rules_.size());
  rules_.push_back({name, "", false});
  AddBytes(name.size());
  return name;
}

void RuleSet::Discard(const std::string& name) { rules_.at(index_of_name_.at(name)).discarded = true; }

void RuleSet::Define(const std::string& name, const Fragment& body) {
  Rule& rule = rules_.at(index_of_name_.at(name));
  rule.body = body.text();
  AddBytes(rule.body.size());
}

void RuleSet::ReserveNamed(const std::string& name) {
  index_of_name_.emplace(name, rules_.size());
  rules_.push_back({name, "", false});
}

void RuleSet::DefineNamed(const std::string& name, const Fragment& body) {
  ReserveNamed(name);
  Define(name, body);
}

Fragment RuleSet::Share(std::string_view hint, const Fragment& body) {
  return ShareLazily(body, [hint] { return hint; });
}

std::optional<Fragment> RuleSet::Existing(const Fragment& body) const {
  if (body.never()) return body;
  if (body.binding() == Fragment::Binding::kAtom && body.text().size() <= kMaxInlineAtomLength) {
    return body;
  }
  auto found = name_of_body_.find(body.text());
  if (found != name_of_body_.end()) return Fragment::Atom(found->second);
  return std::nullopt;
}

Fragment RuleSet::DefineShared(std::string_view hint, const Fragment& body) {
  std::string name = Reserve(hint);
  Define(name, body);
  name_of_body_.emplace(body.text(), name);
  return Fragment::Atom(name);
}

Fragment RuleSet::ShareWithLookahead(std::string_view hint, const Fragment& body, const Fragment& lookahead) {
  std::string text = body.TextAs(Fragment::Binding::kAlternation) + " (= " +
                     lookahead.TextAs(Fragment::Binding::kAlternation) + ")";
  auto found = name_of_body_.find(text);
  if (found != name_of_body_.end()) return Fragment::Atom(found->second);
  std::string name = Reserve(hint);
  Define(name, Fragment::Atom(text));
  name_of_body_.emplace(std::move(text), name);
  return Fragment::Atom(name);
}

Fragment RuleSet::ShareCountingJsonChars(std::string_view hint, const Fragment& body, long long min, long long max) {
  const std::string attribute =
      "[json_chars=" + std::to_string(min) + ".." + (max >= 0 ? std::to_string(max) : std::string()) + "]";
  std::string key = attribute + " " + body.text();
  auto found = name_of_body_.find(key);
  if (found != name_of_body_.end()) return Fragment::Atom(found->second);
  std::string name = Reserve(hint);
  Define(name, body);
  rules_.at(index_of_name_.at(name)).attribute = attribute;
  AddBytes(attribute.size());
  name_of_body_.emplace(std::move(key), name);
  return Fragment::Atom(name);
}

bool RuleSet::IsDefined(const std::string& name) const {
  auto found = index_of_name_.find(name);
  return found != index_of_name_.end() && !rules_[found->second].body.empty();
}

std::vector<std::pair<std::string, std::string>> RuleSet::Definitions() const {
  std::vector<std::pair<std::string, std::string>> definitions;
  for (const Rule& rule : rules_) {
    XG2_DCHECK(rule.attribute.empty(), "Definitions() would drop a rule attribute (a JSON character count)");
    if (!rule.discarded && !rule.body.empty()) definitions.emplace_back(rule.name, rule.body);
  }
  return definitions;
}

// Share(hint, body) on a fresh body takes the first free name of hint, hint_2, ...; the
// definitions were made that way in their own set, where the names before each were those
// of the definitions before it. Here the same names are taken by the same earlier
// definitions, so where each name is free (and unclaimed) Share would pick it again.
bool RuleSet::AddShared(const std::vector<std::pair<std::string, std::string>>& definitions, bool productive) {
  std::vector<const std::pair<std::string, std::string>*> fresh;
  for (const auto& definition : definitions) {
    auto shared = name_of_body_.find(definition.second);
    if (shared != name_of_body_.end()) {
      if (shared->second != definition.first) return false;
      continue;
    }
    if (index_of_name_.count(definition.first) > 0 || claimed_.count(definition.first) > 0) return false;
    fresh.push_back(&definition);
  }
  for (const auto* definition : fresh) {
    index_of_name_.emplace(definition->first, rules_.size());
    rules_.push_back({definition->first, definition->second, false, productive});
    AddBytes(definition->first.size() + definition->second.size());
    name_of_body_.emplace(definition->second, definition->first);
  }
  return true;
}

namespace {

// How UnproductiveRules reads the bodies this builder writes (ProductivityTree and
// CollectRuleReferences alike): a rule name is a run of these characters ...
bool IsRuleNameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.' ||
         c == '-';
}

// ... and a literal or class opening at `open` ends at the first `close` that an even run of
// backslashes precedes. Returns the position just past it, or npos when it does not close.
// memchr, because literals make up most of the text.
size_t QuotedEnd(std::string_view text, size_t open, char close) {
  for (size_t pos = open;;) {
    const void* found = std::memchr(text.data() + pos + 1, close, text.size() - pos - 1);
    if (found == nullptr) return std::string_view::npos;
    pos = static_cast<const char*>(found) - text.data();
    size_t backslashes = 0;
    while (text[pos - 1 - backslashes] == '\\') ++backslashes;  // stops at the opening quote
    if (backslashes % 2 == 0) return pos + 1;
  }
}

// Node kinds of a ProductivityTree: a terminal always derives something; an optional node
// does too (empty); a rule node derives something when its rule does; a sequence when all
// children do, an alternation when any does.
enum class ProductivityKind { kTerminal, kOptional, kRule, kSequence, kAlternation };
struct ProductivityNode {
  ProductivityKind kind;
  int32_t rule;          // kRule: index of the rule (-1: no such rule)
  uint32_t first_child;  // kSequence / kAlternation: children[first_child, + child_count)
  uint32_t child_count;
};
// The nodes of all the trees of one UnproductiveRules call, in shared arrays: a large
// grammar has thousands of rule bodies, and three vectors per tree made the allocator the
// main cost of the check.
struct ProductivityArena {
  std::vector<ProductivityNode> nodes;
  std::vector<int> children;
  std::vector<int> pending;  // the parse's stack of finished children (empty between parses)
  std::string name;
};

// Parses the EBNF this builder emits into a tree just detailed enough to decide whether
// an expression derives some finite string once the rules it refers to are known to.
class ProductivityTree {
 public:
  using Kind = ProductivityKind;
  using Node = ProductivityNode;

  // `rule_index` maps a rule name to its index in the rule set. The tree's nodes live in
  // `arena`, which must outlive it.
  ProductivityTree(const std::string& text, const std::unordered_map<std::string, size_t>& rule_index,
                   ProductivityArena* arena)
      : text_(text), rule_index_(rule_index), nodes_(arena->nodes), children_(arena->children),
        pending_(arena->pending), name_(arena->name) {
    root_ = ParseAlternation();
  }

  // `productive[i]`: rule i is known to derive a finite string.
  bool Derives(const std::vector<uint8_t>& productive) const { return Derives(root_, productive); }

 private:
  bool Derives(int id, const std::vector<uint8_t>& productive) const {
    const Node& node = nodes_[id];
    switch (node.kind) {
      case Kind::kTerminal:
      case Kind::kOptional: return true;
      case Kind::kRule: return node.rule >= 0 && productive[node.rule];
      case Kind::kSequence:
        for (uint32_t i = 0; i < node.child_count; ++i) {
          if (!Derives(children_[node.first_child + i], productive)) return false;
        }
        return true;
      case Kind::kAlternation:
        for (uint32_t i = 0; i < node.child_count; ++i) {
          if (Derives(children_[node.first_child + i], productive)) return true;
        }
        return false;
    }
    return false;
  }

  int Add(Kind kind, int32_t rule = -1) {
    nodes_.push_back({kind, rule, 0, 0});
    return static_cast<int>(nodes_.size()) - 1;
  }
  // A parent of the nodes pending_[first..], which it takes off pending_.
  int AddParent(Kind kind, size_t first) {
    int id = Add(kind);
    nodes_[id].first_child = static_cast<uint32_t>(children_.size());
    nodes_[id].child_count = static_cast<uint32_t>(pending_.size() - first);
    children_.insert(children_.end(), pending_.begin() + static_cast<std::ptrdiff_t>(first), pending_.end());
    pending_.resize(first);
    return id;
  }
  // The one node pending_[first], taken off pending_.
  int TakeOnly(size_t first) {
    int id = pending_[first];
    pending_.resize(first);
    return id;
  }
  void SkipSpaces() {
    while (pos_ < text_.size() && text_[pos_] == ' ') ++pos_;
  }
  // Parse functions collect the children of the node they build on pending_ (a stack shared
  // by all levels: nested calls leave it as they found it).
  int ParseAlternation() {
    size_t first = pending_.size();
    int choice = ParseSequence();
    pending_.push_back(choice);
    SkipSpaces();
    while (pos_ < text_.size() && text_[pos_] == '|') {
      ++pos_;
      choice = ParseSequence();
      pending_.push_back(choice);
      SkipSpaces();
    }
    return pending_.size() - first == 1 ? TakeOnly(first) : AddParent(Kind::kAlternation, first);
  }
  int ParseSequence() {
    size_t first = pending_.size();
    while (true) {
      SkipSpaces();
      if (pos_ >= text_.size() || text_[pos_] == '|' || text_[pos_] == ')') break;
      int part = ParsePostfix();
      pending_.push_back(part);
    }
    return pending_.size() - first == 1 ? TakeOnly(first) : AddParent(Kind::kSequence, first);
  }
  int ParsePostfix() {
    int atom = ParseAtom();
    while (pos_ < text_.size()) {
      char c = text_[pos_];
      if (c == '?' || c == '*') {
        ++pos_;
        atom = Add(Kind::kOptional);
      } else if (c == '+') {
        ++pos_;
      } else if (c == '{') {
        size_t close = text_.find('}', pos_);
        bool zero_minimum = text_[pos_ + 1] == '0' || text_[pos_ + 1] == ',';
        pos_ = close + 1;
        if (zero_minimum) atom = Add(Kind::kOptional);
      } else {
        break;
      }
    }
    return atom;
  }
  void SkipQuoted(char close) {
    pos_ = std::min(QuotedEnd(text_, pos_, close), text_.size());
  }
  int ParseAtom() {
    char c = text_[pos_];
    if (c == '"') {
      SkipQuoted('"');
      return Add(Kind::kTerminal);
    }
    if (c == '[') {
      SkipQuoted(']');
      return Add(Kind::kTerminal);
    }
    if (c == '(') {
      ++pos_;
      int inner = ParseAlternation();
      ++pos_;  // ')'
      return inner;
    }
    size_t start = pos_;
    while (pos_ < text_.size() && IsRuleNameChar(text_[pos_])) ++pos_;
    if (pos_ == start) {
      ++pos_;  // not produced by this builder; treat as a terminal
      return Add(Kind::kTerminal);
    }
    name_.assign(text_, start, pos_ - start);
    auto found = rule_index_.find(name_);
    return Add(Kind::kRule, found == rule_index_.end() ? -1 : static_cast<int32_t>(found->second));
  }

  const std::string& text_;
  const std::unordered_map<std::string, size_t>& rule_index_;
  size_t pos_ = 0;
  // The arena's arrays (shared with the other trees of the arena).
  std::vector<Node>& nodes_;
  std::vector<int>& children_;
  std::vector<int>& pending_;
  std::string& name_;
  int root_ = 0;
};

// Appends to `refs` the index of each rule that `body` (as this builder writes it) names, and
// returns true; false when the text names a rule the set does not know or is not this
// builder's (the ProductivityTree then decides). `name` is scratch.
bool CollectRuleReferences(const std::string& body, const std::unordered_map<std::string, size_t>& rule_index,
                           std::vector<int32_t>* refs, std::string* name) {
  for (size_t pos = 0; pos < body.size(); ++pos) {
    const char c = body[pos];
    if (c == '"' || c == '[') {
      const size_t end = QuotedEnd(body, pos, c == '"' ? '"' : ']');
      if (end == std::string::npos) return false;
      pos = end - 1;
    } else if (c == '{') {
      pos = body.find('}', pos);
      if (pos == std::string::npos) return false;
    } else if (IsRuleNameChar(c)) {
      size_t end = pos + 1;
      while (end < body.size() && IsRuleNameChar(body[end])) ++end;
      name->assign(body, pos, end - pos);
      auto found = rule_index.find(*name);
      if (found == rule_index.end()) return false;
      refs->push_back(static_cast<int32_t>(found->second));
      pos = end - 1;
    }
  }
  return true;
}

}  // namespace

std::vector<std::string> RuleSet::UnproductiveRules() const {
  const size_t n = rules_.size();
  std::vector<uint8_t> productive(n, 0);
  // First the sufficient condition: a body whose named rules are all productive is productive
  // (a body is never `never`, and operators over productive operands derive some finite
  // string). Propagated from the rules that name none, as in Kahn's topological order over
  // the distinct references (CSR: refs[ref_begin[i], ref_begin[i + 1]) are those of rule i).
  std::vector<int32_t> ref_begin(n + 1, 0), refs, pending(n, -1), ready;
  std::string name;
  for (size_t i = 0; i < n; ++i) {
    ThrowIfCancelled();
    const Rule& rule = rules_[i];
    const size_t first = refs.size();
    if (!rule.discarded && !rule.body.empty()) {
      if (rule.productive) {
        ready.push_back(static_cast<int32_t>(i));
      } else if (CollectRuleReferences(rule.body, index_of_name_, &refs, &name)) {
        std::sort(refs.begin() + first, refs.end());
        refs.erase(std::unique(refs.begin() + first, refs.end()), refs.end());
        pending[i] = static_cast<int32_t>(refs.size() - first);
        if (pending[i] == 0) ready.push_back(static_cast<int32_t>(i));
      } else {
        refs.resize(first);  // left to the tree
      }
    }
    ref_begin[i + 1] = static_cast<int32_t>(refs.size());
  }
  std::vector<int32_t> user_begin(n + 1, 0), users(refs.size());
  for (int32_t callee : refs) ++user_begin[callee + 1];
  for (size_t i = 0; i < n; ++i) user_begin[i + 1] += user_begin[i];
  {
    std::vector<int32_t> fill(user_begin.begin(), user_begin.end() - 1);
    for (size_t i = 0; i < n; ++i) {
      for (int32_t k = ref_begin[i]; k < ref_begin[i + 1]; ++k) users[fill[refs[k]]++] = static_cast<int32_t>(i);
    }
  }
  while (!ready.empty()) {
    const int32_t rule = ready.back();
    ready.pop_back();
    productive[rule] = 1;
    for (int32_t k = user_begin[rule]; k < user_begin[rule + 1]; ++k) {
      if (--pending[users[k]] == 0) ready.push_back(users[k]);
    }
  }
  // The rest (rules on or after a cycle, and alternatives with an unproductive choice) by
  // their trees, to the least fixpoint.
  ProductivityArena arena;
  std::vector<std::pair<size_t, ProductivityTree>> trees;  // (rule index, body)
  for (size_t i = 0; i < n; ++i) {
    const Rule& rule = rules_[i];
    if (rule.discarded || rule.body.empty() || productive[i]) continue;
    trees.emplace_back(i, ProductivityTree(rule.body, index_of_name_, &arena));
  }
  // Invariant: `productive` only grows; stop when a round adds nothing.
  for (bool changed = true; changed;) {
    changed = false;
    for (const auto& [index, tree] : trees) {
      if (!productive[index] && tree.Derives(productive)) {
        productive[index] = 1;
        changed = true;
      }
    }
  }
  std::vector<std::string> unproductive;
  for (const auto& entry : trees) {
    if (!productive[entry.first]) unproductive.push_back(rules_[entry.first].name);
  }
  return unproductive;
}

std::string RuleSet::Print() const {
  std::string out;
  for (const Rule& rule : rules_) {
    if (rule.discarded) continue;
    out += rule.name;
    out += rule.attribute;
    out += " ::= ";
    out += rule.body;
    out.push_back('\n');
  }
  return out;
}

}  // namespace xg2
