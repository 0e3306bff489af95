"""`MultiClassNeymanPearsonClassifier` fits its intercepts without a copy of X (issue 33).

The intercepts are an implicit column of ones of the class terms (`ClassPairwiseRisk(...,
intercept=True)`), where the fit used to pass ``hstack([X, ones])``: a copy of X with n more
entries, held for the whole fit. (1) The fit gives what the stacked column gave: against an
explicit fit on the stacked X with ``fit_intercept=False`` and the ones column's weights read back
(ridge 0, so the unpenalised intercepts and the penalised ones column are the same problem; that
explicit fit is the previous code's computation). (2) Measured with `tracemalloc` on a CSR with 40
entries per row: fitting the intercepts costs under 5% of the input's size (the stacked copy was
more than the whole input), and beyond what its class terms store by design (each term keeps its
class's rows as a CSR block and a CSC copy, `ClassPairwiseRisk`: together about 1.7 times the
input here) the unconstrained fit holds less than half the input's size, the bounded fit (two
sets of terms) less than the input's size.
"""
import tracemalloc
import warnings

import numpy as np
import pytest
import scipy.sparse as sp

pytest.importorskip("sklearn")
from fastcon import Dataset  # noqa: E402
from fastcon.estimators import MultiClassNeymanPearsonClassifier  # noqa: E402
from fastcon.problems import ClassPairwiseRisk  # noqa: E402


def _stacked(X):
    n = X.shape[0]
    return sp.hstack([X, np.ones((n, 1))], format="csr") if sp.issparse(X) else np.hstack([X, np.ones((n, 1))])


@pytest.fixture(scope="module")
def small():
    rng = np.random.default_rng(0)
    n, d = 600, 8
    y = rng.integers(0, 3, n)
    X = np.eye(3)[y] @ rng.normal(size=(3, d)) + 1.5 * rng.normal(size=(n, d))
    X[rng.random((n, d)) < 0.4] = 0.0
    return X, y


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "csr"])
@pytest.mark.parametrize("params, rtol", [
    ({"loss": "logistic"}, 1e-9),
    ({"loss": "sigmoid"}, 1e-9),
    # nine solves of the level calibration carry the round-off of a reordered sum (1e-16) to about 1e-7
    ({"bound": {1: 0.2, 2: 0.2}, "max_calibration": 3, "delta": None}, 1e-5),
], ids=["logistic", "sigmoid", "bounded"])
def test_implicit_intercepts_equal_a_stored_column_of_ones(small, sparse, params, rtol):
    X, y = small
    Xi = sp.csr_matrix(X) if sparse else X
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        implicit = MultiClassNeymanPearsonClassifier(ridge=0.0, **params).fit(Xi, y)
        stored = MultiClassNeymanPearsonClassifier(ridge=0.0, fit_intercept=False, **params).fit(_stacked(Xi), y)
    assert implicit.coef_.shape == (3, X.shape[1]) and implicit.intercept_.shape == (3,)
    assert np.abs(implicit.intercept_).max() > 1e-3  # the intercepts were fitted, not left at 0
    scale = np.abs(stored.coef_).max()
    np.testing.assert_allclose(implicit.coef_, stored.coef_[:, :-1], rtol=rtol, atol=rtol * scale)
    np.testing.assert_allclose(implicit.intercept_, stored.coef_[:, -1], rtol=rtol, atol=rtol * scale)
    assert implicit.n_iter_ == stored.n_iter_
    assert implicit.calibration_["statuses"] == stored.calibration_["statuses"]
    assert np.array_equal(implicit.predict(Xi), stored.predict(_stacked(Xi)))


def _wide_csr(n_rows=30_000, n_features=3_000, per_row=40, n_classes=3, seed=0):
    rng = np.random.default_rng(seed)
    cols = rng.integers(0, n_features, n_rows * per_row)
    rows = np.repeat(np.arange(n_rows), per_row)
    X = sp.csr_matrix((rng.random(cols.size), (rows, cols)), shape=(n_rows, n_features))
    X.sum_duplicates()
    y = np.argmax(np.asarray(X @ rng.normal(size=(n_features, n_classes))), axis=1)
    return X, y


@pytest.fixture(scope="module")
def wide():
    return _wide_csr()


def _term_bytes(X, y):
    """Bytes the class terms store by design: each class's rows as a CSR block and a CSC copy."""
    ds = Dataset(X, y, task="multiclass", copy=False)
    total = 0
    for k in range(int(y.max()) + 1):
        term = ClassPairwiseRisk(ds, k, layout="features", intercept=True)
        total += sum(a.nbytes for a in (*term._design, *term._columns) if a is not None)
    return total


def _peak(make, X, y):
    # numba loads (or compiles) the kernels at their first call, several MB of Python objects that
    # tracemalloc would count: a fit on a slice of the same CSR first
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        make().fit(X[:2000], y[:2000])
    estimator = make()
    tracemalloc.start()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            estimator.fit(X, y)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return peak, estimator


@pytest.mark.parametrize("params, term_sets, beyond_terms", [
    ({}, 1, 0.5),
    # a bounded fit holds two sets of class terms, the unconstrained start's and the problem's, and
    # builds the second while the first is held (a term's construction passes through SciPy copies
    # of its class's rows, about 0.55 of the input here at the peak): no copy of the whole X beyond
    # the terms
    ({"bound": {1: 0.3, 2: 0.3}, "max_calibration": 1}, 2, 1.0),
], ids=["unconstrained", "bounded"])
def test_fit_holds_no_copy_of_x_beyond_its_class_terms(wide, params, term_sets, beyond_terms):
    X, y = wide
    input_bytes = X.data.nbytes + X.indices.nbytes + X.indptr.nbytes
    terms = term_sets * _term_bytes(X, y)
    peak, estimator = _peak(lambda: MultiClassNeymanPearsonClassifier(max_iter=2, **params), X, y)
    peak_without, _ = _peak(lambda: MultiClassNeymanPearsonClassifier(max_iter=2, fit_intercept=False, **params),
                            X, y)
    mb = 2.0 ** 20
    message = (f"peak {peak / mb:.1f} MB (without intercepts {peak_without / mb:.1f} MB), class terms "
               f"{terms / mb:.1f} MB, input {input_bytes / mb:.1f} MB")
    print(message)
    assert peak - terms < beyond_terms * input_bytes, message
    assert peak - peak_without < 0.05 * input_bytes, message   # the stacked column of ones cost > input_bytes
    assert estimator.coef_.shape == (3, X.shape[1]) and estimator.intercept_.shape == (3,)
