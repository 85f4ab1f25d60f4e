"""Builds and runs the native unit tests (native/tests, CMake target xg2_native_tests).

The binary tests the FSM builder's stages directly (NFA -> DFA -> minimal DFA on small
grammars, counted loops, the determinisation fallback, right-linear merging, the shared
rule-DFA table), the invariant checkers (they must reject hand-broken FSMs) and the
vocabulary index of the token-mask cache (matcher/vocabulary_index.h), with the engine's
invariant checks compiled in (XG2_FORCE_DCHECKS).

Build directory: $XG2_NATIVE_TEST_BUILD_DIR when set, else build/dev when
scripts/dev_build.sh has configured it, else build/native-tests; one not configured yet is
configured here (Ninja, Release, ccache when installed). Only the test
target is built. The test skips only when there is no C++ compiler or no cmake/ninja.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
TARGET = "xg2_native_tests"
BUILD_TIMEOUT_S = 1800
RUN_TIMEOUT_S = 600


def _tool(name: str) -> str | None:
    """`name` from this interpreter's environment (the venv's cmake and ninja), else PATH."""
    beside = Path(sys.executable).parent / name
    return str(beside) if beside.exists() else shutil.which(name)


def _compiler() -> str | None:
    for name in (os.environ.get("CXX", ""), "c++", "g++", "clang++"):
        if name and shutil.which(name):
            return shutil.which(name)
    return None


def _build_dir(cmake: str, ninja: str, compiler: str) -> Path:
    override = os.environ.get("XG2_NATIVE_TEST_BUILD_DIR")
    dev = REPO_ROOT / "build" / "dev"
    if override:
        own = Path(override) if Path(override).is_absolute() else REPO_ROOT / override
    elif (dev / "build.ninja").exists():
        return dev
    else:
        own = REPO_ROOT / "build" / "native-tests"
    if not (own / "build.ninja").exists():
        pybind11_dir = subprocess.run([sys.executable, "-m", "pybind11", "--cmakedir"], capture_output=True,
                                      text=True, check=True).stdout.strip()
        command = [cmake, "-S", str(REPO_ROOT), "-B", str(own), "-G", "Ninja", "-DCMAKE_BUILD_TYPE=Release",
                   f"-DCMAKE_MAKE_PROGRAM={ninja}", f"-DCMAKE_CXX_COMPILER={compiler}",
                   f"-DPython_EXECUTABLE={sys.executable}", f"-Dpybind11_DIR={pybind11_dir}"]
        if shutil.which("ccache"):
            command.append("-DCMAKE_CXX_COMPILER_LAUNCHER=ccache")
        configured = subprocess.run(command, capture_output=True, text=True, timeout=BUILD_TIMEOUT_S)
        assert configured.returncode == 0, f"configuring {own} failed:\n{configured.stdout}\n{configured.stderr}"
    return own


def test_native_unit_tests_pass():
    compiler, cmake, ninja = _compiler(), _tool("cmake"), _tool("ninja")
    if compiler is None:
        pytest.skip("no C++ compiler (c++, g++ or clang++, or $CXX) to build the native unit tests")
    if cmake is None or ninja is None:
        pytest.skip("cmake and ninja are needed to build the native unit tests (pip install '.[sanitize]')")
    build_dir = _build_dir(cmake, ninja, compiler)
    built = subprocess.run([ninja, "-C", str(build_dir), TARGET], capture_output=True, text=True,
                           timeout=BUILD_TIMEOUT_S)
    assert built.returncode == 0, f"building {TARGET} in {build_dir} failed:\n{built.stdout[-20000:]}"
    ran = subprocess.run([str(build_dir / TARGET)], capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
    output = ran.stdout + ran.stderr
    assert ran.returncode == 0, f"{TARGET} failed:\n{output}"
    summary = output.strip().splitlines()[-1]
    assert summary.endswith(" tests, 0 failed") and not summary.startswith("0 "), output
