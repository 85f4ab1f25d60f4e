// Python surface of the tokenizer stage: the VocabType enum, the TokenizerInfo table (held by
// shared_ptr so that compiled grammars and matchers can share one table) and the vocabulary
// detection / decoding helpers. Vocabularies hold ~200k entries, so list conversions go
// through the CPython API directly rather than per-element pybind11 casters.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "bindings/registry.h"
#include "matcher/vocabulary_index.h"
#include "support/error.h"
#include "tokenizer/tokenizer_info.h"
#include "tokenizer/vocab_decoder.h"

namespace py = pybind11;

namespace xg2 {
namespace {

// Accepts a list or tuple whose items are str (taken as UTF-8) or bytes-like.
std::vector<std::string> StringsFromSequence(py::handle sequence, const char* what) {
  if (!PyList_Check(sequence.ptr()) && !PyTuple_Check(sequence.ptr())) {
    throw py::type_error(std::string(what) + " must be a list or tuple, not " +
                         std::string(py::str(py::type::handle_of(sequence).attr("__name__"))));
  }
  py::object items = py::reinterpret_steal<py::object>(PySequence_Fast(sequence.ptr(), what));
  if (!items) throw py::error_already_set();
  Py_ssize_t size = PySequence_Fast_GET_SIZE(items.ptr());
  PyObject** item_array = PySequence_Fast_ITEMS(items.ptr());
  std::vector<std::string> strings;
  strings.reserve(static_cast<size_t>(size));
  for (Py_ssize_t i = 0; i < size; ++i) {
    PyObject* item = item_array[i];
    const char* data = nullptr;
    Py_ssize_t length = 0;
    if (PyUnicode_Check(item)) {
      data = PyUnicode_AsUTF8AndSize(item, &length);
      if (data == nullptr) throw py::error_already_set();
    } else if (PyBytes_Check(item)) {
      data = PyBytes_AS_STRING(item);
      length = PyBytes_GET_SIZE(item);
    } else if (PyByteArray_Check(item)) {
      data = PyByteArray_AS_STRING(item);
      length = PyByteArray_GET_SIZE(item);
    } else {
      throw py::type_error(std::string(what) + "[" + std::to_string(i) +
                           "] must be str or bytes, not " +
                           std::string(py::str(py::type::handle_of(item).attr("__name__"))));
    }
    strings.emplace_back(data, static_cast<size_t>(length));
  }
  return strings;
}

py::list BytesList(const std::vector<std::string>& strings) {
  py::list result(strings.size());
  for (size_t i = 0; i < strings.size(); ++i) {
    PyObject* bytes = PyBytes_FromStringAndSize(strings[i].data(),
                                                static_cast<Py_ssize_t>(strings[i].size()));
    if (bytes == nullptr) throw py::error_already_set();
    PyList_SET_ITEM(result.ptr(), static_cast<Py_ssize_t>(i), bytes);  // steals the reference
  }
  return result;
}

// Accepts the VocabType enum (native or Python IntEnum) or a plain int.
VocabType VocabTypeFromPython(py::handle value) {
  if (PyFloat_Check(value.ptr()) || PyBool_Check(value.ptr())) {
    throw py::type_error("vocab_type must be a VocabType or int");
  }
  int number = py::int_(py::reinterpret_borrow<py::object>(value));
  if (number < static_cast<int>(VocabType::kRaw) || number > static_cast<int>(VocabType::kByteLevel)) {
    throw InvalidArgumentError("vocab_type must be 0 (RAW), 1 (BYTE_FALLBACK) or 2 (BYTE_LEVEL), got " +
                               std::to_string(number));
  }
  return static_cast<VocabType>(number);
}

// An int argument (not bool; numpy integers are accepted through __index__) that fits
// int32, with TypeError / InvalidArgumentError messages naming `what`.
int32_t Int32Argument(py::handle value, const std::string& what) {
  if (PyBool_Check(value.ptr()) || !PyIndex_Check(value.ptr())) {
    throw py::type_error(what + " must be an int, not " + Py_TYPE(value.ptr())->tp_name);
  }
  py::object as_int = py::reinterpret_steal<py::object>(PyNumber_Index(value.ptr()));
  if (!as_int) throw py::error_already_set();
  int overflow = 0;
  const long long number = PyLong_AsLongLongAndOverflow(as_int.ptr(), &overflow);
  if (number == -1 && PyErr_Occurred()) throw py::error_already_set();
  if (overflow != 0 || number < INT32_MIN || number > INT32_MAX) {
    throw InvalidArgumentError(what + " " + std::string(py::str(as_int)) + " is out of range");
  }
  return static_cast<int32_t>(number);
}

// A list or tuple of int ids (each one an Int32Argument); `what` names the argument.
std::vector<int32_t> IdsFromSequence(py::handle sequence, const char* what) {
  if (!PyList_Check(sequence.ptr()) && !PyTuple_Check(sequence.ptr())) {
    throw py::type_error(std::string(what) + " must be a list or tuple of ints, not " +
                         Py_TYPE(sequence.ptr())->tp_name);
  }
  py::object items = py::reinterpret_steal<py::object>(PySequence_Fast(sequence.ptr(), what));
  if (!items) throw py::error_already_set();
  const Py_ssize_t size = PySequence_Fast_GET_SIZE(items.ptr());
  PyObject** item_array = PySequence_Fast_ITEMS(items.ptr());
  std::vector<int32_t> ids(static_cast<size_t>(size));
  for (Py_ssize_t i = 0; i < size; ++i) {
    ids[static_cast<size_t>(i)] = Int32Argument(item_array[i], std::string(what) + "[" + std::to_string(i) + "]");
  }
  return ids;
}

void BindTokenizer(py::module_& m) {
  m.attr("MAX_VOCAB_SIZE") = kMaxVocabSize;

  py::enum_<VocabType>(m, "VocabType", "How a tokenizer's vocabulary strings encode bytes.")
      .value("RAW", VocabType::kRaw)
      .value("BYTE_FALLBACK", VocabType::kByteFallback)
      .value("BYTE_LEVEL", VocabType::kByteLevel);

  py::class_<TokenizerInfo, std::shared_ptr<TokenizerInfo>>(
      m, "TokenizerInfo",
      "Immutable vocabulary table: the bytes each token id appends to the output, and which ids "
      "are special, stop or padding.")
      .def(py::init([](py::handle decoded_tokens, py::handle vocab_type, py::handle vocab_size_object,
                       py::handle stop_token_objects, py::handle special_token_objects,
                       bool add_prefix_space) {
             // The size is checked before the token list is copied (TokenizerInfo checks
             // it again before allocating its per-id tables).
             const int32_t vocab_size = Int32Argument(vocab_size_object, "vocab_size");
             if (vocab_size < 1 || vocab_size > kMaxVocabSize) {
               throw InvalidArgumentError("vocab_size must be in [1, " + std::to_string(kMaxVocabSize) +
                                          "], got " + std::to_string(vocab_size));
             }
             std::vector<int32_t> stop_token_ids = IdsFromSequence(stop_token_objects, "stop_token_ids");
             std::vector<int32_t> special_token_ids = IdsFromSequence(special_token_objects, "special_token_ids");
             std::vector<std::string> tokens = StringsFromSequence(decoded_tokens, "decoded_tokens");
             VocabType type = VocabTypeFromPython(vocab_type);
             py::gil_scoped_release release;
             auto info = std::make_shared<TokenizerInfo>(std::move(tokens), type, vocab_size,
                                                         std::move(stop_token_ids),
                                                         std::move(special_token_ids), add_prefix_space);
             VocabularyIndex::Of(*info);  // built here, so that no compile pays for it
             return info;
           }),
           py::arg("decoded_tokens"), py::arg("vocab_type"), py::arg("vocab_size"),
           py::arg("stop_token_ids"), py::arg("special_token_ids"), py::arg("add_prefix_space"))
      .def_property_readonly("vocab_size", &TokenizerInfo::vocab_size)
      .def_property_readonly("vocab_type", &TokenizerInfo::vocab_type)
      .def_property_readonly("stop_token_ids", &TokenizerInfo::stop_token_ids)
      .def_property_readonly("special_token_ids", &TokenizerInfo::special_token_ids)
      .def_property_readonly("add_prefix_space", &TokenizerInfo::add_prefix_space)
      .def(
          "decoded_token",
          [](const TokenizerInfo& info, int32_t id) {
            if (id < 0 || id >= info.vocab_size()) {
              throw InvalidArgumentError("token id " + std::to_string(id) +
                                         " is outside the vocabulary [0, " +
                                         std::to_string(info.vocab_size()) + ")");
            }
            const auto& tokens = info.decoded_tokens();
            // Padding ids beyond the tokenizer's table decode to nothing.
            return py::bytes(static_cast<size_t>(id) < tokens.size() ? tokens[id] : std::string());
          },
          py::arg("id"), "The bytes token `id` appends to the output (b'' for padding ids).")
      .def(
          "decoded_tokens", [](const TokenizerInfo& info) { return BytesList(info.decoded_tokens()); },
          "The decoded bytes of every tokenizer id (padding ids excluded).")
      .def("is_text_token", &TokenizerInfo::IsTextToken, py::arg("id"),
           "Whether the id may appear inside grammar text (not special, stop, empty or padding).")
      .def("memory_bytes", &TokenizerInfo::MemoryBytes, "Byte size of the native tables.")
      .def("__repr__", [](const TokenizerInfo& info) {
        return "<_native.TokenizerInfo vocab_size=" + std::to_string(info.vocab_size()) +
               " vocab_type=" + std::to_string(static_cast<int>(info.vocab_type())) + ">";
      });

  m.def(
      "detect_vocab_type",
      [](py::handle encoded) {
        std::vector<std::string> tokens = StringsFromSequence(encoded, "encoded");
        py::gil_scoped_release release;
        return static_cast<int>(DetectVocabType(tokens));
      },
      py::arg("encoded"), "Detect the vocabulary spelling (a VocabType value) from its tokens.");
  m.def(
      "decode_vocabulary",
      [](py::handle encoded, py::handle vocab_type) {
        std::vector<std::string> tokens = StringsFromSequence(encoded, "encoded");
        VocabType type = VocabTypeFromPython(vocab_type);
        std::vector<std::string> decoded;
        {
          py::gil_scoped_release release;
          decoded = DecodeVocabulary(tokens, type);
        }
        return BytesList(decoded);
      },
      py::arg("encoded"), py::arg("vocab_type"),
      "The bytes each encoded token appends to the output mid-sequence.");
}

}  // namespace
}  // namespace xg2

XG2_REGISTER_BINDINGS(10, "tokenizer", xg2::BindTokenizer);
