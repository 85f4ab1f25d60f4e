// ForkSafeMutex: a mutex that fork() never leaves locked in the child.
//
// POSIX fork() copies only the calling thread. A mutex that another thread held at that
// moment stays locked in the child forever, and the data it guarded may be half-updated.
// Serving processes fork while engine threads compile and fill (docs/architecture.md), so
// every lock that outlives one call -- process-wide tables, and the per-object locks of
// objects shared across threads (tokenizer, compiler pool, grammar mask cache) -- is a
// ForkSafeMutex.
//
// Mechanism: one process-wide fork gate, a reader-writer lock. A thread holds the gate
// shared for as long as it holds any ForkSafeMutex (the outermost lock takes it, a
// thread-local depth counts the nesting). One pthread_atfork triple takes the gate
// exclusively before fork -- waiting until every critical section in flight has ended and
// holding new ones at the door -- releases it in the parent and re-initialises it in the
// child. So when fork() copies the process no ForkSafeMutex is held and every structure
// they guard is consistent. The mutexes need no handling of their own, which is why
// per-object locks are covered without a registry of live objects (objects come and go
// while a fork waits; a registry would need a lock of its own, taken in an order that
// depends on which objects are alive).
//
// Lock order (fixed): the gate, then ForkSafeMutexes in their callers' own order. It
// cannot deadlock because
//  * a thread waits at the gate only while it holds no ForkSafeMutex (depth 0);
//  * a critical section runs native code only: it never waits for the GIL, for another
//    thread's progress (a thread-pool batch: WorkerPool::Run checks this in debug builds),
//    or for the forking thread, so the forking thread's wait for readers ends;
//  * a critical section never calls the precompute worker (mask_cache/precompute_worker.cc):
//    its prepare handler holds the worker's lock across fork (checked in debug builds);
//  * the forking thread holds no ForkSafeMutex (the prepare handler aborts with a message
//    otherwise: waiting for itself would hang);
//  * prepare handlers run in reverse order of registration, and the precompute worker's
//    handler (mask_cache/precompute_worker.cc) waits for its item to end, which may take
//    ForkSafeMutexes: the gate's triple is registered before it (at library load, and
//    RegisterForkGate() is called again before that pthread_atfork), so the gate is taken
//    last and released first.
//
// Cost: one uncontended shared acquisition per outermost critical section. ForkSafeMutexes
// guard compile-time tables and classification builds; the mask fill path takes none on a
// cache hit.
#ifndef XG2_SUPPORT_FORK_SAFE_MUTEX_H_
#define XG2_SUPPORT_FORK_SAFE_MUTEX_H_

#include <mutex>

namespace xg2 {

// Registers the fork gate's pthread_atfork triple (once; later calls do nothing).
void RegisterForkGate();

// ForkSafeMutexes the calling thread holds (tests and invariant checks).
int ForkSafeLocksHeld();

namespace fork_gate {
void EnterShared();  // called by the outermost lock of a thread
void LeaveShared();
extern thread_local int depth;
}  // namespace fork_gate

// A std::mutex held inside the fork gate (BasicLockable and Lockable: use it with
// std::lock_guard / std::unique_lock; not with std::condition_variable). The outermost
// lock() or try_lock() of a thread waits at the gate while a fork() is in progress.
class ForkSafeMutex {
 public:
  ForkSafeMutex() = default;
  ForkSafeMutex(const ForkSafeMutex&) = delete;
  ForkSafeMutex& operator=(const ForkSafeMutex&) = delete;

  void lock() {
    if (fork_gate::depth++ == 0) fork_gate::EnterShared();
    mutex_.lock();
  }
  bool try_lock() {
    if (fork_gate::depth++ == 0) fork_gate::EnterShared();
    if (mutex_.try_lock()) return true;
    if (--fork_gate::depth == 0) fork_gate::LeaveShared();
    return false;
  }
  void unlock() {
    mutex_.unlock();
    if (--fork_gate::depth == 0) fork_gate::LeaveShared();
  }

 private:
  std::mutex mutex_;
};

}  // namespace xg2

#endif  // XG2_SUPPORT_FORK_SAFE_MUTEX_H_
