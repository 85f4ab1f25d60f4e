// JSON Schema -> EBNF: the alternative groups (anyOf / oneOf lists) of one merge, before
// MergedSchemaBody distributes them over the rest of the merge. allOf [base, G_1, ..., G_n]
// has one combined branch per choice of one branch in each group, and where the groups
// test one discriminator most choices are empty: a chain of if/then/else becomes one group
// of two per `if` (allOf [if, then] or allOf [complement of if, else]), and the complement
// of a const becomes a group of one disjunct per type. Two steps keep the distribution to
// the choices that can hold:
//  - PruneAlternatives drops the branches no value of the merge matches: of a type outside
//    the types the base and every group allow, or (next to other groups) provably disjoint
//    from the base (FlatExcludes). The language is kept, for anyOf and for oneOf alike: a
//    dropped branch is false on every value the rest accepts, so it never counts towards
//    "exactly one". Each level of the distribution merges the chosen branch into its base
//    and prunes the groups left again.
//  - ViableGroups counts the choices the same way, depth first, merging the flat forms of
//    the branches chosen so far, so that the bound on combined branches applies to what the
//    distribution will write, not to the raw product of the group sizes. It counts each
//    prefix of the groups in turn (lenient mode keeps the longest that passes), and each
//    visit of a deep prefix is dear (the merged properties nest one allOf deeper per level
//    and are flattened again by every disjointness test). So every choice it examines is
//    kept (ChoiceTree): counting the next prefix walks the kept choices again and examines
//    only those of its last group, and all the counts together examine no more choices than
//    the last one alone (JsonSchemaStore's cloudify: 125 if/then groups, once seconds per
//    prefix). In strict mode, where any answer short of all the groups is the same refusal,
//    the whole list is counted first: when it fails, the prefixes need not be.
#include <algorithm>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "frontends/json_schema/flat_branch_memo.h"
#include "frontends/json_schema/schema_converter_internal.h"
#include "support/cancellation.h"
#include "support/dcheck.h"
#include "support/error.h"

namespace xg2 {
namespace schema_internal {

namespace {

// FlatExcludes' nesting budget, as in OneOf.
constexpr int kDisjointBudget = 8;
// Merges and disjointness tests one count may spend per combined branch it allows: choices
// that die only at the last group still cost a visit each.
constexpr size_t kVisitsPerBranch = 16;

size_t GroupSize(const JsonValue& group) { return group.object_members()[0].second.array_items().size(); }

// The choices ViableGroups has examined, kept while it counts: node 0 is the base, and the
// children of a node at depth g are the branches of group g examined next to it, in branch
// order, each the flat merge of the choice so far with that branch, or kExcluded. A count
// examines the branches of a node in order and stops only when the whole count stops, so
// the examined branches of every node are a leading run of its group.
class ChoiceTree {
 public:
  static constexpr size_t kExcluded = static_cast<size_t>(-1);

  explicit ChoiceTree(JsonValue base) { nodes_.push_back(Node{std::move(base), {}}); }

  const JsonValue& Merged(size_t node) const { return nodes_[node].merged; }
  size_t ExaminedBranches(size_t node) const { return nodes_[node].children.size(); }
  // The node `branch` leads to, or kExcluded; the branch has been examined.
  size_t Child(size_t node, size_t branch) const {
    XG2_DCHECK(branch < nodes_[node].children.size(), "a kept choice is read only after it is examined");
    return nodes_[node].children[branch];
  }
  // Keeps the next branch of `node`: the choice it makes, or nullopt when it is excluded.
  void AddChild(size_t node, std::optional<JsonValue> merged) {
    size_t child = kExcluded;
    if (merged) {
      child = nodes_.size();
      nodes_.push_back(Node{std::move(*merged), {}});
    }
    nodes_[node].children.push_back(child);
  }

 private:
  struct Node {
    JsonValue merged;
    std::vector<size_t> children;
  };
  std::vector<Node> nodes_;
};

}  // namespace

bool SchemaConverter::PruneAlternatives(const JsonValue& base, const std::string& pointer, MergeState* state) {
  // A single group is distributed as it is (its empty branches become Never when they are
  // converted): pruning pays only where groups multiply.
  if (state->alternatives.size() < 2) return true;
  // Every disjointness test below flattens the base's subschemas again (once per branch and
  // per direction), and the base of a deep distribution level holds allOf chains as deep
  // as the level: their flat forms are kept for the call. Nothing FlatBranch reads changes
  // meanwhile: no merge is entered (merge_targets_ stays), and flattening undoes its own
  // refusals while the tests record none (ignored_keywords_ stays, checked below).
  FlatBranchMemo memo;
  [[maybe_unused]] const size_t ignored_before = ignored_keywords_.size();
  // Flat forms (FlatBranch: supersets of the branches, nullopt where a merge is refused).
  std::vector<std::vector<std::optional<JsonValue>>> flat;
  std::vector<std::vector<uint8_t>> types;
  for (const auto& [group, group_pointer] : state->alternatives) {
    flat.emplace_back();
    types.emplace_back();
    for (const JsonValue& branch : group.object_members()[0].second.array_items()) {
      ThrowIfCancelled();
      bool exact = true;
      flat.back().push_back(FlatBranch(branch, group_pointer, &exact));
      types.back().push_back(flat.back().back() ? PossibleTypes(*flat.back().back()) : kAllJsonTypes);
    }
  }
  // The types a value of the merge may have: a fixed point, since each group's union
  // narrows the set the others are pruned against.
  uint8_t allowed = PossibleTypes(base);
  for (uint8_t previous = 0; previous != allowed;) {
    previous = allowed;
    for (const std::vector<uint8_t>& group_types : types) {
      uint8_t group_union = 0;
      for (uint8_t t : group_types) group_union |= t & allowed;
      allowed &= group_union;
    }
  }
  if (allowed == 0) return false;
  for (size_t g = 0; g < state->alternatives.size(); ++g) {
    JsonValue& group = state->alternatives[g].first;
    const std::string keyword = group.object_members()[0].first;
    const std::vector<JsonValue>& items = group.object_members()[0].second.array_items();
    std::vector<JsonValue> kept;
    for (size_t i = 0; i < items.size(); ++i) {
      ThrowIfCancelled();
      if ((types[g][i] & allowed) == 0) continue;
      if (flat[g][i] &&
          (FlatExcludes(base, true, *flat[g][i], pointer, kDisjointBudget, false) ||
           FlatExcludes(*flat[g][i], true, base, pointer, kDisjointBudget, false))) {
        continue;
      }
      kept.push_back(items[i]);
    }
    if (kept.empty()) return false;
    if (kept.size() < items.size()) group = JsonValue::Object({{keyword, JsonValue::Array(std::move(kept))}});
  }
  XG2_DCHECK(ignored_keywords_.size() == ignored_before, "pruning ignores no keyword, so its kept flat forms hold");
  return true;
}

// The leading groups that combine into at most `limit` viable branches. In strict mode an
// answer short of all the groups only ever refuses the merge, and may then be any prefix at
// least as long as the one whose raw product is within the limit.
size_t SchemaConverter::ViableGroups(const JsonValue& base, const std::string& pointer, const MergeState& state,
                                     size_t limit) {
  const size_t groups = state.alternatives.size();
  // The raw product first: within the limit, nothing to count (the first group alone may
  // pass it; it is distributed as it is).
  size_t product = 1;
  size_t raw_prefix = groups;
  for (size_t g = 0; g < groups; ++g) {
    product *= GroupSize(state.alternatives[g].first);
    if (product > limit && g > 0) {
      raw_prefix = g;
      break;
    }
  }
  if (raw_prefix == groups) return groups;
  std::vector<std::vector<std::optional<JsonValue>>> flat(groups);
  for (size_t g = 0; g < groups; ++g) {
    for (const JsonValue& branch : state.alternatives[g].first.object_members()[0].second.array_items()) {
      bool exact = true;
      flat[g].push_back(FlatBranch(branch, state.alternatives[g].second, &exact));
    }
  }
  // Trial merges: refusals throw (even when lenient) and are undone, as in FlatBranch.
  // Nothing they read changes until the count ends, so their flat forms are kept.
  FlatBranchMemo memo;
  auto ignored = ignored_keywords_;
  bool lenient = options_.lenient;
  options_.lenient = false;
  size_t visits = 0;
  const size_t max_visits = kVisitsPerBranch * (limit + 1);
  // The choice `merged` extended by `branch`: nullopt when no value holds both.
  auto examine = [&](const JsonValue& merged, const std::optional<JsonValue>& branch) -> std::optional<JsonValue> {
    if (!branch || branch->is_bool()) {
      if (branch && !branch->bool_value()) return std::nullopt;
      return merged;
    }
    if (FlatExcludes(merged, true, *branch, pointer, kDisjointBudget, false) ||
        FlatExcludes(*branch, true, merged, pointer, kDisjointBudget, false)) {
      return std::nullopt;
    }
    try {
      return MergeObjects(merged, *branch, pointer);
    } catch (const UnsupportedSchemaError&) {
      return merged;  // a superset of the choice: only fewer choices are ruled out
    }
  };
  ChoiceTree tree(base);
  // Choices of groups g..prefix-1 that can hold next to `node`, up to `cap`; `cap` when the
  // visits run out (counted as too many). Visits of kept choices count as before, so each
  // prefix's answer is what counting it from scratch gives.
  std::function<size_t(size_t, size_t, size_t, size_t)> count = [&](size_t node, size_t g, size_t prefix,
                                                                     size_t cap) -> size_t {
    if (g == prefix) return 1;
    size_t total = 0;
    for (size_t b = 0; b < flat[g].size(); ++b) {
      if (++visits > max_visits) return cap;
      if (b == tree.ExaminedBranches(node)) {
        ThrowIfCancelled();
        tree.AddChild(node, examine(tree.Merged(node), flat[g][b]));
      }
      const size_t child = tree.Child(node, b);
      if (child == ChoiceTree::kExcluded) continue;
      total += count(child, g + 1, prefix, cap - total);
      if (total >= cap) return cap;
    }
    return total;
  };
  size_t viable = 1;
  try {
    // Strict: a failed count of every group is a refusal whatever prefix fails first; a
    // passed one is the last prefix, not counted again.
    bool all_pass = false;
    if (!lenient) {
      visits = 0;
      all_pass = count(0, 0, groups, limit + 1) <= limit;
    }
    if (!lenient && !all_pass) {
      viable = raw_prefix + 1;
    } else {
      const size_t last = all_pass ? groups - 1 : groups;
      for (viable = std::max<size_t>(raw_prefix, 1) + 1; viable <= last; ++viable) {
        visits = 0;
        if (count(0, 0, viable, limit + 1) > limit) break;
      }
      if (all_pass && viable > last) viable = groups + 1;
    }
    --viable;
  } catch (...) {
    options_.lenient = lenient;
    ignored_keywords_ = std::move(ignored);
    throw;
  }
  options_.lenient = lenient;
  ignored_keywords_ = std::move(ignored);
  XG2_DCHECK(viable >= raw_prefix && viable >= 1, "the raw product's prefix is within the limit");
  return viable;
}

}  // namespace schema_internal
}  // namespace xg2
