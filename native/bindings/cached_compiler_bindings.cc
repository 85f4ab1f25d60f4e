// The native half of a Python GrammarCompiler's cached compiles (bound as _native.CachedCompiler):
// every compile request reaches the grammar cache through it, and it alone wraps a compiled
// grammar in the Python CompiledGrammar and decides what the cache charges for it.
//   * compile: a synchronous request in one native call: the cache lookup, the shared in-flight
//     compile, the Ctrl-C watch (on Python's main thread) and the wrapping. The general path
//     (xg2_plugin/_shared_compile.py) runs the same steps as a dozen Python frames, which a
//     server's request pays cold; xg2_plugin/compiler.py (GrammarCompiler._sync_route) decides
//     which path a synchronous request takes.
//   * build and get_or_compile: the general path's compile (no cache) and its cache call, whose
//     build is Python (the disk cache around `build`) and whose charge is made here.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "bindings/compile_requests.h"
#include "bindings/grammar_cache_bindings.h"
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

const GrammarAttributeNames& AttributeNames() {
  static const GrammarAttributeNames* names = new GrammarAttributeNames();
  return *names;
}

// The Python exception types of support/cancellation.h, bound by bindings/module.cc.
struct CancellationTypes {
  py::handle cancelled;
  py::handle timeout;
};

CancellationTypes& Types() {
  static CancellationTypes types;
  return types;
}

// Raises KeyboardInterrupt when SIGINT arrived during the open watch (whatever the compile's
// outcome: a grammar that completed meanwhile stays cached).
void EndSigintWatch(bool watching) {
  if (watching && SigintWatchEnd()) {
    PyErr_SetNone(PyExc_KeyboardInterrupt);
    throw py::error_already_set();
  }
}

class CachedCompiler {
 public:
  // What the Python GrammarCompiler holds: its grammar cache and derived vocabularies,
  // whether the cache stores grammars (without it only `derived_kept_uncached` derived
  // vocabularies are kept), and what its grammars are made of.
  CachedCompiler(std::shared_ptr<PyGrammarCache> cache, std::shared_ptr<DerivedVocabularies> derived,
                 bool cache_enabled, size_t derived_kept_uncached, py::type grammar_class, py::object tokenizer_info)
      : cache_(std::move(cache)),
        derived_(std::move(derived)),
        cache_enabled_(cache_enabled),
        derived_kept_uncached_(derived_kept_uncached),
        grammar_class_(std::move(grammar_class)),
        tokenizer_info_(std::move(tokenizer_info)) {
    if (!cache_ || !derived_) throw py::type_error("CachedCompiler: cache and derived vocabularies are required");
  }

  // (grammar, warnings of ignored JSON Schema keywords) of request `kind` with `args` under the
  // cache key `key`: the warnings only when this call ran the compile. `compiler` is the Python
  // GrammarCompiler's native compiler as it stands at the call (as the general path reads it).
  py::tuple Compile(const GrammarCompiler& compiler, const std::string& kind, const std::string& key,
                    const py::tuple& args, std::optional<double> timeout, bool watch_sigint) {
    if (std::optional<HeldObject> hit = cache_->Find(key)) return py::make_tuple(**hit, py::list());
    const RequestCompile compile = CompileOfRequest(kind, args);
    std::vector<std::string> warnings;
    HeldObject grammar = GetOrCompileOnThisThread(
        key,
        [&](const CancellationToken* cancel) {
          RequestCompilation compiled = compile(compiler, cancel);
          warnings = std::move(compiled.warnings);
          std::shared_ptr<CompiledGrammar> built = std::move(compiled.grammar);
          py::gil_scoped_acquire gil;
          HeldObject wrapped = Hold(WrapGrammar(built, kind));
          return Charge(std::move(wrapped), *built);
        },
        timeout, watch_sigint);
    return py::make_tuple(*grammar, py::cast(warnings));
  }

  // The general path's compile of a request, outside the cache: (grammar, warnings), GIL held.
  py::tuple Build(const GrammarCompiler& compiler, const std::string& kind, const py::tuple& args,
                  const CancellationToken* cancel) {
    const RequestCompile compile = CompileOfRequest(kind, args);
    RequestCompilation compiled;
    {
      py::gil_scoped_release release;
      compiled = compile(compiler, cancel);
    }
    return py::make_tuple(WrapGrammar(std::move(compiled.grammar), kind), py::cast(compiled.warnings));
  }

  // The general path's cache call: the grammar of `key`, or build(cancel) -> CompiledGrammar run
  // once for every concurrent caller of `key` (native/compiler/compile_cache.h), charged here.
  py::object GetOrCompile(const std::string& key, const py::function& build, const py::object& cancel) {
    const CancellationToken* token = cancel.is_none() ? nullptr : cancel.cast<const CancellationToken*>();
    HeldObject value;
    {
      py::gil_scoped_release release;
      value = cache_->GetOrCompile(
          key, [this, &build, &cancel](const CancellationToken*) { return RunPythonBuild(build, cancel); }, token);
    }
    return *value;
  }

 private:
  // The cache's GetOrCompile under this caller's token (a deadline, the SIGINT flag), as
  // _shared_compile.call_on_main_thread (watch_sigint) or _shared_compile.call.
  HeldObject GetOrCompileOnThisThread(const std::string& key, const PyGrammarCache::Compile& compile,
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

  // Runs the Python `build(cancel)` with the GIL and charges its grammar. A cancellation raised
  // in Python becomes the native error again, so the cache knows that the runner stopped and
  // hands the compile to a waiter.
  PyGrammarCache::Built RunPythonBuild(const py::function& build, const py::object& cancel) {
    py::gil_scoped_acquire gil;
    py::object grammar;
    try {
      grammar = build(cancel);
    } catch (py::error_already_set& error) {
      if (error.matches(Types().timeout)) throw CompilationTimeoutError(py::str(error.value()));
      if (error.matches(Types().cancelled)) throw CompilationCancelledError(py::str(error.value()));
      throw;
    }
    py::object handle = py::reinterpret_steal<py::object>(PyObject_GetAttr(grammar.ptr(), AttributeNames().handle));
    if (!handle) throw py::error_already_set();
    const auto compiled = handle.cast<std::shared_ptr<CompiledGrammar>>();
    return Charge(Hold(std::move(grammar)), *compiled);
  }

  // `grammar` as the Python CompiledGrammar, made without running its __init__, with the
  // attributes __init__ sets (GIL held).
  py::object WrapGrammar(std::shared_ptr<CompiledGrammar> grammar, const std::string& kind) {
    const GrammarAttributeNames& names = AttributeNames();
    py::object handle = py::cast(std::move(grammar));
    auto* type = reinterpret_cast<PyTypeObject*>(grammar_class_.ptr());
    py::tuple no_arguments;
    py::object wrapped = py::reinterpret_steal<py::object>(type->tp_new(type, no_arguments.ptr(), nullptr));
    if (!wrapped || PyObject_SetAttr(wrapped.ptr(), names.handle, handle.ptr()) != 0 ||
        PyObject_SetAttr(wrapped.ptr(), names.tokenizer_info, tokenizer_info_.ptr()) != 0 ||
        PyObject_SetAttr(wrapped.ptr(), names.source, py::str(kind).ptr()) != 0) {
      throw py::error_already_set();
    }
    return wrapped;
  }

  // What the cache charges for `wrapped` (whose grammar is `grammar`), GIL held. The size is
  // charged once, as the compile built it: a grammar's own token classifications keep growing
  // as matchers and the background precompute fill them (those are the pool's to count), and
  // re-measuring at eviction would take back more than was charged. A grammar naming tokens
  // holds its derived vocabulary (about as large as the tokenizer's tables): a shared part of
  // the cache, charged once, whose eviction evicts the grammars holding it and drops it from
  // the derived vocabularies.
  PyGrammarCache::Built Charge(HeldObject wrapped, const CompiledGrammar& grammar) {
    PyGrammarCache::Built built{std::move(wrapped), grammar.BuiltBytes(), std::nullopt};
    if (!cache_enabled_) {
      while (derived_->size() > derived_kept_uncached_) derived_->RemoveOldest();
      built.bytes = 0;
      return built;
    }
    // An empty table holds no grammar's vocabulary: most compilers never derive one.
    if (derived_->size() == 0) return built;
    std::optional<DerivedVocabularies::Ids> ids = derived_->IdsOf(grammar.tokenizer.get());
    std::optional<DerivedVocabulary> entry = ids ? derived_->Find(*ids) : std::nullopt;
    if (!entry) return built;
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

void BindCachedCompiler(py::module_& m) {
  Types().cancelled = m.attr("CompilationCancelledError");
  Types().timeout = m.attr("CompilationTimeoutError");
  py::class_<CachedCompiler, std::shared_ptr<CachedCompiler>>(m, "CachedCompiler")
      .def(py::init<std::shared_ptr<PyGrammarCache>, std::shared_ptr<DerivedVocabularies>, bool, size_t, py::type,
                    py::object>(),
           py::arg("cache"), py::arg("derived_vocabularies"), py::arg("cache_enabled"),
           py::arg("derived_kept_uncached"), py::arg("grammar_class"), py::arg("tokenizer_info"))
      .def("compile", &CachedCompiler::Compile, py::arg("compiler"), py::arg("kind"), py::arg("key"), py::arg("args"),
           py::arg("timeout"), py::arg("watch_sigint"),
           "(grammar, warnings) of request `kind` with `args` under the cache key `key`, compiled on this thread "
           "when neither cached nor in flight; warnings only when this call compiled it.")
      .def("build", &CachedCompiler::Build, py::arg("compiler"), py::arg("kind"), py::arg("args"),
           py::arg("cancel") = nullptr, "(grammar, warnings) of request `kind` with `args`, outside the cache.")
      .def("get_or_compile", &CachedCompiler::GetOrCompile, py::arg("key"), py::arg("build"),
           py::arg("cancel") = py::none(),
           "The cached grammar of `key`, or build(cancel) -> CompiledGrammar run once for every concurrent "
           "caller of `key`, charged as `compile` charges.");
}

}  // namespace
}  // namespace xg2

XG2_REGISTER_BINDINGS(47, "sync_compile", xg2::BindCachedCompiler);
