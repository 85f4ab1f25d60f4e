// The compiled-grammar cache of one compiler: an LRU bounded in bytes, keyed by the full
// compile key (source kind, source text and every option that changes the grammar), and the
// table of compiles in flight, so that concurrent callers of one key share one compile
// (issue 39: the cache and the in-flight table move from Python into native/compiler/).
//
// Sharing: the first caller of a key that is neither cached nor in flight runs the compile on
// its own thread under its own cancellation token; callers of that key arriving meanwhile wait
// for it, each watching its own token. The outcome is shared, a caller's cancellation never is:
//  * success: the value is stored (unless caching is off, or it alone exceeds the bound) and
//    handed to every waiter;
//  * the runner stopped on CompilationCancelledError (its cancel, its timeout, Ctrl-C): the
//    runner gets that error and the compile is abandoned; a waiter takes over and compiles
//    anew under its own token, so a cancelled or timed-out caller never fails another;
//  * any other error: the waiters of that compile get it too (the same input fails the same
//    way), and nothing is stored: the next request compiles again;
//  * a waiter whose token fires leaves with its own error; the compile goes on.
//
// Value is what a compile returns and the cache hands out (a shared_ptr: copies are cheap
// and never outlive what they point to). Thread-safe; fork-safe as far as a ForkSafeMutex is
// (support/fork_safe_mutex.h): no critical section is in flight when fork() copies the
// process; in the child ResetAfterFork() abandons the compiles whose threads did not survive.
#ifndef XG2_COMPILER_COMPILE_CACHE_H_
#define XG2_COMPILER_COMPILE_CACHE_H_

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "support/cancellation.h"
#include "support/dcheck.h"
#include "support/fork_safe_mutex.h"

namespace xg2 {

struct CompileCacheStats {
  size_t entries = 0;
  size_t bytes = 0;         // bytes charged for the entries held
  int64_t limit_bytes = 0;  // -1: unbounded
  // Each request counts once, at its first look: a hit when a value was cached or a compile of
  // its key was in flight (a waiter that later takes over an abandoned compile stays a hit), a
  // miss when it started the compile.
  uint64_t hits = 0;
  uint64_t misses = 0;
  uint64_t evictions = 0;
};

template <typename Value>
class CompileCache {
 public:
  // A compile's value and the bytes to charge for it (measured once, when stored).
  struct Built {
    Value value;
    size_t bytes = 0;
  };
  using Compile = std::function<Built(const CancellationToken* cancel)>;

  // `limit_bytes` -1: unbounded. `enabled` false: nothing is stored, identical concurrent
  // compiles are still shared.
  CompileCache(int64_t limit_bytes, bool enabled) : limit_bytes_(limit_bytes), enabled_(enabled) {}
  CompileCache(const CompileCache&) = delete;
  CompileCache& operator=(const CompileCache&) = delete;

  // The cached value of `key`, or the value of one compile of it shared with the concurrent
  // callers of `key` (see the file comment). Throws the compile's error, or the caller's own
  // cancellation error when `cancel` fires while it waits.
  Value GetOrCompile(const std::string& key, const Compile& compile, const CancellationToken* cancel);

  // The cached value of `key` (refreshed as most recently used), counted as a hit; no compile.
  std::optional<Value> Find(const std::string& key);

  // Drops every cached value (compiles in flight finish and store theirs).
  void Clear();
  CompileCacheStats stats() const;
  // Keys with a compile in flight now.
  size_t in_flight() const;
  // In a child of fork(): the compiles in flight ran on threads that do not exist here; their
  // entries are dropped (a caller joining one would wait forever). Cached values stay.
  void ResetAfterFork();

 private:
  // One compile in flight, shared by its runner and its waiters.
  struct Job {
    std::condition_variable_any finished;
    bool done = false;
    bool abandoned = false;  // the runner was cancelled: a waiter compiles anew
    std::optional<Value> value;
    std::exception_ptr error;
  };
  using Lru = std::list<std::pair<std::string, std::pair<Value, size_t>>>;  // most recent first

  // How long a waiter with a token sleeps between looks at it: the token has no waitable
  // event, and a cancellation must not wait for the compile.
  static constexpr std::chrono::milliseconds kTokenPoll{2};

  Value Run(const std::string& key, const std::shared_ptr<Job>& job, const Compile& compile,
            const CancellationToken* cancel, std::unique_lock<ForkSafeMutex>& lock);
  // The job's value, or its error; nullopt when it was abandoned (the caller then retries).
  std::optional<Value> Wait(const std::shared_ptr<Job>& job, const CancellationToken* cancel,
                            std::unique_lock<ForkSafeMutex>& lock);
  // Stores `value` and evicts least recently used entries past the bound into `evicted` (to be
  // destroyed outside the lock: a value's destructor may take locks of its own).
  void StoreLocked(const std::string& key, const Value& value, size_t bytes, Lru& evicted);
  void CheckInvariantsLocked() const;

  mutable ForkSafeMutex mutex_;
  const int64_t limit_bytes_;
  const bool enabled_;
  Lru lru_;
  std::unordered_map<std::string, typename Lru::iterator> index_;
  std::unordered_map<std::string, std::shared_ptr<Job>> in_flight_;
  size_t bytes_ = 0;
  uint64_t hits_ = 0;
  uint64_t misses_ = 0;
  uint64_t evictions_ = 0;
};

template <typename Value>
Value CompileCache<Value>::GetOrCompile(const std::string& key, const Compile& compile,
                                        const CancellationToken* cancel) {
  std::unique_lock<ForkSafeMutex> lock(mutex_);
  bool counted = false;
  while (true) {
    if (auto it = index_.find(key); it != index_.end()) {
      lru_.splice(lru_.begin(), lru_, it->second);
      if (!counted) ++hits_;
      return it->second->second.first;
    }
    auto [slot, fresh] = in_flight_.try_emplace(key);
    if (fresh) {
      if (!counted) ++misses_;
      auto job = std::make_shared<Job>();  // owned here too: Run erases the table's entry
      slot->second = job;
      return Run(key, job, compile, cancel, lock);
    }
    if (!counted) ++hits_;
    counted = true;
    std::shared_ptr<Job> job = slot->second;
    if (std::optional<Value> value = Wait(job, cancel, lock)) return *std::move(value);
  }
}

template <typename Value>
Value CompileCache<Value>::Run(const std::string& key, const std::shared_ptr<Job>& job, const Compile& compile,
                               const CancellationToken* cancel, std::unique_lock<ForkSafeMutex>& lock) {
  lock.unlock();
  std::optional<Built> built;
  std::exception_ptr error;
  bool cancelled = false;
  try {
    built = compile(cancel);
  } catch (const CompilationCancelledError&) {
    error = std::current_exception();
    cancelled = true;
  } catch (...) {
    error = std::current_exception();
  }
  Lru evicted;
  lock.lock();
  // After ResetAfterFork the key may name another job (or none): only this job's entry goes.
  if (auto it = in_flight_.find(key); it != in_flight_.end() && it->second == job) in_flight_.erase(it);
  job->done = true;
  job->abandoned = cancelled;
  if (built) {
    StoreLocked(key, built->value, built->bytes, evicted);
    job->value = built->value;
  } else if (!cancelled) {
    job->error = error;
  }
  XG2_DCHECK_INVARIANTS(CheckInvariantsLocked());
  job->finished.notify_all();
  lock.unlock();
  if (error) std::rethrow_exception(error);
  return std::move(built->value);
}

template <typename Value>
std::optional<Value> CompileCache<Value>::Wait(const std::shared_ptr<Job>& job, const CancellationToken* cancel,
                                               std::unique_lock<ForkSafeMutex>& lock) {
  while (!job->done) {
    if (cancel == nullptr) {
      job->finished.wait(lock);
      continue;
    }
    job->finished.wait_for(lock, kTokenPoll);
    if (job->done) break;
    lock.unlock();
    cancel->Check(true);  // throws this caller's own error; the compile goes on for the others
    lock.lock();
  }
  if (job->abandoned) return std::nullopt;
  if (job->error) std::rethrow_exception(job->error);
  return job->value;
}

template <typename Value>
std::optional<Value> CompileCache<Value>::Find(const std::string& key) {
  std::lock_guard<ForkSafeMutex> lock(mutex_);
  auto it = index_.find(key);
  if (it == index_.end()) return std::nullopt;
  lru_.splice(lru_.begin(), lru_, it->second);
  ++hits_;
  return it->second->second.first;
}

template <typename Value>
void CompileCache<Value>::StoreLocked(const std::string& key, const Value& value, size_t bytes, Lru& evicted) {
  if (!enabled_ || (limit_bytes_ >= 0 && bytes > static_cast<uint64_t>(limit_bytes_))) return;
  if (auto it = index_.find(key); it != index_.end()) {  // stored meanwhile (after a Clear, say)
    bytes_ -= it->second->second.second;
    evicted.splice(evicted.end(), lru_, it->second);
    index_.erase(it);
  }
  lru_.emplace_front(key, std::make_pair(value, bytes));
  index_.emplace(key, lru_.begin());
  bytes_ += bytes;
  while (limit_bytes_ >= 0 && bytes_ > static_cast<uint64_t>(limit_bytes_)) {
    XG2_DCHECK(lru_.size() > 1, "an entry larger than the cache's bound was stored");
    bytes_ -= lru_.back().second.second;
    index_.erase(lru_.back().first);
    evicted.splice(evicted.end(), lru_, std::prev(lru_.end()));
    ++evictions_;
  }
}

template <typename Value>
void CompileCache<Value>::Clear() {
  Lru dropped;  // destroyed outside the lock: a value's destructor may take locks of its own
  {
    std::lock_guard<ForkSafeMutex> lock(mutex_);
    dropped.swap(lru_);
    index_.clear();
    bytes_ = 0;
  }
}

template <typename Value>
CompileCacheStats CompileCache<Value>::stats() const {
  std::lock_guard<ForkSafeMutex> lock(mutex_);
  CompileCacheStats out;
  out.entries = lru_.size();
  out.bytes = bytes_;
  out.limit_bytes = limit_bytes_;
  out.hits = hits_;
  out.misses = misses_;
  out.evictions = evictions_;
  return out;
}

template <typename Value>
size_t CompileCache<Value>::in_flight() const {
  std::lock_guard<ForkSafeMutex> lock(mutex_);
  return in_flight_.size();
}

template <typename Value>
void CompileCache<Value>::ResetAfterFork() {
  std::lock_guard<ForkSafeMutex> lock(mutex_);
  // Leaked on purpose: a job's condition variable may have been in use by a thread of the
  // parent when the process forked, so it is neither notified nor destroyed here.
  static auto* orphans = new std::vector<std::shared_ptr<Job>>();
  for (auto& [key, job] : in_flight_) orphans->push_back(std::move(job));
  in_flight_.clear();
}

template <typename Value>
void CompileCache<Value>::CheckInvariantsLocked() const {
  XG2_DCHECK(index_.size() == lru_.size(), "the cache's index and LRU list disagree");
  size_t total = 0;
  for (const auto& entry : lru_) {
    auto it = index_.find(entry.first);
    XG2_DCHECK(it != index_.end() && &*it->second == &entry, "an LRU entry is missing from the index");
    total += entry.second.second;
  }
  XG2_DCHECK(total == bytes_, "the cache's byte count differs from its entries' charges");
  XG2_DCHECK(limit_bytes_ < 0 || bytes_ <= static_cast<uint64_t>(limit_bytes_), "the cache holds more than its bound");
  for (const auto& entry : in_flight_) XG2_DCHECK(!entry.second->done, "a finished compile is still in flight");
}

}  // namespace xg2

#endif  // XG2_COMPILER_COMPILE_CACHE_H_
