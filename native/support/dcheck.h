// Tripwires: invariant checks that run in debug and sanitizer builds and compile to nothing
// in Release.
//
// XG2_DCHECKS_ENABLED is 1 where NDEBUG is not defined -- a Debug build, and the builds of
// scripts/sanitize.sh (asan, tsan, fuzz: RelWithDebInfo with flags of their own, which do
// not define NDEBUG) -- or where XG2_FORCE_DCHECKS is defined (the native unit tests,
// native/tests/), and 0 in Release, whose CMake flags define NDEBUG (the wheel and
// scripts/dev_build.sh).
//
//   XG2_DCHECK(condition, message)   throws InternalError when `condition` is false
//   XG2_DCHECK_INVARIANTS(checker)   runs `checker` (a call such as
//                                    CheckGrammarFsmInvariants(fsm, "flattening"), which
//                                    throws InternalError itself)
//
// A broken invariant is a bug of the engine, not of its input: it is reported as an
// InternalError (an XG2Error in Python) whose message says what broke and where, so that a
// test or a fuzzer sees it at the step that broke it instead of as a wrong mask later.
#ifndef XG2_SUPPORT_DCHECK_H_
#define XG2_SUPPORT_DCHECK_H_

#include <string>

#include "support/error.h"

namespace xg2 {

// An engine invariant does not hold (see the file comment).
class InternalError : public Error {
 public:
  using Error::Error;
};

[[noreturn]] inline void ThrowInternalError(const char* file, int line, const std::string& message) {
  throw InternalError("internal error (" + std::string(file) + ":" + std::to_string(line) + "): " + message);
}

}  // namespace xg2

#if !defined(NDEBUG) || defined(XG2_FORCE_DCHECKS)
#define XG2_DCHECKS_ENABLED 1
#else
#define XG2_DCHECKS_ENABLED 0
#endif

#if XG2_DCHECKS_ENABLED
#define XG2_DCHECK(condition, message)                                              \
  do {                                                                              \
    if (!(condition)) ::xg2::ThrowInternalError(__FILE__, __LINE__, (message));     \
  } while (0)
#define XG2_DCHECK_INVARIANTS(checker) \
  do {                                 \
    checker;                           \
  } while (0)
#else
// Never evaluated, but still compiled: a variable read only by checks is used in every build.
#define XG2_DCHECK(condition, message) \
  do {                                 \
    if (false) {                       \
      (void)(condition);               \
      (void)(message);                 \
    }                                  \
  } while (0)
#define XG2_DCHECK_INVARIANTS(checker) \
  do {                                 \
  } while (0)
#endif

#endif  // XG2_SUPPORT_DCHECK_H_
