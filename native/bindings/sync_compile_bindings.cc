// A synchronous JSON Schema compile in one native call: the grammar cache's lookup, the shared
// in-flight compile, the Ctrl-C watch (on Python's main thread) and the wrapping of the result
// in the Python CompiledGrammar. The general path (xg2_plugin/_shared_compile.py) runs the
// same steps as a Python callback of the cache, a dozen Python frames that a server's request
// pays cold (the bench collects garbage before each compile). xg2_plugin/compiler.py takes this
// path where the general one would run these same steps on the calling thread: any thread but
// a main thread whose application handles SIGINT itself, and no disk cache. (The engines call
// it from their compile workers.)
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "bindings/grammar_cache_bindings.h"
#include "bindings/json_schema_options.h"
#include "bindings/registry.h"
#include "bindings/sigint_watch.h"
#include "compiler/derived_vocabularies.h"
#include "compiler/grammar_compiler.h"
#include "support/cancellation.h"

namespace py = pybind11;

namespace xg2 {
namespace {

// The attributes CompiledGrammar.__init__ sets (xg2_plugin/compiler.py), interned once.
struct GrammarAttributeNames {
  PyObject* handle = PyUnicode_InternFromString("_handle");
  PyObject* tokenizer_info = PyUnicode_InternFromString("_tokenizer_info");
  PyObject* source = PyUnicode_InternFromString("_source");
};

// Raises KeyboardInterrupt when SIGINT arrived during the open watch (whatever the compile's
// outcome: a grammar that completed meanwhile stays cached).
void EndSigintWatch(bool watching) {
  if (watching && SigintWatchEnd()) {
    PyErr_SetNone(PyExc_KeyboardInterrupt);
    throw py::error_already_set();
  }
}

class SyncCompiler {
 public:
  // What the Python GrammarCompiler holds: its grammar cache and derived vocabularies,
  // whether the cache stores grammars (without it only `derived_kept_uncached` derived
  // vocabularies are kept), and what its grammars are made of.
  SyncCompiler(std::shared_ptr<PyGrammarCache> cache, std::shared_ptr<DerivedVocabularies> derived,
               bool cache_enabled, size_t derived_kept_uncached, py::type grammar_class, py::object tokenizer_info)
      : cache_(std::move(cache)),
        derived_(std::move(derived)),
        cache_enabled_(cache_enabled),
        derived_kept_uncached_(derived_kept_uncached),
        grammar_class_(std::move(grammar_class)),
        tokenizer_info_(std::move(tokenizer_info)) {
    if (!cache_ || !derived_) throw py::type_error("SyncCompiler: cache and derived vocabularies are required");
  }

  // (grammar, warnings of ignored keywords): the warnings only when this call ran the compile.
  // `compiler` is the Python GrammarCompiler's native compiler as it stands at the call (as
  // the general path reads it).
  py::tuple JsonSchema(const GrammarCompiler& compiler, const std::string& key, const std::string& text,
                       const JsonSchemaOptions& options, std::optional<double> timeout, bool watch_sigint) {
    if (std::optional<HeldObject> hit = cache_->Find(key)) return py::make_tuple(**hit, py::list());
    std::vector<std::string> warnings;
    HeldObject grammar = GetOrCompile(
        key,
        [&](const CancellationToken* cancel) {
          JsonSchemaCompilation compiled = compiler.CompileJsonSchema(text, options, cancel);
          warnings = std::move(compiled.warnings);
          return Wrap(std::move(compiled.grammar), "json_schema");
        },
        timeout, watch_sigint);
    return py::make_tuple(*grammar, py::cast(warnings));
  }

 private:
  // The cache's GetOrCompile under this caller's token (a deadline, the SIGINT flag), as
  // _shared_compile.call_on_main_thread (watch_sigint) or _shared_compile.call.
  HeldObject GetOrCompile(const std::string& key, const PyGrammarCache::Compile& compile,
                          std::optional<double> timeout, bool watch_sigint) {
    CancellationToken token;
    const bool watching = watch_sigint && SigintWatchBegin();
    if (watching) token.CancelOnFlag(SigintFlag());
    if (timeout) token.SetTimeout(*timeout);
    const CancellationToken* cancel = watching || timeout ? &token : nullptr;
    HeldObject value;
    try {
      py::gil_scoped_release release;
      value = cache_->GetOrCompile(key, compile, cancel);
    } catch (...) {
      EndSigintWatch(watching);
      throw;
    }
    EndSigintWatch(watching);
    return value;
  }

  // The compiled grammar as the Python CompiledGrammar (made without running its __init__,
  // with the attributes __init__ sets) and what the cache charges for it: as
  // compiler._cache_entry does for the general path.
  PyGrammarCache::Built Wrap(std::shared_ptr<CompiledGrammar> grammar, const char* source) {
    static const GrammarAttributeNames* names = new GrammarAttributeNames();
    const size_t built_bytes = grammar->BuiltBytes();
    const TokenizerInfo* vocabulary = grammar->tokenizer.get();
    py::gil_scoped_acquire gil;
    py::object handle = py::cast(std::move(grammar));
    auto* type = reinterpret_cast<PyTypeObject*>(grammar_class_.ptr());
    py::tuple no_arguments;
    py::object wrapped = py::reinterpret_steal<py::object>(type->tp_new(type, no_arguments.ptr(), nullptr));
    if (!wrapped || PyObject_SetAttr(wrapped.ptr(), names->handle, handle.ptr()) != 0 ||
        PyObject_SetAttr(wrapped.ptr(), names->tokenizer_info, tokenizer_info_.ptr()) != 0 ||
        PyObject_SetAttr(wrapped.ptr(), names->source, py::str(source).ptr()) != 0) {
      throw py::error_already_set();
    }
    PyGrammarCache::Built built{Hold(std::move(wrapped)), built_bytes, std::nullopt};
    if (!cache_enabled_) {
      while (derived_->size() > derived_kept_uncached_) derived_->RemoveOldest();
      built.bytes = 0;
      return built;
    }
    if (derived_->size() == 0) return built;
    std::optional<DerivedVocabularies::Ids> ids = derived_->IdsOf(vocabulary);
    std::optional<DerivedVocabulary> entry = ids ? derived_->Find(*ids) : std::nullopt;
    if (!entry) return built;
    // The part's key is the general path's f"derived_vocabulary{ids}" (ids as a Python tuple),
    // so that grammars of either path share one part.
    std::string part_key = "derived_vocabulary" + py::str(py::tuple(py::cast(*ids))).cast<std::string>();
    std::shared_ptr<DerivedVocabularies> derived = derived_;
    built.part = PyGrammarCache::SharedPart{std::move(part_key), entry->vocabulary->MemoryBytes(),
                                            [derived, ids = *ids] { derived->Remove(ids); }};
    return built;
  }

  std::shared_ptr<PyGrammarCache> cache_;
  std::shared_ptr<DerivedVocabularies> derived_;
  bool cache_enabled_;
  size_t derived_kept_uncached_;
  py::type grammar_class_;
  py::object tokenizer_info_;
};

void BindSyncCompiler(py::module_& m) {
  py::class_<SyncCompiler, std::shared_ptr<SyncCompiler>>(m, "SyncCompiler")
      .def(py::init<std::shared_ptr<PyGrammarCache>, std::shared_ptr<DerivedVocabularies>, bool, size_t, py::type,
                    py::object>(),
           py::arg("cache"), py::arg("derived_vocabularies"), py::arg("cache_enabled"),
           py::arg("derived_kept_uncached"), py::arg("grammar_class"), py::arg("tokenizer_info"))
      .def(
          "json_schema",
          [](SyncCompiler& self, const GrammarCompiler& compiler, const std::string& key, const std::string& text,
             bool any_whitespace, std::optional<int> indent, JsonSchemaSeparators separators, bool strict_mode,
             std::optional<int> max_whitespace, bool lenient, bool any_order, bool any_key_spelling,
             std::optional<double> timeout, bool watch_sigint) {
            const JsonSchemaOptions options = JsonSchemaOptionsFrom(any_whitespace, indent, std::move(separators),
                                                                    strict_mode, max_whitespace, lenient, any_order,
                                                                    any_key_spelling);
            return self.JsonSchema(compiler, key, text, options, timeout, watch_sigint);
          },
          py::arg("compiler"), py::arg("key"), py::arg("text"), py::arg("any_whitespace"), py::arg("indent"),
          py::arg("separators"), py::arg("strict_mode"), py::arg("max_whitespace"), py::arg("lenient"),
          py::arg("any_order"), py::arg("any_key_spelling"), py::arg("timeout"), py::arg("watch_sigint"),
          "(grammar, warnings) of a JSON Schema under the cache key `key`, compiled on this thread when "
          "neither cached nor in flight; warnings only when this call compiled it.");
}

}  // namespace
}  // namespace xg2

XG2_REGISTER_BINDINGS(47, "sync_compile", xg2::BindSyncCompiler);
