r"""Compiled datafits: the terms a jitted solver loop can evaluate without returning to Python.

A term that supports compiled loops returns a `DatafitBundle` (a module-level ``NamedTuple``: a kind
code and arrays), which jitted loops evaluate with the functions below, dispatching on the kind:
``MARGIN`` (a mean margin loss), ``GROUP_GAP`` (demographic parity gap of two groups, [LX25] eq. 47)
and ``ROC_GAP`` ([HL23] eq. 11, [LX25] eq. 4); SCAD is a data-free penalty code. One bundle type
keeps one compiled specialization per loop and numba's on-disk cache usable. Statistics are linear
in the per-row terms, as the SPIDER recursion of [LX25] needs.
Design notes: docs/design.md, 'Module notes'.
"""
from typing import NamedTuple, Optional

import numpy as np

from ._jit import njit
from ._linalg import JIT, _csr_axpy, _csr_dot, _csr_span_dot2
from ._losses import margin_loss
from ._threshold_sweep import grid_blocks, sigmoid_sweep

__all__ = ["MARGIN", "GROUP_GAP", "ROC_GAP", "NO_PENALTY", "SCAD", "DatafitBundle", "DatafitBuffers",
           "datafit_bundle", "datafit_value_grad",
           "statistic_two_point", "statistic_grad", "penalty_value_grad", "scad", "datafit_buffers"]

MARGIN, GROUP_GAP, ROC_GAP = 0, 1, 2
NO_PENALTY, SCAD = 0, 1
_EMPTY_U64 = np.zeros(0, dtype=np.uint64)
_EMPTY = np.zeros(0)


class DatafitBundle(NamedTuple):
    """One datafit as a compiled loop receives it (built by :func:`datafit_bundle`).

    The rows are CSR (dense data is passed as CSR: the loops index rows). Fields a kind does not
    use are empty arrays.
    """

    kind: np.int64                #: MARGIN, GROUP_GAP or ROC_GAP
    loss: np.int64                #: margin-loss code of `_losses` (MARGIN)
    indptr: np.ndarray            #: uint64 (N + 1,) CSR row pointers
    indices: np.ndarray           #: uint32 CSR column indices
    data: Optional[np.ndarray]    #: float64 CSR values; None for binary features (1.0 everywhere)
    y: np.ndarray                 #: float64 (N,) labels (MARGIN)
    scale: np.ndarray             #: float64 (N,) row scales s_i with mean 1 (MARGIN)
    n_split: np.int64             #: first row of group u (two-group kinds)
    starts: np.ndarray            #: uint64 threshold-grid blocks of `_threshold_sweep.grid_blocks` (ROC_GAP)
    anchors: np.ndarray           #: float64, as ``starts``
    tops: np.ndarray              #: float64, as ``starts``
    factors: np.ndarray           #: float64 (m,), one per threshold, as ``starts``
    thresholds: np.ndarray        #: float64 (m,) the thresholds themselves (ROC_GAP; the subgradient uses them exactly)


class DatafitBuffers(NamedTuple):
    """Scratch of the evaluations of one datafit on at most ``n_rows`` rows (:func:`datafit_buffers`)."""

    scores: np.ndarray   #: float64 (n_rows,) the batch scores (kept for `statistic_grad`)
    coefs: np.ndarray    #: float64 (n_rows,) per-row gradient coefficients (`statistic_two_point`: scores at x_prev)
    mean_p: np.ndarray   #: float64 (max(m, 1),) group-p means per threshold (ROC_GAP)
    mean_u: np.ndarray   #: float64 (max(m, 1),) group-u means per threshold (ROC_GAP)
    sweep: np.ndarray    #: float64 (1, max(m, 1)) scratch of `_threshold_sweep.sigmoid_sweep`


def datafit_bundle(kind, indptr, indices, data, *, loss=0, y=None, scale=None, n_split=0, thresholds=None,
                   binary=None) -> DatafitBundle:
    r"""The `DatafitBundle` a compiled loop receives for one datafit.

    Parameters
    ----------
    kind : int
        ``MARGIN``, ``GROUP_GAP`` or ``ROC_GAP``.
    indptr, indices, data : array-like
        CSR arrays of the rows; ``data`` is dropped (None) for binary features, detected when
        ``binary`` is None, which spares the row gathers a third of their bytes.
    loss : int
        Margin-loss code (MARGIN).
    y, scale : array-like, optional
        Labels and row scales :math:`s_i` (MARGIN; scales default to 1, mean 1).
    n_split : int
        First row of group u (two-group kinds).
    thresholds : array-like, optional
        Threshold grid (ROC_GAP), stored with its `_threshold_sweep.grid_blocks`.
    binary : bool, optional
        Whether ``data`` is all ones (detected when None).
    """
    n = int(indptr.shape[0]) - 1
    y = _EMPTY if y is None else np.ascontiguousarray(y, dtype=np.float64)
    scale = np.ones(n) if (scale is None and kind == MARGIN) else (_EMPTY if scale is None else
                                                                   np.ascontiguousarray(scale, dtype=np.float64))
    if thresholds is None:
        starts, anchors, tops, factors, thresholds = _EMPTY_U64, _EMPTY, _EMPTY, _EMPTY, _EMPTY
    else:
        thresholds = np.ascontiguousarray(thresholds, dtype=np.float64)
        starts, anchors, tops, factors = grid_blocks(thresholds)
    data = np.ascontiguousarray(data, dtype=np.float64)
    if binary is None:
        binary = bool(data.size) and bool(np.all(data == 1.0))
    return DatafitBundle(np.int64(kind), np.int64(loss), np.ascontiguousarray(indptr, dtype=np.uint64),
                         np.ascontiguousarray(indices, dtype=np.uint32), None if binary else data, y, scale,
                         np.int64(n_split), starts, anchors, tops, factors, thresholds)


def datafit_buffers(bundle, n_rows) -> DatafitBuffers:
    """Scratch for evaluations of ``bundle`` on at most ``n_rows`` rows."""
    m = bundle.factors.shape[0]
    return DatafitBuffers(np.empty(n_rows), np.empty(n_rows), np.empty(max(m, 1)), np.empty(max(m, 1)),
                          np.zeros((1, max(m, 1))))


@njit(inline="always")
def _sigmoid(z):
    if z >= 0.0:
        return 1.0 / (1.0 + np.exp(-z))
    e = np.exp(z)
    return e / (1.0 + e)


@njit(inline="always")
def _sigmoid_prime(z):
    e = np.exp(-abs(z))
    q = 1.0 + e
    return e / (q * q)


@njit(inline="always")
def _gather_scores(indptr, indices, data, rows, n_rows, x, scores):
    """``scores[k] = a_{rows[k]}^T x``. A loop with no data-dependent branch: the rows' cache misses
    (batch rows are scattered over the matrix) overlap instead of waiting behind a mispredicted
    loss branch (docs/measurements.md)."""
    for k in range(n_rows):
        scores[k] = _csr_dot(indptr, indices, data, np.uint64(rows[k]), x)


@njit(inline="always")
def _group_p_count(rows, n_rows, n_split):
    """Leading batch positions holding group p rows (stratified batches put group p first)."""
    n_p = 0
    while n_p < n_rows and rows[n_p] < n_split:
        n_p += 1
    return n_p


@njit(inline="always")
def _sigmoid_gap(scores, n_p, n_rows):
    r"""Signed gap :math:`\overline{\sigma(z)}_p - \overline{\sigma(z)}_u` of the batch scores."""
    sp = 0.0
    su = 0.0
    for k in range(n_p):
        sp += _sigmoid(scores[k])
    for k in range(n_p, n_rows):
        su += _sigmoid(scores[k])
    return sp / n_p - su / (n_rows - n_p)


@njit(inline="always")
def _gap_coefs(scores, shift, n_p, n_rows, scale, coefs):
    r"""``coefs[k]`` = ``scale`` :math:`\sigma'(z_k - \text{shift})/n_p` (group p) or its negative over :math:`n_u`."""
    n_u = n_rows - n_p
    for k in range(n_rows):
        coefs[k] = scale * _sigmoid_prime(scores[k] - shift) * (1.0 / n_p if k < n_p else -1.0 / n_u)


@njit(inline="always")
def _scatter(indptr, indices, data, rows, n_rows, coefs, grad):
    """``grad += sum_k coefs[k] a_{rows[k]}`` over the rows with a non-zero coefficient."""
    for k in range(n_rows):
        c = coefs[k]
        if c != 0.0:
            _csr_axpy(indptr, indices, data, np.uint64(rows[k]), c, grad)


@njit(**JIT)
def datafit_value_grad(b, x, rows, n_rows, want_grad, grad_scale, grad, bufs):
    r"""Value of datafit ``b`` at ``x`` on ``rows[:n_rows]``; adds ``grad_scale`` x its subgradient to ``grad``.

    ``rows`` holds global row indices; for the two-group kinds the first ``n_p`` positions of the
    batch must be group p rows and the rest group u rows, ``n_p`` found by the ``n_split`` test
    (the stratified samplers lay batches out that way). Returns the value (not the statistic).
    """
    kind, loss, indptr, indices, data, y = b.kind, b.loss, b.indptr, b.indices, b.data, b.y
    scale, n_split = b.scale, b.n_split
    scores, coefs, mean_p, mean_u, sweep = bufs.scores, bufs.coefs, bufs.mean_p, bufs.mean_u, bufs.sweep
    _gather_scores(indptr, indices, data, rows, n_rows, x, scores)
    if kind == MARGIN:
        acc = 0.0
        inv = 1.0 / n_rows
        for k in range(n_rows):
            i = np.uint64(rows[k])
            v, dv = margin_loss(loss, y[i] * scores[k])
            acc += scale[i] * v
            coefs[k] = grad_scale * inv * scale[i] * dv * y[i]
        if want_grad:
            _scatter(indptr, indices, data, rows, n_rows, coefs, grad)
        return acc * inv
    n_p = _group_p_count(rows, n_rows, n_split)
    if kind == GROUP_GAP:
        d = _sigmoid_gap(scores, n_p, n_rows)
        if want_grad and d != 0.0:
            _gap_coefs(scores, 0.0, n_p, n_rows, grad_scale if d > 0.0 else -grad_scale, coefs)
            _scatter(indptr, indices, data, rows, n_rows, coefs, grad)
        return abs(d)
    # ROC_GAP: group means of sigma(s - theta_j) by the one-exp-per-sample sweep
    starts, anchors, tops, factors = b.starts, b.anchors, b.tops, b.factors
    m = factors.shape[0]
    sigmoid_sweep(scores[:n_p], starts, anchors, tops, factors, mean_p[:m], sweep)
    sigmoid_sweep(scores[n_p:n_rows], starts, anchors, tops, factors, mean_u[:m], sweep)
    best = 0
    gap = mean_p[0] - mean_u[0]
    for j in range(1, m):
        g = mean_p[j] - mean_u[j]
        if abs(g) > abs(gap):  # first maximiser on ties, as ROCFairness
            gap = g
            best = j
    if want_grad and gap != 0.0:
        _gap_coefs(scores, b.thresholds[best], n_p, n_rows, grad_scale if gap > 0.0 else -grad_scale, coefs)
        _scatter(indptr, indices, data, rows, n_rows, coefs, grad)
    return abs(gap)


@njit(**JIT)
def statistic_two_point(b, x, x_prev, rows, n_rows, bufs):
    r"""The statistic at ``x`` and ``x_prev`` on the same rows, each row read once.

    Returns ``(t(x), t(x_prev))``; the scores at ``x`` stay in ``bufs.scores`` for
    :func:`statistic_grad` (the subgradient on the same batch needs no second read of the scores).
    """
    kind, loss, indptr, indices, data, y = b.kind, b.loss, b.indptr, b.indices, b.data, b.y
    scale, n_split = b.scale, b.n_split
    scores, prev = bufs.scores, bufs.coefs
    _csr_span_dot2(indptr, indices, data, rows, x, x_prev, scores, prev, np.uint64(0), np.uint64(n_rows))
    if kind == MARGIN:
        a = 0.0
        a0 = 0.0
        for k in range(n_rows):
            i = np.uint64(rows[k])
            a += scale[i] * margin_loss(loss, y[i] * scores[k])[0]
            a0 += scale[i] * margin_loss(loss, y[i] * prev[k])[0]
        return a / n_rows, a0 / n_rows
    n_p = _group_p_count(rows, n_rows, n_split)
    return _sigmoid_gap(scores, n_p, n_rows), _sigmoid_gap(prev, n_p, n_rows)


@njit(**JIT)
def statistic(b, x, rows, n_rows, bufs):
    """The statistic at ``x`` on ``rows[:n_rows]``; scores kept in ``bufs.scores`` as above."""
    kind, loss, indptr, indices, data, y = b.kind, b.loss, b.indptr, b.indices, b.data, b.y
    scale, n_split = b.scale, b.n_split
    scores = bufs.scores
    _gather_scores(indptr, indices, data, rows, n_rows, x, scores)
    if kind == MARGIN:
        a = 0.0
        for k in range(n_rows):
            i = np.uint64(rows[k])
            a += scale[i] * margin_loss(loss, y[i] * scores[k])[0]
        return a / n_rows
    return _sigmoid_gap(scores, _group_p_count(rows, n_rows, n_split), n_rows)


@njit(**JIT)
def statistic_grad(b, rows, n_rows, sign, grad_scale, grad, bufs):
    r"""Adds ``grad_scale`` x the subgradient of the value on the batch whose scores are in ``bufs.scores``.

    MARGIN: :math:`\frac1{|B|}\sum s_i\phi'(b_i z_i) b_i a_i`. GROUP_GAP: ``sign`` times the gradient
    of the signed gap :math:`d` (``sign`` = sign of the estimate of :math:`d`, so the result is a
    subgradient of :math:`|d|`; 0 gives 0).
    """
    kind, loss, indptr, indices, data, y = b.kind, b.loss, b.indptr, b.indices, b.data, b.y
    scale, n_split = b.scale, b.n_split
    scores, coefs = bufs.scores, bufs.coefs
    if kind == MARGIN:
        inv = 1.0 / n_rows
        for k in range(n_rows):
            i = np.uint64(rows[k])
            coefs[k] = grad_scale * inv * scale[i] * margin_loss(loss, y[i] * scores[k])[1] * y[i]
        _scatter(indptr, indices, data, rows, n_rows, coefs, grad)
        return
    if sign == 0.0:
        return
    _gap_coefs(scores, 0.0, _group_p_count(rows, n_rows, n_split), n_rows, sign * grad_scale, coefs)
    _scatter(indptr, indices, data, rows, n_rows, coefs, grad)


@njit(inline="always")
def scad(t):
    r"""[LX25]'s SCAD-type :math:`\varphi(t)` with the continuous ``-1`` (the paper prints ``+1``) and a derivative.

    :math:`2|t|` on :math:`|t| \le 1`, :math:`-t^2 + 4|t| - 1` on :math:`1 < |t| \le 2`, 3 beyond;
    derivative :math:`2\,\mathrm{sign}(t)` (0 at 0), :math:`(4 - 2|t|)\mathrm{sign}(t)`, 0.
    """
    a = abs(t)
    s = 1.0 if t > 0.0 else (-1.0 if t < 0.0 else 0.0)
    if a <= 1.0:
        return 2.0 * a, 2.0 * s
    if a <= 2.0:
        return -a * a + 4.0 * a - 1.0, (4.0 - 2.0 * a) * s
    return 3.0, 0.0


@njit(**JIT)
def penalty_value_grad(code, lam, x, want_grad, grad):
    r""":math:`\lambda\sum_i\varphi(x_i)` for ``code == SCAD`` (0 for ``NO_PENALTY``); adds its gradient."""
    if code == NO_PENALTY:
        return 0.0
    v = 0.0
    for i in range(x.shape[0]):
        fi, di = scad(x[i])
        v += fi
        if want_grad:
            grad[i] += lam * di
    return lam * v
