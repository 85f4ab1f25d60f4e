// Interning of int32 sequences: equal sequences get one id, ids numbered 0, 1, ... in the
// order the sequences are first seen.
//
// Layout: the sequences live end to end in one pool (id k is words_[spans_[k]]) and are found
// through an open-addressing table of ids, at most half full. A lookup that finds its
// sequence allocates nothing; a new one appends to the pool.
#ifndef XG2_SUPPORT_SEQUENCE_INTERNER_H_
#define XG2_SUPPORT_SEQUENCE_INTERNER_H_

#include <cstddef>
#include <cstdint>
#include <vector>

namespace xg2 {

class SequenceInterner {
 public:
  // The id of data[0, size), new when it was not interned before (then id == size() - 1).
  int32_t Intern(const int32_t* data, size_t size);
  int32_t Intern(const std::vector<int32_t>& key) { return Intern(key.data(), key.size()); }

  // Sequences interned so far.
  size_t size() const { return spans_.size(); }
  // Sequence `id`; the pointers stay valid until the next Intern of a new sequence.
  const int32_t* begin(int32_t id) const { return words_.data() + spans_[id].offset; }
  const int32_t* end(int32_t id) const { return begin(id) + spans_[id].size; }

 private:
  struct Span {
    size_t offset;
    size_t size;
  };
  static uint64_t Hash(const int32_t* data, size_t size);
  void Grow();

  std::vector<int32_t> words_;
  std::vector<Span> spans_;       // per id: its sequence in words_
  std::vector<uint64_t> hashes_;  // per id
  std::vector<int32_t> slots_;    // ids, -1 for empty; a power of two, at most half full
};

}  // namespace xg2

#endif  // XG2_SUPPORT_SEQUENCE_INTERNER_H_
