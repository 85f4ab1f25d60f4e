#include "matcher/mask_cache/precompute_worker.h"

#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>
#include <new>
#include <thread>
#ifdef __linux__
#include <pthread.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

#include "matcher/token_mask_cache.h"
#include "matcher/vocabulary_index.h"
#include "support/dcheck.h"
#include "support/fork_safe_mutex.h"

namespace xg2 {

namespace {

// The process's background threads, one per kind of work:
//  * kPrecompute: the partial JIT (paper section 3.2), shared by every grammar of the process
//    so that compiling many grammars never piles up threads competing with the serving
//    threads. Jobs are taken newest grammar first (the one a matcher is most likely serving
//    right now); within a job nodes are built in the job's order, and a newer job pre-empts
//    the current one between two nodes. A job holds its cache weakly: a grammar dropped
//    before its turn costs nothing. Matchers never wait for the worker: a node they need
//    that is not built yet they build themselves (GrammarMaskCache::Get), and the worker
//    then finds it built. It runs at the lowest priority: its work is optional.
//  * kTables: the tokenizer tables a classification asked for (a class's prefix table). A
//    table is built once per process and every later classification over its class reads
//    it, while until it is there each one walks the trie the slow way (hundreds of
//    microseconds per fill, on every node of a UUID or a pattern's character class). At the
//    lowest priority on a loaded machine it never arrived (bench/fill_tail.py), so this
//    thread runs at the default priority; its work is bounded by the tables kept
//    (VocabularyIndex::kMaxClassTables).
// Fork: each worker pauses between two items for the fork (see BeforeFork). A precompute
// item may submit to the tables worker (a classification requesting a table), never the
// reverse, so the precompute worker must pause first: prepare handlers run in reverse order
// of registration, and the tables worker is registered before it (Instance). Lock order: a
// precompute worker's mutex_, then the tables worker's (StartLocked), never the reverse.
enum class WorkerKind { kPrecompute, kTables };

class PrecomputeWorker {
 public:
  template <WorkerKind kKind>
  static PrecomputeWorker& Instance() {
    // Leaked on purpose: the detached thread may still run while static objects are
    // destroyed at exit.
    static PrecomputeWorker* worker = [] {
      if constexpr (kKind == WorkerKind::kPrecompute) Instance<WorkerKind::kTables>();  // registered first
      auto* created = new PrecomputeWorker(kKind == WorkerKind::kPrecompute);
      RegisterForkGate();  // first, so the gate is taken after this pause (support/fork_safe_mutex.h)
      pthread_atfork(&BeforeFork<kKind>, &AfterForkInParent<kKind>, &AfterForkInChild<kKind>);
      return created;
    }();
    XG2_DCHECK(ForkSafeLocksHeld() == 0, "precompute worker used inside a ForkSafeMutex section");
    return *worker;
  }

  void Submit(std::weak_ptr<GrammarMaskCache> cache, std::vector<NodeId> nodes) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      jobs_.push_back({std::move(cache), std::move(nodes), 0});
      StartLocked();
    }
    wake_.notify_all();
  }
  // A task that makes later classifications cheaper (a tokenizer table); tasks run before
  // node jobs, oldest first.
  void SubmitTask(std::function<void()> task) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      tasks_.push_back(std::move(task));
      StartLocked();
    }
    wake_.notify_all();
  }
  // Blocks until no task or job is queued or running (tests: a deterministic state).
  void WaitIdle() {
    std::unique_lock<std::mutex> lock(mutex_);
    if (!tasks_.empty() || !jobs_.empty()) StartLocked();  // a child of fork() restarts here too
    idle_.wait(lock, [this]() { return tasks_.empty() && jobs_.empty() && !busy_; });
  }

 private:
  explicit PrecomputeWorker(bool lowest_priority) : lowest_priority_(lowest_priority) {}

  struct Job {
    std::weak_ptr<GrammarMaskCache> cache;
    std::vector<NodeId> nodes;
    size_t next;
  };

  // fork() copies only the forking thread: the worker thread does not exist in the child.
  // The parent pauses the worker between two items for the fork, so the child inherits no
  // lock held by it (a grammar's cache, a pool) and a queue in a consistent state; the child
  // keeps the queue and starts its own thread on the next submission.
  template <WorkerKind kKind>
  static void BeforeFork() {
    PrecomputeWorker& self = Instance<kKind>();
    std::unique_lock<std::mutex> lock(self.mutex_);
    self.fork_pending_ = true;
    self.paused_.wait(lock, [&self]() { return !self.busy_; });
    lock.release();  // held across fork(); the handlers below unlock it
  }
  template <WorkerKind kKind>
  static void AfterForkInParent() {
    PrecomputeWorker& self = Instance<kKind>();
    self.fork_pending_ = false;
    self.mutex_.unlock();
    self.wake_.notify_all();
  }
  template <WorkerKind kKind>
  static void AfterForkInChild() {
    PrecomputeWorker& self = Instance<kKind>();
    // The parent's worker was waiting on wake_ (and other threads may have waited on idle_):
    // those waiters do not exist here, but a glibc condition variable still counts them, and
    // its next notify_all would block for ever waiting for them to leave. Nothing in the child
    // waits on these yet, so each is constructed afresh (not destroyed: that is undefined
    // with waiters recorded, and they own no memory).
    new (&self.wake_) std::condition_variable();
    new (&self.idle_) std::condition_variable();
    new (&self.paused_) std::condition_variable();
    self.fork_pending_ = false;
    self.started_ = false;
    self.busy_ = false;
    self.mutex_.unlock();
  }

  void StartLocked() {
    if (started_) return;
    started_ = true;
    // A thread starts at its creator's priority. The tables worker's first request may come
    // from a precompute item (a classification on the lowest-priority thread), so its thread
    // is started with the precompute worker's, here on a foreground thread (a compile).
    if (lowest_priority_) Instance<WorkerKind::kTables>().EnsureStarted();
    std::thread([this]() { Run(); }).detach();
  }
  void EnsureStarted() {
    std::lock_guard<std::mutex> lock(mutex_);
    StartLocked();
  }

  void Run() {
#ifdef __linux__
    // Lowest priority for this thread alone (Linux nice is per thread): the precompute is
    // optional work and must not slow the compiles and fills that run in the foreground.
    if (lowest_priority_) setpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid)), 19);
    // Named for `top -H` and for tests/matcher/test_background_threads.py (15 bytes at most).
    pthread_setname_np(pthread_self(), lowest_priority_ ? "xg2-precompute" : "xg2-tables");
#endif
    for (;;) {
      std::shared_ptr<GrammarMaskCache> cache;
      NodeId node = -1;
      std::function<void()> task;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        busy_ = false;
        if (tasks_.empty() && jobs_.empty()) idle_.notify_all();
        if (fork_pending_) paused_.notify_all();
        wake_.wait(lock, [this]() { return !fork_pending_ && (!tasks_.empty() || !jobs_.empty()); });
        busy_ = true;
        if (!tasks_.empty()) {
          task = std::move(tasks_.front());
          tasks_.pop_front();
        } else {
          Job& job = jobs_.back();
          cache = job.cache.lock();
          if (cache && job.next < job.nodes.size()) node = job.nodes[job.next++];
          if (!cache || job.next >= job.nodes.size()) jobs_.pop_back();
        }
      }
      // Background work is optional: a failure (out of memory) only loses the shortcut.
      try {
        if (task) task();
        if (node >= 0) cache->Get(node);
      } catch (const std::exception&) {
      }
    }
  }

  const bool lowest_priority_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::condition_variable idle_;
  std::condition_variable paused_;  // the worker is between items while a fork is pending
  std::vector<Job> jobs_;  // the newest at the back
  std::deque<std::function<void()>> tasks_;
  bool started_ = false;
  bool busy_ = false;  // the thread is running a task or a node
  bool fork_pending_ = false;  // a thread is in fork(): the worker takes no new item
};

}  // namespace

void RequestClassPrefixTable(const TokenizerInfo& tokenizer, const CharacterClass& cls) {
  std::weak_ptr<const TokenizerInfo> weak = tokenizer.weak_from_this();
  PrecomputeWorker::Instance<WorkerKind::kTables>().SubmitTask([weak, cls]() {
    if (std::shared_ptr<const TokenizerInfo> alive = weak.lock()) VocabularyIndex::Of(*alive).BuildClassPrefixTable(cls);
  });
}

void SubmitPrecompute(std::weak_ptr<GrammarMaskCache> cache, std::vector<NodeId> nodes) {
  PrecomputeWorker::Instance<WorkerKind::kPrecompute>().Submit(std::move(cache), std::move(nodes));
}

void SubmitBackgroundTask(std::function<void()> task) {
  PrecomputeWorker::Instance<WorkerKind::kPrecompute>().SubmitTask(std::move(task));
}

void WaitForBackgroundWork() {
  // The precompute's items may queue tables, the tables' never queue precompute work: once
  // the precompute worker is idle, the tables worker's queue only shrinks.
  PrecomputeWorker::Instance<WorkerKind::kPrecompute>().WaitIdle();
  PrecomputeWorker::Instance<WorkerKind::kTables>().WaitIdle();
}

}  // namespace xg2
