// DenseStepper's rows, major steps, character ends and repetition chains.
#include "matcher/mask_cache/dense_stepper.h"

#include <algorithm>
#include <climits>

namespace xg2 {

void DenseStepper::ComputeMajor(int32_t r) {
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

ByteMask DenseStepper::LevelMask(NodeId n, bool by_chars) {
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

NodeId DenseStepper::CharEnd(NodeId n, int8_t state) {
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

bool DenseStepper::ChainSubset(ClassifyScratch::ChainLevel& level, bool by_chars, NodeId n, const ByteMask& bytes,
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

bool DenseStepper::ChainSubsetByWalk(bool by_chars, NodeId n, const ByteMask& bytes, int32_t steps) {
  for (int32_t k = 0; k < steps; ++k) {
    if (!bytes.SubsetOf(LevelMask(n, by_chars))) return false;
    const NodeId next = MajorTarget(s_.row_of[n]);
    if (next == n || next < 0) return true;
    n = next;
  }
  return true;
}

void DenseStepper::ComputeChain(ClassifyScratch::ChainLevel& level, bool by_chars, NodeId start, int32_t need) {
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

}  // namespace xg2
