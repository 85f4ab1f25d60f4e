// Batch parallelism for mask filling: `ParallelFor(count, num_threads, task)` runs task(i) for
// i in [0, count) on up to `num_threads` threads (the caller's thread included) and rethrows the
// first exception.
//
// The helpers come from one process-wide `WorkerPool` whose threads are created on first use and
// then sleep between batches. A mask costs microseconds, so a decode step must not pay thread
// creation (tens of microseconds per thread on a VM, which made a 16-row batch cost as much as a
// 64-row one), and the mask cache's per-thread scratch buffers stay allocated across steps.
#ifndef XG2_SUPPORT_THREAD_POOL_H_
#define XG2_SUPPORT_THREAD_POOL_H_

#include <sys/types.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <vector>

namespace xg2 {

class WorkerPool {
 public:
  // The pool of this process. A child created by fork() gets a pool of its own on first use
  // (the parent's threads do not exist there; the parent's pool object is abandoned, not used).
  static WorkerPool& Instance();

  // Runs task(i) for every i in [0, count) using the calling thread plus up to num_threads - 1
  // pool threads; returns when every index has run. Batches from concurrent callers run one
  // after another. The first exception a task throws is rethrown here after the batch ends.
  void Run(int64_t count, int num_threads, const std::function<void(int64_t)>& task);

  // Threads ever started by this pool (observable for tests of reuse).
  int num_workers() const;

 private:
  WorkerPool();
  void GrowTo(int workers);  // requires mutex_
  void WorkerLoop();
  void RunItems();  // claims indices of the current batch until none is left

  const pid_t owner_pid_;
  std::mutex dispatch_mutex_;  // one batch at a time
  mutable std::mutex mutex_;   // guards everything below except next_
  std::condition_variable batch_posted_;
  std::condition_variable batch_left_;
  // Invariants (under mutex_): a worker enters a batch only while seats_ > 0 and it has not yet
  // seen `generation_`; occupied_ counts the workers inside the current batch; the dispatcher
  // sets seats_ to 0 when its own share is done and returns once occupied_ is 0, so no worker
  // touches task_ after Run returns.
  uint64_t generation_ = 0;
  int seats_ = 0;
  int occupied_ = 0;
  int num_workers_ = 0;
  const std::function<void(int64_t)>* task_ = nullptr;
  int64_t count_ = 0;
  std::atomic<int64_t> next_{0};
  std::exception_ptr error_;
};

template <typename Task>
void ParallelFor(int64_t count, int num_threads, const Task& task) {
  if (num_threads <= 1 || count <= 1) {
    for (int64_t i = 0; i < count; ++i) task(i);
    return;
  }
  const std::function<void(int64_t)> wrapped = [&task](int64_t i) { task(i); };
  WorkerPool::Instance().Run(count, num_threads, wrapped);
}

}  // namespace xg2

#endif  // XG2_SUPPORT_THREAD_POOL_H_
