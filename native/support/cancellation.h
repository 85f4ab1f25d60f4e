// Cooperative cancellation of a compilation (timeouts and Future.cancel()).
//
// The caller creates a CancellationToken and installs it on the compiling thread with a
// ScopedCancellation for the duration of the native compile. The long loops of the compile
// (EBNF parse, JSON Schema expansion, FSM construction) call ThrowIfCancelled() at safe points:
// places where throwing leaves nothing half-built that outlives the exception, so unwinding
// frees the partial work. The check is one thread-local load when no token is installed and
// reads the clock only every kClockStride calls.
#ifndef XG2_SUPPORT_CANCELLATION_H_
#define XG2_SUPPORT_CANCELLATION_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <limits>
#include <string>

#include "support/error.h"

namespace xg2 {

// Raised when a compilation stops because its token was cancelled.
class CompilationCancelledError : public Error {
 public:
  using Error::Error;
};

// Raised when a compilation stops because its deadline passed.
class CompilationTimeoutError : public CompilationCancelledError {
 public:
  using CompilationCancelledError::CompilationCancelledError;
};

// Shared between the threads that request cancellation or move the deadline and the
// compiling thread: every member is atomic, so the deadline may change while a compile runs
// (a compile shared by several callers runs until the latest of their deadlines).
class CancellationToken {
 public:
  using Clock = std::chrono::steady_clock;

  void Cancel() { cancelled_.store(true, std::memory_order_relaxed); }
  bool cancelled() const { return cancelled_.load(std::memory_order_relaxed); }

  // A deadline `seconds` from now; a non-positive value means the deadline has passed and
  // +infinity (or NaN) removes the deadline.
  void SetTimeout(double seconds) {
    if (!(seconds < kNoDeadlineSeconds)) {
      deadline_ticks_.store(kNoDeadline, std::memory_order_relaxed);
      return;
    }
    timeout_seconds_.store(seconds, std::memory_order_relaxed);
    const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                             std::chrono::duration<double>(seconds));
    deadline_ticks_.store(deadline.time_since_epoch().count(), std::memory_order_relaxed);
  }

  // Also stops the compile, at any safe-point check, once `*flag` is true (null: no flag). The
  // flag outlives every compile that reads it; bindings/sigint_watch.h sets one from a signal
  // handler, so that a compile running on Python's main thread stops on Ctrl-C.
  void CancelOnFlag(const std::atomic<bool>* flag) { interrupt_flag_.store(flag, std::memory_order_relaxed); }
  // Whether the flag of CancelOnFlag is set (a compile checking now would stop).
  bool interrupted() const {
    const std::atomic<bool>* flag = interrupt_flag_.load(std::memory_order_relaxed);
    return flag != nullptr && flag->load(std::memory_order_relaxed);
  }

  // Tests: cancels at the `checks`-th safe-point check from now (0: the next one), so a test
  // can stop a compile at every safe point in turn without reading a clock.
  void CancelAfterChecks(int64_t checks) { checks_left_.store(checks, std::memory_order_relaxed); }

  // Throws if cancelled, or (when `check_clock`) if the deadline has passed.
  void Check(bool check_clock) const {
    if (checks_left_.load(std::memory_order_relaxed) >= 0 &&
        checks_left_.fetch_sub(1, std::memory_order_relaxed) == 0) {
      cancelled_.store(true, std::memory_order_relaxed);
    }
    if (cancelled()) throw CompilationCancelledError("compilation cancelled");
    if (interrupted()) throw CompilationCancelledError("compilation interrupted");
    if (!check_clock) return;
    const Clock::rep deadline = deadline_ticks_.load(std::memory_order_relaxed);
    if (deadline != kNoDeadline && Clock::now().time_since_epoch().count() >= deadline) {
      throw CompilationTimeoutError("compilation timed out after " +
                                    std::to_string(timeout_seconds_.load(std::memory_order_relaxed)) +
                                    " s");
    }
  }

 private:
  // Deadlines further away than this (about 30 years) are no deadline: the tick count of
  // now + seconds would overflow.
  static constexpr double kNoDeadlineSeconds = 1e9;
  static constexpr Clock::rep kNoDeadline = std::numeric_limits<Clock::rep>::max();
  mutable std::atomic<bool> cancelled_{false};
  mutable std::atomic<int64_t> checks_left_{-1};  // -1: no countdown (CancelAfterChecks)
  std::atomic<Clock::rep> deadline_ticks_{kNoDeadline};
  std::atomic<double> timeout_seconds_{0};
  std::atomic<const std::atomic<bool>*> interrupt_flag_{nullptr};
};

namespace cancellation_detail {
inline thread_local const CancellationToken* current_token = nullptr;
inline thread_local uint32_t calls_since_clock = 0;
// Safe points sit between units of work as large as a schema node's conversion (a $ref-heavy
// node costs far more than a byte edge), so the stride stays small: reading the clock is a
// vDSO call, cheap next to any unit of work that has a safe point.
constexpr uint32_t kClockStride = 16;
}  // namespace cancellation_detail

// Installs `token` (may be null) as the current thread's token until destroyed.
class ScopedCancellation {
 public:
  explicit ScopedCancellation(const CancellationToken* token)
      : previous_(cancellation_detail::current_token) {
    // Check before installing: a throwing constructor runs no destructor to restore.
    if (token) token->Check(true);
    cancellation_detail::current_token = token;
  }
  ~ScopedCancellation() { cancellation_detail::current_token = previous_; }
  ScopedCancellation(const ScopedCancellation&) = delete;
  ScopedCancellation& operator=(const ScopedCancellation&) = delete;

 private:
  const CancellationToken* previous_;
};

// The safe-point check for long compile loops; a no-op outside a cancellable compile.
inline void ThrowIfCancelled() {
  const CancellationToken* token = cancellation_detail::current_token;
  if (token == nullptr) return;
  bool check_clock = ++cancellation_detail::calls_since_clock >= cancellation_detail::kClockStride;
  if (check_clock) cancellation_detail::calls_since_clock = 0;
  token->Check(check_clock);
}

}  // namespace xg2

#endif  // XG2_SUPPORT_CANCELLATION_H_
