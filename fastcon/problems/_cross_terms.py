r"""Cross-term features: one affine model per group as a single linear model (He, Huang, Yao & Lin [HHYL25] §7)."""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ..datasets._dataset import _as_design
from ._validation import check_groups

__all__ = ["cross_term_features"]


def cross_term_features(X, groups, n_groups=None):
    r"""Cross-term features :math:`\tilde x = (1, \xi, e_1, e_1\xi, \dots, e_{G-1}, e_{G-1}\xi)`, :math:`e_k = \mathbf 1\{\gamma = k\}`.

    The linear model :math:`\langle w, \tilde x\rangle` is then a separate affine model per group
    (group 0 the reference, group :math:`k` adding its own intercept and slopes): for :math:`G = 2`
    the model :math:`\langle w, (1, \xi, \gamma, \gamma\xi)\rangle` of He, Huang, Yao & Lin [HHYL25] §7.

    Parameters
    ----------
    X : ndarray or scipy.sparse matrix of shape (n, d)
        Finite values. Sparse input gives CSR output, built without densifying; dense input gives
        a C-contiguous float64 array.
    groups : array-like of int, shape (n,)
        Group id of every row, ``0..G-1``.
    n_groups : int, optional
        :math:`G` (default ``max(groups) + 1``); give it to build the features of a sample that
        misses some group (their columns are then zero), e.g. a test split.

    Returns
    -------
    ndarray or scipy.sparse.csr_matrix of shape (n, (d + 1) G)
        Column block :math:`k` (columns ``k(d+1) .. (k+1)(d+1) - 1``) is :math:`(1, \xi)` for every
        row when :math:`k = 0`, and :math:`e_k(1, \xi)` otherwise.
    """
    X = _as_design(X, copy=False)
    n, d = X.shape
    if n == 0 and n_groups is None:
        raise ValueError("X: has no rows, so the number of groups is unknown; pass n_groups")
    groups, n_groups, _ = check_groups(groups, n, n_groups, allow_empty=True)
    width = d + 1
    if not sp.issparse(X):
        out = np.zeros((n, width * n_groups))
        out[:, 0] = 1.0
        out[:, 1:width] = X
        for k in range(1, n_groups):
            rows = groups == k
            out[rows, k * width] = 1.0
            out[rows, k * width + 1:(k + 1) * width] = X[rows]
        return out
    # Base block B = [1, X] (canonical CSR: the constant column first), then every row of group
    # k >= 1 repeats its B entries shifted by k(d + 1) columns: sorted indices by construction.
    x_len = np.diff(X.indptr).astype(np.int64)
    b_len = x_len + 1
    b_ptr = np.concatenate([[0], np.cumsum(b_len)])
    x_row = np.repeat(np.arange(n), x_len)
    x_pos = b_ptr[x_row] + 1 + (np.arange(X.nnz) - X.indptr[x_row])
    b_ind = np.zeros(int(b_ptr[-1]), dtype=np.int64)
    b_dat = np.ones(int(b_ptr[-1]))
    b_ind[x_pos] = X.indices + 1
    b_dat[x_pos] = X.data
    crossed = groups >= 1
    length = b_len * (1 + crossed)
    ptr = np.concatenate([[0], np.cumsum(length)])
    row = np.repeat(np.arange(n), b_len)
    offset = np.arange(b_ind.shape[0]) - b_ptr[row]
    indices = np.empty(int(ptr[-1]), dtype=np.int64)
    data = np.empty(int(ptr[-1]))
    first = ptr[row] + offset
    indices[first] = b_ind
    data[first] = b_dat
    sel = crossed[row]
    second = ptr[row[sel]] + b_len[row[sel]] + offset[sel]
    indices[second] = b_ind[sel] + groups[row[sel]] * width
    data[second] = b_dat[sel]
    index_dtype = np.int32 if max(int(ptr[-1]), width * n_groups) < 2 ** 31 else np.int64
    return sp.csr_matrix((data, indices.astype(index_dtype), ptr.astype(index_dtype)), shape=(n, width * n_groups))
