#!/usr/bin/env bash
# The whole test suite, from nothing: creates .venv, installs the package (building the
# native engine) with its test dependencies, and runs pytest (extra arguments go to this run).
# Then the vLLM and SGLang adapter tests run in their own CPU venvs (scripts/setup_vllm_env.sh,
# .venv-vllm; scripts/setup_sglang_env.sh, .venv-sglang); XG2_SKIP_VLLM_TESTS=1 and
# XG2_SKIP_SGLANG_TESTS=1 leave them out. Then the sanitizer stage (scripts/sanitize.sh):
# an ASan+UBSan build runs the hostile-input, property, matcher and regression tests, the
# native libFuzzer targets (fuzz/native, built with clang, installed here when missing) run
# for XG2_FUZZ_SECONDS (default 15) each, and a ThreadSanitizer build runs the concurrency
# tests; XG2_SKIP_SANITIZERS=1 leaves the stage out.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
VENV=${XG2_VENV:-.venv}
if [ ! -x "$VENV/bin/python" ]; then
  "$PYTHON" -m venv "$VENV"
fi
"$VENV/bin/python" -m pip install -q --upgrade pip
# torch is optional for the engine; the tests use it to check tensor buffers. 2.13.0 CPU is
# the build this machine kind provides locally.
"$VENV/bin/python" -m pip install -q "torch==2.13.0" || echo "torch not available; torch tests will be skipped"
"$VENV/bin/python" -m pip install -q ".[test,fuzz,sanitize]"
# Run from outside the source tree so the installed package (not the sources) is imported.
export XG2_DATA_DIR=${XG2_DATA_DIR:-$(cd .. && pwd)/shared/data}
(cd tests && "../$VENV/bin/python" -m pytest -q -p no:cacheprovider "$@" .)
status=0
if [ "${XG2_SKIP_VLLM_TESTS:-0}" != 1 ]; then
  bash scripts/setup_vllm_env.sh
  VLLM_VENV=${XG2_VLLM_VENV:-.venv-vllm}
  case "$VLLM_VENV" in /*) ;; *) VLLM_VENV="$PWD/$VLLM_VENV" ;; esac
  (cd tests && "$VLLM_VENV/bin/python" -m pytest -q -p no:cacheprovider --durations=5 adapters) || status=$?
fi
if [ "${XG2_SKIP_SGLANG_TESTS:-0}" != 1 ]; then
  SGLANG_PYTHON=$(bash scripts/setup_sglang_env.sh | tail -n 1)
  (cd tests && "$SGLANG_PYTHON" -m pytest -q -p no:cacheprovider --durations=5 adapters/test_sglang_*.py) || status=$?
fi
if [ "${XG2_SKIP_SANITIZERS:-0}" != 1 ]; then
  PYTHON="$PWD/$VENV/bin/python" bash scripts/sanitize.sh asan || status=$?
  if ! command -v clang++ >/dev/null; then
    echo "== installing clang and its runtime libraries (libFuzzer) for the fuzz targets"
    apt-get update -q && apt-get install -y -q clang libclang-rt-14-dev || status=$?
  fi
  echo "== native fuzz targets (${XG2_FUZZ_SECONDS:-15}s each)"
  PYTHON="$PWD/$VENV/bin/python" bash scripts/sanitize.sh fuzz "${XG2_FUZZ_SECONDS:-15}" || status=$?
  PYTHON="$PWD/$VENV/bin/python" bash scripts/sanitize.sh tsan || status=$?
fi
exit "$status"
