#!/usr/bin/env bash
# Incremental developer build: compiles the native module into build/dev and links it into
# xg2_plugin/ so `PYTHONPATH=. pytest` runs against the working tree. Release builds and
# wheels go through `pip install .` instead.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${XG2_BUILD_DIR:-build/dev}
BUILD_TYPE=${XG2_BUILD_TYPE:-Release}
PYTHON=${PYTHON:-python3}
if [ ! -f "$BUILD_DIR/build.ninja" ]; then
  cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE="$BUILD_TYPE" \
    -DPython_EXECUTABLE="$(command -v "$PYTHON")" \
    -Dpybind11_DIR="$("$PYTHON" -m pybind11 --cmakedir)" "$@" >/dev/null
fi
# Quiet when it works; the whole log (compiler errors included) when it does not.
ninja -C "$BUILD_DIR" >"$BUILD_DIR/ninja.log" 2>&1 || { cat "$BUILD_DIR/ninja.log"; exit 1; }
so=$(ls "$BUILD_DIR"/_native*.so)
# Copy then rename: processes that have the old module loaded keep their (unlinked) copy.
cp -f "$so" "xg2_plugin/.$(basename "$so").tmp"
mv -f "xg2_plugin/.$(basename "$so").tmp" "xg2_plugin/$(basename "$so")"
echo "built $(basename "$so")"
