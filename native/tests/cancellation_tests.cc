// support/cancellation.h: the interrupt flag of CancelOnFlag (Ctrl-C during a compile on
// Python's main thread, bindings/compile_options_bindings.cc) stops a compile at its next
// safe point, without cancelling the token.
#include <atomic>

#include "check.h"
#include "support/cancellation.h"

namespace {

using xg2::CancellationToken;
using xg2::CompilationCancelledError;
using xg2::ScopedCancellation;
using xg2::ThrowIfCancelled;

bool Stops() {
  try {
    ThrowIfCancelled();
  } catch (const CompilationCancelledError&) {
    return true;
  }
  return false;
}

TEST(InterruptFlagStopsAtTheNextSafePoint) {
  std::atomic<bool> flag{false};
  CancellationToken token;
  token.CancelOnFlag(&flag);
  ScopedCancellation scope(&token);
  CHECK(!token.interrupted());
  CHECK(!Stops());
  flag.store(true);
  CHECK(token.interrupted());
  CHECK(Stops());
  CHECK(!token.cancelled());  // the flag is the signal's, the token stays usable once it is clear
  flag.store(false);
  CHECK(!Stops());
}

TEST(TokenWithoutFlagIsNeverInterrupted) {
  CancellationToken token;
  ScopedCancellation scope(&token);
  CHECK(!token.interrupted());
  CHECK(!Stops());
  token.CancelOnFlag(nullptr);
  CHECK(!token.interrupted());
}

}  // namespace
