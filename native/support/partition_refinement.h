// Hopcroft's partition refinement over a deterministic automaton given by its incoming
// edges, shared by the byte-level rule DFAs (grammar/fsm_builder.cc) and the JSON Schema
// frontend's code-point automata (frontends/json_schema/regular_language.cc); each caller
// numbers its own alphabet.
#ifndef XG2_SUPPORT_PARTITION_REFINEMENT_H_
#define XG2_SUPPORT_PARTITION_REFINEMENT_H_

#include <cstdint>
#include <utility>
#include <vector>

namespace xg2 {

// Symbols lo..hi (consecutive symbol numbers) lead from state `source` into the state whose
// incoming runs hold this one.
struct SymbolRun {
  int32_t lo, hi, source;
};

// The coarsest stable refinement of an initial partition: states that end in one block
// accept the same language. A missing edge counts as no edge; no sink state is needed because
// every initial class starts as a splitter (Valmari and Lehtinen, "Efficient minimization of
// DFAs with partial transition functions", 2008).
//
// A splitter is applied to all symbols at once. The signature of a state is the set of
// symbols on which it steps into the splitter, kept as maximal runs of consecutive symbols
// (so an edge over many symbols is one run, and equal sets have equal run lists); every
// touched block splits into one part per distinct signature, plus one for its untouched
// states. That is the partition that splitting by each symbol in turn would reach. The
// largest part keeps the block's id and the others are queued: if the block was queued,
// its id still is, and if it was not, it served as a splitter already, and with all its
// parts but one queued the last one's splits follow (Hopcroft's "all but the largest").
// O(m log n) splits. Working memory is kept across calls.
class PartitionRefiner {
 public:
  // `cls`: each state's initial class in [0, num_initial), or -1 for a state left out (its
  // incoming runs are never read, and no run into a kept state may come from it: a state
  // that cannot reach acceptance, say, leads only to such states). The incoming runs of
  // state t are in_runs[in_begin[t], in_begin[t + 1]), the runs of one source into one target
  // disjoint. On return `cls` holds each kept state's block (equal blocks: equivalent states;
  // numbers below the count of blocks made, not dense).
  void Refine(int32_t num_initial, const std::vector<int32_t>& in_begin, const std::vector<SymbolRun>& in_runs,
              std::vector<int32_t>* cls);

 private:
  // The initial blocks from `cls`: the states of block b are elems_[first_[b], end_[b]).
  void InitialPartition(int32_t num_initial, const std::vector<int32_t>& cls);
  // The runs into `splitter` of each source (sources_), threaded through hits_ from hit_head_.
  void CollectHits(int32_t splitter, const std::vector<int32_t>& in_begin, const std::vector<SymbolRun>& in_runs);
  // Each source's signature (its maximal runs into the splitter) into words_, and the source
  // moved into the touched front of its block; the blocks touched go to touched_.
  void SignSources();
  // Splits touched block b into one part per signature plus its untouched states, queueing
  // all parts but the largest.
  void SplitBlock(int32_t b);
  bool SignatureLess(int32_t a, int32_t b) const;
  bool SameSignature(int32_t a, int32_t b) const;

  // One run into the current splitter; `next` threads the runs of one source (-1 ends).
  struct Hit {
    int32_t lo, hi, next;
  };
  std::vector<int32_t> elems_;
  std::vector<int32_t> loc_;
  std::vector<int32_t> block_of_;
  std::vector<int32_t> first_;
  std::vector<int32_t> end_;
  std::vector<int32_t> mid_;
  std::vector<int32_t> size_;
  std::vector<int32_t> fill_;
  std::vector<int32_t> worklist_;
  std::vector<Hit> hits_;
  std::vector<int32_t> hit_head_;
  std::vector<int32_t> sources_;
  std::vector<int32_t> touched_;
  std::vector<int64_t> words_;
  std::vector<uint32_t> sig_begin_;
  std::vector<uint32_t> sig_end_;
  std::vector<uint64_t> sig_hash_;
  std::vector<std::pair<int32_t, int32_t>> runs_;
  std::vector<int32_t> part_ends_;  // SplitBlock's parts
};

}  // namespace xg2

#endif  // XG2_SUPPORT_PARTITION_REFINEMENT_H_
