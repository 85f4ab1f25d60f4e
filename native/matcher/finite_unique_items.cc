// Unique items whose item rule has a finite language (grammar/grammar_fsm.h, "Unique items"):
// the parser refuses a byte that leaves no way to an unused value, so a prefix of a used
// value with no other completion is never taken (the JSON Schema frontend's uniqueItems over
// many listed scalars).
#include <algorithm>
#include <vector>

#include "matcher/earley_parser.h"
#include "support/dcheck.h"
#include "support/json_canonical.h"

namespace xg2 {

// finite_item[r]: r is a unique_item rule whose nodes have no rule edges and no cycle, so its
// language is a finite set of spellings. finite_holder_item[h]: for a holder whose rule edges
// all call one such rule, that rule (-1 otherwise). must_item[n], for a node of such a
// holder: every way from n to the holder's end calls the item rule first.
struct EarleyParser::FiniteUniqueRules {
  std::vector<uint8_t> finite_item;
  std::vector<RuleId> finite_holder_item;
  std::vector<uint8_t> must_item;
};

namespace {

// The nodes of `rule`, reached from its start by byte edges and the targets of rule edges.
// `mark` (one entry per node) is shared by the calls: a node is seen once its mark is `rule`,
// so each call costs the rule's size, not the grammar's.
std::vector<NodeId> RuleNodes(const GrammarFsm& g, RuleId rule, std::vector<RuleId>* mark) {
  std::vector<NodeId> nodes = {g.rule_start[rule]};
  (*mark)[static_cast<size_t>(g.rule_start[rule])] = rule;
  for (size_t i = 0; i < nodes.size(); ++i) {
    XG2_DCHECK(g.node_rule[nodes[i]] == rule, "a rule's edges stay in the rule");
    auto visit = [&](NodeId target) {
      if ((*mark)[static_cast<size_t>(target)] != rule) {
        (*mark)[static_cast<size_t>(target)] = rule;
        nodes.push_back(target);
      }
    };
    for (const ByteEdge* e = g.byte_edges_begin(nodes[i]); e != g.byte_edges_end(nodes[i]); ++e) visit(e->target);
    for (const RuleEdge* e = g.rule_edges_begin(nodes[i]); e != g.rule_edges_end(nodes[i]); ++e) visit(e->target);
  }
  return nodes;
}

// Whether the rule with these nodes calls no rule and its byte edges form no cycle (a finite
// language). `indegree` (one entry per node, all zero) is left all zero.
bool FiniteWithoutCalls(const GrammarFsm& g, const std::vector<NodeId>& nodes, std::vector<int32_t>* indegree) {
  for (NodeId n : nodes) {
    if (g.rule_edge_begin[n] != g.rule_edge_begin[n + 1]) return false;
  }
  for (NodeId n : nodes) {
    for (const ByteEdge* e = g.byte_edges_begin(n); e != g.byte_edges_end(n); ++e) ++(*indegree)[e->target];
  }
  // Kahn's order: every node is removed exactly when the graph has no cycle.
  std::vector<NodeId> ready;
  for (NodeId n : nodes) {
    if ((*indegree)[n] == 0) ready.push_back(n);
  }
  size_t removed = 0;
  while (!ready.empty()) {
    const NodeId n = ready.back();
    ready.pop_back();
    ++removed;
    for (const ByteEdge* e = g.byte_edges_begin(n); e != g.byte_edges_end(n); ++e) {
      if (--(*indegree)[e->target] == 0) ready.push_back(e->target);
    }
  }
  for (NodeId n : nodes) (*indegree)[n] = 0;
  return removed == nodes.size();
}

}  // namespace

std::shared_ptr<const EarleyParser::FiniteUniqueRules> EarleyParser::FindFiniteUniqueRules(const GrammarFsm& g) {
  auto rules = std::make_shared<FiniteUniqueRules>();
  rules->finite_item.assign(static_cast<size_t>(g.num_rules()), 0);
  std::vector<RuleId> mark(static_cast<size_t>(g.num_nodes()), -1);
  std::vector<int32_t> indegree(static_cast<size_t>(g.num_nodes()), 0);
  bool any_item = false;
  for (RuleId r = 0; r < g.num_rules(); ++r) {
    if (g.IsUniqueItemRule(r) && FiniteWithoutCalls(g, RuleNodes(g, r, &mark), &indegree)) {
      rules->finite_item[r] = any_item = true;
    }
  }
  if (!any_item) return nullptr;
  rules->finite_holder_item.assign(static_cast<size_t>(g.num_rules()), -1);
  bool any_holder = false;
  for (RuleId h = 0; h < g.num_rules(); ++h) {
    if (g.rule_unique[h] != GrammarFsm::kUniqueItemsHolder) continue;
    const std::vector<NodeId> nodes = RuleNodes(g, h, &mark);
    RuleId item = -1;
    bool only_that_item = true;
    for (NodeId n : nodes) {
      for (const RuleEdge* e = g.rule_edges_begin(n); e != g.rule_edges_end(n); ++e) {
        if (!rules->finite_item[e->rule] || (item >= 0 && e->rule != item)) only_that_item = false;
        item = e->rule;
      }
    }
    if (item < 0 || !only_that_item) continue;
    rules->finite_holder_item[h] = item;
    any_holder = true;
    // must_item: the complement of the nodes that reach an accepting node by byte edges
    // alone, found by relaxation (a holder rule is small: a few nodes per item bound). It
    // starts true on the holder's nodes and is cleared where the end is reachable.
    if (rules->must_item.empty()) rules->must_item.assign(static_cast<size_t>(g.num_nodes()), 0);
    for (NodeId n : nodes) rules->must_item[n] = 1;
    for (bool changed = true; changed;) {
      changed = false;
      for (NodeId n : nodes) {
        if (!rules->must_item[n]) continue;
        bool ends = g.node_accepting[n] != 0;
        for (const ByteEdge* e = g.byte_edges_begin(n); !ends && e != g.byte_edges_end(n); ++e) {
          ends = !rules->must_item[e->target];
        }
        if (ends) {
          rules->must_item[n] = 0;
          changed = true;
        }
      }
    }
  }
  // An item rule called from a holder that calls other rules too is not checked here; the
  // JSON Schema frontend writes one item rule per holder and layout bytes inline.
  if (!any_holder) return nullptr;
  return rules;
}

bool EarleyParser::InUniqueSet(int32_t set, const std::string& value) const {
  for (int32_t s = set; s > 0; s = unique_sets_[s].parent) {
    if (unique_sets_[s].value == value) return true;
  }
  return false;
}

bool EarleyParser::CompletesWithUnusedValue(NodeId node, std::string* prefix, int32_t set) {
  const GrammarFsm& g = *fsm_;
  XG2_DCHECK(finite_unique_->finite_item[g.node_rule[node]], "the search stays in a finite item rule");
  Spend(1);
  if (g.node_accepting[node] && !InUniqueSet(set, CanonicalJsonValue(*prefix))) return true;
  // The rule is acyclic (FindFiniteUniqueRules), so the search ends; it stops at the first
  // unused value, after at most one completion per used value.
  for (const ByteEdge* e = g.byte_edges_begin(node); e != g.byte_edges_end(node); ++e) {
    for (int byte = e->lo; byte <= e->hi; ++byte) {
      prefix->push_back(static_cast<char>(byte));
      const bool found = CompletesWithUnusedValue(e->target, prefix, set);
      prefix->pop_back();
      if (found) return true;
    }
  }
  return false;
}

bool EarleyParser::FiniteUniqueItemsLive(int32_t here) {
  const GrammarFsm& g = *fsm_;
  const FiniteUniqueRules& rules = *finite_unique_;
  for (int32_t i = scannable_begin_[here]; i < scannable_begin_[here + 1]; ++i) {
    const EarleyItem& item = scannable_[i];
    const RuleId rule = g.node_rule[item.node];
    if (rules.finite_item[rule]) {
      // The item's text so far; its holders wait at its origin with their sets of values.
      std::string text;
      for (int32_t p = item.origin + 1; p <= here; ++p) text.push_back(static_cast<char>(byte_at_[p]));
      const EarleyWaiter* end = waiters_.data() + waiters_begin_[item.origin + 1];
      for (const EarleyWaiter* w = waiters_.data() + waiters_begin_[item.origin]; w != end; ++w) {
        if (w->rule == rule && CompletesWithUnusedValue(item.node, &text, w->count)) return true;
      }
    } else if (rules.finite_holder_item[rule] >= 0) {
      // A holder item carries its set of values in `count` (grammar/grammar_fsm.h).
      if (!rules.must_item[item.node]) return true;
      std::string text;
      if (CompletesWithUnusedValue(g.rule_start[rules.finite_holder_item[rule]], &text, item.count)) return true;
    } else {
      return true;  // outside every finite item: the infinite-language argument holds
    }
  }
  return false;
}

bool EarleyParser::NearFiniteUniqueItem() const {
  if (!finite_unique_) return false;
  const int32_t here = position();
  for (int32_t i = scannable_begin_[here]; i < scannable_begin_[here + 1]; ++i) {
    const RuleId rule = fsm_->node_rule[scannable_[i].node];
    if (finite_unique_->finite_item[rule] || finite_unique_->finite_holder_item[rule] >= 0) return true;
  }
  return false;
}

}  // namespace xg2
