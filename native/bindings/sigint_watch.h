// Ctrl-C during a compile that runs on Python's main thread (compile_options_bindings.cc has
// the mechanism and its reasons): while a watch is open, SIGINT sets a flag that the compile's
// token reads at every safe point instead of reaching Python.
#ifndef XG2_BINDINGS_SIGINT_WATCH_H_
#define XG2_BINDINGS_SIGINT_WATCH_H_

#include <atomic>

namespace xg2 {

// Installs the watch; false where it cannot (another watch is open, or no sigaction). Main
// thread, GIL held.
bool SigintWatchBegin();
// Puts Python's handler back; true when SIGINT arrived while the watch was open.
bool SigintWatchEnd();
// The flag a token passes to CancellationToken::CancelOnFlag to stop on SIGINT.
const std::atomic<bool>* SigintFlag();

}  // namespace xg2

#endif  // XG2_BINDINGS_SIGINT_WATCH_H_
