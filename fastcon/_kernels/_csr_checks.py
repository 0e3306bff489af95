r"""Structural scans of compressed sparse layouts (CSR, CSC, BSR) and of coordinate (COO) indices.

SciPy does not bounds-check the arrays of ``csr_matrix((data, indices, indptr), shape)``, and its
own routines (``has_canonical_format``, ``sum_duplicates``, ``tocsr`` of a CSC) then read and write
out of bounds. These scans run before any of them: one O(nnz + n_major) pass each, allocating
nothing, returning the *first* bad position so that the caller's message can name the row and the
value.

Both scans are reductions that vectorise (an OR of ``indptr[i+1] < indptr[i]``, an unsigned
maximum of the indices: a negative index read as unsigned is larger than any bound), followed
by a locating loop that only runs when the reduction found a fault. The layout is the same for
CSR (major axis = rows), CSC (columns) and BSR (block rows), so one kernel serves all three.
"""
import numpy as np

from ._jit import njit
from ._linalg import JIT

__all__ = ["OK", "INDPTR_START", "INDPTR_DECREASES", "INDEX_OUT_OF_RANGE", "INDPTR_PAST_END",
           "compressed_structure_error", "first_out_of_range"]

OK = 0
INDPTR_START = 1
INDPTR_DECREASES = 2
INDEX_OUT_OF_RANGE = 3
INDPTR_PAST_END = 4


@njit(**JIT)
def first_out_of_range(idx, lo, hi, bound):
    """First position ``p`` in ``[lo, hi)`` with ``idx[p]`` outside ``[0, bound)``, or -1 if none.

    Parameters
    ----------
    idx : ndarray of any integer dtype, shape (>= hi,)
    lo, hi : int
        The span to scan (``0 <= lo <= hi <= len(idx)``, checked by the caller).
    bound : int
        Exclusive upper bound, ``>= 0``.
    """
    limit = np.uint64(bound)
    largest = np.uint64(0)
    for p in range(lo, hi):
        largest = max(largest, np.uint64(idx[p]))  # negative values wrap above any bound
    if hi <= lo or largest < limit:
        return -1
    for p in range(lo, hi):
        if np.uint64(idx[p]) >= limit:
            return p
    return -1  # pragma: no cover - the reduction saw a bad value


@njit(**JIT)
def compressed_structure_error(indptr, indices, n_minor):
    r"""First structural fault of a compressed layout, as ``(code, major, position)``.

    The caller has checked that ``indptr`` has ``n_major + 1 >= 1`` entries. The scan checks, in
    this order, ``indptr[0] == 0``, ``indptr`` non-decreasing, ``indptr[-1] <= len(indices)``
    and every index of ``indices[:indptr[-1]]`` in :math:`[0, n_{minor})`.

    Returns
    -------
    code : int
        `OK`, `INDPTR_START`, `INDPTR_DECREASES`, `INDPTR_PAST_END` (``indptr[-1] >
        len(indices)``) or `INDEX_OUT_OF_RANGE`.
    major : int
        The row (CSR), column (CSC) or block row (BSR) at fault: ``indptr[major] >
        indptr[major + 1]`` for a decrease, the row holding the bad index otherwise.
    position : int
        Position of the bad index in ``indices`` (-1 for the ``indptr`` faults).
    """
    n_major = indptr.shape[0] - 1
    if indptr[0] != 0:
        return INDPTR_START, 0, -1
    decreases = False
    for i in range(n_major):
        decreases |= indptr[i + 1] < indptr[i]
    if decreases:
        for i in range(n_major):
            if indptr[i + 1] < indptr[i]:
                return INDPTR_DECREASES, i, -1
    nnz = indptr[n_major]
    if nnz > indices.shape[0]:
        return INDPTR_PAST_END, n_major, -1
    p = first_out_of_range(indices, 0, nnz, n_minor)
    if p < 0:
        return OK, 0, -1
    # indptr is non-decreasing from 0, so the row of p is the last i with indptr[i] <= p.
    row = np.searchsorted(indptr, p, side="right") - 1
    return INDEX_OUT_OF_RANGE, row, p
