// Resource limits of one compilation, configurable from Python (GrammarCompiler(limits=...)).
//
// The bindings install the caller's limits on the compiling thread with ScopedCompileLimits;
// frontends and the FSM builder read CurrentCompileLimits() where they used fixed constants,
// so the limits need not be threaded through every frontend signature. Outside a scope the
// defaults apply. Limits that guard recursion depth (and so the native stack) can only be
// lowered below their defaults; the Python layer validates that.
#ifndef XG2_SUPPORT_COMPILE_LIMITS_H_
#define XG2_SUPPORT_COMPILE_LIMITS_H_

#include <cstddef>
#include <cstdint>

namespace xg2 {

struct CompileLimits {
  // JSON Schema nesting plus $ref chain depth (the converter recurses once per level).
  int32_t max_schema_depth = 2000;
  // Size of the EBNF a JSON Schema expands into (bounds $ref / allOf explosions).
  int64_t max_generated_grammar_bytes = int64_t{64} << 20;
  // Largest bound accepted in an EBNF `{m,n}` repetition.
  int64_t max_repetition_bound = 1000000;
  // NFA plus DFA nodes created while lowering one grammar (FsmBuildLimits).
  int64_t max_fsm_nodes = 4000000;
  // Earley items created in one byte step of a matcher of the grammar (EarleyLimits).
  int32_t max_earley_items_per_step = 1 << 20;
  // Elementary Earley operations in a matcher of the grammar (EarleyLimits): for one
  // accepted token (or one byte of an accepted string), and for one mask fill.
  int64_t max_earley_work_per_token = int64_t{1} << 18;
  int64_t max_earley_work_per_fill = int64_t{1} << 28;
};

namespace compile_limits_detail {
inline thread_local const CompileLimits* current_limits = nullptr;
}  // namespace compile_limits_detail

inline const CompileLimits& CurrentCompileLimits() {
  static const CompileLimits kDefaults;
  const CompileLimits* limits = compile_limits_detail::current_limits;
  return limits ? *limits : kDefaults;
}

// Installs `limits` (may be null: the defaults) on this thread until destroyed.
class ScopedCompileLimits {
 public:
  explicit ScopedCompileLimits(const CompileLimits* limits)
      : previous_(compile_limits_detail::current_limits) {
    compile_limits_detail::current_limits = limits;
  }
  ~ScopedCompileLimits() { compile_limits_detail::current_limits = previous_; }
  ScopedCompileLimits(const ScopedCompileLimits&) = delete;
  ScopedCompileLimits& operator=(const ScopedCompileLimits&) = delete;

 private:
  const CompileLimits* previous_;
};

}  // namespace xg2

#endif  // XG2_SUPPORT_COMPILE_LIMITS_H_
