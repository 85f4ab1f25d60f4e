// The GrammarFsm and GrammarAst invariant checkers (see the header).
#include "grammar/fsm_invariants.h"

#include <algorithm>
#include <string>
#include <vector>

#include "grammar/automaton_literal.h"
#include "support/dcheck.h"

namespace xg2 {
namespace {

[[noreturn]] void Broken(const char* what, const char* stage, const std::string& detail) {
  throw InternalError(std::string("internal error: ") + what + " invariant broken after " + stage + ": " + detail);
}

std::string Str(int64_t v) { return std::to_string(v); }

// A CSR offset array over `count` items: count + 1 entries, from 0, non-decreasing, ending
// at the edge array's size.
void CheckOffsets(const std::vector<int32_t>& begin, size_t count, size_t edges, const char* name,
                  const char* stage) {
  if (begin.size() != count + 1) Broken("GrammarFsm", stage, std::string(name) + " has " + Str(begin.size()) +
                                        " entries for " + Str(count) + " nodes");
  if (begin[0] != 0) Broken("GrammarFsm", stage, std::string(name) + "[0] is " + Str(begin[0]));
  for (size_t n = 0; n < count; ++n) {
    if (begin[n + 1] < begin[n]) Broken("GrammarFsm", stage, std::string(name) + " decreases at node " + Str(n));
  }
  if (static_cast<size_t>(begin[count]) != edges) {
    Broken("GrammarFsm", stage, std::string(name) + " ends at " + Str(begin[count]) + " of " + Str(edges) + " edges");
  }
}

class FsmChecker {
 public:
  FsmChecker(const GrammarFsm& fsm, const char* stage) : fsm_(fsm), stage_(stage) {}

  void Run() {
    CheckRuleTables();
    CheckBlocks();
    CheckEdges();
    CheckLookaheads();
    CheckNullable();
    CheckCountedLoops();
    CheckTokenBudgets();
    CheckJsonCharCounts();
    CheckTokenSets();
  }

 private:
  [[noreturn]] void Fail(const std::string& detail) const { Broken("GrammarFsm", stage_, detail); }

  void CheckRuleTables() {
    const size_t rules = fsm_.rule_start.size();
    if (fsm_.rule_names.size() != rules || fsm_.rule_nodes.size() != rules ||
        fsm_.rule_nullable.size() != rules || fsm_.rule_lookahead.size() != rules) {
      Fail("the per-rule tables disagree on the number of rules (" + Str(rules) + ")");
    }
    if (!fsm_.rule_max_tokens.empty() && fsm_.rule_max_tokens.size() != rules) {
      Fail("rule_max_tokens has " + Str(fsm_.rule_max_tokens.size()) + " entries for " + Str(rules) + " rules");
    }
    if (!fsm_.rule_unique.empty() && fsm_.rule_unique.size() != rules) {
      Fail("rule_unique has " + Str(fsm_.rule_unique.size()) + " entries for " + Str(rules) + " rules");
    }
    if (fsm_.root_rule < 0 || fsm_.root_rule >= fsm_.num_rules()) Fail("root rule " + Str(fsm_.root_rule));
    const size_t nodes = fsm_.node_rule.size();
    if (fsm_.node_accepting.size() != nodes) Fail("node_accepting and node_rule differ in size");
    CheckOffsets(fsm_.byte_edge_begin, nodes, fsm_.byte_edges.size(), "byte_edge_begin", stage_);
    CheckOffsets(fsm_.rule_edge_begin, nodes, fsm_.rule_edges.size(), "rule_edge_begin", stage_);
  }

  // A built rule's block is non-empty and holds its start and only its nodes; an unbuilt
  // rule's is empty. With the lookahead blocks (each from a rule_lookahead start to the next
  // block) they partition the node space, in any order (a rule built later appends its block
  // after the lookahead blocks). block_begin_/block_end_[n] is n's block.
  void CheckBlocks() {
    const NodeId nodes = fsm_.num_nodes();
    block_begin_.assign(nodes, 0);
    block_end_.assign(nodes, 0);
    constexpr NodeId kLookaheadBlock = -1;  // end of a lookahead block: where the next begins
    std::vector<NodeBlock> blocks;
    for (int32_t r = 0; r < fsm_.num_rules(); ++r) {
      const NodeBlock block = fsm_.rule_nodes[r];
      if (!fsm_.IsBuilt(r)) {
        if (block.size() != 0) Fail("unbuilt rule " + Name(r) + " has nodes");
        continue;
      }
      if (block.begin < 0 || block.end <= block.begin || block.end > nodes) {
        Fail("rule " + Name(r) + " has the block [" + Str(block.begin) + ", " + Str(block.end) + ")");
      }
      if (fsm_.rule_start[r] < block.begin || fsm_.rule_start[r] >= block.end) Fail("rule " + Name(r) + "'s start is outside its block");
      for (NodeId n = block.begin; n < block.end; ++n) {
        if (fsm_.node_rule[n] != r) Fail("node " + Str(n) + " of rule " + Name(r) + " has node_rule " + Str(fsm_.node_rule[n]));
        block_begin_[n] = block.begin;
        block_end_[n] = block.end;
      }
      blocks.push_back(block);
    }
    for (NodeId start : fsm_.rule_lookahead) {
      if (start >= nodes) Fail("a lookahead starts at node " + Str(start) + " of " + Str(nodes));
      if (start >= 0) blocks.push_back({start, kLookaheadBlock});
    }
    std::sort(blocks.begin(), blocks.end(), [](const NodeBlock& a, const NodeBlock& b) { return a.begin < b.begin; });
    NodeId covered = 0;
    for (size_t k = 0; k < blocks.size(); ++k) {
      if (blocks[k].begin != covered) Fail("the rule and lookahead blocks leave a gap or overlap at node " + Str(covered));
      if (blocks[k].end != kLookaheadBlock) {
        covered = blocks[k].end;
        continue;
      }
      const NodeId end = k + 1 < blocks.size() ? blocks[k + 1].begin : nodes;
      if (end <= blocks[k].begin) Fail("two lookaheads share the block at node " + Str(blocks[k].begin));
      for (NodeId n = blocks[k].begin; n < end; ++n) {
        if (fsm_.node_rule[n] != -1) Fail("lookahead node " + Str(n) + " has node_rule " + Str(fsm_.node_rule[n]));
        block_begin_[n] = blocks[k].begin;
        block_end_[n] = end;
      }
      covered = end;
    }
    if (covered != nodes) Fail("the nodes after node " + Str(covered) + " belong to no rule or lookahead");
  }

  void CheckEdges() {
    for (NodeId n = 0; n < fsm_.num_nodes(); ++n) {
      const ByteEdge* previous = nullptr;
      for (const ByteEdge* e = fsm_.byte_edges_begin(n); e != fsm_.byte_edges_end(n); ++e) {
        if (e->lo > e->hi) Fail("node " + Str(n) + " has the byte edge [" + Str(e->lo) + "-" + Str(e->hi) + "]");
        if (previous && previous->hi >= e->lo) Fail("node " + Str(n) + "'s byte edges are not sorted and disjoint");
        CheckTarget(n, e->target);
        previous = e;
      }
      for (const RuleEdge* e = fsm_.rule_edges_begin(n); e != fsm_.rule_edges_end(n); ++e) {
        if (e->rule < 0 || e->rule >= fsm_.num_rules()) Fail("node " + Str(n) + " calls rule " + Str(e->rule));
        if (e != fsm_.rule_edges_begin(n) && (e - 1)->rule >= e->rule) {
          Fail("node " + Str(n) + "'s rule edges are not sorted by rule, one per rule");
        }
        CheckTarget(n, e->target);
      }
    }
  }

  void CheckTarget(NodeId from, NodeId target) const {
    if (target < block_begin_[from] || target >= block_end_[from]) {
      Fail("node " + Str(from) + " has an edge to node " + Str(target) + ", outside its block [" +
           Str(block_begin_[from]) + ", " + Str(block_end_[from]) + ")");
    }
  }

  void CheckLookaheads() {
    bool any = false;
    for (int32_t r = 0; r < fsm_.num_rules(); ++r) {
      const NodeId start = fsm_.rule_lookahead[r];
      if (start < 0) continue;
      any = true;
      if (fsm_.rule_nullable[r]) Fail("rule " + Name(r) + " has a lookahead and is nullable");
      if (fsm_.node_accepting[start]) Fail("rule " + Name(r) + "'s lookahead accepts the empty string");
      for (NodeId n = start; n < block_end_[start]; ++n) {
        if (fsm_.rule_edge_begin[n] != fsm_.rule_edge_begin[n + 1]) Fail("lookahead node " + Str(n) + " has a rule edge");
      }
    }
    if (any != fsm_.has_lookahead) Fail("has_lookahead disagrees with rule_lookahead");
  }

  // One pass: each rule's flag equals "an accepting node is reachable from its start through
  // rule edges of rules flagged nullable" (what the builder's fixpoint establishes).
  void CheckNullable() {
    std::vector<uint8_t> seen(fsm_.num_nodes(), 0);
    std::vector<NodeId> stack;
    for (int32_t r = 0; r < fsm_.num_rules(); ++r) {
      if (!fsm_.IsBuilt(r)) continue;  // its flag is the AST's (the builder's input)
      bool reaches_accept = false;
      stack.assign(1, fsm_.rule_start[r]);
      seen[fsm_.rule_start[r]] = 1;
      while (!stack.empty()) {
        const NodeId n = stack.back();
        stack.pop_back();
        reaches_accept = reaches_accept || fsm_.node_accepting[n];
        // A rule counting at least one JSON character never completes at its start.
        if (fsm_.has_json_char_counts() && fsm_.rule_min_json_chars[r] > 0) reaches_accept = false;
        for (const RuleEdge* e = fsm_.rule_edges_begin(n); e != fsm_.rule_edges_end(n); ++e) {
          if (fsm_.rule_nullable[e->rule] && !seen[e->target]) {
            seen[e->target] = 1;
            stack.push_back(e->target);
          }
        }
      }
      if (reaches_accept != static_cast<bool>(fsm_.rule_nullable[r])) {
        Fail("rule " + Name(r) + " is marked " + (fsm_.rule_nullable[r] ? "nullable" : "not nullable") +
             " but its DFA says otherwise");
      }
    }
  }

  void CheckCountedLoops() {
    const size_t loops = fsm_.counted_loops.size();
    if (loops == 0) {
      if (!fsm_.node_loop.empty() || !fsm_.node_gate_loop.empty()) Fail("node_loop is filled without a counted loop");
      return;
    }
    if (fsm_.node_loop.size() != fsm_.node_rule.size() || fsm_.node_gate_loop.size() != fsm_.node_rule.size()) {
      Fail("node_loop / node_gate_loop are not one entry per node");
    }
    std::vector<int32_t> gates(loops, 0);
    for (NodeId n = 0; n < fsm_.num_nodes(); ++n) {
      const int32_t k = fsm_.node_loop[n], g = fsm_.node_gate_loop[n];
      if (k < -1 || k >= static_cast<int32_t>(loops) || g < -1 || g >= static_cast<int32_t>(loops)) {
        Fail("node " + Str(n) + " names counted loop " + Str(k) + " / gate of " + Str(g) + " of " + Str(loops));
      }
      if (k >= 0 && fsm_.counted_loops[k].head >= 0 && block_begin_[fsm_.counted_loops[k].head] != block_begin_[n]) {
        Fail("node " + Str(n) + " carries the counter of loop " + Str(k) + " of another rule");
      }
      if (g >= 0) ++gates[g];
    }
    for (size_t k = 0; k < loops; ++k) {
      const CountedLoop& loop = fsm_.counted_loops[k];
      if (loop.head < 0 && loop.gate < 0) continue;  // a dead loop keeps its slot
      if (loop.head < 0 || loop.gate < 0 || loop.head >= fsm_.num_nodes() || loop.gate >= fsm_.num_nodes()) {
        Fail("counted loop " + Str(k) + " has head " + Str(loop.head) + " and gate " + Str(loop.gate));
      }
      if (block_begin_[loop.head] != block_begin_[loop.gate] || fsm_.node_rule[loop.head] < 0) {
        Fail("counted loop " + Str(k) + "'s head and gate are not nodes of one rule");
      }
      if (fsm_.node_gate_loop[loop.gate] != static_cast<int32_t>(k) || gates[k] != 1) {
        Fail("counted loop " + Str(k) + "'s gate is not the one node marked as its gate");
      }
      if (fsm_.node_loop[loop.head] != static_cast<int32_t>(k)) Fail("counted loop " + Str(k) + "'s head carries no counter");
      if (loop.limit < 1) Fail("counted loop " + Str(k) + " has limit " + Str(loop.limit));
    }
  }

  void CheckTokenBudgets() {
    if (fsm_.rule_max_tokens.empty()) return;
    for (int32_t r = 0; r < fsm_.num_rules(); ++r) {
      if (fsm_.rule_max_tokens[r] < -1) Fail("rule " + Name(r) + " has the token budget " + Str(fsm_.rule_max_tokens[r]));
      if (fsm_.rule_max_tokens[r] < 0) continue;
      for (NodeId n = fsm_.rule_nodes[r].begin; n < fsm_.rule_nodes[r].end; ++n) {
        if (fsm_.rule_edge_begin[n] != fsm_.rule_edge_begin[n + 1]) Fail("budgeted rule " + Name(r) + " calls a rule");
      }
    }
  }

  void CheckJsonCharCounts() {
    if (!fsm_.has_json_char_counts()) {
      if (!fsm_.rule_max_json_chars.empty() || !fsm_.node_char_end.empty()) Fail("character-count tables without a counting rule");
      return;
    }
    if (fsm_.rule_min_json_chars.size() != static_cast<size_t>(fsm_.num_rules()) ||
        fsm_.rule_max_json_chars.size() != static_cast<size_t>(fsm_.num_rules()) ||
        fsm_.rule_chars_slack.size() != static_cast<size_t>(fsm_.num_rules()) ||
        fsm_.node_char_end.size() != static_cast<size_t>(fsm_.num_nodes()) ||
        fsm_.node_fewest_chars.size() != static_cast<size_t>(fsm_.num_nodes()) ||
        fsm_.node_most_chars.size() != static_cast<size_t>(fsm_.num_nodes())) {
      Fail("the character-count tables are not one entry per rule / node");
    }
    for (NodeId n = 0; n < fsm_.num_nodes(); ++n) {
      if (fsm_.node_char_end[n] > 1 || (fsm_.node_char_end[n] && !fsm_.CountsJsonChars(n))) {
        Fail("node " + Str(n) + " ends a JSON character outside a counting rule");
      }
    }
    for (int32_t r = 0; r < fsm_.num_rules(); ++r) {
      const int32_t least = fsm_.rule_min_json_chars[r], most = fsm_.rule_max_json_chars[r];
      if (least < 0) {
        if (most != -1) Fail("rule " + Name(r) + " has a character maximum without counting");
        continue;
      }
      if (most < -1 || (most >= 0 && most < least)) Fail("rule " + Name(r) + " counts " + Str(least) + ".." + Str(most));
      for (NodeId n = fsm_.rule_nodes[r].begin; n < fsm_.rule_nodes[r].end; ++n) {
        // An accepting node completes with no further character.
        const int32_t fewest = fsm_.node_fewest_chars[n], most_after = fsm_.node_most_chars[n];
        if ((fsm_.node_accepting[n] && fewest != 0) || fewest < -1 || fewest > fsm_.rule_chars_slack[r] ||
            (most_after >= 0 && most_after < fewest)) {
          Fail("node " + Str(n) + " of counting rule " + Name(r) + " completes with " + Str(fewest) + ".." + Str(most_after) + " characters");
        }
        if (fsm_.rule_edge_begin[n] != fsm_.rule_edge_begin[n + 1]) Fail("counting rule " + Name(r) + " calls a rule");
        if (!fsm_.node_loop.empty() && (fsm_.node_loop[n] >= 0 || fsm_.node_gate_loop[n] >= 0)) {
          Fail("counting rule " + Name(r) + " holds a counted-loop node");
        }
      }
    }
  }

  void CheckTokenSets() {
    if (!fsm_.has_token_sets()) {
      if (!fsm_.token_set_edge_begin.empty() || !fsm_.token_set_edges.empty()) Fail("token-set edges without token sets");
      return;
    }
    for (size_t s = 0; s < fsm_.token_sets.size(); ++s) {
      const std::vector<int32_t>& ids = fsm_.token_sets[s].ids;
      for (size_t k = 1; k < ids.size(); ++k) {
        if (ids[k - 1] >= ids[k]) Fail("token set " + Str(s) + "'s ids are not sorted and unique");
      }
    }
    CheckOffsets(fsm_.token_set_edge_begin, fsm_.node_rule.size(), fsm_.token_set_edges.size(), "token_set_edge_begin",
                 stage_);
    for (NodeId n = 0; n < fsm_.num_nodes(); ++n) {
      for (const TokenSetEdge* e = fsm_.token_set_edges_begin(n); e != fsm_.token_set_edges_end(n); ++e) {
        if (e->set < 0 || e->set >= static_cast<int32_t>(fsm_.token_sets.size())) {
          Fail("node " + Str(n) + " has an edge of token set " + Str(e->set));
        }
        CheckTarget(n, e->target);
      }
    }
  }

  std::string Name(int32_t r) const { return "'" + fsm_.rule_names[r] + "' (" + Str(r) + ")"; }

  const GrammarFsm& fsm_;
  const char* stage_;
  std::vector<NodeId> block_begin_, block_end_;
};

class AstChecker {
 public:
  AstChecker(const GrammarAst& ast, const char* stage) : ast_(ast), stage_(stage) {}

  void Run() {
    const int32_t rules = static_cast<int32_t>(ast_.rules.size());
    if (ast_.root_rule < -1 || ast_.root_rule >= rules) Fail("root rule " + Str(ast_.root_rule) + " of " + Str(rules));
    for (size_t s = 0; s < ast_.token_sets.size(); ++s) {
      const std::vector<int32_t>& ids = ast_.token_sets[s].ids;
      for (size_t k = 1; k < ids.size(); ++k) {
        if (ids[k - 1] >= ids[k]) Fail("token set " + Str(s) + "'s ids are not sorted and unique");
      }
    }
    state_.assign(ast_.nodes.size(), kUnvisited);
    for (int32_t r = 0; r < rules; ++r) {
      const RuleDef& rule = ast_.rules[r];
      if (rule.max_tokens < -1) Fail("rule '" + rule.name + "' has the token budget " + Str(rule.max_tokens));
      CheckRoot(rule.body, rule, /*is_body=*/true);
      if (rule.lookahead != -1) CheckRoot(rule.lookahead, rule, /*is_body=*/false);
    }
  }

 private:
  enum : uint8_t { kUnvisited, kOnPath, kDone };
  [[noreturn]] void Fail(const std::string& detail) const { Broken("GrammarAst", stage_, detail); }

  void CheckRoot(ExprId root, const RuleDef& rule, bool is_body) {
    if (root < 0 || static_cast<size_t>(root) >= ast_.nodes.size()) {
      Fail("rule '" + rule.name + "' has the " + (is_body ? "body " : "lookahead ") + Str(root));
    }
    Visit(root);
  }

  // Depth-first with an explicit stack: the colours find a cycle, and a node is checked once.
  void Visit(ExprId root) {
    if (state_[root] == kDone) return;
    std::vector<std::pair<ExprId, size_t>> stack{{root, 0}};
    state_[root] = kOnPath;
    CheckNode(root);
    while (!stack.empty()) {
      auto& [e, next_child] = stack.back();
      const ExprChildren& children = ast_.node(e).children;
      if (next_child == children.size()) {
        state_[e] = kDone;
        stack.pop_back();
        continue;
      }
      const ExprId child = children[next_child++];
      if (child < 0 || static_cast<size_t>(child) >= ast_.nodes.size()) {
        Fail("node " + Str(e) + " has the child " + Str(child) + " of " + Str(ast_.nodes.size()));
      }
      if (state_[child] == kOnPath) Fail("node " + Str(child) + " is its own descendant");
      if (state_[child] == kDone) continue;
      if (ast_.node(child).kind == ExprKind::kTagDispatch) Fail("node " + Str(child) + " is a TagDispatch inside an expression");
      if (ast_.node(child).kind == ExprKind::kAutomaton) {
        Fail("node " + Str(child) + " is an automaton literal inside an expression");
      }
      state_[child] = kOnPath;
      CheckNode(child);
      stack.push_back({child, 0});
    }
  }

  void CheckNode(ExprId e) const {
    const ExprNode& node = ast_.node(e);
    const std::string at = "node " + Str(e);
    const size_t children = node.children.size();
    switch (node.kind) {
      case ExprKind::kEmpty:
      case ExprKind::kBytes:
      case ExprKind::kCharClass:
      case ExprKind::kRuleRef:
      case ExprKind::kTagDispatch:
      case ExprKind::kAutomaton:
        if (children != 0) Fail(at + " is a leaf with " + Str(children) + " children");
        break;
      case ExprKind::kSequence:
      case ExprKind::kChoice:
        if (children == 0) Fail(at + " is a sequence or choice without children");
        break;
      case ExprKind::kRepeat:
        if (children != 1) Fail(at + " is a repetition with " + Str(children) + " children");
        if (node.min_repeat < 0 || (node.max_repeat != -1 && node.max_repeat < node.min_repeat)) {
          Fail(at + " repeats {" + Str(node.min_repeat) + "," + Str(node.max_repeat) + "}");
        }
        break;
    }
    if (node.kind == ExprKind::kBytes && node.bytes.empty()) Fail(at + " is an empty byte string");
    if (node.kind == ExprKind::kRuleRef && (node.rule_id < 0 || node.rule_id >= static_cast<RuleId>(ast_.rules.size()))) {
      Fail(at + " refers to rule " + Str(node.rule_id) + " of " + Str(ast_.rules.size()));
    }
    if (node.kind == ExprKind::kTagDispatch &&
        (node.tag_dispatch < 0 || node.tag_dispatch >= static_cast<int32_t>(ast_.tag_dispatches.size()))) {
      Fail(at + " names TagDispatch " + Str(node.tag_dispatch));
    }
    if (node.kind == ExprKind::kAutomaton) {
      if (node.automaton < 0 || node.automaton >= static_cast<int32_t>(ast_.automata.size()) ||
          ast_.automata[node.automaton] == nullptr) {
        Fail(at + " names automaton literal " + Str(node.automaton));
      }
      CheckAutomatonLiteralInvariants(*ast_.automata[node.automaton], stage_);
    }
    if (node.kind == ExprKind::kCharClass) {
      if (node.ranges.empty()) Fail(at + " is an empty character class");
      for (size_t k = 0; k < node.ranges.size(); ++k) {
        const CodepointRange& r = node.ranges[k];
        if (r.first > r.last || r.last > kMaxCodepoint) Fail(at + " has the range " + Str(r.first) + ".." + Str(r.last));
        if (k > 0 && node.ranges[k - 1].last + 1 >= r.first) {
          Fail(at + "'s ranges are not sorted, disjoint and non-adjacent");
        }
      }
    }
  }

  const GrammarAst& ast_;
  const char* stage_;
  std::vector<uint8_t> state_;
};

}  // namespace

void CheckGrammarFsmInvariants(const GrammarFsm& fsm, const char* stage) { FsmChecker(fsm, stage).Run(); }

void CheckGrammarAstInvariants(const GrammarAst& ast, const char* stage) { AstChecker(ast, stage).Run(); }

}  // namespace xg2
