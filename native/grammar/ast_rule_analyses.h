// Whole-grammar analyses computed on the grammar AST, before (and without) any rule DFA:
// what building rule DFAs on first use needs at compile time (docs/lazy_rule_dfas.md, step 2).
// Each replaces a pass of the FSM builder that reads every rule DFA today:
//   * AstRuleNullable     - the nullability fixpoint over the rule DFAs (fsm_builder.cc)
//   * ComputeAstByteSets  - FIRST and FOLLOW bytes per rule and per expression: with a built
//                           node's own edges, a bound on its leave set (follow_sets.h)
//   * FindAstRightLinear  - the pure right-linear rules and the groups that right-linear
//                           merging forms (right_linear_merge.h)
//   * DecideRuleBuildPolicy - which rules must be built at compile, and a bound on the nodes
//                           of the others
// A lazy compile (lazy_rule_builder.h) runs the nullability and the policy; in every whole
// build they run in debug and sanitizer builds only, where ast_analysis_checks.h compares
// them with the DFA-side results.
//
// The AST read here is the FSM builder's input (after inlining and sinking). Lookahead
// assertions are never a context: like the DFA passes, the analyses ignore them.
#ifndef XG2_GRAMMAR_AST_RULE_ANALYSES_H_
#define XG2_GRAMMAR_AST_RULE_ANALYSES_H_

#include <bitset>
#include <cstdint>
#include <vector>

#include "grammar/byte_set.h"
#include "grammar/grammar_ast.h"
#include "grammar/grammar_fsm.h"

namespace xg2 {
namespace fsm_build {
class LoweringContext;
}  // namespace fsm_build

// The nodes of each rule's body (not its lookahead), children before parents (a post-order
// of the body's expression DAG; a node shared inside one body is listed once). The bodies of
// rules that inlining dropped are not listed. Shared by the analyses below.
struct RuleBodyOrder {
  std::vector<int32_t> begin;  // per rule, into nodes; begin[rules] = nodes.size()
  std::vector<ExprId> nodes;
  std::vector<std::vector<RuleId>> callers;  // per rule: the rules whose body refers to it
};
RuleBodyOrder ComputeRuleBodyOrder(const GrammarAst& ast);

// Whether each rule derives the empty string: the least fixpoint over the rule bodies. A rule
// that counts at least one JSON character (min_json_chars > 0) is never nullable; a
// TagDispatch body is nullable exactly when it may stop at end of sequence (its free text may
// then end before any byte). Equal to the DFA fixpoint (ComputeRuleNullable in fsm_builder.cc)
// on every rule but the members emptied by right-linear merging: those are unreachable once
// merged (no rule edge leads to them), their DFA is the empty language and so not nullable,
// and the value here is that of their language, which is what a later build of the rule
// reads. Checked in ast_analysis_checks.cc.
struct AstNullability {
  std::vector<uint8_t> rule;  // per rule
  std::vector<uint8_t> expr;  // per expression node a rule body reaches (0 elsewhere)
};
AstNullability AstRuleNullable(const GrammarAst& ast, const RuleBodyOrder& order);

// The rules the Earley parser predicts from the root before it reads a byte: the root, and
// every rule a start rule refers to where only nullable expressions come before the reference
// in its body (a sequence's children up to its first non-nullable one, every alternative, a
// repetition's body). A superset of what the start of the root's DFA predicts (lowering
// only removes references, by inlining or merging), so a lazy compile that builds these rules
// leaves the matcher's start nothing to build. One visit per expression node.
std::vector<uint8_t> AstStartRules(const GrammarAst& ast, const AstNullability& nullable);

// FIRST and FOLLOW byte sets (one byte of context, as follow_sets.h; the classic LL(1) sets
// over bytes, rule references read through).
//   first[e]:  bytes that can start a non-empty string of e.
//   follow[e]: bytes that can come right after a string of e, wherever e occurs in a rule body
//              (an expression node shared by several parents gets the union).
//   rule_first[r] = first[body of r]; rule_follow[r]: bytes that can follow a completion of r
//   at any of its references. The root's follow is what its references give (none: empty).
// Over-approximations by design: every reference counts as a context whether or not the root
// reaches it, a TagDispatch's free text counts as any byte (its first bytes, and the follow
// of each tag's rule), and a repetition with more than one iteration counts its own first
// bytes as a follow of its child. Costs one pass over each rule body per growth of the
// rule's set (a set only grows, at most 256 times; on grammars of the bench sample a pass or
// two).
struct AstByteSets {
  std::vector<ByteSet> first, follow;            // per expression node
  std::vector<ByteSet> rule_first, rule_follow;  // per rule
};
AstByteSets ComputeAstByteSets(const GrammarAst& ast, const RuleBodyOrder& order, const AstNullability& nullable);

// Right-linear rules decided on the AST, as right_linear_merge.h decides them on the DFAs.
// A rule is pure right-linear when it is not `excluded` (it keeps its own items, has a
// TagDispatch body, or holds a counted loop: the caller says which), and every rule reference
// in its body is a tail call of a pure right-linear rule. A reference is a tail call when
// nothing of the body can follow it: it is the body, or the last child of a sequence (only
// kEmpty children after it) that is itself in tail position, or a child of a choice or of a
// repetition of at most one iteration in tail position. Entries: the root, and every rule an
// impure rule refers to; a group is a pure entry with references and the pure rules its tail
// calls reach.
struct AstRightLinear {
  std::vector<uint8_t> pure;   // per rule
  std::vector<uint8_t> entry;  // per rule
  std::vector<uint8_t> calls;  // per rule: its body refers to a rule
};
AstRightLinear FindAstRightLinear(const GrammarAst& ast, const std::vector<uint8_t>& excluded);

// The members of the group of pure entry `entry` (the entry first, then in the order a
// breadth-first walk of tail calls meets them), or an empty list when it makes no group (it
// refers to no rule).
std::vector<RuleId> AstRightLinearGroup(const GrammarAst& ast, const AstRightLinear& rules, RuleId entry);

// Whether each rule's DFA must be built while the grammar compiles, and why (bits of
// EagerReason), so that every error a rule build can raise is raised by the compile
// (docs/lazy_rule_dfas.md, "Errors stay at compile"): a count's automaton and its explosion
// error; a budget's "calls no other rule" check; the unique-item roles, whose checks and
// re-check positions read the DFAs of the item rules and of everything they call; a
// TagDispatch's invalid parameters. A lookahead assertion's DFA (built apart from the rule)
// is always built at compile; the rule itself need not be (its "lookahead on a nullable rule"
// check reads AstRuleNullable).
enum EagerReason : uint8_t {
  kBuildOnFirstUse = 0,
  kCountsJsonChars = 1 << 0,
  kTokenBudget = 1 << 1,
  kUniqueItemRole = 1 << 2,       // [unique_item] or [unique_items]
  kCalledByUniqueItem = 1 << 3,   // reached by references from a [unique_item] rule
  kTagDispatchBody = 1 << 4,
  kNoNodeBound = 1 << 5,          // holds a compressed repetition (see lazy_node_bound)
};
struct RuleBuildPolicy {
  std::vector<uint8_t> eager;  // per rule: EagerReason bits, 0 for a rule built on first use
  // Per rule: an upper bound on the nodes one build of the rule keeps in the node budget,
  // its DFA's and its synthetic rules' (and those of fragments first built by it;
  // ast_build_policy.cc gives the argument); 0 for an eager rule. A grammar whose eager
  // rules and the total fit the budget can build the rest on first use without a
  // ResourceLimitError.
  std::vector<int64_t> lazy_node_bound;
  // Per rule: an upper bound on the nodes one build of the rule holds at once beyond what
  // it keeps (the NFA of a try, and the states of a try that falls back); 0 for an eager rule.
  std::vector<int64_t> lazy_transient_bound;
  // LazyNodeBound of the rules built on first use (the eager ones built).
  int64_t total_lazy_node_bound = 0;
};
RuleBuildPolicy DecideRuleBuildPolicy(const GrammarAst& ast, const FsmBuildLimits& limits);

// DecideRuleBuildPolicy in two steps, on a lowering context of the caller's: the eager rules
// (bounds left 0), then the bounds of the others. `ctx` must be the context the lazy builds
// will lower with, in the state it has before the first of them: a fragment it has built
// (LoweringContext::BuiltFragment) counts its DFA's exact size, where one not built yet
// counts a bound of it and is charged to every rule that copies it.
RuleBuildPolicy DecideEagerRules(const GrammarAst& ast, fsm_build::LoweringContext* ctx);
void BoundLazyRules(const GrammarAst& ast, fsm_build::LoweringContext* ctx, RuleBuildPolicy* policy);

// What the budget must hold for every rule not marked in `built` (one flag per rule) to be
// built later, one build at a time: the saturating sum of their lazy_node_bound, plus the
// largest of their lazy_transient_bound. A lazy compile that leaves exactly those rules
// unbuilt needs this much of the budget left after its own builds.
int64_t LazyNodeBound(const RuleBuildPolicy& policy, const std::vector<uint8_t>& built);

}  // namespace xg2

#endif  // XG2_GRAMMAR_AST_RULE_ANALYSES_H_
