"""NumPy oracle of `fastcon._kernels._csr_checks`: the first structural fault of a compressed layout."""
import numpy as np

OK, INDPTR_START, INDPTR_DECREASES, INDEX_OUT_OF_RANGE, INDPTR_PAST_END = 0, 1, 2, 3, 4


def first_out_of_range(idx, lo, hi, bound):
    span = np.asarray(idx[lo:hi]).astype(np.int64)
    bad = np.flatnonzero((span < 0) | (span >= bound))
    return int(lo + bad[0]) if bad.size else -1


def compressed_structure_error(indptr, indices, n_minor):
    """``(code, major, position)`` as the kernel returns it, from whole-array NumPy tests."""
    indptr = np.asarray(indptr).astype(np.int64)
    n_major = indptr.size - 1
    if indptr[0] != 0:
        return INDPTR_START, 0, -1
    drops = np.flatnonzero(np.diff(indptr) < 0)
    if drops.size:
        return INDPTR_DECREASES, int(drops[0]), -1
    nnz = int(indptr[-1])
    if nnz > len(indices):
        return INDPTR_PAST_END, n_major, -1
    p = first_out_of_range(indices, 0, nnz, n_minor)
    if p < 0:
        return OK, 0, -1
    row = int(np.flatnonzero(indptr <= p)[-1])  # the last row starting at or before p
    return INDEX_OUT_OF_RANGE, row, p
