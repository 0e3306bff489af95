"""Fits on a dask X (issue 35, part 3): `DaskDesign`'s products equal `DesignMatrix`'s, and `FairClassifier` /
`NeymanPearsonClassifier` fitted on a dask array on a 2-worker `LocalCluster` equal the in-memory fits, with X
never gathered to the client.

The cluster runs its workers in separate processes (``processes=True``): every task, kernel call and block
then crosses a process boundary by pickling, as on several machines, and "X stays on the workers" is a claim
about bytes that really move (threads in this process would share X's objects by reference). Starting it costs
about 2-3 s; one cluster serves the module.
"""
import numpy as np
import pytest
import scipy.sparse as sp

da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")
pytest.importorskip("sklearn")

from dask_helpers import assert_released, client, gathered, guarded  # noqa: E402,F401 (fixtures)
from fastcon.datasets import Dataset  # noqa: E402
from fastcon.estimators import FairClassifier, NeymanPearsonClassifier  # noqa: E402
from fastcon.problems._dask_design import DaskDesign  # noqa: E402
from fastcon.problems._design import DesignMatrix  # noqa: E402


def _data(n=3000, d=60, per_row=8, seed=0):
    """CSR features with a group signal and a label signal, the groups and labels (binary, unequal base rates)."""
    rng = np.random.default_rng(seed)
    g = rng.integers(0, 2, n)
    y = (rng.random(n) < np.where(g == 1, 0.65, 0.35)).astype(np.int64)
    cols = rng.integers(3, d, (n, per_row))
    vals = rng.normal(size=(n, per_row)) + 0.4 * (2 * y - 1)[:, None]
    rows = np.repeat(np.arange(n), per_row + 3)
    dense_part = np.column_stack([1.0 * (2 * y - 1) + g + rng.normal(size=n), rng.normal(size=n) + 0.5 * g,
                                  g.astype(np.float64)])
    X = sp.csr_matrix((np.column_stack([dense_part, vals]).ravel(),
                       (rows, np.column_stack([np.tile([0, 1, 2], (n, 1)), cols]).ravel())), shape=(n, d))
    X.sum_duplicates()
    return X, y, g


# ------------------------------------------------------------------------------- the products
@pytest.mark.parametrize("sparse", [True, False])
def test_dask_design_products_equal_design_matrix(client, sparse):
    X, _, _ = _data(n=1000, d=40)
    X = X if sparse else np.random.default_rng(0).normal(size=(1000, 40))   # dense blocks stay dense
    chunks = ((137, 400, 0, 263, 200), (40,))                 # uneven, one empty block
    Xd = da.from_array(X, chunks=chunks, asarray=False)
    design = DaskDesign(Xd, client)
    memory = DesignMatrix(Dataset(X, np.ones(1000)))
    assert (design.n_rows, design.n_features, design.is_sparse) == (1000, 40, sparse)
    assert design.nnz == (X.nnz if sparse else X.size) and len(design.addresses) == 2
    rng = np.random.default_rng(1)
    w, c = rng.normal(size=40), rng.normal(size=1000)
    rows = rng.permutation(1000)[:333]                          # a subset across blocks, out of order
    for r, m in ((None, 1000), (rows, 333)):
        a, b = np.empty(m), np.empty(m)
        design.matvec(w, a, r)
        memory.matvec(w, b, r)
        assert np.array_equal(a, b)                             # each row read as in memory: exact
        ga, gb = np.full(40, 0.5), np.full(40, 0.5)             # rmatvec accumulates into out
        design.rmatvec(c[:m], ga, r)
        memory.rmatvec(c[:m], gb, r)
        np.testing.assert_allclose(ga, gb, rtol=1e-13, atol=1e-13)
        ga, gb = np.full(40, 0.5), np.full(40, 0.5)             # so do the column sums of squares
        design.weighted_column_squares(c[:m], ga, r)
        memory.weighted_column_squares(c[:m], gb, r)
        np.testing.assert_allclose(ga, gb, rtol=1e-13, atol=1e-13)
        a2, ap, b2, bp = np.empty(m), np.empty(m), np.empty(m), np.empty(m)
        design.matvec2(w, 2 * w, a2, ap, r)
        memory.matvec2(w, 2 * w, b2, bp, r)
        assert np.array_equal(a2, b2) and np.array_equal(ap, bp)
    np.testing.assert_allclose(design.row_norms(), memory.row_norms(), rtol=1e-15)
    assert design.largest_abs_entry == np.abs(X.data if sparse else X).max()


# ------------------------------------------------------------------------------- the estimators
def _close(a, b, rtol=1e-8):
    scale = max(np.abs(b).max(), 1e-300)
    assert np.abs(a - b).max() <= rtol * scale, (np.abs(a - b).max(), scale)


def test_fair_dp_fit_on_dask_equals_in_memory_fit(client, gathered):
    X, y, g = _data()
    n, d = X.shape
    Xd = guarded(da.from_array(X, chunks=(700, d), asarray=False))
    ref = FairClassifier("demographic_parity", bound=0.05).fit(X, y, sensitive_features=g)
    model = FairClassifier("demographic_parity", bound=0.05).fit(Xd, y, sensitive_features=g)
    assert ref.calibration_["bounds"] == pytest.approx(model.calibration_["bounds"], rel=1e-8)
    _close(model.coef_, ref.coef_)
    _close(model.intercept_, ref.intercept_)
    assert model.n_features_in_ == d and model.n_iter_ == ref.n_iter_
    # nothing the size of X reached the client: the largest result is a score vector (8n) or a gradient (8d)
    assert gathered and max(gathered) <= 8 * max(n, d)
    assert X.data.nbytes + X.indices.nbytes > 4 * 8 * n
    assert_released(client)                                   # the fitted model holds no block on the workers
    gathered.clear()
    s = model.decision_function(Xd)
    assert isinstance(s, np.ndarray) and s.shape == (n,)
    np.testing.assert_allclose(s, model.decision_function(X), rtol=1e-13, atol=1e-13)
    assert np.array_equal(model.predict(Xd), ref.predict(X))
    assert max(gathered) <= 8 * n


def test_neyman_pearson_fit_on_dask_equals_in_memory_fit(client, gathered):
    # the default umbrella fit: a ridge path on one row subset, a refit on another, scores of held-out rows
    X, y, _ = _data(n=2500, seed=3)
    Xd = guarded(da.from_array(X.toarray(), chunks=((900, 800, 800), (X.shape[1],))))
    ref = NeymanPearsonClassifier(bound=0.1, random_state=0).fit(X, y)
    model = NeymanPearsonClassifier(bound=0.1, random_state=0).fit(Xd, y)
    assert model.selection_["chosen_ridge"] == ref.selection_["chosen_ridge"]
    _close(model.coef_, ref.coef_)
    _close(model.intercept_, ref.intercept_)
    assert model.threshold_ == pytest.approx(ref.threshold_, rel=1e-8, abs=1e-10)
    assert max(gathered) <= 8 * max(X.shape)
    assert np.array_equal(model.predict(Xd), ref.predict(X))


# ------------------------------------------------------------------------------- refused inputs
def test_clear_errors_for_unsupported_dask_inputs(client):
    X, y, g = _data(n=400)
    Xd = da.from_array(X, chunks=(100, X.shape[1]), asarray=False)
    with pytest.raises(ValueError, match="column chunks.*rechunk"):
        FairClassifier().fit(da.from_array(X.toarray(), chunks=(100, 20)), y, sensitive_features=g)
    with pytest.raises(ValueError, match="y: a dask collection"):
        NeymanPearsonClassifier().fit(Xd, da.from_array(y, chunks=100))
    with pytest.raises(ValueError, match="sensitive_features: a dask collection"):
        FairClassifier().fit(Xd, y, sensitive_features=da.from_array(g, chunks=100))
    with pytest.raises(ValueError, match="sensitive_features: with a dask X"):
        FairClassifier().fit(Xd, y, sensitive_features=2)
    with pytest.raises(ValueError, match="not supported with constraint='partial_dp'"):
        FairClassifier("partial_dp", bound=0.1).fit(Xd, y, sensitive_features=g)
    with pytest.raises(ValueError, match="row chunk sizes are unknown"):
        NeymanPearsonClassifier().fit(Xd[Xd[:, 2] >= 0], y)
    bad = X.toarray()
    bad[250, 4] = np.nan
    with pytest.raises(ValueError, match=r"block 2 \(rows 200..299\).*non-finite"):
        NeymanPearsonClassifier().fit(da.from_array(bad, chunks=(100, X.shape[1])), y)
    assert_released(client)       # the blocks prepared before the bad one are not pinned by the error
