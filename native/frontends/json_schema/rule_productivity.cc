// RuleSet::UnproductiveRules (ebnf_builder.h): which rules derive no finite string. A body
// whose named rules are all productive is productive; the rest is a least fixpoint.
#include <algorithm>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "frontends/json_schema/ebnf_builder.h"
#include "frontends/json_schema/fragment_node_memo.h"
#include "support/cancellation.h"
#include "support/dcheck.h"

namespace xg2 {

namespace {

// The rule a reference node names, by node: a conversion's arena makes each reference one
// node (hash-consing), so each distinct name is hashed about once, however often it is named.
class RuleIndexOfReference {
 public:
  explicit RuleIndexOfReference(const std::unordered_map<std::string, size_t>& index_of_name)
      : index_of_name_(index_of_name) {}
  // The index of the rule `reference` (a kRule node) names; -1 when the set has none.
  int32_t Find(const FragmentNode& reference) {
    XG2_DCHECK(reference.kind == FragmentNode::Kind::kRule, "a rule reference");
    if (const int32_t* known = by_node_.Find(&reference)) return *known;
    auto found = index_of_name_.find(reference.text);
    const int32_t index = found == index_of_name_.end() ? -1 : static_cast<int32_t>(found->second);
    by_node_.Add(&reference, index);
    return index;
  }

 private:
  const std::unordered_map<std::string, size_t>& index_of_name_;
  FragmentNodeMemo<int32_t> by_node_;
};

// Appends to `refs` the index of each rule that `node` names, and returns true; false when
// it names a rule the set does not know.
bool CollectRuleReferences(const FragmentNode& node, RuleIndexOfReference* rule_index, std::vector<int32_t>* refs) {
  if (node.kind == FragmentNode::Kind::kRule) {
    const int32_t index = rule_index->Find(node);
    if (index < 0) return false;
    refs->push_back(index);
    return true;
  }
  for (const auto& child : node.children) {
    if (!CollectRuleReferences(*child, rule_index, refs)) return false;
  }
  return true;
}

// Whether `node` derives some finite string once the rules marked in `productive` do
// (an unknown name derives nothing). A spelled class or expression always derives one (a
// class is never empty; an expression names no rule); a lookahead body needs its body and
// its lookahead to.
bool Derives(const FragmentNode& node, RuleIndexOfReference* rule_index, const std::vector<uint8_t>& productive) {
  using Kind = FragmentNode::Kind;
  switch (node.kind) {
    case Kind::kEmpty:
    case Kind::kLiteral:
    case Kind::kCharClass:
    case Kind::kExpression:
    case Kind::kAutomaton: return true;  // a trimmed automaton, never the empty language
    case Kind::kRule: {
      const int32_t index = rule_index->Find(node);
      return index >= 0 && productive[index];
    }
    case Kind::kRepeat: return node.min == 0 || Derives(*node.children[0], rule_index, productive);
    case Kind::kSequence:
    case Kind::kLookahead:
      for (const auto& child : node.children) {
        if (!Derives(*child, rule_index, productive)) return false;
      }
      return true;
    case Kind::kAlternation:
      for (const auto& child : node.children) {
        if (Derives(*child, rule_index, productive)) return true;
      }
      return false;
  }
  return false;
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
  RuleIndexOfReference rule_index(index_of_name_);
  for (size_t i = 0; i < n; ++i) {
    ThrowIfCancelled();
    const Rule& rule = rules_[i];
    const size_t first = refs.size();
    if (!rule.discarded && rule.body) {
      if (rule.productive) {
        ready.push_back(static_cast<int32_t>(i));
      } else if (CollectRuleReferences(*rule.body->node(), &rule_index, &refs)) {
        std::sort(refs.begin() + first, refs.end());
        refs.erase(std::unique(refs.begin() + first, refs.end()), refs.end());
        pending[i] = static_cast<int32_t>(refs.size() - first);
        if (pending[i] == 0) ready.push_back(static_cast<int32_t>(i));
      } else {
        refs.resize(first);  // left to the fixpoint below
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
  // their bodies, to the least fixpoint.
  std::vector<size_t> rest;
  for (size_t i = 0; i < n; ++i) {
    const Rule& rule = rules_[i];
    if (!rule.discarded && rule.body && !productive[i]) rest.push_back(i);
  }
  // Invariant: `productive` only grows; stop when a round adds nothing.
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t index : rest) {
      if (!productive[index] && Derives(*rules_[index].body->node(), &rule_index, productive)) {
        productive[index] = 1;
        changed = true;
      }
    }
  }
  std::vector<std::string> unproductive;
  for (size_t index : rest) {
    if (!productive[index]) unproductive.push_back(rules_[index].name);
  }
  return unproductive;
}

}  // namespace xg2
