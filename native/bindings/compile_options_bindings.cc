// Python surface of the compile limits and the cancellation token (GrammarCompiler's
// `limits` and `timeout`, Future.cancel()). The exception classes live in module.cc.
#include <pybind11/pybind11.h>

#include "bindings/registry.h"
#include "support/cancellation.h"
#include "support/compile_limits.h"

namespace py = pybind11;

namespace xg2 {
namespace {

void BindCompileOptions(py::module_& m) {
  py::class_<CompileLimits, std::shared_ptr<CompileLimits>>(m, "CompileLimits")
      .def(py::init<>())
      .def_readwrite("max_schema_depth", &CompileLimits::max_schema_depth)
      .def_readwrite("max_generated_grammar_bytes", &CompileLimits::max_generated_grammar_bytes)
      .def_readwrite("max_repetition_bound", &CompileLimits::max_repetition_bound)
      .def_readwrite("max_fsm_nodes", &CompileLimits::max_fsm_nodes)
      .def_readwrite("max_earley_items_per_step", &CompileLimits::max_earley_items_per_step)
      .def_readwrite("max_earley_work_per_token", &CompileLimits::max_earley_work_per_token)
      .def_readwrite("max_earley_work_per_fill", &CompileLimits::max_earley_work_per_fill);

  py::class_<CancellationToken, std::shared_ptr<CancellationToken>>(m, "CancellationToken")
      .def(py::init<>())
      .def("cancel", &CancellationToken::Cancel, "Requests cancellation (thread-safe).")
      .def("_cancel_after_checks", &CancellationToken::CancelAfterChecks, py::arg("checks"),
           "Tests: cancel at the given safe-point check from now (0: the next one).")
      .def_property_readonly("cancelled", &CancellationToken::cancelled)
      .def("set_timeout", &CancellationToken::SetTimeout, py::arg("seconds"),
           "Sets a deadline `seconds` from now (thread-safe, also while the compile runs); +inf removes it.");
}

}  // namespace
}  // namespace xg2

XG2_REGISTER_BINDINGS(5, "compile_options", xg2::BindCompileOptions);
