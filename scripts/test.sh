#!/usr/bin/env bash
# The whole test suite, from nothing: creates .venv, installs the package (building the
# native engine) with its test dependencies, and runs pytest (extra arguments go to this run).
# Then the vLLM adapter tests run in their own vLLM CPU venv (scripts/setup_vllm_env.sh,
# .venv-vllm); XG2_SKIP_VLLM_TESTS=1 leaves them out.
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
"$VENV/bin/python" -m pip install -q ".[test]"
# Run from outside the source tree so the installed package (not the sources) is imported.
export XG2_DATA_DIR=${XG2_DATA_DIR:-$(cd .. && pwd)/shared/data}
(cd tests && "../$VENV/bin/python" -m pytest -q -p no:cacheprovider "$@" .)
if [ "${XG2_SKIP_VLLM_TESTS:-0}" = 1 ]; then
  exit 0
fi
bash scripts/setup_vllm_env.sh
VLLM_VENV=${XG2_VLLM_VENV:-.venv-vllm}
case "$VLLM_VENV" in /*) ;; *) VLLM_VENV="$PWD/$VLLM_VENV" ;; esac
cd tests
exec "$VLLM_VENV/bin/python" -m pytest -q -p no:cacheprovider --durations=5 adapters
