#!/usr/bin/env bash
# The whole test suite, from nothing: creates .venv, installs the package (building the
# native engine) with its test dependencies, and runs pytest (extra arguments go to this run).
# Then two lanes run side by side: the vLLM and SGLang adapter tests in their own CPU venvs
# (scripts/setup_vllm_env.sh, .venv-vllm; scripts/setup_sglang_env.sh, .venv-sglang;
# XG2_SKIP_VLLM_TESTS=1 and XG2_SKIP_SGLANG_TESTS=1 leave them out), and the sanitizer stage
# (scripts/sanitize.sh): an ASan+UBSan build (clang, installed here when missing) runs the
# hostile-input, property, matcher and regression tests and the native unit tests, the native
# libFuzzer targets (fuzz/native, from the same instrumented objects) run for XG2_FUZZ_SECONDS
# (default 15) each, and a ThreadSanitizer build runs the concurrency tests and the native unit
# tests (XG2_SKIP_SANITIZERS=1 leaves the stage out).
# XG2_SERIAL_LANES=1 runs the lanes one after the other.
set -euo pipefail
cd "$(dirname "$0")/.."
START=$SECONDS
STAGE_START=$SECONDS
# A header per stage, with the time the previous stage took and the total so far.
stage() {
  local now=$SECONDS
  if [ "$now" != "$START" ] || [ "$STAGE_START" != "$START" ]; then
    echo "== done in $((now - STAGE_START)) s (total $((now - START)) s)"
  fi
  STAGE_START=$now
  echo "== [$(date -u +%H:%M:%S)] $*"
}
PYTHON=${PYTHON:-python3}
VENV=${XG2_VENV:-.venv}
stage "environment: $VENV (create if missing, install torch and the package with its test extras; builds the native engine)"
if [ ! -x "$VENV/bin/python" ]; then
  "$PYTHON" -m venv "$VENV"
fi
"$VENV/bin/python" -m pip install -q --upgrade pip
# torch is optional for the engine; the tests use it to check tensor buffers. 2.13.0 CPU is
# the build this machine kind provides locally.
"$VENV/bin/python" -m pip install -q "torch==2.13.0" || echo "torch not available; torch tests will be skipped"
# The engine is built once, as a wheel that every venv here installs (the vLLM and SGLang venvs
# run the same interpreter version): building from the source tree in each would compile the
# whole engine three times, since each isolated build environment puts pybind11 elsewhere.
rm -rf build/wheelhouse
"$VENV/bin/python" -m pip wheel -q --no-deps -w build/wheelhouse .
XG2_WHEEL=$(ls "$PWD"/build/wheelhouse/xg2_plugin-*.whl)
export XG2_WHEEL
"$VENV/bin/python" -m pip install -q --no-deps --force-reinstall "$XG2_WHEEL"
"$VENV/bin/python" -m pip install -q "$XG2_WHEEL[test,fuzz,sanitize]"
# Run from outside the source tree so the installed package (not the sources) is imported.
export XG2_DATA_DIR=${XG2_DATA_DIR:-$(cd .. && pwd)/shared/data}
# The main suite runs on every core (pytest-xdist; XG2_TEST_WORKERS overrides the count, 0 runs
# it in this process): its tests share nothing across processes, and work stealing keeps the
# long differential cases from leaving one worker alone at the end. The native unit tests run
# in the sanitizer stage, linked from its instrumented build.
stage "main test suite (pytest tests/, ${XG2_TEST_WORKERS:-auto} workers)"
# The slowest tests are listed at the end, so that the log of every run shows where its time went.
(cd tests && "../$VENV/bin/python" -m pytest -q -p no:cacheprovider -n "${XG2_TEST_WORKERS:-auto}" --dist worksteal \
  --durations=30 --ignore=grammar/test_native_unit.py "$@" .)
status=0
# The adapter suites mostly wait on engines and servers starting (one core at most), while the
# sanitizer stages mostly compile (every core): the two lanes run side by side, the adapter
# lane's output going to a log printed once both have finished. XG2_SERIAL_LANES=1 runs them
# one after the other with their output inline.
adapter_lane() {
  local lane_status=0
  if [ "${XG2_SKIP_VLLM_TESTS:-0}" != 1 ]; then
    stage "vLLM CPU environment (scripts/setup_vllm_env.sh)"
    bash scripts/setup_vllm_env.sh || return $?
    stage "vLLM adapter tests"
    local vllm_venv=${XG2_VLLM_VENV:-.venv-vllm}
    case "$vllm_venv" in /*) ;; *) vllm_venv="$PWD/$vllm_venv" ;; esac
    (cd tests && "$vllm_venv/bin/python" -m pytest -q -p no:cacheprovider --durations=5 adapters) || lane_status=$?
  fi
  if [ "${XG2_SKIP_SGLANG_TESTS:-0}" != 1 ]; then
    stage "SGLang CPU environment (scripts/setup_sglang_env.sh)"
    local sglang_python
    sglang_python=$(bash scripts/setup_sglang_env.sh | tail -n 1) || return $?
    stage "SGLang adapter tests"
    (cd tests && "$sglang_python" -m pytest -q -p no:cacheprovider --durations=5 adapters/test_sglang_*.py) \
      || lane_status=$?
  fi
  stage "adapter lane finished with status $lane_status"
  return "$lane_status"
}
sanitizer_lane() {
  local lane_status=0
  # clang first: the ASan build is then one clang build whose objects serve the module, the
  # native unit tests and the fuzz targets (scripts/sanitize.sh, cmake/sanitizer_core.cmake).
  if ! command -v clang++ >/dev/null; then
    stage "installing clang and libFuzzer for the ASan build and the fuzz targets (apt-get)"
    { apt-get update -qq && apt-get install -y -qq clang libclang-rt-14-dev >/dev/null; } || lane_status=$?
  fi
  stage "AddressSanitizer + UBSan build (module, native unit tests, fuzz targets) and tests (scripts/sanitize.sh asan)"
  PYTHON="$PWD/$VENV/bin/python" bash scripts/sanitize.sh asan || lane_status=$?
  stage "native fuzz targets (scripts/sanitize.sh fuzz, ${XG2_FUZZ_SECONDS:-15} s per target)"
  PYTHON="$PWD/$VENV/bin/python" bash scripts/sanitize.sh fuzz "${XG2_FUZZ_SECONDS:-15}" || lane_status=$?
  stage "ThreadSanitizer build and concurrency tests (scripts/sanitize.sh tsan)"
  PYTHON="$PWD/$VENV/bin/python" bash scripts/sanitize.sh tsan || lane_status=$?
  return "$lane_status"
}
WANT_ADAPTERS=0
if [ "${XG2_SKIP_VLLM_TESTS:-0}" != 1 ] || [ "${XG2_SKIP_SGLANG_TESTS:-0}" != 1 ]; then WANT_ADAPTERS=1; fi
WANT_SANITIZERS=0
if [ "${XG2_SKIP_SANITIZERS:-0}" != 1 ]; then WANT_SANITIZERS=1; fi
if [ "$WANT_ADAPTERS" = 1 ] && [ "$WANT_SANITIZERS" = 1 ] && [ "${XG2_SERIAL_LANES:-0}" != 1 ]; then
  mkdir -p build
  ADAPTER_LOG="$PWD/build/adapter-lane.log"
  stage "adapter suites in the background (log: build/adapter-lane.log, printed below when done) beside the sanitizer stages"
  ( adapter_lane ) >"$ADAPTER_LOG" 2>&1 &
  ADAPTER_PID=$!
  sanitizer_lane || status=$?
  stage "waiting for the adapter lane"
  adapter_status=0
  wait "$ADAPTER_PID" || adapter_status=$?
  echo "== adapter lane log (vLLM, SGLang; each stage's own times inside)"
  cat "$ADAPTER_LOG"
  echo "== end of adapter lane log (status $adapter_status)"
  [ "$adapter_status" = 0 ] || status=$adapter_status
else
  if [ "$WANT_ADAPTERS" = 1 ]; then adapter_lane || status=$?; fi
  if [ "$WANT_SANITIZERS" = 1 ]; then sanitizer_lane || status=$?; fi
fi
stage "finished with status $status"
exit "$status"
