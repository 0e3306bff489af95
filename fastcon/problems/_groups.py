r"""Shared plumbing of two-group terms (ROC fairness, demographic parity): rows, batches, CSR bundles.

Rows of a two-group term are numbered as the concatenation ``[rows of group p, rows of group u]``.
A minibatch is *stratified*: both groups must be present, because a group mean over no rows is
undefined. :func:`stratified_sizes` splits a batch size proportionally to the group sizes (at
least one row of each), and :func:`stratified_rows` draws such a batch, group p rows first.
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

__all__ = ["stratified_sizes", "stratified_rows", "split_group_rows", "stacked_csr"]


def stratified_sizes(batch, n_p, n_u):
    r"""``(k_p, k_u)`` with :math:`k_p + k_u` = ``batch``, :math:`k_p \approx` ``batch`` :math:`n_p/(n_p+n_u)`, both >= 1."""
    batch = int(batch)
    if batch < 2:
        raise ValueError(f"batch: a stratified batch needs at least 2 rows (one per group), got {batch}")
    if batch > n_p + n_u:
        raise ValueError(f"batch: {batch} rows requested, the two groups have {n_p + n_u}")
    k_p = int(round(batch * n_p / (n_p + n_u)))
    k_p = min(max(k_p, 1), n_p, batch - 1)
    k_u = batch - k_p
    if k_u > n_u:
        k_u, k_p = n_u, batch - n_u
    return k_p, k_u


def stratified_rows(rng, batch, n_p, n_u):
    """A stratified batch without replacement within each group: ``k_p`` rows of p, then ``k_u`` of u."""
    k_p, k_u = stratified_sizes(batch, n_p, n_u)
    rows_p = rng.choice(n_p, size=k_p, replace=False)
    rows_u = n_p + rng.choice(n_u, size=k_u, replace=False)
    return np.concatenate([rows_p, rows_u]).astype(np.int64)


def split_group_rows(rows, n_p, n_u):
    """Validated batch positions -> ``(rows_p, rows_u)`` (local indices, batch order); both non-empty."""
    rows = np.asarray(rows)
    if rows.ndim != 1 or (rows.dtype.kind not in "iu" and rows.size):
        raise ValueError("rows: expected a 1-D array of integer row indices")
    if rows.size == 0:
        raise ValueError("rows: empty; a subset estimate needs rows of both groups")
    rows = rows.astype(np.int64, copy=False)
    n = n_p + n_u
    if rows.min() < 0 or rows.max() >= n:
        bad = int(rows.min()) if rows.min() < 0 else int(rows.max())
        raise ValueError(f"rows: index {bad} out of range for {n} rows (n_p + n_u)")
    in_p = rows < n_p
    rows_p = np.ascontiguousarray(rows[in_p])
    rows_u = np.ascontiguousarray(rows[~in_p] - n_p)
    for name, r, where in (("p", rows_p, f"< {n_p}"), ("u", rows_u, f">= {n_p}")):
        if r.size == 0:
            raise ValueError(f"rows: the batch has no rows of group {name} (indices {where}); a group "
                             "mean needs rows of both groups (sample stratified by group)")
    return rows_p, rows_u


def stacked_csr(X_p, X_u):
    """``(indptr u64, indices u32, data f64)`` of the rows of p on top of the rows of u (dense as CSR)."""
    A = sp.vstack([sp.csr_matrix(X_p), sp.csr_matrix(X_u)], format="csr")
    A.sort_indices()
    return A.indptr.astype(np.uint64), A.indices.astype(np.uint32), A.data.astype(np.float64)
