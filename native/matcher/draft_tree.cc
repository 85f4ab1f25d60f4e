#include "matcher/draft_tree.h"

#include <algorithm>
#include <cassert>
#include <chrono>
#include <string>
#include <vector>

#include "support/error.h"

namespace xg2 {
namespace {

std::string LinkText(const char* array, int64_t node, int64_t target) {
  return std::string(array) + "[" + std::to_string(node) + "] = " + std::to_string(target);
}

// Unreachable nodes: with at most one incoming link each, walking back along the unique
// predecessors either stops at a node without one or comes back round (a cycle).
void RefuseCycles(const DraftTree& tree, const std::vector<int64_t>& predecessor) {
  enum : uint8_t { kUnseen, kOnWalk, kDone };
  std::vector<uint8_t> state(static_cast<size_t>(tree.num_nodes), kUnseen);
  std::vector<int64_t> walk;
  for (int64_t start = 0; start < tree.num_nodes; ++start) {
    walk.clear();
    int64_t node = start;
    while (node != -1 && state[node] == kUnseen) {
      state[node] = kOnWalk;
      walk.push_back(node);
      node = predecessor[node];
    }
    if (node != -1 && state[node] == kOnWalk) {
      throw InvalidArgumentError("retrieve_next_token / retrieve_next_sibling: node " + std::to_string(node) +
                                 " is on a cycle; the draft tree must not contain cycles");
    }
    for (int64_t visited : walk) state[visited] = kDone;
  }
}

}  // namespace

void ValidateDraftTree(const DraftTree& tree) {
  if (tree.num_nodes < 1) throw InvalidArgumentError("draft_tokens: the draft tree must have at least one node");
  if (tree.next_sibling[0] != -1) {
    throw InvalidArgumentError(LinkText("retrieve_next_sibling", 0, tree.next_sibling[0]) +
                               ": node 0 (the last verified token) cannot have a sibling");
  }
  std::vector<int64_t> predecessor(static_cast<size_t>(tree.num_nodes), -1);
  auto link = [&](const char* array, const int64_t* links, int64_t node) {
    const int64_t target = links[node];
    if (target == -1) return;
    if (target < -1 || target >= tree.num_nodes) {
      throw InvalidArgumentError(LinkText(array, node, target) + " is out of range [-1, " +
                                 std::to_string(tree.num_nodes) + ")");
    }
    if (target == 0) {
      throw InvalidArgumentError(LinkText(array, node, target) +
                                 ": node 0 is the root and cannot be a child or sibling");
    }
    if (predecessor[target] != -1) {
      throw InvalidArgumentError(LinkText(array, node, target) + ": node " + std::to_string(target) +
                                 " is already linked from node " + std::to_string(predecessor[target]) +
                                 "; a tree node has one parent link");
    }
    predecessor[target] = node;
  };
  for (int64_t node = 0; node < tree.num_nodes; ++node) {
    link("retrieve_next_token", tree.next_token, node);
    link("retrieve_next_sibling", tree.next_sibling, node);
  }
  RefuseCycles(tree, predecessor);
}

bool TraverseDraftTree(GrammarMatcher& matcher, const DraftTree& tree, uint32_t* rows,
                       int64_t row_stride_words, int64_t num_words, double time_limit_seconds,
                       bool clear_skipped_rows) {
  GrammarMatcher::Claimed claimed(matcher);
  const auto start = std::chrono::steady_clock::now();
  auto out_of_time = [&] {
    if (time_limit_seconds <= 0) return false;
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() > time_limit_seconds;
  };
  auto row = [&](int64_t node) { return rows + node * row_stride_words; };
  auto allowed_by = [&](int64_t parent, int64_t token) {
    if (token < 0 || token >= claimed.vocab_size() || token >= num_words * 32) return false;
    return ((row(parent)[token / 32] >> (token % 32)) & 1u) != 0;
  };

  // The path from node 0 to the current node; `stepped` says whether the node's token was
  // accepted (one history step to roll back when the node is left).
  struct Frame {
    int64_t node;
    bool stepped;
  };
  std::vector<Frame> path;
  const int32_t steps_before = claimed.num_accepted_steps();
  auto restore = [&] {
    const int32_t extra = claimed.num_accepted_steps() - steps_before;
    if (extra > 0) claimed.Rollback(extra);
  };

  try {
    int64_t node = 0;
    while (true) {
      const int64_t parent = path.empty() ? -1 : path.back().node;
      // Enter `node`: decide its token, fill or clear its row.
      bool stepped = false;
      bool filled = false;
      const bool allowed = node == 0 || allowed_by(parent, tree.tokens[node]);
      if (allowed && node != 0 && out_of_time()) {
        restore();
        return false;
      }
      if (allowed && (node == 0 || claimed.AcceptToken(static_cast<int32_t>(tree.tokens[node])))) {
        stepped = node != 0;
        if (!claimed.IsTerminated()) {
          claimed.FillNextTokenBitmask(row(node), num_words);
          filled = true;
        }
      }
      if (!filled && clear_skipped_rows) std::fill_n(row(node), num_words, 0u);
      if (filled && tree.next_token[node] != -1) {
        path.push_back({node, stepped});
        node = tree.next_token[node];
        continue;
      }
      if (stepped) claimed.Rollback(1);
      // Leave finished nodes until one has a sibling to visit.
      while (tree.next_sibling[node] == -1) {
        if (path.empty()) {
          assert(claimed.num_accepted_steps() == steps_before && "every node's step was rolled back");
          return true;
        }
        const Frame done = path.back();
        path.pop_back();
        if (done.stepped) claimed.Rollback(1);
        node = done.node;
      }
      node = tree.next_sibling[node];
    }
  } catch (...) {
    restore();
    throw;
  }
}

}  // namespace xg2
