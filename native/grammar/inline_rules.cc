#include "grammar/inline_rules.h"

#include <algorithm>
#include <vector>

#include "support/cancellation.h"
#include "support/dcheck.h"
#include "support/graph.h"

namespace xg2 {

namespace {

// Copies of a repetition's body in the FSM.
int64_t RepeatCopies(const ExprNode& node, const InlineOptions& options) {
  int64_t copies = std::max<int64_t>(1, node.max_repeat < 0 ? node.min_repeat + 1 : node.max_repeat);
  if (options.repetition_copies_cap > 0) copies = std::min(copies, options.repetition_copies_cap);
  return copies;
}

// Right-linear rules (grammar/fsm_builder.cc, MergeRightLinearGroups): a rule is pure
// right-linear when every rule reference in its body is a tail call (nothing follows it in
// the rule) of another pure right-linear rule, and it has no lookahead and no TagDispatch.
// `tail_callees[r]` lists the rules r calls; it is read only where pure[r].
struct RightLinearRules {
  std::vector<uint8_t> pure;
  std::vector<std::vector<RuleId>> tail_callees;
};

// The rules each rule's body and lookahead reference; which rules call only in tail
// position (right_linear, before CloseRightLinearRules); and what the two limits on inlined
// copies (KeepCallsCopiedByRepetitions, KeepCallsOfWideFanout) need to know that they cannot
// fire in a rule, so that they walk only the rules where they might.
struct RuleGraph {
  std::vector<std::vector<RuleId>> refs;  // the callees of each rule, each listed once
  // ref_count[ref_begin[r] + i]: the nodes of rule r that name refs[r][i] (a reference node
  // or a TagDispatch), each node counted once.
  std::vector<int32_t> ref_begin;
  std::vector<int32_t> ref_count;
  // The product of the copies of the repetitions among the rule's nodes (each node once,
  // saturated): no path from the body down to a reference goes through more copies, as the
  // nodes on a path are distinct.
  std::vector<int64_t> copies_bound;
  // A node of the rule was reached twice (a node shared within the rule): then a reference
  // may lie on more paths than there are nodes, and ref_count bounds nothing.
  std::vector<uint8_t> shared_within;
  RightLinearRules right_linear;
};

// Whether every reference in rule r's body is a tail call, listing them in `tail_callees`:
// a walk along every path, for the rules where a node is shared (a node may be in tail
// position on one path and not on another).
bool OnlyTailCalls(const GrammarAst& ast, RuleId r, std::vector<RuleId>* tail_callees) {
  std::vector<std::pair<ExprId, bool>> stack(1, {ast.rules[r].body, true});
  while (!stack.empty()) {
    auto [e, tail] = stack.back();
    stack.pop_back();
    const ExprNode& node = ast.node(e);
    switch (node.kind) {
      case ExprKind::kRuleRef:
        if (!tail) return false;
        tail_callees->push_back(node.rule_id);
        break;
      case ExprKind::kSequence:
        for (size_t i = 0; i < node.children.size(); ++i) {
          stack.emplace_back(node.children[i], tail && i + 1 == node.children.size());
        }
        break;
      case ExprKind::kChoice:
        for (ExprId child : node.children) stack.emplace_back(child, tail);
        break;
      case ExprKind::kRepeat:  // x? ends where x ends; any other repetition may go on
        stack.emplace_back(node.children[0], tail && node.max_repeat == 1);
        break;
      default:
        break;
    }
  }
  return true;
}

// One walk per rule over the nodes it reaches, each node once (with whether it is in tail
// position, where that is the same on every path: no node shared within the rule).
RuleGraph RuleReferences(const GrammarAst& ast, const InlineOptions& options) {
  constexpr int64_t kCopiesSaturation = int64_t{1} << 31;
  const int32_t num_rules = static_cast<int32_t>(ast.rules.size());
  RuleGraph graph{std::vector<std::vector<RuleId>>(num_rules),
                  std::vector<int32_t>(num_rules + 1, 0),
                  {},
                  std::vector<int64_t>(num_rules, 1),
                  std::vector<uint8_t>(num_rules, 0),
                  {std::vector<uint8_t>(num_rules, 0), std::vector<std::vector<RuleId>>(num_rules)}};
  // Expression nodes are shared between rules after inlining, so each rule walks its own DAG;
  // `seen[e] == r + 1` marks e as visited for rule r (one array for all rules, no clearing),
  // and `listed[callee] == r + 1` the callees already listed for rule r (a JSON value rule
  // names the same few rules at every property), at callees[slot[callee]].
  std::vector<uint32_t> seen(ast.nodes.size(), 0);
  std::vector<uint32_t> listed(num_rules, 0);
  std::vector<int32_t> slot(num_rules, 0);
  std::vector<RuleId> callees, tail_callees;
  // (node, in tail position) as node * 2 + tail: a plain integer keeps the pushes inline.
  std::vector<uint32_t> stack;
  auto push = [&stack](ExprId e, bool tail) { stack.push_back(static_cast<uint32_t>(e) << 1 | (tail ? 1u : 0u)); };
  for (RuleId r = 0; r < num_rules; ++r) {
    const uint32_t stamp = static_cast<uint32_t>(r) + 1;
    const int32_t begin = graph.ref_begin[r] = static_cast<int32_t>(graph.ref_count.size());
    callees.clear();
    tail_callees.clear();
    bool only_tail_calls = true;
    auto list = [&](RuleId callee) {
      if (listed[callee] != stamp) {
        listed[callee] = stamp;
        slot[callee] = static_cast<int32_t>(callees.size());
        callees.push_back(callee);
        graph.ref_count.push_back(0);
      }
      ++graph.ref_count[begin + slot[callee]];
    };
    if (ast.rules[r].lookahead >= 0) push(ast.rules[r].lookahead, false);
    push(ast.rules[r].body, true);
    while (!stack.empty()) {
      const ExprId e = static_cast<ExprId>(stack.back() >> 1);
      const bool tail = stack.back() & 1;
      stack.pop_back();
      if (seen[e] == stamp) {
        graph.shared_within[r] = 1;
        continue;
      }
      seen[e] = stamp;
      const ExprNode& node = ast.node(e);
      switch (node.kind) {
        case ExprKind::kRuleRef:
          list(node.rule_id);
          if (tail) {
            tail_callees.push_back(node.rule_id);
          } else {
            only_tail_calls = false;
          }
          break;
        case ExprKind::kTagDispatch:
          for (const auto& tag : ast.tag_dispatches[node.tag_dispatch].tags) list(tag.rule);
          break;
        case ExprKind::kSequence:
          for (size_t i = 0; i < node.children.size(); ++i) {
            push(node.children[i], tail && i + 1 == node.children.size());
          }
          break;
        case ExprKind::kChoice:
          for (ExprId child : node.children) push(child, tail);
          break;
        case ExprKind::kRepeat:  // x? ends where x ends; any other repetition may go on
          graph.copies_bound[r] = std::min(graph.copies_bound[r] * RepeatCopies(node, options), kCopiesSaturation);
          push(node.children[0], tail && node.max_repeat == 1);
          break;
        default:
          XG2_DCHECK(node.children.empty(), "only sequences, choices and repetitions have children");
          break;
      }
    }
    graph.refs[r].assign(callees.begin(), callees.end());
    if (KeptWhole(ast, r)) continue;
    if (graph.shared_within[r]) {
      tail_callees.clear();
      only_tail_calls = OnlyTailCalls(ast, r, &tail_callees);
    }
    graph.right_linear.pure[r] = only_tail_calls;
    if (only_tail_calls) graph.right_linear.tail_callees[r].assign(tail_callees.begin(), tail_callees.end());
  }
  graph.ref_begin[num_rules] = static_cast<int32_t>(graph.ref_count.size());
  return graph;
}

// Rules that lie on a reference cycle: in a component of several rules, or calling themselves.
std::vector<uint8_t> RecursiveRules(const std::vector<std::vector<RuleId>>& refs) {
  const StronglyConnectedComponents components = FindStronglyConnectedComponents(refs);
  std::vector<uint8_t> recursive(refs.size(), 0);
  for (RuleId r = 0; r < static_cast<RuleId>(refs.size()); ++r) {
    recursive[r] = components.members[components.component_of[r]].size() > 1 ||
                   std::find(refs[r].begin(), refs[r].end(), r) != refs[r].end();
  }
  return recursive;
}

// Greatest fixpoint: drops from `rules` the rules that tail-call a rule that is not pure.
void CloseRightLinearRules(RightLinearRules* rules) {
  const int32_t n = static_cast<int32_t>(rules->pure.size());
  for (bool changed = true; changed;) {
    changed = false;
    for (RuleId r = 0; r < n; ++r) {
      if (!rules->pure[r]) continue;
      for (RuleId callee : rules->tail_callees[r]) {
        if (!rules->pure[callee]) {
          rules->pure[r] = 0;
          changed = true;
          break;
        }
      }
    }
  }
}

// Which rules may be inlined, with each rule's expanded size (callees first, memoised;
// recursion is cut at recursive rules, which are never inlined and count as one node).
struct Inlinability {
  std::vector<int64_t> rule_size;
  std::vector<uint8_t> inlinable;
};

// Sizes every rule's body with its inlinable callees expanded, and decides which rules are
// inlinable, in one depth-first walk from rule 0, 1, ... (callees before their callers).
//
// The walk keeps its own stack of frames instead of recursing: a frame per expression node
// whose children are being summed, and a rule frame (whose one child is the rule's body) per
// rule being sized. A node's size depends only on the node and on the decisions of the rules
// under it, which are final before the node is finished, so each node is sized once
// (`node_size`) however many rule bodies or parents share it.
class RuleSizer {
 public:
  RuleSizer(const GrammarAst& ast, const InlineOptions& options, const std::vector<uint8_t>& recursive,
            const RightLinearRules& right_linear, const std::vector<uint8_t>& right_linear_entry, Inlinability* result)
      : ast_(ast),
        options_(options),
        recursive_(recursive),
        right_linear_(right_linear),
        right_linear_entry_(right_linear_entry),
        rule_size_(result->rule_size),
        inlinable_(result->inlinable),
        keeps_call_(ast.rules.size(), 0),
        sizing_(ast.rules.size(), 0),
        node_size_(ast.nodes.size(), -1) {}

  void SizeAllRules() {
    for (RuleId r = 0; r < static_cast<RuleId>(ast_.rules.size()); ++r) {
      if (rule_size_[r] < 0 && !BeginRule(r, -1)) Run();
    }
    XG2_DCHECK(depth_ == 0, "every rule frame was finished");
  }

 private:
  // A chain `a ::= b`, `b ::= c`, ... deeper than this is cut: the rule there stays a call
  // (size one, not inlinable), and its callees are sized from the loop over all rules.
  static constexpr int kMaxChainDepth = 1000;
  static constexpr int64_t kSizeCap = int64_t{1} << 30;

  struct Frame {
    const ExprId* next_child;  // the children not started yet: [next_child, end)
    const ExprId* end;
    ExprId expr;   // the node summed; for a rule frame, the reference that entered it (-1: none)
    RuleId rule;   // >= 0: a rule frame, whose one child is the rule's body
    int64_t size;  // the node's own 1 plus its finished children
  };

  static int64_t Add(int64_t size, int64_t child) { return std::min<int64_t>(size + child, kSizeCap); }

  // What a reference to `r` adds to its caller, once r is sized.
  int64_t RefSize(RuleId r) const { return inlinable_[r] ? rule_size_[r] : 1; }

  // Starts sizing rule r (reached through `ref`, or from the loop over all rules). Returns
  // true when r is sized at once (a recursive rule, or a chain cut), false after pushing its frame.
  bool BeginRule(RuleId r, ExprId ref) {
    rule_size_[r] = 1;  // provisional, and final for the two cases below
    if (recursive_[r] || depth_ >= kMaxChainDepth) return true;
    ++depth_;
    sizing_[r] = 1;
    const ExprId* body = &ast_.rules[r].body;
    Push({body, body + 1, ref, r, 0});
    return false;
  }

  // The size of node e when it is known without walking further; -1 after pushing a frame.
  int64_t Start(ExprId e) {
    if (node_size_[e] >= 0) return node_size_[e];
    const ExprNode& node = ast_.node(e);
    if (node.kind == ExprKind::kRuleRef) {
      const RuleId r = node.rule_id;
      XG2_DCHECK(!sizing_[r], "a rule being sized is not reached again (it would be recursive)");
      if (rule_size_[r] < 0 && !BeginRule(r, e)) return -1;
      return node_size_[e] = RefSize(r);
    }
    if (node.children.empty()) return node_size_[e] = 1;
    Push({node.children.begin(), node.children.end(), e, -1, 1});
    return -1;
  }

  // The frames live in stack_[0, top_): stack_ only grows, so a push stays a store.
  void Push(const Frame& frame) {
    if (top_ == stack_.size()) stack_.resize(std::max<size_t>(2 * top_, 16));
    stack_[top_++] = frame;
  }

  // Pops frames until the stack is empty, adding each finished node's size to its parent's.
  void Run() {
    while (top_ > 0) {
      Frame& top = stack_[top_ - 1];
      if (top.next_child != top.end) {
        const ExprId child = *top.next_child++;
        const size_t parent = top_ - 1;  // Start may push, which may move the frames
        const int64_t child_size = Start(child);
        if (child_size >= 0) stack_[parent].size = Add(stack_[parent].size, child_size);
        continue;
      }
      const Frame done = top;
      --top_;
      int64_t size;
      if (done.rule >= 0) {
        FinishRule(done.rule, done.size);
        if (done.expr < 0) continue;  // entered from the loop over all rules: no parent
        size = node_size_[done.expr] = RefSize(done.rule);
      } else {
        size = done.size;
        const ExprNode& node = ast_.node(done.expr);
        // The FSM holds one copy of the body per bounded repetition.
        if (node.kind == ExprKind::kRepeat) size = std::min<int64_t>(1 + (size - 1) * RepeatCopies(node, options_), kSizeCap);
        node_size_[done.expr] = size;
      }
      XG2_DCHECK(top_ > 0, "a finished node other than a rule's body has a parent frame");
      stack_[top_ - 1].size = Add(stack_[top_ - 1].size, size);
    }
  }

  void FinishRule(RuleId r, int64_t size) {
    --depth_;
    sizing_[r] = 0;
    rule_size_[r] = size;
    // An entry of a right-linear group that keeps a call (its callee is not inlined) becomes
    // one DFA for the group's whole language when the FSM is built (MergeRightLinearGroups).
    // Inlined, it would move its first bytes into the caller and leave the call to the rest:
    // a rule boundary inside the language, where tokens stay uncertain for the Earley parser
    // (the JSON Schema frontend's right-linear rules for a key pattern, say). Members inside
    // the group are inlined as before.
    const std::vector<RuleId>& tail_callees = right_linear_.tail_callees[r];
    keeps_call_[r] = right_linear_.pure[r] && std::any_of(tail_callees.begin(), tail_callees.end(), [&](RuleId callee) {
                       return !inlinable_[callee] || keeps_call_[callee];
                     });
    const bool merged_later = right_linear_entry_[r] && keeps_call_[r];
    // A TagDispatch or an automaton literal must stay a whole rule body (grammar_ast.h).
    inlinable_[r] = r != ast_.root_rule && !KeptWhole(ast_, r) && size <= options_.max_inlined_size && !merged_later;
  }

  const GrammarAst& ast_;
  const InlineOptions& options_;
  const std::vector<uint8_t>& recursive_;
  const RightLinearRules& right_linear_;
  const std::vector<uint8_t>& right_linear_entry_;
  std::vector<int64_t>& rule_size_;
  std::vector<uint8_t>& inlinable_;
  // Pure right-linear rules whose body, with inlinable callees expanded, still has a call.
  std::vector<uint8_t> keeps_call_;
  std::vector<uint8_t> sizing_;  // rules with a frame on the stack
  std::vector<int64_t> node_size_;
  std::vector<Frame> stack_;
  size_t top_ = 0;
  int depth_ = 0;  // rule frames on the stack
};

Inlinability FindInlinableRules(const GrammarAst& ast, const InlineOptions& options, RuleGraph* graph) {
  const int32_t num_rules = static_cast<int32_t>(ast.rules.size());
  const std::vector<std::vector<RuleId>>& refs = graph->refs;
  const std::vector<uint8_t> recursive = RecursiveRules(refs);
  CloseRightLinearRules(&graph->right_linear);
  const RightLinearRules& right_linear = graph->right_linear;
  // Pure right-linear rules that a rule outside the group calls: the group's entries.
  std::vector<uint8_t> right_linear_entry(num_rules, 0);
  for (RuleId r = 0; r < num_rules; ++r) {
    if (right_linear.pure[r]) continue;
    for (RuleId callee : refs[r]) right_linear_entry[callee] = right_linear.pure[callee];
  }
  Inlinability result{std::vector<int64_t>(num_rules, -1), std::vector<uint8_t>(num_rules, 0)};
  RuleSizer(ast, options, recursive, right_linear, right_linear_entry, &result).SizeAllRules();
  return result;
}

// A reference inside a bounded repetition is copied once per repetition; it stays a call
// when inlining it there would add more than this many nodes. Below the bound, inlining pays:
// the copies of a long repetition look alike within one token's reach and share one cache
// entry (matcher/token_mask_cache.h). Marks such references in `keep_call`.
void KeepCallsCopiedByRepetitions(const GrammarAst& ast, const InlineOptions& options, const RuleGraph& graph,
                                  const Inlinability& rules, std::vector<uint8_t>* keep_call) {
  constexpr int64_t kMaxInlinedCopiesSize = 120000;
  // Each walk below visits every node of a rule body once, in no particular order (an
  // explicit stack: bodies can be deep).
  std::vector<std::pair<ExprId, int64_t>> copies_stack;
  for (RuleId r = 0; r < static_cast<RuleId>(ast.rules.size()); ++r) {
    ThrowIfCancelled();
    // No reference of the rule lies under more copies than its bound: skip the walk when
    // not even its largest inlinable callee would pass the limit there.
    int64_t largest = 0;
    for (int32_t i = graph.ref_begin[r]; i < graph.ref_begin[r + 1]; ++i) {
      const RuleId callee = graph.refs[r][i - graph.ref_begin[r]];
      if (rules.inlinable[callee]) largest = std::max(largest, rules.rule_size[callee]);
    }
    if (graph.copies_bound[r] <= 1 || graph.copies_bound[r] * largest <= kMaxInlinedCopiesSize) continue;
    copies_stack.assign(1, {ast.rules[r].body, 1});
    while (!copies_stack.empty()) {
      const auto [e, copies] = copies_stack.back();
      copies_stack.pop_back();
      const ExprNode& node = ast.node(e);
      if (copies > 1 && node.kind == ExprKind::kRuleRef && rules.inlinable[node.rule_id] &&
          copies * rules.rule_size[node.rule_id] > kMaxInlinedCopiesSize) {
        (*keep_call)[e] = 1;
      }
      int64_t inner = copies;
      if (node.kind == ExprKind::kRepeat) {
        inner = copies * RepeatCopies(node, options);
        inner = std::min<int64_t>(inner, 1 << 20);
      }
      for (ExprId child : node.children) copies_stack.push_back({child, inner});
    }
  }
}

// A rule inlined at many places of one caller is copied into the caller's DFA once per place,
// and the copies rarely merge: each is followed by something else (the object rule of a
// schema with 200 properties has one value copy per property, each before its own rest).
// Past kMaxInlinedFanoutSize nodes in one caller, the references there stay calls.
void KeepCallsOfWideFanout(const GrammarAst& ast, const RuleGraph& graph, const Inlinability& rules,
                           std::vector<uint8_t>* keep_call) {
  constexpr int64_t kMaxInlinedFanoutSize = 4096;
  std::vector<int64_t> occurrences(ast.rules.size(), 0);  // in the rule being walked; reset after it
  std::vector<ExprId> refs_in_rule;                        // its references to inlinable rules
  std::vector<ExprId> stack;
  for (RuleId r = 0; r < static_cast<RuleId>(ast.rules.size()); ++r) {
    ThrowIfCancelled();
    // Where no node is shared within the rule, a callee occurs on no more paths than there
    // are nodes naming it: skip the walk when no callee's count passes the limit.
    bool may_pass = graph.shared_within[r];
    for (int32_t i = graph.ref_begin[r]; i < graph.ref_begin[r + 1] && !may_pass; ++i) {
      const RuleId callee = graph.refs[r][i - graph.ref_begin[r]];
      may_pass = rules.inlinable[callee] && graph.ref_count[i] * rules.rule_size[callee] > kMaxInlinedFanoutSize;
    }
    if (!may_pass) continue;
    refs_in_rule.clear();
    stack.assign(1, ast.rules[r].body);
    while (!stack.empty()) {
      const ExprId e = stack.back();
      stack.pop_back();
      const ExprNode& node = ast.node(e);
      if (node.kind == ExprKind::kRuleRef && rules.inlinable[node.rule_id]) {
        refs_in_rule.push_back(e);
        if (!(*keep_call)[e]) ++occurrences[node.rule_id];
      }
      for (ExprId child : node.children) stack.push_back(child);
    }
    for (ExprId e : refs_in_rule) {
      const RuleId callee = ast.node(e).rule_id;
      if (occurrences[callee] * rules.rule_size[callee] > kMaxInlinedFanoutSize) (*keep_call)[e] = 1;
    }
    for (ExprId e : refs_in_rule) occurrences[ast.node(e).rule_id] = 0;
  }
}

// The dispatch table keeps the dispatches of reached nodes only, in their order: a dropped
// rule's dispatch would still name the rules its tags hand over to, dropped ones as -1, and
// the passes that read the table would take it for a live one. A reached dispatch names
// reached rules (they are referenced, so never dropped).
void KeepReachedDispatches(GrammarAst* ast, const std::vector<uint8_t>& seen, const std::vector<RuleId>& new_id) {
  std::vector<int32_t> new_dispatch(ast->tag_dispatches.size(), -1);
  for (ExprId e = 0; e < static_cast<ExprId>(ast->nodes.size()); ++e) {
    if (seen[e] && ast->node(e).kind == ExprKind::kTagDispatch) new_dispatch[ast->node(e).tag_dispatch] = 0;
  }
  std::vector<TagDispatchDef> kept_dispatches;
  for (size_t d = 0; d < ast->tag_dispatches.size(); ++d) {
    if (new_dispatch[d] < 0) continue;
    new_dispatch[d] = static_cast<int32_t>(kept_dispatches.size());
    kept_dispatches.push_back(std::move(ast->tag_dispatches[d]));
    for (auto& tag : kept_dispatches.back().tags) {
      tag.rule = new_id[tag.rule];
      XG2_DCHECK(tag.rule >= 0, "a reached dispatch hands over to reached rules");
    }
  }
  for (ExprId e = 0; e < static_cast<ExprId>(ast->nodes.size()); ++e) {
    if (seen[e] && ast->node(e).kind == ExprKind::kTagDispatch) {
      ast->node(e).tag_dispatch = new_dispatch[ast->node(e).tag_dispatch];
    }
  }
  ast->tag_dispatches = std::move(kept_dispatches);
}

// Keeps only rules reachable from the root, renumbered in order. One walk over the expression
// nodes: a node reached once has given all the rules it names (the bodies share nodes after
// inlining, and a walk per rule would go through each inlined body again).
void DropUnreachableRules(GrammarAst* ast) {
  const int32_t num_rules = static_cast<int32_t>(ast->rules.size());
  std::vector<uint8_t> reachable(num_rules, 0);
  std::vector<uint8_t> seen(ast->nodes.size(), 0);
  std::vector<ExprId> stack;
  auto reach = [&](RuleId r) {
    if (reachable[r]) return;
    reachable[r] = 1;
    for (ExprId root : {ast->rules[r].body, ast->rules[r].lookahead}) {
      if (root >= 0) stack.push_back(root);
    }
  };
  reach(ast->root_rule);
  while (!stack.empty()) {
    const ExprId e = stack.back();
    stack.pop_back();
    if (seen[e]) continue;
    seen[e] = 1;
    const ExprNode& node = ast->node(e);
    if (node.kind == ExprKind::kRuleRef) reach(node.rule_id);
    if (node.kind == ExprKind::kTagDispatch) {
      for (const auto& tag : ast->tag_dispatches[node.tag_dispatch].tags) reach(tag.rule);
    }
    for (ExprId child : node.children) stack.push_back(child);
  }
  std::vector<RuleId> new_id(num_rules, -1);
  std::vector<RuleDef> kept;
  for (RuleId r = 0; r < num_rules; ++r) {
    if (!reachable[r]) continue;
    new_id[r] = static_cast<RuleId>(kept.size());
    kept.push_back(std::move(ast->rules[r]));
  }
  for (ExprNode& node : ast->nodes) {
    if (node.kind == ExprKind::kRuleRef && new_id[node.rule_id] >= 0) node.rule_id = new_id[node.rule_id];
  }
  if (!ast->tag_dispatches.empty()) KeepReachedDispatches(ast, seen, new_id);
  ast->root_rule = new_id[ast->root_rule];
  ast->rules = std::move(kept);
}

}  // namespace

void InlineSmallRules(GrammarAst* ast, const InlineOptions& options) {
  RuleGraph graph = RuleReferences(*ast, options);
  const Inlinability rules = FindInlinableRules(*ast, options, &graph);
  std::vector<uint8_t> keep_call(ast->nodes.size(), 0);
  KeepCallsCopiedByRepetitions(*ast, options, graph, rules, &keep_call);
  KeepCallsOfWideFanout(*ast, graph, rules, &keep_call);

  // Replace each remaining reference to an inlinable rule by the rule's body root. Children are
  // shared, not copied: the FSM builder lowers every occurrence of a node separately.
  for (ExprId e = 0; e < static_cast<ExprId>(ast->nodes.size()); ++e) {
    if (keep_call[e]) continue;
    while (ast->node(e).kind == ExprKind::kRuleRef && rules.inlinable[ast->node(e).rule_id]) {
      ExprNode body = ast->node(ast->rules[ast->node(e).rule_id].body);
      ast->node(e) = std::move(body);
    }
  }
  DropUnreachableRules(ast);
}

}  // namespace xg2
