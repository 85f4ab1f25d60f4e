// JSON Schema -> EBNF: `oneOf` whose branches may overlap. Exactly one branch holds, so
// the language is the union over i of (B_i and not B_j for every j that may overlap B_i):
// each branch is intersected with the complements (SchemaConverter::Complement) of the
// branches it is not provably disjoint from. Disjoint pairs need no complement. A branch
// that lists its values (enum / const) keeps those no overlapping branch accepts, decided
// on each value (ListedValueSatisfies), which needs no complement either.
#include <cstddef>
#include <string>
#include <vector>

#include "frontends/json_schema/schema_converter_internal.h"
#include "support/cancellation.h"
#include "support/error.h"

namespace xg2 {
namespace schema_internal {

namespace {

// JSON nodes the complements of one oneOf may write: n branches need up to n(n-1)
// complements, each about the size of its branch.
constexpr size_t kMaxOneOfComplementNodes = size_t{1} << 18;

size_t NodeCount(const JsonValue& value) {
  size_t count = 1;
  for (const JsonValue& item : value.array_items()) count += NodeCount(item);
  for (const auto& [key, member] : value.object_members()) count += NodeCount(member);
  return count;
}

bool DeclaresMembers(const JsonValue& schema) {
  return schema.is_object() && (schema.Find("properties") != nullptr || schema.Find("patternProperties") != nullptr ||
                                schema.Find("additionalProperties") != nullptr);
}

// Leading allOf conjuncts every branch shares (oneOf next to other keywords is distributed
// as allOf [siblings..., branch]): B_i implies them, so B_i and not (P and S_j) is
// B_i and not S_j, and only the rest S_j needs a complement.
size_t SharedConjuncts(const std::vector<JsonValue>& branches) {
  std::vector<const std::vector<JsonValue>*> lists;
  for (const JsonValue& branch : branches) {
    if (!branch.is_object() || branch.object_members().size() != 1) return 0;
    const JsonValue* parts = branch.Find("allOf");
    if (parts == nullptr || !parts->is_array()) return 0;
    lists.push_back(&parts->array_items());
  }
  size_t shared = 0;
  while (true) {
    for (const auto* list : lists) {
      if (list->size() <= shared || !JsonEquals((*list)[shared], (*lists[0])[shared])) return shared;
    }
    ++shared;
  }
}

JsonValue Unshared(const JsonValue& branch, size_t shared) {
  if (shared == 0) return branch;
  const std::vector<JsonValue>& parts = branch.Find("allOf")->array_items();
  std::vector<JsonValue> rest(parts.begin() + static_cast<std::ptrdiff_t>(shared), parts.end());
  if (rest.empty()) return JsonValue::Bool(true);
  if (rest.size() == 1) return rest[0];
  return JsonValue::Object({{"allOf", JsonValue::Array(std::move(rest))}});
}

}  // namespace

// OneOf's pairwise test on the values each branch accepts (not only those it generates: a
// complement is merged with other keywords, which may reopen a strict-mode object).
bool SchemaConverter::BranchesDisjoint(const std::vector<JsonValue>& branches, const std::string& pointer) {
  std::vector<std::optional<JsonValue>> flat(branches.size());
  std::vector<bool> exact(branches.size(), true);
  for (size_t i = 0; i < branches.size(); ++i) {
    bool is_exact = true;
    flat[i] = FlatBranch(branches[i], pointer, &is_exact);
    if (!flat[i]) return false;
    exact[i] = is_exact;
  }
  for (size_t i = 0; i < branches.size(); ++i) {
    for (size_t j = i + 1; j < branches.size(); ++j) {
      ThrowIfCancelled();
      if (!FlatBranchesDisjoint(branches[i], *flat[i], exact[i], branches[j], *flat[j], exact[j], pointer, false)) {
        return false;
      }
    }
  }
  return true;
}

bool SchemaConverter::FlatBranchesDisjoint(const JsonValue& a, const JsonValue& flat_a, bool exact_a,
                                           const JsonValue& b, const JsonValue& flat_b, bool exact_b,
                                           const std::string& pointer, bool generated) {
  constexpr int kDisjointBudget = 8;  // nesting depth of the structural comparison, as in OneOf
  // A side that lists its values is disjoint from the other exactly when no listed value
  // satisfies it; that holds over generated values too (the other side generates only
  // values it accepts, and the listed side generates only its values).
  if (ListedValuesFail(flat_a, b, pointer) || ListedValuesFail(flat_b, a, pointer)) return true;
  // Over accepted values (generated false) one direction proves the languages disjoint;
  // over generated values (strict mode closes objects) each side's own values must fail the
  // other, so both directions are needed.
  auto both_ways = [&](const JsonValue& x, bool exact_x, const JsonValue& y, bool exact_y) {
    if (generated && FlatExcludes(x, exact_x, y, pointer, kDisjointBudget, true) &&
        FlatExcludes(y, exact_y, x, pointer, kDisjointBudget, true)) {
      return true;
    }
    return FlatExcludes(x, exact_x, y, pointer, kDisjointBudget, false) ||
           FlatExcludes(y, exact_y, x, pointer, kDisjointBudget, false);
  };
  if (both_ways(flat_a, exact_a, flat_b, exact_b)) return true;
  if (exact_a && exact_b) return false;
  std::optional<JsonValue> spelled_a = exact_a ? std::nullopt : AlternativesSpelledOut(a, pointer);
  std::optional<JsonValue> spelled_b = exact_b ? std::nullopt : AlternativesSpelledOut(b, pointer);
  if (!spelled_a && !spelled_b) return false;
  // A spelled-out side is a single anyOf, which FlatExcludes decides alternative by
  // alternative, flattening each again (its own `exact` is not read).
  return both_ways(spelled_a ? *spelled_a : flat_a, spelled_a ? true : exact_a, spelled_b ? *spelled_b : flat_b,
                   spelled_b ? true : exact_b);
}

std::optional<std::vector<JsonValue>> SchemaConverter::ListedLanguage(const JsonValue& flat, const std::string& pointer) {
  if (!flat.is_object() || (flat.Find("enum") == nullptr && flat.Find("const") == nullptr)) return std::nullopt;
  if (std::optional<std::vector<JsonValue>> values = ListedValuesOnly(flat)) return values;
  const JsonValue* constant = flat.Find("const");
  const JsonValue* listed = flat.Find("enum");
  if (constant == nullptr && !listed->is_array()) return std::nullopt;
  const std::vector<JsonValue> candidates = constant != nullptr ? std::vector<JsonValue>{*constant} : listed->array_items();
  try {
    std::optional<JsonValue> kept = StrictTrial([&]() -> std::optional<JsonValue> {
      std::vector<JsonValue> values;
      for (const JsonValue& value : candidates) {
        ThrowIfCancelled();
        if (ListedValueSatisfies(value, flat, pointer)) values.push_back(value);
      }
      return JsonValue::Array(std::move(values));
    });
    if (kept) return kept->array_items();
  } catch (const SchemaError&) {  // the value check's own limits: not decided
  } catch (const ResourceLimitError&) {
  }
  return std::nullopt;
}

bool SchemaConverter::ListedValuesFail(const JsonValue& listing, const JsonValue& other, const std::string& pointer) {
  std::optional<std::vector<JsonValue>> values = ListedLanguage(listing, pointer);
  if (!values) return false;
  try {
    std::optional<JsonValue> verdict = StrictTrial([&]() -> std::optional<JsonValue> {
      for (const JsonValue& value : *values) {
        ThrowIfCancelled();
        if (ListedValueSatisfies(value, other, pointer)) return JsonValue::Bool(false);
      }
      return JsonValue::Bool(true);
    });
    return verdict && verdict->bool_value();
  } catch (const SchemaError&) {  // the value check's own limits: not proven, nothing lost
  } catch (const ResourceLimitError&) {
  }
  return false;
}

// A branch whose flat form (FlatBranch) left its alternatives out, e.g. {type: object,
// oneOf: [$ref a, $ref b]}, as anyOf over allOf [its other conjuncts, alternative k] of its
// first alternative list (later lists stay conjuncts). Its language contains the branch's
// (a oneOf's alternatives read as anyOf), so a disjointness proof on it holds for the
// branch, and each alternative's flat form now sees what the alternative requires.
// nullopt when the branch has no alternatives, more than kMaxSpelledAlternatives of them,
// or a merge this converter refuses (TrialMerge).
std::optional<JsonValue> SchemaConverter::AlternativesSpelledOut(const JsonValue& branch_in,
                                                                  const std::string& pointer) {
  constexpr size_t kMaxSpelledAlternatives = 64;
  const JsonValue& branch = Dereferenced(branch_in, pointer);
  if (!branch.is_object()) return std::nullopt;
  return TrialMerge(branch, pointer, [&](const MergeState& state, JsonValue base) -> std::optional<JsonValue> {
    if (state.never || state.alternatives.empty()) return std::nullopt;
    const std::vector<JsonValue>& first = state.alternatives[0].first.object_members()[0].second.array_items();
    if (first.size() > kMaxSpelledAlternatives) return std::nullopt;
    std::vector<JsonValue> rest = {std::move(base)};
    for (size_t g = 1; g < state.alternatives.size(); ++g) rest.push_back(state.alternatives[g].first);
    std::vector<JsonValue> disjuncts;
    for (const JsonValue& alternative : first) {
      std::vector<JsonValue> conjuncts = rest;
      conjuncts.push_back(alternative);
      disjuncts.push_back(JsonValue::Object({{"allOf", JsonValue::Array(std::move(conjuncts))}}));
    }
    return JsonValue::Object({{"anyOf", JsonValue::Array(std::move(disjuncts))}});
  });
}

std::optional<JsonValue> SchemaConverter::ListedExactlyOne(const Node& node, const std::vector<JsonValue>& branches,
                                                           size_t i, const std::vector<size_t>& overlapping) {
  bool exact = true;
  std::optional<JsonValue> flat = FlatBranch(branches[i], node.pointer, &exact);
  if (!flat || !exact) return std::nullopt;
  std::optional<std::vector<JsonValue>> values = ListedValuesOnly(*flat);
  if (!values) return std::nullopt;
  std::string base = ChildPointer(node.pointer, "oneOf");
  auto keep_alone_values = [&]() -> std::optional<JsonValue> {
    std::vector<JsonValue> kept;
    for (const JsonValue& value : *values) {
      bool alone = true;
      for (size_t j : overlapping) {
        ThrowIfCancelled();
        alone = alone && !ListedValueSatisfies(value, branches[j], base + "/" + std::to_string(j));
      }
      if (alone) kept.push_back(value);
    }
    if (kept.empty()) return JsonValue::Bool(false);
    return JsonValue::Object({{"enum", JsonValue::Array(std::move(kept))}});
  };
  try {
    return StrictTrial(keep_alone_values);
  } catch (const SchemaError&) {  // a value check past its limits: the complements decide
  } catch (const ResourceLimitError&) {
  }
  return std::nullopt;
}

std::optional<JsonValue> SchemaConverter::ExactlyOneOf(const Node& node, const std::vector<JsonValue>& branches,
                                                       const std::vector<std::vector<size_t>>& overlapping,
                                                       std::string* refusal, std::vector<PointerRename>* renames) {
  std::string base = ChildPointer(node.pointer, "oneOf");
  // complements[j][declares]: the values branch j rejects, built once per form (Complement's
  // `declares`: whether the branch it is merged into declares its members).
  std::vector<std::optional<JsonValue>> complements(2 * branches.size());
  std::vector<bool> built(2 * branches.size(), false);
  size_t written = 0;
  size_t shared = SharedConjuncts(branches);
  std::vector<JsonValue> disjuncts;
  // Disjunct k stands for branch i; in allOf [B_i, complements...], B_i is the user's branch
  // and complement m the values branch j rejects, a schema the user did not write.
  const std::string any_of = ChildPointer(node.pointer, "anyOf");
  renames->push_back({any_of, node.pointer, false});
  auto disjunct_of = [&](size_t i) {
    const std::string disjunct = any_of + "/" + std::to_string(disjuncts.size());
    const std::string branch = base + "/" + std::to_string(i);
    renames->push_back({disjunct, branch, true});
    renames->push_back({disjunct + "/allOf", branch, false});
    renames->push_back({disjunct + "/allOf/0", branch, true});
    return disjunct;
  };
  for (size_t i = 0; i < branches.size(); ++i) {
    // A listed branch: its values that no overlapping branch accepts, without complements.
    if (std::optional<JsonValue> listed = ListedExactlyOne(node, branches, i, overlapping[i])) {
      if (!listed->is_bool()) {
        disjunct_of(i);
        disjuncts.push_back(std::move(*listed));
      }
      continue;
    }
    std::vector<JsonValue> conjuncts = {branches[i]};
    std::vector<size_t> complemented;  // the branch of each conjunct after the first
    bool impossible = false;
    for (size_t j : overlapping[i]) {
      ThrowIfCancelled();
      bool declares = DeclaresMembers(branches[i]);
      size_t slot = 2 * j + (declares ? 1 : 0);
      auto charge = [&](const JsonValue& written_value) {
        written += NodeCount(written_value);
        if (written > kMaxOneOfComplementNodes) {
          throw ResourceLimitError("keyword 'oneOf' at " + ShowPointer(node.pointer) +
                                   ": the complements of its overlapping branches write more than " +
                                   std::to_string(kMaxOneOfComplementNodes) + " JSON nodes");
        }
      };
      if (!built[slot]) {
        complements[slot] = Complement(Unshared(branches[j], shared), base + "/" + std::to_string(j), declares, 8);
        built[slot] = true;
        if (complements[slot]) charge(*complements[slot]);
      }
      // Without a complement of branch j, its complement within branch i's closed objects.
      std::optional<JsonValue> within;
      if (!complements[slot]) {
        within = ComplementWithin(branches[i], branches[j], node.pointer);
        if (!within) {
          *refusal = "branch " + std::to_string(j) + " overlaps branch " + std::to_string(i) +
                     " and its complement is not a schema this converter can build";
          return std::nullopt;
        }
        charge(*within);
      }
      const JsonValue& complement = within ? *within : *complements[slot];
      if (complement.is_bool()) {
        impossible = impossible || !complement.bool_value();  // branch j accepts everything
        continue;
      }
      conjuncts.push_back(complement);
      complemented.push_back(j);
    }
    if (impossible) continue;
    const std::string disjunct = disjunct_of(i);
    for (size_t m = 0; m < complemented.size(); ++m) {
      renames->push_back({disjunct + "/allOf/" + std::to_string(m + 1), base + "/" + std::to_string(complemented[m]), false});
    }
    disjuncts.push_back(conjuncts.size() == 1 ? conjuncts[0]
                                              : JsonValue::Object({{"allOf", JsonValue::Array(std::move(conjuncts))}}));
  }
  if (disjuncts.empty()) return JsonValue::Bool(false);
  return JsonValue::Object({{"anyOf", JsonValue::Array(std::move(disjuncts))}});
}

}  // namespace schema_internal
}  // namespace xg2
