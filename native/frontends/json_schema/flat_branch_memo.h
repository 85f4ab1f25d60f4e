// JSON Schema -> EBNF: FlatBranch's answers kept while ViableGroups counts combined branches
// and while PruneAlternatives prunes them. Both test branches for disjointness against a
// merge, and each test flattens the same subschemas again (the branch's members, and the
// merge's own, once per sibling branch and per direction): minecraft-item-modifier spent half
// of its conversion in those repeated flattenings. While one of them runs the answer is a
// function of the subschema and its pointer: neither enters a merge (merge_targets_ stays)
// nor ignores a keyword (flattening undoes its own refusals), so nothing FlatBranch reads
// changes.
#ifndef XG2_FRONTENDS_JSON_SCHEMA_FLAT_BRANCH_MEMO_H_
#define XG2_FRONTENDS_JSON_SCHEMA_FLAT_BRANCH_MEMO_H_

#include <map>
#include <optional>
#include <string>
#include <utility>

#include "support/json.h"

namespace xg2 {
namespace schema_internal {

// The memo of this thread's innermost open count (a scope: constructing one makes it the
// active memo, destroying it restores the one before). Keyed by the object's members (a
// value and its copies share them) and the pointer; each entry holds a copy of the schema,
// so the members it is keyed by stay alive and their address is not reused by another.
class FlatBranchMemo {
 public:
  struct Entry {
    JsonValue schema;
    std::optional<JsonValue> flat;
    bool exact = true;
  };

  FlatBranchMemo() : previous_(ActiveSlot()) { ActiveSlot() = this; }
  ~FlatBranchMemo() { ActiveSlot() = previous_; }
  FlatBranchMemo(const FlatBranchMemo&) = delete;
  FlatBranchMemo& operator=(const FlatBranchMemo&) = delete;

  static FlatBranchMemo* Active() { return ActiveSlot(); }

  // Only objects are kept (other schemas flatten to themselves at once).
  const Entry* Find(const JsonValue& schema, const std::string& pointer) const {
    auto found = entries_.find(Key(schema, pointer));
    return found == entries_.end() ? nullptr : &found->second;
  }
  void Keep(const JsonValue& schema, const std::string& pointer, std::optional<JsonValue> flat, bool exact) {
    entries_.emplace(Key(schema, pointer), Entry{schema, std::move(flat), exact});
  }

 private:
  using KeyType = std::pair<const void*, std::string>;
  static KeyType Key(const JsonValue& schema, const std::string& pointer) {
    return {&schema.object_members(), pointer};
  }
  static FlatBranchMemo*& ActiveSlot() {
    thread_local FlatBranchMemo* active = nullptr;
    return active;
  }

  FlatBranchMemo* previous_;
  std::map<KeyType, Entry> entries_;
};

}  // namespace schema_internal
}  // namespace xg2

#endif  // XG2_FRONTENDS_JSON_SCHEMA_FLAT_BRANCH_MEMO_H_
