#include "support/fork_safe_mutex.h"

#include <pthread.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace xg2 {
namespace fork_gate {

thread_local int depth = 0;

namespace {

// Writers first: a fork waiting for the gate must not starve behind a stream of compiles.
// A thread enters at most once (depth), so a reader never waits behind a writer while it
// already holds the gate.
#ifdef PTHREAD_RWLOCK_WRITER_NONRECURSIVE_INITIALIZER_NP
#define XG2_FORK_GATE_INITIALIZER PTHREAD_RWLOCK_WRITER_NONRECURSIVE_INITIALIZER_NP
#else
#define XG2_FORK_GATE_INITIALIZER PTHREAD_RWLOCK_INITIALIZER
#endif

// Statically initialised: usable before RegisterForkGate runs, with no first-use check.
pthread_rwlock_t gate = XG2_FORK_GATE_INITIALIZER;

void Fail(const char* what) {
  std::fprintf(stderr, "xg2: fork gate: %s\n", what);
  std::abort();
}

void BeforeFork() {
  if (depth != 0) Fail("fork() called while this thread holds a ForkSafeMutex");
  if (pthread_rwlock_wrlock(&gate) != 0) Fail("cannot take the gate before fork()");
}

void AfterForkInParent() {
  if (pthread_rwlock_unlock(&gate) != 0) Fail("cannot release the gate after fork()");
}

// The child's only thread is the one that took the gate; glibc records the writer by its
// thread id, which the child does not share, so the gate is re-initialised, not unlocked.
// No other thread exists to observe it.
void AfterForkInChild() {
  const pthread_rwlock_t fresh = XG2_FORK_GATE_INITIALIZER;
  std::memcpy(static_cast<void*>(&gate), &fresh, sizeof gate);
}

// At library load, before any engine code can register a handler of its own.
const bool registered_at_load = (RegisterForkGate(), true);

}  // namespace

void EnterShared() {
  if (pthread_rwlock_rdlock(&gate) != 0) Fail("cannot enter the gate");
}

void LeaveShared() {
  if (pthread_rwlock_unlock(&gate) != 0) Fail("cannot leave the gate");
}

}  // namespace fork_gate

void RegisterForkGate() {
  static std::once_flag once;
  std::call_once(once, [] {
    if (pthread_atfork(&fork_gate::BeforeFork, &fork_gate::AfterForkInParent, &fork_gate::AfterForkInChild) != 0) {
      fork_gate::Fail("pthread_atfork failed");
    }
  });
}

int ForkSafeLocksHeld() { return fork_gate::depth; }

}  // namespace xg2
