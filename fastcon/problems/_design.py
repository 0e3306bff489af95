"""`DesignMatrix`: one face for CSR, binary-CSR and dense feature matrices.

Terms that need scores ``A w`` and transposed products ``A^T c`` on all rows or a row subset call
this object and never branch on the storage format themselves (the lightning dataset idea).
"""
from __future__ import annotations

import numpy as np

from .._kernels._linalg import (
    chunk_scratch, csr_matvec, csr_matvec2, csr_rmatvec, csr_weighted_column_squares, dense_matvec, dense_matvec2,
    dense_rmatvec, dense_weighted_column_squares,
)

__all__ = ["DesignMatrix", "design_of"]


class DesignMatrix:
    """Kernel-ready view of a dataset's X (or of a row block of it).

    Parameters
    ----------
    dataset : fastcon.Dataset
        Its X is used as stored; binary-feature CSR skips the values array.
    """

    def __init__(self, dataset):
        self.n_rows, self.n_features = dataset.shape
        self.is_sparse = dataset.is_sparse
        if self.is_sparse:
            indptr, indices, data = dataset.csr_arrays
            self._csr = (indptr, indices, None if dataset.is_binary_features else data)
            self.nnz = int(dataset.X.nnz)
        else:
            self._X = dataset.X
            self.nnz = self.n_rows * self.n_features
        self._scratch = {}

    def _scratch_for(self, m):
        work = m * max(1, self.nnz // max(self.n_rows, 1))
        scratch = chunk_scratch(m, work, self.n_features)
        key = scratch.shape[0]
        if key not in self._scratch:
            self._scratch[key] = scratch
        return self._scratch[key]

    def matvec(self, w, out, rows=None):
        """``out[j] = a_{rows[j]}^T w`` (all rows when ``rows`` is None)."""
        if self.is_sparse:
            csr_matvec(*self._csr, rows, w, out)
        else:
            dense_matvec(self._X, rows, w, out)
        return out

    def matvec2(self, x, x_prev, out, out_prev, rows=None):
        """Scores at two points in one read of each row (SPIDER-type differences)."""
        if self.is_sparse:
            csr_matvec2(*self._csr, rows, x, x_prev, out, out_prev)
        else:
            dense_matvec2(self._X, rows, x, x_prev, out, out_prev)

    def rmatvec(self, c, out, rows=None):
        """``out += sum_j c[j] a_{rows[j]}`` (accumulates; ``X.T @ c`` when ``rows`` is None)."""
        m = self.n_rows if rows is None else len(rows)
        scratch = self._scratch_for(m)
        if self.is_sparse:
            csr_rmatvec(*self._csr, rows, c, out, scratch)
        else:
            dense_rmatvec(self._X, rows, c, out, scratch)
        return out

    def weighted_column_squares(self, c, out, rows=None):
        """``out += sum_j c[j] a_{rows[j]}**2`` entrywise: the diagonal of ``X_rows^T diag(c) X_rows``."""
        if self.is_sparse:
            csr_weighted_column_squares(*self._csr, rows, c, out)
        else:
            dense_weighted_column_squares(self._X, rows, c, out)
        return out

    def row_norms(self) -> np.ndarray:
        """Euclidean norm of every row (used by step-size heuristics and Lipschitz bounds)."""
        if self.is_sparse:
            indptr, _, data = self._csr
            sq = np.ones(int(indptr[-1])) if data is None else data * data
            return np.sqrt(np.add.reduceat(np.append(sq, 0.0), indptr[:-1].astype(np.int64))
                           * (np.diff(indptr) > 0))
        return np.sqrt(np.einsum("ij,ij->i", self._X, self._X))


def design_of(dataset):
    """The pass object over a dataset's X: the dataset's own ``design`` when it has one (a
    `fastcon.problems._dask_design.DistributedDataset`, whose X is on dask workers), else a
    `DesignMatrix`."""
    own = getattr(dataset, "design", None)
    return own if own is not None else DesignMatrix(dataset)
