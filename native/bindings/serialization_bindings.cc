// Python surface of matcher/grammar_serialization.h: compiled grammars and tokenizer tables
// to bytes and back, and the DeserializationError type. The byte work runs with the GIL
// released.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>
#include <string>

#include "bindings/registry.h"
#include "compiler/derived_vocabularies.h"
#include "matcher/compiled_grammar.h"
#include "matcher/grammar_serialization.h"

namespace py = pybind11;

namespace xg2 {
namespace {

std::string_view BytesView(const py::bytes& data) {
  char* buffer = nullptr;
  Py_ssize_t size = 0;
  if (PyBytes_AsStringAndSize(data.ptr(), &buffer, &size) != 0) throw py::error_already_set();
  return std::string_view(buffer, static_cast<size_t>(size));
}

// The vocabulary a blob's grammar is matched against and the pool its classifications share:
// the base tokenizer's, or (a grammar naming tokens) the derived vocabulary, found in or added
// to `vocabularies` (the compiler's table; null: derived for this grammar alone) like a compile
// would.
DerivedVocabulary VocabularyFor(const GrammarBlob& blob, const std::shared_ptr<TokenizerInfo>& base,
                                const std::shared_ptr<DerivedVocabularies>& vocabularies,
                                std::shared_ptr<MaskCachePool> pool) {
  if (!blob.derived_vocabulary) return {base, std::move(pool)};
  if (vocabularies) return vocabularies->FindOrDerive(*base, blob.token_literal_ids, pool.get());
  return DeriveVocabulary(*base, blob.token_literal_ids, pool.get());
}

std::shared_ptr<CompiledGrammar> DeserializeGrammar(std::shared_ptr<TokenizerInfo> base, const py::bytes& data,
                                                    const std::string& engine_version,
                                                    std::shared_ptr<DerivedVocabularies> vocabularies,
                                                    std::shared_ptr<MaskCachePool> pool, bool mask_cache,
                                                    bool cross_grammar_cache, int32_t precompute_nodes,
                                                    bool verify_checksum) {
  const std::string_view bytes = BytesView(data);
  GrammarBlob blob;
  {
    py::gil_scoped_release release;
    blob = ReadCompiledGrammarBlob(bytes, *base, engine_version, verify_checksum);
  }
  MaskCacheOptions options;
  options.enabled = mask_cache;
  options.cross_grammar = cross_grammar_cache;
  options.precompute = precompute_nodes;
  py::gil_scoped_release release;
  DerivedVocabulary vocab = VocabularyFor(blob, base, vocabularies, std::move(pool));
  if (!vocab.pool) options.cross_grammar = false;
  return AssembleCompiledGrammar(std::move(blob), std::move(vocab.vocabulary), std::move(vocab.pool), options);
}

void BindSerialization(py::module_& m) {
  // A ValueError too (a bad blob is bad input), and an XG2Error like every engine error.
  static py::exception<DeserializationError> deserialization_error(m, "DeserializationError", PyExc_ValueError);
  PyObject_SetAttrString(deserialization_error.ptr(), "__bases__",
                         py::make_tuple(py::handle(PyExc_ValueError), m.attr("XG2Error")).ptr());
  // Registered after module.cc's translator, so tried before its catch-all for Error.
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const DeserializationError& e) {
      PyErr_SetString(deserialization_error.ptr(), e.what());
    }
  });
  m.attr("serialization_format_version") = kSerializationFormatVersion;
  m.def(
      "_tokenizer_fingerprint",
      [](const std::shared_ptr<TokenizerInfo>& info) {
        std::string fingerprint;
        {
          py::gil_scoped_release release;
          fingerprint = TokenizerFingerprint(*info);
        }
        return py::bytes(fingerprint);
      },
      py::arg("tokenizer_info"), "16 bytes naming the vocabulary, its size, stop and special ids.");
  m.def(
      "_serialize_tokenizer_info",
      [](const std::shared_ptr<TokenizerInfo>& info, const std::string& engine_version) {
        std::string blob;
        {
          py::gil_scoped_release release;
          blob = SerializeTokenizerInfo(*info, engine_version);
        }
        return py::bytes(blob);
      },
      py::arg("tokenizer_info"), py::arg("engine_version"));
  m.def(
      "_deserialize_tokenizer_info",
      [](const py::bytes& data, const std::string& engine_version) {
        const std::string_view bytes = BytesView(data);
        py::gil_scoped_release release;
        return std::const_pointer_cast<TokenizerInfo>(DeserializeTokenizerInfo(bytes, engine_version));
      },
      py::arg("data"), py::arg("engine_version"));
  m.def(
      "_serialize_compiled_grammar",
      [](const std::shared_ptr<CompiledGrammar>& grammar, const std::shared_ptr<TokenizerInfo>& base,
         const std::string& engine_version, bool with_classifications) {
        std::string blob;
        {
          py::gil_scoped_release release;
          blob = SerializeCompiledGrammar(*grammar, *base, engine_version, with_classifications);
        }
        return py::bytes(blob);
      },
      py::arg("grammar"), py::arg("base_tokenizer_info"), py::arg("engine_version"),
      py::arg("with_classifications") = true);
  m.def("_deserialize_compiled_grammar", &DeserializeGrammar, py::arg("base_tokenizer_info"), py::arg("data"),
        py::arg("engine_version"), py::arg("derived_vocabularies") = nullptr, py::arg("pool") = nullptr,
        py::arg("mask_cache") = true, py::arg("cross_grammar_cache") = true, py::arg("precompute_nodes") = 32,
        py::arg("verify_checksum") = true,
        "A compiled grammar from _serialize_compiled_grammar's bytes, for base_tokenizer_info; "
        "DeserializationError names what is truncated, corrupt or mismatched.");
}

}  // namespace
}  // namespace xg2

XG2_REGISTER_BINDINGS(50, "serialization", xg2::BindSerialization);
