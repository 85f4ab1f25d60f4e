// Python surface of the compiled grammar and the matcher. Single-row fills take the bitmask
// object itself and validate it here (numpy through the buffer protocol, torch through its
// attributes): a fill is a few microseconds, and the same checks in Python cost more than
// the fill. The batch fill takes raw addresses that xg2_plugin/bitmask.py validated. Every
// long-running call releases the GIL.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <optional>

#include "bindings/registry.h"
#include "bindings/torch_layout_cache.h"
#include "frontends/ebnf/ebnf_parser.h"
#include "grammar/grammar_fsm.h"
#include "matcher/compiled_grammar.h"
#include "matcher/grammar_matcher.h"
#include "support/error.h"
#include "support/thread_pool.h"

namespace py = pybind11;

namespace xg2 {
namespace {

uint32_t* RowPointer(uintptr_t address, int64_t row_stride_words, int64_t row) {
  return reinterpret_cast<uint32_t*>(address) + row * row_stride_words;
}

std::string ShapeText(const std::vector<int64_t>& shape) {
  std::string text = "(";
  for (size_t i = 0; i < shape.size(); ++i) text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + (shape.size() == 1 ? ",)" : ")");
}

// Rows and strides (in items) of a 1-D or 2-D buffer; a 1-D buffer is one row.
BitmaskLayout LayoutFromShape(uintptr_t address, const std::vector<int64_t>& shape,
                              const std::vector<int64_t>& strides, int64_t item_stride_unit,
                              const char* stride_note) {
  if (shape.size() != 1 && shape.size() != 2) {
    throw InvalidArgumentError("bitmask must be 1-D or 2-D, got shape " + ShapeText(shape));
  }
  BitmaskLayout layout;
  layout.address = address;
  const bool two_d = shape.size() == 2;
  layout.rows = two_d ? shape[0] : 1;
  layout.num_words = two_d ? shape[1] : shape[0];
  const int64_t row_stride = two_d ? strides[0] : strides[0] * shape[0];
  const int64_t col_stride = two_d ? strides[1] : strides[0];
  const bool empty = layout.rows == 0 || layout.num_words == 0;
  if (!empty && (col_stride != item_stride_unit || row_stride % item_stride_unit != 0 || row_stride < 0)) {
    throw InvalidArgumentError(std::string("bitmask rows must be contiguous int32 words, got strides ") +
                               ShapeText(strides) + stride_note);
  }
  // Rows that overlap (a broadcast view such as expand() or as_strided with stride 0) would
  // let the fill of one row overwrite another.
  if (!empty && layout.rows > 1 && row_stride / item_stride_unit < layout.num_words) {
    throw InvalidArgumentError(std::string("bitmask rows overlap in memory (strides ") + ShapeText(strides) +
                               stride_note + "); pass a buffer whose rows are distinct");
  }
  layout.row_stride_words = layout.rows > 1 ? row_stride / item_stride_unit : layout.num_words;
  return layout;
}

// torch.Tensor and torch.int32 once torch is imported (a tensor cannot exist before).
// Borrowed forever: the torch module is never unloaded.
bool TorchTypes(PyObject** tensor_type, PyObject** int32_dtype) {
  static PyObject* cached_tensor = nullptr;
  static PyObject* cached_int32 = nullptr;
  if (!cached_tensor) {
    PyObject* torch = PyImport_GetModule(py::str("torch").ptr());  // new ref or null, no import
    if (!torch) {
      PyErr_Clear();
      return false;
    }
    py::object module = py::reinterpret_steal<py::object>(torch);
    if (!py::hasattr(module, "Tensor") || !py::hasattr(module, "int32")) return false;
    cached_int32 = py::object(module.attr("int32")).release().ptr();
    cached_tensor = py::object(module.attr("Tensor")).release().ptr();
  }
  *tensor_type = cached_tensor;
  *int32_dtype = cached_int32;
  return true;
}

// numpy.ndarray once numpy is imported (the Python layer imports it). Borrowed forever.
PyObject* NumpyArrayType() {
  static PyObject* cached = nullptr;
  if (!cached) {
    PyObject* numpy = PyImport_GetModule(py::str("numpy").ptr());
    if (!numpy) {
      PyErr_Clear();
      return nullptr;
    }
    py::object module = py::reinterpret_steal<py::object>(numpy);
    if (!py::hasattr(module, "ndarray")) return nullptr;
    cached = py::object(module.attr("ndarray")).release().ptr();
  }
  return cached;
}

// Attribute names looked up on every torch fill, interned once (immortal for the process).
struct TorchAttributeNames {
  PyObject* dtype = PyUnicode_InternFromString("dtype");
  PyObject* is_cpu = PyUnicode_InternFromString("is_cpu");
  PyObject* shape = PyUnicode_InternFromString("shape");
  PyObject* stride = PyUnicode_InternFromString("stride");
  PyObject* data_ptr = PyUnicode_InternFromString("data_ptr");
};

// The items of a tuple of ints (torch.Size is a tuple subclass; stride() returns a tuple).
std::vector<int64_t> TupleOfInts(const py::object& tuple, const char* what) {
  if (!PyTuple_Check(tuple.ptr())) {
    throw py::type_error(std::string("torch tensor ") + what + " is not a tuple");
  }
  const Py_ssize_t size = PyTuple_GET_SIZE(tuple.ptr());
  std::vector<int64_t> items(static_cast<size_t>(size));
  for (Py_ssize_t i = 0; i < size; ++i) {
    const long long item = PyLong_AsLongLong(PyTuple_GET_ITEM(tuple.ptr(), i));
    if (item == -1 && PyErr_Occurred()) throw py::error_already_set();
    items[static_cast<size_t>(i)] = item;
  }
  return items;
}

// The layout of a torch CPU int32 tensor, read through its attributes with the raw C API:
// a fill costs well under a microsecond when its row is cached, so pybind11's generic
// attribute and list conversions (about 0.7 us per call) would dominate it.
BitmaskLayout TorchLayout(py::handle bitmask, PyObject* int32_dtype) {
  static const TorchAttributeNames* names = new TorchAttributeNames();
  auto get = [&](PyObject* name) {
    PyObject* value = PyObject_GetAttr(bitmask.ptr(), name);
    if (!value) throw py::error_already_set();
    return py::reinterpret_steal<py::object>(value);
  };
  auto call = [&](PyObject* name) {
    PyObject* value = PyObject_CallMethodNoArgs(bitmask.ptr(), name);
    if (!value) throw py::error_already_set();
    return py::reinterpret_steal<py::object>(value);
  };
  py::object dtype = get(names->dtype);
  if (dtype.ptr() != int32_dtype) {
    throw InvalidArgumentError("bitmask must have dtype torch.int32, got " + py::str(dtype).cast<std::string>());
  }
  if (get(names->is_cpu).ptr() != Py_True) {
    throw InvalidArgumentError("bitmask must be on the CPU to be filled, got device " +
                               py::str(bitmask.attr("device")).cast<std::string>() +
                               "; fill a CPU tensor and copy it to the accelerator");
  }
  // A sparse (or otherwise non-strided) tensor has no buffer to fill; its layout is looked
  // up only once something fails, so that dense fills pay nothing for the check.
  auto refuse_if_not_strided = [&] {
    py::object layout = bitmask.attr("layout");
    if (!layout.equal(py::module_::import("torch").attr("strided"))) {
      throw InvalidArgumentError("bitmask must be a dense (strided) tensor, got layout " +
                                 py::str(layout).cast<std::string>());
    }
  };
  std::vector<int64_t> shape;
  std::vector<int64_t> strides;
  BitmaskLayout layout;
  unsigned long long address = 0;
  try {
    shape = TupleOfInts(get(names->shape), "shape");
    strides = TupleOfInts(call(names->stride), "stride()");
    layout = LayoutFromShape(0, shape, strides, 1, "");
    py::object data_ptr = call(names->data_ptr);
    address = PyLong_AsUnsignedLongLong(data_ptr.ptr());
    if (address == static_cast<unsigned long long>(-1) && PyErr_Occurred()) throw py::error_already_set();
  } catch (const std::exception&) {
    refuse_if_not_strided();
    throw;
  }
  layout.address = static_cast<uintptr_t>(address);
  return layout;
}

// A torch tensor's layout: the checks and messages are those of xg2_plugin/bitmask.py
// view_bitmask; a tensor that passed them and has not changed since (torch_layout_cache.h)
// skips them.
BitmaskLayout TorchBitmask(py::handle bitmask, PyObject* tensor_type, PyObject* int32_dtype) {
  static TorchLayoutCache* cache = new TorchLayoutCache();  // holds Python references: never destroyed
  TorchFingerprint now;
  if (!now.Read(bitmask.ptr(), tensor_type)) {
    PyErr_Clear();  // a sparse tensor has no data_ptr(): TorchLayout says so
    return TorchLayout(bitmask, int32_dtype);
  }
  if (const BitmaskLayout* known = cache->Find(bitmask.ptr(), now)) return *known;
  BitmaskLayout layout = TorchLayout(bitmask, int32_dtype);
  cache->Store(bitmask.ptr(), now, layout);
  return layout;
}

BitmaskLayout ViewBitmask(py::handle bitmask) {
  PyObject* object = bitmask.ptr();
  PyObject* ndarray = NumpyArrayType();
  PyObject* tensor_type = nullptr;
  PyObject* int32_dtype = nullptr;
  // Torch first unless the object is a plain ndarray: a tensor is the common case in serving.
  const bool plain_ndarray = ndarray && Py_TYPE(object) == reinterpret_cast<PyTypeObject*>(ndarray);
  if (!plain_ndarray && TorchTypes(&tensor_type, &int32_dtype) &&
      PyObject_TypeCheck(object, reinterpret_cast<PyTypeObject*>(tensor_type))) {
    return TorchBitmask(bitmask, tensor_type, int32_dtype);
  }
  // Only numpy arrays go through the buffer protocol: other buffers (bytes, bytearray) are
  // not bitmasks and get the TypeError below, as in xg2_plugin/bitmask.py.
  if (plain_ndarray || (ndarray && PyObject_IsInstance(object, ndarray) == 1)) {
    Py_buffer view;
    if (PyObject_GetBuffer(object, &view, PyBUF_STRIDES | PyBUF_FORMAT) != 0) throw py::error_already_set();
    std::unique_ptr<Py_buffer, void (*)(Py_buffer*)> release(&view, PyBuffer_Release);
    const char* format = view.format ? view.format : "B";
    if (*format == '@' || *format == '=' || *format == '<') ++format;
    if (view.itemsize != 4 || std::strcmp(format, "i") != 0) {
      std::string dtype = py::hasattr(bitmask, "dtype") ? py::str(bitmask.attr("dtype")).cast<std::string>()
                                                        : "buffer format '" + std::string(view.format ? view.format : "B") + "'";
      throw InvalidArgumentError("bitmask must have dtype int32, got " + dtype);
    }
    std::vector<int64_t> shape(view.shape, view.shape + view.ndim);
    std::vector<int64_t> strides(view.strides, view.strides + view.ndim);
    if (view.ndim != 1 && view.ndim != 2) LayoutFromShape(0, shape, strides, 4, "");  // throws
    if (view.readonly) throw InvalidArgumentError("bitmask array is read-only");
    return LayoutFromShape(reinterpret_cast<uintptr_t>(view.buf), shape, strides, 4, " (bytes)");
  }
  if (TorchTypes(&tensor_type, &int32_dtype) && PyObject_IsInstance(object, tensor_type) == 1) {
    return TorchBitmask(bitmask, tensor_type, int32_dtype);
  }
  throw py::type_error(std::string("bitmask must be a numpy array or a torch tensor, got ") +
                       Py_TYPE(object)->tp_name);
}

// Row `index` of a validated bitmask, checked against the vocabulary of `matcher`.
uint32_t* BitmaskRow(const GrammarMatcher& matcher, py::handle bitmask, py::handle index, int64_t* num_words) {
  BitmaskLayout layout = ViewBitmask(bitmask);
  if (PyBool_Check(index.ptr()) || !PyIndex_Check(index.ptr())) {
    throw py::type_error(std::string("bitmask index must be an int, got ") + Py_TYPE(index.ptr())->tp_name);
  }
  PyObject* as_int = PyNumber_Index(index.ptr());
  if (!as_int) throw py::error_already_set();
  const long long row = PyLong_AsLongLong(as_int);
  Py_DECREF(as_int);
  if (row == -1 && PyErr_Occurred()) throw py::error_already_set();
  if (row < 0 || row >= layout.rows) {
    throw InvalidArgumentError("bitmask index " + std::to_string(row) + " is out of range for " +
                               std::to_string(layout.rows) + " rows");
  }
  const int64_t vocab_size = matcher.grammar().tokenizer->vocab_size();
  const int64_t needed = (vocab_size + 31) / 32;
  if (layout.num_words < needed) {
    throw InvalidArgumentError("bitmask rows have " + std::to_string(layout.num_words) +
                               " words but the vocabulary of " + std::to_string(vocab_size) +
                               " tokens needs " + std::to_string(needed));
  }
  *num_words = layout.num_words;
  return RowPointer(layout.address, layout.row_stride_words, row);
}

// A LongWorkNotice that releases the GIL when told (and retakes it when destroyed): a short
// call keeps the GIL, which is cheaper than giving it away and back. Make it in a scope that
// ends before the call touches a Python object again.
class ReleaseGilOnLongWork {
 public:
  ReleaseGilOnLongWork() {
    notice_.before_long_work = [](void* slot) { static_cast<std::optional<py::gil_scoped_release>*>(slot)->emplace(); };
    notice_.context = &release_;
  }
  LongWorkNotice* notice() { return &notice_; }

 private:
  std::optional<py::gil_scoped_release> release_;  // destroyed after notice_: nothing calls it then
  LongWorkNotice notice_;
};

// The arguments of a METH_FASTCALL | METH_KEYWORDS method with parameters `names`, in order
// (positional first, then keywords), with Python's errors for an extra, unknown, repeated or
// missing (the first `required`) argument. False with the error set on failure.
bool ParseFastcallArguments(const char* function, const char* const* names, int count, int required,
                            PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames, PyObject** given) {
  if (nargs > count) {
    PyErr_Format(PyExc_TypeError, "%s() takes at most %d argument%s (%zd given)", function, count,
                 count == 1 ? "" : "s", nargs);
    return false;
  }
  for (int k = 0; k < count; ++k) given[k] = k < nargs ? args[k] : nullptr;
  const Py_ssize_t num_keywords = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
  for (Py_ssize_t k = 0; k < num_keywords; ++k) {
    PyObject* name = PyTuple_GET_ITEM(kwnames, k);
    int slot = -1;
    for (int n = 0; n < count && slot < 0; ++n) {
      if (PyUnicode_CompareWithASCIIString(name, names[n]) == 0) slot = n;
    }
    if (slot < 0) {
      PyErr_Format(PyExc_TypeError, "%s() got an unexpected keyword argument '%U'", function, name);
      return false;
    }
    if (given[slot]) {
      PyErr_Format(PyExc_TypeError, "%s() got multiple values for argument '%s'", function, names[slot]);
      return false;
    }
    given[slot] = args[nargs + k];
  }
  for (int k = 0; k < required; ++k) {
    if (!given[k]) {
      PyErr_Format(PyExc_TypeError, "%s() missing required argument '%s'", function, names[k]);
      return false;
    }
  }
  return true;
}

// Converts a C++ exception escaping a METH_FASTCALL method into the Python error pybind11's
// dispatcher would raise (the module's translators). Call from a catch block.
PyObject* RaiseCurrentException() {
  try {
    throw;
  } catch (py::error_already_set& e) {
    e.restore();
  } catch (...) {
    py::detail::try_translate_exceptions();
  }
  return nullptr;
}

// GrammarMatcher.fill_next_token_bitmask(bitmask, index=0), the call a server makes once per
// token, as a METH_FASTCALL method instead of a pybind11 function: pybind11's dispatcher
// (overload resolution, argument vectors built per call) costs a sizeable part of a fill
// from cached rows. Arguments and errors are those of the other methods: the same checks
// (BitmaskRow), pybind11's exception translators for the engine's errors. The GIL is
// released only once the fill says it has long work to do (LongWorkNotice).
PyObject* FillNextTokenBitmaskMethod(PyObject* self, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  static const char* const kNames[2] = {"bitmask", "index"};
  PyObject* given[2];
  if (!ParseFastcallArguments("fill_next_token_bitmask", kNames, 2, 1, args, nargs, kwnames, given)) return nullptr;
  try {
    GrammarMatcher& matcher = py::handle(self).cast<GrammarMatcher&>();
    int64_t num_words = 0;
    py::int_ first_row(0);
    uint32_t* row = BitmaskRow(matcher, given[0], given[1] ? py::handle(given[1]) : py::handle(first_row), &num_words);
    bool need_apply = false;
    {
      ReleaseGilOnLongWork gil;  // the GIL is held again when it goes
      need_apply = matcher.FillNextTokenBitmask(row, num_words, gil.notice());
    }
    return py::bool_(need_apply).release().ptr();
  } catch (...) {
    return RaiseCurrentException();
  }
}

// A token id argument as int32, with the errors of xg2_plugin.matcher's checks: TypeError
// naming the argument for a bool or a non-integer, InvalidArgumentError for an id no
// vocabulary holds (one beyond int32 cannot reach AcceptToken's own range check).
bool TokenIdArgument(PyObject* value, int64_t vocab_size, int32_t* token_id) {
  if (PyBool_Check(value) || !PyIndex_Check(value)) {
    PyErr_Format(PyExc_TypeError, "token_id must be an int, got %s", Py_TYPE(value)->tp_name);
    return false;
  }
  py::object as_int = py::reinterpret_steal<py::object>(PyNumber_Index(value));
  if (!as_int) return false;
  int overflow = 0;
  const long long id = PyLong_AsLongLongAndOverflow(as_int.ptr(), &overflow);
  if (id == -1 && PyErr_Occurred()) return false;
  if (overflow || id < INT32_MIN || id > INT32_MAX) {
    throw InvalidArgumentError("token id " + py::str(as_int).cast<std::string>() +
                               " is outside the vocabulary [0, " + std::to_string(vocab_size) + ")");
  }
  *token_id = static_cast<int32_t>(id);
  return true;
}

// GrammarMatcher.accept_token(token_id), once per generated token, as a METH_FASTCALL method
// for the reason above. An accept is one token's parser steps, usually shorter than handing
// the GIL away and back: the GIL is released only once the parser's work for the token gets
// long (EarleyParser::kShortWork).
PyObject* AcceptTokenMethod(PyObject* self, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  static const char* const kNames[1] = {"token_id"};
  PyObject* given[1];
  if (!ParseFastcallArguments("accept_token", kNames, 1, 1, args, nargs, kwnames, given)) return nullptr;
  try {
    GrammarMatcher& matcher = py::handle(self).cast<GrammarMatcher&>();
    int32_t token_id = 0;
    if (!TokenIdArgument(given[0], matcher.grammar().tokenizer->vocab_size(), &token_id)) return nullptr;
    bool accepted = false;
    {
      ReleaseGilOnLongWork gil;  // the GIL is held again when it goes
      accepted = matcher.AcceptToken(token_id, gil.notice());
    }
    return py::bool_(accepted).release().ptr();
  } catch (...) {
    return RaiseCurrentException();
  }
}

// _native._new_default_matcher(compiled_grammar): GrammarMatcher(compiled_grammar) with the
// tokenizer's stop tokens, as a METH_O function. Every request builds its matcher once, cold,
// and mostly with the defaults: pybind11's constructor dispatch (overload resolution, the
// optional stop-token list, the instance's two-step initialisation) costs more than that.
PyObject* NewDefaultMatcher(PyObject* /*module*/, PyObject* compiled_grammar) {
  try {
    py::detail::make_caster<std::shared_ptr<CompiledGrammar>> grammar;
    if (!grammar.load(compiled_grammar, /*convert=*/false)) {  // None included
      throw py::type_error(std::string("compiled_grammar must be a native CompiledGrammar, got ") +
                           Py_TYPE(compiled_grammar)->tp_name);
    }
    auto held = py::detail::cast_op<std::shared_ptr<CompiledGrammar>>(std::move(grammar));
    return py::cast(GrammarMatcher(std::move(held), std::nullopt, false)).release().ptr();
  } catch (...) {
    return RaiseCurrentException();
  }
}

// Installs a METH_FASTCALL | METH_KEYWORDS function as a method of the bound class.
void AddFastcallMethod(py::class_<GrammarMatcher>& cls, PyMethodDef* method) {
  PyObject* descriptor = PyDescr_NewMethod(reinterpret_cast<PyTypeObject*>(cls.ptr()), method);
  if (!descriptor) throw py::error_already_set();
  cls.attr(method->ml_name) = py::reinterpret_steal<py::object>(descriptor);
}

// The compiled grammar's read-only view and the cross-grammar pool's counters.
void BindCompiledGrammar(py::module_& m) {
  py::class_<CompiledGrammar, std::shared_ptr<CompiledGrammar>>(m, "CompiledGrammar")
      .def_property_readonly("ebnf",
                             [](const CompiledGrammar& g) {
                               // The first read prints the text from the grammar's source.
                               py::gil_scoped_release release;
                               return g.ebnf.text();
                             })
      .def_property_readonly("memory_bytes", &CompiledGrammar::MemoryBytes)
      .def_property_readonly("built_memory_bytes", &CompiledGrammar::BuiltBytes)
      .def_property_readonly("tokenizer_info",
                             [](const CompiledGrammar& g) {
                               return std::const_pointer_cast<TokenizerInfo>(g.tokenizer);
                             })
      .def_property_readonly("num_rules", [](const CompiledGrammar& g) { return g.fsm->num_rules(); })
      .def_property_readonly("num_nodes", [](const CompiledGrammar& g) { return g.fsm->num_nodes(); })
      .def_property_readonly("cached_nodes",
                             [](const CompiledGrammar& g) { return g.mask_cache->built_nodes(); })
      .def_property_readonly("mask_build_ns",
                             [](const CompiledGrammar& g) { return g.mask_cache->build_nanoseconds(); })
      .def("fsm_dump", [](const CompiledGrammar& g) { return g.WholeFsm()->ToString(); });

  py::class_<MaskCachePool, std::shared_ptr<MaskCachePool>>(m, "MaskCachePool")
      .def(py::init<int64_t>(), py::arg("limit_bytes") = -1)
      .def_property_readonly("bytes", &MaskCachePool::bytes)
      .def_property_readonly("hits", &MaskCachePool::hits)
      .def_property_readonly("perfect_hits", &MaskCachePool::perfect_hits)
      .def_property_readonly("partial_hits", &MaskCachePool::partial_hits)
      .def_property_readonly("short_token_hits", &MaskCachePool::short_token_hits)
      .def_property_readonly("bypasses", &MaskCachePool::bypasses)
      .def_property_readonly("misses", &MaskCachePool::misses)
      .def("__len__", &MaskCachePool::size)
      .def("clear", &MaskCachePool::Clear);
}

// String-level acceptance without a tokenizer: the test oracle for frontends.
void BindEbnfAcceptsOracle(py::module_& m) {
  m.def(
      "ebnf_accepts",
      [](const std::string& ebnf, const py::bytes& text, const std::string& root_rule_name,
         int32_t repetition_compression_threshold, int32_t max_token_bytes) {
        std::string bytes = text;
        py::gil_scoped_release release;
        FsmBuildLimits limits;
        limits.repetition_compression_threshold = repetition_compression_threshold;
        limits.max_token_bytes = max_token_bytes;
        auto fsm = std::make_shared<const GrammarFsm>(BuildGrammarFsm(ParseEbnf(ebnf, root_rule_name), limits));
        EarleyParser parser(fsm);
        for (char byte : bytes) {
          parser.SetWorkBudget(WorkBudget::kToken);  // each byte as one token
          if (!parser.Advance(static_cast<uint8_t>(byte))) return false;
        }
        return parser.CanEnd();
      },
      py::arg("ebnf"), py::arg("text"), py::arg("root_rule_name") = "root",
      py::arg("repetition_compression_threshold") = 0, py::arg("max_token_bytes") = 0);
}

void BindGrammarMatcher(py::module_& m) {
  py::class_<GrammarMatcher> matcher_class(m, "GrammarMatcher");
  matcher_class
      .def(py::init([](std::shared_ptr<CompiledGrammar> grammar,
                       std::optional<std::vector<int32_t>> stop_token_ids,
                       bool terminate_without_stop_token) {
             return GrammarMatcher(grammar, stop_token_ids, terminate_without_stop_token);
           }),
           py::arg("compiled_grammar"), py::arg("stop_token_ids") = py::none(),
           py::arg("terminate_without_stop_token") = false)
      .def(
          "accept_string",
          [](GrammarMatcher& self, const py::bytes& text) {
            std::string bytes = text;
            py::gil_scoped_release release;
            return self.AcceptString(bytes);
          },
          py::arg("text"))
      .def("validate_tokens", &GrammarMatcher::ValidateTokens, py::arg("tokens"),
           py::call_guard<py::gil_scoped_release>())
      .def("rollback", &GrammarMatcher::Rollback, py::arg("num_tokens"))
      .def("reset", &GrammarMatcher::Reset)
      .def(
          "fill_next_token_bitmask_reference",
          [](GrammarMatcher& self, py::handle bitmask, py::handle index) {
            int64_t num_words = 0;
            uint32_t* row = BitmaskRow(self, bitmask, index, &num_words);
            py::gil_scoped_release release;
            return self.FillNextTokenBitmaskReference(row, num_words);
          },
          py::arg("bitmask"), py::arg("index") = 0)
      .def("is_terminated", &GrammarMatcher::IsTerminated)
      .def("is_completed", &GrammarMatcher::IsCompleted)
      .def("find_jump_forward_string",
           [](GrammarMatcher& self) { return py::bytes(self.FindJumpForwardString()); })
      .def("fork", [](const GrammarMatcher& self) { return self.Fork(); })
      .def_property_readonly("num_accepted_steps", &GrammarMatcher::num_accepted_steps)
      .def_property_readonly("stop_token_ids", &GrammarMatcher::stop_token_ids);
  static PyMethodDef fill_method = {
      "fill_next_token_bitmask", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(&FillNextTokenBitmaskMethod)),
      METH_FASTCALL | METH_KEYWORDS,
      "fill_next_token_bitmask(self, bitmask: object, index: int = 0) -> bool\n\nWrites the allowed tokens into row `index` of "
      "`bitmask`; False iff every token is allowed."};
  AddFastcallMethod(matcher_class, &fill_method);
  static PyMethodDef accept_method = {
      "accept_token", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(&AcceptTokenMethod)),
      METH_FASTCALL | METH_KEYWORDS,
      "accept_token(self, token_id: int) -> bool\n\nConsumes one token; False (state unchanged) if the grammar "
      "forbids it."};
  AddFastcallMethod(matcher_class, &accept_method);
  static PyMethodDef new_default_matcher = {
      "_new_default_matcher", &NewDefaultMatcher, METH_O,
      "_new_default_matcher(compiled_grammar: CompiledGrammar) -> GrammarMatcher\n\nGrammarMatcher(compiled_grammar): "
      "the tokenizer's stop tokens, terminate_without_stop_token=False."};
  PyObject* function = PyCFunction_NewEx(&new_default_matcher, nullptr, nullptr);
  if (!function) throw py::error_already_set();
  m.attr("_new_default_matcher") = py::reinterpret_steal<py::object>(function);
}

void BindBatchFill(py::module_& m) {
  // Fills row indices[i] of the bitmask at `address` for matchers[i], on `num_threads`
  // threads without the GIL. Matchers must be distinct objects.
  m.def(
      "batch_fill_next_token_bitmask",
      [](std::vector<GrammarMatcher*> matchers, uintptr_t address, int64_t row_stride_words,
         int64_t num_words, std::vector<int64_t> rows, int num_threads) {
        if (rows.size() != matchers.size()) {
          throw InvalidArgumentError("batch fill: " + std::to_string(matchers.size()) +
                                     " matchers but " + std::to_string(rows.size()) + " rows");
        }
        // The Python layer checks these with messages naming the arguments; here they guard
        // the raw writes: rows distinct and apart by at least a row, matchers distinct.
        std::vector<int64_t> sorted_rows(rows);
        std::sort(sorted_rows.begin(), sorted_rows.end());
        if (std::adjacent_find(sorted_rows.begin(), sorted_rows.end()) != sorted_rows.end()) {
          throw InvalidArgumentError("batch fill: indices must be distinct (each row is written by one matcher)");
        }
        if (rows.size() > 1 && row_stride_words < num_words) {
          throw InvalidArgumentError("batch fill: bitmask rows overlap in memory");
        }
        if (std::find(matchers.begin(), matchers.end(), nullptr) != matchers.end()) {
          throw py::type_error("batch fill: matchers must be GrammarMatcher objects, got None");
        }
        std::vector<GrammarMatcher*> sorted_matchers(matchers);
        std::sort(sorted_matchers.begin(), sorted_matchers.end());
        if (std::adjacent_find(sorted_matchers.begin(), sorted_matchers.end()) != sorted_matchers.end()) {
          throw InvalidArgumentError("batch fill: matchers must be distinct objects (one per row)");
        }
        py::gil_scoped_release release;
        std::vector<uint8_t> need_apply(matchers.size());
        ParallelFor(static_cast<int64_t>(matchers.size()), num_threads, [&](int64_t i) {
          need_apply[i] = matchers[i]->FillNextTokenBitmask(
              RowPointer(address, row_stride_words, rows[i]), num_words);
        });
        return std::vector<bool>(need_apply.begin(), need_apply.end());
      },
      py::arg("matchers"), py::arg("address"), py::arg("row_stride_words"), py::arg("num_words"),
      py::arg("rows"), py::arg("num_threads"));
}

// Internals for tests and benchmarks.
void BindEngineProbes(py::module_& m) {
  m.def("_shared_rule_dfa_stats", []() {
    const SharedRuleDfaStats stats = GetSharedRuleDfaStats();
    py::dict out;
    out["entries"] = stats.entries;
    out["bytes"] = stats.bytes;
    out["limit_bytes"] = stats.limit_bytes;
    out["hits"] = stats.hits;
    out["misses"] = stats.misses;
    out["evictions"] = stats.evictions;
    return out;
  });

  // Tests: waits (without the GIL) until the background threads' queues are empty.
  m.def("_wait_for_background_work", []() {
    py::gil_scoped_release release;
    WaitForBackgroundWork();
  });
}

void BindMatcher(py::module_& m) {
  BindCompiledGrammar(m);
  BindEbnfAcceptsOracle(m);
  BindGrammarMatcher(m);
  BindBatchFill(m);
  BindEngineProbes(m);
}

}  // namespace

XG2_REGISTER_BINDINGS(40, "matcher", BindMatcher);

}  // namespace xg2
