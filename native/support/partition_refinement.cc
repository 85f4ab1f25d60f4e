#include "support/partition_refinement.h"

#include <algorithm>

namespace xg2 {

void PartitionRefiner::Refine(int32_t num_initial, const std::vector<int32_t>& in_begin,
                              const std::vector<SymbolRun>& in_runs, std::vector<int32_t>* cls_out) {
  std::vector<int32_t>& cls = *cls_out;
  const int32_t n = static_cast<int32_t>(cls.size());
  // The refinable partition: the states of block b are elems[first[b], end[b]); while a
  // splitter is applied, the touched ones are elems[first[b], mid[b]).
  std::vector<int32_t>& elems = elems_;
  std::vector<int32_t>& loc = loc_;
  std::vector<int32_t>& block_of = block_of_;
  std::vector<int32_t>& first = first_;
  std::vector<int32_t>& end = end_;
  std::vector<int32_t>& mid = mid_;
  std::vector<uint8_t>& in_worklist = in_worklist_;
  loc.assign(n, -1);
  block_of.assign(n, -1);
  first.clear();
  end.clear();
  mid.clear();
  {
    std::vector<int32_t>& size = size_;
    size.assign(num_initial, 0);
    for (int32_t s = 0; s < n; ++s) {
      if (cls[s] >= 0) ++size[cls[s]];
    }
    int32_t at = 0;
    for (int32_t b = 0; b < num_initial; ++b) {
      first.push_back(at);
      mid.push_back(at);
      at += size[b];
      end.push_back(at);
    }
    elems.resize(at);
    std::vector<int32_t>& fill = fill_;
    fill.assign(first.begin(), first.end());
    for (int32_t s = 0; s < n; ++s) {
      if (cls[s] < 0) continue;
      loc[s] = fill[cls[s]]++;
      elems[loc[s]] = s;
      block_of[s] = cls[s];
    }
  }
  std::vector<int32_t>& worklist = worklist_;
  worklist.clear();
  for (int32_t b = 0; b < num_initial; ++b) {
    if (first[b] < end[b]) worklist.push_back(b);
  }
  in_worklist.assign(num_initial, 1);

  // Per splitter: the runs into it of each source, as a list threaded through `hits`
  // (hit_head[s] is -1 outside a splitter), then each source's signature in `words`.
  std::vector<Hit>& hits = hits_;
  std::vector<int32_t>& hit_head = hit_head_;
  hit_head.assign(n, -1);
  std::vector<int32_t>& sources = sources_;
  std::vector<int32_t>& touched = touched_;
  std::vector<int64_t>& words = words_;
  std::vector<uint32_t>& sig_begin = sig_begin_;
  std::vector<uint32_t>& sig_end = sig_end_;
  std::vector<uint64_t>& sig_hash = sig_hash_;
  std::vector<std::pair<int32_t, int32_t>>& runs = runs_;
  sig_begin.resize(n);
  sig_end.resize(n);
  sig_hash.resize(n);
  auto signature_less = [&](int32_t a, int32_t b) {
    if (sig_hash[a] != sig_hash[b]) return sig_hash[a] < sig_hash[b];
    return std::lexicographical_compare(words.begin() + sig_begin[a], words.begin() + sig_end[a],
                                        words.begin() + sig_begin[b], words.begin() + sig_end[b]);
  };
  auto same_signature = [&](int32_t a, int32_t b) {
    return sig_hash[a] == sig_hash[b] &&
           std::equal(words.begin() + sig_begin[a], words.begin() + sig_end[a], words.begin() + sig_begin[b],
                      words.begin() + sig_end[b]);
  };
  while (!worklist.empty()) {
    const int32_t splitter = worklist.back();
    worklist.pop_back();
    in_worklist[splitter] = 0;
    hits.clear();
    sources.clear();
    for (int32_t k = first[splitter]; k < end[splitter]; ++k) {
      const int32_t t = elems[k];
      for (int32_t i = in_begin[t]; i < in_begin[t + 1]; ++i) {
        const SymbolRun& run = in_runs[i];
        if (hit_head[run.source] < 0) sources.push_back(run.source);
        hits.push_back({run.lo, run.hi, hit_head[run.source]});
        hit_head[run.source] = static_cast<int32_t>(hits.size()) - 1;
      }
    }
    words.clear();
    touched.clear();
    for (int32_t s : sources) {
      runs.clear();
      for (int32_t h = hit_head[s]; h >= 0; h = hits[h].next) runs.push_back({hits[h].lo, hits[h].hi});
      hit_head[s] = -1;
      if (runs.size() > 1) std::sort(runs.begin(), runs.end());
      // Maximal runs: a DFA's runs from one state are disjoint, so only neighbours join.
      sig_begin[s] = static_cast<uint32_t>(words.size());
      uint64_t h = 0x9E3779B97F4A7C15ull;
      for (size_t r = 0; r < runs.size();) {
        const int32_t lo = runs[r].first;
        int32_t hi = runs[r].second;
        for (++r; r < runs.size() && runs[r].first == hi + 1; ++r) hi = runs[r].second;
        const int64_t word = (static_cast<int64_t>(lo) << 32) | static_cast<uint32_t>(hi);
        words.push_back(word);
        h = (h ^ static_cast<uint64_t>(word)) * 0xFF51AFD7ED558CCDull;
        h ^= h >> 29;
      }
      sig_end[s] = static_cast<uint32_t>(words.size());
      sig_hash[s] = h;
      // Move s into the touched front of its block.
      const int32_t b = block_of[s];
      if (mid[b] == first[b]) touched.push_back(b);
      const int32_t other = elems[mid[b]];
      std::swap(elems[loc[s]], elems[mid[b]]);
      loc[other] = loc[s];
      loc[s] = mid[b]++;
    }
    for (int32_t b : touched) {
      const int32_t lo = first[b], hi = mid[b];
      mid[b] = first[b];
      // Mostly every touched state of a block has the same signature: then no sorting.
      bool one_signature = true;
      for (int32_t k = lo + 1; k < hi && one_signature; ++k) one_signature = same_signature(elems[lo], elems[k]);
      if (!one_signature) {
        std::sort(elems.begin() + lo, elems.begin() + hi, signature_less);
        for (int32_t k = lo; k < hi; ++k) loc[elems[k]] = k;
      }
      if (hi == end[b] && same_signature(elems[lo], elems[hi - 1])) continue;
      // The parts: runs of equal signatures in [lo, hi), then the untouched [hi, end).
      int32_t largest_first = hi, largest_end = end[b];
      for (int32_t k = lo; k < hi;) {
        int32_t j = k + 1;
        while (j < hi && same_signature(elems[k], elems[j])) ++j;
        if (j - k > largest_end - largest_first) {
          largest_first = k;
          largest_end = j;
        }
        k = j;
      }
      auto new_block = [&](int32_t from, int32_t to) {
        if (from == to || from == largest_first) return;
        const int32_t nb = static_cast<int32_t>(first.size());
        first.push_back(from);
        end.push_back(to);
        mid.push_back(from);
        for (int32_t k = from; k < to; ++k) block_of[elems[k]] = nb;
        in_worklist.push_back(1);
        worklist.push_back(nb);
      };
      for (int32_t k = lo; k < hi;) {
        int32_t j = k + 1;
        while (j < hi && same_signature(elems[k], elems[j])) ++j;
        new_block(k, j);
        k = j;
      }
      new_block(hi, end[b]);
      first[b] = mid[b] = largest_first;
      end[b] = largest_end;
    }
  }
  for (int32_t s = 0; s < n; ++s) cls[s] = cls[s] < 0 ? -1 : block_of[s];
}

}  // namespace xg2
