"""[LX25]'s terms: demographic-parity gap, SCAD penalty, h^nu, two-point oracles, stratified batches."""
import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings, strategies as st

from fastcon.datasets import make_fair_classification
from fastcon.problems import smoothed_demographic_parity, hinge_risk, penalized, scad_penalty
from fastcon.solvers import kkt_multiplier, smoothed_plus, smoothed_plus_derivative
from reference import spider as ref


@pytest.fixture(params=["dense", "csr"])
def groups(request):
    ds = make_fair_classification(300, 8, sparse=request.param == "csr", density=0.4, seed=3)
    return ds.subset(ds.groups == 1), ds.subset(ds.groups == 0)


def _dense(X):
    return X.toarray() if sp.issparse(X) else np.asarray(X)


# ------------------------------------------------------------------ h^nu and the multiplier
@given(st.floats(-10, 10), st.floats(1e-6, 5))
@settings(max_examples=200, deadline=None)
def test_smoothed_plus_properties(z, nu):
    h = smoothed_plus(z, nu)
    assert h == pytest.approx(float(ref.h_nu(np.array(z), nu)), rel=1e-14, abs=1e-300)
    assert -1e-15 <= max(z, 0.0) - h <= nu / 2 + 1e-12
    assert smoothed_plus_derivative(z, nu) == pytest.approx(min(1.0, max(0.0, z / nu)))


def test_smoothed_plus_continuity_and_derivative():
    nu = 0.3
    for z0 in (0.0, nu):  # the pieces meet at 0 and nu
        assert smoothed_plus(z0 - 1e-12, nu) == pytest.approx(smoothed_plus(z0 + 1e-12, nu), abs=1e-11)
    z = np.linspace(-1, 1, 41)
    z = z[(np.abs(z) > 1e-3) & (np.abs(z - nu) > 1e-3)]
    h = 1e-7
    fd = (smoothed_plus(z + h, nu) - smoothed_plus(z - h, nu)) / (2 * h)
    np.testing.assert_allclose(smoothed_plus_derivative(z, nu), fd, atol=1e-6)
    assert kkt_multiplier(0.5 * nu, 10.0, nu) == pytest.approx(5.0)
    assert kkt_multiplier(-1.0, 10.0, nu) == 0.0 and kkt_multiplier(1.0, 10.0, nu) == 10.0
    with pytest.raises(ValueError, match="nu"):
        smoothed_plus(1.0, 0.0)
    with pytest.raises(ValueError, match="beta"):
        kkt_multiplier(1.0, -1.0, 0.1)


# ------------------------------------------------------------------ SCAD
def test_scad_value_derivative_and_continuity():
    pen = scad_penalty(7, lam=0.02)
    x = np.array([-2.5, -1.5, -0.3, 0.0, 0.7, 1.2, 2.0])
    v, d = ref.scad(x)
    assert pen.value(x) == pytest.approx(0.02 * v.sum(), rel=1e-14)
    out = np.empty(7)
    assert pen.value_and_subgradient(x, out) == pytest.approx(0.02 * v.sum(), rel=1e-14)
    np.testing.assert_allclose(out, 0.02 * d, rtol=1e-14)
    one = scad_penalty(1, lam=1.0)
    for t in (1.0, 2.0, -1.0, -2.0):  # continuous (the -1 form) and C^1 at the knots
        left, right = one.value(np.array([t - 1e-9])), one.value(np.array([t + 1e-9]))
        assert left == pytest.approx(right, abs=1e-8)
    ts = np.array([-2.7, -1.6, -0.4, 0.4, 1.3, 1.9, 2.4])
    fd = [(one.value(np.array([t + 1e-7])) - one.value(np.array([t - 1e-7]))) / 2e-7 for t in ts]
    np.testing.assert_allclose(ref.scad(ts)[1], fd, atol=1e-6)
    assert pen.weak_convexity == pytest.approx(0.04) and pen.value_rows(x, [0]) == pen.value(x)
    with pytest.raises(ValueError, match="lam"):
        scad_penalty(3, lam=-1)
    with pytest.raises(ValueError, match="n_features"):
        scad_penalty(0)


def test_penalized_term(rng):
    ds = make_fair_classification(200, 5, seed=1)
    h, pen = hinge_risk(ds), scad_penalty(5, 0.1)
    t = penalized(h, pen)
    w = rng.standard_normal(5)
    out, a, b = np.empty(5), np.empty(5), np.empty(5)
    assert t.value_and_subgradient(w, out) == pytest.approx(h.value_and_subgradient(w, a) + pen.value_and_subgradient(w, b))
    np.testing.assert_allclose(out, a + b)
    rows = np.array([3, 5, 7])
    assert t.value_and_subgradient_rows(w, rows, out) == pytest.approx(h.value_rows(w, rows) + pen.value(w))
    assert t.n_samples == 200 and t.rows_read == h.rows_read
    with pytest.raises(ValueError, match="data-free"):
        penalized(h, h)
    with pytest.raises(ValueError, match="features"):
        penalized(h, scad_penalty(4))


# ------------------------------------------------------------------ demographic parity gap
def test_dp_gap_against_reference(groups, rng):
    p, u = groups
    term = smoothed_demographic_parity(p, u)
    Ap, Au = _dense(p.X), _dense(u.X)
    for _ in range(5):
        w = rng.standard_normal(8)
        v, g = ref.dp_value_grad(Ap, Au, w)
        out = np.empty(8)
        assert term.value(w) == pytest.approx(v, rel=1e-12)
        assert term.value_and_subgradient(w, out) == pytest.approx(v, rel=1e-12)
        np.testing.assert_allclose(out, g, rtol=1e-10, atol=1e-14)
        assert term.signed_gap(w) == pytest.approx(ref.dp_signed_gap(Ap, Au, w), rel=1e-12)
        # finite differences of |d| away from d = 0
        e = rng.standard_normal(8)
        fd = (term.value(w + 1e-6 * e) - term.value(w - 1e-6 * e)) / 2e-6
        assert fd == pytest.approx(out @ e, rel=1e-5, abs=1e-8)
    assert term.rows_read > 0 and term.n_samples == p.n_samples + u.n_samples


def test_dp_gap_rows_two_point_and_sampling(groups, rng):
    p, u = groups
    term = smoothed_demographic_parity(p, u)
    n_p = p.n_samples
    Ap, Au = _dense(p.X), _dense(u.X)
    rows = term.sample_rows(rng, 40)
    assert rows.size == 40 and (rows < n_p).any() and (rows >= n_p).any() and np.unique(rows).size == 40
    k_p = int((rows < n_p).sum())
    assert abs(k_p - 40 * n_p / term.n_samples) <= 1
    w, w0 = rng.standard_normal(8), rng.standard_normal(8)
    rp, ru = rows[rows < n_p], rows[rows >= n_p] - n_p
    v, g = ref.dp_value_grad(Ap[rp], Au[ru], w)
    out = np.empty(8)
    assert term.value_and_subgradient_rows(w, rows, out) == pytest.approx(v, rel=1e-12)
    np.testing.assert_allclose(out, g, rtol=1e-10, atol=1e-14)
    before = term.rows_read
    a, b = term.signed_gap_rows_two_point(w, w0, rows)
    assert term.rows_read - before == 40  # one read of each row for both points
    assert a == pytest.approx(ref.dp_signed_gap(Ap[rp], Au[ru], w), rel=1e-12)
    assert b == pytest.approx(ref.dp_signed_gap(Ap[rp], Au[ru], w0), rel=1e-12)
    with pytest.raises(ValueError, match="group u"):
        term.value_rows(w, np.arange(3))
    with pytest.raises(ValueError, match="out of range"):
        term.value_rows(w, np.array([0, 10 ** 6]))
    with pytest.raises(ValueError, match="at least 2"):
        term.sample_rows(rng, 1)


def test_margin_risk_two_point(rng):
    ds = make_fair_classification(150, 6, sparse=True, density=0.5, seed=2, )
    h = hinge_risk(ds)
    rows = rng.choice(150, 30, replace=False)
    w, w0 = rng.standard_normal(6), rng.standard_normal(6)
    before = h.rows_read
    a, b = h.value_rows_two_point(w, w0, rows)
    assert h.rows_read - before == 30
    assert a == pytest.approx(h.value_rows(w, rows), rel=1e-13)
    assert b == pytest.approx(h.value_rows(w0, rows), rel=1e-13)


def test_roc_fairness_stratified_rows(rng):
    from fastcon.problems import roc_fairness
    ds = make_fair_classification(200, 5, seed=4)
    p, u = ds.subset(ds.groups == 1), ds.subset(ds.groups == 0)
    term = roc_fairness(p, u, np.linspace(-2, 2, 11))
    rows = term.sample_rows(rng, 20)
    assert (rows < term.n_p).sum() >= 1 and (rows >= term.n_p).sum() >= 1
    term.value_rows(np.ones(5), rows)
    with pytest.raises(ValueError, match="batch"):
        term.sample_rows(rng)
