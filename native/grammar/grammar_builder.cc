#include "grammar/grammar_builder.h"

#include <algorithm>
#include <utility>

#include "grammar/token_literal.h"

#include "support/compile_limits.h"
#include "support/dcheck.h"
#include "support/error.h"

namespace xg2 {

namespace {

// Appends a default node of `kind` whose tree is `height` tall (checked by the caller) and
// returns it, to be filled in place: the hot builders (the JSON Schema frontend lowers every
// fragment node through them) skip building a node aside and moving it, about a hundred
// bytes, into the table.
ExprNode& AppendInPlace(std::vector<ExprNode>* nodes, std::vector<int>* heights, ExprKind kind, int height) {
  XG2_DCHECK(height >= 1 && height <= kMaxExpressionHeight, "a checked height");
  heights->push_back(height);
  ExprNode& node = nodes->emplace_back();
  node.kind = kind;
  return node;
}

ExprId LastId(const std::vector<ExprNode>& nodes) { return static_cast<ExprId>(nodes.size() - 1); }

}  // namespace

ExprId GrammarBuilder::Empty() {
  AppendInPlace(&ast_.nodes, &heights_, ExprKind::kEmpty, 1);
  return LastId(ast_.nodes);
}

ExprId GrammarBuilder::Bytes(std::string bytes) {
  if (bytes.empty()) return Empty();
  AppendInPlace(&ast_.nodes, &heights_, ExprKind::kBytes, 1).bytes = std::move(bytes);
  return LastId(ast_.nodes);
}

ExprId GrammarBuilder::CharClass(ExprRanges ranges) {
  XG2_DCHECK(!ranges.empty(), "a character class matches at least one code point");
  AppendInPlace(&ast_.nodes, &heights_, ExprKind::kCharClass, 1).ranges = std::move(ranges);
  return LastId(ast_.nodes);
}

ExprId GrammarBuilder::RuleRef(RuleId rule) {
  XG2_DCHECK(rule >= 0 && static_cast<size_t>(rule) < ast_.rules.size(), "a reference names an added rule");
  AppendInPlace(&ast_.nodes, &heights_, ExprKind::kRuleRef, 1).rule_id = rule;
  return LastId(ast_.nodes);
}

ExprId GrammarBuilder::Sequence(const ExprId* children, size_t count) {
  if (count == 0) return Empty();
  return AddCompound(ExprKind::kSequence, children, count);
}

ExprId GrammarBuilder::Choice(const ExprId* children, size_t count) {
  XG2_DCHECK(count > 0, "a choice has at least one alternative");
  return AddCompound(ExprKind::kChoice, children, count);
}

namespace {

void CheckRepetitionBounds(int32_t min, int32_t max) {
  const int64_t max_bound = CurrentCompileLimits().max_repetition_bound;
  if (min > max_bound || max > max_bound) {
    throw ResourceLimitError("repetition bound exceeds the limit of " + std::to_string(max_bound));
  }
}

}  // namespace

ExprId GrammarBuilder::Repeat(ExprId child, int32_t min, int32_t max) {
  XG2_DCHECK(min >= 0 && (max < 0 || min <= max), "repetition bounds are 0 <= min <= max");
  CheckRepetitionBounds(min, max);
  if (min == 1 && max == 1) return child;
  if (max == 0) return Empty();
  const int height = heights_[child] + 1;
  if (height > kMaxExpressionHeight) {
    throw ResourceLimitError("expression nests deeper than the limit of " + std::to_string(kMaxExpressionHeight));
  }
  ExprNode& node = AppendInPlace(&ast_.nodes, &heights_, ExprKind::kRepeat, height);
  node.children = ExprChildren(&child, 1);
  node.min_repeat = min;
  node.max_repeat = max;
  return LastId(ast_.nodes);
}

ExprId GrammarBuilder::Graft(const GrammarAst& source, ExprId root, const std::vector<RuleId>& rule_of) {
  XG2_DCHECK(source.token_sets.empty() && source.tag_dispatches.empty(),
             "a grafted expression names no token set or tag dispatch");
  // Children precede their parents in a parsed grammar's node table, so one pass in id order
  // copies every node of the tree after its children. Only the tree under `root` is copied.
  std::vector<ExprId> copy_of(source.nodes.size(), -1);
  std::vector<ExprId> stack = {root};
  std::vector<uint8_t> reached(source.nodes.size(), 0);
  reached[root] = 1;
  while (!stack.empty()) {
    const ExprId id = stack.back();
    stack.pop_back();
    for (ExprId child : source.node(id).children) {
      if (!reached[child]) {
        reached[child] = 1;
        stack.push_back(child);
      }
    }
  }
  for (size_t id = 0; id < source.nodes.size(); ++id) {
    if (!reached[id]) continue;
    ExprNode node = source.nodes[id];
    if (node.kind == ExprKind::kRuleRef) {
      XG2_DCHECK(node.rule_id >= 0 && static_cast<size_t>(node.rule_id) < rule_of.size(),
                 "a grafted reference has a rule to map to");
      node.rule_id = rule_of[node.rule_id];
    }
    if (node.kind == ExprKind::kRepeat) CheckRepetitionBounds(node.min_repeat, node.max_repeat);
    if (node.kind == ExprKind::kAutomaton) {
      ast_.automata.push_back(source.automata[node.automaton]);
      node.automaton = static_cast<int32_t>(ast_.automata.size() - 1);
    }
    for (ExprId& child : node.children) {
      XG2_DCHECK(copy_of[child] >= 0, "children precede their parents in the node table");
      child = copy_of[child];
    }
    copy_of[id] = Add(std::move(node));
  }
  return copy_of[root];
}

ExprId GrammarBuilder::AppendLasting(const std::vector<ExprNode>& nodes, const std::vector<int>& heights,
                                     const std::vector<RuleId>& rule_of) {
  XG2_DCHECK(nodes.size() == heights.size(), "a height per appended node");
  const ExprId offset = static_cast<ExprId>(ast_.nodes.size());
  ast_.nodes.reserve(ast_.nodes.size() + nodes.size());
  heights_.reserve(heights_.size() + heights.size());
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (heights[i] > kMaxExpressionHeight) {
      throw ResourceLimitError("expression nests deeper than the limit of " + std::to_string(kMaxExpressionHeight));
    }
    if (nodes[i].kind == ExprKind::kRepeat) CheckRepetitionBounds(nodes[i].min_repeat, nodes[i].max_repeat);
    // Made in the table and renumbered there (no copy aside to move in); the payloads are
    // borrowed, not copied.
    const ExprNode& lasting = nodes[i];
    ExprNode& node = ast_.nodes.emplace_back();
    node.kind = lasting.kind;
    node.rule_id = lasting.rule_id;
    node.min_repeat = lasting.min_repeat;
    node.max_repeat = lasting.max_repeat;
    node.tag_dispatch = lasting.tag_dispatch;
    node.automaton = lasting.automaton;
    node.children = lasting.children;
    node.bytes = ExprBytes::Borrow(lasting.bytes);
    node.ranges = ExprRanges::Borrow(lasting.ranges);
    heights_.push_back(heights[i]);
    for (ExprId& child : node.children) {
      XG2_DCHECK(child >= 0 && static_cast<size_t>(child) < i, "appended children precede their parents");
      child += offset;
    }
    if (node.kind == ExprKind::kRuleRef) {
      XG2_DCHECK(node.rule_id >= 0 && static_cast<size_t>(node.rule_id) < rule_of.size(),
                 "an appended reference has a rule to map to");
      node.rule_id = rule_of[node.rule_id];
    }
  }
  return offset;
}

RuleId GrammarBuilder::AddRule(const std::string& name) {
  const RuleId id = static_cast<RuleId>(ast_.rules.size());
  if (!rule_ids_.emplace(name, id).second) throw GrammarSyntaxError("rule '" + name + "' is defined twice");
  RuleDef rule;
  rule.name = name;
  ast_.rules.push_back(std::move(rule));
  return id;
}

RuleId GrammarBuilder::FindRule(const std::string& name) const {
  auto found = rule_ids_.find(name);
  return found == rule_ids_.end() ? -1 : found->second;
}

void GrammarBuilder::DefineRule(RuleId rule, ExprId body, ExprId lookahead) {
  XG2_DCHECK(ast_.rules[rule].body < 0, "a rule is defined once");
  ast_.rules[rule].body = body;
  ast_.rules[rule].lookahead = lookahead;
}

void GrammarBuilder::SetJsonCharCount(RuleId rule, int32_t min, int32_t max) {
  XG2_DCHECK(min >= 0 && (max < 0 || max >= min), "a JSON character count is 0 <= min <= max");
  ast_.rules[rule].min_json_chars = min;
  ast_.rules[rule].max_json_chars = max;
}

GrammarAst GrammarBuilder::Finish(RuleId root) {
  for (const RuleDef& rule : ast_.rules) {
    XG2_DCHECK(rule.body >= 0, "rule '" + rule.name + "' is defined before the grammar is finished");
  }
  ast_.root_rule = root;
  GrammarAst ast = std::move(ast_);
  ast_ = GrammarAst();
  heights_.clear();
  rule_ids_.clear();
  return ast;
}

ExprId GrammarBuilder::Add(ExprNode&& node) {
  int height = 1;
  for (ExprId child : node.children) height = std::max(height, heights_[child] + 1);
  if (height > kMaxExpressionHeight) {
    throw ResourceLimitError("expression nests deeper than the limit of " + std::to_string(kMaxExpressionHeight));
  }
  heights_.push_back(height);
  ast_.nodes.push_back(std::move(node));
  return static_cast<ExprId>(ast_.nodes.size() - 1);
}

ExprId GrammarBuilder::AddCompound(ExprKind kind, const ExprId* children, size_t count) {
  if (count == 1) return children[0];
  int height = 1;
  for (size_t i = 0; i < count; ++i) height = std::max(height, heights_[children[i]] + 1);
  if (height > kMaxExpressionHeight) {
    throw ResourceLimitError("expression nests deeper than the limit of " + std::to_string(kMaxExpressionHeight));
  }
  AppendInPlace(&ast_.nodes, &heights_, kind, height).children = ExprChildren(children, count);
  return LastId(ast_.nodes);
}

// ---- Token-level terminals, tag dispatches and whole grammars -------------------------------

namespace {

void CheckTokenId(int32_t id) {
  if (id < 0 || id > kMaxTokenLiteralId) {
    throw GrammarSyntaxError("token id " + std::to_string(id) + " is outside [0, " +
                             std::to_string(kMaxTokenLiteralId) + "], the ids a grammar can name");
  }
}

// The token set a kBytes node's marker names (grammar/token_literal.h), or -1 when the node
// spells anything else. A marker is always a node of its own (the parser and TokenSet make
// it one), so a node is a marker exactly when it is one marker long and decodes as one.
int32_t MarkedTokenSet(const ExprNode& node) {
  if (node.kind != ExprKind::kBytes || node.bytes.size() != static_cast<size_t>(kTokenSetMarkerSize)) return -1;
  return DecodeTokenSetMarker(node.bytes, 0);
}

// FinishInPrintedOrder's renumbering: copies the trees of the rules, in the printed order,
// into a new grammar, numbering nodes, token sets and tag dispatches as a parse does.
class PrintedOrder {
 public:
  PrintedOrder(GrammarAst* source, const std::vector<RuleId>& order)
      : source_(*source), rule_at_(source->rules.size(), -1), node_at_(source->nodes.size(), -1),
        set_at_(source->token_sets.size(), -1), dispatch_at_(source->tag_dispatches.size(), -1) {
    XG2_DCHECK(order.size() == source->rules.size(), "the printed order lists every rule");
    for (size_t i = 0; i < order.size(); ++i) {
      XG2_DCHECK(order[i] >= 0 && static_cast<size_t>(order[i]) < order.size() && rule_at_[order[i]] < 0,
                 "the printed order lists every rule once");
      rule_at_[order[i]] = static_cast<RuleId>(i);
    }
    out_.nodes.reserve(source->nodes.size());
    for (RuleId rule : order) {
      RuleDef def = std::move(source_.rules[rule]);
      def.body = CopyTree(def.body);
      def.lookahead = def.lookahead < 0 ? -1 : CopyTree(def.lookahead);
      out_.rules.push_back(std::move(def));
    }
  }

  GrammarAst Take(RuleId root) {
    out_.root_rule = rule_at_[root];
    return std::move(out_);
  }

 private:
  // Moves the tree under `root` to out_ in post-order (children before parents, left to right).
  ExprId CopyTree(ExprId root) {
    std::vector<std::pair<ExprId, size_t>> stack = {{root, 0}};
    while (!stack.empty()) {
      const ExprId id = stack.back().first;
      const size_t next = stack.back().second;
      const ExprNode& node = source_.nodes[id];
      if (next < node.children.size()) {
        ++stack.back().second;
        const ExprId child = node.children[next];
        XG2_DCHECK(node_at_[child] < 0, "a grammar is a tree: every node has one parent");
        stack.push_back({child, 0});
        continue;
      }
      stack.pop_back();
      node_at_[id] = out_.AddNode(Renumbered(std::move(source_.nodes[id])));
    }
    return node_at_[root];
  }

  ExprNode Renumbered(ExprNode node) {
    for (ExprId& child : node.children) child = node_at_[child];
    if (node.kind == ExprKind::kRuleRef) node.rule_id = rule_at_[node.rule_id];
    if (const int32_t set = MarkedTokenSet(node); set >= 0) {
      XG2_DCHECK(static_cast<size_t>(set) < set_at_.size(), "a token-set marker names a set of the grammar");
      if (set_at_[set] < 0) {
        set_at_[set] = static_cast<int32_t>(out_.token_sets.size());
        out_.token_sets.push_back(source_.token_sets[set]);
      }
      node.bytes = TokenSetMarkerBytes(set_at_[set]);
    }
    if (node.kind == ExprKind::kTagDispatch) {
      XG2_DCHECK(dispatch_at_[node.tag_dispatch] < 0, "a tag dispatch is the body of one rule");
      dispatch_at_[node.tag_dispatch] = static_cast<int32_t>(out_.tag_dispatches.size());
      TagDispatchDef def = std::move(source_.tag_dispatches[node.tag_dispatch]);
      for (TagDispatchDef::Tag& tag : def.tags) tag.rule = rule_at_[tag.rule];
      out_.tag_dispatches.push_back(std::move(def));
      node.tag_dispatch = dispatch_at_[node.tag_dispatch];
    }
    if (node.kind == ExprKind::kAutomaton) {
      node.automaton = AutomatonAt(node.automaton);
    }
    return node;
  }

  // The automaton's index in out_, which lists each at its first mention.
  int32_t AutomatonAt(int32_t source_index) {
    if (automaton_at_.empty()) automaton_at_.assign(source_.automata.size(), -1);
    int32_t& at = automaton_at_[source_index];
    if (at < 0) {
      at = static_cast<int32_t>(out_.automata.size());
      out_.automata.push_back(source_.automata[source_index]);
    }
    return at;
  }

  GrammarAst& source_;
  GrammarAst out_;
  std::vector<RuleId> rule_at_;      // source rule -> printed position
  std::vector<ExprId> node_at_;      // source node -> new id (-1: not copied yet)
  std::vector<int32_t> set_at_;      // source token set -> new index
  std::vector<int32_t> dispatch_at_;  // source tag dispatch -> new index
  std::vector<int32_t> automaton_at_;  // source automaton literal -> new index
};

}  // namespace

ExprId GrammarBuilder::TokenLiteral(int32_t id) {
  CheckTokenId(id);
  ExprNode node;
  node.kind = ExprKind::kBytes;
  node.bytes = TokenLiteralBytes(id);
  return Add(std::move(node));
}

ExprId GrammarBuilder::TokenSet(std::vector<int32_t> ids, bool excluded) {
  XG2_DCHECK(excluded || !ids.empty(), "TokenSet names at least one token");
  for (int32_t id : ids) CheckTokenId(id);
  TokenSetDef set;
  set.ids = std::move(ids);
  set.excluded = excluded;
  ExprNode node;
  node.kind = ExprKind::kBytes;
  node.bytes = TokenSetMarkerBytes(ast_.AddTokenSet(std::move(set)));
  return Add(std::move(node));
}

void GrammarBuilder::DefineTagDispatchRule(RuleId rule, TagDispatchDef def) {
  for (const TagDispatchDef::Tag& tag : def.tags) {
    XG2_DCHECK(!tag.text.empty(), "a dispatch tag is not empty");
    XG2_DCHECK(tag.rule >= 0 && static_cast<size_t>(tag.rule) < ast_.rules.size(), "a dispatch tag names an added rule");
  }
  for (const std::vector<std::string>* strings : {&def.stop_strings, &def.excludes}) {
    for (const std::string& text : *strings) XG2_DCHECK(!text.empty(), "stop and excluded strings are not empty");
  }
  ExprNode node;
  node.kind = ExprKind::kTagDispatch;
  node.tag_dispatch = static_cast<int32_t>(ast_.tag_dispatches.size());
  ast_.tag_dispatches.push_back(std::move(def));
  DefineRule(rule, Add(std::move(node)));
}

void GrammarBuilder::DefineAutomatonRule(RuleId rule, std::shared_ptr<const AutomatonLiteral> literal) {
  XG2_DCHECK(literal != nullptr, "an automaton rule has its automaton");
  ExprNode node;
  node.kind = ExprKind::kAutomaton;
  node.automaton = static_cast<int32_t>(ast_.automata.size());
  ast_.automata.push_back(std::move(literal));
  DefineRule(rule, Add(std::move(node)));
}

void GrammarBuilder::SetMaxTokens(RuleId rule, int32_t max_tokens) {
  XG2_DCHECK(max_tokens >= 0, "a token budget is not negative");
  ast_.rules[rule].max_tokens = max_tokens;
}

std::vector<RuleId> GrammarBuilder::Embed(GrammarAst source, const std::string& prefix) {
  std::vector<RuleId> rule_of;
  rule_of.reserve(source.rules.size());
  for (const RuleDef& rule : source.rules) rule_of.push_back(AddRule(prefix + rule.name));
  std::vector<int32_t> set_of;
  for (TokenSetDef& set : source.token_sets) set_of.push_back(ast_.AddTokenSet(std::move(set)));
  const int32_t dispatch_base = static_cast<int32_t>(ast_.tag_dispatches.size());
  for (TagDispatchDef& def : source.tag_dispatches) {
    for (TagDispatchDef::Tag& tag : def.tags) tag.rule = rule_of[tag.rule];
    ast_.tag_dispatches.push_back(std::move(def));
  }
  const int32_t automaton_base = static_cast<int32_t>(ast_.automata.size());
  for (auto& literal : source.automata) ast_.automata.push_back(std::move(literal));
  const ExprId base = static_cast<ExprId>(ast_.nodes.size());
  ast_.nodes.reserve(ast_.nodes.size() + source.nodes.size());
  heights_.reserve(heights_.size() + source.nodes.size());
  for (size_t id = 0; id < source.nodes.size(); ++id) {
    ExprNode& node = source.nodes[id];
    int height = 1;
    for (ExprId& child : node.children) {
      XG2_DCHECK(child >= 0 && static_cast<size_t>(child) < id, "embedded children precede their parents");
      child += base;
      height = std::max(height, heights_[child] + 1);
    }
    XG2_DCHECK(height <= kMaxExpressionHeight, "an embedded grammar was built within the height limit");
    if (node.kind == ExprKind::kRuleRef) node.rule_id = rule_of[node.rule_id];
    if (node.kind == ExprKind::kTagDispatch) node.tag_dispatch += dispatch_base;
    if (node.kind == ExprKind::kAutomaton) node.automaton += automaton_base;
    if (const int32_t set = MarkedTokenSet(node); set >= 0) node.bytes = TokenSetMarkerBytes(set_of[set]);
    heights_.push_back(height);
    ast_.nodes.push_back(std::move(node));
  }
  for (size_t r = 0; r < source.rules.size(); ++r) {
    RuleDef& rule = ast_.rules[rule_of[r]];
    std::string name = std::move(rule.name);
    rule = std::move(source.rules[r]);  // every attribute comes along
    rule.name = std::move(name);
    XG2_DCHECK(rule.body >= 0, "an embedded rule is defined");
    rule.body += base;
    if (rule.lookahead >= 0) rule.lookahead += base;
  }
  return rule_of;
}

GrammarAst GrammarBuilder::FinishInPrintedOrder(RuleId root, const std::vector<RuleId>& order) {
  GrammarAst built = Finish(root);
  return PrintedOrder(&built, order).Take(root);
}

}  // namespace xg2
