// Python surface of the compile limits and the cancellation token (GrammarCompiler's
// `limits` and `timeout`, Future.cancel()). The exception classes live in module.cc.
#include <pybind11/pybind11.h>

#include <atomic>
#ifndef _WIN32
#include <pthread.h>
#include <signal.h>
#define XG2_HAS_SIGACTION 1
#endif

#include "bindings/registry.h"
#include "bindings/sigint_watch.h"
#include "support/cancellation.h"
#include "support/compile_limits.h"

namespace py = pybind11;

namespace xg2 {

// Ctrl-C during a compile that runs on Python's main thread (GrammarCompiler's synchronous
// compiles; xg2_plugin/_shared_compile.py). Python's own SIGINT handler only marks the signal
// for the interpreter, which cannot act on it before the native compile returns. For the length
// of such a compile this handler takes SIGINT instead and sets a flag that the compile's token
// reads at every safe point (CancellationToken::CancelOnFlag); Python then raises
// KeyboardInterrupt itself. Begin and end run on the main thread with the GIL held, which also
// orders them: only one watch is open at a time.
namespace {

std::atomic<bool> sigint_seen{false};
static_assert(std::atomic<bool>::is_always_lock_free, "the flag is set from a signal handler");
#ifdef XG2_HAS_SIGACTION
struct sigaction python_sigint;  // the disposition replaced while a watch is open
bool watching = false;

void OnSigint(int) { sigint_seen.store(true, std::memory_order_relaxed); }

// A child of fork() started during a watch gets Python's handler back (no compile of its own
// runs there, and the watch would otherwise swallow every Ctrl-C of the child).
void RestoreSigintInChild() {
  if (!watching) return;
  sigaction(SIGINT, &python_sigint, nullptr);
  watching = false;
}
#endif

}  // namespace

bool SigintWatchBegin() {
#ifdef XG2_HAS_SIGACTION
  static const bool registered = pthread_atfork(nullptr, nullptr, &RestoreSigintInChild) == 0;
  if (watching || !registered) return false;
  struct sigaction ours = {};
  ours.sa_handler = &OnSigint;
  sigemptyset(&ours.sa_mask);
  sigint_seen.store(false, std::memory_order_relaxed);
  if (sigaction(SIGINT, &ours, &python_sigint) != 0) return false;
  watching = true;
  return true;
#else
  return false;
#endif
}

bool SigintWatchEnd() {
#ifdef XG2_HAS_SIGACTION
  if (!watching) return false;
  sigaction(SIGINT, &python_sigint, nullptr);
  watching = false;
#endif
  return sigint_seen.exchange(false, std::memory_order_relaxed);
}

const std::atomic<bool>* SigintFlag() { return &sigint_seen; }

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
           "Sets a deadline `seconds` from now (thread-safe, also while the compile runs); +inf removes it.")
      .def(
          "_cancel_on_sigint", [](CancellationToken& self) { self.CancelOnFlag(&sigint_seen); },
          "The compile stops (CompilationCancelledError) once SIGINT arrives during an open _sigint_watch_begin().")
      .def_property_readonly("interrupted", &CancellationToken::interrupted,
                             "SIGINT arrived during the open watch (tokens of _cancel_on_sigint).");

  m.def("_sigint_watch_begin", &SigintWatchBegin,
        "Main thread: SIGINT sets the flag of _cancel_on_sigint tokens instead of reaching Python, until "
        "_sigint_watch_end(). False when the watch could not open (another is open; no sigaction).");
  m.def("_sigint_watch_end", &SigintWatchEnd, "Restores Python's SIGINT handler; True if SIGINT arrived meanwhile.");
}

}  // namespace
}  // namespace xg2

XG2_REGISTER_BINDINGS(5, "compile_options", xg2::BindCompileOptions);
