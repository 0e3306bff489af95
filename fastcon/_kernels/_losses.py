r"""Fused margin-loss passes: value and subgradient of a mean margin loss in one sweep over the rows.

For a margin loss :math:`\phi` and margins :math:`z_i = y_i\, a_i^\top w`, the kernels compute

.. math::

    L(w) = \sigma \sum_{i \in R} s_i\, \phi(z_i), \qquad
    \partial L(w) \ni \sigma \sum_{i \in R} s_i\, \phi'(z_i)\, y_i\, a_i,

over all rows or a row subset :math:`R`, with optional sample weights :math:`s_i` and a scale
:math:`\sigma` chosen by the caller. The loss is an integer code (:func:`margin_loss` branches on it
once per row, and numba caches the kernels); logistic and sigmoid passes go through blocks of
``LOSS_BLOCK_ROWS`` rows so their transcendentals vectorise. Results do not depend on the number
of threads. Design notes: docs/design.md, 'Module notes'; measurements: docs/measurements.md.
"""
import numpy as np
from numba import prange

from ._jit import njit
from ._linalg import (
    JIT, JIT_PARALLEL, _chunk_span, _count, _csr_axpy, _csr_dot, _dense_axpy, _dense_dot, _entry, _row_at,
    as_csr, n_chunks_for,
)
from ._vecmath import exp_minus, log1p_unit

__all__ = [
    "HINGE", "LOGISTIC", "SIGMOID", "SQUARED_HINGE", "LOSS_CODES",
    "hinge", "logistic", "sigmoid", "squared_hinge", "margin_loss",
    "loss_workspace", "LOSS_BLOCK_ROWS",
    "csr_loss_value", "csr_loss_value_grad", "dense_loss_value", "dense_loss_value_grad",
]

HINGE, LOGISTIC, SIGMOID, SQUARED_HINGE = 0, 1, 2, 3
LOSS_CODES = {"hinge": HINGE, "logistic": LOGISTIC, "sigmoid": SIGMOID, "squared_hinge": SQUARED_HINGE}

_ONE = np.uint64(1)

#: Rows per block of the logistic and sigmoid passes (module notes): the block's margins, losses and
#: derivatives (3 x 128 float64, 3 kB) stay in L1 between the three loops over the block.
LOSS_BLOCK_ROWS = 128
_BLOCK = np.uint64(LOSS_BLOCK_ROWS)


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

    With :math:`e = e^{-|z|} \in [0, 1]` (no overflow): :math:`\phi = \log(1 + e)` for
    :math:`z > 0`, else :math:`\log(1 + e) - z`, so small losses keep full relative precision;
    :math:`\phi' = -e/(1 + e)` for :math:`z > 0`, else :math:`-1/(1 + e)`. Branch-free
    (`fastcon._kernels._vecmath`), so a loop over margins vectorises.
    """
    e = exp_minus(abs(z))
    lp = log1p_unit(e)
    pos = z > 0.0
    # true_divide: `/` tests for a zero divisor (to raise), a branch that stops vectorisation
    return (lp if pos else lp - z), -np.true_divide(e if pos else 1.0, 1.0 + e)


@njit(inline="always")
def sigmoid(z):
    r"""Sigmoid loss :math:`\phi(z) = 1/(1 + e^{z})`, :math:`\phi'(z) = -\phi(z)(1 - \phi(z))`.

    With :math:`e = e^{-|z|}` and :math:`r = 1/(1 + e)`: for :math:`z > 0`, :math:`\phi = e r` and
    :math:`1 - \phi = r`; otherwise :math:`\phi = r` and :math:`1 - \phi = e r`. Either way
    :math:`\phi' = -(e r) r`: both factors come from their own formula, never as ``1 - phi``
    (which would cancel). Branch-free (`fastcon._kernels._vecmath`), so a loop over margins
    vectorises; within 3 ulp of the exact values (tests/test_vecmath.py). NaN gives NaN.
    """
    e = exp_minus(abs(z))
    r = np.true_divide(1.0, 1.0 + e)          # true_divide: `/` tests for a zero divisor (a branch)
    s = e * r
    return (s if z > 0.0 else r), -(s * r)


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


# --------------------------------------------------------------------------- blocks of smooth losses
@njit(inline="always")
def _is_smooth(loss):
    """Losses evaluated block by block (a transcendental per row); the others row by row."""
    return loss == LOGISTIC or loss == SIGMOID


@njit(inline="always")
def _block_losses(loss, z, v, dv, m, grad):
    r"""``v[:m] = phi(z[:m])`` and, with ``grad``, ``dv[:m] = phi'(z[:m])`` of a smooth loss.

    One branch-free loop per loss: the body is straight-line arithmetic
    (`fastcon._kernels._vecmath`), so LLVM vectorises it. ``grad`` is a constant at every call
    site; without it the derivative's arithmetic is dead code and LLVM drops it.
    """
    if loss == LOGISTIC:
        if grad:
            for t in range(m):
                v[t], dv[t] = logistic(z[t])
        else:
            for t in range(m):
                v[t], _ = logistic(z[t])
    else:
        if grad:
            for t in range(m):
                v[t], dv[t] = sigmoid(z[t])
        else:
            for t in range(m):
                v[t], _ = sigmoid(z[t])


# --------------------------------------------------------------------------- CSR passes
@njit(inline="always")
def _csr_block_margins(X, y, rows, w, z, j0, m):
    indptr, indices, data = X
    for t in range(m):
        i = _row_at(rows, j0 + t)
        z[t] = y[i] * _csr_dot(indptr, indices, data, i, w)


@njit(inline="always")
def _csr_span_value(loss, X, y, weights, rows, w, lo, hi):
    """Positions ``[lo, hi)``: block by block for the smooth losses, row by row otherwise.

    Two compiled functions rather than one with both loops: with the block loop (and its buffer)
    in the same function, the hinge pass was slower (docs/measurements.md).
    """
    if _is_smooth(loss):
        return _csr_blocks_value(loss, X, y, weights, rows, w, lo, hi)
    return _csr_rows_value(loss, X, y, weights, rows, w, lo, hi)


@njit(**JIT)
def _csr_blocks_value(loss, X, y, weights, rows, w, lo, hi):
    total = 0.0
    buf = np.empty((2, LOSS_BLOCK_ROWS))
    z, v = buf[0], buf[1]
    for j0 in range(lo, hi, _BLOCK):
        m = min(_BLOCK, hi - j0)
        _csr_block_margins(X, y, rows, w, z, j0, m)
        _block_losses(loss, z, v, v, m, False)  # no derivatives
        for t in range(m):
            total += _entry(weights, _row_at(rows, j0 + t)) * v[t]
    return total


@njit(**JIT)
def _csr_rows_value(loss, X, y, weights, rows, w, lo, hi):
    indptr, indices, data = X
    total = 0.0
    for j in range(lo, hi):
        i = _row_at(rows, j)
        v, _ = margin_loss(loss, y[i] * _csr_dot(indptr, indices, data, i, w))
        total += _entry(weights, i) * v
    return total


@njit(inline="always")
def _csr_span_value_grad(loss, X, y, weights, scale, rows, w, acc, lo, hi):
    """As :func:`_csr_span_value`, adding the subgradient into ``acc``."""
    if _is_smooth(loss):
        return _csr_blocks_value_grad(loss, X, y, weights, scale, rows, w, acc, lo, hi)
    return _csr_rows_value_grad(loss, X, y, weights, scale, rows, w, acc, lo, hi)


@njit(**JIT)
def _csr_blocks_value_grad(loss, X, y, weights, scale, rows, w, acc, lo, hi):
    indptr, indices, data = X
    total = 0.0
    buf = np.empty((3, LOSS_BLOCK_ROWS))
    z, v, dv = buf[0], buf[1], buf[2]
    for j0 in range(lo, hi, _BLOCK):
        m = min(_BLOCK, hi - j0)
        _csr_block_margins(X, y, rows, w, z, j0, m)
        _block_losses(loss, z, v, dv, m, True)
        for t in range(m):
            i = _row_at(rows, j0 + t)
            wi = _entry(weights, i)
            total += wi * v[t]
            c = scale * wi * dv[t] * y[i]
            if c != 0.0:
                # The block's rows were read for their margins a moment ago: still in cache.
                _csr_axpy(indptr, indices, data, i, c, acc)
    return total


@njit(**JIT)
def _csr_rows_value_grad(loss, X, y, weights, scale, rows, w, acc, lo, hi):
    indptr, indices, data = X
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
def csr_loss_value(loss, X, y, weights, scale, rows, w, workspace):
    r"""Value :math:`\sigma \sum_{i\in R} s_i \phi(y_i a_i^\top w)` of a CSR design.

    Parameters
    ----------
    loss : int
        Loss code (``HINGE``, ``LOGISTIC``, ``SIGMOID``, ``SQUARED_HINGE``).
    X : CSR or tuple
        The design (`fastcon._kernels._linalg.CSR`: uint64 ``indptr``, uint32 ``indices``,
        float64 ``data``, or ``data=None`` for binary features), or the plain tuple of its fields
        (cheaper to dispatch from Python, `as_csr`).
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
    X = as_csr(X)
    m = _count(rows, X.indptr.shape[0] - 1)
    n_chunks = workspace.shape[0]
    last = workspace.shape[1] - 1
    if n_chunks == 1:
        return scale * _csr_span_value(loss, X, y, weights, rows, w, np.uint64(0), np.uint64(m))
    for k in prange(n_chunks):
        lo, hi = _chunk_span(k, n_chunks, m)
        workspace[k, last] = _csr_span_value(loss, X, y, weights, rows, w, lo, hi)
    total = 0.0
    for k in range(n_chunks):
        total += workspace[k, last]
    return scale * total


@njit(**JIT_PARALLEL)
def csr_loss_value_grad(loss, X, y, weights, scale, rows, w, out, workspace):
    r"""Value and subgradient of :math:`\sigma \sum_{i\in R} s_i \phi(y_i a_i^\top w)`, fused.

    Arguments as in :func:`csr_loss_value`; ``out`` (float64, shape (d,)) is overwritten with
    :math:`\sigma \sum_{i\in R} s_i \phi'(z_i) y_i a_i`. Returns the value.
    """
    X = as_csr(X)
    m = _count(rows, X.indptr.shape[0] - 1)
    n_chunks = workspace.shape[0]
    d = out.shape[0]
    out[:] = 0.0
    if n_chunks == 1:
        return scale * _csr_span_value_grad(loss, X, y, weights, scale, rows, w, out, np.uint64(0), np.uint64(m))
    for k in prange(n_chunks):
        acc = workspace[k]
        acc[:] = 0.0
        lo, hi = _chunk_span(k, n_chunks, m)
        acc[d] = _csr_span_value_grad(loss, X, y, weights, scale, rows, w, acc, lo, hi)
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
@njit(inline="always")
def _dense_block_margins(X, y, rows, w, z, j0, m):
    for t in range(m):
        i = _row_at(rows, j0 + t)
        z[t] = y[i] * _dense_dot(X, i, w)


@njit(inline="always")
def _dense_span_value(loss, X, y, weights, rows, w, lo, hi):
    """Dense :func:`_csr_span_value`."""
    if _is_smooth(loss):
        return _dense_blocks_value(loss, X, y, weights, rows, w, lo, hi)
    return _dense_rows_value(loss, X, y, weights, rows, w, lo, hi)


@njit(**JIT)
def _dense_blocks_value(loss, X, y, weights, rows, w, lo, hi):
    total = 0.0
    buf = np.empty((2, LOSS_BLOCK_ROWS))
    z, v = buf[0], buf[1]
    for j0 in range(lo, hi, _BLOCK):
        m = min(_BLOCK, hi - j0)
        _dense_block_margins(X, y, rows, w, z, j0, m)
        _block_losses(loss, z, v, v, m, False)  # no derivatives
        for t in range(m):
            total += _entry(weights, _row_at(rows, j0 + t)) * v[t]
    return total


@njit(**JIT)
def _dense_rows_value(loss, X, y, weights, rows, w, lo, hi):
    total = 0.0
    for j in range(lo, hi):
        i = _row_at(rows, j)
        v, _ = margin_loss(loss, y[i] * _dense_dot(X, i, w))
        total += _entry(weights, i) * v
    return total


@njit(inline="always")
def _dense_span_value_grad(loss, X, y, weights, scale, rows, w, acc, lo, hi):
    """Dense :func:`_csr_span_value_grad`."""
    if _is_smooth(loss):
        return _dense_blocks_value_grad(loss, X, y, weights, scale, rows, w, acc, lo, hi)
    return _dense_rows_value_grad(loss, X, y, weights, scale, rows, w, acc, lo, hi)


@njit(**JIT)
def _dense_blocks_value_grad(loss, X, y, weights, scale, rows, w, acc, lo, hi):
    total = 0.0
    buf = np.empty((3, LOSS_BLOCK_ROWS))
    z, v, dv = buf[0], buf[1], buf[2]
    for j0 in range(lo, hi, _BLOCK):
        m = min(_BLOCK, hi - j0)
        _dense_block_margins(X, y, rows, w, z, j0, m)
        _block_losses(loss, z, v, dv, m, True)
        for t in range(m):
            i = _row_at(rows, j0 + t)
            wi = _entry(weights, i)
            total += wi * v[t]
            c = scale * wi * dv[t] * y[i]
            if c != 0.0:
                _dense_axpy(X, i, c, acc)
    return total


@njit(**JIT)
def _dense_rows_value_grad(loss, X, y, weights, scale, rows, w, acc, lo, hi):
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
