#!/usr/bin/env bash
# The whole test suite, from nothing: creates .venv, installs the package (building the
# native engine) with its test dependencies, and runs pytest. Extra arguments go to pytest.
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
cd tests
status=0
"../$VENV/bin/python" -m pytest -q -p no:cacheprovider "$@" . || status=$?
# The SGLang adapter runs against a real SGLang, in its own venv (scripts/setup_sglang_env.sh);
# XG2_SGLANG_TESTS=0 skips it.
if [ "${XG2_SGLANG_TESTS:-1}" != 0 ]; then
  sglang_python=$(bash ../scripts/setup_sglang_env.sh | tail -n 1)
  "$sglang_python" -m pytest -q -p no:cacheprovider adapters/test_sglang_*.py || status=$?
fi
exit "$status"
