// The per-thread scratch the classification walks share (the trie walk, the refinement and
// the long-token walk), and the byte-mask tests they use.
#ifndef XG2_MATCHER_MASK_CACHE_CLASSIFY_SCRATCH_H_
#define XG2_MATCHER_MASK_CACHE_CLASSIFY_SCRATCH_H_

#include <array>
#include <cstdint>
#include <memory>
#include <vector>

#include "grammar/grammar_fsm.h"
#include "matcher/vocabulary_index.h"
#include "tokenizer/tokenizer_info.h"
#include "tokenizer/utf8_decoder.h"

namespace xg2 {

// Per-thread scratch of the classification walks, reused across calls so the per-token
// work allocates nothing.
struct ClassifyScratch {
  std::vector<NodeId> path;
  std::vector<const NodeId*> path_row;  // path_row[d]: the dense row of path[d]
  std::vector<uint8_t> left_fsm;
  std::vector<uint8_t> left_lookahead;
  std::vector<int8_t> pure_state;
  std::vector<uint32_t> accepted_bits;
  // Bit w set: accepted_bits[w] may be non-zero. Kept by the walk's accept() (not by the bulk
  // copies of a shared set), so a walk that accepted its tokens one by one reads them back
  // from the words that hold one, not from every word of their span.
  std::vector<uint64_t> accepted_summary;
  // The first kListedAccepts ids a walk accepts, in the order accepted. A node that accepts
  // few tokens (a position inside a literal) is packed and cleared from this list: its ids
  // may lie anywhere in the vocabulary, so the span of words they touch is no bound.
  std::vector<int32_t> accepted_list;
  // Dense transition rows for the DFA nodes this walk steps from: row_of[node] is the row
  // number, built on first use; `touched` lists the nodes to reset. Row r lives in
  // row_blocks[r / kRowsPerBlock], so a row's address never changes while the walk builds
  // more rows, and the walk keeps a pointer to each row on its path (path_row).
  // Rows and the facts below depend only on the DFA, so they are kept from one walk to the
  // next while the walks are over the same grammar's DFA (`rows_owner`, a grammar cache's
  // serial; 0: none kept): the builds of one grammar step from largely the same nodes.
  uint64_t rows_owner = 0;
  std::vector<int32_t> row_of;
  static constexpr size_t kRowsPerBlock = 64;
  std::vector<std::unique_ptr<NodeId[]>> row_blocks;
  std::vector<ByteMask> loops;  // per row: the bytes on which the node steps to itself
  // Per row: the target reached on the most bytes, and those bytes (the "major" step);
  // valid where major_done (DenseStepper::MajorMask).
  std::vector<NodeId> major_targets;
  std::vector<ByteMask> majors;
  std::vector<uint8_t> major_done;
  std::vector<uint8_t> class_root_failed;  // per row: DenseStepper::ClassRoot found none
  // Per row, the node's major chain (DenseStepper::ChainConsumes) at two levels: bytes
  // (each node's major bytes) and characters (Utf8ChainConsumes: its ASCII major bytes, plus
  // every byte >= 0x80 where each well-formed multi-byte character also leads to the major
  // target). Each level keeps the intersections of the masks along the chain, as the steps
  // where the intersection shrinks: chain_steps[begin[r] .. + count[r]) ascend in length, and
  // the intersection over the first s nodes is the mask of the last entry with length <= s.
  // valid[r]: the entries hold for every s <= valid[r] (kChainUnbounded: for every s);
  // -1: not computed yet.
  struct ChainLevel {
    std::vector<int32_t> begin;
    std::vector<int32_t> count;
    std::vector<int32_t> valid;
  };
  ChainLevel byte_chain;
  ChainLevel char_chain;
  struct ChainStep {
    int32_t length;
    ByteMask mask;
  };
  std::vector<ChainStep> chain_steps;  // of both levels
  std::vector<NodeId> chain_path;
  // Per row: the character mask of the char level (valid when char_major_done), and per
  // decoder state the node reached once the current character is complete, whichever
  // well-formed bytes complete it (-1: not one same node, or some byte fails; -2: unknown).
  std::vector<ByteMask> char_majors;
  std::vector<uint8_t> char_major_done;
  std::vector<std::array<int32_t, kUtf8DecoderStates>> char_end;
  // Per row, the UTF-8 region facts (DenseStepper::AddUtf8Region): whether the node was
  // tried as a region's root, the decoder states it stands for in a region (bit per state),
  // the root of that region, and the region's ASCII bytes.
  std::vector<uint8_t> region_tried;
  std::vector<uint8_t> region_states;
  std::vector<NodeId> region_root;
  std::vector<ByteMask> region_ascii;
  std::vector<NodeId> touched;
  // Closure of one region attempt (ExploreUtf8Region): the pairs found, and per DFA node a
  // bit per decoder state already found (all zero between attempts).
  std::vector<NodeId> region_nodes;
  std::vector<int8_t> region_pair_states;
  std::vector<int16_t> region_via;
  std::vector<uint8_t> region_seen;
  // DenseStepper::AlikeWithin: per DFA node its partner in the pair search (-1 outside a
  // search), and the pairs in the order found, with their depths.
  std::vector<NodeId> alike_partner;
  std::vector<NodeId> alike_order;
  std::vector<int32_t> alike_depth;

  // Sizes the per-depth arrays for tokens of up to depth_slots - 1 bytes.
  void EnsureDepth(size_t depth_slots) {
    if (path.size() >= depth_slots) return;
    path.resize(depth_slots);
    path_row.resize(depth_slots);
    left_fsm.resize(depth_slots);
    left_lookahead.resize(depth_slots);
    pure_state.resize(depth_slots);
  }
};

// Not inlined on purpose: where a thread_local's address is computed inline, GCC may
// recompute it (a __tls_get_addr call in a shared object) at every use instead of keeping it
// in a register, and did so inside the trie walk's loop (a tenth of a large walk's time).
// Called once per walk, the address is an ordinary pointer the loop keeps.
// Called once per walk, the address is an ordinary pointer the loop keeps.
ClassifyScratch& Scratch();

inline bool AsciiIn(const ByteMask& mask, uint8_t byte) { return (mask.words[byte >> 6] >> (byte & 63)) & 1; }

// True when the ASCII bytes of `bytes` all lie in `mask`.
inline bool AsciiSubset(const ByteMask& bytes, const ByteMask& mask) {
  return !((bytes.words[0] & ~mask.words[0]) | (bytes.words[1] & ~mask.words[1]));
}

}  // namespace xg2

#endif  // XG2_MATCHER_MASK_CACHE_CLASSIFY_SCRATCH_H_
