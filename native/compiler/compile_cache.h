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
// Shared parts: a value may hold a part that other values share (a grammar naming tokens holds
// its derived vocabulary, about as large as the tokenizer's tables: derived_vocabularies.h). The
// part is an entry of its own, charged once and kept just older than its most recently used
// holder; evicting it evicts its holders with it and runs its `on_evict` (outside the lock),
// while evicting a holder leaves the part until it is the oldest entry.
//
// Value is what a compile returns and the cache hands out (a shared_ptr: copies are cheap
// and never outlive what they point to). Thread-safe; fork-safe as far as a ForkSafeMutex is
// (support/fork_safe_mutex.h): no critical section is in flight when fork() copies the
// process; in the child ResetAfterFork() abandons the compiles whose threads did not survive.
#ifndef XG2_COMPILER_COMPILE_CACHE_H_
#define XG2_COMPILER_COMPILE_CACHE_H_

#include <algorithm>
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
  size_t entries = 0;       // values (shared parts not counted)
  size_t shared_parts = 0;
  size_t bytes = 0;         // bytes charged for the entries held
  int64_t limit_bytes = 0;  // -1: unbounded
  // Each request counts once, at its first look: a hit when a value was cached or a compile of
  // its key was in flight (a waiter that later takes over an abandoned compile stays a hit), a
  // miss when it started the compile.
  uint64_t hits = 0;
  uint64_t misses = 0;
  uint64_t evictions = 0;  // entries evicted as the oldest (not the holders of an evicted part)
};

template <typename Value>
class CompileCache {
 public:
  // A part that values share (see the file comment); keys of parts and of values are apart.
  struct SharedPart {
    std::string key;
    size_t bytes = 0;                 // charged when the part is first stored
    std::function<void()> on_evict;  // run when the part is evicted or cleared (may be empty; must not throw)
  };
  // A compile's value and the bytes to charge for it (measured once, when stored).
  struct Built {
    Value value;
    size_t bytes = 0;
    std::optional<SharedPart> part;
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

  // Drops every cached value and part, running the parts' on_evict (compiles in flight finish
  // and store theirs).
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
  // A cached value, or a shared part (no value; its holders' keys and its on_evict).
  struct Entry {
    std::string key;
    std::optional<Value> value;
    size_t bytes = 0;
    std::string part_key;  // a value's part; empty: none
    std::vector<std::string> holders;  // a part's holders, in no order
    std::function<void()> on_evict;
  };
  using Lru = std::list<Entry>;  // most recent first
  using Index = std::unordered_map<std::string, typename Lru::iterator>;

  // How long a waiter with a token sleeps between looks at it: the token has no waitable
  // event, and a cancellation must not wait for the compile.
  static constexpr std::chrono::milliseconds kTokenPoll{2};

  Value Run(const std::string& key, const std::shared_ptr<Job>& job, const Compile& compile,
            const CancellationToken* cancel, std::unique_lock<ForkSafeMutex>& lock);
  // The job's value, or its error; nullopt when it was abandoned (the caller then retries).
  std::optional<Value> Wait(const std::shared_ptr<Job>& job, const CancellationToken* cancel,
                            std::unique_lock<ForkSafeMutex>& lock);
  // Stores `built` (moved from: what it keeps is destroyed by the caller, after unlocking) and
  // evicts least recently used entries past the bound into `evicted` (to be destroyed, and
  // their on_evict run, outside the lock). Nothing is destroyed under the lock: a value's
  // destructor may take locks of its own (a Python object's, the GIL).
  void StoreLocked(const std::string& key, Built& built, Lru& evicted);
  // Moves the value entry `it` (and its part, just behind it) to the front.
  void TouchLocked(typename Lru::iterator it);
  // Moves the value entry `it` into `out`, uncharged, out of its part's holders.
  void UnlinkValueLocked(typename Lru::iterator it, Lru& out);
  // Moves the oldest entry into `out` (with its holders when it is a part).
  void EvictOldestLocked(Lru& out);
  static void Release(Lru& evicted);
  void CheckInvariantsLocked() const;

  mutable ForkSafeMutex mutex_;
  const int64_t limit_bytes_;
  const bool enabled_;
  Lru lru_;
  Index index_;  // values
  Index parts_;
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
      TouchLocked(it->second);
      if (!counted) ++hits_;
      return *it->second->value;
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
    job->value = built->value;
    StoreLocked(key, *built, evicted);
  } else if (!cancelled) {
    job->error = error;
  }
  XG2_DCHECK_INVARIANTS(CheckInvariantsLocked());
  job->finished.notify_all();
  lock.unlock();
  Release(evicted);
  if (error) std::rethrow_exception(error);
  return *job->value;  // set before `done`, never changed after
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
  TouchLocked(it->second);
  ++hits_;
  return *it->second->value;
}

template <typename Value>
void CompileCache<Value>::TouchLocked(typename Lru::iterator it) {
  if (!it->part_key.empty()) lru_.splice(lru_.begin(), lru_, parts_.at(it->part_key));
  lru_.splice(lru_.begin(), lru_, it);
}

template <typename Value>
void CompileCache<Value>::StoreLocked(const std::string& key, Built& built, Lru& evicted) {
  if (!enabled_ || (limit_bytes_ >= 0 && built.bytes > static_cast<uint64_t>(limit_bytes_))) return;
  if (auto it = index_.find(key); it != index_.end()) UnlinkValueLocked(it->second, evicted);  // stored meanwhile
  Entry entry;
  entry.key = key;
  entry.value = std::move(built.value);
  entry.bytes = built.bytes;
  if (built.part) {
    SharedPart& part = *built.part;
    auto found = parts_.find(part.key);
    if (found == parts_.end()) {
      Entry part_entry;
      part_entry.key = part.key;
      part_entry.bytes = part.bytes;
      part_entry.on_evict = std::move(part.on_evict);
      lru_.push_front(std::move(part_entry));
      found = parts_.emplace(part.key, lru_.begin()).first;
      bytes_ += part.bytes;
    } else {
      lru_.splice(lru_.begin(), lru_, found->second);
    }
    found->second->holders.push_back(key);
    entry.part_key = part.key;
  }
  lru_.push_front(std::move(entry));
  index_.emplace(key, lru_.begin());
  bytes_ += built.bytes;
  while (limit_bytes_ >= 0 && bytes_ > static_cast<uint64_t>(limit_bytes_) && !lru_.empty()) {
    EvictOldestLocked(evicted);
  }
}

template <typename Value>
void CompileCache<Value>::UnlinkValueLocked(typename Lru::iterator it, Lru& out) {
  if (!it->part_key.empty()) {
    std::vector<std::string>& holders = parts_.at(it->part_key)->holders;
    holders.erase(std::find(holders.begin(), holders.end(), it->key));
  }
  bytes_ -= it->bytes;
  index_.erase(it->key);
  out.splice(out.end(), lru_, it);
}

template <typename Value>
void CompileCache<Value>::EvictOldestLocked(Lru& out) {
  auto oldest = std::prev(lru_.end());
  ++evictions_;
  if (oldest->value) {
    UnlinkValueLocked(oldest, out);
    return;
  }
  for (const std::string& holder : oldest->holders) {
    auto it = index_.find(holder);
    XG2_DCHECK(it != index_.end(), "a shared part's holder is not cached");
    it->second->part_key.clear();  // its part goes with it: nothing to unlink from
    UnlinkValueLocked(it->second, out);
  }
  bytes_ -= oldest->bytes;
  parts_.erase(oldest->key);
  out.splice(out.end(), lru_, oldest);
}

template <typename Value>
void CompileCache<Value>::Release(Lru& evicted) {
  for (Entry& entry : evicted) {
    if (entry.on_evict) entry.on_evict();
  }
  evicted.clear();
}

template <typename Value>
void CompileCache<Value>::Clear() {
  Lru dropped;
  {
    std::lock_guard<ForkSafeMutex> lock(mutex_);
    dropped.swap(lru_);
    index_.clear();
    parts_.clear();
    bytes_ = 0;
  }
  Release(dropped);
}

template <typename Value>
CompileCacheStats CompileCache<Value>::stats() const {
  std::lock_guard<ForkSafeMutex> lock(mutex_);
  CompileCacheStats out;
  out.entries = index_.size();
  out.shared_parts = parts_.size();
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
  XG2_DCHECK(index_.size() + parts_.size() == lru_.size(), "the cache's indexes and LRU list disagree");
  size_t total = 0;
  size_t holders = 0;
  for (const Entry& entry : lru_) {
    const Index& index = entry.value ? index_ : parts_;
    auto it = index.find(entry.key);
    XG2_DCHECK(it != index.end() && &*it->second == &entry, "an LRU entry is missing from its index");
    XG2_DCHECK(entry.part_key.empty() || parts_.count(entry.part_key) == 1, "a value's shared part is not cached");
    holders += entry.holders.size();
    if (!entry.part_key.empty()) --holders;
    total += entry.bytes;
  }
  XG2_DCHECK(holders == 0, "shared parts' holders differ from the values holding them");
  XG2_DCHECK(total == bytes_, "the cache's byte count differs from its entries' charges");
  XG2_DCHECK(limit_bytes_ < 0 || bytes_ <= static_cast<uint64_t>(limit_bytes_), "the cache holds more than its bound");
  for (const auto& entry : in_flight_) XG2_DCHECK(!entry.second->done, "a finished compile is still in flight");
}

}  // namespace xg2

#endif  // XG2_COMPILER_COMPILE_CACHE_H_
