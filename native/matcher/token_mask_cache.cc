#include "matcher/token_mask_cache.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <climits>
#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <new>
#include <stdexcept>
#include <thread>
#ifdef __linux__
#include <pthread.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

#include "tokenizer/utf8_decoder.h"

namespace xg2 {

namespace {

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
__attribute__((noinline)) ClassifyScratch& Scratch() {
  thread_local ClassifyScratch scratch;
  return scratch;
}

inline bool AsciiIn(const ByteMask& mask, uint8_t byte) { return (mask.words[byte >> 6] >> (byte & 63)) & 1; }

// True when the ASCII bytes of `bytes` all lie in `mask`.
inline bool AsciiSubset(const ByteMask& bytes, const ByteMask& mask) {
  return !((bytes.words[0] & ~mask.words[0]) | (bytes.words[1] & ~mask.words[1]));
}

// A class root's chain (DenseStepper::ClassRoot): nodes[p] is the node reached from the root
// (nodes[0]) after p characters of the class. With `loops`, nodes.back() steps to itself on
// every character, so it is the node after any number p >= nodes.size() - 1; otherwise
// nodes.back() steps on no character of the class and p is at most nodes.size() - 1.
struct ClassChain {
  CharacterClass cls;
  std::vector<NodeId> nodes;
  bool loops = false;
  int32_t max_characters() const {
    return loops ? TokenizerInfo::kAnyCharacterCount : static_cast<int32_t>(nodes.size()) - 1;
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
  bool InnerCharacterNodesStay(NodeId x, const LeaveSets& leave, const std::vector<uint8_t>& leavable) {
    constexpr size_t kMaxPairs = 64;
    std::vector<std::pair<NodeId, int8_t>> pairs{{x, kUtf8Boundary}};
    for (size_t q = 0; q < pairs.size(); ++q) {
      const auto [from, state] = pairs[q];
      const NodeId* row = Row(from);
      for (int b = 0x80; b < 256; ++b) {
        const int8_t next_state = Utf8DecoderStep(state, static_cast<uint8_t>(b));
        if (next_state <= kUtf8Boundary) continue;
        const NodeId to = row[b];
        if (to < 0 || !CannotLeave(to, leave, leavable)) return false;
        const std::pair<NodeId, int8_t> pair{to, next_state};
        if (std::find(pairs.begin(), pairs.end(), pair) != pairs.end()) continue;
        if (pairs.size() == kMaxPairs) return false;
        pairs.push_back(pair);
      }
    }
    return true;
  }

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
                     int32_t max_copies, ClassChain* out) {
    const NodeId first_target = MajorTarget(r);
    if (first_target < 0) return false;
    CharacterClass cls;
    cls.ascii = MajorMask(r);
    cls.ascii.words[2] = cls.ascii.words[3] = 0;
    if (cls.ascii.Count() < kMinClassRootBytes) return false;
    cls.multibyte = CharEnd(n, kUtf8Boundary) == first_target;
    auto cannot_leave = [&](NodeId x) { return CannotLeave(x, leave, leavable); };
    auto inner_nodes_stay = [&](NodeId x) { return !cls.multibyte || InnerCharacterNodesStay(x, leave, leavable); };
    std::vector<NodeId>& nodes = out->nodes;
    nodes.assign(1, n);
    out->loops = false;
    for (NodeId x = n;;) {
      Row(x);
      const int32_t rx = s_.row_of[x];
      const NodeId next = MajorTarget(rx);
      const bool steps_on_all = next >= 0 && cls.ascii.SubsetOf(MajorMask(rx)) &&
                                (!cls.multibyte || CharEnd(x, kUtf8Boundary) == next);
      if (!steps_on_all) {
        // The chain's end: it must step on no character of the class, and not leave.
        if (x == n) return false;
        const NodeId* row = Row(x);
        for (int b = 0; b < 256; ++b) {
          if (row[b] < 0) continue;
          if (b < 0x80 ? AsciiIn(cls.ascii, static_cast<uint8_t>(b)) : cls.multibyte && b >= 0xC2 && b <= 0xF4) {
            return false;
          }
        }
        if (!cannot_leave(x)) return false;
        break;
      }
      if (x != n && !cannot_leave(x)) return false;
      if (!inner_nodes_stay(x)) return false;
      if (next == x) {
        if (!cannot_leave(x)) return false;
        out->loops = true;
        break;
      }
      if (std::find(nodes.begin(), nodes.end(), next) != nodes.end()) return false;  // a longer cycle
      if (static_cast<int32_t>(nodes.size()) > max_copies) return false;
      nodes.push_back(next);
      x = next;
    }
    out->cls = cls;
    return true;
  }

 public:
  // True when `n` is the first of the last copies of a bounded repetition of one character,
  // the shape of json_char{0,N} near N: along the character chain of `n` (Utf8ChainConsumes)
  // every ASCII byte of `n`'s major step and every multi-byte character lead to the next
  // copy for `copies` (1..TokenizerInfo::kMaxUtf8ChainCharacters) steps, the node `end`
  // reached then steps on none of them, and no node on the way, continuation nodes and `end`
  // included, lets the parser leave the rule (not leavable, empty leave set). `ascii` gets
  // the ASCII bytes. Then a token that is a well-formed UTF-8 prefix with its ASCII bytes in
  // `ascii` is accepted when it starts at most `copies` characters and rejected otherwise
  // (its next character fails at `end` with nothing left to the parser), in both versions
  // of the classification.
  bool Utf8ChainRoot(NodeId n, const LeaveSets& leave, const std::vector<uint8_t>& leavable, ByteMask* ascii,
                     int32_t* copies) {
    constexpr int32_t kMaxCopies = TokenizerInfo::kMaxUtf8ChainCharacters;
    Row(n);
    ByteMask consumed = MajorMask(s_.row_of[n]);
    consumed.words[2] = consumed.words[3] = ~uint64_t{0};
    if (!(consumed.words[0] | consumed.words[1])) return false;
    // The copies: the nodes along the major chain whose character mask holds the class.
    int32_t k = 0;
    NodeId end = n;
    while (k <= kMaxCopies && consumed.SubsetOf(LevelMask(end, true))) {
      const NodeId next = MajorTarget(s_.row_of[end]);
      if (next == end) return false;  // a loop, not a chain (UTF-8 regions cover loops)
      end = next;
      ++k;
    }
    if (k < 1 || k > kMaxCopies) return false;  // not a chain, or one too long for the sets
    {
      const NodeId* row = Row(end);
      for (int b = 0; b < 256; ++b) {
        if (row[b] >= 0 && (b >= 0xC2 ? b <= 0xF4 : AsciiIn(consumed, static_cast<uint8_t>(b)))) return false;
      }
    }
    // The nodes a token of the class passes (or fails at) after its first byte.
    constexpr size_t kMaxNodes = 4096;
    std::vector<NodeId>& seen = s_.chain_path;
    seen.clear();
    bool back_to_start = false;
    auto visit = [&](NodeId to) {
      back_to_start |= to == n && !seen.empty();
      uint8_t& mark = s_.region_seen[to];
      if (mark) return;
      mark = 1;
      seen.push_back(to);
    };
    struct ResetSeen {
      ClassifyScratch& s;
      ~ResetSeen() {
        for (NodeId x : s.chain_path) s.region_seen[x] = 0;
      }
    } reset_seen{s_};
    visit(n);
    for (size_t q = 0; q < seen.size(); ++q) {
      const NodeId x = seen[q];
      if (back_to_start || (q > 0 && (leavable[x] || leave[x].any()))) return false;
      if (x == end) continue;
      if (seen.size() > kMaxNodes) return false;
      for (int b = 0; b < 256; ++b) {
        const NodeId to = Row(x)[b];
        if (to >= 0 && (b >= 0x80 || AsciiIn(consumed, static_cast<uint8_t>(b)))) visit(to);
      }
    }
    if (back_to_start) return false;
    *ascii = consumed;
    ascii->words[2] = ascii->words[3] = 0;
    *copies = k;
    return true;
  }

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
                            const std::vector<uint8_t>& leavable) {
    constexpr size_t kMaxPairs = 48;
    std::vector<std::pair<NodeId, int8_t>> pairs{{root, kUtf8Boundary}};
    for (size_t q = 0; q < pairs.size(); ++q) {
      const auto [from, state] = pairs[q];
      if (leavable[from] || leave[from].any()) return false;
      const NodeId* row = Row(from);
      for (int b = 0; b < 256; ++b) {
        if (b < 0x80 && (state != kUtf8Boundary || !AsciiIn(ascii, static_cast<uint8_t>(b)))) continue;
        const int8_t next_state = Utf8DecoderStep(state, static_cast<uint8_t>(b));
        if (next_state < 0) continue;
        const NodeId to = row[b];
        if (to < 0) return false;  // not a region after all
        if (next_state == kUtf8Boundary) {
          if (to != root) return false;
          continue;
        }
        const std::pair<NodeId, int8_t> pair{to, next_state};
        if (std::find(pairs.begin(), pairs.end(), pair) != pairs.end()) continue;
        if (pairs.size() == kMaxPairs) return false;
        pairs.push_back(pair);
      }
    }
    return true;
  }

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
                     ByteMask* ascii) {
    // Only the nodes of a compressed repetition's loop (grammar_fsm.h) are tried: their
    // explicit copies reach beyond any token. Other chains (explicit bounded copies, the
    // product automaton of a pattern with a length bound) end within a token's reach, fail
    // AlikeWithin, and would pay for its pair search each time.
    if (fsm_.node_loop.empty() || fsm_.node_loop[n] < 0) return false;
    if (!CannotLeave(n, leave, leavable)) return false;
    Row(n);
    const int32_t r = s_.row_of[n];
    const NodeId next = MajorTarget(r);
    if (next < 0 || next == n) return false;
    ByteMask class_ascii = MajorMask(r);
    class_ascii.words[2] = class_ascii.words[3] = 0;
    if (!(class_ascii.words[0] | class_ascii.words[1])) return false;
    if (CharEnd(n, kUtf8Boundary) != next) return false;
    if (!InnerCharacterNodesStay(n, leave, leavable)) return false;
    if (!AlikeWithin(n, next, depth, leave, leavable)) return false;
    *ascii = class_ascii;
    return true;
  }

  // True when every string of at most `depth` bytes walks alike from `a` and from `b`: the
  // same bytes step or fail at each position, at nodes with the same leavable flag and
  // leave set. A breadth-first search over pairs (x, partner(x)) from (a, b) that requires
  // each x reached within `depth` bytes to have one partner with the same byte edges (ranges
  // equal, targets paired) and the same leave facts; a pair (x, x) needs no search below it.
  // This is what equal truncated canonical keys (CanonicalSubFsmKeys) would say, without
  // writing two keys that run over the sub-DFAs within a token's reach (a hundred kilobytes
  // each at a long chain's root).
  bool AlikeWithin(NodeId a, NodeId b, int32_t depth, const LeaveSets& leave, const std::vector<uint8_t>& leavable) {
    std::vector<NodeId>& partner = s_.alike_partner;
    std::vector<NodeId>& order = s_.alike_order;
    std::vector<int32_t>& at_depth = s_.alike_depth;
    order.clear();
    at_depth.clear();
    struct ResetPartners {
      ClassifyScratch& s;
      ~ResetPartners() {
        for (NodeId x : s.alike_order) s.alike_partner[x] = -1;
      }
    } reset{s_};
    auto pair = [&](NodeId x, NodeId y, int32_t d) {
      if (partner[x] >= 0) return partner[x] == y;
      if (leavable[x] != leavable[y] || &leave[x] != &leave[y]) return false;  // sets are interned
      partner[x] = y;
      order.push_back(x);
      at_depth.push_back(d);
      return true;
    };
    if (!pair(a, b, 0)) return false;
    for (size_t q = 0; q < order.size(); ++q) {
      const NodeId x = order[q];
      const NodeId y = partner[x];
      if (x == y || at_depth[q] >= depth) continue;
      const ByteEdge* ex = fsm_.byte_edges_begin(x);
      const ByteEdge* ey = fsm_.byte_edges_begin(y);
      if (fsm_.byte_edges_end(x) - ex != fsm_.byte_edges_end(y) - ey) return false;
      for (; ex != fsm_.byte_edges_end(x); ++ex, ++ey) {
        if (ex->lo != ey->lo || ex->hi != ey->hi || !pair(ex->target, ey->target, at_depth[q] + 1)) return false;
      }
    }
    return true;
  }

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
  void AddUtf8Region(NodeId root) {
    {
      const NodeId* row = Row(root);
      for (int b = 0xC2; b <= 0xF4; ++b) {
        if (row[b] < 0) return;  // not at a character boundary of any region
      }
    }
    ByteMask ascii;
    {
      const NodeId* row = Row(root);
      for (int b = 0; b < 0x80; ++b) {
        if (row[b] >= 0) ascii.Set(static_cast<uint8_t>(b));
      }
    }
    constexpr int kMaxRegionAttempts = 6;
    for (int attempt = 0; attempt < kMaxRegionAttempts; ++attempt) {
      int culprit = -1;
      if (ExploreUtf8Region(root, ascii, &culprit)) return;
      if (culprit < 0) return;
      ascii.words[culprit >> 6] &= ~(uint64_t{1} << (culprit & 63));
    }
  }

  // One attempt of AddUtf8Region with a fixed `ascii`; on failure `culprit` is the ASCII
  // byte to drop (or -1: give up). On success records the region in the scratch rows.
  // Reaching the pair cap gives up at once: dropping one ASCII byte does not shorten a chain
  // of copies (json_char{0,N}: every ASCII byte steps to the next copy), and each of the
  // chain's boundary nodes used to pay all kMaxRegionAttempts full explorations.
  bool ExploreUtf8Region(NodeId root, const ByteMask& ascii, int* culprit) {
    // Pairs are found breadth-first; membership is one bit per (node, decoder state) in
    // region_seen, so the closure is linear in its size. The cap bounds the work: an attempt
    // costs about 256 steps per pair and up to kMaxRegionAttempts run. Regions with one pair
    // per prefix of many declared words (a property-name position) do not pay for it: with
    // a cap of 4096, a 180-node word region cost 600 us to classify at its root instead of
    // 290 us by the plain walk, which accepts most of its subtrees at smaller regions inside.
    constexpr size_t kMaxRegionPairs = 48;
    std::vector<NodeId>& nodes = s_.region_nodes;
    std::vector<int8_t>& states = s_.region_pair_states;
    std::vector<int16_t>& via = s_.region_via;  // the ASCII byte that last led into the pair's chain
    nodes.clear();
    states.clear();
    via.clear();
    auto add = [&](NodeId n, int8_t state, int16_t byte) {
      uint8_t& seen = s_.region_seen[n];
      if ((seen >> state) & 1) return true;
      if (nodes.size() == kMaxRegionPairs) return false;
      seen |= static_cast<uint8_t>(1u << state);
      nodes.push_back(n);
      states.push_back(state);
      via.push_back(byte);
      return true;
    };
    // Clears region_seen for the pairs found, on every way out.
    struct ResetSeen {
      ClassifyScratch& s;
      ~ResetSeen() {
        for (NodeId n : s.region_nodes) s.region_seen[n] = 0;
      }
    } reset_seen{s_};
    add(root, kUtf8Boundary, -1);
    for (size_t q = 0; q < nodes.size(); ++q) {
      const NodeId from = nodes[q];
      const int8_t state = states[q];
      for (int b = 0x80; b < 256; ++b) {
        const int8_t next_state = Utf8DecoderStep(state, static_cast<uint8_t>(b));
        if (next_state < 0) continue;
        const NodeId to = Row(from)[b];
        if (to < 0 || !add(to, next_state, via[q])) {
          *culprit = to < 0 ? via[q] : -1;
          if (to >= 0) MarkTriedAfterCap();
          return false;
        }
      }
      if (state != kUtf8Boundary) continue;
      NodeId last = -1;
      for (int b = 0; b < 0x80; ++b) {
        if (!AsciiIn(ascii, static_cast<uint8_t>(b))) continue;
        const NodeId to = Row(from)[b];
        if (to < 0 || (to != last && !add(to, kUtf8Boundary, static_cast<int16_t>(b)))) {
          *culprit = to < 0 ? b : -1;
          if (to >= 0) MarkTriedAfterCap();
          return false;
        }
        last = to;
      }
    }
    const size_t count = nodes.size();
    for (size_t k = 0; k < count; ++k) {
      Row(nodes[k]);
      const int32_t r = s_.row_of[nodes[k]];
      // A node of a recorded region is not tried as a root of its own: that would explore
      // the same closure again from each of its nodes (quadratic on a region with hundreds
      // of nodes), for a region at most as useful as the one recorded.
      s_.region_tried[r] = 1;
      if (s_.region_root[r] >= 0 && s_.region_root[r] != root) continue;
      s_.region_root[r] = root;
      s_.region_states[r] |= static_cast<uint8_t>(1u << states[k]);
      s_.region_ascii[r] = ascii;
    }
    return true;
  }

  // After an attempt reached the pair cap: the nodes it explored are not tried as roots of
  // their own. Their closures are those of the same repeated shape (the copies of a chain
  // json_char{0,N} all reach the cap), and each failed attempt costs about 256 steps per
  // pair; a node that was a region root after all only loses a shortcut, never exactness.
  void MarkTriedAfterCap() {
    for (NodeId n : s_.region_nodes) {
      Row(n);
      s_.region_tried[s_.row_of[n]] = 1;
    }
  }

  void ComputeMajor(int32_t r) {
    const NodeId n = s_.touched[r];
    NodeId major = -1;
    int32_t major_bytes = 0;
    for (const ByteEdge* e = fsm_.byte_edges_begin(n); e != fsm_.byte_edges_end(n); ++e) {
      int32_t bytes = 0;  // bytes of all edges to this target (edges are few)
      for (const ByteEdge* f = fsm_.byte_edges_begin(n); f != fsm_.byte_edges_end(n); ++f) {
        if (f->target == e->target) bytes += f->hi - f->lo + 1;
      }
      if (bytes > major_bytes) {
        major_bytes = bytes;
        major = e->target;
      }
    }
    ByteMask& major_mask = s_.majors[r];
    major_mask = ByteMask();
    if (major >= 0) {
      const NodeId* row = RowAddress(r);
      for (int b = 0; b < 256; ++b) {
        if (row[b] == major) major_mask.Set(static_cast<uint8_t>(b));
      }
    }
    s_.major_targets[r] = major;
    s_.major_done[r] = 1;
  }

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
  ByteMask LevelMask(NodeId n, bool by_chars) {
    Row(n);
    const int32_t r = s_.row_of[n];
    if (!by_chars) return MajorMask(r);
    if (!s_.char_major_done[r]) {
      ByteMask mask = MajorMask(r);
      mask.words[2] = mask.words[3] = 0;
      const NodeId major = MajorTarget(r);
      if (major >= 0 && CharEnd(n, kUtf8Boundary) == major) mask.words[2] = mask.words[3] = ~uint64_t{0};
      s_.char_majors[s_.row_of[n]] = mask;
      s_.char_major_done[s_.row_of[n]] = 1;
    }
    return s_.char_majors[s_.row_of[n]];
  }

  // The node reached from `n`, in decoder state `state`, once the current character is
  // complete (from a boundary: one whole multi-byte character), whichever well-formed bytes
  // complete it; -1 where some such byte fails or two lead to different nodes. Memoized per
  // row and state; at most three levels deep.
  NodeId CharEnd(NodeId n, int8_t state) {
    Row(n);
    if (s_.char_end[s_.row_of[n]][state] != -2) return s_.char_end[s_.row_of[n]][state];
    s_.char_end[s_.row_of[n]][state] = -1;  // a cycle through `n` fails
    NodeId end = -2;
    for (int b = 0x80; b < 256 && end != -1; ++b) {
      const int8_t next_state = Utf8DecoderStep(state, static_cast<uint8_t>(b));
      if (next_state < 0) continue;
      const NodeId to = Row(n)[b];
      const NodeId reached = to < 0 ? -1 : next_state == kUtf8Boundary ? to : CharEnd(to, next_state);
      end = (reached < 0 || (end >= 0 && reached != end)) ? -1 : reached;
    }
    if (end == -2) end = -1;
    s_.char_end[s_.row_of[n]][state] = end;
    return end;
  }

  // True when `bytes` lies in the intersection of the level's masks over the first `steps`
  // nodes of `n`'s chain.
  bool ChainSubset(ClassifyScratch::ChainLevel& level, bool by_chars, NodeId n, const ByteMask& bytes,
                   int32_t steps) {
    if (steps <= 0) return true;
    Row(n);
    if (level.valid[s_.row_of[n]] < steps) {
      // Most asks fail within a step or two (a node off any chain); those are answered by
      // the plain walk, without computing a chain ahead (rows of nodes no walk needs).
      constexpr int32_t kProbeSteps = 4;
      NodeId probe = n;
      for (int32_t k = 0; k < std::min(steps, kProbeSteps); ++k) {
        if (!bytes.SubsetOf(LevelMask(probe, by_chars))) return false;
        const NodeId next = MajorTarget(s_.row_of[probe]);
        if (next == probe || next < 0) return true;  // a loop, or no byte follows (empty `bytes`)
        probe = next;
      }
      if (steps <= kProbeSteps) return true;
      ComputeChain(level, by_chars, n, std::max(steps, kChainHorizon));
      if (level.valid[s_.row_of[n]] < steps) return ChainSubsetByWalk(by_chars, n, bytes, steps);
    }
    const int32_t r = s_.row_of[n];
    const ClassifyScratch::ChainStep* step = s_.chain_steps.data() + level.begin[r] + level.count[r] - 1;
    while (step->length > steps) --step;  // the first entry has length 1 <= steps
    return bytes.SubsetOf(step->mask);
  }

  // The plain definition of ChainSubset: each node on the way has `bytes` in its mask, and
  // a self-loop ends the check. Used where ComputeChain met a cycle longer than a self-loop
  // (its entries then cover fewer steps than asked).
  bool ChainSubsetByWalk(bool by_chars, NodeId n, const ByteMask& bytes, int32_t steps) {
    for (int32_t k = 0; k < steps; ++k) {
      if (!bytes.SubsetOf(LevelMask(n, by_chars))) return false;
      const NodeId next = MajorTarget(s_.row_of[n]);
      if (next == n || next < 0) return true;
      n = next;
    }
    return true;
  }

  // Computes a level's entries of `start` for at least `need` steps (fewer only on a cycle
  // longer than a self-loop): walks the major chain forward until a node whose entries
  // already reach far enough, the chain's end (a self-loop, or a node with no byte edge),
  // or `need` nodes; then fills the nodes walked from the last one back, each node's
  // entries being its mask followed by its successor's entries intersected with it.
  void ComputeChain(ClassifyScratch::ChainLevel& level, bool by_chars, NodeId start, int32_t need) {
    constexpr int32_t kInProgress = -2;
    std::vector<NodeId>& path = s_.chain_path;
    path.clear();
    NodeId tail = -1;       // a computed node the last walked node steps to, or -1
    bool terminal = false;  // the last walked node ends the chain (self-loop or no edge)
    for (NodeId n = start;;) {
      Row(n);
      const int32_t r = s_.row_of[n];
      const int32_t j = static_cast<int32_t>(path.size());
      if (j > 0 && level.valid[r] >= need - j) {
        tail = n;
        break;
      }
      if (level.valid[r] == kInProgress || j == need) break;  // a cycle, or far enough
      level.valid[r] = kInProgress;
      path.push_back(n);
      const NodeId next = MajorTarget(r);
      if (next == n || next < 0) {
        terminal = true;
        break;
      }
      n = next;
    }
    for (int32_t j = static_cast<int32_t>(path.size()) - 1; j >= 0; --j) {
      const ByteMask mask = LevelMask(path[j], by_chars);
      const int32_t r = s_.row_of[path[j]];
      const int32_t begin = static_cast<int32_t>(s_.chain_steps.size());
      s_.chain_steps.push_back({1, mask});
      int32_t valid = 1;
      if (terminal && j + 1 == static_cast<int32_t>(path.size())) {
        valid = kChainUnbounded;  // a self-loop repeats the mask; no edge: the mask is empty
      } else {
        const NodeId next = j + 1 < static_cast<int32_t>(path.size()) ? path[j + 1] : tail;
        if (next >= 0) {
          const int32_t rn = s_.row_of[next];
          valid = level.valid[rn] == kChainUnbounded ? kChainUnbounded : level.valid[rn] + 1;
          for (int32_t k = 0; k < level.count[rn]; ++k) {
            const ClassifyScratch::ChainStep next_step = s_.chain_steps[level.begin[rn] + k];
            ByteMask both = next_step.mask;
            for (int w = 0; w < 4; ++w) both.words[w] &= mask.words[w];
            const ByteMask& last = s_.chain_steps.back().mask;
            if (std::equal(both.words, both.words + 4, last.words)) continue;
            s_.chain_steps.push_back({next_step.length + 1, both});
          }
        }
      }
      level.begin[r] = begin;
      level.count[r] = static_cast<int32_t>(s_.chain_steps.size()) - begin;
      level.valid[r] = valid;
    }
  }

  const GrammarFsm& fsm_;
  ClassifyScratch& s_;
  const uint64_t owner_;
};

// Appends the sorted positions [begin, end) to an uncertain list. `shared_before` is the
// common prefix length of `begin`'s token with the list's previous entry; inside the range
// the vocabulary's own LCP table applies.
inline void AppendUncertainRange(TokenClassification* out, int32_t begin, int32_t end, int32_t shared_before,
                                 const std::vector<int32_t>& lcp) {
  out->uncertain_positions.push_back(begin);
  out->uncertain_lcp.push_back(out->uncertain_positions.size() == 1 ? 0 : shared_before);
  for (int32_t p = begin + 1; p < end; ++p) {
    out->uncertain_positions.push_back(p);
    out->uncertain_lcp.push_back(lcp[p]);
  }
}

// Accepted ids listed one by one up to this count (ClassifyScratch::accepted_list).
constexpr int64_t kListedAccepts = 512;

// Packs the accepted bits, all of which lie in words [lo, hi) of `bits`. `summary`, where
// given, has bit w set for every non-zero word w (ClassifyScratch::accepted_summary): an id
// list is then read from those words alone.
std::shared_ptr<const AcceptedTokens> PackAccepted(const std::vector<uint32_t>& bits, size_t words, size_t lo,
                                                   size_t hi, int64_t count,
                                                   const std::vector<uint64_t>* summary = nullptr) {
  auto accepted = std::make_shared<AcceptedTokens>();
  if (count > static_cast<int64_t>(words)) {
    accepted->bits.assign(words, 0);
    std::copy(bits.begin() + lo, bits.begin() + hi, accepted->bits.begin() + lo);
    return accepted;
  }
  accepted->ids.reserve(count);
  auto read_word = [&](size_t w) {
    for (uint32_t word = bits[w]; word; word &= word - 1) {
      accepted->ids.push_back(static_cast<int32_t>(w * 32 + __builtin_ctz(word)));
    }
  };
  if (summary) {
    for (size_t sw = lo / 64; sw < (hi + 63) / 64; ++sw) {
      for (uint64_t nonzero = (*summary)[sw]; nonzero; nonzero &= nonzero - 1) {
        read_word(sw * 64 + static_cast<size_t>(__builtin_ctzll(nonzero)));
      }
    }
  } else {
    for (size_t w = lo; w < hi; ++w) read_word(w);
  }
  return accepted;
}

void Shrink(TokenClassification* c) {
  c->uncertain_positions.shrink_to_fit();
  c->uncertain_lcp.shrink_to_fit();
}

// Common prefix length of the tokens at sorted positions `a` and `b` (the lcp of an
// uncertain list whose neighbours need not be neighbours in the vocabulary).
int32_t SharedPrefixOfPositions(const TokenizerInfo& tokenizer, int32_t a, int32_t b) {
  const std::string& x = tokenizer.decoded_tokens()[tokenizer.sorted_text_tokens()[a]];
  const std::string& y = tokenizer.decoded_tokens()[tokenizer.sorted_text_tokens()[b]];
  const size_t limit = std::min(x.size(), y.size());
  return static_cast<int32_t>(std::mismatch(x.begin(), x.begin() + limit, y.begin()).first - x.begin());
}

// The region-root classification by tails (TokenizerInfo::Utf8RegionOutsiders): every
// token of the region set is accepted, and each other token takes the verdict of its tail
// walked from `node`, the region's only boundary node (SingleBoundaryRegion). Tails are
// walked in ascending order sharing prefixes, as RefineWithLookahead walks its list: a
// tail that shares more than the failing depth of the previous one shares its verdict. On a
// JSON string body this walks about 2,500 tails instead of the tens of thousands of trie
// nodes around the few thousand tokens holding a quote, a backslash or a control byte.
ClassificationPair ClassifyRegionOutsiders(const TokenIdSet& region_tokens, const RegionOutsiders& outsiders,
                                           const LeaveSets& leave, const std::vector<uint8_t>& leavable,
                                           NodeId node, const TokenizerInfo& tokenizer, bool want_fsm_only,
                                           DenseStepper& stepper, ClassifyScratch& s) {
  const std::vector<int32_t>& sorted = tokenizer.sorted_text_tokens();
  const size_t words = (static_cast<size_t>(tokenizer.vocab_size()) + 31) / 32;
  std::vector<uint32_t> bits = region_tokens.bits;
  int64_t accepted_count = region_tokens.count;
  enum Verdict : uint8_t { kAccepted, kRejected, kUncertainLookaheadOnly, kUncertainFsmOnly, kUncertainBoth };
  std::vector<int32_t> uncertain_lookahead;
  std::vector<int32_t> uncertain_fsm;
  s.path[0] = node;
  s.left_lookahead[0] = 0;
  s.left_fsm[0] = 0;
  int32_t depth = 0;  // bytes of the previous tail consumed (its byte at `depth` failed unless accepted)
  Verdict previous = kRejected;
  const size_t tails = outsiders.tails.size();
  for (size_t i = 0; i < tails; ++i) {
    Verdict verdict = previous;
    const std::string& tail = outsiders.tails[i];
    const int32_t size = static_cast<int32_t>(tail.size());
    if (outsiders.tail_lcp[i] <= depth) {
      depth = std::min(outsiders.tail_lcp[i], size);
      verdict = kAccepted;
      while (depth < size) {
        const uint8_t byte = static_cast<uint8_t>(tail[depth]);
        const NodeId from = s.path[depth];
        const bool inner = depth > 0;
        const bool left_lookahead = s.left_lookahead[depth] || (inner && leave[from].test(byte));
        const bool left_fsm = s.left_fsm[depth] || (inner && leavable[from]);
        const NodeId next = stepper.Row(from)[byte];
        if (next < 0) {
          verdict = left_lookahead ? (left_fsm ? kUncertainBoth : kUncertainLookaheadOnly)
                                   : (left_fsm ? kUncertainFsmOnly : kRejected);
          break;
        }
        s.path[depth + 1] = next;
        s.left_lookahead[depth + 1] = left_lookahead;
        s.left_fsm[depth + 1] = left_fsm;
        ++depth;
      }
    }
    previous = verdict;
    if (verdict == kRejected) continue;
    for (int32_t g = outsiders.group_begin[i]; g < outsiders.group_begin[i + 1]; ++g) {
      const int32_t pos = outsiders.positions[g];
      if (verdict == kAccepted) {
        const int32_t id = sorted[pos];
        uint32_t& word = bits[static_cast<size_t>(id >> 5)];
        const uint32_t bit = 1u << (id & 31);
        if (!(word & bit)) ++accepted_count;
        word |= bit;
        continue;
      }
      if (verdict != kUncertainFsmOnly) uncertain_lookahead.push_back(pos);
      if (want_fsm_only && verdict != kUncertainLookaheadOnly) uncertain_fsm.push_back(pos);
    }
  }
  // Uncertain lists in sorted order, each with the common prefix of neighbouring tokens.
  auto finish = [&](std::vector<int32_t>& positions, TokenClassification* out) {
    std::sort(positions.begin(), positions.end());
    out->uncertain_positions = std::move(positions);
    out->uncertain_lcp.assign(out->uncertain_positions.size(), 0);
    for (size_t k = 1; k < out->uncertain_positions.size(); ++k) {
      out->uncertain_lcp[k] =
          SharedPrefixOfPositions(tokenizer, out->uncertain_positions[k - 1], out->uncertain_positions[k]);
    }
  };
  ClassificationPair out;
  finish(uncertain_lookahead, &out.with_lookahead);
  if (want_fsm_only) finish(uncertain_fsm, &out.fsm_only);
  if (accepted_count > static_cast<int64_t>(words)) {
    auto accepted = std::make_shared<AcceptedTokens>();
    accepted->bits = std::move(bits);
    out.with_lookahead.accepted = std::move(accepted);
  } else {
    out.with_lookahead.accepted = PackAccepted(bits, words, 0, words, accepted_count);
  }
  out.fsm_only.accepted = out.with_lookahead.accepted;
  Shrink(&out.with_lookahead);
  Shrink(&out.fsm_only);
  return out;
}

}  // namespace

namespace {
// Has the class's ClassPrefixes built on the background thread (PrecomputeWorker): a
// matcher never waits for it, and classifies by the plain walk until it is there.
void RequestClassPrefixTable(const TokenizerInfo& tokenizer, const CharacterClass& cls);
}  // namespace

ClassificationPair ClassifyTokens(const GrammarFsm& fsm, const LeaveSets& leave,
                                  const std::vector<uint8_t>& leavable, NodeId node,
                                  const TokenizerInfo& tokenizer, bool want_fsm_only, uint64_t rows_owner,
                                  int64_t work_budget, bool* over_budget) {
  const TokenTrieNode* const trie = tokenizer.trie().data();
  const TokenTrieTokens* const trie_tokens = tokenizer.trie_tokens().data();
  const std::vector<ByteMask>& suffix_bytes = tokenizer.trie_suffix_bytes();
  const std::vector<uint16_t>& suffix_max_length = tokenizer.trie_suffix_max_length();
  const std::vector<int32_t>& sorted = tokenizer.sorted_text_tokens();
  const std::vector<int32_t>& lcp = tokenizer.lcp();
  ClassifyScratch& s = Scratch();
  const size_t depth_slots = static_cast<size_t>(tokenizer.max_token_bytes()) + 1;
  s.EnsureDepth(depth_slots);
  const size_t words = (static_cast<size_t>(tokenizer.vocab_size()) + 31) / 32;
  // accepted_bits is all zero between walks; a walk touches words [words_lo, words_hi) only
  // (a few, on most nodes), and packing and clearing stay within them.
  if (s.accepted_bits.size() != words) s.accepted_bits.assign(words, 0);
  if (s.accepted_summary.size() != (words + 63) / 64) s.accepted_summary.assign((words + 63) / 64, 0);
  size_t words_lo = words;
  size_t words_hi = 0;
  int64_t accepted_count = 0;
  // accepted_list holds every accepted id while accepted_count <= kListedAccepts and the
  // walk did not start from a region's shared set (which is not listed).
  bool listed = true;
  s.accepted_list.clear();
  struct ClearTouched {
    std::vector<uint32_t>& bits;
    std::vector<uint64_t>& summary;
    const std::vector<int32_t>& list;
    const bool& listed;
    const int64_t& count;
    const size_t& lo;
    const size_t& hi;
    ~ClearTouched() {
      if (listed && count <= kListedAccepts) {
        for (int32_t id : list) bits[id >> 5] = 0;
      } else if (lo < hi) {
        std::fill(bits.begin() + lo, bits.begin() + hi, 0);
      }
      if (lo < hi) std::fill(summary.begin() + lo / 64, summary.begin() + (hi + 63) / 64, 0);
    }
  } clear_touched{s.accepted_bits, s.accepted_summary, s.accepted_list, listed, accepted_count, words_lo, words_hi};
  DenseStepper stepper(fsm, s, rows_owner);

  // path[d]: the DFA node after the d bytes of the current trie node's prefix. left_*[d]:
  // whether the parser could have left the rule before byte d with that byte next (at some
  // node path[j], 1 <= j < d). Leaving at path[0] needs no check: the parser's closure has
  // already put the resulting items (resumed callers, predicted callees) into the same set,
  // where they are classified in their own right.
  s.path[0] = node;
  s.left_fsm[0] = 0;
  s.left_lookahead[0] = 0;
  ClassificationPair out;
  // The arrays indexed by depth, as plain pointers (the loop below is bound by loads, and
  // these stay in registers).
  NodeId* const path = s.path.data();
  const NodeId** const path_row = s.path_row.data();
  uint8_t* const left_fsm_at = s.left_fsm.data();
  uint8_t* const left_lookahead_at = s.left_lookahead.data();
  int8_t* const pure_state = s.pure_state.data();
  // A region root whose region has one boundary node is classified by its outsiders' tails:
  // a few thousand short walks, cheaper than the pool's keys for it (its canonical sub-DFA
  // within one token's reach runs over the rest of the rule), so within a budgeted walk's
  // reach when the tails are (kRegionTailsPerWorkUnit tails per work unit).
  constexpr int64_t kRegionTailsPerWorkUnit = 4;
  auto tails_within_budget = [work_budget](const RegionOutsiders& outsiders) {
    return work_budget < 0 || static_cast<int64_t>(outsiders.tails.size()) <= kRegionTailsPerWorkUnit * work_budget;
  };
  // Long chain root: the loop head of a compressed bounded string body, far from its bound
  // whatever the count (DenseStepper::LongChainRoot), is classified by the tails of the
  // tokens outside its class, its class tokens all accepted. Its pool keys would
  // run over a hundred copies. (Tried first: a chain is no region, and a region root's
  // search for its region is what the chain would pay otherwise.)
  ByteMask region_ascii;
  if (stepper.LongChainRoot(node, leave, leavable, tokenizer.max_token_bytes(), &region_ascii)) {
    std::shared_ptr<const TokenIdSet> class_tokens = tokenizer.Utf8RegionTokens(region_ascii);
    std::shared_ptr<const RegionOutsiders> outsiders = tokenizer.Utf8RegionOutsiders(region_ascii);
    if (class_tokens && outsiders && tails_within_budget(*outsiders)) {
      return ClassifyRegionOutsiders(*class_tokens, *outsiders, leave, leavable, node, tokenizer, want_fsm_only,
                                     stepper, s);
    }
  }
  // Region root: when `node` is a boundary node of a UTF-8 region (a JSON string body), the
  // tokenizer's shared set of tokens that region consumes wholesale (all accepted) starts
  // the accepted set, and the walk skips every subtree inside that set. pure_state[d]: the
  // decoder state after the current prefix of d bytes while that prefix stays inside the
  // set's language, else -1.
  std::shared_ptr<const TokenIdSet> region_tokens;
  if (stepper.Utf8RegionBoundary(node, &region_ascii)) region_tokens = tokenizer.Utf8RegionTokens(region_ascii);
  // Chain root: when `node` is one of the last copies of a bounded string body (the slowest
  // classifications otherwise: nearly every trie node of depth up to the copies left holds
  // a longer token and is visited), the tokenizer's set of class tokens that fit in the
  // copies left starts the accepted set the same way, and a subtree of class tokens is
  // skipped the same way: those that do not fit are rejected (Utf8ChainRoot).
  // Class root (DenseStepper::ClassRoot): the tokens in the class's language that fit the
  // chain start the accepted set, the trie is walked only under the first bytes that begin
  // no class character, and the tokens with a class prefix are decided by their tails
  // (TokenizerInfo::ClassPrefixTable) after the walk.
  ClassChain class_chain;
  std::shared_ptr<const ClassPrefixes> class_prefixes;
  if (!region_tokens &&
      stepper.ClassRoot(node, leave, leavable, TokenizerInfo::kMaxUtf8ChainCharacters, &class_chain)) {
    bool first_request = false;
    class_prefixes = tokenizer.FindClassPrefixTable(class_chain.cls, &first_request);
    if (first_request) RequestClassPrefixTable(tokenizer, class_chain.cls);
  }
  int32_t chain_copies = 0;
  if (!region_tokens && !class_prefixes && stepper.Utf8ChainRoot(node, leave, leavable, &region_ascii, &chain_copies)) {
    region_tokens = tokenizer.Utf8ChainTokens(region_ascii, chain_copies);
  }
  if (region_tokens && chain_copies == 0 && stepper.SingleBoundaryRegion(node, region_ascii, leave, leavable)) {
    if (std::shared_ptr<const RegionOutsiders> outsiders = tokenizer.Utf8RegionOutsiders(region_ascii);
        outsiders && tails_within_budget(*outsiders)) {
      return ClassifyRegionOutsiders(*region_tokens, *outsiders, leave, leavable, node, tokenizer, want_fsm_only,
                                     stepper, s);
    }
  }
  // Any other region or chain root accepts a shared dense set: never within a budgeted
  // walk's reach.
  if (region_tokens && work_budget >= 0) {
    *over_budget = true;
    return out;
  }
  // Budget left (a budgeted walk only; -1: unbounded).
  int64_t work_left = work_budget >= 0 ? work_budget : INT64_MAX;
  if (region_tokens) {
    std::copy(region_tokens->bits.begin(), region_tokens->bits.end(), s.accepted_bits.begin());
    accepted_count = region_tokens->count;
    listed = false;
    words_lo = 0;
    words_hi = words;
  }
  pure_state[0] = region_tokens ? kUtf8Boundary : -1;
  // Sets a token's accepted bit, counting it once.
  auto accept = [&s, &accepted_count, &words_lo, &words_hi](int32_t id) {
    const size_t w = static_cast<size_t>(id >> 5);
    words_lo = std::min(words_lo, w);
    words_hi = std::max(words_hi, w + 1);
    uint32_t& word = s.accepted_bits[w];
    const uint32_t bit = 1u << (id & 31);
    if (word & bit) return;
    word |= bit;
    s.accepted_summary[w >> 6] |= uint64_t{1} << (w & 63);
    if (++accepted_count <= kListedAccepts) s.accepted_list.push_back(id);
  };
  // Common prefix of the next uncertain token with the list's last one: the minimum over
  // the trie nodes passed since of (depth - 1), the depth of their parent.
  int32_t shared_fsm = INT32_MAX;
  int32_t shared_lookahead = INT32_MAX;
  // Only the depth-1 subtrees of the bytes `node` steps on are visited: a token whose first
  // byte fails is rejected (the parser cannot have left the rule before its first byte), and
  // skipping those subtrees saves loading their depth-1 nodes, scattered over the trie.
  ByteMask first_bytes;
  path_row[0] = stepper.Row(node);
  for (int b = 0; b < 256; ++b) {
    if (path_row[0][b] >= 0) first_bytes.Set(static_cast<uint8_t>(b));
  }
  // At a class root the trie holds only the tokens without a class prefix.
  ByteMask class_first_bytes;
  if (class_prefixes) {
    class_first_bytes = class_chain.cls.ascii;
    if (class_chain.cls.multibyte) {
      for (int b = 0xC2; b <= 0xF4; ++b) class_first_bytes.Set(static_cast<uint8_t>(b));
    }
    for (int w = 0; w < 4; ++w) first_bytes.words[w] &= ~class_first_bytes.words[w];
  }
  // A budgeted walk from a node that steps on most bytes (a copy of a bounded string body
  // far from its bound, a wide character class) accepts most of the vocabulary, in bulk or
  // token by token, and both count against the budget: it would run to the budget (a few
  // hundred microseconds on a bounded string's copies) only to be thrown away.
  constexpr int kDenseFirstBytes = 64;
  if (work_budget >= 0 && first_bytes.Count() >= kDenseFirstBytes) {
    *over_budget = true;
    return out;
  }
  const std::vector<int32_t>& child_begin = tokenizer.trie_child_begin();
  const TrieChild* const children = tokenizer.trie_children().data();
  // Walks the trie nodes [begin, end) (whole subtrees, whose parents' path entries are set),
  // classifying each; false when the budget runs out. (`self`: the walk, for the children
  // visited through a child list.)
  auto walk = [&](auto& self, int32_t begin, int32_t end) -> bool {
      for (int32_t i = begin; i < end;) {
        if (--work_left < 0) return false;
        const TokenTrieNode t = trie[i];
        const int32_t d = t.depth;
        const NodeId from = path[d - 1];
        shared_fsm = std::min(shared_fsm, d - 1);
        shared_lookahead = std::min(shared_lookahead, d - 1);
        int8_t pure = -1;
        if (pure_state[d - 1] >= 0 && (t.byte >= 0x80 || AsciiIn(region_ascii, t.byte))) {
          pure = Utf8DecoderStep(pure_state[d - 1], t.byte);
          if (pure >= 0 && t.utf8_state != kUtf8Malformed && trie_tokens[i].suffix_bytes >= 0 &&
              AsciiSubset(suffix_bytes[trie_tokens[i].suffix_bytes], region_ascii)) {
            i = t.subtree_end;  // every token below is in region_tokens: accepted already
            continue;
          }
        }
        const NodeId next = path_row[d - 1][t.byte];
        const bool inner = d > 1;
        const bool left_lookahead = left_lookahead_at[d - 1] || (inner && leave[from].test(t.byte));
        const bool left_fsm = left_fsm_at[d - 1] || (inner && leavable[from]);
        if (next < 0) {
          // Every token below shares the failing byte: one decision for the whole subtree.
          if (left_lookahead) {
            AppendUncertainRange(&out.with_lookahead, trie_tokens[i].token_begin, trie_tokens[i].token_end,
                                 shared_lookahead, lcp);
            shared_lookahead = INT32_MAX;
          }
          if (want_fsm_only && left_fsm) {
            AppendUncertainRange(&out.fsm_only, trie_tokens[i].token_begin, trie_tokens[i].token_end, shared_fsm,
                                 lcp);
            shared_fsm = INT32_MAX;
          }
          i = t.subtree_end;
          continue;
        }
        const TokenTrieTokens tokens = trie_tokens[i];
        // A leaf's DFA node needs no row (no child steps from it), nor the shortcuts below:
        // its tokens (several, where the vocabulary spells some the same) are its exact
        // tokens, accepted below.
        const bool has_children = t.subtree_end > i + 1;
        const NodeId* next_row = has_children ? stepper.Row(next) : nullptr;
        if (has_children && tokens.suffix_bytes >= 0) {
          // Dense shortcuts: if `next` loops on every byte that follows in the subtree (directly,
          // inside a UTF-8 region, or along a repetition chain), every token below is consumed
          // to its end: all accepted, no need to visit them.
          const ByteMask& below = suffix_bytes[tokens.suffix_bytes];
          if (below.SubsetOf(stepper.Loop(next)) || stepper.Utf8RegionConsumes(next, t.utf8_state, below) ||
              stepper.ChainConsumes(next, below, suffix_max_length[tokens.suffix_bytes] - d) ||
              ((t.utf8_state != kUtf8Boundary || below.words[2] | below.words[3]) &&
               stepper.Utf8ChainConsumes(next, t.utf8_state, below, suffix_max_length[tokens.suffix_bytes] - d))) {
            work_left -= tokens.token_end - tokens.token_begin;
            for (int32_t p = tokens.token_begin; p < tokens.token_end; ++p) accept(sorted[p]);
            i = t.subtree_end;
            continue;
          }
        }
        path[d] = next;
        path_row[d] = next_row;
        left_lookahead_at[d] = left_lookahead;
        left_fsm_at[d] = left_fsm;
        pure_state[d] = pure;
        for (int32_t p = tokens.token_begin; p < tokens.exact_end; ++p) accept(sorted[p]);
        // Through a child list, only the children that `next` steps on or may leave the rule
        // on are visited. Any other child fails at its byte with no way out, which rejects its
        // whole subtree (what visiting it would decide), so it is never loaded. Skipping
        // nodes leaves the prefix lengths kept for the uncertain lists as they were: the next
        // node visited is a later sibling or shallower.
        if (has_children && tokens.suffix_bytes >= 0 && !left_lookahead &&
            !(want_fsm_only && (left_fsm || leavable[next]))) {
          const int32_t list_begin = child_begin[tokens.suffix_bytes];
          const int32_t list_end = child_begin[tokens.suffix_bytes + 1];
          if (list_begin < list_end) {
            const ByteSet& next_leave = leave[next];
            for (int32_t k = list_begin; k < list_end; ++k) {
              const TrieChild child = children[k];
              if (next_row[child.byte()] < 0 && !next_leave.test(child.byte())) continue;
              if (!self(self, child.node(), trie[child.node()].subtree_end)) return false;
            }
            i = t.subtree_end;
            continue;
          }
        }
        ++i;
      }
      return true;
  };
  if (class_prefixes) {
    // The class's tokens that fit the chain are accepted.
    if (class_chain.loops) {
      std::copy(class_prefixes->all_members.bits.begin(), class_prefixes->all_members.bits.end(),
                s.accepted_bits.begin());
      accepted_count = class_prefixes->all_members.count;
    } else {
      for (const auto& [characters, id] : class_prefixes->members) {
        if (characters > class_chain.max_characters()) break;
        s.accepted_bits[id >> 5] |= 1u << (id & 31);
        ++accepted_count;
      }
    }
    listed = false;
    words_lo = 0;
    words_hi = words;
  }
  const std::array<int32_t, 256>& root_child = tokenizer.trie_root_child();
  for (int w = 0; w < 4; ++w) {
    for (uint64_t bits = first_bytes.words[w]; bits; bits &= bits - 1) {
      const int32_t begin = root_child[w * 64 + __builtin_ctzll(bits)];
      if (begin >= 0 && !walk(walk, begin, trie[begin].subtree_end)) {
        *over_budget = true;
        return ClassificationPair();
      }
    }
  }
  if (class_prefixes) {
    // The tokens with a class prefix, subtree by subtree (ClassPrefixes::entries): each walks
    // from the chain's node after its prefix, through the bytes of a character it breaks
    // off, then as in the trie walk. Only tails that start with a byte some chain node steps
    // on are walked: the chain's nodes after the root cannot leave the rule, so any other
    // tail fails at once with nothing left to the parser.
    ByteMask tail_first_bytes = class_first_bytes;
    auto add_row = [&](NodeId x) {
      const NodeId* row = stepper.Row(x);
      for (int b = 0; b < 256; ++b) {
        if (row[b] >= 0) tail_first_bytes.Set(static_cast<uint8_t>(b));
      }
    };
    for (size_t p = 1; p < class_chain.nodes.size(); ++p) add_row(class_chain.nodes[p]);
    if (class_chain.loops) add_row(class_chain.nodes.back());
    const std::vector<std::string>& decoded = tokenizer.decoded_tokens();
    for (int b = 0; b < 256; ++b) {
      if (!((tail_first_bytes.words[b >> 6] >> (b & 63)) & 1)) continue;
      for (int32_t k = class_prefixes->first_byte_begin[b]; k < class_prefixes->first_byte_begin[b + 1]; ++k) {
        const ClassPrefixes::Entry& entry = class_prefixes->entries[k];
        if (--work_left < 0) {
          *over_budget = true;
          return ClassificationPair();
        }
        const NodeId start = entry.prefix_characters == 0 ? node : class_chain.After(entry.prefix_characters);
        if (start < 0) continue;  // more characters than the chain holds: the one past it fails
        const int32_t depth = trie[entry.trie_node].depth;  // of the subtree's byte
        // The path down to the subtree's parent: the chain's node, then the bytes of the
        // character the subtree breaks off (none when the tail starts at a boundary). Those
        // nodes cannot leave (ClassRoot), so a failing step rejects the subtree.
        auto seed = [&](int32_t d, NodeId at) {
          path[d] = at;
          path_row[d] = stepper.Row(at);
          left_lookahead_at[d] = 0;
          left_fsm_at[d] = 0;
          pure_state[d] = -1;
        };
        seed(entry.tail_start, start);
        const std::string& token = decoded[sorted[trie_tokens[entry.trie_node].token_begin]];
        bool alive = true;
        for (int32_t d = entry.tail_start; d + 1 < depth && alive; ++d) {
          const NodeId next = path_row[d][static_cast<uint8_t>(token[d])];
          alive = next >= 0;
          if (alive) seed(d + 1, next);
        }
        if (alive && !walk(walk, entry.trie_node, trie[entry.trie_node].subtree_end)) {
          *over_budget = true;
          return ClassificationPair();
        }
      }
    }
    // The entries were walked out of sorted order, and the prefix lengths the walk kept
    // assume sorted order: sort the uncertain lists again and recompute them.
    for (TokenClassification* c : {&out.with_lookahead, &out.fsm_only}) {
      std::vector<int32_t>& positions = c->uncertain_positions;
      std::sort(positions.begin(), positions.end());
      c->uncertain_lcp.assign(positions.size(), 0);
      for (size_t k = 1; k < positions.size(); ++k) {
        c->uncertain_lcp[k] = SharedPrefixOfPositions(tokenizer, positions[k - 1], positions[k]);
      }
    }
  }
  // A short list is sorted; a longer one is read back in id order from the bits it set, when
  // the words they span cost less to scan than the sort (a few hundred ids: a tenth of a
  // large walk went to sorting them).
  constexpr int64_t kScanWordsPerListedId = 16;
  if (listed && accepted_count <= kListedAccepts && accepted_count <= static_cast<int64_t>(words) &&
      static_cast<int64_t>(words_hi - words_lo) > kScanWordsPerListedId * accepted_count) {
    auto accepted = std::make_shared<AcceptedTokens>();
    accepted->ids = s.accepted_list;
    std::sort(accepted->ids.begin(), accepted->ids.end());
    out.with_lookahead.accepted = std::move(accepted);
  } else {
    // A listed walk set every accepted word through accept(), so its summary is complete (the
    // whitespace tokens a JSON separator accepts lie in a few hundred of their span's
    // thousands of words).
    out.with_lookahead.accepted = PackAccepted(s.accepted_bits, words, words_lo, words_hi, accepted_count,
                                               listed ? &s.accepted_summary : nullptr);
  }
  out.fsm_only.accepted = out.with_lookahead.accepted;
  Shrink(&out.with_lookahead);
  Shrink(&out.fsm_only);
  return out;
}

TokenClassification RefineWithLookahead(const TokenClassification& fsm_only, const GrammarFsm& fsm,
                                        const LeaveSets& leave, NodeId node,
                                        const TokenizerInfo& tokenizer, uint64_t rows_owner) {
  const std::vector<int32_t>& sorted = tokenizer.sorted_text_tokens();
  const std::vector<std::string>& decoded = tokenizer.decoded_tokens();
  ClassifyScratch& s = Scratch();
  const size_t depth_slots = static_cast<size_t>(tokenizer.max_token_bytes()) + 1;
  s.EnsureDepth(depth_slots);
  DenseStepper stepper(fsm, s, rows_owner);
  TokenClassification out;
  out.accepted = fsm_only.accepted;
  // Same walk as ClassifyTokens, over the listed tokens only (none of them is accepted: each
  // fails at some byte). Invariant: `depth` bytes of the previous token were consumed and
  // its byte at `depth` failed, with `previous_uncertain` its verdict.
  s.path[0] = node;
  s.left_lookahead[0] = 0;
  int32_t depth = 0;
  bool previous_uncertain = false;
  int32_t shared = INT32_MAX;  // common prefix with the last kept token
  const size_t count = fsm_only.uncertain_positions.size();
  for (size_t k = 0; k < count; ++k) {
    const int32_t pos = fsm_only.uncertain_positions[k];
    const int32_t with_previous = fsm_only.uncertain_lcp[k];
    shared = std::min(shared, with_previous);
    bool uncertain = previous_uncertain;
    if (with_previous <= depth) {
      const std::string& bytes = decoded[sorted[pos]];
      const int32_t size = static_cast<int32_t>(bytes.size());
      depth = with_previous;
      uncertain = false;
      while (depth < size) {
        const uint8_t byte = static_cast<uint8_t>(bytes[depth]);
        const NodeId from = s.path[depth];
        const bool can_leave = depth > 0 && leave[from].test(byte);
        const NodeId next = stepper.Row(from)[byte];
        if (next < 0) {
          uncertain = s.left_lookahead[depth] || can_leave;
          break;
        }
        s.path[depth + 1] = next;
        s.left_lookahead[depth + 1] = s.left_lookahead[depth] || can_leave;
        ++depth;
      }
    }
    previous_uncertain = uncertain;
    if (uncertain) {
      out.uncertain_positions.push_back(pos);
      out.uncertain_lcp.push_back(out.uncertain_positions.size() == 1 ? 0 : shared);
      shared = INT32_MAX;
    }
  }
  Shrink(&out);
  return out;
}

LongTokenTable BuildLongTokenTable(const TokenizerInfo& tokenizer) {
  const std::vector<int32_t>& sorted = tokenizer.sorted_text_tokens();
  const std::vector<std::string>& decoded = tokenizer.decoded_tokens();
  LongTokenTable table;
  table.short_bits.assign((static_cast<size_t>(tokenizer.vocab_size()) + 31) / 32, 0);
  const std::string* previous = nullptr;
  for (int32_t pos = 0; pos < static_cast<int32_t>(sorted.size()); ++pos) {
    const int32_t id = sorted[pos];
    const std::string& bytes = decoded[id];
    if (static_cast<int32_t>(bytes.size()) <= kShortTokenBytes) {
      table.short_bits[id >> 5] |= 1u << (id & 31);
      continue;
    }
    int32_t shared = 0;
    if (previous != nullptr) {
      const size_t limit = std::min(previous->size(), bytes.size());
      while (static_cast<size_t>(shared) < limit && (*previous)[shared] == bytes[shared]) ++shared;
    }
    table.positions.push_back(pos);
    table.lcp.push_back(shared);
    previous = &bytes;
  }
  // Sorted order compares bytes as unsigned (std::string's ordering), so each first byte's
  // tokens are one run, the runs in byte order.
  const size_t count = table.positions.size();
  size_t k = 0;
  for (int b = 0; b < 256; ++b) {
    table.first_byte_begin[b] = static_cast<int32_t>(k);
    while (k < count && static_cast<uint8_t>(decoded[sorted[table.positions[k]]][0]) == b) ++k;
  }
  table.first_byte_begin[256] = static_cast<int32_t>(k);
  if (k != count) throw std::logic_error("long tokens are not grouped by first byte");
  return table;
}

TokenClassification ClassifyLongTokens(const GrammarFsm& fsm, const LeaveSets& leave, NodeId node,
                                       const TokenizerInfo& tokenizer, const LongTokenTable& long_tokens,
                                       uint64_t rows_owner) {
  const std::vector<int32_t>& sorted = tokenizer.sorted_text_tokens();
  const std::vector<std::string>& decoded = tokenizer.decoded_tokens();
  ClassifyScratch& s = Scratch();
  s.EnsureDepth(static_cast<size_t>(tokenizer.max_token_bytes()) + 1);
  DenseStepper stepper(fsm, s, rows_owner);
  TokenClassification out;
  auto accepted = std::make_shared<AcceptedTokens>();
  // The rules of ClassifyTokens, one token at a time. Invariant: path[0..depth] holds the
  // nodes after the first `depth` bytes of the previous token, all consumed (a token that
  // failed keeps only the bytes before its failing one), so a token sharing `lcp` bytes with
  // it resumes at min(lcp, depth).
  s.path[0] = node;
  s.left_lookahead[0] = 0;
  int32_t depth = 0;
  int32_t shared = INT32_MAX;  // common prefix with the last uncertain token
  // A token whose first byte fails is rejected (the parser cannot leave before the first
  // byte), so only the first-byte groups the node steps on are walked. The first token of a
  // group has lcp 0, which resets `depth` and `shared` as the skipped groups would have.
  const NodeId* root_row = stepper.Row(node);
  for (int first = 0; first < 256; ++first) {
    if (root_row[first] < 0) continue;
    const int32_t group_end = long_tokens.first_byte_begin[first + 1];
    for (int32_t k = long_tokens.first_byte_begin[first]; k < group_end; ++k) {
      const int32_t pos = long_tokens.positions[k];
      shared = std::min(shared, long_tokens.lcp[k]);
      const std::string& bytes = decoded[sorted[pos]];
      const int32_t size = static_cast<int32_t>(bytes.size());
      depth = std::min(depth, long_tokens.lcp[k]);
      bool uncertain = false;
      bool consumed = true;
      while (depth < size) {
        const uint8_t byte = static_cast<uint8_t>(bytes[depth]);
        const NodeId from = s.path[depth];
        const bool left = s.left_lookahead[depth] || (depth > 0 && leave[from].test(byte));
        const NodeId next = stepper.Row(from)[byte];
        if (next < 0) {
          uncertain = left;
          consumed = false;
          break;
        }
        s.path[depth + 1] = next;
        s.left_lookahead[depth + 1] = left;
        ++depth;
      }
      if (consumed) {
        accepted->ids.push_back(sorted[pos]);
      } else if (uncertain) {
        out.uncertain_positions.push_back(pos);
        out.uncertain_lcp.push_back(out.uncertain_positions.size() == 1 ? 0 : shared);
        shared = INT32_MAX;
      }
    }
  }
  std::sort(accepted->ids.begin(), accepted->ids.end());
  out.accepted = std::move(accepted);
  return out;
}

TokenClassification JoinShortAndLong(const TokenClassification& short_part, const TokenClassification& long_part,
                                     const TokenizerInfo& tokenizer, const LongTokenTable& long_tokens) {
  const std::vector<int32_t>& sorted = tokenizer.sorted_text_tokens();
  const std::vector<std::string>& decoded = tokenizer.decoded_tokens();
  const size_t words = long_tokens.short_bits.size();
  const AcceptedTokens& from_short = *short_part.accepted;
  const std::vector<int32_t>& long_ids = long_part.accepted->ids;  // ascending
  auto is_short_id = [&](int32_t id) { return (long_tokens.short_bits[id >> 5] >> (id & 31)) & 1; };
  TokenClassification out;
  if (!from_short.as_bits() && from_short.ids.size() + long_ids.size() <= words) {
    // A sparse set (a literal's few tokens): merge the two ascending id lists; the word
    // passes below would cost a scan of the whole vocabulary.
    auto accepted = std::make_shared<AcceptedTokens>();
    accepted->ids.reserve(from_short.ids.size() + long_ids.size());
    size_t j = 0;
    for (int32_t id : from_short.ids) {
      if (!is_short_id(id)) continue;
      while (j < long_ids.size() && long_ids[j] < id) accepted->ids.push_back(long_ids[j++]);
      accepted->ids.push_back(id);
    }
    accepted->ids.insert(accepted->ids.end(), long_ids.begin() + j, long_ids.end());
    out.accepted = std::move(accepted);
  } else {
    // Not the walks' accepted_bits, which must stay all zero between walks (ClassifyTokens).
    thread_local std::vector<uint32_t> bits;
    bits.assign(words, 0);
    if (from_short.as_bits()) {
      for (size_t w = 0; w < words; ++w) bits[w] = from_short.bits[w] & long_tokens.short_bits[w];
    } else {
      for (int32_t id : from_short.ids) {
        if (is_short_id(id)) bits[id >> 5] |= 1u << (id & 31);
      }
    }
    for (int32_t id : long_ids) bits[id >> 5] |= 1u << (id & 31);
    int64_t count = 0;
    for (size_t w = 0; w < words; ++w) count += __builtin_popcount(bits[w]);
    out.accepted = PackAccepted(bits, words, 0, words, count);
  }
  // Merge the short part's short uncertain tokens with the long part's list (both ascending
  // positions), recomputing the common prefix of each new neighbour pair.
  auto is_short = [&](int32_t pos) {
    return static_cast<int32_t>(decoded[sorted[pos]].size()) <= kShortTokenBytes;
  };
  const std::vector<int32_t>& a = short_part.uncertain_positions;
  const std::vector<int32_t>& b = long_part.uncertain_positions;
  size_t i = 0, j = 0;
  while (true) {
    while (i < a.size() && !is_short(a[i])) ++i;
    int32_t pos;
    if (i < a.size() && (j == b.size() || a[i] < b[j])) {
      pos = a[i++];
    } else if (j < b.size()) {
      pos = b[j++];
    } else {
      break;
    }
    out.uncertain_lcp.push_back(
        out.uncertain_positions.empty() ? 0 : SharedPrefixOfPositions(tokenizer, out.uncertain_positions.back(), pos));
    out.uncertain_positions.push_back(pos);
  }
  Shrink(&out);
  return out;
}

NodeCacheKeys CanonicalSubFsmKeys(const GrammarFsm& fsm, const LeaveSets& leave,
                                  const std::vector<uint8_t>& leavable, NodeId node, int32_t depth) {
  // Breadth-first numbering from `node`; nodes first seen beyond `depth` bytes are written
  // as a single "beyond" marker: a token never reaches them, so their details do not matter.
  // The numbering lives in per-thread flat arrays (number[n] = -1 outside this walk), so a
  // key costs one pass over the sub-DFA and two string allocations.
  struct KeyScratch {
    std::vector<int32_t> number;
    std::vector<NodeId> order;
    std::vector<int32_t> node_depth;
    std::vector<int32_t> key;
    std::vector<int32_t> leave_part;
  };
  thread_local KeyScratch s;
  if (s.number.size() < static_cast<size_t>(fsm.num_nodes())) s.number.resize(fsm.num_nodes(), -1);
  s.order.assign(1, node);
  s.node_depth.assign(1, 0);
  s.key.clear();
  s.leave_part.clear();
  s.number[node] = 0;
  for (size_t k = 0; k < s.order.size(); ++k) {
    const NodeId n = s.order[k];
    // Written for the start node too: a cycle can bring the walk back to it, and then it is
    // consulted like any other.
    s.key.push_back(leavable[n] ? -3 : -4);
    if (leave[n].any()) {
      s.leave_part.push_back(static_cast<int32_t>(k));
      for (int w = 0; w < 256; w += 32) {
        // 32 bits of the set at a time (bitset has no word access).
        s.leave_part.push_back(static_cast<int32_t>(((leave[n] >> w) & ByteSet(0xffffffffULL)).to_ulong()));
      }
    }
    if (s.node_depth[k] >= depth) {
      s.key.push_back(-2);  // edges out of a node at the horizon are never taken
      continue;
    }
    s.key.push_back(fsm.byte_edge_begin[n + 1] - fsm.byte_edge_begin[n]);
    for (const ByteEdge* e = fsm.byte_edges_begin(n); e != fsm.byte_edges_end(n); ++e) {
      int32_t& number = s.number[e->target];
      if (number < 0) {
        number = static_cast<int32_t>(s.order.size());
        s.order.push_back(e->target);
        s.node_depth.push_back(s.node_depth[k] + 1);
      }
      s.key.push_back((e->lo << 8) | e->hi);
      s.key.push_back(number);
    }
  }
  for (NodeId n : s.order) s.number[n] = -1;
  const size_t key_bytes = s.key.size() * sizeof(int32_t);
  const size_t leave_bytes = s.leave_part.size() * sizeof(int32_t);
  std::string fsm_only;
  fsm_only.reserve(1 + key_bytes);
  fsm_only.push_back('T');
  fsm_only.append(reinterpret_cast<const char*>(s.key.data()), key_bytes);
  std::string with_lookahead;
  with_lookahead.reserve(fsm_only.size() + 1 + leave_bytes);
  with_lookahead = fsm_only;
  with_lookahead.push_back('L');
  with_lookahead.append(reinterpret_cast<const char*>(s.leave_part.data()), leave_bytes);
  return NodeCacheKeys{PoolKey(std::move(fsm_only)), PoolKey(std::move(with_lookahead))};
}

std::shared_ptr<const TokenClassification> MaskCachePool::Find(const PoolKey& key) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = index_.find(IndexKey{key.bytes, key.hash});
  if (it == index_.end()) return nullptr;
  lru_.splice(lru_.begin(), lru_, it->second);
  return it->second->entry;
}

void MaskCachePool::AddRef(const void* object, int64_t bytes) {
  if (refs_[object]++ == 0) bytes_ += bytes;
}

void MaskCachePool::Release(const void* object, int64_t bytes) {
  auto it = refs_.find(object);
  if (--it->second == 0) {
    bytes_ -= bytes;
    refs_.erase(it);
  }
}

void MaskCachePool::Insert(PoolKey key, std::shared_ptr<const TokenClassification> entry) {
  const int64_t own = static_cast<int64_t>(entry->OwnBytes());
  const int64_t accepted = static_cast<int64_t>(entry->accepted->MemoryBytes());
  // A slot is charged and released by the capacity of the key it holds (the one copy; the
  // index refers to it), so bytes() cannot drift with evictions.
  auto slot_bytes = [](const Slot& slot) {
    return static_cast<int64_t>(slot.key.bytes.capacity() + sizeof(Slot) + 4 * sizeof(void*));
  };
  std::lock_guard<std::mutex> lock(mutex_);
  if (index_.count(IndexKey{key.bytes, key.hash}) ||
      (limit_bytes_ >= 0 &&
       own + accepted + static_cast<int64_t>(key.bytes.size() + sizeof(Slot)) > limit_bytes_)) {
    return;
  }
  lru_.push_front({std::move(key), std::move(entry)});
  index_.emplace(IndexKey{lru_.front().key.bytes, lru_.front().key.hash}, lru_.begin());
  bytes_ += slot_bytes(lru_.front());
  AddRef(lru_.front().entry.get(), own);
  AddRef(lru_.front().entry->accepted.get(), accepted);
  while (limit_bytes_ >= 0 && bytes_ > limit_bytes_ && !lru_.empty()) {
    const Slot& victim = lru_.back();
    bytes_ -= slot_bytes(victim);
    Release(victim.entry.get(), static_cast<int64_t>(victim.entry->OwnBytes()));
    Release(victim.entry->accepted.get(), static_cast<int64_t>(victim.entry->accepted->MemoryBytes()));
    index_.erase(IndexKey{victim.key.bytes, victim.key.hash});
    lru_.pop_back();
  }
}

int64_t MaskCachePool::bytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return bytes_;
}

size_t MaskCachePool::size() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return lru_.size();
}

void MaskCachePool::Clear() {
  std::lock_guard<std::mutex> lock(mutex_);
  lru_.clear();
  index_.clear();
  refs_.clear();
  bytes_ = 0;
}

GrammarMaskCache::GrammarMaskCache(std::shared_ptr<const GrammarFsm> fsm,
                                   std::shared_ptr<const TokenizerInfo> tokenizer,
                                   std::shared_ptr<MaskCachePool> pool, MaskCacheOptions options)
    : fsm_(std::move(fsm)),
      tokenizer_(std::move(tokenizer)),
      pool_(std::move(pool)),
      options_(options),
      serial_(NextSerial()),
      leave_(ComputeLeaveBytes(*fsm_)),
      slots_(new std::atomic<const TokenClassification*>[fsm_->num_nodes()]) {
  const GrammarFsm& g = *fsm_;
  leavable_.assign(g.num_nodes(), 0);
  for (NodeId n = 0; n < g.num_nodes(); ++n) {
    leavable_[n] = g.node_accepting[n] || g.rule_edge_begin[n] != g.rule_edge_begin[n + 1];
    slots_[n].store(nullptr, std::memory_order_relaxed);
  }
}

uint64_t GrammarMaskCache::NextSerial() {
  static std::atomic<uint64_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}

void GrammarMaskCache::ComputeHashes() {
  std::call_once(hashes_once_, [this]() {
    hashes_ = ComputeFsmHashes(*fsm_);
    lookahead_keys_.assign(fsm_->num_rules(), std::string());
    lookahead_key_done_.assign(fsm_->num_rules(), 0);
    hashes_ready_.store(true, std::memory_order_release);
  });
}

bool GrammarMaskCache::HierarchicalKeys(NodeId node, NodeCacheKeys* keys) {
  if (!hashes_ready_.load(std::memory_order_acquire)) {
    // With a background schedule, its task hashes the grammar (StartPrecompute): a matcher
    // neither waits for it nor hashes in its own fill (a millisecond on the largest
    // grammars, paid by their first mask); truncated keys serve the pool until then.
    if (options_.precompute > 0) return false;
    ComputeHashes();
  }
  const RuleId rule = fsm_->node_rule[node];
  if (rule < 0 || hashes_.node_number[node] < 0) return false;
  std::string fsm_only;
  fsm_only.push_back('H');
  hashes_.rule_hash[rule].AppendTo(&fsm_only);
  const int32_t number = hashes_.node_number[node];
  fsm_only.append(reinterpret_cast<const char*>(&number), sizeof number);
  std::string with_lookahead = fsm_only;
  with_lookahead.push_back('L');
  std::lock_guard<std::mutex> lock(mutex_);
  if (!lookahead_key_done_[rule]) {
    // The lookahead is what the classification reads beyond the FSM: the leave sets of the
    // rule's nodes, in the stable numbering.
    Hash128 h;
    for (int32_t k = hashes_.rule_order_begin[rule]; k < hashes_.rule_order_begin[rule + 1]; ++k) {
      const ByteSet& set = leave_[hashes_.rule_order[k]];
      for (int w = 0; w < 4; ++w) h.Combine(((set >> (64 * w)) & ByteSet(~uint64_t{0})).to_ullong());
    }
    h.AppendTo(&lookahead_keys_[rule]);
    lookahead_key_done_[rule] = 1;
  }
  with_lookahead += lookahead_keys_[rule];
  keys->fsm_only = PoolKey(std::move(fsm_only));
  keys->with_lookahead = PoolKey(std::move(with_lookahead));
  return true;
}

const TokenClassification& GrammarMaskCache::Build(NodeId node) {
  // Built outside the lock: two threads may race to build the same node; the first to
  // publish wins and both results are identical.
  const auto start = std::chrono::steady_clock::now();
  std::shared_ptr<const TokenClassification> entry;
  if (pool_ && options_.cross_grammar) {
    MaskCachePool& pool = *pool_;
    NodeCacheKeys hierarchical;
    const bool has_hierarchical = HierarchicalKeys(node, &hierarchical);
    if (has_hierarchical) entry = pool.Find(hierarchical.with_lookahead);
    bool over_budget = false;
    bool bypassed = false;
    if (entry) {
      pool.RecordPerfectHit();
    } else if (ClassificationPair cheap = ClassifyTokens(*fsm_, leave_, leavable_, node, *tokenizer_, false, serial_,
                                                         kPoolBypassWork, &over_budget);
               !over_budget) {
      pool.RecordBypass();
      bypassed = true;
      entry = std::make_shared<const TokenClassification>(std::move(cheap.with_lookahead));
    } else {
      NodeCacheKeys truncated =
          CanonicalSubFsmKeys(*fsm_, leave_, leavable_, node, tokenizer_->max_token_bytes());
      entry = pool.Find(truncated.with_lookahead);
      if (entry) {
        pool.RecordPerfectHit();
      } else {
        std::shared_ptr<const TokenClassification> fsm_only;
        if (has_hierarchical) fsm_only = pool.Find(hierarchical.fsm_only);
        if (!fsm_only) fsm_only = pool.Find(truncated.fsm_only);
        if (fsm_only) {
          pool.RecordPartialHit();
          entry = std::make_shared<const TokenClassification>(
              RefineWithLookahead(*fsm_only, *fsm_, leave_, node, *tokenizer_, serial_));
        } else {
          // Short-token reuse (see kShortTokenBytes): also a partial hit, with no FSM-only
          // version to store.
          PoolKey short_key;
          std::shared_ptr<const TokenClassification> short_part;
          if (tokenizer_->max_token_bytes() > kShortTokenBytes) {
            std::string bytes =
                std::move(CanonicalSubFsmKeys(*fsm_, leave_, leavable_, node, kShortTokenBytes).with_lookahead.bytes);
            bytes[0] = 'S';
            short_key = PoolKey(std::move(bytes));
            short_part = pool.Find(short_key);
          }
          if (short_part) {
            pool.RecordShortTokenHit();
            const LongTokenTable& long_tokens = pool.long_tokens(*tokenizer_);
            entry = std::make_shared<const TokenClassification>(JoinShortAndLong(
                *short_part, ClassifyLongTokens(*fsm_, leave_, node, *tokenizer_, long_tokens, serial_), *tokenizer_,
                long_tokens));
          } else {
            pool.RecordMiss();
            ClassificationPair pair = ClassifyTokens(*fsm_, leave_, leavable_, node, *tokenizer_, true, serial_);
            entry = std::make_shared<const TokenClassification>(std::move(pair.with_lookahead));
            fsm_only = std::make_shared<const TokenClassification>(std::move(pair.fsm_only));
            if (!short_key.bytes.empty()) pool.Insert(std::move(short_key), entry);
          }
        }
        if (fsm_only) {
          pool.Insert(std::move(truncated.fsm_only), fsm_only);
          if (has_hierarchical) pool.Insert(std::move(hierarchical.fsm_only), fsm_only);
        }
      }
      pool.Insert(std::move(truncated.with_lookahead), entry);
    }
    if (has_hierarchical && !bypassed) pool.Insert(std::move(hierarchical.with_lookahead), entry);
  } else {
    entry = std::make_shared<const TokenClassification>(
        std::move(ClassifyTokens(*fsm_, leave_, leavable_, node, *tokenizer_, false, serial_).with_lookahead));
  }
  build_ns_.fetch_add(std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start).count(),
                      std::memory_order_relaxed);
  std::lock_guard<std::mutex> lock(mutex_);
  if (const TokenClassification* raced = slots_[node].load(std::memory_order_acquire)) return *raced;
  owned_.push_back(entry);
  slots_[node].store(entry.get(), std::memory_order_release);
  built_.fetch_add(1);
  return *entry;
}

namespace {

// The one background thread of the partial JIT (paper section 3.2), shared by every grammar
// of the process so that compiling many grammars never piles up threads competing with the
// serving threads. Jobs are taken newest grammar first (the one a matcher is most likely
// serving right now); within a job nodes are built in the job's order, and a newer job
// pre-empts the current one between two nodes. A job holds its cache weakly: a grammar
// dropped before its turn costs nothing. Matchers never wait for the worker: a node they
// need that is not built yet they build themselves (GrammarMaskCache::Get), and the worker
// then finds it built.
class PrecomputeWorker {
 public:
  static PrecomputeWorker& Instance() {
    // Leaked on purpose: the detached thread may still run while static objects are
    // destroyed at exit.
    static PrecomputeWorker* worker = [] {
      auto* created = new PrecomputeWorker();
      pthread_atfork(&BeforeFork, &AfterForkInParent, &AfterForkInChild);
      return created;
    }();
    return *worker;
  }

  void Submit(std::weak_ptr<GrammarMaskCache> cache, std::vector<NodeId> nodes) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      jobs_.push_back({std::move(cache), std::move(nodes), 0});
      StartLocked();
    }
    wake_.notify_all();
  }
  // A task that makes later classifications cheaper (a tokenizer table); tasks run before
  // node jobs, oldest first.
  void SubmitTask(std::function<void()> task) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      tasks_.push_back(std::move(task));
      StartLocked();
    }
    wake_.notify_all();
  }
  // Blocks until no task or job is queued or running (tests: a deterministic state).
  void WaitIdle() {
    std::unique_lock<std::mutex> lock(mutex_);
    if (!tasks_.empty() || !jobs_.empty()) StartLocked();  // a child of fork() restarts here too
    idle_.wait(lock, [this]() { return tasks_.empty() && jobs_.empty() && !busy_; });
  }

 private:
  struct Job {
    std::weak_ptr<GrammarMaskCache> cache;
    std::vector<NodeId> nodes;
    size_t next;
  };

  // fork() copies only the forking thread: the worker thread does not exist in the child.
  // The parent pauses the worker between two items for the fork, so the child inherits no
  // lock held by it (a grammar's cache, a pool) and a queue in a consistent state; the child
  // keeps the queue and starts its own thread on the next submission.
  static void BeforeFork() {
    PrecomputeWorker& self = Instance();
    std::unique_lock<std::mutex> lock(self.mutex_);
    self.fork_pending_ = true;
    self.paused_.wait(lock, [&self]() { return !self.busy_; });
    lock.release();  // held across fork(); the handlers below unlock it
  }
  static void AfterForkInParent() {
    PrecomputeWorker& self = Instance();
    self.fork_pending_ = false;
    self.mutex_.unlock();
    self.wake_.notify_all();
  }
  static void AfterForkInChild() {
    PrecomputeWorker& self = Instance();
    // The parent's worker was waiting on wake_ (and other threads may have waited on idle_):
    // those waiters do not exist here, but a glibc condition variable still counts them, and
    // its next notify_all would block for ever waiting for them to leave. Nothing in the child
    // waits on these yet, so each is constructed afresh (not destroyed: that is undefined
    // with waiters recorded, and they own no memory).
    new (&self.wake_) std::condition_variable();
    new (&self.idle_) std::condition_variable();
    new (&self.paused_) std::condition_variable();
    self.fork_pending_ = false;
    self.started_ = false;
    self.busy_ = false;
    self.mutex_.unlock();
  }

  void StartLocked() {
    if (started_) return;
    started_ = true;
    std::thread([this]() { Run(); }).detach();
  }

  void Run() {
#ifdef __linux__
    // Lowest priority for this thread alone (Linux nice is per thread): the precompute is
    // optional work and must not slow the compiles and fills that run in the foreground.
    setpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid)), 19);
#endif
    for (;;) {
      std::shared_ptr<GrammarMaskCache> cache;
      NodeId node = -1;
      std::function<void()> task;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        busy_ = false;
        if (tasks_.empty() && jobs_.empty()) idle_.notify_all();
        if (fork_pending_) paused_.notify_all();
        wake_.wait(lock, [this]() { return !fork_pending_ && (!tasks_.empty() || !jobs_.empty()); });
        busy_ = true;
        if (!tasks_.empty()) {
          task = std::move(tasks_.front());
          tasks_.pop_front();
        } else {
          Job& job = jobs_.back();
          cache = job.cache.lock();
          if (cache && job.next < job.nodes.size()) node = job.nodes[job.next++];
          if (!cache || job.next >= job.nodes.size()) jobs_.pop_back();
        }
      }
      // Background work is optional: a failure (out of memory) only loses the shortcut.
      try {
        if (task) task();
        if (node >= 0) cache->Get(node);
      } catch (const std::exception&) {
      }
    }
  }

  std::mutex mutex_;
  std::condition_variable wake_;
  std::condition_variable idle_;
  std::condition_variable paused_;  // the worker is between items while a fork is pending
  std::vector<Job> jobs_;  // the newest at the back
  std::deque<std::function<void()>> tasks_;
  bool started_ = false;
  bool busy_ = false;  // the thread is running a task or a node
  bool fork_pending_ = false;  // a thread is in fork(): the worker takes no new item
};

void RequestClassPrefixTable(const TokenizerInfo& tokenizer, const CharacterClass& cls) {
  std::weak_ptr<const TokenizerInfo> weak = tokenizer.weak_from_this();
  PrecomputeWorker::Instance().SubmitTask([weak, cls]() {
    if (std::shared_ptr<const TokenizerInfo> alive = weak.lock()) alive->BuildClassPrefixTable(cls);
  });
}

// Scannable nodes (with byte edges, owned by a rule) in the order a document is likely to
// reach them: a 0-1 breadth-first search from the root rule's start where a byte edge costs
// one byte and a call costs nothing (the callee's start is reached at once) while the node
// after a call is one byte further (its callee consumes at least one byte, usually). Ties
// keep discovery order, which follows edge order, so the first properties of an object come
// before the later ones. The nodes a matcher needs in its first tokens (object start, first
// key, string bodies, numbers) come first.
std::vector<NodeId> DocumentOrder(const GrammarFsm& fsm) {
  std::vector<int32_t> distance(fsm.num_nodes(), INT32_MAX);
  std::deque<NodeId> queue;
  std::vector<NodeId> order;
  if (fsm.root_rule < 0) return order;
  const NodeId start = fsm.rule_start[fsm.root_rule];
  distance[start] = 0;
  queue.push_back(start);
  std::vector<uint8_t> emitted(fsm.num_nodes(), 0);
  auto relax = [&](NodeId to, int32_t d, bool front) {
    if (d >= distance[to]) return;
    distance[to] = d;
    if (front) {
      queue.push_front(to);
    } else {
      queue.push_back(to);
    }
  };
  while (!queue.empty()) {
    const NodeId n = queue.front();
    queue.pop_front();
    if (emitted[n]) continue;
    emitted[n] = 1;
    const int32_t d = distance[n];
    if (fsm.node_rule[n] >= 0 && fsm.byte_edges_begin(n) != fsm.byte_edges_end(n)) order.push_back(n);
    for (const RuleEdge* e = fsm.rule_edges_begin(n); e != fsm.rule_edges_end(n); ++e) {
      relax(fsm.rule_start[e->rule], d, true);
    }
    for (const ByteEdge* e = fsm.byte_edges_begin(n); e != fsm.byte_edges_end(n); ++e) relax(e->target, d + 1, false);
    for (const RuleEdge* e = fsm.rule_edges_begin(n); e != fsm.rule_edges_end(n); ++e) relax(e->target, d + 1, false);
  }
  return order;
}

}  // namespace

void WaitForBackgroundWork() { PrecomputeWorker::Instance().WaitIdle(); }

void GrammarMaskCache::StartPrecompute(const std::shared_ptr<GrammarMaskCache>& cache) {
  const MaskCacheOptions& options = cache->options_;
  if (!options.enabled || options.precompute == 0) return;
  // Scannable nodes by estimated classification cost, highest first: how many tokens start
  // with a byte the node accepts (the trie walk skips the others at the root).
  auto nodes_by_cost = [](const GrammarMaskCache& c) {
    const GrammarFsm& fsm = *c.fsm_;
    // tokens_below[b]: tokens whose first byte is below b (a prefix sum, so a byte range
    // costs O(1)).
    std::vector<int64_t> tokens_below(257, 0);
    const std::vector<TokenTrieNode>& trie = c.tokenizer_->trie();
    const std::vector<TokenTrieTokens>& trie_tokens = c.tokenizer_->trie_tokens();
    for (size_t i = 0; i < trie.size(); i = trie[i].subtree_end) {  // the root's children
      tokens_below[trie[i].byte + 1] = trie_tokens[i].token_end - trie_tokens[i].token_begin;
    }
    for (int b = 0; b < 256; ++b) tokens_below[b + 1] += tokens_below[b];
    std::vector<std::pair<int64_t, NodeId>> costs;
    for (NodeId n = 0; n < fsm.num_nodes(); ++n) {
      if (fsm.node_rule[n] < 0) continue;  // lookahead DFA nodes are never items
      int64_t cost = 0;
      for (const ByteEdge* e = fsm.byte_edges_begin(n); e != fsm.byte_edges_end(n); ++e) {
        cost += tokens_below[e->hi + 1] - tokens_below[e->lo];
      }
      if (cost > 0) costs.emplace_back(cost, n);
    }
    std::stable_sort(costs.begin(), costs.end(), [](const auto& x, const auto& y) { return x.first > y.first; });
    return costs;
  };
  if (options.precompute < 0) {
    for (const auto& [cost, node] : nodes_by_cost(*cache)) cache->Get(node);
    return;
  }
  // The schedule: the first `precompute` nodes in document order (what a matcher needs
  // first), then the few most expensive nodes not among them (the slowest fills). Computing
  // it walks every node (a few percent of a large grammar's compile), so the background
  // thread does that too: no matcher waits for the schedule.
  std::weak_ptr<GrammarMaskCache> weak = cache;
  PrecomputeWorker::Instance().SubmitTask([weak, nodes_by_cost]() {
    std::shared_ptr<GrammarMaskCache> alive = weak.lock();
    if (!alive) return;
    if (alive->pool_ && alive->options_.cross_grammar) alive->ComputeHashes();
    const GrammarFsm& fsm = *alive->fsm_;
    constexpr size_t kMostExpensive = 8;
    std::vector<NodeId> schedule = DocumentOrder(fsm);
    if (schedule.size() > static_cast<size_t>(alive->options_.precompute)) {
      schedule.resize(alive->options_.precompute);
    }
    std::vector<uint8_t> scheduled(fsm.num_nodes(), 0);
    for (NodeId n : schedule) scheduled[n] = 1;
    const std::vector<std::pair<int64_t, NodeId>> costs = nodes_by_cost(*alive);
    for (size_t k = 0; k < costs.size() && k < kMostExpensive; ++k) {
      if (!scheduled[costs[k].second]) schedule.push_back(costs[k].second);
    }
    if (!schedule.empty()) PrecomputeWorker::Instance().Submit(alive, std::move(schedule));
  });
}

size_t GrammarMaskCache::MemoryBytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  // Slots and the per-node tables built with the cache (the FSM hashes, built on first pool
  // lookup without this lock, are left out).
  size_t bytes = sizeof(*this) + sizeof(void*) * fsm_->num_nodes() + leave_.MemoryBytes() +
                 leavable_.capacity();
  for (const auto& e : owned_) bytes += e->MemoryBytes();
  return bytes;
}

}  // namespace xg2
