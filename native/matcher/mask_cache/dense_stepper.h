// The rule DFA seen by the classification walks: one step through a dense row per byte, and
// the shapes of the DFA (loops, repetition chains, UTF-8 regions, class roots) that let a
// walk decide a whole trie subtree at once. Every fact is the DFA's and the grammar's
// (leave sets), memoized per row in the thread's ClassifyScratch.
#ifndef XG2_MATCHER_MASK_CACHE_DENSE_STEPPER_H_
#define XG2_MATCHER_MASK_CACHE_DENSE_STEPPER_H_

#include <algorithm>
#include <array>
#include <climits>
#include <cstdint>
#include <exception>
#include <memory>
#include <utility>
#include <vector>

#include "grammar/follow_sets.h"
#include "grammar/grammar_fsm.h"
#include "matcher/mask_cache/classify_scratch.h"
#include "tokenizer/tokenizer_info.h"
#include "tokenizer/utf8_decoder.h"

namespace xg2 {

// A class root's chain (DenseStepper::ClassRoot): nodes[p] is the node reached from the root
// (nodes[0]) after p characters of the class. With `loops`, nodes.back() steps to itself on
// every character, so it is the node after any number p >= nodes.size() - 1; otherwise
// nodes.back() steps on no character of the class and p is at most nodes.size() - 1.
struct ClassChain {
  CharacterClass cls;
  std::vector<NodeId> nodes;
  bool loops = false;
  int32_t max_characters() const {
    return loops ? VocabularyIndex::kAnyCharacterCount : static_cast<int32_t>(nodes.size()) - 1;
  }
  NodeId After(int32_t characters) const {
    if (characters < static_cast<int32_t>(nodes.size())) return nodes[characters];
    return loops ? nodes.back() : -1;
  }
};

// One step of the rule DFA through a dense row (linear edge scans cost more than the row
// build once a node is stepped from a few dozen times, which every trie walk does).
class DenseStepper {
 public:
  // `owner`: the serial of the grammar cache whose DFA `fsm` is (rows are kept for the next
  // walk over it), or 0 (rows are dropped at the end of this walk).
  DenseStepper(const GrammarFsm& fsm, ClassifyScratch& s, uint64_t owner) : fsm_(fsm), s_(s), owner_(owner) {
    if (owner_ == 0 || s_.rows_owner != owner_) DropRows();
    s_.rows_owner = owner_;
    if (s_.row_of.size() < static_cast<size_t>(fsm.num_nodes())) s_.row_of.resize(fsm.num_nodes(), -1);
    if (s_.region_seen.size() < static_cast<size_t>(fsm.num_nodes())) s_.region_seen.resize(fsm.num_nodes(), 0);
    if (s_.alike_partner.size() < static_cast<size_t>(fsm.num_nodes())) s_.alike_partner.resize(fsm.num_nodes(), -1);
  }
  ~DenseStepper() {
    // Kept rows are bounded (256 KiB of targets per 256 rows); a walk cut short by an
    // exception may leave a row half built, so none is kept then.
    constexpr size_t kMaxKeptRows = 2048;
    if (owner_ == 0 || s_.touched.size() > kMaxKeptRows || std::uncaught_exceptions() > 0) {
      DropRows();
      s_.rows_owner = 0;
    }
  }
  const NodeId* Row(NodeId n) {
    const int32_t r = s_.row_of[n];
    return RowAddress(r >= 0 ? r : BuildRow(n));
  }
  NodeId* RowAddress(int32_t r) const {
    return s_.row_blocks[static_cast<size_t>(r) / ClassifyScratch::kRowsPerBlock].get() +
           (static_cast<size_t>(r) % ClassifyScratch::kRowsPerBlock) * 256;
  }
  // Builds `n`'s row (kept out of line: Row is called for every trie node a walk visits, and
  // nearly always finds the row built).
  __attribute__((noinline)) int32_t BuildRow(NodeId n) {
    const int32_t r = static_cast<int32_t>(s_.touched.size());
    s_.touched.push_back(n);
    s_.row_of[n] = r;
    if (static_cast<size_t>(r) / ClassifyScratch::kRowsPerBlock >= s_.row_blocks.size()) {
      s_.row_blocks.push_back(std::make_unique<NodeId[]>(ClassifyScratch::kRowsPerBlock * 256));
    }
    NodeId* row = RowAddress(r);
    std::fill(row, row + 256, -1);
    if (s_.loops.size() < s_.touched.size()) s_.loops.resize(s_.touched.size() * 2);
    ByteMask& loop = s_.loops[r];
    loop = ByteMask();
    for (const ByteEdge* e = fsm_.byte_edges_begin(n); e != fsm_.byte_edges_end(n); ++e) {
      std::fill(row + e->lo, row + e->hi + 1, e->target);
      if (e->target == n) {
        for (int b = e->lo; b <= e->hi; ++b) loop.Set(static_cast<uint8_t>(b));
      }
    }
    if (s_.majors.size() < s_.touched.size()) {
      s_.majors.resize(s_.touched.size() * 2);
      s_.major_targets.resize(s_.touched.size() * 2);
      s_.major_done.resize(s_.touched.size() * 2);
      s_.class_root_failed.resize(s_.touched.size() * 2);
    }
    if (s_.region_tried.size() < s_.touched.size()) {
      s_.region_tried.resize(s_.touched.size() * 2);
      s_.region_states.resize(s_.touched.size() * 2);
      s_.region_root.resize(s_.touched.size() * 2);
      s_.region_ascii.resize(s_.touched.size() * 2);
    }
    if (s_.char_end.size() < s_.touched.size()) {
      const size_t size = s_.touched.size() * 2;
      for (ClassifyScratch::ChainLevel* level : {&s_.byte_chain, &s_.char_chain}) {
        level->begin.resize(size);
        level->count.resize(size);
        level->valid.resize(size);
      }
      s_.char_majors.resize(size);
      s_.char_major_done.resize(size);
      s_.char_end.resize(size);
    }
    s_.byte_chain.valid[r] = -1;
    s_.char_chain.valid[r] = -1;
    s_.char_major_done[r] = 0;
    s_.char_end[r].fill(-2);
    s_.region_tried[r] = 0;
    s_.region_states[r] = 0;
    s_.region_root[r] = -1;
    s_.major_done[r] = 0;
    s_.class_root_failed[r] = 0;
    return r;
  }
  // Bytes on which `n` steps to itself (its row must have been built).
  const ByteMask& Loop(NodeId n) const { return s_.loops[s_.row_of[n]]; }
  // Row r's major step (ClassifyScratch::majors), computed on first use: most rows a walk
  // builds are never asked about chains.
  const ByteMask& MajorMask(int32_t r) {
    if (!s_.major_done[r]) ComputeMajor(r);
    return s_.majors[r];
  }
  NodeId MajorTarget(int32_t r) {
    if (!s_.major_done[r]) ComputeMajor(r);
    return s_.major_targets[r];
  }
  // True when every string of at most `steps` bytes from `bytes` is consumed from `n`: each
  // node on the way sends all of `bytes` to one same next node (a self-loop ends the check).
  // This is the shape of a bounded repetition such as json_char{0,16} (a chain of copies)
  // that the self-loop test above does not see.
  // One subset test against the intersection of the majors along the chain, kept per row
  // (ComputeChain): at the copies near the end of a long bounded repetition nearly every trie
  // node asks, with `steps` up to the longest token below it.
  bool ChainConsumes(NodeId n, const ByteMask& bytes, int32_t steps) {
    return ChainSubset(s_.byte_chain, false, n, bytes, steps);
  }

  // ChainConsumes by characters, for the trie subtrees that hold multi-byte characters: true
  // when the subtree's tokens are all well-formed UTF-8 prefixes, the decoder being in state
  // `utf8_state` after the subtree's prefix, and from `n` every character leads one step
  // along a chain of `steps` nodes (at most `steps` bytes follow, so at most that many
  // characters): a multi-byte character through whatever continuation nodes to the same
  // node as the major ASCII bytes, an ASCII byte of `below` as a major byte. This is the
  // shape of json_char{0,N}, where each copy has its own continuation nodes; the byte-level
  // test fails on such a subtree at its first non-ASCII byte, and the UTF-8 region test
  // (a closure of bounded size) does not reach around a chain.
  bool Utf8ChainConsumes(NodeId n, uint8_t utf8_state, const ByteMask& below, int32_t steps) {
    // The character level builds the rows of every continuation node along the chain (about
    // eight per copy of json_char), so it looks a bounded distance ahead: far more copies
    // than kept rows allow (kMaxKeptRows) for a long maxLength otherwise. A subtree with a
    // longer token below is visited, and its children ask again with fewer steps.
    constexpr int32_t kMaxCharacterSteps = 48;
    if (utf8_state == kUtf8Malformed || steps > kMaxCharacterSteps) return false;
    if (utf8_state != kUtf8Boundary) {
      // The bytes that finish the current character (at least one) lead to one node.
      n = CharEnd(n, static_cast<int8_t>(utf8_state));
      if (n < 0) return false;
      --steps;
    }
    return ChainSubset(s_.char_chain, true, n, below, steps);
  }
  static bool CannotLeave(NodeId x, const LeaveSets& leave, const std::vector<uint8_t>& leavable) {
    return !leavable[x] && !leave[x].any();
  }
  // True when every node inside a multi-byte character from `x` (the (node, decoder state)
  // pairs short of the character's end) exists and cannot leave the rule.
  bool InnerCharacterNodesStay(NodeId x, const LeaveSets& leave, const std::vector<uint8_t>& leavable);

  // True when `n` is a class root: a character class (CharacterClass) of at least
  // kMinClassRootBytes ASCII bytes, those `n` steps on to its major target, plus the
  // multi-byte characters when they all lead there too, such that
  //  * each node of the chain from `n` steps on every character of the class to one same
  //    next node, until a node that steps on none of them (at most `max_copies` steps: the
  //    copies of a bounded string body, a pattern's [0-9a-f]{8}) or one that steps to itself
  //    (a loop: [a-z0-9-]*, \d+);
  //  * no node after `n` on the chain, nor inside a multi-byte character of the class, can
  //    leave the rule (nor `n` itself, when it is the loop).
  // Then a token in the class's language is accepted when its characters fit the chain and
  // rejected otherwise (the node after the last copy steps on none of them and cannot
  // leave), and a token with a class prefix of p characters then a tail walks its tail from
  // the chain's node after p characters with no leave flag raised before it: the shape
  // ClassifyTokens decides by the tokenizer's ClassPrefixes table instead of the trie (the
  // trie walk visits every child of every class prefix: a UUID's hex positions, the
  // segments of an "iglu:" pattern, a two-character string, a few hundred microseconds each).
  static constexpr int kMinClassRootBytes = 10;
  bool ClassRoot(NodeId n, const LeaveSets& leave, const std::vector<uint8_t>& leavable, int32_t max_copies,
                 ClassChain* out) {
    Row(n);
    const int32_t r = s_.row_of[n];
    // A node that is no class root stays none (the facts are the DFA's and the grammar's):
    // the budgeted and the full walk of one build, and later builds over the kept rows,
    // ask once.
    if (s_.class_root_failed[r]) return false;
    const bool found = FindClassRoot(n, r, leave, leavable, max_copies, out);
    s_.class_root_failed[r] = !found;
    return found;
  }

 private:
  bool FindClassRoot(NodeId n, int32_t r, const LeaveSets& leave, const std::vector<uint8_t>& leavable,
                     int32_t max_copies, ClassChain* out);

 public:
  // True when `n` is the first of the last copies of a bounded repetition of one character,
  // the shape of json_char{0,N} past its folded loop (grammar_fsm.h): along the character
  // chain of `n` (Utf8ChainConsumes) every ASCII byte of `n`'s major step and every
  // multi-byte character lead to the next copy for `copies` >= 1 steps, the node `end`
  // reached then steps on none of them, and no node on the way, continuation nodes and `end`
  // included, lets the parser leave the rule (not leavable, empty leave set). `ascii` gets
  // the ASCII bytes. Then a token that is a well-formed UTF-8 prefix with its ASCII bytes in
  // `ascii` is accepted when it starts at most `copies` characters and rejected otherwise
  // (its next character fails at `end` with nothing left to the parser), in both versions
  // of the classification.
  bool Utf8ChainRoot(NodeId n, const LeaveSets& leave, const std::vector<uint8_t>& leavable, ByteMask* ascii,
                     int32_t* copies);

  // True when every token of a trie subtree is consumed from `n`, by the UTF-8 region
  // argument: the subtree's tokens are all well-formed UTF-8 prefixes and the decoder is in
  // state `utf8_state` after the subtree's prefix (TokenTrieNode::utf8_state); `n` stands
  // for that decoder state in a UTF-8 region (AddUtf8Region) whose ASCII bytes include the
  // ASCII bytes of `below` (the bytes that follow in the subtree). Then each token's
  // remaining bytes are walked inside the region to their end. This is the shape of a JSON
  // string body (json_char*), where the plain self-loop test fails on every subtree holding
  // a non-ASCII character.
  bool Utf8RegionConsumes(NodeId n, uint8_t utf8_state, const ByteMask& below) {
    if (utf8_state == kUtf8Malformed) return false;
    Row(n);
    if (!s_.region_tried[s_.row_of[n]]) {
      s_.region_tried[s_.row_of[n]] = 1;
      AddUtf8Region(n);
    }
    const int32_t r = s_.row_of[n];
    return ((s_.region_states[r] >> utf8_state) & 1) && AsciiSubset(below, s_.region_ascii[r]);
  }

  // True when `n` is a character-boundary node of a UTF-8 region (see AddUtf8Region);
  // `ascii` gets the region's ASCII bytes.
  bool Utf8RegionBoundary(NodeId n, ByteMask* ascii) {
    Row(n);
    if (!s_.region_tried[s_.row_of[n]]) {
      s_.region_tried[s_.row_of[n]] = 1;
      AddUtf8Region(n);
    }
    const int32_t r = s_.row_of[n];
    if (!(s_.region_states[r] & (1u << kUtf8Boundary))) return false;
    *ascii = s_.region_ascii[r];
    return true;
  }

  // True when the UTF-8 region at boundary node `root` (with ASCII bytes `ascii`) has `root`
  // as its only character-boundary node and no node of the region can leave its rule: then
  // any well-formed string of whole characters from the region's language leads from `root`
  // back to `root` with no leave flag raised on the way (what ClassifyRegionOutsiders
  // relies on). A breadth-first search over the region's (node, decoder state) pairs,
  // capped like ExploreUtf8Region.
  bool SingleBoundaryRegion(NodeId root, const ByteMask& ascii, const LeaveSets& leave,
                            const std::vector<uint8_t>& leavable);

  // True when `n` starts a long chain of alike copies of one character class: the copies of
  // a bounded string body far from its bound (json_char{0,512} at its loop head), too many
  // for Utf8ChainRoot's sets. The conditions:
  //  * every character of the class (`ascii`, which gets the class's ASCII bytes, and every
  //    well-formed multi-byte character) steps from `n` to one same node `next` != `n`;
  //  * neither `n` nor a node inside one of its multi-byte characters can leave the rule;
  //  * every string of at most `depth` bytes walks alike from `n` and from `next`, leave
  //    sets and leavable flags included (AlikeWithin).
  // Then for a string u of whole class characters, reaching node m, and any string w with
  // |u| + |w| <= depth, walking w from m behaves as walking w from `n` (same steps, same
  // failures, same leave facts): by induction on u, since each character shifts the
  // agreement of `n` with `next` one character along. With `depth` the longest token, a
  // token is decided at `n` by its tail (RegionOutsiders) walked from `n`, no leave flag
  // raised before it, and the class tokens are all accepted: the classification of a region
  // root with one boundary node (ClassifyRegionOutsiders).
  bool LongChainRoot(NodeId n, const LeaveSets& leave, const std::vector<uint8_t>& leavable, int32_t depth,
                     ByteMask* ascii);

  // True when every string of at most `depth` bytes walks alike from `a` and from `b`: the
  // same bytes step or fail at each position, at nodes with the same leavable flag and
  // leave set. A breadth-first search over pairs (x, partner(x)) from (a, b) that requires
  // each x reached within `depth` bytes to have one partner with the same byte edges (ranges
  // equal, targets paired) and the same leave facts; a pair (x, x) needs no search below it.
  // This is what equal truncated canonical keys (CanonicalSubFsmKeys) would say, without
  // writing two keys that run over the sub-DFAs within a token's reach (a hundred kilobytes
  // each at a long chain's root).
  bool AlikeWithin(NodeId a, NodeId b, int32_t depth, const LeaveSets& leave, const std::vector<uint8_t>& leavable);

 private:
  // Tries `root` as a character-boundary node of a UTF-8 region: a set of (DFA node,
  // decoder state) pairs, closed under the well-formed non-ASCII bytes of each pair's state
  // and, at boundary pairs, under a set `ascii` of ASCII bytes, in which every pair steps on
  // all of those bytes. Then a well-formed UTF-8 prefix whose ASCII bytes lie in `ascii` is
  // consumed from any node of the region in the matching decoder state. Pairs, not a map
  // from states to nodes, because rule DFAs need not be minimal (two equal "one
  // continuation byte left" nodes, say). `ascii` starts as every ASCII byte `root` steps on
  // and loses the byte that led to a failing pair (the closing quote of a string body, the
  // backslash of an escape), a few times at most; the closure is capped in size.
  void AddUtf8Region(NodeId root);

  // One attempt of AddUtf8Region with a fixed `ascii`; on failure `culprit` is the ASCII
  // byte to drop (or -1: give up). On success records the region in the scratch rows.
  // Reaching the pair cap gives up at once: dropping one ASCII byte does not shorten a chain
  // of copies (json_char{0,N}: every ASCII byte steps to the next copy), and each of the
  // chain's boundary nodes used to pay all kMaxRegionAttempts full explorations.
  bool ExploreUtf8Region(NodeId root, const ByteMask& ascii, int* culprit);

  // After an attempt reached the pair cap: the nodes it explored are not tried as roots of
  // their own. Their closures are those of the same repeated shape (the copies of a chain
  // json_char{0,N} all reach the cap), and each failed attempt costs about 256 steps per
  // pair; a node that was a region root after all only loses a shortcut, never exactness.
  void MarkTriedAfterCap();

  void ComputeMajor(int32_t r);

  void DropRows() {
    for (NodeId n : s_.touched) s_.row_of[n] = -1;
    s_.touched.clear();
    s_.chain_steps.clear();
  }

  static constexpr int32_t kChainUnbounded = INT32_MAX;
  // How far ahead a chain is computed at least, so that the nearby asks with more steps
  // (trie nodes with longer tokens below) find it computed.
  static constexpr int32_t kChainHorizon = 32;

  // The mask of `n` at a chain level: its major bytes, or its character mask.
  ByteMask LevelMask(NodeId n, bool by_chars);

  // The node reached from `n`, in decoder state `state`, once the current character is
  // complete (from a boundary: one whole multi-byte character), whichever well-formed bytes
  // complete it; -1 where some such byte fails or two lead to different nodes. Memoized per
  // row and state; at most three levels deep.
  NodeId CharEnd(NodeId n, int8_t state);

  // True when `bytes` lies in the intersection of the level's masks over the first `steps`
  // nodes of `n`'s chain.
  bool ChainSubset(ClassifyScratch::ChainLevel& level, bool by_chars, NodeId n, const ByteMask& bytes,
                   int32_t steps);

  // The plain definition of ChainSubset: each node on the way has `bytes` in its mask, and
  // a self-loop ends the check. Used where ComputeChain met a cycle longer than a self-loop
  // (its entries then cover fewer steps than asked).
  bool ChainSubsetByWalk(bool by_chars, NodeId n, const ByteMask& bytes, int32_t steps);

  // Computes a level's entries of `start` for at least `need` steps (fewer only on a cycle
  // longer than a self-loop): walks the major chain forward until a node whose entries
  // already reach far enough, the chain's end (a self-loop, or a node with no byte edge),
  // or `need` nodes; then fills the nodes walked from the last one back, each node's
  // entries being its mask followed by its successor's entries intersected with it.
  void ComputeChain(ClassifyScratch::ChainLevel& level, bool by_chars, NodeId start, int32_t need);

  const GrammarFsm& fsm_;
  ClassifyScratch& s_;
  const uint64_t owner_;
};

}  // namespace xg2

#endif  // XG2_MATCHER_MASK_CACHE_DENSE_STEPPER_H_
