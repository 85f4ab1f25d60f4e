// The debug checks of ast_analysis_checks.h.
#include "grammar/ast_analysis_checks.h"

#include <algorithm>
#include <string>
#include <unordered_map>

#include "grammar/ast_rule_analyses.h"
#include "grammar/follow_sets.h"
#include "support/dcheck.h"

namespace xg2 {
namespace fsm_build {
namespace {

[[noreturn]] void Disagree(const char* analysis, const std::string& rule, const std::string& detail) {
  throw InternalError("internal error: the AST's " + std::string(analysis) + " disagrees with the rule DFAs' at rule '" +
                      rule + "': " + detail);
}

// Per FSM rule (the grammar's, then the synthetic ones), the AST's nullability, FIRST and
// FOLLOW: a synthetic rule's are those of the expression it is the body of (what
// AstRuleByteContexts gives the mask cache, from the analyses this check already has).
RuleByteContexts SetsPerFsmRule(const GrammarAst& ast, const AstNullability& nullable, const AstByteSets& bytes,
                                const AstCheckRecord& record) {
  RuleByteContexts sets{nullable.rule, bytes.rule_first, bytes.rule_follow};
  for (ExprId body : record.synthetic_body) {
    sets.nullable.push_back(nullable.expr[body]);
    sets.first.push_back(bytes.first[body]);
    sets.follow.push_back(bytes.follow[body]);
  }
  return sets;
}

void CheckNullability(const GrammarAst& ast, const GrammarFsm& fsm, const RuleByteContexts& sets, const AstCheckRecord& record) {
  for (RuleId r = 0; r < fsm.num_rules(); ++r) {
    const bool emptied = static_cast<size_t>(r) < record.right_linear.emptied.size() && record.right_linear.emptied[r];
    const bool expected = emptied ? false : sets.nullable[r];
    if (fsm.rule_nullable[r] != expected) {
      Disagree("nullability", fsm.rule_names[r],
               std::string("the DFA fixpoint says ") + (fsm.rule_nullable[r] ? "nullable" : "not nullable"));
    }
  }
}

// The leave set a lazy build gives each node of rule r from its own DFA alone
// (LeaveBytesFromContexts, what the mask cache of a lazily built grammar reads): the rule's
// inner bytes (its byte edges, the AST FIRST of its callees, and what follows a nullable
// callee inside the rule) and the AST FOLLOW of the rule where it can complete.
//
// Why follow_sets.cc's sets are contained in these. A rule DFA's language, over bytes and
// rule ids as letters, is its body's with each reference (and each synthetic rule, standing
// for its body expression) as one letter: subset construction and minimisation keep the
// language, right-linear merging replaces a tail call by the callee's language, a count
// only removes strings, and an emptied member has no strings and no callers. Expanding a
// callee letter to its rule's strings, the bytes that can start a callee are within its
// AST FIRST, and those that can come after a letter in any rule's strings, or after its
// completion in the caller's context, are within the AST FOLLOW of that occurrence (the
// classic FIRST/FOLLOW construction, over an expression where the DFA reads a word).
// ComputeLeaveBytes takes those unions over the same edges: its inner[start(c)] is within
// FIRST(c), its follow[c] within FOLLOW(c), and it treats nullability as the FSM's, which is
// the AST's on every rule with a caller (CheckNullability). The bound here treats the rule's
// own edges exactly as ComputeLeaveBytes does, so each of its sets is contained.
void CheckLeaveSets(const GrammarFsm& fsm, const RuleByteContexts& sets) {
  const LeaveSets actual = ComputeLeaveBytes(fsm);
  for (const auto& [n, bound] : LeaveBytesFromContexts(fsm, sets, 0, fsm.num_nodes())) {
    if ((actual[n] & ~bound).any()) {
      Disagree("FIRST/FOLLOW bytes", fsm.rule_names[fsm.node_rule[n]],
               "node " + std::to_string(n) + " can be left by " + std::to_string((actual[n] & ~bound).count()) +
                   " bytes outside the AST's bound");
    }
  }
}

// Whether each FSM rule reaches a synthetic rule through rule edges (itself included).
std::vector<uint8_t> ReachesSynthetic(const GrammarAst& ast, const AstCheckRecord& record) {
  const size_t n = record.callees.size(), num_ast = ast.rules.size();
  std::vector<uint8_t> reaches(n, 0);
  for (size_t r = num_ast; r < n; ++r) reaches[r] = 1;
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t r = 0; r < n; ++r) {
      if (reaches[r]) continue;
      for (RuleId c : record.callees[r]) {
        if (reaches[c]) {
          reaches[r] = 1;
          changed = true;
          break;
        }
      }
    }
  }
  return reaches;
}

// Right-linear rules. Where the FSM holds a synthetic rule (a lifted repetition, a split part,
// a repetition body) the rule DFAs call rules that the AST does not have, so the two sides are
// compared only on the rules that reach none. A rule whose body holds a compressible
// repetition is never pure on the AST side (the counted loop that excludes it from merging
// depends on the repetition body's DFA: compressible repetitions below about a token's
// length of copies lower to copies without a loop); the FSM then may find it pure, so there
// the check is one way only: pure on the AST implies pure in the FSM. Where neither the rule
// nor anything it reaches holds such a repetition, pure, entries and groups are equal.
void CheckRightLinear(const GrammarAst& ast, const GrammarFsm& fsm, const AstCheckRecord& record) {
  const RightLinearReport& dfa_side = record.right_linear;
  if (dfa_side.pure.empty()) return;  // no merging pass ran
  const size_t num_ast = ast.rules.size();
  std::vector<uint8_t> excluded(num_ast, 0);
  for (size_t r = 0; r < num_ast; ++r) {
    excluded[r] = ast.rules[r].keeps_own_items() || ast.node(ast.rules[r].body).kind == ExprKind::kTagDispatch ||
                  record.has_compressible[r];
  }
  const AstRightLinear ast_side = FindAstRightLinear(ast, excluded);
  const std::vector<uint8_t> reaches_synthetic = ReachesSynthetic(ast, record);
  // Whether the rule or a rule it reaches holds a compressible repetition.
  std::vector<uint8_t> reaches_loop(num_ast, 0);
  for (size_t r = 0; r < num_ast; ++r) reaches_loop[r] = record.has_compressible[r];
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t r = 0; r < num_ast; ++r) {
      if (reaches_loop[r] || reaches_synthetic[r]) continue;
      for (RuleId c : record.callees[r]) {
        if (reaches_loop[c]) {
          reaches_loop[r] = 1;
          changed = true;
          break;
        }
      }
    }
  }
  const bool any_synthetic = record.callees.size() > num_ast;
  // A TagDispatch reaches its tags' rules through its dispatch, not through rule edges of its
  // DFA: the DFA pass does not count that call as making an entry, the AST side does (a build
  // on first use must know the rule is reached). Entries are compared on the other rules.
  // The dispatches are those the rules' bodies hold (the ones the build lowers), not the
  // whole table: an entry there that no rule holds would excuse rules no dispatch reaches.
  std::vector<uint8_t> dispatched(num_ast, 0);
  for (size_t r = 0; r < num_ast; ++r) {
    const ExprNode& body = ast.node(ast.rules[r].body);
    if (body.kind != ExprKind::kTagDispatch) continue;
    for (const TagDispatchDef::Tag& tag : ast.tag_dispatches[body.tag_dispatch].tags) {
      if (tag.rule < 0 || static_cast<size_t>(tag.rule) >= num_ast) {
        Disagree("right-linear rules", fsm.rule_names[r],
                 "a dispatch tag names rule " + std::to_string(tag.rule) + " of " + std::to_string(num_ast));
      }
      dispatched[tag.rule] = 1;
    }
  }
  for (size_t r = 0; r < num_ast; ++r) {
    if (reaches_synthetic[r]) continue;
    const std::string& name = fsm.rule_names[r];
    if (ast_side.pure[r] && !dfa_side.pure[r]) Disagree("right-linear rules", name, "pure on the AST only");
    if (reaches_loop[r]) continue;
    if (ast_side.pure[r] != dfa_side.pure[r]) Disagree("right-linear rules", name, "pure in the DFAs only");
    if (any_synthetic) continue;  // a synthetic caller can make an entry of its own
    if (!dispatched[r] && ast_side.entry[r] != dfa_side.entry[r]) Disagree("right-linear rules", name, "entries differ");
    if (!ast_side.pure[r] || !ast_side.entry[r]) continue;
    std::vector<RuleId> group = AstRightLinearGroup(ast, ast_side, static_cast<RuleId>(r));
    std::vector<RuleId> members;
    if (!record.callees[r].empty()) {
      std::vector<uint8_t> in(num_ast, 0);
      members.push_back(static_cast<RuleId>(r));
      in[r] = 1;
      for (size_t m = 0; m < members.size(); ++m) {
        for (RuleId c : record.callees[members[m]]) {
          if (!in[c]) in[c] = 1, members.push_back(c);
        }
      }
    }
    std::sort(group.begin(), group.end());
    std::sort(members.begin(), members.end());
    if (group != members) {
      Disagree("right-linear rules", name,
               "its group has " + std::to_string(group.size()) + " members, " + std::to_string(members.size()) +
                   " in the DFAs");
    }
  }
}

// Node bounds: each rule the policy leaves to first use, with the synthetic rules its build
// made (named after it: `rule#rep3`, `rule#part7#part9`), holds no more DFA nodes than its
// bound. (Its fragments' DFAs and its transient NFAs are in the bound but not measured.)
void CheckNodeBounds(const GrammarAst& ast, const FsmBuildLimits& limits, const GrammarFsm& fsm,
                     const AstCheckRecord& record) {
  const RuleBuildPolicy policy = DecideRuleBuildPolicy(ast, limits);
  const size_t num_ast = ast.rules.size();
  std::vector<int64_t> nodes(record.dfa_nodes.begin(), record.dfa_nodes.begin() + num_ast);
  std::unordered_map<std::string, RuleId> by_name;
  for (size_t r = 0; r < num_ast; ++r) by_name.emplace(ast.rules[r].name, static_cast<RuleId>(r));
  for (size_t s = num_ast; s < record.dfa_nodes.size(); ++s) {
    const std::string& name = fsm.rule_names[s];
    auto owner = by_name.find(name.substr(0, name.find('#')));
    if (owner != by_name.end()) nodes[owner->second] += record.dfa_nodes[s];
  }
  for (size_t r = 0; r < num_ast; ++r) {
    if (policy.eager[r] == kBuildOnFirstUse && nodes[r] > policy.lazy_node_bound[r]) {
      Disagree("node bound", ast.rules[r].name,
               std::to_string(nodes[r]) + " DFA nodes over a bound of " + std::to_string(policy.lazy_node_bound[r]));
    }
  }
}

}  // namespace

void RecordRuleDfas(const GrammarAst& ast, const std::vector<Dfa>& dfas, LoweringContext* ctx, AstCheckRecord* record) {
  record->dfa_nodes.clear();
  record->callees.clear();
  for (const Dfa& dfa : dfas) {
    record->dfa_nodes.push_back(dfa.size());
    std::vector<RuleId> callees;
    for (const RuleEdge& e : dfa.rule_edges) callees.push_back(e.rule);
    std::sort(callees.begin(), callees.end());
    callees.erase(std::unique(callees.begin(), callees.end()), callees.end());
    record->callees.push_back(std::move(callees));
  }
  record->synthetic_body.clear();
  for (const LoweringContext::Synthetic& synthetic : ctx->synthetic()) record->synthetic_body.push_back(synthetic.body);
  record->has_compressible.clear();
  for (const RuleDef& rule : ast.rules) record->has_compressible.push_back(ctx->ContainsCompressible(rule.body));
}

void CheckAstAnalyses(const GrammarAst& ast, const FsmBuildLimits& limits, const GrammarFsm& fsm,
                      const AstCheckRecord& record) {
  const RuleBodyOrder order = ComputeRuleBodyOrder(ast);
  const AstNullability nullable = AstRuleNullable(ast, order);
  const AstByteSets bytes = ComputeAstByteSets(ast, order, nullable);
  const RuleByteContexts sets = SetsPerFsmRule(ast, nullable, bytes, record);
  CheckNullability(ast, fsm, sets, record);
  CheckLeaveSets(fsm, sets);
  CheckRightLinear(ast, fsm, record);
  CheckNodeBounds(ast, limits, fsm, record);
}

}  // namespace fsm_build
}  // namespace xg2
