"""How a design matrix is stored for the solvers: dense, or CSR when it is mostly zeros.

The solvers' passes over X are memory-bound. A CSR entry costs 12 bytes (value and column index)
against 8 for a dense one, and its indirect loads cost more per entry than dense streaming, so a
dense X is converted once when at most `SPARSE_DENSITY` of its entries are non-zero (measured:
docs/measurements.md). Exact zeros add nothing, so results move by round-off only.
"""
import numpy as np
import scipy.sparse as sp

__all__ = ["SPARSE_DENSITY", "fast_storage"]

#: Largest share of non-zero entries at which a dense X is stored as CSR.
SPARSE_DENSITY = 1.0 / 3.0


def fast_storage(X):
    """``X`` as CSR when it is a dense array with at most `SPARSE_DENSITY` non-zeros; otherwise ``X`` itself.

    Parameters
    ----------
    X : ndarray or scipy.sparse matrix
        A validated 2-d design (sparse input is returned as given).

    Returns
    -------
    ndarray or scipy.sparse.csr_matrix
    """
    if sp.issparse(X) or X.size == 0 or np.count_nonzero(X) > SPARSE_DENSITY * X.size:
        return X
    return sp.csr_matrix(X)
