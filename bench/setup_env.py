"""Installs what the benchmark needs into the running (virtual-environment) interpreter.

Run by ``bench/run.sh`` with the benchmark venv's Python. The peers and tools are pinned
here, not in the product's dependencies. Our package is built from a *staged copy* of the
repository (the git-tracked and untracked-but-not-ignored files, synced into
``<venv>/xg2-src``) so that:

* the build directory lives next to the staged copy and later builds are incremental;
* the repository's own ``build/`` and working files are never touched;
* a file the packaging metadata names but the checkout lacks (``README.md``) can be stubbed
  in the copy without editing the repository.

A stamp (hash of the staged sources plus the pinned requirement list) skips work that is
already done, so re-running is cheap.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
REPO_ROOT = BENCH_DIR.parent

# Pinned peers (the versions the benchmark issue names) and the tools the harness uses.
TORCH_REQUIREMENT = "torch==2.13.0"  # CPU wheel served locally through pip's find-links
REQUIREMENTS = [
    "xgrammar==0.2.8",
    "llguidance==1.9.1",
    "jsonschema>=4.20",
    "rfc3339-validator",  # lets jsonschema's FormatChecker check date-time
    "tokenizers>=0.19",
    "transformers>=4.40",  # the peers' tokenizer constructors take transformers tokenizers
    "matplotlib>=3.7",
    "tqdm>=4.60",
    "numpy>=1.24",
    "pytest>=8",
    "pytest-benchmark>=4",
]


def _pip(*args: str) -> None:
    command = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q", *args]
    print("+", " ".join(command[2:]), flush=True)
    subprocess.run(command, check=True)


def _source_files() -> list[str]:
    """Repository files that go into the build (tracked plus untracked-not-ignored)."""
    out = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard"],
        cwd=REPO_ROOT, check=True, capture_output=True, text=True,
    ).stdout.splitlines()
    return sorted(p for p in out if p and not p.startswith("bench/") and (REPO_ROOT / p).is_file())


def _sync_sources(stage: Path) -> str:
    """Mirrors the source files into ``stage``; returns a hash of their content."""
    digest = hashlib.sha256()
    wanted = set(_source_files())
    for rel in sorted(wanted):
        src = REPO_ROOT / rel
        data = src.read_bytes()
        digest.update(rel.encode() + b"\0" + hashlib.sha256(data).digest())
        dst = stage / rel
        if not dst.exists() or dst.read_bytes() != data:
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dst)
    # Remove files deleted from the repository (the build directory is kept).
    for path in stage.rglob("*"):
        rel = path.relative_to(stage).as_posix()
        if path.is_file() and not rel.startswith("build/") and rel not in wanted and rel != "README.md":
            path.unlink()
    readme = stage / "README.md"
    if "README.md" not in wanted:
        # pyproject.toml names README.md as the long description; stub it if the checkout lacks it.
        readme.write_text("xg2_plugin (staged for the benchmark build)\n")
    return digest.hexdigest()


def _stamp_ok(stamp: Path, value: str) -> bool:
    return stamp.is_file() and stamp.read_text().strip() == value


def main() -> int:
    """Installs the pinned tools and (re)builds our package when its sources changed."""
    if sys.prefix == sys.base_prefix:
        print("setup_env.py must run inside the benchmark virtual environment", file=sys.stderr)
        return 2
    venv = Path(sys.prefix)
    req_value = hashlib.sha256("\n".join([TORCH_REQUIREMENT, *REQUIREMENTS]).encode()).hexdigest()
    req_stamp = venv / ".bench-requirements"
    if not _stamp_ok(req_stamp, req_value):
        _pip("install", "--upgrade", "pip")
        _pip("install", TORCH_REQUIREMENT)
        _pip("install", *REQUIREMENTS)
        req_stamp.write_text(req_value)
    stage = venv / "xg2-src"
    stage.mkdir(exist_ok=True)
    src_value = _sync_sources(stage)
    src_stamp = venv / ".bench-xg2-sources"
    if not _stamp_ok(src_stamp, src_value) or os.environ.get("XG2_BENCH_REBUILD"):
        print(f"building xg2_plugin from {REPO_ROOT} (staged in {stage}); this takes a few minutes the first time")
        # A local directory is always rebuilt and reinstalled by pip; the build tree under
        # the staged copy makes that incremental.
        _pip("install", str(stage))
        src_stamp.write_text(src_value)
    return 0


if __name__ == "__main__":
    sys.exit(main())
