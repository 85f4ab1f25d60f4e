// A claim on an object that serves one caller at a time. Every entry point takes a Scope;
// a second thread entering while the first is inside gets ConcurrentUseError instead of a
// data race (the bindings release the GIL, so Python cannot serialise the callers).
//
// Cost: one atomic exchange on entry and one release store on exit. A copy of the owner is a
// new object, so copying an ExclusiveUse gives an unclaimed one.
#ifndef XG2_SUPPORT_EXCLUSIVE_USE_H_
#define XG2_SUPPORT_EXCLUSIVE_USE_H_

#include <atomic>

#include "support/error.h"

namespace xg2 {

class ExclusiveUse {
 public:
  ExclusiveUse() = default;
  ExclusiveUse(const ExclusiveUse&) {}
  ExclusiveUse& operator=(const ExclusiveUse&) { return *this; }

  class Scope {
   public:
    // `what` names the object in the error ("GrammarMatcher").
    Scope(const ExclusiveUse& use, const char* what) : use_(use) {
      if (use_.busy_.exchange(true, std::memory_order_acquire)) {
        throw ConcurrentUseError(std::string(what) +
                                 " is in use by another thread: one object serves one caller at a "
                                 "time (fork() it, or serialise the calls)");
      }
    }
    ~Scope() { use_.busy_.store(false, std::memory_order_release); }
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    const ExclusiveUse& use_;
  };

 private:
  mutable std::atomic<bool> busy_{false};
};

}  // namespace xg2

#endif  // XG2_SUPPORT_EXCLUSIVE_USE_H_
