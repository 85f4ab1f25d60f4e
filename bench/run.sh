#!/usr/bin/env bash
# One command for the benchmark: creates the benchmark's own virtual environment (pinned peers,
# our package built from this checkout), then runs bench/run.py with the given arguments.
#   bash bench/run.sh --quick            # stratified sample, a few minutes
#   bash bench/run.sh --full             # whole corpus
#   bash bench/run.sh --help             # all options
# XG2_BENCH_VENV picks the environment's path (default bench/.venv); PYTHON the interpreter
# that creates it. pip's warnings about unused local index locations are filtered out.
set -euo pipefail
BENCH_DIR="$(cd "$(dirname "$0")" && pwd)"
VENV="${XG2_BENCH_VENV:-$BENCH_DIR/.venv}"
PYTHON="${PYTHON:-python3}"
if [ ! -x "$VENV/bin/python" ]; then
  "$PYTHON" -m venv "$VENV"
fi
"$VENV/bin/python" "$BENCH_DIR/setup_env.py" 2> >(grep -v "is ignored: it is neither a file nor a directory" >&2)
exec "$VENV/bin/python" "$BENCH_DIR/run.py" "$@"
