"""Shared fixtures: where the shared datasets live, seeded generators."""
import os
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[1]


def shared_data_dir() -> Path:
    """FASTCON_DATA, else the checkout's sibling ``shared/data`` (ARCHITECTURE.md, "Data")."""
    env = os.environ.get("FASTCON_DATA")
    return Path(env) if env else REPO.parent / "shared" / "data"


@pytest.fixture(scope="session")
def data_home() -> Path:
    path = shared_data_dir()
    if not (path / "MANIFEST.md").exists():
        # Real-data tests must not pass silently without their data (CI exports FASTCON_DATA).
        pytest.fail(f"shared datasets not found at {path}; set FASTCON_DATA to the shared/data folder")
    return path


@pytest.fixture
def rng():
    return np.random.default_rng(12345)
