r"""Matrix-vector kernels on CSR and dense designs: :math:`Xw`, :math:`X^\top c`, two-point scores.

Every kernel works on the full matrix (``rows=None``) or on a row subset ``rows`` (int64 or uint64
indices, any order, repeats allowed; the caller checks the range). Passing ``data=None`` selects the
binary-feature path: every stored entry is 1, so the ``data`` array (2/3 of the CSR bytes) is never
read. Both choices are made at compile time — ``None`` arguments get their own specialisation, and
the ``_entry``/``_row_at`` overloads below fold to constants — so no branch sits in the inner loops.

Speed rules that shape the code:

* loop counters and CSR offsets are unsigned (``uint64``; column indices ``uint32``): numba pays a
  negative-index wraparound test on every signed index, which made a signed CSR mat-vec slower
  than scipy;
* parallel loops run over a **fixed number of row chunks** decided by the data size
  (:func:`n_chunks_for`), never by the thread count, and chunk partial results are reduced in chunk
  order: the output is bit-identical whatever ``numba.set_num_threads`` says;
* transposed products accumulate into per-chunk rows of a caller-provided ``scratch`` array, so
  nothing is allocated per call.
"""
from typing import NamedTuple, Optional

import numpy as np
from numba import prange, types
from numba.extending import overload

from ._jit import njit

__all__ = [
    "CSR", "n_chunks_for", "chunk_scratch",
    "csr_matvec", "csr_rmatvec", "csr_matvec2",
    "dense_matvec", "dense_rmatvec", "dense_matvec2",
    "csr_weighted_column_squares", "dense_weighted_column_squares",
]

JIT = dict(cache=True, boundscheck=False, fastmath=False, nogil=True)
# Only explicit ``prange`` loops run in parallel. With ``parallel=True`` numba also turns array
# expressions such as ``out[:] = 0.0`` into parallel regions, so even the serial branch of a kernel
# paid a thread-pool round trip (docs/measurements.md). Chunked prange loops with per-chunk accumulators are all the kernels need.
JIT_PARALLEL = dict(JIT, parallel=dict(prange=True, reduction=True, comprehension=False, inplace_binop=False,
                                       setitem=False, numpy=False, stencil=False, fusion=False))

#: Below twice this many stored entries a pass stays serial, and chunks never hold less work.
#: The price of a parallel region is waiting for the slowest thread, which can be a scheduler tick
#: when another process holds a core; 128k entries keeps COMPAS-sized passes serial and splits
#: a9a in two (docs/measurements.md). The threading layer's idle workers sleep (tbb,
#: workqueue: `fastcon._kernels._threading`), which keeps the busy-machine cost bounded.
MIN_CHUNK_WORK = 1 << 17
#: Upper bound on the chunk count; a power of two so that 1, 2, 4, 8 or 16 threads split it evenly.
MAX_CHUNKS = 16

_ONE = np.uint64(1)


class CSR(NamedTuple):
    """A sparse matrix in compressed rows, as one kernel argument (numba types it field by field).

    The CSC copy of a matrix is the CSR record of its transpose (``indptr`` over columns,
    ``indices`` holding row positions). ``data=None`` types as its own specialisation: the
    binary-feature path, every stored entry 1, the values never read (module notes).
    """

    indptr: np.ndarray            #: uint64 (n_rows + 1,) offsets of the rows in ``indices``/``data``
    indices: np.ndarray           #: column of each stored entry (uint32, or uint16 where it fits)
    data: Optional[np.ndarray]    #: float64 value of each stored entry; None for binary features


@njit(inline="always")
def as_csr(X):
    """``X`` as a `CSR` record, given the record or the plain tuple ``(indptr, indices, data)``.

    An entry kernel called from Python per minibatch takes the plain tuple: numba's dispatcher
    types a tuple of arrays in C but a NamedTuple in Python (about 0.8 against 0.3 us per call);
    inside compiled code the record is free.
    """
    return CSR(X[0], X[1], X[2])


# --------------------------------------------------------------------------- compile-time helpers
def _entry(values, k):  # pragma: no cover - replaced by the overload inside jitted code
    return 1.0 if values is None else values[k]


@overload(_entry, inline="always")
def _entry_overload(values, k):
    """``values[k]``, or the constant 1.0 when ``values`` is None (binary features, unit weights)."""
    if isinstance(values, types.NoneType):
        return lambda values, k: 1.0
    return lambda values, k: values[k]


def _row_at(rows, j):  # pragma: no cover - replaced by the overload inside jitted code
    return j if rows is None else rows[j]


@overload(_row_at, inline="always")
def _row_at_overload(rows, j):
    """Row index of position ``j``: ``rows[j]`` for a subset, ``j`` itself for the full matrix."""
    if isinstance(rows, types.NoneType):
        return lambda rows, j: np.uint64(j)
    return lambda rows, j: np.uint64(rows[j])


def _count(rows, n_rows):  # pragma: no cover
    return n_rows if rows is None else rows.shape[0]


@overload(_count, inline="always")
def _count_overload(rows, n_rows):
    if isinstance(rows, types.NoneType):
        return lambda rows, n_rows: n_rows
    return lambda rows, n_rows: rows.shape[0]


@njit(**JIT)
def n_chunks_for(n_rows, work, n_features):
    """Number of row chunks a parallel pass uses; a function of the data only.

    Parameters
    ----------
    n_rows : int
        Rows the pass visits.
    work : int
        Stored entries the pass reads (nnz for CSR, ``n_rows * n_features`` for dense).
    n_features : int
        Length of a per-chunk accumulator; chunks are limited so that the ``(n_chunks,
        n_features)`` scratch, zeroed and reduced every pass, holds at most an eighth as many
        numbers as the pass reads entries. A scattered entry costs several streamed ones, but the
        scratch also competes with the gathered vector for cache (docs/measurements.md).

    Returns
    -------
    int
        A power of two in ``[1, MAX_CHUNKS]``; 1 means the serial path.
    """
    c = min(MAX_CHUNKS, work // MIN_CHUNK_WORK, n_rows, work // (8 * max(n_features, 1)))
    p = 1
    while 2 * p <= c:
        p *= 2
    return p


def chunk_scratch(n_rows, work, n_features, extra=0):
    """Zeroed ``(n_chunks, n_features + extra)`` float64 scratch sized by :func:`n_chunks_for`."""
    return np.zeros((n_chunks_for(int(n_rows), int(work), int(n_features)), int(n_features) + extra))


@njit(inline="always")
def _chunk_span(k, n_chunks, n):
    """Positions ``[lo, hi)`` of chunk ``k`` when ``n`` positions are cut into ``n_chunks`` parts."""
    lo = np.uint64((k * n) // n_chunks)
    hi = np.uint64(((k + 1) * n) // n_chunks)
    return lo, hi


# --------------------------------------------------------------------------- CSR
@njit(inline="always")
def _csr_dot(indptr, indices, data, i, w):
    s = 0.0
    for k in range(indptr[i], indptr[i + _ONE]):
        s += _entry(data, k) * w[indices[k]]
    return s


@njit(inline="always")
def _csr_axpy(indptr, indices, data, i, c, out):
    for k in range(indptr[i], indptr[i + _ONE]):
        out[indices[k]] += c * _entry(data, k)


@njit(**JIT_PARALLEL)
def csr_matvec(indptr, indices, data, rows, w, out):
    r"""Scores :math:`\mathrm{out}_j = a_{r_j}^\top w` of a CSR matrix.

    Parameters
    ----------
    indptr : ndarray of uint64, shape (n + 1,)
    indices : ndarray of uint32, shape (nnz,)
    data : ndarray of float64, shape (nnz,), or None
        None means binary features (every stored entry is 1).
    rows : ndarray of int64 or uint64, shape (m,), or None
        Row subset :math:`r`; None means every row (:math:`r_j = j`, m = n).
    w : ndarray of float64, shape (d,)
    out : ndarray of float64, shape (m,)
        Overwritten.
    """
    m = _count(rows, indptr.shape[0] - 1)
    work = m if rows is not None else np.int64(indptr[-1])
    if rows is not None and m > 0:
        work = m * max(1, np.int64(indptr[-1]) // max(1, indptr.shape[0] - 1))
    n_chunks = n_chunks_for(m, work, 1)
    if n_chunks == 1:
        for j in range(np.uint64(m)):
            out[j] = _csr_dot(indptr, indices, data, _row_at(rows, j), w)
        return
    for k in prange(n_chunks):
        lo, hi = _chunk_span(k, n_chunks, m)
        for j in range(lo, hi):
            out[j] = _csr_dot(indptr, indices, data, _row_at(rows, j), w)


@njit(inline="always")
def _csr_span_dot2(indptr, indices, data, rows, x, x_prev, out, out_prev, lo, hi):
    for j in range(lo, hi):
        i = _row_at(rows, j)
        s = 0.0
        t = 0.0
        for p in range(indptr[i], indptr[i + _ONE]):
            v = _entry(data, p)
            col = indices[p]
            s += v * x[col]
            t += v * x_prev[col]
        out[j] = s
        out_prev[j] = t


@njit(**JIT_PARALLEL)
def csr_matvec2(indptr, indices, data, rows, x, x_prev, out, out_prev):
    r"""Scores at two points, :math:`a_{r_j}^\top x` and :math:`a_{r_j}^\top x_{prev}`, reading each row once.

    For two-point (SPIDER-type) estimators: the row's indices and values are loaded once and used
    for both dot products. Arguments as in :func:`csr_matvec`; ``out`` and ``out_prev`` are
    overwritten.
    """
    m = _count(rows, indptr.shape[0] - 1)
    work = 2 * (m if rows is not None else np.int64(indptr[-1]))
    if rows is not None and m > 0:
        work = 2 * m * max(1, np.int64(indptr[-1]) // max(1, indptr.shape[0] - 1))
    n_chunks = n_chunks_for(m, work, 1)
    if n_chunks == 1:  # no parallel region: see MIN_CHUNK_WORK
        _csr_span_dot2(indptr, indices, data, rows, x, x_prev, out, out_prev, np.uint64(0), np.uint64(m))
        return
    for k in prange(n_chunks):
        lo, hi = _chunk_span(k, n_chunks, m)
        _csr_span_dot2(indptr, indices, data, rows, x, x_prev, out, out_prev, lo, hi)


@njit(**JIT_PARALLEL)
def csr_rmatvec(indptr, indices, data, rows, c, out, scratch):
    r"""Accumulate the transposed product :math:`\mathrm{out} \mathrel{+}= \sum_j c_j a_{r_j}`.

    With ``rows=None`` this is ``out += X.T @ c``.

    Parameters
    ----------
    indptr, indices, data, rows
        As in :func:`csr_matvec`.
    c : ndarray of float64, shape (m,)
        Coefficient of each visited row (by position in ``rows``).
    out : ndarray of float64, shape (d,)
        Accumulated into (not overwritten).
    scratch : ndarray of float64, shape (n_chunks, >= d)
        Per-chunk accumulators; ``scratch.shape[0]`` fixes the chunking (1 = serial, no scratch
        use). Results depend on the chunk count only, not on the number of threads.
    """
    m = _count(rows, indptr.shape[0] - 1)
    n_chunks = scratch.shape[0]
    if n_chunks == 1:
        for j in range(np.uint64(m)):
            cj = c[j]
            if cj != 0.0:
                _csr_axpy(indptr, indices, data, _row_at(rows, j), cj, out)
        return
    d = out.shape[0]
    for k in prange(n_chunks):
        acc = scratch[k]
        acc[:d] = 0.0
        lo, hi = _chunk_span(k, n_chunks, m)
        for j in range(lo, hi):
            cj = c[j]
            if cj != 0.0:
                _csr_axpy(indptr, indices, data, _row_at(rows, j), cj, acc)
    _reduce_chunks(scratch, out)


@njit(**JIT)
def csr_weighted_column_squares(indptr, indices, data, rows, c, out):
    r"""Accumulate :math:`\mathrm{out}_k \mathrel{+}= \sum_j c_j\, a_{r_j k}^2` (weighted column sums of squares).

    The diagonal of :math:`X^\top \operatorname{diag}(c) X`: a loss's Gauss–Newton curvature per
    weight, which a quasi-Newton solver uses to scale its variables. One serial pass, made once
    per solve (not per iteration). Arguments as in :func:`csr_rmatvec` (``data=None``: every
    entry is 1, so the result is :math:`X^\top c`).
    """
    m = _count(rows, indptr.shape[0] - 1)
    for j in range(np.uint64(m)):
        cj = c[j]
        i = _row_at(rows, j)
        for k in range(indptr[i], indptr[i + _ONE]):
            v = _entry(data, k)
            out[indices[k]] += cj * (v * v)


#: Columns per parallel block of the chunk reduction (128 kB of ``out``).
REDUCE_BLOCK = 1 << 14


@njit(inline="always")
def _reduce_chunks(scratch, out):
    """``out += sum_k scratch[k, :d]``, every column summed in chunk order (thread-count independent).

    Parallel over column blocks: each block of ``out`` is owned by one thread, and within it the
    chunks are added in order 0, 1, ... as in a serial loop, so the bits do not depend on the
    threads. On a wide model the reduction reads ``n_chunks * d`` numbers, a third of an
    :math:`X^\top c` pass at a million features when serial; one block (``d <= REDUCE_BLOCK``)
    stays serial (no parallel region for a few microseconds of work).
    """
    d = out.shape[0]
    n_blocks = (d + REDUCE_BLOCK - 1) // REDUCE_BLOCK
    if n_blocks <= 1:
        for k in range(scratch.shape[0]):
            for col in range(d):
                out[col] += scratch[k, col]
        return
    for b in prange(n_blocks):
        lo = b * REDUCE_BLOCK
        hi = min(d, lo + REDUCE_BLOCK)
        for k in range(scratch.shape[0]):
            for col in range(lo, hi):
                out[col] += scratch[k, col]


# --------------------------------------------------------------------------- dense
@njit(inline="always")
def _dense_dot(X, i, w):
    s = 0.0
    for col in range(X.shape[1]):
        s += X[i, col] * w[col]
    return s


@njit(inline="always")
def _dense_axpy(X, i, c, out):
    for col in range(X.shape[1]):
        out[col] += c * X[i, col]


@njit(**JIT_PARALLEL)
def dense_matvec(X, rows, w, out):
    r"""Scores :math:`\mathrm{out}_j = a_{r_j}^\top w` of a C-contiguous dense matrix ``X`` (n, d).

    ``rows`` as in :func:`csr_matvec`. The dot product keeps the sequential summation order (no
    fastmath), so results match a plain loop exactly and differ from BLAS only by round-off.
    """
    m = _count(rows, X.shape[0])
    n_chunks = n_chunks_for(m, m * X.shape[1], 1)
    if n_chunks == 1:  # no parallel region: see MIN_CHUNK_WORK
        for j in range(np.uint64(m)):
            out[j] = _dense_dot(X, _row_at(rows, j), w)
        return
    for k in prange(n_chunks):
        lo, hi = _chunk_span(k, n_chunks, m)
        for j in range(lo, hi):
            out[j] = _dense_dot(X, _row_at(rows, j), w)


@njit(inline="always")
def _dense_span_dot2(X, rows, x, x_prev, out, out_prev, lo, hi):
    for j in range(lo, hi):
        i = _row_at(rows, j)
        s = 0.0
        t = 0.0
        for col in range(X.shape[1]):
            v = X[i, col]
            s += v * x[col]
            t += v * x_prev[col]
        out[j] = s
        out_prev[j] = t


@njit(**JIT_PARALLEL)
def dense_matvec2(X, rows, x, x_prev, out, out_prev):
    """Scores at ``x`` and ``x_prev`` reading each dense row once (see :func:`csr_matvec2`)."""
    m = _count(rows, X.shape[0])
    n_chunks = n_chunks_for(m, 2 * m * X.shape[1], 1)
    if n_chunks == 1:  # no parallel region: see MIN_CHUNK_WORK
        _dense_span_dot2(X, rows, x, x_prev, out, out_prev, np.uint64(0), np.uint64(m))
        return
    for k in prange(n_chunks):
        lo, hi = _chunk_span(k, n_chunks, m)
        _dense_span_dot2(X, rows, x, x_prev, out, out_prev, lo, hi)


@njit(**JIT_PARALLEL)
def dense_rmatvec(X, rows, c, out, scratch):
    r"""Accumulate :math:`\mathrm{out} \mathrel{+}= \sum_j c_j a_{r_j}` for dense ``X``.

    ``scratch`` as in :func:`csr_rmatvec`.
    """
    m = _count(rows, X.shape[0])
    n_chunks = scratch.shape[0]
    if n_chunks == 1:
        for j in range(np.uint64(m)):
            cj = c[j]
            if cj != 0.0:
                _dense_axpy(X, _row_at(rows, j), cj, out)
        return
    d = out.shape[0]
    for k in prange(n_chunks):
        acc = scratch[k]
        acc[:d] = 0.0
        lo, hi = _chunk_span(k, n_chunks, m)
        for j in range(lo, hi):
            cj = c[j]
            if cj != 0.0:
                _dense_axpy(X, _row_at(rows, j), cj, acc)
    _reduce_chunks(scratch, out)


@njit(**JIT)
def dense_weighted_column_squares(X, rows, c, out):
    r"""Accumulate :math:`\mathrm{out}_k \mathrel{+}= \sum_j c_j\, X_{r_j k}^2` for dense ``X`` (see
    :func:`csr_weighted_column_squares`)."""
    m = _count(rows, X.shape[0])
    for j in range(np.uint64(m)):
        cj = c[j]
        i = _row_at(rows, j)
        for col in range(X.shape[1]):
            v = X[i, col]
            out[col] += cj * (v * v)
