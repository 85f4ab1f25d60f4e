// Rule DFAs built on first use (docs/lazy_rule_dfas.md). The compile builds the rules that
// must be eager (DecideRuleBuildPolicy: counting, budgeted and TagDispatch rules, rules holding
// a compressible repetition), the root and the rules the parser predicts before the first
// byte (AstStartRules: a matcher's start then builds nothing), and keeps with the grammar
// what lowering one more rule needs: the AST, the lowering context (its synthetic-rule ids,
// lifts, splits and fragments), the shared-table key writer and what is left of the node
// budget.
// LazyRuleBuilder::Build lowers one rule, and the synthetic rules its lowering creates, onto a
// copy of the latest snapshot (grammar_fsm.h, "Snapshots"); RuleDfaSnapshots publishes it.
//
// Errors stay at compile: every rule whose build can raise one is eager, the compile builds
// the fragments the other rules copy (so that their sizes are exact), and it requires the
// budget left after its own builds to cover the AST bound on the nodes of every rule left
// unbuilt (LazyNodeBound). Where the bound of every waiting rule does not fit, the compile
// also builds the rules with the largest bounds (the mixed choice: their DFAs are usually far
// below their bounds) and leaves the rest; where even that does not fit, or where the grammar
// has unique items (their checks read the DFAs of every caller of an item rule), the grammar
// is built whole. Build lowers without the shared rule-DFA table (see there). So Build
// cannot fail.
// Order: lowering decisions (a lift or a split) and synthetic rule ids depend on the order
// rules are built in; the languages do not. A partial build merges no right-linear rules.
// Threads: Build is not thread-safe; RuleDfaSnapshots runs one build at a time per grammar.
#ifndef XG2_GRAMMAR_LAZY_RULE_BUILDER_H_
#define XG2_GRAMMAR_LAZY_RULE_BUILDER_H_

#include <cstddef>
#include <cstdint>
#include <memory>

#include "grammar/ast_rule_analyses.h"
#include "grammar/follow_sets.h"
#include "grammar/grammar_ast.h"
#include "grammar/grammar_fsm.h"
#include "grammar/lowering_context.h"
#include "grammar/shared_rule_dfas.h"

namespace xg2 {

class LazyRuleBuilder;

struct LazyGrammarFsm {
  GrammarFsm fsm;                            // the first snapshot
  std::shared_ptr<LazyRuleBuilder> builder;  // null: every rule is built (as BuildGrammarFsm)
};

// BuildGrammarFsm, leaving unbuilt every rule that may wait where the grammar allows it (see
// the file comment). Raises what BuildGrammarFsm raises, at the same inputs.
LazyGrammarFsm BuildGrammarFsmLazily(GrammarAst ast, const FsmBuildLimits& limits = {});

class LazyRuleBuilder {
 public:
  LazyRuleBuilder(GrammarAst ast, const FsmBuildLimits& limits);
  LazyRuleBuilder(const LazyRuleBuilder&) = delete;
  LazyRuleBuilder& operator=(const LazyRuleBuilder&) = delete;

  // `latest` (the newest snapshot of the grammar this builder compiled) with grammar rule
  // `rule`, unbuilt there, built: its nodes, then those of each synthetic rule its lowering
  // created, appended at the end of the node space.
  GrammarFsm Build(const GrammarFsm& latest, RuleId rule);

  // The AST byte contexts (grammar/follow_sets.h) of every rule of the latest snapshot this
  // builder made: the grammar's rules, then the synthetic rules lowering made so far. The mask
  // cache of a lazily built grammar takes every leave set from them. A build that made no
  // synthetic rule returns the same object; the grammar rules' contexts never change (they
  // are read off the AST alone).
  std::shared_ptr<const RuleByteContexts> ByteContexts();

  // What the builder keeps for later builds (the AST and the lowering state, roughly).
  size_t MemoryBytes() const;

  // What is left of the node budget; the compile left at least the bound of the rules it
  // left unbuilt (RuleBuildPolicy), so no build makes it negative.
  int64_t budget_left() const { return budget_; }

 private:
  friend LazyGrammarFsm BuildGrammarFsmLazily(GrammarAst ast, const FsmBuildLimits& limits);
  // Per-rule entries for the rules lowering made since `fsm` was built (unbuilt until appended).
  void AddSyntheticRules(GrammarFsm* fsm) const;
  bool BuildFragmentsOf(const RuleBuildPolicy& policy);

  const GrammarAst ast_;  // declared first: ctx_ and body_keys_ refer to it
  const FsmBuildLimits limits_;
  // The AST analyses, each computed once: the body order and the nullability when the
  // compile decides to leave rules unbuilt, the byte sets on the first ByteContexts (the
  // order is then dropped). The AST never changes and a synthetic rule's body is one of its
  // expressions, so every later ByteContexts reads the same sets.
  RuleBodyOrder order_;
  AstNullability nullable_;
  std::unique_ptr<const AstByteSets> byte_sets_;
  fsm_build::LoweringContext ctx_;
  fsm_build::BodyKeyWriter body_keys_;
  int64_t budget_;  // what the compile left of limits_.max_nodes
  std::shared_ptr<const RuleByteContexts> contexts_;  // ByteContexts' last answer
};

}  // namespace xg2

#endif  // XG2_GRAMMAR_LAZY_RULE_BUILDER_H_
