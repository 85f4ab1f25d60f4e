#!/usr/bin/env bash
# The product's main job on an embedded default: installs the package into .venv and runs
# constrained decoding of a JSON Schema with the Llama-3.1 tokenizer (see xg2_plugin/cli.py).
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
VENV=${XG2_VENV:-.venv}
[ -x "$VENV/bin/python" ] || "$PYTHON" -m venv "$VENV"
"$VENV/bin/python" -m pip install -q ".[hf]" jsonschema
export XG2_DATA_DIR=${XG2_DATA_DIR:-$(cd .. && pwd)/shared/data}
exec "$VENV/bin/xg2-demo" "$@"
