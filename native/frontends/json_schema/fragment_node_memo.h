// A memo keyed by fragment node address (ebnf_builder.h): a conversion's arena hash-conses its
// nodes, so a pass over fragment trees meets the same few nodes many times and keeps one answer
// per node. A flat table (open addressing, linear probing, at most half full): no allocation
// per entry, unlike a node-based map.
#ifndef XG2_FRONTENDS_JSON_SCHEMA_FRAGMENT_NODE_MEMO_H_
#define XG2_FRONTENDS_JSON_SCHEMA_FRAGMENT_NODE_MEMO_H_

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "support/dcheck.h"

namespace xg2 {

struct FragmentNode;

template <typename Value>
class FragmentNodeMemo {
 public:
  FragmentNodeMemo() : slots_(kInitialSlots) {}

  // The value kept for `node`, or null. Valid until the next Add.
  const Value* Find(const FragmentNode* node) const {
    for (size_t slot = SlotOf(node); slots_[slot].node != nullptr; slot = Next(slot)) {
      if (slots_[slot].node == node) return &slots_[slot].value;
    }
    return nullptr;
  }

  // Keeps `value` for `node`, which has none yet.
  void Add(const FragmentNode* node, Value value) {
    XG2_DCHECK(node != nullptr && Find(node) == nullptr, "a node is added to a memo once");
    if (2 * (used_ + 1) > slots_.size()) Grow();
    Place(Slot{node, std::move(value)});
    ++used_;
  }

 private:
  static constexpr size_t kInitialSlots = 64;  // a power of two
  struct Slot {
    const FragmentNode* node = nullptr;
    Value value{};
  };

  size_t SlotOf(const FragmentNode* node) const {
    // Fibonacci hashing of the address (its low bits are alignment).
    return (reinterpret_cast<uintptr_t>(node) >> 4) * 0x9E3779B97F4A7C15ull >> 20 & (slots_.size() - 1);
  }
  size_t Next(size_t slot) const { return (slot + 1) & (slots_.size() - 1); }
  void Place(Slot&& entry) {
    size_t slot = SlotOf(entry.node);
    while (slots_[slot].node != nullptr) slot = Next(slot);
    slots_[slot] = std::move(entry);
  }
  void Grow() {
    std::vector<Slot> old(2 * slots_.size());
    old.swap(slots_);
    for (Slot& entry : old) {
      if (entry.node != nullptr) Place(std::move(entry));
    }
  }

  std::vector<Slot> slots_;  // size a power of two
  size_t used_ = 0;
};

}  // namespace xg2

#endif  // XG2_FRONTENDS_JSON_SCHEMA_FRAGMENT_NODE_MEMO_H_
