// BuildGrammarFsm: the grammar AST -> GrammarFsm (grammar_fsm.h), in stages, each in a file
// of its own:
//   1. Thompson construction: AST -> epsilon-NFA over bytes + rule ids, one per rule
//      (nfa_builder.cc, with the per-grammar state in lowering_context.cc).
//   2. Subset construction: epsilon-NFA -> DFA, splitting byte ranges into disjoint pieces
//      (subset_construction.cc).
//   3. Minimisation: partition refinement, Moore for small machines, Hopcroft above
//      (dfa_minimisation.cc). Stages 1-3 for one rule, with their retries, are BuildRuleDfa
//      (rule_dfa_build.cc); a large rule body goes through the process-wide table of shared
//      rule DFAs first (shared_rule_dfas.cc).
//   4. Right-linear merging: chains of pure right-linear rules become one DFA
//      (right_linear_merge.cc).
//   5. Lookahead DFAs, flattening into GrammarFsm's CSR tables, the nullability fixpoint over
//      rules, token budgets and token-set edges (this file, token_set_edges.cc).
// A rule whose determinisation explodes is split into rules of its parts (see
// DeterminisationExplosion). Long repetitions are compressed on the way (grammar_fsm.h,
// "Repetition state compression"): step 1 lowers them as a counted loop copy plus an
// explicit tail, step 2 checks that every DFA state carries at most one counter
// consistently, and where it does not, the repetition is lifted into a synthetic rule of its
// own and the rule is lowered again.
#include <algorithm>
#include <sstream>
#include <string>
#include <vector>

#include "grammar/ast_analysis_checks.h"
#include "grammar/automaton_literal.h"
#include "grammar/fsm_appender.h"
#include "grammar/fsm_automata.h"
#include "grammar/fsm_builder_steps.h"
#include "grammar/fsm_invariants.h"
#include "grammar/grammar_fsm.h"
#include "grammar/json_char_count.h"
#include "grammar/lowering_context.h"
#include "grammar/right_linear_merge.h"
#include "grammar/rule_dfa_build.h"
#include "grammar/shared_rule_dfas.h"
#include "grammar/tag_dispatch.h"
#include "support/cancellation.h"
#include "support/dcheck.h"
#include "support/error.h"

namespace xg2 {
namespace {

using fsm_build::BodyKeyWriter;
using fsm_build::BuildRuleDfa;
using fsm_build::BuildRuleDfaShared;
using fsm_build::BuildScratch;
using fsm_build::DeterminisationExplosion;
using fsm_build::Dfa;
using fsm_build::FsmAppender;
using fsm_build::LoweringContext;
using fsm_build::AstCheckRecord;
using fsm_build::MergeRightLinearGroups;
using fsm_build::ScratchLease;

// A rule whose body is a TagDispatch is lowered directly to its (deterministic) machine.
Dfa BuildTagDispatchDfa(const GrammarAst& ast, const RuleDef& rule, int64_t* budget) {
  RuleMachine machine = BuildTagDispatchMachine(
      ast.tag_dispatches[ast.node(rule.body).tag_dispatch], rule.name, budget);
  Dfa dfa;
  for (const RuleMachine::Node& node : machine.nodes) {
    dfa.AddNode(node.accepting);
    for (const ByteEdge& e : node.byte_edges) dfa.AddByteEdge(e);
    for (const RuleEdge& e : node.rule_edges) dfa.AddRuleEdge(e);
  }
  XG2_DCHECK_INVARIANTS(fsm_build::CheckRuleDfaInvariants(dfa, -1, "the TagDispatch lowering"));
  return dfa;
}

// Copies expression `expr` of `source` into `target` (a rule-free AST of its own), every rule
// reference replaced by the rule's body, recursively. Recursion (not a regular language) is
// an error naming `what` (the lookahead assertion or the counted body of rule `owner`).
ExprId InlineRuleRefs(const GrammarAst& source, ExprId expr, GrammarAst* target, const std::string& owner,
                      int depth, const char* what = "its lookahead assertion") {
  constexpr int kMaxInlineDepth = 64;
  if (depth > kMaxInlineDepth) {
    throw GrammarSyntaxError("rule '" + owner + "': " + what +
                             " refers to rules recursively; it must be a regular expression");
  }
  const ExprNode& original = source.node(expr);
  if (original.kind == ExprKind::kRuleRef) {
    return InlineRuleRefs(source, source.rules[original.rule_id].body, target, owner, depth + 1, what);
  }
  if (original.kind == ExprKind::kTagDispatch) {
    throw GrammarSyntaxError("rule '" + owner + "': " + what + " contains a TagDispatch; it must be a regular expression");
  }
  ExprNode node = original;
  for (ExprId& child : node.children) child = InlineRuleRefs(source, child, target, owner, depth + 1, what);
  return target->AddNode(std::move(node));
}

// The DFA of a rule with a JSON character count (grammar_fsm.h): its body with every rule
// reference inlined (a byte DFA without counted loops), times the phases of a character.
fsm_build::CharCountedDfa BuildCountingRuleDfa(const GrammarAst& ast, const RuleDef& rule, int64_t* budget,
                                               BuildScratch* scratch) {
  GrammarAst inlined;
  inlined.token_sets = ast.token_sets;
  inlined.automata = ast.automata;
  ExprId body = InlineRuleRefs(ast, rule.body, &inlined, rule.name, 0, "a body counted by [json_chars=M..N]");
  Dfa dfa;
  try {
    dfa = BuildRuleDfa(inlined, body, budget, nullptr, -1, rule.name, scratch);
  } catch (const DeterminisationExplosion&) {
    throw ResourceLimitError("rule '" + rule.name +
                             "': the DFA of its body counted by [json_chars=M..N] exceeds the determinisation limits");
  }
  fsm_build::CharCountedDfa counted = fsm_build::CountJsonChars(dfa, rule.name, rule.min_json_chars, rule.max_json_chars);
  *budget -= counted.dfa.size();
  if (*budget < 0) {
    throw ResourceLimitError("rule '" + rule.name + "': its JSON character automaton exceeds the node limit");
  }
  return counted;
}

// The rule DFAs the grammar's own rules and the synthetic rules lowering creates (lifted
// repetitions and repetition bodies, split parts); lowering one synthetic rule may add more.
struct RuleDfas {
  std::vector<Dfa> dfas;
  std::vector<std::string> names;
  // Per rule: empty, or a counting rule's product tables (json_char_count.h).
  std::vector<fsm_build::CharCountedDfa> counted;
};

}  // namespace

namespace fsm_build {

Dfa BuildGrammarRuleDfa(const GrammarAst& ast, RuleId r, LoweringContext* ctx, int64_t* budget, BuildScratch* scratch,
                        BodyKeyWriter* body_keys, CharCountedDfa* counted) {
  const RuleDef& rule = ast.rules[r];
  if (rule.counts_json_chars()) {
    *counted = BuildCountingRuleDfa(ast, rule, budget, scratch);
    Dfa dfa = std::move(counted->dfa);
    counted->dfa = Dfa();  // the tables stay with *counted, the automaton is returned
    return dfa;
  }
  const ExprNode& body = ast.node(rule.body);
  if (body.kind == ExprKind::kAutomaton) return AutomatonRuleDfa(*ast.automata[body.automaton], budget);
  return body.kind == ExprKind::kTagDispatch ? BuildTagDispatchDfa(ast, rule, budget)
                                             : BuildRuleDfaShared(ast, rule.body, budget, ctx, rule.name, scratch, body_keys);
}

}  // namespace fsm_build

namespace {

// The grammar rules in `selected` (null: all; the others get an empty placeholder DFA), then
// every synthetic rule their lowering creates.
RuleDfas BuildRuleDfas(const GrammarAst& ast, LoweringContext* ctx, int64_t* budget, BuildScratch* scratch,
                       BodyKeyWriter* body_keys, const std::vector<uint8_t>* selected) {
  RuleDfas out;
  out.counted.resize(ast.rules.size());
  for (RuleId r = 0; r < static_cast<RuleId>(ast.rules.size()); ++r) {
    ThrowIfCancelled();  // a rule found in the shared DFA table builds no node (no check there)
    out.dfas.push_back(!selected || (*selected)[r]
                           ? fsm_build::BuildGrammarRuleDfa(ast, r, ctx, budget, scratch, body_keys, &out.counted[r])
                           : Dfa());
    out.names.push_back(ast.rules[r].name);
  }
  for (size_t s = 0; s < ctx->synthetic().size(); ++s) {
    const LoweringContext::Synthetic synthetic = ctx->synthetic()[s];
    out.dfas.push_back(BuildRuleDfa(ast, synthetic.body, budget, ctx, synthetic.exempt, synthetic.name, scratch));
    out.names.push_back(synthetic.name);
    out.counted.emplace_back();
  }
  return out;
}

// The rule DFAs' invariants once the number of rules is known (support/dcheck.h).
// `selected` null: every rule's; else the grammar rules it marks and every synthetic one.
[[maybe_unused]] void CheckRuleDfas(const std::vector<Dfa>& dfas, const char* stage,
                                    const std::vector<uint8_t>* selected = nullptr) {
  for (size_t r = 0; r < dfas.size(); ++r) {
    if (selected && r < selected->size() && !(*selected)[r]) continue;  // not built
    fsm_build::CheckRuleDfaInvariants(dfas[r], static_cast<int32_t>(dfas.size()), stage);
  }
}

// Right-linear merging over every rule but those with a lookahead, a TagDispatch body or a
// token budget: each must stay a rule of its own for the parser to apply it (a budgeted rule
// merged into the caller that tail-calls it would lose its budget).
void MergeRightLinearRules(const GrammarAst& ast, std::vector<Dfa>* dfas, int64_t* budget, BuildScratch* scratch,
                           fsm_build::RightLinearReport* report) {
  std::vector<uint8_t> excluded(dfas->size(), 0);
  for (size_t r = 0; r < ast.rules.size(); ++r) {
    excluded[r] = ast.rules[r].keeps_own_items() ||
                  ast.node(ast.rules[r].body).kind == ExprKind::kTagDispatch;
  }
  MergeRightLinearGroups(dfas, excluded, ast.root_rule, budget, scratch, report);
}

// Lookahead DFAs: rule references inside an assertion are inlined (the assertion must be
// regular), then lowered like a rule body. dfa_of_rule[r] indexes `dfas`, or is -1 for a
// rule without an assertion (or with one that matches the empty string: always true).
struct LookaheadDfas {
  std::vector<int32_t> dfa_of_rule;
  std::vector<Dfa> dfas;
};

LookaheadDfas BuildLookaheadDfas(const GrammarAst& ast, int32_t num_rules, int64_t* budget, BuildScratch* scratch) {
  LookaheadDfas out;
  out.dfa_of_rule.assign(num_rules, -1);
  GrammarAst inlined;  // the assertions' expressions only
  inlined.automata = ast.automata;
  for (int32_t r = 0; r < static_cast<int32_t>(ast.rules.size()); ++r) {
    if (ast.rules[r].lookahead < 0) continue;
    ExprId body = InlineRuleRefs(ast, ast.rules[r].lookahead, &inlined, ast.rules[r].name, 0);
    // Guards step byte-only DFAs without counters: assertions are never compressed, nor
    // split into rules.
    Dfa dfa;
    try {
      dfa = BuildRuleDfa(inlined, body, budget, nullptr, -1, ast.rules[r].name, scratch);
    } catch (const DeterminisationExplosion&) {
      throw ResourceLimitError("rule '" + ast.rules[r].name +
                               "': the DFA of its lookahead assertion exceeds the determinisation limits "
                               "(states, or the memory of their NFA node sets)");
    }
    if (dfa.nodes[0].accepting) continue;  // matches the empty string: always true
    out.dfa_of_rule[r] = static_cast<int32_t>(out.dfas.size());
    out.dfas.push_back(std::move(dfa));
  }
  return out;
}

// Writes the rule DFAs, then the lookahead DFAs, into fsm's global node space and CSR tables
// (rule_names, rule_start, rule_nodes, node_*, the edges, counted loops, rule_lookahead), the
// blocks in rule order. A rule not in `built` (null: every rule) is left unbuilt.
void Flatten(const RuleDfas& rules, const LookaheadDfas& lookaheads, const std::vector<uint8_t>* built,
             GrammarFsm* fsm_out) {
  GrammarFsm& fsm = *fsm_out;
  const int32_t num_rules = static_cast<int32_t>(rules.dfas.size());
  auto is_built = [&](int32_t r) { return !built || (*built)[r]; };
  std::vector<const Dfa*> appended;
  NodeId base = 0;
  for (int32_t r = 0; r < num_rules; ++r) {
    ThrowIfCancelled();
    fsm.rule_names.push_back(rules.names[r]);
    if (!is_built(r)) {
      fsm.rule_start.push_back(kUnbuiltRule);
      fsm.rule_nodes.push_back({0, 0});
      continue;
    }
    fsm.rule_start.push_back(base);
    const NodeId end = base + static_cast<NodeId>(rules.dfas[r].nodes.size());
    fsm.rule_nodes.push_back({base, end});
    base = end;
    appended.push_back(&rules.dfas[r]);
  }
  for (const Dfa& dfa : lookaheads.dfas) appended.push_back(&dfa);
  FsmAppender appender(&fsm, appended);
  for (int32_t r = 0; r < num_rules; ++r) {
    if (is_built(r)) appender.Append(rules.dfas[r], r);
  }
  for (int32_t r = 0; r < num_rules; ++r) {
    const fsm_build::CharCountedDfa& counted = rules.counted[r];
    if (counted.char_end.empty()) continue;
    XG2_DCHECK(counted.char_end.size() == rules.dfas[r].nodes.size() && counted.fewest.size() == counted.char_end.size(),
               "a counting rule has one entry per node of its DFA in each product table");
    fsm.node_char_end.resize(fsm.node_rule.size(), 0);
    fsm.node_fewest_chars.resize(fsm.node_rule.size(), -1);
    fsm.node_most_chars.resize(fsm.node_rule.size(), -1);
    const NodeId first = fsm.rule_nodes[r].begin;
    std::copy(counted.char_end.begin(), counted.char_end.end(), fsm.node_char_end.begin() + first);
    std::copy(counted.fewest.begin(), counted.fewest.end(), fsm.node_fewest_chars.begin() + first);
    std::copy(counted.most.begin(), counted.most.end(), fsm.node_most_chars.begin() + first);
  }
  fsm.rule_lookahead.assign(num_rules, -1);
  for (size_t r = 0; r < lookaheads.dfa_of_rule.size(); ++r) {
    if (lookaheads.dfa_of_rule[r] >= 0) {
      fsm.rule_lookahead[r] = appender.Append(lookaheads.dfas[lookaheads.dfa_of_rule[r]], -1);
      fsm.has_lookahead = true;
    }
  }
  appender.Finish();
}

// Nullability: a rule is nullable iff an accepting node is reachable from its start
// through rule edges of nullable rules only. Iterate to a fixpoint.
void ComputeRuleNullable(GrammarFsm* fsm_out) {
  GrammarFsm& fsm = *fsm_out;
  const int32_t num_rules = fsm.num_rules();
  fsm.rule_nullable.assign(num_rules, 0);
  std::vector<NodeId> stack;
  std::vector<uint8_t> seen;
  for (bool changed = true; changed;) {
    changed = false;
    for (int32_t r = 0; r < num_rules; ++r) {
      if (fsm.rule_nullable[r]) continue;
      // A rule that counts at least one JSON character derives no empty string.
      if (fsm.has_json_char_counts() && fsm.rule_min_json_chars[r] > 0) continue;
      stack.assign(1, fsm.rule_start[r]);
      seen.assign(fsm.rule_nodes[r].end - fsm.rule_nodes[r].begin, 0);
      seen[0 + fsm.rule_start[r] - fsm.rule_nodes[r].begin] = 1;
      bool nullable = false;
      while (!stack.empty() && !nullable) {
        NodeId n = stack.back();
        stack.pop_back();
        if (fsm.node_accepting[n]) nullable = true;
        for (const RuleEdge* e = fsm.rule_edges_begin(n); e != fsm.rule_edges_end(n); ++e) {
          int32_t local = e->target - fsm.rule_nodes[r].begin;
          if (fsm.rule_nullable[e->rule] && !seen[local]) {
            seen[local] = 1;
            stack.push_back(e->target);
          }
        }
      }
      if (nullable) {
        fsm.rule_nullable[r] = 1;
        changed = true;
      }
    }
  }
}

// A lookahead on a nullable rule is refused (grammar_fsm.h).
void CheckLookaheadsNotNullable(const GrammarFsm& fsm) {
  for (int32_t r = 0; r < fsm.num_rules(); ++r) {
    if (fsm.rule_lookahead[r] >= 0 && fsm.rule_nullable[r]) {
      throw GrammarSyntaxError("rule '" + fsm.rule_names[r] +
                               "': a lookahead assertion on a rule that can match the empty "
                               "string is not supported");
    }
  }
}

// Token budgets (grammar_fsm.h): rule_max_tokens, for rules whose DFA calls no other rule.
void ApplyTokenBudgets(const GrammarAst& ast, GrammarFsm* fsm_out) {
  GrammarFsm& fsm = *fsm_out;
  for (RuleId r = 0; r < static_cast<RuleId>(ast.rules.size()); ++r) {
    if (ast.rules[r].max_tokens < 0) continue;
    if (fsm.rule_max_tokens.empty()) fsm.rule_max_tokens.assign(fsm.num_rules(), -1);
    fsm.rule_max_tokens[r] = ast.rules[r].max_tokens;
    for (NodeId n = fsm.rule_nodes[r].begin; n < fsm.rule_nodes[r].end; ++n) {
      if (fsm.rule_edge_begin[n] != fsm.rule_edge_begin[n + 1]) {
        throw GrammarSyntaxError("rule '" + fsm.rule_names[r] +
                                 "': a token budget [max_tokens=N] needs a rule that calls no other rule");
      }
    }
  }
}

// JSON character counts (grammar_fsm.h): the per-rule bounds, before nullability (a rule that
// counts at least one character is not nullable). node_char_end is filled by the flattener.
void ApplyJsonCharCounts(const GrammarAst& ast, GrammarFsm* fsm_out) {
  GrammarFsm& fsm = *fsm_out;
  for (RuleId r = 0; r < static_cast<RuleId>(ast.rules.size()); ++r) {
    if (!ast.rules[r].counts_json_chars()) continue;
    if (fsm.rule_min_json_chars.empty()) {
      fsm.rule_min_json_chars.assign(fsm.num_rules(), -1);
      fsm.rule_max_json_chars.assign(fsm.num_rules(), -1);
    }
    fsm.rule_min_json_chars[r] = ast.rules[r].min_json_chars;
    fsm.rule_max_json_chars[r] = ast.rules[r].max_json_chars;
  }
  if (!fsm.has_json_char_counts()) return;
  fsm.rule_chars_slack.assign(fsm.num_rules(), 0);
  for (RuleId r = 0; r < fsm.num_rules(); ++r) {
    if (fsm.rule_min_json_chars[r] < 0) continue;
    for (NodeId n = fsm.rule_nodes[r].begin; n < fsm.rule_nodes[r].end; ++n) {
      fsm.rule_chars_slack[r] = std::max(fsm.rule_chars_slack[r], fsm.node_fewest_chars[n]);
    }
  }
}

// Unique items (grammar_fsm.h): the rule roles, and the builder's checks of where they may be.
void ApplyUniqueItems(const GrammarAst& ast, GrammarFsm* fsm_out) {
  GrammarFsm& fsm = *fsm_out;
  for (RuleId r = 0; r < static_cast<RuleId>(ast.rules.size()); ++r) {
    const RuleDef& rule = ast.rules[r];
    if (!rule.unique_item && !rule.unique_items) continue;
    if (rule.unique_item && rule.unique_items) {
      throw GrammarSyntaxError("rule '" + rule.name + "': [unique_item] and [unique_items] exclude each other");
    }
    if (fsm.rule_unique.empty()) fsm.rule_unique.assign(fsm.num_rules(), GrammarFsm::kNotUnique);
    fsm.rule_unique[r] = rule.unique_item ? GrammarFsm::kUniqueItem : GrammarFsm::kUniqueItemsHolder;
    if (rule.unique_items && rule.counts_json_chars()) {
      throw GrammarSyntaxError("rule '" + rule.name + "': [unique_items] cannot count characters");
    }
  }
  if (!fsm.has_unique_items()) return;
  for (RuleId r = 0; r < fsm.num_rules(); ++r) {
    if (fsm.rule_unique[r] == GrammarFsm::kUniqueItem && fsm.rule_nullable[r]) {
      throw GrammarSyntaxError("rule '" + fsm.rule_names[r] + "': a [unique_item] rule cannot match the empty string");
    }
  }
  for (NodeId n = 0; n < fsm.num_nodes(); ++n) {
    const RuleId owner = fsm.node_rule[n];
    const bool holder = owner >= 0 && fsm.rule_unique[owner] == GrammarFsm::kUniqueItemsHolder;
    if (holder && !fsm.counted_loops.empty() && (fsm.node_loop[n] >= 0 || fsm.node_gate_loop[n] >= 0)) {
      throw GrammarSyntaxError("rule '" + fsm.rule_names[owner] +
                               "': a [unique_items] rule cannot hold a compressed repetition (its items "
                               "carry the set of values in the counter's place)");
    }
    for (const RuleEdge* e = fsm.rule_edges_begin(n); e != fsm.rule_edges_end(n); ++e) {
      if (fsm.rule_unique[e->rule] == GrammarFsm::kUniqueItem && !holder) {
        throw GrammarSyntaxError("rule '" + fsm.rule_names[e->rule] + "' is a [unique_item] called from '" +
                                 (owner >= 0 ? fsm.rule_names[owner] : std::string("a lookahead")) +
                                 "', which is not a [unique_items] rule");
      }
    }
  }
}


// Lazy builds (lazy_rule_builder.h): nullability from the AST, for grammar rules and for the
// synthetic rules lowering made (a synthetic rule's is its body expression's).
void SetAstNullability(const AstNullability& nullable, LoweringContext* ctx, GrammarFsm* fsm) {
  fsm->rule_nullable.assign(fsm->num_rules(), 0);
  const RuleId first_synthetic = ctx->first_synthetic_rule();
  for (RuleId r = 0; r < fsm->num_rules(); ++r) {
    fsm->rule_nullable[r] = r < first_synthetic ? nullable.rule[r] : nullable.expr[ctx->synthetic()[r - first_synthetic].body];
  }
}

}  // namespace

namespace fsm_build {

void CheckBuilderInput(const GrammarAst& ast) {
  if (ast.root_rule < 0 || ast.root_rule >= static_cast<int32_t>(ast.rules.size())) {
    throw GrammarSyntaxError("grammar has no root rule");
  }
  XG2_DCHECK_INVARIANTS(CheckGrammarAstInvariants(ast, "the grammar passes (the FSM builder's input)"));
}

GrammarFsm BuildFirstSnapshot(const GrammarAst& ast, const FsmBuildLimits& limits, LoweringContext* ctx, int64_t* budget,
                              BodyKeyWriter* body_keys, const std::vector<uint8_t>* build_now,
                              const AstNullability* nullable) {
  XG2_DCHECK(!build_now || nullable, "a partial build takes its nullability from the AST");
  GrammarFsm fsm;
  fsm.root_rule = ast.root_rule;
  ScratchLease lease;
  BuildScratch& scratch = *lease.get();
  ctx->set_scratch(&scratch);
  RuleDfas rules = BuildRuleDfas(ast, ctx, budget, &scratch, body_keys, build_now);
  XG2_DCHECK_INVARIANTS(CheckRuleDfas(rules.dfas, "the rule DFAs", build_now));
  // What the AST analyses are checked against at the end (debug builds only, whole builds;
  // the record stays empty, and the merging pass reports nothing, in Release).
  [[maybe_unused]] AstCheckRecord ast_checks;
  if (!build_now) {
    XG2_DCHECK_INVARIANTS(RecordRuleDfas(ast, rules.dfas, ctx, &ast_checks));
    // Merging reads every DFA of a group; a partial build leaves the rules unmerged.
    MergeRightLinearRules(ast, &rules.dfas, budget, &scratch, XG2_DCHECKS_ENABLED ? &ast_checks.right_linear : nullptr);
    XG2_DCHECK_INVARIANTS(CheckRuleDfas(rules.dfas, "right-linear merging"));
  }
  const LookaheadDfas lookaheads = BuildLookaheadDfas(ast, static_cast<int32_t>(rules.dfas.size()), budget, &scratch);
  std::vector<uint8_t> built;
  if (build_now) {
    built.assign(rules.dfas.size(), 1);  // every synthetic rule so far was built
    std::copy(build_now->begin(), build_now->end(), built.begin());
  }
  Flatten(rules, lookaheads, build_now ? &built : nullptr, &fsm);
  ApplyJsonCharCounts(ast, &fsm);
  if (build_now) {
    SetAstNullability(*nullable, ctx, &fsm);
  } else {
    ComputeRuleNullable(&fsm);
  }
  CheckLookaheadsNotNullable(fsm);
  ApplyTokenBudgets(ast, &fsm);
  ApplyUniqueItems(ast, &fsm);
  fsm.token_sets = ast.token_sets;
  IndexTokenSetEdges(&fsm);
  ctx->set_scratch(nullptr);  // the lease ends here
  XG2_DCHECK_INVARIANTS(CheckGrammarFsmInvariants(fsm, "BuildGrammarFsm"));
  if (!build_now) XG2_DCHECK_INVARIANTS(CheckAstAnalyses(ast, limits, fsm, ast_checks));
  return fsm;
}

}  // namespace fsm_build

GrammarFsm BuildGrammarFsm(const GrammarAst& ast, const FsmBuildLimits& limits) {
  fsm_build::CheckBuilderInput(ast);
  int64_t budget = limits.max_nodes;
  LoweringContext ctx(ast, limits);
  BodyKeyWriter body_keys(ast);
  return fsm_build::BuildFirstSnapshot(ast, limits, &ctx, &budget, &body_keys, nullptr, nullptr);
}

size_t GrammarFsm::MemoryBytes() const {
  return sizeof(*this) + rule_start.capacity() * 4 + rule_nodes.capacity() * sizeof(NodeBlock) +
         rule_nullable.capacity() + node_rule.capacity() * 4 + node_accepting.capacity() +
         byte_edge_begin.capacity() * 4 + byte_edges.capacity() * sizeof(ByteEdge) +
         rule_edge_begin.capacity() * 4 + rule_edges.capacity() * sizeof(RuleEdge) +
         counted_loops.capacity() * sizeof(CountedLoop) + node_loop.capacity() * 4 +
         node_gate_loop.capacity() * 4 + token_set_edge_begin.capacity() * 4 +
         token_set_edges.capacity() * sizeof(TokenSetEdge) + rule_min_json_chars.capacity() * 4 +
         rule_max_json_chars.capacity() * 4 + rule_unique.capacity() + node_char_end.capacity() + node_fewest_chars.capacity() * 4 +
         node_most_chars.capacity() * 4 + rule_chars_slack.capacity() * 4;
}

std::string GrammarFsm::ToString() const {
  std::ostringstream os;
  for (int32_t r = 0; r < num_rules(); ++r) {
    os << "rule " << rule_names[r] << (rule_nullable[r] ? " (nullable)" : "") << " start "
       << rule_start[r] << "\n";
    for (NodeId n = rule_nodes[r].begin; n < rule_nodes[r].end; ++n) {
      os << "  " << n << (node_accepting[n] ? "*" : "") << ":";
      if (!node_loop.empty() && node_loop[n] >= 0) os << " (loop " << node_loop[n] << ")";
      if (!node_char_end.empty() && node_char_end[n]) os << " (char end)";
      if (!node_gate_loop.empty() && node_gate_loop[n] >= 0) {
        const CountedLoop& loop = counted_loops[node_gate_loop[n]];
        os << " (gate of loop " << node_gate_loop[n] << ": back to " << loop.head << " up to "
           << loop.limit << " times)";
      }
      for (const ByteEdge* e = byte_edges_begin(n); e != byte_edges_end(n); ++e) {
        os << " [" << int(e->lo) << "-" << int(e->hi) << "]->" << e->target;
      }
      for (const RuleEdge* e = rule_edges_begin(n); e != rule_edges_end(n); ++e) {
        os << " <" << rule_names[e->rule] << ">->" << e->target;
      }
      os << "\n";
    }
  }
  return os.str();
}

}  // namespace xg2
