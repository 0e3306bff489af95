r"""Fused margin-loss passes: value and subgradient of a mean margin loss in one sweep over the rows.

For a margin loss :math:`\phi` and margins :math:`z_i = y_i\, a_i^\top w`, the kernels compute

.. math::

    L(w) = \sigma \sum_{i \in R} s_i\, \phi(z_i), \qquad
    \partial L(w) \ni \sigma \sum_{i \in R} s_i\, \phi'(z_i)\, y_i\, a_i,

over all rows or a row subset :math:`R` (repeats count repeatedly), with optional sample weights
:math:`s_i` (``weights=None`` means 1) and a scale :math:`\sigma` chosen by the caller (``1/n`` for
the mean). In one pass each row's score is computed, mapped through :math:`(\phi, \phi')`, and the
row — still in cache — is added to the subgradient.

How the loss is made generic
----------------------------
Each loss is a tiny ``inline="always"`` function ``z -> (phi(z), phi'(z))``; the kernels take an
integer loss code and :func:`margin_loss` branches on it once per row. Measured on a9a, the branch
costs nothing visible (hinge 0.436 ms with the code vs 0.447 ms with the loss passed as a jitted
function argument; logistic 1.42 vs 1.38 ms, serial), while the alternatives were worse:

* passing the jitted loss function as an argument (or closing over it in a kernel factory) gives
  fast code, but numba cannot cache such kernels across processes — every process recompiles;
* compile-time dispatch on a literal code (``numba.literally``) caches, but every call from Python
  then pays ~3 ms of dispatch.

The integer code also suits jitted solver loops, which can hold it as a plain int.

Chunking: see :mod:`fastcon._kernels._linalg`. ``workspace`` has shape ``(n_chunks, d + 1)``: row
``k`` holds chunk ``k``'s subgradient accumulator and, in its last slot, its loss sum. Chunk results
are reduced in chunk order, so results do not depend on the number of threads.
"""
import numpy as np
from numba import prange

from ._jit import njit
from ._linalg import (
    JIT, JIT_PARALLEL, _chunk_span, _count, _csr_dot, _dense_axpy, _dense_dot, _entry, _row_at, n_chunks_for,
)

__all__ = [
    "HINGE", "LOGISTIC", "SIGMOID", "SQUARED_HINGE", "LOSS_CODES",
    "hinge", "logistic", "sigmoid", "squared_hinge", "margin_loss",
    "loss_workspace",
    "csr_loss_value", "csr_loss_value_grad", "dense_loss_value", "dense_loss_value_grad",
]

HINGE, LOGISTIC, SIGMOID, SQUARED_HINGE = 0, 1, 2, 3
LOSS_CODES = {"hinge": HINGE, "logistic": LOGISTIC, "sigmoid": SIGMOID, "squared_hinge": SQUARED_HINGE}

_ONE = np.uint64(1)


# --------------------------------------------------------------------------- losses of the margin z
@njit(inline="always")
def hinge(z):
    r"""Hinge :math:`\phi(z) = \max(0, 1 - z)` and a derivative.

    At the kink :math:`z = 1` the subdifferential is :math:`[-1, 0]`; we return 0 (strict
    :math:`z < 1` test), so rows exactly on the margin contribute nothing to the subgradient.
    """
    if z < 1.0:
        return 1.0 - z, -1.0
    return 0.0, 0.0


@njit(inline="always")
def logistic(z):
    r"""Logistic :math:`\phi(z) = \log(1 + e^{-z})`, :math:`\phi'(z) = -1/(1 + e^{z})`.

    Evaluated with ``exp`` of a non-positive number only (no overflow), and ``log1p`` so small
    losses keep full relative precision: for :math:`z > 0`, :math:`\phi = \mathrm{log1p}(e^{-z})`;
    otherwise :math:`\phi = -z + \mathrm{log1p}(e^{z})`.
    """
    if z > 0.0:
        e = np.exp(-z)
        return np.log1p(e), -e / (1.0 + e)
    e = np.exp(z)
    return np.log1p(e) - z, -1.0 / (1.0 + e)


@njit(inline="always")
def sigmoid(z):
    r"""Sigmoid loss :math:`\phi(z) = 1/(1 + e^{z})`, :math:`\phi'(z) = -\phi(z)(1 - \phi(z))`.

    For :math:`z > 0`, :math:`\phi = e^{-z}/(1 + e^{-z})` and :math:`1 - \phi = 1/(1 + e^{-z})`;
    otherwise :math:`\phi = 1/(1 + e^{z})` and :math:`1 - \phi = e^{z}/(1 + e^{z})`. Both factors
    of :math:`\phi'` come from their own stable formula, never as ``1 - phi`` (which would cancel).
    """
    if z > 0.0:
        e = np.exp(-z)
        p = e / (1.0 + e)
        q = 1.0 / (1.0 + e)
    else:
        e = np.exp(z)
        p = 1.0 / (1.0 + e)
        q = e / (1.0 + e)
    return p, -p * q


@njit(inline="always")
def squared_hinge(z):
    r"""Squared hinge :math:`\phi(z) = \max(0, 1 - z)^2`, :math:`\phi'(z) = -2\max(0, 1 - z)`."""
    m = 1.0 - z
    if m > 0.0:
        return m * m, -2.0 * m
    return 0.0, 0.0


@njit(inline="always")
def margin_loss(loss, z):
    """``(phi(z), phi'(z))`` of the loss with code ``loss`` (one of the module constants)."""
    if loss == HINGE:
        return hinge(z)
    if loss == LOGISTIC:
        return logistic(z)
    if loss == SIGMOID:
        return sigmoid(z)
    return squared_hinge(z)


def loss_workspace(n_rows, work, n_features):
    """Workspace ``(n_chunks, n_features + 1)`` for the loss kernels, sized by ``n_chunks_for``.

    ``work`` is the number of stored entries one pass reads (nnz, or ``n_rows * n_features``).
    """
    return np.zeros((n_chunks_for(int(n_rows), int(work), int(n_features)), int(n_features) + 1))


# --------------------------------------------------------------------------- CSR passes
@njit(**JIT)
def _csr_span_value(loss, indptr, indices, data, y, weights, rows, w, lo, hi):
    total = 0.0
    for j in range(lo, hi):
        i = _row_at(rows, j)
        v, _ = margin_loss(loss, y[i] * _csr_dot(indptr, indices, data, i, w))
        total += _entry(weights, i) * v
    return total


@njit(**JIT)
def _csr_span_value_grad(loss, indptr, indices, data, y, weights, scale, rows, w, acc, lo, hi):
    total = 0.0
    for j in range(lo, hi):
        i = _row_at(rows, j)
        a = indptr[i]
        b = indptr[i + _ONE]
        s = 0.0
        for p in range(a, b):
            s += _entry(data, p) * w[indices[p]]
        yi = y[i]
        wi = _entry(weights, i)
        v, dv = margin_loss(loss, yi * s)
        total += wi * v
        c = scale * wi * dv * yi
        if c != 0.0:
            # The row was just read for its score: accumulating now hits the cache.
            for p in range(a, b):
                acc[indices[p]] += c * _entry(data, p)
    return total


@njit(**JIT_PARALLEL)
def csr_loss_value(loss, indptr, indices, data, y, weights, scale, rows, w, workspace):
    r"""Value :math:`\sigma \sum_{i\in R} s_i \phi(y_i a_i^\top w)` of a CSR design.

    Parameters
    ----------
    loss : int
        Loss code (``HINGE``, ``LOGISTIC``, ``SIGMOID``, ``SQUARED_HINGE``).
    indptr, indices, data
        CSR arrays (uint64, uint32, float64); ``data=None`` for binary features.
    y : ndarray of float64, shape (n,)
        Labels in {-1, +1}.
    weights : ndarray of float64, shape (n,), or None
        Sample weights :math:`s_i` (None: all 1).
    scale : float
        :math:`\sigma`, e.g. ``1 / n``.
    rows : ndarray of int64 or uint64, or None
        Row subset :math:`R` (in range, checked by the caller); None for all rows.
    w : ndarray of float64, shape (d,)
    workspace : ndarray of float64, shape (n_chunks, d + 1)
        See :func:`loss_workspace`; only the last column is used here.

    Returns
    -------
    float
    """
    m = _count(rows, indptr.shape[0] - 1)
    n_chunks = workspace.shape[0]
    last = workspace.shape[1] - 1
    if n_chunks == 1:
        return scale * _csr_span_value(loss, indptr, indices, data, y, weights, rows, w,
                                       np.uint64(0), np.uint64(m))
    for k in prange(n_chunks):
        lo, hi = _chunk_span(k, n_chunks, m)
        workspace[k, last] = _csr_span_value(loss, indptr, indices, data, y, weights, rows, w, lo, hi)
    total = 0.0
    for k in range(n_chunks):
        total += workspace[k, last]
    return scale * total


@njit(**JIT_PARALLEL)
def csr_loss_value_grad(loss, indptr, indices, data, y, weights, scale, rows, w, out, workspace):
    r"""Value and subgradient of :math:`\sigma \sum_{i\in R} s_i \phi(y_i a_i^\top w)`, fused.

    Arguments as in :func:`csr_loss_value`; ``out`` (float64, shape (d,)) is overwritten with
    :math:`\sigma \sum_{i\in R} s_i \phi'(z_i) y_i a_i`. Returns the value.
    """
    m = _count(rows, indptr.shape[0] - 1)
    n_chunks = workspace.shape[0]
    d = out.shape[0]
    out[:] = 0.0
    if n_chunks == 1:
        return scale * _csr_span_value_grad(loss, indptr, indices, data, y, weights, scale, rows, w,
                                            out, np.uint64(0), np.uint64(m))
    for k in prange(n_chunks):
        acc = workspace[k]
        acc[:] = 0.0
        lo, hi = _chunk_span(k, n_chunks, m)
        acc[d] = _csr_span_value_grad(loss, indptr, indices, data, y, weights, scale, rows, w,
                                      acc, lo, hi)
    return scale * _reduce_workspace(workspace, out)


@njit(inline="always")
def _reduce_workspace(workspace, out):
    """Add the chunk accumulators into ``out`` in chunk order; return the summed chunk values."""
    d = out.shape[0]
    total = 0.0
    for k in range(workspace.shape[0]):
        for col in range(d):
            out[col] += workspace[k, col]
        total += workspace[k, d]
    return total


# --------------------------------------------------------------------------- dense passes
@njit(**JIT)
def _dense_span_value(loss, X, y, weights, rows, w, lo, hi):
    total = 0.0
    for j in range(lo, hi):
        i = _row_at(rows, j)
        v, _ = margin_loss(loss, y[i] * _dense_dot(X, i, w))
        total += _entry(weights, i) * v
    return total


@njit(**JIT)
def _dense_span_value_grad(loss, X, y, weights, scale, rows, w, acc, lo, hi):
    total = 0.0
    for j in range(lo, hi):
        i = _row_at(rows, j)
        s = _dense_dot(X, i, w)
        yi = y[i]
        wi = _entry(weights, i)
        v, dv = margin_loss(loss, yi * s)
        total += wi * v
        c = scale * wi * dv * yi
        if c != 0.0:
            _dense_axpy(X, i, c, acc)
    return total


@njit(**JIT_PARALLEL)
def dense_loss_value(loss, X, y, weights, scale, rows, w, workspace):
    """Dense counterpart of :func:`csr_loss_value` (``X`` C-contiguous float64, shape (n, d))."""
    m = _count(rows, X.shape[0])
    n_chunks = workspace.shape[0]
    last = workspace.shape[1] - 1
    if n_chunks == 1:
        return scale * _dense_span_value(loss, X, y, weights, rows, w, np.uint64(0), np.uint64(m))
    for k in prange(n_chunks):
        lo, hi = _chunk_span(k, n_chunks, m)
        workspace[k, last] = _dense_span_value(loss, X, y, weights, rows, w, lo, hi)
    total = 0.0
    for k in range(n_chunks):
        total += workspace[k, last]
    return scale * total


@njit(**JIT_PARALLEL)
def dense_loss_value_grad(loss, X, y, weights, scale, rows, w, out, workspace):
    """Dense counterpart of :func:`csr_loss_value_grad`."""
    m = _count(rows, X.shape[0])
    n_chunks = workspace.shape[0]
    d = out.shape[0]
    out[:] = 0.0
    if n_chunks == 1:
        return scale * _dense_span_value_grad(loss, X, y, weights, scale, rows, w, out,
                                              np.uint64(0), np.uint64(m))
    for k in prange(n_chunks):
        acc = workspace[k]
        acc[:] = 0.0
        lo, hi = _chunk_span(k, n_chunks, m)
        acc[d] = _dense_span_value_grad(loss, X, y, weights, scale, rows, w, acc, lo, hi)
    return scale * _reduce_workspace(workspace, out)
