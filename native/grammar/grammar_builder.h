// Builds a GrammarAst node by node: the typed way for a frontend to produce the grammar IR
// without writing EBNF text for ParseEbnf to read back (issue 39). It applies exactly the
// simplifications the EBNF parser applies (frontends/ebnf/ebnf_parser.cc), so a frontend that
// builds what its printed EBNF spells gets the same nodes, in the same order, as a parse of
// that text would: the differential tests compare the two.
//
// The result is a tree: every node has one parent. The passes after the frontend
// (grammar/inline_rules.h, grammar/sink_leading_terminals.h) rewrite nodes in place, so
// identical bodies are shared one level up, as rules (a frontend's hash-consed fragments,
// frontends/json_schema/ebnf_builder.h), not as shared nodes.
#ifndef XG2_GRAMMAR_GRAMMAR_BUILDER_H_
#define XG2_GRAMMAR_GRAMMAR_BUILDER_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "grammar/grammar_ast.h"

namespace xg2 {

// The tallest expression tree a grammar may hold (the EBNF parser's limit too: it checks
// that the two agree). Deeper trees would make the recursive passes overflow the stack.
constexpr int kMaxExpressionHeight = 2000;

class GrammarBuilder {
 public:
  GrammarBuilder() = default;

  // Expression nodes. Each returns the id of the node that denotes the expression, which
  // is a child itself where the parser would return the child ({1,1}, one-element lists).
  ExprId Empty();
  // `bytes` may be empty (then Empty()).
  ExprId Bytes(std::string bytes);
  // `ranges` normalised (NormalizeRanges) and non-empty. A frontend that keeps its classes for
  // the process passes them borrowed (ExprRanges::Borrow): the node then holds no copy.
  ExprId CharClass(ExprRanges ranges);
  ExprId RuleRef(RuleId rule);
  // No children: Empty(); one: that child.
  ExprId Sequence(const ExprId* children, size_t count);
  // At least one child; one: that child.
  ExprId Choice(const ExprId* children, size_t count);
  // {1,1} is `child` and {0,0} the empty string; max < 0 means unbounded. A bound over the
  // compile limit's max_repetition_bound is a ResourceLimitError, as in the parser.
  ExprId Repeat(ExprId child, int32_t min, int32_t max);
  // Appends the nodes of `source`'s expression `root` (which names no token set or tag
  // dispatch) to this grammar and returns the id of its copy. A reference to source rule r
  // becomes one to rule_of[r] (`rule_of` may be empty when the expression names no rule).
  ExprId Graft(const GrammarAst& source, ExprId root, const std::vector<RuleId>& rule_of = {});

  // Appends `nodes` (children before parents, child ids relative to nodes[0]; a kRuleRef's
  // rule id indexes `rule_of`) whose trees have the heights `heights`, and returns the id the
  // first one gets: a body lowered once and reused (frontends/json_schema/ebnf_builder.cc).
  // `nodes` must live for the process: the copies borrow their bytes and ranges
  // (grammar/expr_payloads.h).
  ExprId AppendLasting(const std::vector<ExprNode>& nodes, const std::vector<int>& heights,
                       const std::vector<RuleId>& rule_of);
  size_t node_count() const { return ast_.nodes.size(); }
  // Makes room for `count` nodes in all, for a frontend that knows about how many it adds.
  void ReserveNodes(size_t count) {
    ast_.nodes.reserve(count);
    heights_.reserve(count);
  }

  // Rules: a name (unique within the grammar) first, the body later, so that bodies can
  // refer to rules defined after them.
  RuleId AddRule(const std::string& name);
  // The rule named `name`, or -1.
  RuleId FindRule(const std::string& name) const;
  // `lookahead` -1 when the rule has none.
  void DefineRule(RuleId rule, ExprId body, ExprId lookahead = -1);
  // Gives `rule` a JSON character count, as `name[json_chars=min..max]` does in EBNF
  // (grammar_ast.h, RuleDef::min_json_chars; max -1: unbounded).
  void SetJsonCharCount(RuleId rule, int32_t min, int32_t max);
  // Marks `rule` as `name[unique_item]` or `name[unique_items]` (grammar_ast.h, RuleDef).
  void SetUniqueItem(RuleId rule) { ast_.rules[rule].unique_item = true; }
  void SetUniqueItems(RuleId rule) { ast_.rules[rule].unique_items = true; }

  // The grammar, rooted at `root`. Every rule must be defined. The builder is empty after.
  GrammarAst Finish(RuleId root);

 private:
  // Adds `node` after checking the height of the tree it roots (moved straight into the node
  // table: a node is about a hundred bytes).
  ExprId Add(ExprNode&& node);
  ExprId AddCompound(ExprKind kind, const ExprId* children, size_t count);

  GrammarAst ast_;
  std::vector<int> heights_;  // heights_[id]: height of the tree under node id
  std::unordered_map<std::string, RuleId> rule_ids_;

 public:
  // ---- Token-level terminals, tag dispatches and whole grammars (structural tags) ----

  // `Token(id)`: the token `id` and only it, as its token-literal spelling (a kBytes node,
  // grammar/token_literal.h). An id above kMaxTokenLiteralId is a GrammarSyntaxError, as in
  // the parser.
  ExprId TokenLiteral(int32_t id);
  // `TokenSet(ids)` (excluded false; `ids` non-empty) or `ExcludeToken(ids)` (excluded true):
  // one whole token of the set (grammar_ast.h, TokenSetDef), as the marker of its index in
  // the grammar's token sets (equal sets share one index). Ids as TokenLiteral's.
  ExprId TokenSet(std::vector<int32_t> ids, bool excluded);
  // Defines `rule` as the TagDispatch `def` (grammar/tag_dispatch.h). A tag dispatch is only
  // ever a whole rule body (grammar_ast.h, kTagDispatch), so this is the one way to build one;
  // a frontend lifts one written inside an expression into a rule of its own, as the parser
  // does. Invariants: every tag's text is non-empty and names an added rule; no stop or
  // excluded string is empty.
  void DefineTagDispatchRule(RuleId rule, TagDispatchDef def);
  // Defines `rule` as the automaton literal `literal` (grammar/automaton_literal.h; grammar_ast.h,
  // kAutomaton): like a tag dispatch, only ever a whole rule body.
  void DefineAutomatonRule(RuleId rule, std::shared_ptr<const AutomatonLiteral> literal);
  // Gives `rule` a token budget, as `name[max_tokens=N]` does in EBNF (max_tokens >= 0).
  void SetMaxTokens(RuleId rule, int32_t max_tokens);
  // Moves every rule of `source` into this grammar, named `prefix + name`, with its bodies,
  // lookaheads, attributes, token sets (re-indexed here) and tag dispatches, and returns the
  // ids its rules get, in source order. Its node table lists children before parents (what
  // the parser and this builder produce). A name already taken is a GrammarSyntaxError.
  std::vector<RuleId> Embed(GrammarAst source, const std::string& prefix);
  // Finish(root), with the rules listed in `order` (every rule id once) and the nodes, token
  // sets and tag dispatches numbered as a parse of the grammar's printed EBNF numbers them:
  // rule by rule, each body then its lookahead, children before parents, left to right, each
  // set and dispatch at its first mention. Nodes no rule reaches are dropped. So a frontend
  // that builds rules in an order of its own gets the grammar ParseEbnf(PrintEbnf(grammar))
  // returns, node for node (grammar/grammar_ast_equality.h).
  GrammarAst FinishInPrintedOrder(RuleId root, const std::vector<RuleId>& order);

  // ---- Inspecting what is built ----

  // The grammar built so far: every node added, every rule added (a rule not yet defined has
  // body -1). For a frontend that decides what to build next from what it built (the Lark
  // frontend's %ignore analysis, frontends/lark/lark_ignore.h). Valid until the next addition.
  const GrammarAst& built() const { return ast_; }
};

}  // namespace xg2

#endif  // XG2_GRAMMAR_GRAMMAR_BUILDER_H_
