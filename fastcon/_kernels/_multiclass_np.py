r"""Fused pass of the multi-class Neyman-Pearson loss of one class (Ma, Lin & Yang [MLY20] eq. 11).

For the rows :math:`a_i` of class :math:`k`, weights :math:`W \in \mathbb R^{C\times d}`, sample
weights :math:`s_i` and a margin loss :math:`\phi` (the paper's sigmoid, code ``SIGMOID``, or any
code of `fastcon._kernels._losses`) the kernels compute

.. math::

    L_k(W) = \frac{1}{N} \sum_{i \in R} s_i \sum_{l \ne k} \phi(m_{il}), \qquad
    m_{il} = (w_k - w_l)^\top a_i,

and :math:`\nabla_W L_k`, over all rows or a subset :math:`R`, for dense and CSR data, with
``feature_major`` (:math:`W^\top` given) and ``intercept`` variants. The value and value+gradient
kernels of one path return the same bits, whatever the number of threads.
Design notes: docs/design.md, 'Module notes'; measurements: docs/measurements.md.
"""
from typing import NamedTuple, Optional

import numpy as np
from numba import prange

from ._checks import finite_span
from ._jit import njit
from ._linalg import JIT, JIT_PARALLEL, MAX_CHUNKS, _chunk_span, _count, _entry, _row_at, n_chunks_for
from ._losses import SIGMOID, margin_loss
from ._memory import huge_page_zeros
from ._simd import add_scaled_4, add_tree8_4
from ._vecmath import exp_minus as _exp_minus

__all__ = ["BLAS_BLOCK_WORK", "CSR_BLOCK_ROWS", "PairwiseTerm", "pairwise_workspace",
           "csr_pairwise_value", "csr_pairwise_value_grad", "csr_full_pairwise_value", "csr_full_pairwise_value_grad",
           "dense_pairwise_value", "dense_pairwise_value_grad",
           "dense_blas_pairwise_value", "dense_blas_pairwise_value_grad"]

_ZERO = np.uint64(0)
# The per-block and per-chunk helpers (_block_losses, _csr_rows_losses, _csc_gradient) are compiled
# once and called, not inlined, so that the loss loops are not recompiled inside every kernel for every
# type combination (docs/design.md, Kernels); a call per block of rows or per chunk costs nothing
# measurable. Their flags are these typed constants: a literal True/False or 0 compiles one more copy
# per literal value.
_VALUE_ONLY, _WITH_GRAD = np.bool_(False), np.bool_(True)
_FIRST, _ONE_CHUNK = np.int64(0), np.int64(1)
_ONE = np.uint64(1)
_TWO = np.uint64(2)
_THREE = np.uint64(3)
_FOUR = np.uint64(4)
_EIGHT = np.uint64(8)

#: Multiply-adds (block rows x C x d) of one BLAS product in the dense full pass; below OpenBLAS's
#: threading threshold (4 x 65536), so BLAS stays single-threaded (module docstring).
BLAS_BLOCK_WORK = 1 << 17
#: Rows per block of the loss step on CSR blocks (the block's losses stay in L1).
CSR_BLOCK_ROWS = 128


class PairwiseTerm(NamedTuple):
    r"""What stays fixed across the calls on one class block: the loss :math:`L_k` and its layout.

    Built once per block (`fastcon.problems.ClassPairwiseRisk`) and passed to every kernel of
    this module as one argument; the point, the divisor, the row subset and the scratch change per call.
    """

    loss: int                         #: loss code of `fastcon._kernels._losses` (``SIGMOID`` in the paper)
    k: int                            #: the class of the rows, ``0 <= k < C``
    weights: Optional[np.ndarray]     #: float64 (n_k,) sample weights :math:`s_i`; None for all 1
    feature_major: bool               #: CSR kernels: the weights arrive as :math:`W^\top`; dense ones ignore it
    intercept: bool                   #: the rows carry an implicit last column of ones (module docstring, "Intercepts")


def pairwise_workspace(n_classes, n_features, n_rows, dense=False, transposes=True):
    """Scratch of the kernels for a class block of ``n_rows`` rows, allocated once per block.

    Parameters
    ----------
    n_classes, n_features, n_rows : int
        :math:`C`, :math:`d` and the rows :math:`n_k` of the class block.
    dense : bool
        Dense layout (BLAS blocks) instead of CSR.
    transposes : bool
        CSR only: allocate ``w_t`` and ``grad_t``. Without (the weights arrive as :math:`W^\top`,
        `PairwiseTerm.feature_major`) both are None.

    Returns
    -------
    tuple of ndarray
        CSR: ``(w_t, grad_t, S, P, acc)`` of shapes (d, C), (d, C), (n_k, C), (MAX_CHUNKS, b, C)
        and (MAX_CHUNKS, C + 1) with ``b = min(n_k, CSR_BLOCK_ROWS)``: full passes keep every
        row's coefficients in ``S`` and one block of losses per chunk in ``P``; row subsets use
        ``S[:b]`` and ``P[0]``; ``w_t``, ``grad_t`` and ``S`` are on huge pages where the system
        offers them (`fastcon._kernels._memory.huge_page_zeros`). Dense: ``(T, S, P)`` of shapes
        (C, d), (b, C), (b, C) with ``b = min(n_k, max(1, BLAS_BLOCK_WORK // (C d)))``.
    """
    C, d, n = int(n_classes), int(n_features), max(1, int(n_rows))
    if dense:
        b = min(n, max(1, BLAS_BLOCK_WORK // max(1, C * d)))
        return np.zeros((C, d)), np.zeros((b, C)), np.zeros((b, C))
    b = min(n, CSR_BLOCK_ROWS)
    # The tables read at random rows (w_t, grad_t, S) go on huge pages (`fastcon._kernels._memory`).
    w_t, grad_t = (huge_page_zeros((d, C)), huge_page_zeros((d, C))) if transposes else (None, None)
    return w_t, grad_t, huge_page_zeros((n, C)), np.zeros((MAX_CHUNKS, b, C)), np.zeros((MAX_CHUNKS, C + 1))


# --------------------------------------------------------------------------- one block of rows
@njit(**JIT)
def _block_losses(loss, S, P, m, kk, grad):
    r"""Scores ``S[:m]`` -> margins, losses :math:`\phi(m_{il})` into ``P[:m]`` and, with ``grad``,
    :math:`-\phi'(m_{il})` into ``S[:m]`` (column ``kk`` holds :math:`\phi(0)`, :math:`-\phi'(0)`;
    the callers skip it)."""
    C = np.uint64(S.shape[1])
    for i in range(m):
        sk = S[i, kk]
        for l in range(C):
            S[i, l] = sk - S[i, l]
    mc = m * C
    Sf = S.reshape(S.size)
    Pf = P.reshape(P.size)
    if loss == SIGMOID:
        # np.true_divide, not `/`: numba's `/` tests for a zero divisor (to raise ZeroDivisionError)
        # and that branch keeps LLVM from vectorising the loop (11.8 against 6.1 us on 7,800 margins).
        if grad:
            for j in range(mc):
                z = Sf[j]
                e = _exp_minus(abs(z))
                r = np.true_divide(1.0, 1.0 + e)
                s = e * r
                Pf[j] = s if z > 0.0 else r
                Sf[j] = s * r
        else:
            for j in range(mc):
                z = Sf[j]
                e = _exp_minus(abs(z))
                r = np.true_divide(1.0, 1.0 + e)
                Pf[j] = e * r if z > 0.0 else r
    else:
        for j in range(mc):
            v, dv = margin_loss(loss, Sf[j])
            Pf[j] = v
            Sf[j] = -dv


@njit(inline="always")
def _row_sum(P, i, kk, C):
    r""":math:`\sum_{l \ne k} P_{il}` in class order."""
    row = 0.0
    for l in range(kk):
        row += P[i, l]
    for l in range(kk + _ONE, C):
        row += P[i, l]
    return row


@njit(inline="always")
def _block_value(P, m, kk, weights, rows, b0, total):
    r"""``total`` plus :math:`\sum_{i} s_i \sum_{l \ne k} \phi(m_{il})` over the block (row order).

    Four rows at a time: each row's sum is a chain of dependent additions (no reordering without
    fastmath), so four chains side by side keep the adder busy; every row keeps its class order.
    """
    C = np.uint64(P.shape[1])
    m4 = m - m % _FOUR
    for i in range(_ZERO, m4, _FOUR):
        r0 = 0.0
        r1 = 0.0
        r2 = 0.0
        r3 = 0.0
        for l in range(kk):
            r0 += P[i, l]
            r1 += P[i + _ONE, l]
            r2 += P[i + _TWO, l]
            r3 += P[i + _THREE, l]
        for l in range(kk + _ONE, C):
            r0 += P[i, l]
            r1 += P[i + _ONE, l]
            r2 += P[i + _TWO, l]
            r3 += P[i + _THREE, l]
        total += _entry(weights, _row_at(rows, b0 + i)) * r0
        total += _entry(weights, _row_at(rows, b0 + i + _ONE)) * r1
        total += _entry(weights, _row_at(rows, b0 + i + _TWO)) * r2
        total += _entry(weights, _row_at(rows, b0 + i + _THREE)) * r3
    for i in range(m4, m):
        total += _entry(weights, _row_at(rows, b0 + i)) * _row_sum(P, i, kk, C)
    return total


@njit(inline="always")
def _coef_entry(P, S, i, l, c, row, slope):
    """One class of one row in :func:`_block_value_coef`: returns the updated (row, slope)."""
    q = S[i, l]
    S[i, l] = c * q
    return row + P[i, l], slope + q


@njit(inline="always")
def _block_value_coef(P, S, m, kk, weights, rows, b0, inv, total):
    r""":func:`_block_value`, and ``S[i]`` (holding :math:`-\phi'`) overwritten with :math:`b_i / N`.

    :math:`b_{il}/N = c\,(-\phi'(m_{il}))` for :math:`l \ne k` and
    :math:`b_{ik}/N = -c \sum_{l\ne k} (-\phi'(m_{il}))`, with :math:`c = s_i / N`. Four rows
    at a time, as in :func:`_block_value` (the sums of a row are the same as one row at a time).
    """
    C = np.uint64(P.shape[1])
    m4 = m - m % _FOUR
    for i in range(_ZERO, m4, _FOUR):
        i1 = i + _ONE
        i2 = i + _TWO
        i3 = i + _THREE
        w0 = _entry(weights, _row_at(rows, b0 + i))
        w1 = _entry(weights, _row_at(rows, b0 + i1))
        w2 = _entry(weights, _row_at(rows, b0 + i2))
        w3 = _entry(weights, _row_at(rows, b0 + i3))
        c0 = inv * w0
        c1 = inv * w1
        c2 = inv * w2
        c3 = inv * w3
        r0 = r1 = r2 = r3 = 0.0
        s0 = s1 = s2 = s3 = 0.0
        for l in range(kk):
            r0, s0 = _coef_entry(P, S, i, l, c0, r0, s0)
            r1, s1 = _coef_entry(P, S, i1, l, c1, r1, s1)
            r2, s2 = _coef_entry(P, S, i2, l, c2, r2, s2)
            r3, s3 = _coef_entry(P, S, i3, l, c3, r3, s3)
        for l in range(kk + _ONE, C):
            r0, s0 = _coef_entry(P, S, i, l, c0, r0, s0)
            r1, s1 = _coef_entry(P, S, i1, l, c1, r1, s1)
            r2, s2 = _coef_entry(P, S, i2, l, c2, r2, s2)
            r3, s3 = _coef_entry(P, S, i3, l, c3, r3, s3)
        S[i, kk] = -c0 * s0
        S[i1, kk] = -c1 * s1
        S[i2, kk] = -c2 * s2
        S[i3, kk] = -c3 * s3
        total += w0 * r0
        total += w1 * r1
        total += w2 * r2
        total += w3 * r3
    for i in range(m4, m):
        wi = _entry(weights, _row_at(rows, b0 + i))
        c = inv * wi
        row = 0.0
        slope = 0.0
        for l in range(kk):
            row, slope = _coef_entry(P, S, i, l, c, row, slope)
        for l in range(kk + _ONE, C):
            row, slope = _coef_entry(P, S, i, l, c, row, slope)
        S[i, kk] = -c * slope
        total += wi * row
    return total


@njit(inline="always")
def _any_nonzero(S, i):
    for l in range(np.uint64(S.shape[1])):
        if S[i, l] != 0.0:
            return True
    return False


# --------------------------------------------------------------------------- implicit intercept column
@njit(inline="always")
def _add_row(S, r, M, j):
    """``S[r, :C] += M[j]`` (C = ``M.shape[1]``): the intercepts' scores, column ``j`` of a row being 1."""
    for l in range(np.uint64(M.shape[1])):
        S[r, l] += M[j, l]


@njit(inline="always")
def _add_col(S, r, W, j):
    """``S[r, l] += W[l, j]`` for every class l: the intercepts' scores from W (C, d + 1)."""
    for l in range(np.uint64(W.shape[0])):
        S[r, l] += W[l, j]


@njit(**JIT)
def _rows_sum(B, n, out, r):
    r"""``out[r, :C] = sum_{i < n} B[i]`` (C = ``B.shape[1]``), in row order, eight rows at a time
    summed as the tree of :func:`_sparse_row_times`: the intercepts' column of :math:`B^	op A`
    (a column of ones), the same bits as a stored column of ones would give."""
    C = np.uint64(B.shape[1])
    n = np.uint64(n)
    n8 = n // _EIGHT * _EIGHT
    for l in range(C):
        out[r, l] = 0.0
    for p in range(_ZERO, n8, _EIGHT):
        for l in range(C):
            out[r, l] += (((B[p, l] + B[p + _ONE, l]) + (B[p + _TWO, l] + B[p + _THREE, l]))
                          + ((B[p + _FOUR, l] + B[p + np.uint64(5), l])
                             + (B[p + np.uint64(6), l] + B[p + np.uint64(7), l])))
    for p in range(n8, n):
        for l in range(C):
            out[r, l] += B[p, l]


@njit(**JIT)
def _intercept_gradient(B, n, G, acc, j, feature_major):
    """Gradient of the intercepts (column ``j`` = d of W) from the coefficient rows ``B[:n]``: row
    ``j`` of ``G`` when ``feature_major``, else column ``j`` through row 0 of ``acc``."""
    if feature_major:
        _rows_sum(B, n, G, j)
    else:
        _rows_sum(B, n, acc, _ZERO)
        for l in range(np.uint64(B.shape[1])):
            G[l, j] = acc[0, l]


# --------------------------------------------------------------------------- transposes
_TILE = np.uint64(16)


@njit(inline="always")
def _transpose_into(W, w_t):
    """``w_t[j, l] = W[l, j]``."""
    _transpose_cols(W, w_t, _ZERO, np.uint64(W.shape[1]))


@njit(inline="always")
def _transpose_cols(W, w_t, lo, hi):
    """``w_t[j, l] = W[l, j]`` for columns ``lo <= j < hi``, in tiles of 16 columns (both sides stay in L1)."""
    C = np.uint64(W.shape[0])
    for j0 in range(lo, hi, _TILE):
        j1 = min(hi, j0 + _TILE)
        for j in range(j0, j1):
            for l in range(C):
                w_t[j, l] = W[l, j]


@njit(inline="always")
def _untranspose_into(grad_t, G):
    """``G[l, j] = grad_t[j, l]`` (overwrites ``G``), in tiles of 16 columns."""
    C = np.uint64(G.shape[0])
    d = np.uint64(G.shape[1])
    for j0 in range(_ZERO, d, _TILE):
        j1 = min(d, j0 + _TILE)
        for l in range(C):
            for j in range(j0, j1):
                G[l, j] = grad_t[j, l]


# --------------------------------------------------------------------------- CSR rows
@njit(inline="always")
def _sparse_row_times(X, i, M, S, r):
    r"""``S[r] = sum_p data[p] M[indices[p]]`` over the stored entries p of row ``i`` of the `CSR` ``X``.

    With CSR rows and ``M = w_t`` these are the scores :math:`S_{rl} = a_i^\top w_l`; with CSC
    columns and ``M = B`` a column of :math:`B^\top A`. Entries eight at a time: one
    read-modify-write of ``S[r]`` per eight entries, summed as a fixed tree, so results are
    deterministic; the classes four at a time in vector code (`fastcon._kernels._simd`), the last
    ``C % 4`` by the same formula in scalar code. Only the first ``C = M.shape[1]`` entries of
    ``S[r]`` are written (``S`` may be wider).
    """
    indptr, indices, data = X
    C = np.uint64(M.shape[1])
    C4 = C - C % _FOUR
    a = indptr[i]
    b = indptr[i + _ONE]
    b8 = a + (b - a) // _EIGHT * _EIGHT
    for l in range(C):
        S[r, l] = 0.0
    for p in range(a, b8, _EIGHT):
        v0 = _entry(data, p)
        v1 = _entry(data, p + _ONE)
        v2 = _entry(data, p + _TWO)
        v3 = _entry(data, p + _THREE)
        v4 = _entry(data, p + _FOUR)
        v5 = _entry(data, p + np.uint64(5))
        v6 = _entry(data, p + np.uint64(6))
        v7 = _entry(data, p + np.uint64(7))
        c0 = indices[p]
        c1 = indices[p + _ONE]
        c2 = indices[p + _TWO]
        c3 = indices[p + _THREE]
        c4 = indices[p + _FOUR]
        c5 = indices[p + np.uint64(5)]
        c6 = indices[p + np.uint64(6)]
        c7 = indices[p + np.uint64(7)]
        for l in range(_ZERO, C4, _FOUR):
            add_tree8_4(S, r, M, l, (c0, c1, c2, c3, c4, c5, c6, c7), (v0, v1, v2, v3, v4, v5, v6, v7))
        for l in range(C4, C):
            S[r, l] += (((v0 * M[c0, l] + v1 * M[c1, l]) + (v2 * M[c2, l] + v3 * M[c3, l]))
                        + ((v4 * M[c4, l] + v5 * M[c5, l]) + (v6 * M[c6, l] + v7 * M[c7, l])))
    for p in range(b8, b):
        v = _entry(data, p)
        col = indices[p]
        for l in range(_ZERO, C4, _FOUR):
            add_scaled_4(S, r, M, l, col, v)
        for l in range(C4, C):
            S[r, l] += v * M[col, l]


@njit(inline="always")
def _csr_scatter(X, i, S, r, grad_t):
    """``grad_t[j] += a_ij * S[r]`` for the stored entries of row ``i`` of the `CSR` ``X``."""
    indptr, indices, data = X
    C = np.uint64(S.shape[1])
    for p in range(indptr[i], indptr[i + _ONE]):
        v = _entry(data, p)
        col = indices[p]
        for l in range(C):
            grad_t[col, l] += v * S[r, l]


# --------------------------------------------------------------------------- CSR passes
@njit(**JIT)
def csr_pairwise_value(term, X, divisor, rows, W, w_t, S, P):
    r"""Value :math:`\frac1N \sum_{i\in R} s_i \sum_{l\ne k} \phi((w_k - w_l)^\top a_i)` of a CSR class block.

    Parameters
    ----------
    term : PairwiseTerm
        Loss code, class ``k``, sample weights, ``feature_major`` (the weights arrive as ``w_t``,
        the ``"features"`` layout of `fastcon.problems.ClassPairwiseRisk`, so no transpose is
        made) and ``intercept`` (the rows carry an implicit last column of ones: ``W`` has d + 1
        columns, ``w_t`` d + 1 rows, the last one the classes' intercepts, for rows of d
        features; module docstring).
    X : CSR
        The rows of class ``k`` (`fastcon._kernels._linalg.CSR`: uint64 ``indptr``, uint16 or
        uint32 ``indices``, float64 ``data`` or None for binary features).
    divisor : float
        :math:`N`, e.g. ``n_k`` (see the module docstring for why not a scale).
    rows : ndarray of int64 or uint64, or None
        Row subset :math:`R` (positions in the class block, checked by the caller); None for all.
    W : ndarray of float64, shape (C, d), C-contiguous
        One weight row per class (not read when ``feature_major``).
    w_t : ndarray of float64, shape (d, C)
        Scratch, overwritten with the transpose of ``W``; with ``feature_major`` the weights
        themselves, :math:`W^\top` (read only).
    S, P : ndarray of float64, shapes (>= b, C) and (b, C)
        Scratch of one block of ``b = P.shape[0] >= 1`` rows (:func:`pairwise_workspace`).

    Returns
    -------
    float
    """
    loss, weights, intercept = term.loss, term.weights, term.intercept
    m = np.uint64(_count(rows, X.indptr.shape[0] - 1))
    kk = np.uint64(term.k)
    br = np.uint64(P.shape[0])
    dx = np.uint64(w_t.shape[0] - 1)
    if not term.feature_major:
        _transpose_into(W, w_t)
    total = 0.0
    for b0 in range(_ZERO, m, br):
        mb = min(br, m - b0)
        for r in range(mb):
            _sparse_row_times(X, _row_at(rows, b0 + r), w_t, S, r)
            if intercept:
                _add_row(S, r, w_t, dx)
        _block_losses(loss, S, P, mb, kk, _VALUE_ONLY)
        total = _block_value(P, mb, kk, weights, rows, b0, total)
    return total / divisor


@njit(**JIT)
def csr_pairwise_value_grad(term, X, divisor, rows, W, G, w_t, grad_t, S, P):
    r"""Value and gradient of :math:`L_k` (module docstring) on a CSR class block.

    Arguments as in :func:`csr_pairwise_value`; ``G`` (float64, shape (C, d), C-contiguous) is
    overwritten with :math:`\nabla_W L_k`, and ``grad_t`` (shape (d, C)) is scratch. With
    ``term.feature_major`` the gradient is accumulated straight into ``grad_t``, which is then the
    output :math:`(\nabla_W L_k)^\top` (``G`` is not written). With ``term.intercept`` the last row of
    ``grad_t`` sums the rows' coefficients. Returns the value.
    """
    loss, weights, intercept, feature_major = term.loss, term.weights, term.intercept, term.feature_major
    m = np.uint64(_count(rows, X.indptr.shape[0] - 1))
    kk = np.uint64(term.k)
    br = np.uint64(P.shape[0])
    dx = np.uint64(w_t.shape[0] - 1)
    inv = 1.0 / divisor
    if not feature_major:
        _transpose_into(W, w_t)
    grad_t[:, :] = 0.0
    total = 0.0
    for b0 in range(_ZERO, m, br):
        mb = min(br, m - b0)
        for r in range(mb):
            _sparse_row_times(X, _row_at(rows, b0 + r), w_t, S, r)
            if intercept:
                _add_row(S, r, w_t, dx)
        _block_losses(loss, S, P, mb, kk, _WITH_GRAD)
        total = _block_value_coef(P, S, mb, kk, weights, rows, b0, inv, total)
        for r in range(mb):
            if _any_nonzero(S, r):  # e.g. hinge rows past the margin add nothing
                _csr_scatter(X, _row_at(rows, b0 + r), S, r, grad_t)
                if intercept:
                    _add_row(grad_t, dx, S, r)
    if not feature_major:
        _untranspose_into(grad_t, G)
    return total / divisor


@njit(**JIT)
def _csc_gradient(Xc, B, G, acc, c, lo, hi, feature_major):
    """``G[:, j] = sum_i a_ij B[i]`` for the CSC columns ``lo..hi-1`` (``Xc``), through row ``c`` of ``acc``;
    when ``feature_major``, ``G[j, :]``, summed in place (a contiguous row: no copy through ``acc``)."""
    C = np.uint64(B.shape[1])
    for j in range(lo, hi):
        if feature_major:
            _sparse_row_times(Xc, j, B, G, j)
        else:
            _sparse_row_times(Xc, j, B, acc, c)
            for l in range(C):
                G[l, j] = acc[c, l]


@njit(**JIT)
def _full_pass_chunks(indptr, n_classes):
    """Row chunks of a full CSR pass: a function of the data only (see ``n_chunks_for``).

    A stored entry costs about C/4 entries of a mat-vec (one 4-wide vector operation per four
    classes), so the work handed to ``n_chunks_for`` is nnz C / 4.
    """
    n = indptr.shape[0] - 1
    return n_chunks_for(n, np.int64(indptr[n]) * n_classes // 4, 1)


@njit(**JIT)
def _csr_rows_losses(term, X, inv, w_t, S, P, grad, c, n_chunks):
    """Steps 1-2 for the rows of chunk ``c`` of ``n_chunks`` (``_chunk_span``), in blocks of
    ``P.shape[0]`` rows: scores into ``S[lo:hi]``, losses into ``P`` and, with ``grad``, the
    coefficients :math:`b_i / N` into ``S[lo:hi]``. Returns the rows' weighted loss sum, or NaN
    (and nothing computed) when chunk ``c`` of the rows of ``w_t`` holds a NaN or an infinity: the
    chunks share the finiteness check of the point (the callers raise on a NaN value after a full
    check). With ``term.intercept`` the last row of ``w_t`` holds the intercepts (rows of
    ``w_t.shape[0] - 1`` features)."""
    loss, weights, intercept = term.loss, term.weights, term.intercept
    kk = np.uint64(term.k)
    lo, hi = _chunk_span(c, n_chunks, X.indptr.shape[0] - 1)
    C = np.uint64(w_t.shape[1])
    t_lo, t_hi = _chunk_span(c, n_chunks, w_t.shape[0])
    if not finite_span(w_t.reshape(w_t.size), np.uint64(t_lo) * C, np.uint64(t_hi) * C):
        return np.nan
    br = np.uint64(P.shape[0])
    total = 0.0
    for b0 in range(lo, hi, br):
        b1 = min(hi, b0 + br)
        for r in range(b0, b1):
            _sparse_row_times(X, r, w_t, S, r)
            if intercept:
                _add_row(S, r, w_t, np.uint64(w_t.shape[0] - 1))
        Sb = S[b0:b1]
        _block_losses(loss, Sb, P, np.uint64(b1 - b0), kk, grad)
        if grad:
            total = _block_value_coef(P, Sb, b1 - b0, kk, weights, None, b0, inv, total)
        else:
            total = _block_value(P, b1 - b0, kk, weights, None, b0, total)
    return total


@njit(**JIT_PARALLEL)
def csr_full_pairwise_value(term, X, divisor, W, w_t, S, P, acc):
    r"""Value of :math:`L_k` over every row of a CSR class block; bit-identical to :func:`csr_full_pairwise_value_grad`.

    Arguments as in :func:`csr_full_pairwise_value_grad`. Large blocks run in parallel row chunks
    (``_full_pass_chunks``), whose loss sums are added in chunk order.
    """
    feature_major = term.feature_major
    C = w_t.shape[1]
    d = w_t.shape[0]
    n_chunks = _full_pass_chunks(X.indptr, C)
    if n_chunks == 1:
        if not feature_major:
            _transpose_into(W, w_t)
        total = _csr_rows_losses(term, X, 1.0, w_t, S, P[0], _VALUE_ONLY, _FIRST, _ONE_CHUNK)
        return total / divisor
    if not feature_major:
        for c in prange(n_chunks):
            lo, hi = _chunk_span(c, n_chunks, d)
            _transpose_cols(W, w_t, lo, hi)
    for c in prange(n_chunks):
        acc[c, C] = _csr_rows_losses(term, X, 1.0, w_t, S, P[c], _VALUE_ONLY, np.int64(c), np.int64(n_chunks))
    total = 0.0
    for c in range(n_chunks):
        total += acc[c, C]
    return total / divisor


@njit(**JIT_PARALLEL)
def csr_full_pairwise_value_grad(term, X, Xc, divisor, W, G, w_t, S, P, acc):
    r"""Value and gradient of :math:`L_k` over every row of a CSR class block, the gradient from its CSC copy.

    Steps 1-2 (module docstring) for all rows, then :math:`\nabla_{:, j} = \sum_{i} a_{ij} b_i / N`
    column by column from the CSC copy: each column gathers the coefficient rows of its entries
    into a row of ``acc`` and is written once, instead of scattering every entry into ``grad_t``.
    Large blocks run both steps in parallel chunks (rows, then columns; ``_full_pass_chunks``):
    rows and columns are computed whole by one thread and the chunks' loss sums are added in chunk
    order, so the results do not depend on the number of threads.

    Parameters
    ----------
    term, X, divisor, W, w_t
        As in :func:`csr_pairwise_value` (all rows: no ``rows``). With ``term.feature_major``
        ``w_t`` holds the weights and ``G`` is written transposed; with ``term.intercept``, ``W``
        and ``G`` have d + 1 columns (``w_t`` d + 1 rows) for a CSC copy of d columns, and the
        intercepts' gradient is the sum of the rows' coefficients (``_intercept_gradient``),
        which the CSC copy does not hold.
    Xc : CSR
        The same block in CSC, as the `CSR` record of its transpose (uint64 ``indptr`` over
        columns, uint16 or uint32 row positions, float64 ``data`` or None for binary features).
    G : ndarray of float64, shape (C, d), C-contiguous
        Overwritten with :math:`\nabla_W L_k`; with ``feature_major``, shape (d, C) and overwritten
        with :math:`(\nabla_W L_k)^\top`.
    S : ndarray of float64, shape (n_k, C)
        Scratch: every row's scores, then coefficients.
    P : ndarray of float64, shape (MAX_CHUNKS, b, C)
        Scratch: the losses of a block of ``b`` rows, one block buffer per chunk.
    acc : ndarray of float64, shape (MAX_CHUNKS, C + 1)
        Scratch (per chunk: one gradient column and a loss sum).

    Returns
    -------
    float
    """
    feature_major = term.feature_major
    n = X.indptr.shape[0] - 1
    d = Xc.indptr.shape[0] - 1
    dw = w_t.shape[0]  # d, or d + 1 with the intercepts
    C = w_t.shape[1]
    inv = 1.0 / divisor
    icpt = term.intercept
    n_chunks = _full_pass_chunks(X.indptr, C)
    if n_chunks == 1:
        if not feature_major:
            _transpose_into(W, w_t)
        total = _csr_rows_losses(term, X, inv, w_t, S, P[0], _WITH_GRAD, _FIRST, _ONE_CHUNK)
        _csc_gradient(Xc, S, G, acc, _ZERO, _ZERO, np.uint64(d), feature_major)
        if icpt:
            _intercept_gradient(S, n, G, acc, np.uint64(d), feature_major)
        return total / divisor
    if not feature_major:
        for c in prange(n_chunks):
            lo, hi = _chunk_span(c, n_chunks, dw)
            _transpose_cols(W, w_t, lo, hi)
    for c in prange(n_chunks):
        acc[c, C] = _csr_rows_losses(term, X, inv, w_t, S, P[c], _WITH_GRAD, np.int64(c), np.int64(n_chunks))
    total = 0.0
    for c in range(n_chunks):
        total += acc[c, C]
    for c in prange(n_chunks):
        lo, hi = _chunk_span(c, n_chunks, d)
        _csc_gradient(Xc, S, G, acc, np.uint64(c), lo, hi, feature_major)
    if icpt:  # n C additions, serial: a small part of the pass
        _intercept_gradient(S, n, G, acc, np.uint64(d), feature_major)
    return total / divisor


# --------------------------------------------------------------------------- dense rows (per-row loop)
@njit(inline="always")
def _dense_dot4(X, i, W, l):
    """``a_i^T w_l`` with four interleaved partial sums (vectorisable without fastmath)."""
    d = np.uint64(X.shape[1])
    d4 = d - d % _FOUR
    s0 = 0.0
    s1 = 0.0
    s2 = 0.0
    s3 = 0.0
    for j in range(_ZERO, d4, _FOUR):
        s0 += X[i, j] * W[l, j]
        s1 += X[i, j + _ONE] * W[l, j + _ONE]
        s2 += X[i, j + _TWO] * W[l, j + _TWO]
        s3 += X[i, j + _THREE] * W[l, j + _THREE]
    for j in range(d4, d):
        s0 += X[i, j] * W[l, j]
    return (s0 + s2) + (s1 + s3)


@njit(inline="always")
def _dense_scores(X, i, W, S, r):
    """``S[r, l] = a_i^T w_l`` for every class l, from dense row ``i``."""
    for l in range(np.uint64(S.shape[1])):
        S[r, l] = _dense_dot4(X, i, W, l)


@njit(**JIT)
def dense_pairwise_value(term, X, divisor, rows, W, S, P):
    """Dense counterpart of :func:`csr_pairwise_value` (``X`` C-contiguous float64, shape (n_k, d)).

    The per-row loop, for row subsets (minibatches); full passes are faster through
    :func:`dense_blas_pairwise_value`. No ``w_t`` scratch: dense rows are multiplied with the rows
    of ``W`` (C, d) directly, whatever ``term.feature_major``. With ``term.intercept``, ``W`` is
    (C, d + 1), its last column the intercepts.
    """
    loss, weights, intercept = term.loss, term.weights, term.intercept
    m = np.uint64(_count(rows, X.shape[0]))
    kk = np.uint64(term.k)
    br = np.uint64(S.shape[0])
    dx = np.uint64(X.shape[1])
    total = 0.0
    for b0 in range(_ZERO, m, br):
        mb = min(br, m - b0)
        for r in range(mb):
            _dense_scores(X, _row_at(rows, b0 + r), W, S, r)
            if intercept:
                _add_col(S, r, W, dx)
        _block_losses(loss, S, P, mb, kk, _VALUE_ONLY)
        total = _block_value(P, mb, kk, weights, rows, b0, total)
    return total / divisor


@njit(**JIT)
def dense_pairwise_value_grad(term, X, divisor, rows, W, G, S, P):
    """Dense counterpart of :func:`csr_pairwise_value_grad` (per-row loop); accumulates into ``G`` directly
    (with ``term.intercept``, ``W`` and ``G`` of shape (C, d + 1))."""
    loss, weights, intercept = term.loss, term.weights, term.intercept
    m = np.uint64(_count(rows, X.shape[0]))
    kk = np.uint64(term.k)
    br = np.uint64(S.shape[0])
    C = np.uint64(W.shape[0])
    d = np.uint64(X.shape[1])
    inv = 1.0 / divisor
    G[:, :] = 0.0
    total = 0.0
    for b0 in range(_ZERO, m, br):
        mb = min(br, m - b0)
        for r in range(mb):
            _dense_scores(X, _row_at(rows, b0 + r), W, S, r)
            if intercept:
                _add_col(S, r, W, d)
        _block_losses(loss, S, P, mb, kk, _WITH_GRAD)
        total = _block_value_coef(P, S, mb, kk, weights, rows, b0, inv, total)
        for r in range(mb):
            i = _row_at(rows, b0 + r)
            for l in range(C):
                c = S[r, l]
                if c != 0.0:
                    for col in range(d):
                        G[l, col] += c * X[i, col]
                    if intercept:
                        G[l, d] += c
    return total / divisor


# --------------------------------------------------------------------------- dense full passes (BLAS)
@njit(**JIT)
def _feature_weights(W, Wx):
    """``W.T`` for the BLAS products: ``W`` itself without intercepts (``Wx`` None), else its first
    d columns copied into the scratch ``Wx`` (C, d), since BLAS needs a contiguous operand."""
    if Wx is None:
        return W.T
    for l in range(W.shape[0]):
        for j in range(Wx.shape[1]):
            Wx[l, j] = W[l, j]
    return Wx.T


@njit(**JIT)
def dense_blas_pairwise_value(term, X, divisor, W, S, P, Wx=None):
    """Value of :math:`L_k` over every row of a dense class block, scores by BLAS.

    Arguments as in :func:`dense_pairwise_value` without ``rows``; ``S`` and ``P`` of shape (b, C)
    set the block: b rows per product, with b C d at most ``BLAS_BLOCK_WORK`` (module docstring).
    With ``term.intercept`` (``W`` of shape (C, d + 1)), ``Wx`` is a (C, d) C-contiguous scratch.
    """
    loss, weights, intercept = term.loss, term.weights, term.intercept
    n = np.uint64(X.shape[0])
    kk = np.uint64(term.k)
    br = np.uint64(S.shape[0])
    dx = np.uint64(X.shape[1])
    Wt = _feature_weights(W, Wx)
    total = 0.0
    for b0 in range(_ZERO, n, br):
        mb = min(br, n - b0)
        np.dot(X[b0:b0 + mb], Wt, S[:mb])
        if intercept:
            for r in range(mb):
                _add_col(S, r, W, dx)
        _block_losses(loss, S, P, mb, kk, _VALUE_ONLY)
        total = _block_value(P, mb, kk, weights, None, b0, total)
    return total / divisor


@njit(**JIT)
def dense_blas_pairwise_value_grad(term, X, divisor, W, G, T, S, P, Wx=None):
    r"""Value and gradient of :math:`L_k` over every row of a dense class block, by BLAS products.

    Per block of b rows: :math:`S = A_B W^\top` (GEMM), :func:`_block_losses`, and
    :math:`\nabla \mathrel{+}= B_B^\top A_B` (GEMM into ``T``, shape (C, d), then added to ``G``).
    Arguments as in :func:`dense_blas_pairwise_value`; ``G`` (shape (C, d), C-contiguous) is
    overwritten. With ``term.intercept`` (``W`` and ``G`` of shape (C, d + 1), ``Wx`` a (C, d)
    C-contiguous scratch) every block's product goes through ``T`` and the intercepts' gradient
    sums the coefficients. Returns the value.
    """
    loss, weights, intercept = term.loss, term.weights, term.intercept
    n = np.uint64(X.shape[0])
    kk = np.uint64(term.k)
    br = np.uint64(S.shape[0])
    C = np.uint64(W.shape[0])
    d = np.uint64(X.shape[1])
    inv = 1.0 / divisor
    Wt = _feature_weights(W, Wx)
    if n == 0 or intercept:
        G[:, :] = 0.0
    total = 0.0
    for b0 in range(_ZERO, n, br):
        mb = min(br, n - b0)
        Xb = X[b0:b0 + mb]
        Sb = S[:mb]
        np.dot(Xb, Wt, Sb)
        if intercept:
            for r in range(mb):
                _add_col(S, r, W, d)
        _block_losses(loss, S, P, mb, kk, _WITH_GRAD)
        total = _block_value_coef(P, S, mb, kk, weights, None, b0, inv, total)
        if b0 == 0 and not intercept:
            np.dot(Sb.T, Xb, G)
        else:
            np.dot(Sb.T, Xb, T)
            for l in range(C):
                for col in range(d):
                    G[l, col] += T[l, col]
            if intercept:
                for r in range(mb):
                    for l in range(C):
                        G[l, d] += S[r, l]
    return total / divisor

