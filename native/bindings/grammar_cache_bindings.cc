// Python surface of compiler/compile_cache.h: the compiled-grammar cache and in-flight table of
// a Python GrammarCompiler. Values are its CompiledGrammar objects (a cached grammar is handed
// out as the same object), compiles are Python callables (the native compile and the disk
// cache around it), and the GIL is released while the cache's lock is taken, while a caller
// waits for a compile in flight, and (inside the callable's native call) while compiling.
#include <pybind11/pybind11.h>

#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "bindings/grammar_cache_bindings.h"
#include "bindings/registry.h"
#include "support/cancellation.h"

namespace py = pybind11;

namespace xg2 {

HeldObject Hold(py::object object) {
  return HeldObject(new py::object(std::move(object)), [](py::object* held) {
    py::gil_scoped_acquire gil;
    delete held;
  });
}

namespace {

using GrammarCache = PyGrammarCache;

// The Python exception types of support/cancellation.h, bound by bindings/module.cc.
struct CancellationTypes {
  py::handle cancelled;
  py::handle timeout;
};

CancellationTypes& Types() {
  static CancellationTypes types;
  return types;
}

// Runs `build(cancel)` with the GIL: (grammar, bytes, part) where part is None or (key, bytes,
// on_evict). A cancellation raised in Python becomes the native error again, so the cache
// knows that the runner stopped and hands the compile to a waiter.
GrammarCache::Built RunBuild(const py::function& build, const py::object& cancel) {
  py::gil_scoped_acquire gil;
  py::tuple out;
  try {
    out = build(cancel);
  } catch (py::error_already_set& error) {
    if (error.matches(Types().timeout)) throw CompilationTimeoutError(py::str(error.value()));
    if (error.matches(Types().cancelled)) throw CompilationCancelledError(py::str(error.value()));
    throw;
  }
  GrammarCache::Built built{Hold(out[0]), out[1].cast<size_t>(), std::nullopt};
  if (!out[2].is_none()) {
    py::tuple part = out[2];
    HeldObject on_evict = Hold(part[2]);
    built.part = GrammarCache::SharedPart{part[0].cast<std::string>(), part[1].cast<size_t>(), [on_evict] {
                                            py::gil_scoped_acquire gil;
                                            try {
                                              (*on_evict)();
                                            } catch (py::error_already_set& error) {
                                              error.discard_as_unraisable("compile cache: on_evict");
                                            }
                                          }};
  }
  return built;
}

py::object GetOrCompile(GrammarCache& self, const std::string& key, const py::function& build,
                        const py::object& cancel) {
  const CancellationToken* token = cancel.is_none() ? nullptr : cancel.cast<const CancellationToken*>();
  HeldObject value;
  {
    py::gil_scoped_release release;
    value = self.GetOrCompile(key, [&build, &cancel](const CancellationToken*) { return RunBuild(build, cancel); },
                              token);
  }
  return *value;
}

void BindGrammarCache(py::module_& m) {
  Types().cancelled = m.attr("CompilationCancelledError");
  Types().timeout = m.attr("CompilationTimeoutError");
  py::class_<GrammarCache, std::shared_ptr<GrammarCache>>(m, "GrammarCache")
      .def(py::init<int64_t, bool>(), py::arg("limit_bytes"), py::arg("enabled") = true)
      .def("get_or_compile", &GetOrCompile, py::arg("key"), py::arg("build"), py::arg("cancel") = py::none(),
           "The cached grammar of `key`, or build(cancel) -> (grammar, bytes, part or None) run once for every "
           "concurrent caller of `key` (native/compiler/compile_cache.h).")
      .def(
          "find",
          [](GrammarCache& self, const std::string& key) -> py::object {
            // With the GIL: the cache's lock is only ever held briefly, and never by a thread
            // waiting for the GIL (the values it drops are released after it unlocks).
            std::optional<HeldObject> found = self.Find(key);
            return found ? **found : py::object(py::none());
          },
          py::arg("key"), "The cached grammar of `key` (a hit), or None.")
      .def("clear", &GrammarCache::Clear, py::call_guard<py::gil_scoped_release>())
      .def("reset_after_fork", &GrammarCache::ResetAfterFork, py::call_guard<py::gil_scoped_release>())
      .def_property_readonly("in_flight", &GrammarCache::in_flight)
      .def_property_readonly("stats", [](const GrammarCache& self) {
        CompileCacheStats stats = self.stats();
        py::dict out;
        out["entries"] = stats.entries;
        out["shared_parts"] = stats.shared_parts;
        out["bytes"] = stats.bytes;
        out["limit_bytes"] = stats.limit_bytes;
        out["hits"] = stats.hits;
        out["misses"] = stats.misses;
        out["evictions"] = stats.evictions;
        return out;
      });
}

}  // namespace
}  // namespace xg2

XG2_REGISTER_BINDINGS(46, "grammar_cache", xg2::BindGrammarCache);
