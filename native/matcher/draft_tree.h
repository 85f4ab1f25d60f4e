// Draft-tree traversal for speculative decoding: one call fills the token mask of every node
// of a draft token tree, walking the tree depth-first with accept / fill / rollback on one
// matcher, instead of one Python round trip per node.
//
// The tree is given as SGLang (and xgrammar) lay it out: node 0 is the last verified token,
// already accepted; next_token[i] is node i's first child and next_sibling[i] its next
// sibling (-1: none); tokens[i] is node i's draft token. Node i's row receives the mask after
// the tokens on the path from node 0 to node i. A node whose token its parent's mask forbids,
// or after which the matcher is terminated, gets an all-zero row (xgrammar's traversal) or
// keeps its row (SGLang's, `clear_skipped_rows` false), and its subtree is not visited (those
// rows are left as they were).
#ifndef XG2_MATCHER_DRAFT_TREE_H_
#define XG2_MATCHER_DRAFT_TREE_H_

#include <cstdint>

#include "matcher/grammar_matcher.h"

namespace xg2 {

struct DraftTree {
  const int64_t* next_token = nullptr;
  const int64_t* next_sibling = nullptr;
  const int64_t* tokens = nullptr;
  int64_t num_nodes = 0;
};

// Throws InvalidArgumentError, naming the array and the node, unless the links form a forest
// whose root is node 0: every link in [-1, num_nodes), node 0 without a sibling and the target
// of no link, every other node the target of at most one link, and no cycle anywhere (a cycle
// cut off from node 0 would be harmless to the walk but is never a valid tree).
void ValidateDraftTree(const DraftTree& tree);

// Fills row i (at rows + i * row_stride_words, num_words words each) for every visited node i.
// Returns false when `time_limit_seconds` (> 0) ran out before the walk ended: the nodes not
// yet reached keep their rows. Either way, and when a step throws, the matcher ends in the
// state it had before the call. The tree must have passed ValidateDraftTree.
bool TraverseDraftTree(GrammarMatcher& matcher, const DraftTree& tree, uint32_t* rows,
                       int64_t row_stride_words, int64_t num_words, double time_limit_seconds,
                       bool clear_skipped_rows = true);

}  // namespace xg2

#endif  // XG2_MATCHER_DRAFT_TREE_H_
