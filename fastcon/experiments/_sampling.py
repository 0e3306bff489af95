"""Seeded row subsampling of the experiments' quick modes."""
from __future__ import annotations

import numpy as np

__all__ = ["subsample"]


def subsample(n, limit, rng) -> np.ndarray:
    """Positions of ``limit`` of ``n`` rows drawn without replacement by ``rng``, ascending; all rows
    (and no draw from ``rng``) when ``limit`` is None or at least ``n``."""
    if limit is None or n <= limit:
        return np.arange(n)
    return np.sort(rng.choice(n, size=limit, replace=False))
