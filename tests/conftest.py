"""Shared pytest fixtures."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="session")
def data_dir() -> Path:
    """The shared test data (tokenizers, corpora): $XG2_DATA_DIR or <repo root>/../shared/data.

    Tests that use it are skipped when the directory is missing.
    """
    path = Path(os.environ.get("XG2_DATA_DIR", REPO_ROOT.parent / "shared" / "data"))
    if not path.is_dir():
        pytest.skip(f"test data not found at {path} (set XG2_DATA_DIR)")
    return path
