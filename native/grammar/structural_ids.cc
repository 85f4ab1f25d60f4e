// StructuralIds: hash-consing of expression nodes (see the header).
#include "grammar/structural_ids.h"

#include <algorithm>
#include <cstring>

#include "support/dcheck.h"

namespace xg2 {
namespace fsm_build {
namespace {

uint64_t Mix(uint64_t h, uint64_t word) {
  h ^= word;
  h *= 0xFF51AFD7ED558CCDull;
  return h ^ (h >> 29);
}

uint64_t MixBytes(uint64_t h, std::string_view bytes) {
  h = Mix(h, bytes.size());
  size_t i = 0;
  for (; i + 8 <= bytes.size(); i += 8) {
    uint64_t word;
    std::memcpy(&word, bytes.data() + i, 8);
    h = Mix(h, word);
  }
  if (i < bytes.size()) {
    uint64_t word = 0;
    std::memcpy(&word, bytes.data() + i, bytes.size() - i);
    h = Mix(h, word);
  }
  return h;
}

}  // namespace

int32_t StructuralIds::Compute(ExprId e) {
  if (id_.empty()) id_.assign(ast_.nodes.size(), -1);
  // Post-order: a node is assigned when it is on top and its children all have ids; else
  // the children without one go on top of it. A child listed twice may be pushed twice; its
  // second visit finds it assigned.
  stack_.assign(1, e);
  while (!stack_.empty()) {
    const ExprId top = stack_.back();
    if (id_[top] >= 0) {
      stack_.pop_back();
      continue;
    }
    const size_t before = stack_.size();
    for (ExprId child : ast_.node(top).children) {
      if (id_[child] < 0) stack_.push_back(child);
    }
    if (stack_.size() == before) {
      id_[top] = Assign(top);
      stack_.pop_back();
    }
  }
  return id_[e];
}

int32_t StructuralIds::Assign(ExprId e) {
  if (2 * (representative_.size() + 1) > slots_.size()) Grow();
  const ExprNode& node = ast_.node(e);
  const uint64_t hash = NodeHash(node);
  const size_t mask = slots_.size() - 1;
  for (size_t i = hash & mask;; i = (i + 1) & mask) {
    const int32_t id = slots_[i];
    if (id < 0) {
      slots_[i] = static_cast<int32_t>(representative_.size());
      representative_.push_back(e);
      hash_.push_back(hash);
      return slots_[i];
    }
    if (hash_[id] == hash && SameNode(node, ast_.node(representative_[id]))) return id;
  }
}

uint64_t StructuralIds::NodeHash(const ExprNode& node) const {
  uint64_t h = Mix(0x9E3779B97F4A7C15ull, static_cast<uint64_t>(node.kind));
  switch (node.kind) {
    case ExprKind::kBytes:
      h = MixBytes(h, node.bytes);
      break;
    case ExprKind::kCharClass:
      h = Mix(h, node.ranges.size());
      for (const CodepointRange& r : node.ranges) h = Mix(h, (static_cast<uint64_t>(r.first) << 32) | r.last);
      break;
    case ExprKind::kRuleRef:
      h = Mix(h, static_cast<uint32_t>(node.rule_id));
      break;
    case ExprKind::kRepeat:
      h = Mix(h, (static_cast<uint64_t>(static_cast<uint32_t>(node.min_repeat)) << 32) |
                     static_cast<uint32_t>(node.max_repeat));
      break;
    case ExprKind::kTagDispatch:
      h = Mix(h, static_cast<uint32_t>(node.tag_dispatch));
      break;
    case ExprKind::kAutomaton:
      h = Mix(h, static_cast<uint32_t>(node.automaton));
      break;
    case ExprKind::kEmpty:
    case ExprKind::kSequence:
    case ExprKind::kChoice:
      break;
  }
  h = Mix(h, node.children.size());
  for (ExprId child : node.children) {
    XG2_DCHECK(id_[child] >= 0, "structural id: a child is hashed before it has an id");
    h = Mix(h, static_cast<uint32_t>(id_[child]));
  }
  return h;
}

bool StructuralIds::SameNode(const ExprNode& a, const ExprNode& b) const {
  if (a.kind != b.kind || a.children.size() != b.children.size()) return false;
  switch (a.kind) {
    case ExprKind::kBytes:
      if (a.bytes != b.bytes) return false;
      break;
    case ExprKind::kCharClass:
      if (a.ranges != b.ranges) return false;
      break;
    case ExprKind::kRuleRef:
      if (a.rule_id != b.rule_id) return false;
      break;
    case ExprKind::kRepeat:
      if (a.min_repeat != b.min_repeat || a.max_repeat != b.max_repeat) return false;
      break;
    case ExprKind::kTagDispatch:
      if (a.tag_dispatch != b.tag_dispatch) return false;
      break;
    case ExprKind::kAutomaton:
      if (a.automaton != b.automaton) return false;
      break;
    case ExprKind::kEmpty:
    case ExprKind::kSequence:
    case ExprKind::kChoice:
      break;
  }
  for (size_t k = 0; k < a.children.size(); ++k) {
    if (id_[a.children[k]] != id_[b.children[k]]) return false;
  }
  return true;
}

void StructuralIds::Grow() {
  slots_.assign(std::max<size_t>(64, 2 * slots_.size()), -1);
  const size_t mask = slots_.size() - 1;
  for (size_t id = 0; id < representative_.size(); ++id) {
    size_t i = hash_[id] & mask;
    while (slots_[i] >= 0) i = (i + 1) & mask;
    slots_[i] = static_cast<int32_t>(id);
  }
}

}  // namespace fsm_build
}  // namespace xg2
