"""Argument checks shared by every term's oracles: one wording of each error, everywhere."""
from __future__ import annotations

import numpy as np

from .._kernels._checks import all_finite
from .._memory_limit import check_memory

__all__ = ["check_choice", "check_groups", "check_memory", "check_nonnegative", "check_out", "check_rows", "check_x"]


def check_x(x, n_features, field="x", finite_from=0):
    """``x`` as a C-contiguous finite float64 vector of length ``n_features``.

    Only ``x[finite_from:]`` is scanned for NaN/inf: a term whose leading block is huge and read
    sparsely (the transport plan of Wasserstein fairness) checks its returned value instead.
    """
    x = np.asarray(x)
    if x.shape != (n_features,):
        raise ValueError(f"{field}: expected shape ({n_features},), got {x.shape}")
    if x.dtype != np.float64 or not x.flags.c_contiguous:
        x = np.ascontiguousarray(x, dtype=np.float64)
    if not all_finite(x[finite_from:]):
        raise ValueError(f"{field}: contains NaN or inf")
    return x


def check_out(out, n_features):
    """``out`` must be a writeable C-contiguous float64 vector (kernels write into it)."""
    if not isinstance(out, np.ndarray) or out.shape != (n_features,):
        raise ValueError(f"out: expected a float64 array of shape ({n_features},)")
    if out.dtype != np.float64:
        raise ValueError(f"out: expected dtype float64, got {out.dtype}")
    if not out.flags.c_contiguous or not out.flags.writeable:
        raise ValueError("out: must be a writeable C-contiguous array")
    return out


def check_rows(rows, n_samples):
    """Non-empty 1-D integer row indices in ``[0, n_samples)``, as int64 or uint64 for the kernels."""
    rows = np.asarray(rows)
    if rows.ndim != 1 or (rows.dtype.kind not in "iu" and rows.size):
        raise ValueError("rows: expected a 1-D array of integer row indices")
    if rows.size == 0:
        raise ValueError("rows: empty; a subset estimate needs at least one row")
    if rows.dtype.kind == "i" and rows.min() < 0:
        raise ValueError(f"rows: negative index {int(rows.min())}")
    if rows.max() >= n_samples:
        raise ValueError(f"rows: index {int(rows.max())} out of range for {n_samples} rows")
    if rows.dtype not in (np.int64, np.uint64) or not rows.flags.c_contiguous:
        rows = np.ascontiguousarray(rows, dtype=np.int64)
    return rows


def check_groups(groups, n, n_groups=None, allow_empty=False):
    """``(groups as int64, G, sizes)``; ids must be integers in ``[0, G)``, G given or ``max + 1``."""
    groups = np.asarray(groups)
    if groups.ndim != 1 or groups.shape[0] != n:
        raise ValueError(f"groups: expected shape ({n},), got {groups.shape}")
    if groups.dtype.kind not in "biu" and not (
            groups.dtype.kind == "f" and np.all(np.isfinite(groups)) and np.all(groups == np.round(groups))):
        raise ValueError(f"groups: group ids must be integers 0..G-1, got dtype {groups.dtype}")
    groups = np.ascontiguousarray(groups, dtype=np.int64)
    if n_groups is None:
        n_groups = int(groups.max()) + 1 if n else 0
    else:
        if isinstance(n_groups, bool) or not isinstance(n_groups, (int, np.integer)) or n_groups < 1:
            raise ValueError(f"n_groups: expected a positive integer, got {n_groups!r}")
        n_groups = int(n_groups)
    if n and (groups.min() < 0 or groups.max() >= n_groups):
        bad = int(groups[(groups < 0) | (groups >= n_groups)][0])
        raise ValueError(f"groups: group id {bad} out of range [0, {n_groups})")
    sizes = np.bincount(groups, minlength=n_groups)
    if not allow_empty and np.any(sizes == 0):
        raise ValueError(f"groups: group {int(np.flatnonzero(sizes == 0)[0])} is empty (ids must be 0..G-1, "
                         "every group non-empty: its rates are means over its rows)")
    return groups, n_groups, sizes



def check_nonnegative(value, field):
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{field}: expected a real number, got {type(value).__name__}")
    value = float(value)
    if not (np.isfinite(value) and value >= 0.0):
        raise ValueError(f"{field}: expected a finite number >= 0, got {value}")
    return value


def check_choice(name, value, choices):
    """``value`` if it is one of ``choices``; a ValueError naming the field ``name`` otherwise."""
    if value not in choices:
        raise ValueError(f"{name}: expected one of {choices}, got {value!r}")
    return value
