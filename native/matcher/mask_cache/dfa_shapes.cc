// DenseStepper's shape analyses: class roots, UTF-8 chains and regions, long chains.
#include "matcher/mask_cache/dense_stepper.h"

#include <algorithm>
#include <climits>

namespace xg2 {

bool DenseStepper::InnerCharacterNodesStay(NodeId x, const LeaveSets& leave, const std::vector<uint8_t>& leavable) {
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

bool DenseStepper::FindClassRoot(NodeId n, int32_t r, const LeaveSets& leave, const std::vector<uint8_t>& leavable,
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

bool DenseStepper::Utf8ChainRoot(NodeId n, const LeaveSets& leave, const std::vector<uint8_t>& leavable, ByteMask* ascii,
                                 int32_t* copies) {
  // Any count: VocabularyIndex::Utf8ChainTokens has a set for each count a token can tell
  // apart from the unbounded one; the node cap below bounds the work.
  constexpr int32_t kMaxCopies = 1024;
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
    // By edge, not by byte (a long chain has about eight nodes per copy): an edge is followed
    // when one of its bytes is a non-ASCII byte or in `consumed`.
    for (const ByteEdge* e = fsm_.byte_edges_begin(x); e != fsm_.byte_edges_end(x); ++e) {
      bool followed = e->hi >= 0x80;
      for (int b = e->lo; b <= e->hi && !followed; ++b) followed = AsciiIn(consumed, static_cast<uint8_t>(b));
      if (followed) visit(e->target);
    }
  }
  if (back_to_start) return false;
  *ascii = consumed;
  ascii->words[2] = ascii->words[3] = 0;
  *copies = k;
  return true;
}

bool DenseStepper::SingleBoundaryRegion(NodeId root, const ByteMask& ascii, const LeaveSets& leave,
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

bool DenseStepper::LongChainRoot(NodeId n, const LeaveSets& leave, const std::vector<uint8_t>& leavable, int32_t depth,
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

bool DenseStepper::AlikeWithin(NodeId a, NodeId b, int32_t depth, const LeaveSets& leave, const std::vector<uint8_t>& leavable) {
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

void DenseStepper::AddUtf8Region(NodeId root) {
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

bool DenseStepper::ExploreUtf8Region(NodeId root, const ByteMask& ascii, int* culprit) {
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

void DenseStepper::MarkTriedAfterCap() {
  for (NodeId n : s_.region_nodes) {
    Row(n);
    s_.region_tried[s_.row_of[n]] = 1;
  }
}

}  // namespace xg2
