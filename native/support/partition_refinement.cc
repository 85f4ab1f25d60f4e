#include "support/partition_refinement.h"

#include <algorithm>

#include "support/dcheck.h"

namespace xg2 {

// The refinable partition: the states of block b are elems_[first_[b], end_[b]); while a
// splitter is applied, the touched ones are elems_[first_[b], mid_[b]). loc_[s] is s's index
// in elems_, block_of_[s] its block.
void PartitionRefiner::InitialPartition(int32_t num_initial, const std::vector<int32_t>& cls) {
  const int32_t n = static_cast<int32_t>(cls.size());
  loc_.assign(n, -1);
  block_of_.assign(n, -1);
  first_.clear();
  end_.clear();
  mid_.clear();
  size_.assign(num_initial, 0);
  for (int32_t s = 0; s < n; ++s) {
    if (cls[s] >= 0) ++size_[cls[s]];
  }
  int32_t at = 0;
  for (int32_t b = 0; b < num_initial; ++b) {
    first_.push_back(at);
    mid_.push_back(at);
    at += size_[b];
    end_.push_back(at);
  }
  elems_.resize(at);
  fill_.assign(first_.begin(), first_.end());
  for (int32_t s = 0; s < n; ++s) {
    if (cls[s] < 0) continue;
    loc_[s] = fill_[cls[s]]++;
    elems_[loc_[s]] = s;
    block_of_[s] = cls[s];
  }
  worklist_.clear();
  for (int32_t b = 0; b < num_initial; ++b) {
    if (first_[b] < end_[b]) worklist_.push_back(b);
  }
}

void PartitionRefiner::CollectHits(int32_t splitter, const std::vector<int32_t>& in_begin,
                                   const std::vector<SymbolRun>& in_runs) {
  hits_.clear();
  sources_.clear();
  for (int32_t k = first_[splitter]; k < end_[splitter]; ++k) {
    const int32_t t = elems_[k];
    for (int32_t i = in_begin[t]; i < in_begin[t + 1]; ++i) {
      const SymbolRun& run = in_runs[i];
      XG2_DCHECK(block_of_[run.source] >= 0, "a run into a kept state comes from a kept state");
      if (hit_head_[run.source] < 0) sources_.push_back(run.source);
      hits_.push_back({run.lo, run.hi, hit_head_[run.source]});
      hit_head_[run.source] = static_cast<int32_t>(hits_.size()) - 1;
    }
  }
}

void PartitionRefiner::SignSources() {
  touched_.clear();
  // A source's maximal runs are at most its hits, so the signatures fit in as many words as
  // there are hits: written in place, without a capacity check per word.
  if (words_.size() < hits_.size()) words_.resize(hits_.size());
  uint32_t num_words = 0;
  for (int32_t s : sources_) {
    const int32_t head = hit_head_[s];
    XG2_DCHECK(head >= 0, "a source of the splitter has at least one run into it");
    hit_head_[s] = -1;
    sig_begin_[s] = num_words;
    uint64_t h = 0x9E3779B97F4A7C15ull;
    auto add_word = [&](int32_t lo, int32_t hi) {
      const int64_t word = (static_cast<int64_t>(lo) << 32) | static_cast<uint32_t>(hi);
      XG2_DCHECK(num_words < words_.size(), "a signature has no more runs than hits");
      words_[num_words++] = word;
      h = (h ^ static_cast<uint64_t>(word)) * 0xFF51AFD7ED558CCDull;
      h ^= h >> 29;
    };
    if (hits_[head].next < 0) {  // one run (the usual case): it is the signature
      add_word(hits_[head].lo, hits_[head].hi);
    } else {
      runs_.clear();
      for (int32_t r = head; r >= 0; r = hits_[r].next) runs_.push_back({hits_[r].lo, hits_[r].hi});
      std::sort(runs_.begin(), runs_.end());
      // Maximal runs: a DFA's runs from one state are disjoint, so only neighbours join.
      for (size_t r = 0; r < runs_.size();) {
        const int32_t lo = runs_[r].first;
        int32_t hi = runs_[r].second;
        for (++r; r < runs_.size() && runs_[r].first == hi + 1; ++r) hi = runs_[r].second;
        add_word(lo, hi);
      }
    }
    sig_end_[s] = num_words;
    sig_hash_[s] = h;
    // Move s into the touched front of its block.
    const int32_t b = block_of_[s];
    if (mid_[b] == first_[b]) touched_.push_back(b);
    const int32_t other = elems_[mid_[b]];
    std::swap(elems_[loc_[s]], elems_[mid_[b]]);
    loc_[other] = loc_[s];
    loc_[s] = mid_[b]++;
  }
}

bool PartitionRefiner::SignatureLess(int32_t a, int32_t b) const {
  if (sig_hash_[a] != sig_hash_[b]) return sig_hash_[a] < sig_hash_[b];
  return std::lexicographical_compare(words_.begin() + sig_begin_[a], words_.begin() + sig_end_[a],
                                      words_.begin() + sig_begin_[b], words_.begin() + sig_end_[b]);
}

bool PartitionRefiner::SameSignature(int32_t a, int32_t b) const {
  return sig_hash_[a] == sig_hash_[b] &&
         std::equal(words_.begin() + sig_begin_[a], words_.begin() + sig_end_[a], words_.begin() + sig_begin_[b],
                    words_.begin() + sig_end_[b]);
}

void PartitionRefiner::SplitBlock(int32_t b) {
  const int32_t lo = first_[b], hi = mid_[b];
  mid_[b] = first_[b];
  // The parts, as the ends of the runs of equal signatures in [lo, hi) followed by the end of
  // the untouched [hi, end) if any. Mostly every touched state of a block has the same
  // signature: then no sorting.
  bool one_signature = true;
  for (int32_t k = lo + 1; k < hi && one_signature; ++k) one_signature = SameSignature(elems_[lo], elems_[k]);
  part_ends_.clear();
  if (one_signature) {
    if (hi == end_[b]) return;  // every state stepped alike: no split
  } else {
    std::sort(elems_.begin() + lo, elems_.begin() + hi,
              [this](int32_t x, int32_t y) { return SignatureLess(x, y); });
    for (int32_t k = lo; k < hi; ++k) loc_[elems_[k]] = k;
    for (int32_t k = lo + 1; k < hi; ++k) {
      if (!SameSignature(elems_[k - 1], elems_[k])) part_ends_.push_back(k);
    }
  }
  part_ends_.push_back(hi);
  if (hi < end_[b]) part_ends_.push_back(end_[b]);
  XG2_DCHECK(part_ends_.size() >= 2, "a split block has two parts or more");
  // The largest part keeps b's id (the first of the largest, in the order above).
  int32_t largest_first = lo, largest_end = part_ends_[0];
  for (size_t p = 1; p < part_ends_.size(); ++p) {
    if (part_ends_[p] - part_ends_[p - 1] > largest_end - largest_first) {
      largest_first = part_ends_[p - 1];
      largest_end = part_ends_[p];
    }
  }
  int32_t from = lo;
  for (const int32_t to : part_ends_) {
    if (from != largest_first) {
      const int32_t nb = static_cast<int32_t>(first_.size());
      first_.push_back(from);
      end_.push_back(to);
      mid_.push_back(from);
      for (int32_t k = from; k < to; ++k) block_of_[elems_[k]] = nb;
      worklist_.push_back(nb);
    }
    from = to;
  }
  first_[b] = mid_[b] = largest_first;
  end_[b] = largest_end;
}

void PartitionRefiner::Refine(int32_t num_initial, const std::vector<int32_t>& in_begin,
                              const std::vector<SymbolRun>& in_runs, std::vector<int32_t>* cls_out) {
  std::vector<int32_t>& cls = *cls_out;
  const int32_t n = static_cast<int32_t>(cls.size());
  InitialPartition(num_initial, cls);
  // hit_head_[s] is -1 outside a splitter.
  hit_head_.assign(n, -1);
  sig_begin_.resize(n);
  sig_end_.resize(n);
  sig_hash_.resize(n);
  while (!worklist_.empty()) {
    const int32_t splitter = worklist_.back();
    worklist_.pop_back();
    CollectHits(splitter, in_begin, in_runs);
    SignSources();
    for (int32_t b : touched_) SplitBlock(b);
  }
  for (int32_t s = 0; s < n; ++s) cls[s] = cls[s] < 0 ? -1 : block_of_[s];
}

}  // namespace xg2
