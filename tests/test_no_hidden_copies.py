"""A fit reads X where it lies: no copy of the training part, the validation part or the calibration part.

Measured with `tracemalloc` (it sees NumPy's and SciPy's allocations) on a CSR with 40 entries per
row, where a copy of X is 480 bytes per row and everything a fit legitimately holds per row (scores,
labels, weights, gradient buffers: about 20 float64) is 160: a fit that copies X, even only its
training part, ends above the input's size; one that does not stays near a third of it.
"""
import tracemalloc
import warnings

import numpy as np
import pytest
import scipy.sparse as sp

pytest.importorskip("sklearn")
from fastcon.estimators import FairClassifier, NeymanPearsonClassifier  # noqa: E402


def _wide_csr(n_rows=30_000, n_features=3_000, per_row=40, seed=0):
    rng = np.random.default_rng(seed)
    cols = rng.integers(0, n_features, n_rows * per_row)
    rows = np.repeat(np.arange(n_rows), per_row)
    X = sp.csr_matrix((rng.random(cols.size), (rows, cols)), shape=(n_rows, n_features))
    X.sum_duplicates()
    groups = rng.integers(0, 2, n_rows)
    margin = np.asarray(X @ rng.normal(size=n_features)).ravel() + 0.3 * groups
    y = (margin > np.median(margin)).astype(np.int64)
    return X, y, groups


@pytest.fixture(scope="module")
def data():
    return _wide_csr()


@pytest.mark.parametrize("make, fair", [
    (lambda: NeymanPearsonClassifier(bound=0.1, delta=None, max_iter=3), False),
    (lambda: NeymanPearsonClassifier(bound=0.1, delta=0.1, max_iter=3), False),
    (lambda: FairClassifier("demographic_parity", bound=0.05, max_iter=3), True),
    (lambda: FairClassifier("demographic_parity", bound=0.05, validation_fraction=0.3, max_iter=3), True),
], ids=["np", "np-umbrella", "fair", "fair-validation"])
def test_fit_peak_stays_below_the_size_of_x(data, make, fair):
    X, y, groups = data
    input_bytes = X.data.nbytes + X.indices.nbytes + X.indptr.nbytes
    estimator = make()
    # numba loads (or compiles) the kernels at their first call, several MB of Python objects that
    # tracemalloc would count: a fit on a slice of the same CSR first
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        make().fit(X[:2000], y[:2000], **({"sensitive_features": groups[:2000]} if fair else {}))
    tracemalloc.start()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            estimator.fit(X, y, **({"sensitive_features": groups} if fair else {}))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 0.5 * input_bytes, f"peak {peak / 2**20:.1f} MB for an input of {input_bytes / 2**20:.1f} MB"
    assert estimator.coef_.shape == (1, X.shape[1])
