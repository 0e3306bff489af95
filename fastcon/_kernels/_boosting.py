r"""Per-sample gradients and Hessians of the Bregman proximal subproblems of Lin & Deng [LD23].

Each step of ABPP (Algorithm 1 of [LD23]) and each inner step of CBPR (Algorithm 2) asks a score
model for an approximate minimiser of

.. math::

    \psi(F) = \sum_i W_i\,\ell_i(F_i) + \frac{c}{2}\lVert F - F^t\rVert^2
              + \frac{1}{2\tau}\lVert F - F^k\rVert^2

over the training scores :math:`F` (logistic loss for two classes, softmax cross-entropy for J),
with Lagrangian weights :math:`W_i` of either sign. The kernels compute the per-entry gradient and
diagonal Hessian (floored at :math:`10^{-16}`, as XGBoost) a boosting library takes as a custom
objective, the per-sample losses and their class or group sums, overflow-free for any finite score.
Design notes: docs/design.md, 'Module notes'.
"""
from typing import NamedTuple, Optional

import numpy as np
from numba import prange, types
from numba.extending import overload

from ._jit import njit
from ._linalg import JIT, JIT_PARALLEL, _chunk_span, n_chunks_for
from ._losses import logistic, sigmoid
from ._vecmath import exp_minus

__all__ = [
    "HESSIAN_FLOOR",
    "logistic_grad_hess",
    "logistic_losses",
    "segment_means",
    "segment_sums",
    "softmax_grad_hess",
    "softmax_losses",
]

#: Lower bound of every Hessian entry (XGBoost's): a negative Lagrangian weight can make
#: :math:`W_i p(1-p) + c + 1/\tau` zero or negative, and a tree learner divides by sums of it.
HESSIAN_FLOOR = 1e-16


# --------------------------------------------------------------------------- compile-time optional anchors
class _Anchors(NamedTuple):
    r"""The two anchored terms of :math:`\psi` (module notes), one argument of the row passes.

    An anchor given as None drops its term; ``None`` types as its own specialisation, so the term
    costs nothing then (`_prox`, `_prox2`).
    """

    anchor_k: Optional[np.ndarray]   #: proximal anchor :math:`F^k`, shaped like ``F``, or None
    inv_tau: float                   #: :math:`1/\tau \ge 0`, the weight of ``anchor_k``
    anchor_t: Optional[np.ndarray]   #: CBPR anchor :math:`F^t`, shaped like ``F``, or None
    c: float                         #: :math:`c \ge 0`, the weight of ``anchor_t``


def _prox(F, anchor, i, weight):  # pragma: no cover - replaced by the overload inside jitted code
    return 0.0 if anchor is None else weight * (F[i] - anchor[i])


@overload(_prox, inline="always")
def _prox_overload(F, anchor, i, weight):
    """:math:`w(F_i - A_i)`, the constant 0 when ``anchor`` is None (chosen by type, at compile time)."""
    if isinstance(anchor, types.NoneType):
        return lambda F, anchor, i, weight: 0.0
    return lambda F, anchor, i, weight: weight * (F[i] - anchor[i])


def _prox2(F, anchor, i, j, weight):  # pragma: no cover - replaced by the overload inside jitted code
    return 0.0 if anchor is None else weight * (F[i, j] - anchor[i, j])


@overload(_prox2, inline="always")
def _prox2_overload(F, anchor, i, j, weight):
    """:math:`w(F_{ij} - A_{ij})`, the constant 0 when ``anchor`` is None (chosen by type, at compile time)."""
    if isinstance(anchor, types.NoneType):
        return lambda F, anchor, i, j, weight: 0.0
    return lambda F, anchor, i, j, weight: weight * (F[i, j] - anchor[i, j])


@njit(inline="always")
def _curvature(anchors):
    """:math:`c + 1/\\tau`, each only when its anchor is given."""
    k = 0.0 if anchors.anchor_k is None else anchors.inv_tau
    t = 0.0 if anchors.anchor_t is None else anchors.c
    return t + k


# --------------------------------------------------------------------------- binary
@njit(inline="always")
def _logistic_span(F, y, W, anchors, grad, hess, lo, hi):
    # Field by field: unpacking the record in one statement inside a parallel kernel trips numba's
    # array analysis when the anchors are 2-D (numba 0.68).
    anchor_k = anchors.anchor_k
    anchor_t = anchors.anchor_t
    inv_tau = anchors.inv_tau
    c = anchors.c
    curv = _curvature(anchors)
    for i in range(lo, hi):
        f = F[i]
        pos = y[i] != 0
        s = 1.0 if pos else -1.0
        # q = sigma(-s F): 1 - p for y = 1, p for y = 0; dq = -q(1 - q) = -p(1 - p)
        q, dq = sigmoid(f if pos else -f)
        w = W[i]
        grad[i] = -(w * s) * q + _prox(F, anchor_t, i, c) + _prox(F, anchor_k, i, inv_tau)
        hess[i] = max(curv - w * dq, HESSIAN_FLOOR)


@njit(**JIT_PARALLEL)
def logistic_grad_hess(F, y, W, anchor_k, inv_tau, anchor_t, c, grad, hess):
    r"""Gradient and Hessian diagonal of :math:`\psi` for two classes, written into ``grad`` and ``hess``.

    .. math::

        g_i = W_i(\sigma(F_i) - y_i) + c(F_i - F^t_i) + \tau^{-1}(F_i - F^k_i),\qquad
        h_i = \max\big(W_i\sigma(F_i)(1 - \sigma(F_i)) + c + \tau^{-1},\ 10^{-16}\big).

    Parameters
    ----------
    F : float64[n]
        Scores (logits).
    y : int[n]
        Labels in {0, 1} (any integer dtype; not checked).
    W : float64[n]
        Lagrangian weights, of either sign.
    anchor_k : float64[n] or None
        Proximal anchor :math:`F^k`; None drops the term (``inv_tau`` is then ignored).
    inv_tau : float
        :math:`1/\tau \ge 0`.
    anchor_t : float64[n] or None
        CBPR anchor :math:`F^t`; None drops the term (``c`` is then ignored).
    c : float
        Weight :math:`c \ge 0` of the CBPR anchor.
    grad, hess : float64[n]
        Outputs, overwritten.

    Notes
    -----
    One ``exp`` per sample, branch-free, so the row loop vectorises. Preconditions and numerics:
    module notes.
    """
    n = F.shape[0]
    anchors = _Anchors(anchor_k, inv_tau, anchor_t, c)
    n_chunks = n_chunks_for(n, n, 1)
    if n_chunks == 1:
        _logistic_span(F, y, W, anchors, grad, hess, 0, n)
        return
    for k in prange(n_chunks):
        lo, hi = _chunk_span(k, n_chunks, n)
        _logistic_span(F, y, W, anchors, grad, hess, lo, hi)


@njit(inline="always")
def _logistic_losses_span(F, y, out, lo, hi):
    for i in range(lo, hi):
        f = F[i]
        # log(1 + e^F) - y F = phi(sF) with the logistic margin loss phi(z) = log(1 + e^{-z})
        out[i], _ = logistic(f if y[i] != 0 else -f)


@njit(**JIT_PARALLEL)
def logistic_losses(F, y, out):
    r"""Per-sample logistic losses :math:`\ell_i = \log(1 + e^{F_i}) - y_i F_i`, written into ``out``.

    Parameters
    ----------
    F : float64[n]
        Scores.
    y : int[n]
        Labels in {0, 1}.
    out : float64[n]
        Output, overwritten.

    Notes
    -----
    :math:`\ell_i = \phi(s_i F_i)` with :math:`s_i = 2y_i - 1` and the logistic margin loss
    :math:`\phi(z) = \log(1 + e^{-z})` of `fastcon._kernels._losses` (within 2.5 ulp, no overflow,
    full relative precision for small losses).
    """
    n = F.shape[0]
    n_chunks = n_chunks_for(n, n, 1)
    if n_chunks == 1:
        _logistic_losses_span(F, y, out, 0, n)
        return
    for k in prange(n_chunks):
        lo, hi = _chunk_span(k, n_chunks, n)
        _logistic_losses_span(F, y, out, lo, hi)


# --------------------------------------------------------------------------- J classes
#: Rows per block of the J-class passes: the block's shifted scores (128 x J float64, 7 kB at J = 7)
#: stay in L1 between the three loops over the block.
BLOCK_ROWS = 128


@njit(inline="always")
def _block_exps(F, i0, i1, E):
    r"""``E[i - i0, j] = exp(F[i, j] - m_i)`` for rows ``i0 <= i < i1``, :math:`m_i` the row maximum.

    Two loops: the shifts :math:`m_i - F_{ij} \ge 0` row by row, then the exponentials over the
    block's entries as one flat, branch-free loop that LLVM vectorises (a loop over one row's J
    entries is too short to; docs/measurements.md).
    """
    J = F.shape[1]
    for i in range(i0, i1):
        r = i - i0
        m = F[i, 0]
        for j in range(1, J):
            m = max(m, F[i, j])
        for j in range(J):
            E[r, j] = m - F[i, j]
    Ef = E.reshape(E.size)
    for t in range((i1 - i0) * J):
        Ef[t] = exp_minus(Ef[t])


@njit(inline="always")
def _others(E, r):
    r""":math:`T = \sum_j e_j - 1` of block row ``r`` without rounding :math:`1 + T`: the entries
    below 1 are added, and every further maximum (an exact 1, a tie) adds 1 exactly."""
    T = 0.0
    ones = 0.0
    for j in range(E.shape[1]):
        e = E[r, j]
        small = e < 1.0
        T += e if small else 0.0
        ones += 0.0 if small else 1.0
    return T + (ones - 1.0)


@njit(inline="always")
def _softmax_span(F, b, W, anchors, grad, hess, lo, hi):
    anchor_k = anchors.anchor_k  # field by field, as in _logistic_span
    anchor_t = anchors.anchor_t
    inv_tau = anchors.inv_tau
    c = anchors.c
    curv = _curvature(anchors)
    J = F.shape[1]
    for i0 in range(np.int64(lo), np.int64(hi), BLOCK_ROWS):
        i1 = min(i0 + BLOCK_ROWS, np.int64(hi))
        E = grad[i0:i1]                     # the exponentials, rescaled in place below
        _block_exps(F, i0, i1, E)
        for i in range(i0, i1):
            r = i - i0
            T = _others(E, r)
            s = 1.0 / (1.0 + T)
            w = W[i]
            bi = b[i]
            for j in range(J):
                e = E[r, j]
                p = e * s
                om = T * s if e >= 1.0 else 1.0 - p   # 1 - p_j (module notes)
                dl = -om if j == bi else p            # p_j - [j = b_i]
                E[r, j] = w * dl + _prox2(F, anchor_t, i, j, c) + _prox2(F, anchor_k, i, j, inv_tau)
                hess[i, j] = max(w * (p * om) + curv, HESSIAN_FLOOR)


@njit(**JIT_PARALLEL)
def softmax_grad_hess(F, b, W, anchor_k, inv_tau, anchor_t, c, grad, hess):
    r"""Gradient and Hessian diagonal of :math:`\psi` for J classes, written into ``grad`` and ``hess``.

    .. math::

        g_{ij} = W_i(p_{ij} - [j = b_i]) + c(F_{ij} - F^t_{ij}) + \tau^{-1}(F_{ij} - F^k_{ij}),\qquad
        h_{ij} = \max\big(W_i p_{ij}(1 - p_{ij}) + c + \tau^{-1},\ 10^{-16}\big),

    :math:`p_i = \mathrm{softmax}(F_i)`; :math:`h` is the diagonal of the Hessian of :math:`\psi`.

    Parameters
    ----------
    F : float64[n, J]
        Scores, C-contiguous.
    b : int[n]
        Labels in :math:`[0, J)` (any integer dtype; not checked).
    W : float64[n]
        Lagrangian weights, of either sign.
    anchor_k : float64[n, J] or None
        Proximal anchor :math:`F^k`; None drops the term (``inv_tau`` is then ignored).
    inv_tau : float
        :math:`1/\tau \ge 0`.
    anchor_t : float64[n, J] or None
        CBPR anchor :math:`F^t`; None drops the term (``c`` is then ignored).
    c : float
        Weight :math:`c \ge 0` of the CBPR anchor.
    grad, hess : float64[n, J]
        Outputs, C-contiguous, overwritten.

    Notes
    -----
    One pass, one ``exp`` per entry and one division per row; preconditions and numerics: module
    notes.
    """
    n = F.shape[0]
    anchors = _Anchors(anchor_k, inv_tau, anchor_t, c)
    n_chunks = n_chunks_for(n, n * F.shape[1], 1)
    if n_chunks == 1:
        _softmax_span(F, b, W, anchors, grad, hess, 0, n)
        return
    for k in prange(n_chunks):
        lo, hi = _chunk_span(k, n_chunks, n)
        _softmax_span(F, b, W, anchors, grad, hess, lo, hi)


@njit(inline="always")
def _softmax_losses_span(F, b, out, E, lo, hi):
    for i0 in range(np.int64(lo), np.int64(hi), BLOCK_ROWS):
        i1 = min(i0 + BLOCK_ROWS, np.int64(hi))
        _block_exps(F, i0, i1, E)
        for i in range(i0, i1):
            r = i - i0
            # m - F_ib = -log e_ib; recomputed from F, exactly as the shift was
            m = F[i, 0]
            for j in range(1, F.shape[1]):
                m = max(m, F[i, j])
            out[i] = (m - F[i, b[i]]) + np.log1p(_others(E, r))


@njit(**JIT_PARALLEL)
def softmax_losses(F, b, out):
    r"""Per-sample cross-entropy :math:`\ell_i = \log\sum_j e^{F_{ij}} - F_{ib_i}`, written into ``out``.

    Parameters
    ----------
    F : float64[n, J]
        Scores, C-contiguous.
    b : int[n]
        Labels in :math:`[0, J)`.
    out : float64[n]
        Output, overwritten.

    Notes
    -----
    :math:`\ell_i = (m - F_{ib_i}) + \log(1 + T)` with the row maximum :math:`m` and :math:`T` the
    sum of the other :math:`e^{F_{ij} - m}` (module notes): one ``exp`` per entry, one ``log1p``
    per row, no overflow, and a small loss keeps its relative precision.
    """
    n, J = F.shape
    n_chunks = n_chunks_for(n, n * J, 1)
    if n_chunks == 1:
        _softmax_losses_span(F, b, out, np.empty((BLOCK_ROWS, J)), 0, n)
        return
    for k in prange(n_chunks):
        lo, hi = _chunk_span(k, n_chunks, n)
        _softmax_losses_span(F, b, out, np.empty((BLOCK_ROWS, J)), lo, hi)


# --------------------------------------------------------------------------- segment reductions
@njit(**JIT)
def segment_sums(values, codes, n_codes):
    r"""Sums per segment, :math:`S_k = \sum_{i:\,\mathrm{codes}_i = k} v_i` (``np.bincount`` with weights).

    Parameters
    ----------
    values : float64[n]
        Per-sample values (e.g. losses).
    codes : int[n]
        Segment of each sample (a class or a group), in :math:`[0, n_{codes})` (not checked).
    n_codes : int
        Number of segments; segments with no sample get 0.

    Returns
    -------
    float64[n_codes]
        Added in sample order (serial: a pass of 1M samples takes about a millisecond, below what
        a parallel region pays for on this machine, and the order fixes the bits).
    """
    out = np.zeros(n_codes)
    for i in range(values.shape[0]):
        out[codes[i]] += values[i]
    return out


@njit(**JIT)
def segment_means(values, codes, n_codes):
    r"""Means per segment, :math:`\xi_k = S_k / n_k` with :math:`n_k = |\{i:\ \mathrm{codes}_i = k\}|`.

    Same arguments as `segment_sums`; a segment with no sample gets NaN (its mean is undefined;
    `fastcon.datasets.Dataset` keeps groups non-empty, so callers see NaN only on a subset they
    built themselves). Sums and counts come from one pass.
    """
    sums = np.zeros(n_codes)
    counts = np.zeros(n_codes, dtype=np.int64)
    for i in range(values.shape[0]):
        k = codes[i]
        sums[k] += values[i]
        counts[k] += 1
    for k in range(n_codes):
        sums[k] = sums[k] / counts[k] if counts[k] > 0 else np.nan
    return sums
