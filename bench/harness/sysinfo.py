"""Facts a reader needs to reproduce a run: versions, CPU, load, repository commit."""

from __future__ import annotations

import os
import platform
import subprocess
from importlib.metadata import PackageNotFoundError, version
from typing import Any

from .config import REPO_ROOT

PACKAGES = ("xg2-plugin", "xgrammar", "llguidance", "torch", "transformers", "tokenizers", "jsonschema", "numpy")


def package_versions() -> dict[str, str]:
    out: dict[str, str] = {}
    for name in PACKAGES:
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = "not installed"
    return out


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as file:
            for line in file:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def git_commit() -> str:
    """``<sha>`` of the checkout, with ``+dirty`` when the non-bench files have local changes."""
    try:
        sha = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO_ROOT, capture_output=True, text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--", ".", ":!bench"], cwd=REPO_ROOT,
                               capture_output=True, text=True, check=True).stdout.strip()
        return sha + ("+dirty" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def machine_facts() -> dict[str, Any]:
    return {
        "cpu": cpu_model(),
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "commit": git_commit(),
        "packages": package_versions(),
    }
