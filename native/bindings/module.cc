// The `xg2_plugin._native` extension module. Stage bindings register themselves
// (bindings/registry.h); this file only creates the exception hierarchy and runs them.
#include <pybind11/pybind11.h>

#include <algorithm>

#include "bindings/registry.h"
#include "support/cancellation.h"
#include "support/error.h"

namespace py = pybind11;

namespace xg2 {

std::vector<BindingEntry>& BindingRegistry() {
  static std::vector<BindingEntry> registry;
  return registry;
}

namespace {

void BindExceptions(py::module_& m) {
  // Python classes mirror support/error.h. Errors caused by bad input are also ValueErrors
  // so that callers catching ValueError (as serving engines do for bad requests) see them.
  static py::exception<Error> error(m, "XG2Error", PyExc_Exception);
  static py::exception<GrammarSyntaxError> syntax_error(m, "GrammarSyntaxError", PyExc_ValueError);
  static py::exception<RegexError> regex_error(m, "RegexError", syntax_error.ptr());
  static py::exception<SchemaError> schema_error(m, "SchemaError", PyExc_ValueError);
  static py::exception<UnsupportedSchemaError> unsupported(m, "UnsupportedSchemaError",
                                                           schema_error.ptr());
  static py::exception<StructuralTagError> structural_tag_error(m, "StructuralTagError",
                                                                schema_error.ptr());
  static py::exception<ResourceLimitError> limit_error(m, "ResourceLimitError", error.ptr());
  static py::exception<InvalidArgumentError> argument_error(m, "InvalidArgumentError",
                                                            PyExc_ValueError);
  static py::exception<ConcurrentUseError> concurrent_use_error(m, "ConcurrentUseError", PyExc_RuntimeError);
  static py::exception<CompilationCancelledError> cancelled_error(m, "CompilationCancelledError",
                                                                  error.ptr());
  static py::exception<CompilationTimeoutError> timeout_error(m, "CompilationTimeoutError",
                                                              cancelled_error.ptr());
  // GrammarSyntaxError, SchemaError and InvalidArgumentError derive from ValueError; make
  // them XG2Errors too so one `except XG2Error` catches everything the engine raises.
  for (PyObject* cls : {syntax_error.ptr(), schema_error.ptr(), argument_error.ptr()}) {
    py::object bases = py::make_tuple(py::handle(PyExc_ValueError), error);
    PyObject_SetAttrString(cls, "__bases__", bases.ptr());
  }
  // Misuse of a single-caller object is a RuntimeError (not bad input) and an XG2Error.
  PyObject_SetAttrString(concurrent_use_error.ptr(), "__bases__",
                         py::make_tuple(py::handle(PyExc_RuntimeError), error).ptr());
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const RegexError& e) {
      PyErr_SetString(regex_error.ptr(), e.what());
    } catch (const GrammarSyntaxError& e) {
      PyErr_SetString(syntax_error.ptr(), e.what());
    } catch (const UnsupportedSchemaError& e) {
      PyErr_SetString(unsupported.ptr(), e.what());
    } catch (const StructuralTagError& e) {
      PyErr_SetString(structural_tag_error.ptr(), e.what());
    } catch (const SchemaError& e) {
      PyErr_SetString(schema_error.ptr(), e.what());
    } catch (const ResourceLimitError& e) {
      PyErr_SetString(limit_error.ptr(), e.what());
    } catch (const InvalidArgumentError& e) {
      PyErr_SetString(argument_error.ptr(), e.what());
    } catch (const ConcurrentUseError& e) {
      PyErr_SetString(concurrent_use_error.ptr(), e.what());
    } catch (const CompilationTimeoutError& e) {
      PyErr_SetString(timeout_error.ptr(), e.what());
    } catch (const CompilationCancelledError& e) {
      PyErr_SetString(cancelled_error.ptr(), e.what());
    } catch (const Error& e) {
      PyErr_SetString(error.ptr(), e.what());
    }
  });
}

}  // namespace
}  // namespace xg2

PYBIND11_MODULE(_native, m) {
  m.doc() = "xg2 native engine: grammar IR, frontends, tokenizer tables and the Earley matcher";
  xg2::BindExceptions(m);
  auto& registry = xg2::BindingRegistry();
  std::sort(registry.begin(), registry.end(), [](const auto& a, const auto& b) {
    return a.order != b.order ? a.order < b.order : a.name < b.name;
  });
  for (const auto& entry : registry) entry.bind(m);
}
