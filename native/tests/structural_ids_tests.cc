// Structural ids (grammar/structural_ids.h): on random ASTs whose nodes share children and
// repeat each other's structure, two nodes get one id exactly when a slow reference (the
// node printed in full, children recursively) prints them alike; ids are asked in a random
// order, so most subtrees are met half-assigned. Each payload field of each kind is drawn
// from a small set, so a hash or comparison that skipped a field would merge two classes.
#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "check.h"
#include "fsm_test_support.h"
#include "grammar/structural_ids.h"

namespace xg2_test {
namespace {

// The reference: every field StructuralIds compares, and the children in full.
std::string Print(const GrammarAst& ast, ExprId e) {
  const ExprNode& node = ast.node(e);
  std::string out = std::to_string(static_cast<int>(node.kind)) + "{";
  switch (node.kind) {
    case ExprKind::kBytes:
      out += "b" + std::to_string(node.bytes.size()) + ":" + node.bytes.str();
      break;
    case ExprKind::kCharClass:
      for (const CodepointRange& r : node.ranges) out += std::to_string(r.first) + "-" + std::to_string(r.last) + ",";
      break;
    case ExprKind::kRuleRef:
      out += "r" + std::to_string(node.rule_id);
      break;
    case ExprKind::kRepeat:
      out += std::to_string(node.min_repeat) + "," + std::to_string(node.max_repeat);
      break;
    case ExprKind::kTagDispatch:
      out += "t" + std::to_string(node.tag_dispatch);
      break;
    case ExprKind::kAutomaton:
      out += "a" + std::to_string(node.automaton);
      break;
    default:
      break;
  }
  for (ExprId child : node.children) out += "(" + Print(ast, child) + ")";
  return out + "}";
}

// A random node over the nodes made so far: leaves from a few payloads each, compounds over
// earlier nodes (shared), sometimes a copy of an earlier node (equal, distinct).
ExprId RandomNode(AstBuilder* b, std::mt19937* rng) {
  auto pick = [rng](int n) { return static_cast<int>((*rng)() % static_cast<unsigned>(n)); };
  const int existing = static_cast<int>(b->ast.nodes.size());
  auto any = [&] { return static_cast<ExprId>(pick(existing)); };
  const int choice = existing < 4 ? pick(6) : pick(11);
  ExprNode node;
  switch (choice) {
    case 0:
      return b->Bytes(std::vector<std::string>{"a", "b", "ab", "abcdefghi", "abcdefghj", "abcdefgh"}[pick(6)]);
    case 1:
      return b->Class(std::vector<std::vector<CodepointRange>>{
          {{'a', 'z'}}, {{'a', 'y'}}, {{'0', '9'}, {'a', 'z'}}, {{'0', '9'}, {'b', 'z'}}}[pick(4)]);
    case 2:
      return b->Ref(pick(3));
    case 3:
      return b->Empty();
    case 4:
      node.kind = ExprKind::kTagDispatch;
      node.tag_dispatch = pick(2);
      return b->ast.AddNode(std::move(node));
    case 5:
      node.kind = ExprKind::kAutomaton;
      node.automaton = pick(2);
      return b->ast.AddNode(std::move(node));
    case 6:
    case 7: {
      std::vector<ExprId> children;
      for (int k = 1 + pick(3); k > 0; --k) children.push_back(any());
      return pick(2) ? b->Seq(children) : b->Choice(children);
    }
    case 8: {
      static const int32_t kBounds[][2] = {{0, 1}, {0, -1}, {1, -1}, {0, 2}, {2, 5}};
      const auto& bounds = kBounds[pick(5)];
      return b->Repeat(any(), bounds[0], bounds[1]);
    }
    default: {
      ExprNode copy = b->ast.node(any());
      return b->ast.AddNode(std::move(copy));
    }
  }
}

}  // namespace

TEST(StructuralIdsAgreeWithFullComparisonOnRandomAsts) {
  for (unsigned seed = 1; seed <= 60; ++seed) {
    std::mt19937 rng(seed);
    AstBuilder b;
    for (int i = 0; i < 120; ++i) RandomNode(&b, &rng);
    const int n = static_cast<int>(b.ast.nodes.size());
    std::vector<ExprId> order(n);
    for (int i = 0; i < n; ++i) order[i] = i;
    std::shuffle(order.begin(), order.end(), rng);
    StructuralIds ids(b.ast);
    std::vector<int32_t> id(n);
    for (ExprId e : order) id[e] = ids.Of(e);
    std::vector<std::string> printed(n);
    for (int i = 0; i < n; ++i) printed[i] = Print(b.ast, i);
    int merged = 0;
    for (int i = 0; i < n; ++i) {
      CHECK_EQ(ids.Of(i), id[i]);  // stable once assigned
      for (int j = i + 1; j < n; ++j) {
        if ((id[i] == id[j]) != (printed[i] == printed[j])) {
          CHECK_EQ(printed[i] + " id " + std::to_string(id[i]), printed[j] + " id " + std::to_string(id[j]));
        }
        merged += printed[i] == printed[j];
      }
    }
    CHECK(merged > 0);  // the draw makes equal distinct nodes
    CHECK(ids.size() <= static_cast<size_t>(n));
  }
}

TEST(StructuralIdsOfDeepExpressionsNeedNoRecursion) {
  // Two equal chains of nested repetitions, deeper than a recursive walk's stack allows.
  AstBuilder b;
  constexpr int kDepth = 300000;
  ExprId tops[2];
  for (ExprId& top : tops) {
    top = b.Bytes("x");
    for (int d = 0; d < kDepth; ++d) top = b.Repeat(top, 0, 1);
  }
  StructuralIds ids(b.ast);
  CHECK_EQ(ids.Of(tops[0]), ids.Of(tops[1]));
  CHECK_EQ(ids.size(), static_cast<size_t>(kDepth + 1));
  CHECK(ids.Of(tops[0]) != ids.Of(b.ast.node(tops[0]).children[0]));
}

}  // namespace xg2_test
