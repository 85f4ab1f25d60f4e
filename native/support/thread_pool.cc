#include "support/thread_pool.h"

#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <thread>

#include "support/dcheck.h"
#include "support/fork_safe_mutex.h"

namespace xg2 {
namespace {

// More threads than cores never speeds up CPU-bound filling; the bound also keeps a careless
// max_threads from starting thousands of threads. Twice the cores leaves room for tests that
// exercise concurrency on small machines.
int MaxWorkers() {
  unsigned cores = std::thread::hardware_concurrency();
  return static_cast<int>(std::max(2u, cores) * 2);
}

}  // namespace

WorkerPool& WorkerPool::Instance() {
  // Pools are never destroyed: workers sleep in a condition variable until the process exits,
  // and a pool abandoned by fork() may hold locks taken by threads that no longer exist.
  static std::atomic<WorkerPool*> current{nullptr};
  WorkerPool* pool = current.load(std::memory_order_acquire);
  if (pool == nullptr || pool->owner_pid_ != getpid()) {
    auto* fresh = new WorkerPool();
    if (current.compare_exchange_strong(pool, fresh, std::memory_order_acq_rel)) {
      pool = fresh;
    } else {
      delete fresh;  // another thread of this process installed one first; `pool` is it
    }
  }
  return *pool;
}

WorkerPool::WorkerPool() : owner_pid_(getpid()) {}

int WorkerPool::num_workers() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return num_workers_;
}

void WorkerPool::GrowTo(int workers) {
  for (; num_workers_ < workers; ++num_workers_) {
    std::thread worker([this] { WorkerLoop(); });
    // Named here rather than by the thread itself, so the name is in place when Run returns.
    pthread_setname_np(worker.native_handle(), "xg2-fill");  // top -H, /proc/<pid>/task/*/comm
    worker.detach();
  }
}

void WorkerPool::RunItems() {
  for (int64_t i; (i = next_.fetch_add(1, std::memory_order_relaxed)) < count_;) {
    try {
      (*task_)(i);
    } catch (...) {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!error_) error_ = std::current_exception();
    }
  }
}

void WorkerPool::WorkerLoop() {
  uint64_t seen = 0;
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    batch_posted_.wait(lock, [&] { return generation_ != seen && seats_ > 0; });
    seen = generation_;
    --seats_;
    ++occupied_;
    lock.unlock();
    RunItems();
    lock.lock();
    if (--occupied_ == 0) batch_left_.notify_all();
  }
}

void WorkerPool::Run(int64_t count, int num_threads, const std::function<void(int64_t)>& task) {
  // A batch waits for other threads, which may wait at the fork gate (support/fork_safe_mutex.h).
  XG2_DCHECK(ForkSafeLocksHeld() == 0, "a thread-pool batch started while holding a ForkSafeMutex");
  std::lock_guard<std::mutex> dispatch(dispatch_mutex_);
  const int helpers = static_cast<int>(std::min<int64_t>({count, num_threads, MaxWorkers()})) - 1;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    GrowTo(helpers);
    task_ = &task;
    count_ = count;
    next_.store(0, std::memory_order_relaxed);
    error_ = nullptr;
    seats_ = helpers;
    ++generation_;
  }
  if (helpers > 0) batch_posted_.notify_all();
  RunItems();
  std::exception_ptr error;
  {
    std::unique_lock<std::mutex> lock(mutex_);
    seats_ = 0;  // workers that wake from now on stay out of this batch
    batch_left_.wait(lock, [&] { return occupied_ == 0; });
    task_ = nullptr;
    error = error_;
    error_ = nullptr;
  }
  if (error) std::rethrow_exception(error);
}

}  // namespace xg2
