"""A LIBSVM-like synthetic binary set: sparse binary features with Zipf-like frequencies (issues 34, 35).

Large public LIBSVM sets (url, kdd2010, criteo) share a shape: millions of binary features, a few
dozen per row, a handful of them very frequent and most seen a few times. A linear model then has
a weight for every rare feature, which it can use to memorise its few rows: training scores say
little about new rows. This generator makes that shape on the spot, reproducibly:

* feature ``j`` of a row is drawn with probability proportional to ``(j + 1) ** -zipf``
  (``per_row`` distinct features per row, binary values);
* the label is ``1`` iff ``a_i^T w + noise_i > 0`` with true weights ``w_j ~ N(0, 1)`` on the
  ``informative`` most frequent features (0 elsewhere), a logistic noise of scale ``noise``, and a
  bias that puts ``positive_rate`` of the rows in class 1.

Command line: ``python bench/synthetic_sparse.py ROWS FEATURES [--per-row 20] [--zipf 1.1] [--out file.svm]``
writes the set in LIBSVM format (``fastcon.datasets.dump_libsvm``).
"""
from __future__ import annotations

import argparse

import numpy as np
import scipy.sparse as sp

__all__ = ["make_sparse_binary"]


def make_sparse_binary(n_rows, n_features, *, per_row=20, zipf=1.1, informative=1000, noise=1.0,
                       positive_rate=0.5, seed=0):
    """``(X, y)``: CSR float64 binary features (``per_row`` per row, Zipf-like) and labels in {0, 1}.

    Parameters
    ----------
    n_rows, n_features : int
    per_row : int
        Distinct features per row (duplicates drawn for a row are redrawn once, then dropped).
    zipf : float
        Exponent of the feature frequencies, > 0 (1.1: the first feature in about one row in ten
        of ``n_features = 300,000``, half of the features in a handful of rows).
    informative : int
        Features with a true weight: the most frequent ones.
    noise : float
        Scale of the logistic label noise (0: labels are a linear function of the features).
    positive_rate : float
        Fraction of rows in class 1.
    seed : int
    """
    rng = np.random.default_rng(seed)
    p = (np.arange(1, n_features + 1, dtype=np.float64)) ** -float(zipf)
    cdf = np.cumsum(p)
    cdf /= cdf[-1]
    cols = np.searchsorted(cdf, rng.random((n_rows, per_row)), side="right").astype(np.int32)
    cols.sort(axis=1)
    dup = np.zeros_like(cols, dtype=bool)
    dup[:, 1:] = cols[:, 1:] == cols[:, :-1]
    redraw = np.searchsorted(cdf, rng.random(int(dup.sum())), side="right").astype(np.int32)
    cols[dup] = redraw
    cols.sort(axis=1)
    keep = np.ones_like(cols, dtype=bool)
    keep[:, 1:] = cols[:, 1:] != cols[:, :-1]
    counts = keep.sum(axis=1)
    indptr = np.zeros(n_rows + 1, dtype=np.int64)
    np.cumsum(counts, out=indptr[1:])
    X = sp.csr_matrix((np.ones(int(indptr[-1])), cols[keep], indptr), shape=(n_rows, n_features))
    w = np.zeros(n_features)
    k = min(int(informative), n_features)
    w[:k] = rng.normal(size=k)
    margin = np.asarray(X @ w).ravel()
    if noise > 0:
        margin += noise * rng.logistic(size=n_rows)
    y = (margin > np.quantile(margin, 1.0 - positive_rate)).astype(np.int64)
    return X, y


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("rows", type=int)
    ap.add_argument("features", type=int)
    ap.add_argument("--per-row", type=int, default=20)
    ap.add_argument("--zipf", type=float, default=1.1)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    from fastcon.datasets import dump_libsvm

    X, y = make_sparse_binary(args.rows, args.features, per_row=args.per_row, zipf=args.zipf, seed=args.seed)
    dump_libsvm(X, 2 * y - 1, args.out)


if __name__ == "__main__":
    main()
