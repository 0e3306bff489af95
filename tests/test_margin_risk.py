"""The MarginRisk term: oracle protocol, counters, validation, subgradients (finite differences and
the subgradient inequality), CSR/dense/binary agreement, and a9a against the SciPy reference."""

import numpy as np
import pytest
import scipy.sparse as sp

from fastcon import Dataset
from fastcon.problems import (
    MarginRisk, hinge_risk, logistic_risk, margin_risk, sigmoid_risk, squared_hinge_risk,
)
from conftest import dataset_file
from reference import kernels as ref

LOSSES = ["hinge", "logistic", "sigmoid", "squared_hinge"]
CONVEX = ["hinge", "logistic", "squared_hinge"]


def make_data(rng, n=60, d=7, sparse=False, binary=False, weights=False):
    X = (rng.random((n, d)) < 0.4) * (1.0 if binary else rng.standard_normal((n, d)))
    X[0] = 0.0  # an empty row
    y = rng.choice([-1.0, 1.0], size=n)
    sw = rng.random(n) + 0.1 if weights else None
    return Dataset(sp.csr_matrix(X) if sparse else X, y, sample_weight=sw)


def term_value_grad(term, x, rows=None):
    out = np.empty(term.n_features)
    if rows is None:
        return term.value_and_subgradient(x, out), out
    return term.value_and_subgradient_rows(x, rows, out), out


def test_constructors_and_protocol(rng):
    ds = make_data(rng)
    for ctor, loss in [(hinge_risk, "hinge"), (logistic_risk, "logistic"), (sigmoid_risk, "sigmoid"),
                       (squared_hinge_risk, "squared_hinge")]:
        term = ctor(ds)
        assert isinstance(term, MarginRisk) and term.loss == loss
        assert (term.n_samples, term.n_features) == (60, 7)
        assert "b_i a_i^T w" in term.formula
    with pytest.raises(ValueError, match="loss"):
        margin_risk(ds, loss="zero_one")


@pytest.mark.parametrize("loss", LOSSES)
@pytest.mark.parametrize("weights", [False, True])
def test_matches_reference_all_layouts(rng, loss, weights):
    dense = make_data(rng, binary=True, weights=weights)
    csr = Dataset(sp.csr_matrix(dense.X), dense.y, sample_weight=dense.sample_weight)
    csr_data = Dataset(sp.csr_matrix(dense.X * 1.0), dense.y, sample_weight=dense.sample_weight)
    csr_data.__dict__["is_binary_features"] = False  # force the data-array path
    assert csr.is_binary_features
    x = rng.standard_normal(7)
    rows = rng.integers(0, 60, size=25)
    sw = dense.sample_weight
    scale = 1.0 / (60 if sw is None else sw.sum())
    v_ref, g_ref = ref.loss_value_grad(loss, dense.X, dense.y, x, sw, scale)
    vb_ref, gb_ref = ref.loss_value_grad(loss, dense.X, dense.y, x, sw, scale * 60 / 25, rows)
    for ds in (dense, csr, csr_data):
        term = margin_risk(ds, loss)
        v, g = term_value_grad(term, x)
        assert v == pytest.approx(v_ref, rel=1e-12)
        np.testing.assert_allclose(g, g_ref, rtol=1e-12, atol=1e-14)
        assert term.value(x) == pytest.approx(v, rel=1e-14)
        vb, gb = term_value_grad(term, x, rows)
        assert vb == pytest.approx(vb_ref, rel=1e-12)
        np.testing.assert_allclose(gb, gb_ref, rtol=1e-12, atol=1e-14)
        assert term.value_rows(x, rows) == pytest.approx(vb, rel=1e-14)


def test_subset_estimate_is_unbiased_over_all_rows(rng):
    ds = make_data(rng, weights=True)
    term = logistic_risk(ds)
    x = rng.standard_normal(7)
    singles = [term.value_rows(x, np.array([i])) for i in range(60)]
    assert np.mean(singles) == pytest.approx(term.value(x), rel=1e-12)
    full = term.value_rows(x, np.arange(60))
    assert full == pytest.approx(term.value(x), rel=1e-12)


@pytest.mark.parametrize("loss", LOSSES)
@pytest.mark.parametrize("sparse", [False, True])
def test_subgradient_matches_finite_differences(rng, loss, sparse):
    ds = make_data(rng, sparse=sparse)
    term = margin_risk(ds, loss)
    A = ds.X.toarray() if sparse else ds.X
    h = 1e-6
    for _ in range(5):
        x = rng.standard_normal(7)
        v = rng.standard_normal(7)
        z = ds.y * (A @ x)
        if loss in ("hinge", "squared_hinge"):
            # stay away from the kink z = 1 by more than the step moves any margin
            assume_far = np.all(np.abs(z - 1) > 10 * h * (np.abs(A) @ np.abs(v)) + 1e-9)
            if not assume_far:
                continue
        _, g = term_value_grad(term, x)
        fd = (term.value(x + h * v) - term.value(x - h * v)) / (2 * h)
        assert fd == pytest.approx(g @ v, rel=1e-6, abs=1e-8)
        rows = rng.integers(0, 60, size=9)
        _, gb = term_value_grad(term, x, rows)
        fdb = (term.value_rows(x + h * v, rows) - term.value_rows(x - h * v, rows)) / (2 * h)
        assert fdb == pytest.approx(gb @ v, rel=1e-6, abs=1e-8)


@pytest.mark.parametrize("loss", CONVEX)
def test_subgradient_inequality_including_kinks(rng, loss):
    """L(v) >= L(x) + <s, v - x> for convex losses; x puts many margins exactly at z = 1."""
    X = rng.integers(-2, 3, size=(40, 5)).astype(float)
    y = np.where(X[:, 0] >= 0, 1.0, -1.0)
    X[:20, 0] = y[:20]          # with x = e_0 these rows have margin exactly 1
    ds = Dataset(X, y)
    term = margin_risk(ds, loss)
    x = np.zeros(5)
    x[0] = 1.0
    assert np.sum(ds.y * (X @ x) == 1.0) >= 20
    val, s = term_value_grad(term, x)
    for _ in range(200):
        v = x + rng.standard_normal(5) * rng.choice([1e-3, 0.1, 3.0])
        assert term.value(v) >= val + s @ (v - x) - 1e-12


def test_counters(rng):
    ds = make_data(rng)
    term = hinge_risk(ds)
    x, out = rng.standard_normal(7), np.empty(7)
    term.value(x)
    term.value_and_subgradient(x, out)
    assert term.rows_read == 120
    term.value_rows(x, np.array([1, 1, 5]))
    term.value_and_subgradient_rows(x, np.arange(10, dtype=np.uint64), out)
    assert term.rows_read == 133
    term.reset_counters()
    assert term.rows_read == 0
    with pytest.raises(ValueError):
        term.value(np.full(7, np.nan))
    assert term.rows_read == 0  # rejected calls read nothing


def test_validation_errors(rng):
    term = hinge_risk(make_data(rng))
    x, out = rng.standard_normal(7), np.empty(7)
    with pytest.raises(ValueError, match=r"^x: expected shape \(7,\)"):
        term.value(np.zeros(6))
    with pytest.raises(ValueError, match="^x: contains NaN"):
        term.value_and_subgradient(np.where(np.arange(7) == 3, np.nan, x), out)
    with pytest.raises(ValueError, match="^x: contains NaN"):
        term.value(np.full(7, np.inf))
    with pytest.raises(ValueError, match="^out:"):
        term.value_and_subgradient(x, np.empty(6))
    with pytest.raises(ValueError, match="^out: expected dtype float64"):
        term.value_and_subgradient(x, np.empty(7, dtype=np.float32))
    with pytest.raises(ValueError, match="^out: must be a writeable C-contiguous"):
        term.value_and_subgradient(x, np.empty(14)[::2])
    with pytest.raises(ValueError, match="^rows: index 60 out of range"):
        term.value_rows(x, np.array([0, 60]))
    with pytest.raises(ValueError, match="^rows: negative"):
        term.value_rows(x, np.array([-1]))
    with pytest.raises(ValueError, match="^rows: empty"):
        term.value_rows(x, np.array([], dtype=np.int64))
    with pytest.raises(ValueError, match="^rows: expected a 1-D"):
        term.value_rows(x, np.array([0.5]))
    with pytest.raises(ValueError, match="^rows: expected a 1-D"):
        term.value_rows(x, np.zeros((2, 2), dtype=np.int64))
    with pytest.raises(ValueError, match="^sample_weight"):
        hinge_risk(make_data(rng), sample_weight=np.zeros(60))
    # int32 rows and non-contiguous x are accepted (converted)
    assert term.value_rows(x, np.array([3, 4], dtype=np.int32)) == term.value_rows(x, np.array([3, 4]))
    assert term.value(np.repeat(x, 2)[::2]) == term.value(x)


def test_a9a_hinge_against_scipy(data_home):
    from sklearn.datasets import load_svmlight_file

    X, y = load_svmlight_file(str(dataset_file(data_home, "a9a", "a9a.gz")), n_features=123)
    ds = Dataset(X, y, name="a9a")
    assert ds.is_binary_features
    w = np.random.default_rng(7).standard_normal(123) * 0.3
    for loss in LOSSES:
        term = margin_risk(ds, loss)
        v, g = term_value_grad(term, w)
        v_ref, g_ref = ref.loss_value_grad(loss, ds.X, ds.y, w)
        assert v == pytest.approx(v_ref, rel=1e-12)
        np.testing.assert_allclose(g, g_ref, rtol=1e-10, atol=1e-13)
        rows = np.random.default_rng(1).integers(0, ds.n_samples, 181)
        vb, gb = term_value_grad(term, w, rows)
        vb_ref, gb_ref = ref.loss_value_grad(loss, ds.X, ds.y, w, rows=rows)
        assert vb == pytest.approx(vb_ref, rel=1e-12)
        np.testing.assert_allclose(gb, gb_ref, rtol=1e-10, atol=1e-13)
    assert term.rows_read == ds.n_samples + 181
