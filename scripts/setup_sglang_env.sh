#!/usr/bin/env bash
# Creates the separate SGLang test environment (default .venv-sglang) on a CPU-only machine:
# torch 2.13.0+cpu from the local wheel, sglang==0.5.23 without its CUDA dependencies, the
# pure-Python packages SGLang imports, import stubs for the native modules that have no CPU
# build on PyPI (sgl_kernel, torchvision, torchaudio), and this package itself.
# Idempotent: the heavy installs run again only when the requirement list below changes
# (recorded in a marker file); this package is reinstalled every time (incremental build).
# Usage: scripts/setup_sglang_env.sh [VENV]    (prints the venv's python on the last line)
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
VENV=${1:-${XG2_SGLANG_VENV:-.venv-sglang}}
SGLANG_VERSION=0.5.23
TORCH_VERSION=2.13.0
MARKER="$VENV/.xg2-sglang-ready"

# Progress goes to stderr: stdout's last line is the venv's python, for callers to capture.
say() { echo "setup_sglang_env: $*" >&2; }
# pip install, its output kept in $VENV/xg2-setup.log. SGLang goes in without its CUDA
# requirements, so pip's closing check lists every one of them as "not installed", and this
# machine's pip config names index locations it lacks; neither is a failure. On a failure the
# log's tail is printed.
pip_install() {
  if ! "$VENV/bin/python" -m pip install -q "$@" >>"$VENV/xg2-setup.log" 2>&1; then
    say "pip install $* failed; the end of $VENV/xg2-setup.log:"
    grep -v -e "is ignored: it is neither a file nor a directory" -e "which is not installed" \
      "$VENV/xg2-setup.log" | tail -n 30 >&2
    exit 1
  fi
}

if [ ! -x "$VENV/bin/python" ]; then
  say "creating $VENV"
  "$PYTHON" -m venv "$VENV"
  echo '*' >"$VENV/.gitignore"
fi
: >"$VENV/xg2-setup.log"

# SGLang's imports on the CPU path (versions as sglang pins them where it pins). xgrammar and
# apache-tvm-ffi have CPU wheels and are imported unconditionally (the detokenizer's
# function-call parser, the communication ops); xgrammar is not used as the grammar backend.
REQUIREMENTS=(
  "transformers==5.19.0" "tokenizers==0.23.2" "openai==2.8.0" "sentencepiece==0.2.1"
  "compressed-tensors==0.18.0" "soundfile==0.13.1" "outlines==0.1.11" "xgrammar==0.2.7"
  "apache-tvm-ffi==0.1.11" triton psutil pybase64 requests packaging pillow starlette msgspec
  pydantic pyzmq tqdm IPython aiohttp partial_json_parser dill gguf einops uvloop uvicorn fastapi
  setproctitle jsonschema python-multipart interegular orjson regex prometheus-client xxhash
  safetensors scipy numpy pytest
)
wanted="torch==$TORCH_VERSION sglang==$SGLANG_VERSION ${REQUIREMENTS[*]}"
if [ "$(cat "$MARKER" 2>/dev/null)" != "$wanted" ]; then
  say "installing SGLang $SGLANG_VERSION for CPU into $VENV (once; several minutes)"
  pip_install --upgrade pip
  # Every later install is held to the CPU torch, so no resolver step can pull a CUDA build.
  echo "torch==$TORCH_VERSION" >"$VENV/constraints.txt"
  say "  torch $TORCH_VERSION (CPU)"
  pip_install "torch==$TORCH_VERSION"
  say "  sglang $SGLANG_VERSION (without its CUDA requirements)"
  pip_install --no-deps "sglang==$SGLANG_VERSION"
  say "  the ${#REQUIREMENTS[@]} packages SGLang imports on the CPU path"
  pip_install -c "$VENV/constraints.txt" "${REQUIREMENTS[@]}"
  echo "$wanted" >"$MARKER"
fi

# Import stubs for sgl_kernel, torchvision and torchaudio, active in every process of this
# venv (the scheduler runs in spawned subprocesses) through a .pth file.
say "import stubs for sgl_kernel, torchvision, torchaudio"
site=$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
cat >"$site/_xg2_sglang_cpu_stubs.py" <<'PY'
"""Import stubs for native modules with no CPU build on PyPI (test environment only).

A module named in STUBBED that cannot be imported for real becomes a package whose every
attribute is a MagicMock, so SGLang's CPU path imports; calling into a stub on a path that
needs the real kernel fails loudly instead of computing anything.
"""
import importlib.abc
import importlib.machinery
import importlib.util
import sys

STUBBED = ("sgl_kernel", "torchvision", "torchaudio")


class _StubLoader(importlib.abc.Loader):
    def create_module(self, spec):
        return None

    def exec_module(self, module):
        from unittest.mock import MagicMock

        module.__path__ = []
        module.__getattr__ = lambda name: MagicMock(name=f"{module.__name__}.{name}")


class _StubFinder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path, target=None):
        if fullname.partition(".")[0] in _missing:
            return importlib.machinery.ModuleSpec(fullname, _StubLoader(), is_package=True)
        return None


_missing = set()


def install():
    for name in STUBBED:
        if importlib.util.find_spec(name) is None:
            _missing.add(name)
    if _missing:
        sys.meta_path.insert(0, _StubFinder())
PY
echo "import _xg2_sglang_cpu_stubs; _xg2_sglang_cpu_stubs.install()" >"$site/_xg2_sglang_cpu_stubs.pth"

# This package: the wheel XG2_WHEEL names when set (scripts/test.sh builds one for every venv),
# else the working tree.
if [ -n "${XG2_WHEEL:-}" ]; then
  say "installing $XG2_WHEEL"
  pip_install -c "$VENV/constraints.txt" "$XG2_WHEEL"
  pip_install --no-deps --force-reinstall "$XG2_WHEEL"
else
  say "installing xg2-plugin from $PWD (builds the native engine; minutes on a first build)"
  pip_install -c "$VENV/constraints.txt" .
fi
say "ready: $VENV"
echo "$(cd "$VENV" && pwd)/bin/python"
