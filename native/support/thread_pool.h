// Runs `task(i)` for i in [0, count) on up to `num_threads` threads (the caller's thread
// included) and rethrows the first exception. Used for batch mask filling, where each task is
// large (a whole mask), so a fresh set of threads per batch costs little next to the work.
#ifndef XG2_SUPPORT_THREAD_POOL_H_
#define XG2_SUPPORT_THREAD_POOL_H_

#include <atomic>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace xg2 {

template <typename Task>
void ParallelFor(int64_t count, int num_threads, const Task& task) {
  if (num_threads <= 1 || count <= 1) {
    for (int64_t i = 0; i < count; ++i) task(i);
    return;
  }
  std::atomic<int64_t> next{0};
  std::exception_ptr error;
  std::mutex error_mutex;
  auto worker = [&]() {
    for (int64_t i; (i = next.fetch_add(1)) < count;) {
      try {
        task(i);
      } catch (...) {
        std::lock_guard<std::mutex> lock(error_mutex);
        if (!error) error = std::current_exception();
      }
    }
  };
  int spawned = static_cast<int>(std::min<int64_t>(num_threads, count)) - 1;
  std::vector<std::thread> threads;
  threads.reserve(spawned);
  for (int t = 0; t < spawned; ++t) threads.emplace_back(worker);
  worker();
  for (auto& t : threads) t.join();
  if (error) std::rethrow_exception(error);
}

}  // namespace xg2

#endif  // XG2_SUPPORT_THREAD_POOL_H_
