#!/usr/bin/env bash
# Runs native-facing tests against a sanitizer build of the engine.
#
#   bash scripts/sanitize.sh [asan|tsan|leaks|fuzz|atheris] [pytest args... | fuzz seconds]
#
# asan (default): AddressSanitizer + UndefinedBehaviorSanitizer (CMake XG2_SANITIZE=address)
#   over the hostile-input, property, matcher and regression tests, the fuzz-corpus replay and
#   a bounded part of the tool-call preset tests, then the native unit tests (native/tests,
#   target xg2_native_tests), built in build/asan. With clang++ installed the build uses it and
#   also holds the libFuzzer targets (XG2_FUZZ=ON): one instrumented compile of the engine
#   serves the module, the unit tests and the fuzz targets (cmake/sanitizer_core.cmake).
# tsan: ThreadSanitizer (XG2_SANITIZE=thread) over the concurrency and compile-future tests,
#   then the native unit tests, built in build/tsan from the module's objects.
# fuzz: the native libFuzzer targets (fuzz/native; clang, ASan + UBSan + coverage, no Python),
#   run for N seconds each (default 20) from their corpora in fuzz/corpus/
#   (fuzz/native/run_all.sh). They come from build/asan when that build has them, else from
#   build/fuzz, configured the same way.
# atheris: every atheris harness over the Python API (fuzz/run_all.sh) for N seconds each on
#   the asan build (the native code is not coverage-guided there; kept for the Python layer).
# The sanitized module is built into build/<mode> and staged, with the Python sources, in
# build/<mode>/stage, which goes first on PYTHONPATH. The sanitizer runtime is preloaded
# because the Python interpreter itself is not instrumented. Leak detection is off under
# Python (the interpreter's own arenas and interned objects are reported as leaks); run
# scripts/sanitize.sh leaks for a LeakSanitizer pass that reports only leaks whose stack
# passes through the engine. Needs cmake, ninja and pybind11 (pip install '.[sanitize]').
set -euo pipefail
cd "$(dirname "$0")/.."
MODE=${1:-asan}
shift || true
PYTHON=${PYTHON:-python3}
# cmake, ninja and pybind11 come from the interpreter's environment (the sanitize extra).
PATH="$(dirname "$(command -v "$PYTHON")"):$PATH"
export PATH
# Configures an ASan + UBSan build in $1 (-O1 with line tables: usable stack traces, a fraction
# of the -O2 -g build time), with clang and the fuzz targets when clang++ is installed.
configure_asan() {
  local compiler=(-DXG2_FUZZ=OFF)
  if command -v clang++ >/dev/null; then compiler=(-DCMAKE_CXX_COMPILER=clang++ -DXG2_FUZZ=ON); fi
  configure "$1" -DXG2_SANITIZE=address "${compiler[@]}"
}
configure() {
  local dir=$1
  shift
  [ -f "$dir/build.ninja" ] && return 0
  cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1" \
    -DPython_EXECUTABLE="$(command -v "$PYTHON")" \
    -Dpybind11_DIR="$("$PYTHON" -m pybind11 --cmakedir)" "$@" >/dev/null
}
has_fuzz_targets() { grep -q '^XG2_FUZZ:BOOL=ON' "$1/CMakeCache.txt" 2>/dev/null; }
if [ "$MODE" = fuzz ]; then
  command -v clang++ >/dev/null || { echo "$0 fuzz: needs clang++ with libFuzzer" >&2; exit 2; }
  BUILD_DIR=build/asan
  if [ -f "$BUILD_DIR/build.ninja" ] && ! has_fuzz_targets "$BUILD_DIR"; then
    BUILD_DIR=build/fuzz
  fi
  configure_asan "$BUILD_DIR"
  ninja -j "${XG2_BUILD_JOBS:-2}" -C "$BUILD_DIR" xg2_fuzz_targets >/dev/null
  # Leaks are findings too; a UBSan report stops the input (the build has
  # -fno-sanitize-recover), and libFuzzer saves it like a crash.
  export ASAN_OPTIONS="detect_leaks=1:detect_stack_use_after_return=0"
  export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1"
  exec bash fuzz/native/run_all.sh "$BUILD_DIR" "${1:-20}"
fi
case "$MODE" in
  asan|leaks|atheris)
    BUILD_DIR=build/asan
    configure_asan "$BUILD_DIR"
    # The module is not linked against the sanitizer runtime: it is preloaded (below), the one
    # of the compiler that built it.
    if has_fuzz_targets "$BUILD_DIR"; then
      RUNTIME=$(clang++ -print-file-name="libclang_rt.asan-$(uname -m).so")
    else
      RUNTIME=$(gcc -print-file-name=libasan.so)
    fi
    TESTS=(robustness/test_hostile_inputs.py robustness/test_properties.py robustness/test_regressions.py
           matcher/test_matcher_api.py matcher/test_tag_dispatch.py compiler/test_serialization_corrupt.py
           grammar/test_ast_analyses_sample.py
           # The tool-call presets: every family's tags compiled (the AST checks run on each
           # compile) with malformed replies rejected, and random walks over 17 families; a
           # bounded part of tests/presets, whose tags found two AST-check bugs before.
           presets/test_presets_templates.py::test_malformed_replies_are_rejected
           presets/test_presets_walks.py)
    ;;
  tsan)
    BUILD_DIR=build/tsan
    configure "$BUILD_DIR" -DXG2_SANITIZE=thread -DCMAKE_CXX_COMPILER=g++
    RUNTIME=$(gcc -print-file-name=libtsan.so)
    TESTS=(robustness/test_concurrency.py compiler/test_compile_futures.py)
    ;;
  *) echo "usage: $0 [asan|tsan|leaks|fuzz|atheris] [pytest args... | fuzz seconds]" >&2; exit 2 ;;
esac
# The module and the native unit tests in one build, before the tests start (the tests would
# otherwise build the unit tests while they run).
ninja -j "${XG2_BUILD_JOBS:-2}" -C "$BUILD_DIR" all xg2_native_tests >/dev/null
STAGE="$PWD/$BUILD_DIR/stage"
rm -rf "$STAGE"
mkdir -p "$STAGE"
cp -r xg2_plugin "$STAGE/"
rm -f "$STAGE"/xg2_plugin/_native*.so
cp "$BUILD_DIR"/_native*.so "$STAGE/xg2_plugin/"
if [ -d adapters ]; then cp -r adapters "$STAGE/xg2_plugin/adapters"; fi

# libstdc++ too: Python does not link it, and the sanitizer's __cxa_throw interceptor must
# find the real one when the runtime initialises (otherwise the first C++ throw aborts).
export LD_PRELOAD="$RUNTIME $(gcc -print-file-name=libstdc++.so)"
# Reports go to files (pytest captures stderr, and a halted process never prints it); they are
# shown and fail the run at the end. glibc frees an exited detached thread's TLS block when a
# later thread reuses its stack (_dl_deallocate_tls), outside TSan's view of synchronisation:
# those reports are about libc, not the engine, and are suppressed.
REPORTS="$STAGE/reports"
mkdir -p "$REPORTS"
printf 'race:_dl_deallocate_tls\n' > "$STAGE/tsan.supp"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:log_path=$REPORTS/ubsan"
export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:log_path=$REPORTS/tsan:suppressions=$STAGE/tsan.supp"
if [ "$MODE" = leaks ]; then
  # Report only leaks allocated by the engine: stacks are cut to the 4 innermost frames, so a
  # suppression matches only where the allocation itself happened (the interpreter, numpy,
  # torch, OpenSSL), never an engine allocation merely called from Python.
  SUPPRESSIONS="$STAGE/lsan.supp"
  printf 'leak:libpython\nleak:python3\nleak:_PyObject\nleak:PyMem\nleak:numpy\nleak:torch\nleak:libcrypto\nleak:libssl\n' > "$SUPPRESSIONS"
  export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:malloc_context_size=4:log_path=$REPORTS/asan"
  export LSAN_OPTIONS="suppressions=$SUPPRESSIONS:print_suppressions=0"
else
  export ASAN_OPTIONS="detect_leaks=0:abort_on_error=1:detect_stack_use_after_return=0:log_path=$REPORTS/asan"
fi
export XG2_DATA_DIR=${XG2_DATA_DIR:-$(cd .. && pwd)/shared/data}
if [ "$MODE" = atheris ]; then
  # libFuzzer's own allocation hooks and ASan's leak check do not mix under Python. Crash
  # reports go to the terminal here, where the harness prints its crashing input.
  export ASAN_OPTIONS="${ASAN_OPTIONS%%:log_path=*}" UBSAN_OPTIONS="${UBSAN_OPTIONS%%:log_path=*}"
  PYTHONPATH="$STAGE" PYTHON="$PYTHON" exec bash fuzz/run_all.sh "${1:-20}"
fi
cd tests
# The ASan tests share nothing across processes: they run on every core (pytest-xdist, as the
# main suite; XG2_TEST_WORKERS overrides the count). The TSan tests stay in one process.
WORKERS=()
if [ "$MODE" = asan ] && "$PYTHON" -c "import xdist" 2>/dev/null; then
  WORKERS=(-n "${XG2_TEST_WORKERS:-auto}" --dist worksteal)
fi
status=0
PYTHONPATH="$STAGE" "$PYTHON" -m pytest -q -p no:cacheprovider "${WORKERS[@]}" "$@" "${TESTS[@]}" || status=$?
# The native unit tests (native/tests, built above from the module's instrumented objects, with
# the engine's invariant checks on) run as a program of their own, not through
# tests/grammar/test_native_unit.py: they carry their sanitizer runtime, so the preload for
# Python must not reach them (a clang binary refuses a second ASan runtime). Under TSan their
# mask-cache and rule-snapshot cases run the precompute worker and the lazy rule builder on
# threads. ForkWaitsUntilNoForkSafeMutexIsHeld forks while a second thread runs:
# ThreadSanitizer's state in the child still has that thread (a "thread leak" at the child's
# exit) and the fork gate write-locked (the child re-initialises the gate with memcpy, which
# TSan does not see: "read lock of a write locked mutex" in EnterShared). Both are about TSan's
# model of a fork child, not races; they are left out for this binary only (thread leaks are
# still reported for the Python tests above).
if [ "$MODE" = tsan ]; then
  printf 'mutex:xg2::fork_gate::EnterShared\n' >> "$STAGE/tsan.supp"
  TSAN_OPTIONS="$TSAN_OPTIONS:report_thread_leaks=0" LD_PRELOAD="" "../$BUILD_DIR/xg2_native_tests" || status=$?
else
  LD_PRELOAD="" "../$BUILD_DIR/xg2_native_tests" || status=$?
fi
if compgen -G "$REPORTS/*" >/dev/null; then
  cat "$REPORTS"/* >&2
  echo "sanitizer reports above ($MODE)" >&2
  exit 1
fi
exit "$status"
