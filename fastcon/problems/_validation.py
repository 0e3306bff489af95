"""Argument checks shared by every term's oracles: one wording of each error, everywhere."""
from __future__ import annotations

import numpy as np

from .._kernels._checks import all_finite

__all__ = ["check_x", "check_out", "check_rows"]


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
