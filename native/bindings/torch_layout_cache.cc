#include "bindings/torch_layout_cache.h"

namespace xg2 {

namespace {

// Interned once (immortal for the process).
struct FingerprintNames {
  PyObject* data_ptr = PyUnicode_InternFromString("data_ptr");
  PyObject* shape = PyUnicode_InternFromString("shape");
  PyObject* dtype = PyUnicode_InternFromString("dtype");
  PyObject* is_contiguous = PyUnicode_InternFromString("is_contiguous");
};

const FingerprintNames& Names() {
  static const FingerprintNames* names = new FingerprintNames();
  return *names;
}

// torch.Tensor's own data_ptr, shape, dtype and is_contiguous descriptors (inherited from
// torch._C.TensorBase), looked up once on the type and kept (immortal for the process); null
// members where a lookup failed or a descriptor is not of the kind the fast read calls.
struct TensorDescriptors {
  PyObject* data_ptr = nullptr;       // a method descriptor, called by vectorcall
  PyObject* shape = nullptr;          // a getset descriptor, read by tp_descr_get
  PyObject* dtype = nullptr;          // a getset descriptor
  PyObject* is_contiguous = nullptr;  // a method descriptor
  bool complete() const { return data_ptr && shape && dtype && is_contiguous; }
};

PyObject* LookUp(PyObject* type, PyObject* name, bool getter) {
  PyObject* descriptor = PyObject_GetAttr(type, name);  // class access: the descriptor itself
  if (!descriptor) {
    PyErr_Clear();
    return nullptr;
  }
  const bool usable = getter ? Py_TYPE(descriptor)->tp_descr_get != nullptr
                             : PyVectorcall_Function(descriptor) != nullptr;
  if (!usable) {
    Py_DECREF(descriptor);
    return nullptr;
  }
  return descriptor;
}

// The descriptors of `tensor_type` (the first type this is called with: torch.Tensor).
const TensorDescriptors& Descriptors(PyObject* tensor_type) {
  static const TensorDescriptors* descriptors = [tensor_type] {
    const FingerprintNames& names = Names();
    auto* found = new TensorDescriptors();
    found->data_ptr = LookUp(tensor_type, names.data_ptr, false);
    found->shape = LookUp(tensor_type, names.shape, true);
    found->dtype = LookUp(tensor_type, names.dtype, true);
    found->is_contiguous = LookUp(tensor_type, names.is_contiguous, false);
    return found;
  }();
  return *descriptors;
}

PyObject* CallDescriptor(PyObject* method, PyObject* self) { return PyObject_Vectorcall(method, &self, 1, nullptr); }

PyObject* GetThroughDescriptor(PyObject* getter, PyObject* self) {
  return Py_TYPE(getter)->tp_descr_get(getter, self, reinterpret_cast<PyObject*>(Py_TYPE(self)));
}

bool Equal(PyObject* a, PyObject* b) {
  if (a == b) return true;
  const int equal = PyObject_RichCompareBool(a, b, Py_EQ);
  if (equal < 0) {
    PyErr_Clear();  // not comparable: not the same fingerprint
    return false;
  }
  return equal == 1;
}

// The object a weak reference points to (borrowed), or null when it is gone.
PyObject* Referent(PyObject* ref) {
#if PY_VERSION_HEX >= 0x030D0000
  PyObject* object = nullptr;
  if (PyWeakref_GetRef(ref, &object) <= 0) {
    PyErr_Clear();
    return nullptr;
  }
  Py_DECREF(object);  // still alive: the caller holds the tensor being compared
  return object;
#else
  PyObject* object = PyWeakref_GetObject(ref);
  return object == Py_None ? nullptr : object;
#endif
}

}  // namespace

TorchFingerprint::~TorchFingerprint() {
  Py_XDECREF(data_ptr);
  Py_XDECREF(shape);
  Py_XDECREF(dtype);
  Py_XDECREF(contiguous);
}

bool TorchFingerprint::Read(PyObject* tensor, PyObject* tensor_type) {
  const TensorDescriptors& fast = Descriptors(tensor_type);
  if (reinterpret_cast<PyObject*>(Py_TYPE(tensor)) == tensor_type && fast.complete()) {
    data_ptr = CallDescriptor(fast.data_ptr, tensor);
    if (!data_ptr) return false;
    shape = GetThroughDescriptor(fast.shape, tensor);
    if (!shape) return false;
    dtype = GetThroughDescriptor(fast.dtype, tensor);
    if (!dtype) return false;
    contiguous = CallDescriptor(fast.is_contiguous, tensor);
    return contiguous != nullptr;
  }
  const FingerprintNames& names = Names();
  data_ptr = PyObject_CallMethodNoArgs(tensor, names.data_ptr);
  if (!data_ptr) return false;
  shape = PyObject_GetAttr(tensor, names.shape);
  if (!shape) return false;
  dtype = PyObject_GetAttr(tensor, names.dtype);
  if (!dtype) return false;
  contiguous = PyObject_CallMethodNoArgs(tensor, names.is_contiguous);
  return contiguous != nullptr;
}

const BitmaskLayout* TorchLayoutCache::Find(PyObject* tensor, const TorchFingerprint& now) const {
  for (const Entry& entry : entries_) {
    if (!entry.tensor_ref || Referent(entry.tensor_ref) != tensor) continue;
    if (now.contiguous == Py_True && entry.dtype == now.dtype && Equal(entry.data_ptr, now.data_ptr) &&
        Equal(entry.shape, now.shape)) {
      return &entry.layout;
    }
    return nullptr;  // one entry per tensor: it changed
  }
  return nullptr;
}

void TorchLayoutCache::Store(PyObject* tensor, const TorchFingerprint& now, const BitmaskLayout& layout) {
  if (now.contiguous != Py_True) return;
  Entry* slot = nullptr;
  for (Entry& entry : entries_) {
    if (entry.tensor_ref && Referent(entry.tensor_ref) == tensor) slot = &entry;
  }
  if (!slot) {
    PyObject* ref = PyWeakref_NewRef(tensor, nullptr);
    if (!ref) {
      PyErr_Clear();
      return;
    }
    slot = &entries_[next_];
    next_ = (next_ + 1) % kEntries;
    Py_XDECREF(slot->tensor_ref);
    slot->tensor_ref = ref;
  }
  auto replace = [](PyObject** field, PyObject* value) {
    Py_INCREF(value);
    PyObject* old = *field;
    *field = value;
    Py_XDECREF(old);
  };
  replace(&slot->data_ptr, now.data_ptr);
  replace(&slot->shape, now.shape);
  replace(&slot->dtype, now.dtype);
  slot->layout = layout;
}

}  // namespace xg2
