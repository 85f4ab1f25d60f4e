// The validated layouts of the torch bitmask tensors filled last. A server fills the same
// bitmask tensor at every step; reading its dtype, device, shape and strides through torch's
// Python attributes and checking them costs more than a fill whose row is cached, so a fill
// into a tensor seen before re-reads only what can change under the same object.
//
// The layout is a function of the data pointer, dtype and shape of a contiguous tensor (its
// strides follow from the shape), so those four are re-read and compared; a tensor that is
// not contiguous is validated at every fill. In-place ops (resize_, set_, t_, as_strided_)
// and `tensor.data = other` (which keeps the object and its `_version`) change one of them
// or leave the layout as it was. A different object at a recycled address is told apart by
// a weak reference. Device: `.data =` a CUDA tensor changes the data pointer (device memory
// is never a live CPU tensor's host address).
// The four are read through torch.Tensor's own descriptors, looked up once, for tensors of
// exactly that type (a subclass goes through attribute lookup, which may find its overrides).
// Only called with the GIL held, which serialises every use.
#ifndef XG2_BINDINGS_TORCH_LAYOUT_CACHE_H_
#define XG2_BINDINGS_TORCH_LAYOUT_CACHE_H_

#include <Python.h>

#include <cstdint>

namespace xg2 {

// A validated bitmask buffer: base address, rows, row stride and row width in 32-bit words.
struct BitmaskLayout {
  uintptr_t address = 0;
  int64_t rows = 0;
  int64_t row_stride_words = 0;
  int64_t num_words = 0;
};

// What a tensor says about itself now, read in one pass (new references, or null with a
// Python error set).
struct TorchFingerprint {
  PyObject* data_ptr = nullptr;    // tensor.data_ptr()
  PyObject* shape = nullptr;       // tensor.shape
  PyObject* dtype = nullptr;       // tensor.dtype
  PyObject* contiguous = nullptr;  // tensor.is_contiguous()
  ~TorchFingerprint();
  // Reads the four; false with a Python error set if one fails. `tensor_type` is torch.Tensor:
  // a tensor of exactly that type is read through the four descriptors of its type, looked up
  // once (no attribute lookup per fill); any other (a subclass may override them) through
  // ordinary attribute lookup.
  bool Read(PyObject* tensor, PyObject* tensor_type);
};

class TorchLayoutCache {
 public:
  // The layout stored for `tensor` if it still has `now`'s fingerprint; else null.
  const BitmaskLayout* Find(PyObject* tensor, const TorchFingerprint& now) const;
  // Remembers `layout` (validated by the caller) for `tensor` with fingerprint `now`.
  // A tensor that is not contiguous or takes no weak reference is not remembered.
  void Store(PyObject* tensor, const TorchFingerprint& now, const BitmaskLayout& layout);

 private:
  struct Entry {
    PyObject* tensor_ref = nullptr;  // weak reference, owned
    PyObject* data_ptr = nullptr;    // owned
    PyObject* shape = nullptr;       // owned
    PyObject* dtype = nullptr;       // owned
    BitmaskLayout layout;
  };
  static constexpr int kEntries = 4;
  Entry entries_[kEntries];
  int next_ = 0;  // the entry Store replaces next (round robin)
};

}  // namespace xg2

#endif  // XG2_BINDINGS_TORCH_LAYOUT_CACHE_H_
