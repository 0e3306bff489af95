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


# ---------------------------------------------------------------------------------------------------
# The same kind of set in chunks, for sets too large to hold (issue 35: LIBSVM's url and kdd2010 shapes)


def _zipf_cdf(n_features, zipf):
    """The cumulative distribution of feature ``j`` drawn with probability proportional to ``(j + 1) ** -zipf``."""
    cdf = np.arange(1, n_features + 1, dtype=np.float64)
    cdf **= -float(zipf)
    np.cumsum(cdf, out=cdf)
    cdf /= cdf[-1]
    return cdf


def _draw_binary(rng, cdf, n_rows, per_row):
    """``(rows, cols)`` of ``per_row`` Zipf draws per row, the rule of `make_sparse_binary`: sorted,
    a duplicate redrawn once, then dropped."""
    cols = np.searchsorted(cdf, rng.random((n_rows, per_row)), side="right").astype(np.int32)
    cols.sort(axis=1)
    dup = np.zeros_like(cols, dtype=bool)
    dup[:, 1:] = cols[:, 1:] == cols[:, :-1]
    cols[dup] = np.searchsorted(cdf, rng.random(int(dup.sum())), side="right").astype(np.int32)
    cols.sort(axis=1)
    keep = np.ones_like(cols, dtype=bool)
    keep[:, 1:] = cols[:, 1:] != cols[:, :-1]
    rows = np.broadcast_to(np.arange(n_rows, dtype=np.int64)[:, None], cols.shape)
    return rows[keep], cols[keep]


def iter_sparse_chunks(n_rows, n_features, *, per_row=20, zipf=1.1, real_columns=0, real_density=(0.05, 0.35),
                       informative=1000, noise=1.0, positive_rate=0.5, chunk_rows=100_000, seed=0):
    """``(X, y)`` chunks of ``chunk_rows`` rows of one LIBSVM-like set, generated chunk by chunk (issue 35).

    The set of `make_sparse_binary` (not its draw: each chunk has its own random stream), optionally
    with real-valued columns first, as LIBSVM's url set has, for sets too large to generate at once:

    * columns ``0 .. real_columns - 1`` are real-valued: column ``c`` is stored in a row with
      probability ``density_c ~ U(real_density)`` (drawn once), with a value ``k / 10**6``,
      ``k`` uniform in 1 .. 999,999 (six decimals, so the LIBSVM text holds the value exactly);
    * the other ``n_features - real_columns`` columns are binary, ``per_row`` Zipf draws per row
      with `make_sparse_binary`'s rule (a duplicate redrawn once, then dropped);
    * the label is ``1`` iff ``a_i^T w + noise_i > b``: true weights ``w_j ~ N(0, 1)`` on every
      real column and on the ``informative`` most frequent binary ones, logistic noise of scale
      ``noise``, and ``b`` the ``1 - positive_rate`` quantile of the first chunk's margins (the
      rate is ``positive_rate`` up to the first chunk's sampling error).

    ``X`` is CSR float64 with sorted indices (int32), ``y`` int64 in {0, 1}. Chunk ``c`` is drawn
    from a stream seeded by ``(seed, c)``: the full chunks depend on ``seed`` and ``chunk_rows``, not
    on ``n_rows`` (a shorter set is a prefix of a longer one, up to its last, partial chunk).
    Memory: the Zipf table and ``w`` (16 bytes per feature) and one chunk.
    """
    n_binary = int(n_features) - int(real_columns)
    if n_binary <= 0 or real_columns < 0:
        raise ValueError(f"real_columns: {real_columns} leaves no binary column of {n_features}")
    rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(0,)))   # the set's parameters
    density = rng.uniform(real_density[0], real_density[1], size=int(real_columns))
    w = np.zeros(int(n_features))
    w[:real_columns] = rng.normal(size=int(real_columns))
    k = min(int(informative), n_binary)
    w[real_columns:real_columns + k] = rng.normal(size=k)
    cdf = _zipf_cdf(n_binary, zipf)
    bias = None
    for c, start in enumerate(range(0, int(n_rows), int(chunk_rows))):
        m = min(int(chunk_rows), int(n_rows) - start)
        rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(1, c)))
        rows, cols = _draw_binary(rng, cdf, m, per_row)
        cols += real_columns
        if real_columns:
            real_rows, real_cols = np.nonzero(rng.random((m, int(real_columns)), dtype=np.float32) < density)
            real_values = rng.integers(1, 10 ** 6, size=real_rows.size) / 1e6
            order = np.argsort(np.concatenate([real_rows, rows]), kind="stable")   # per row: real, then binary
            cols = np.concatenate([real_cols.astype(np.int32), cols])[order]
            values = np.concatenate([real_values, np.ones(rows.size)])[order]
            rows = np.concatenate([real_rows, rows])[order]
        else:
            values = np.ones(rows.size)
        indptr = np.zeros(m + 1, dtype=np.int64)
        np.cumsum(np.bincount(rows, minlength=m), out=indptr[1:])
        X = sp.csr_matrix((values, cols, indptr), shape=(m, int(n_features)))
        X.has_sorted_indices = True
        margin = np.asarray(X @ w).ravel()
        if noise > 0:
            margin += noise * rng.logistic(size=m)
        if bias is None:
            bias = np.quantile(margin, 1.0 - positive_rate)
        yield X, (margin > bias).astype(np.int64)
