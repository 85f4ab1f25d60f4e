// WriteRightLinearRules (right_linear_rules.h).
#include "frontends/json_schema/right_linear_rules.h"

#include <utility>
#include <vector>

#include "support/dcheck.h"

namespace xg2 {

namespace {

// How deep states may nest inside one rule's body: each level adds a sequence and an
// alternation to the fragment tree, which the lowering and the FSM builder walk recursively.
constexpr int kMaxNestingDepth = 16;

enum class StateForm : uint8_t {
  kEnd,     // no edges: the empty string where it is reached
  kNested,  // written inside the body of the one state with an edge to it
  kRule,    // a rule of its own
};

}  // namespace

std::map<int32_t, std::string> ClassesByTarget(const CodepointDfa::State& state) {
  std::map<int32_t, std::string> classes;
  for (const auto& e : state.edges) {
    std::string& members = classes[e.target];
    members += EbnfClassMember(e.lo);
    if (e.hi > e.lo) members += (e.hi > e.lo + 1 ? "-" : "") + EbnfClassMember(e.hi);
  }
  return classes;
}

Fragment WriteRightLinearRules(const CodepointDfa& dfa, RuleSet* rules, const std::string& hint) {
  const int32_t n = static_cast<int32_t>(dfa.states.size());
  std::vector<std::map<int32_t, std::string>> classes(n);
  std::vector<int32_t> uses(n, 0);  // (state, class) edges into each state from other states
  std::vector<uint8_t> self_loop(n, 0);
  for (int32_t i = 0; i < n; ++i) {
    classes[i] = ClassesByTarget(dfa.states[i]);
    for (const auto& [target, members] : classes[i]) {
      if (target == i) {
        self_loop[i] = 1;
      } else {
        ++uses[target];
      }
    }
  }
  std::vector<StateForm> form(n);
  for (int32_t i = 0; i < n; ++i) {
    form[i] = dfa.states[i].edges.empty()                      ? StateForm::kEnd
              : i == 0 || self_loop[i] != 0 || uses[i] != 1 ? StateForm::kRule
                                                               : StateForm::kNested;
  }
  // The nested states hang below the rules as trees (each has one incoming edge); listed in
  // pre-order from each rule, so that walking the list backwards meets every nested state
  // before the state whose body holds it. A nested state too deep becomes a rule.
  std::vector<int32_t> order;
  std::vector<uint8_t> listed(n, 0);
  std::vector<std::pair<int32_t, int>> stack;  // (state, nesting depth)
  auto list_from = [&](int32_t root) {
    stack.assign(1, {root, 0});
    listed[root] = 1;
    while (!stack.empty()) {
      const auto [state, depth] = stack.back();
      stack.pop_back();
      order.push_back(state);
      for (const auto& [target, members] : classes[state]) {
        if (form[target] != StateForm::kNested || listed[target] != 0) continue;
        if (depth + 1 > kMaxNestingDepth) {
          form[target] = StateForm::kRule;  // listed from its own root below
          continue;
        }
        listed[target] = 1;
        stack.emplace_back(target, depth + 1);
      }
    }
  };
  for (int32_t i = 0; i < n; ++i) {
    if (form[i] == StateForm::kRule && listed[i] == 0) list_from(i);
  }
  // Promoted states come after the loop above reached their index: list them now. Every
  // state is reachable from the start (the DFA is trimmed), so none is left unlisted.
  for (int32_t i = 0; i < n; ++i) {
    if (form[i] == StateForm::kRule && listed[i] == 0) list_from(i);
  }
  std::vector<std::string> names(n);
  for (int32_t i = 0; i < n; ++i) {
    XG2_DCHECK(form[i] == StateForm::kEnd || listed[i] != 0, "every state with edges is written");
    if (form[i] == StateForm::kRule) names[i] = rules->Reserve(hint);
  }
  std::vector<Fragment> body(n, Fragment::Never());
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    const int32_t state = *it;
    std::vector<Fragment> choices;
    if (dfa.states[state].accepting) choices.push_back(Fragment::Epsilon());
    for (const auto& [target, members] : classes[state]) {
      const Fragment next = form[target] == StateForm::kEnd    ? Fragment::Epsilon()
                            : form[target] == StateForm::kRule ? Fragment::Atom(names[target])
                                                               : body[target];
      XG2_DCHECK(!next.never(), "a nested state's body is written before its parent's");
      choices.push_back(Seq({Fragment::Atom("[" + members + "]"), next}));
    }
    body[state] = Alt(choices);
  }
  for (int32_t i = 0; i < n; ++i) {
    if (form[i] == StateForm::kRule) rules->Define(names[i], body[i]);
  }
  return names[0].empty() ? Fragment::Epsilon() : Fragment::Atom(names[0]);
}

}  // namespace xg2
