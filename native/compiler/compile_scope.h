// The limits and cancellation token of one compile call, installed on the calling thread
// (support/compile_limits.h, support/cancellation.h). Null pointers mean defaults / no token.
#ifndef XG2_COMPILER_COMPILE_SCOPE_H_
#define XG2_COMPILER_COMPILE_SCOPE_H_

#include "support/cancellation.h"
#include "support/compile_limits.h"

namespace xg2 {

class CompileScope {
 public:
  CompileScope(const CompileLimits* limits, const CancellationToken* cancel)
      : limits_(limits), cancellation_(cancel) {}

 private:
  ScopedCompileLimits limits_;
  ScopedCancellation cancellation_;
};

}  // namespace xg2

#endif  // XG2_COMPILER_COMPILE_SCOPE_H_
