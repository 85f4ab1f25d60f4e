// support/fork_safe_mutex.h: the nesting count, the thread-pool check, and fork() while
// another thread holds a ForkSafeMutex.
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>

#include "check.h"
#include "support/dcheck.h"
#include "support/fork_safe_mutex.h"
#include "support/thread_pool.h"

namespace {

using xg2::ForkSafeLocksHeld;
using xg2::ForkSafeMutex;

TEST(ForkSafeMutexCountsNestedLocks) {
  ForkSafeMutex outer, inner;
  CHECK_EQ(ForkSafeLocksHeld(), 0);
  {
    std::lock_guard<ForkSafeMutex> a(outer);
    CHECK_EQ(ForkSafeLocksHeld(), 1);
    {
      std::lock_guard<ForkSafeMutex> b(inner);
      CHECK_EQ(ForkSafeLocksHeld(), 2);
    }
    CHECK_EQ(ForkSafeLocksHeld(), 1);
    // A failed try_lock leaves the count (and the gate) as it was.
    bool got = true;
    int held_after = -1;
    std::thread other([&] {
      got = outer.try_lock();
      held_after = ForkSafeLocksHeld();
    });
    other.join();
    CHECK(!got);
    CHECK_EQ(held_after, 0);
  }
  CHECK_EQ(ForkSafeLocksHeld(), 0);
  CHECK(outer.try_lock());
  CHECK_EQ(ForkSafeLocksHeld(), 1);
  outer.unlock();
  CHECK_EQ(ForkSafeLocksHeld(), 0);
}

TEST(ThreadPoolBatchInsideForkSafeMutexIsRefused) {
  ForkSafeMutex mutex;
  std::lock_guard<ForkSafeMutex> lock(mutex);
  CHECK_THROWS(xg2::ParallelFor(4, 2, [](int64_t) {}), xg2::InternalError, "ForkSafeMutex");
}

// The holder keeps the lock a while after saying so, so that fork() is called while it is
// held; the gate makes fork() wait for the release. Without the gate the child would find
// the lock taken by a thread that does not exist there.
TEST(ForkWaitsUntilNoForkSafeMutexIsHeld) {
  ForkSafeMutex mutex;
  std::atomic<bool> holding{false};
  std::thread holder([&] {
    std::lock_guard<ForkSafeMutex> lock(mutex);
    holding = true;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  });
  while (!holding) std::this_thread::yield();
  const pid_t pid = fork();
  if (pid == 0) {
    const bool free_in_child = mutex.try_lock();
    _exit(free_in_child ? 0 : 1);
  }
  holder.join();
  int status = 0;
  CHECK_EQ(waitpid(pid, &status, 0), pid);
  CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

}  // namespace
