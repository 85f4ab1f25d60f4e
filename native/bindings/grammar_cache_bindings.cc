// Python surface of compiler/compile_cache.h: the compiled-grammar cache and in-flight table of
// a Python GrammarCompiler. Values are its CompiledGrammar objects (a cached grammar is handed
// out as the same object). Compiles reach it through _native.CachedCompiler
// (cached_compiler_bindings.cc), which charges them; this binding looks up, clears and counts.
#include <pybind11/pybind11.h>

#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "bindings/grammar_cache_bindings.h"
#include "bindings/registry.h"

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

void BindGrammarCache(py::module_& m) {
  py::class_<GrammarCache, std::shared_ptr<GrammarCache>>(m, "GrammarCache")
      .def(py::init<int64_t, bool>(), py::arg("limit_bytes"), py::arg("enabled") = true)
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
