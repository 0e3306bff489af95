"""Wasserstein-fairness term ([HL23] eqs. 13-14) against the NumPy reference."""
import numpy as np
import pytest
import scipy.sparse as sp

import fastcon.datasets as fd
from fastcon.datasets import Dataset
from fastcon.problems._transport_domain import TransportPolytope
from fastcon.problems._wasserstein import wasserstein_fairness
from reference.wasserstein import transport_cost, w1_sorted


def _group(rng, n, d, sparse=False):
    X = rng.normal(size=(n, d))
    y = np.where(rng.random(n) < 0.5, -1.0, 1.0)
    return Dataset(sp.csr_matrix(X) if sparse else X, y)


def _dense(ds):
    return ds.X.toarray() if sp.issparse(ds.X) else np.asarray(ds.X)


def _random_plan(rng, m):
    # A random point of the polytope: a convex combination of permutation matrices / m.
    lam = rng.dirichlet(np.ones(5))
    return sum(l * np.eye(m)[rng.permutation(m)] / m for l in lam)


@pytest.mark.parametrize("sparse", [False, True])
def test_value_and_subgradient_vs_reference(rng, sparse):
    gp, gu = _group(rng, 9, 4, sparse), _group(rng, 6, 4, sparse)
    term = wasserstein_fairness(gp, gu, downsample_seed=3)
    assert term.m == 6 and term.n_features == 36 + 4 and term.n_samples == 12
    assert np.array_equal(term.kept_u, np.arange(6)) and term.kept_p.size == 6
    assert np.all(np.diff(term.kept_p) > 0)
    Ap, Au = _dense(gp)[term.kept_p], _dense(gu)
    P, w = rng.random((6, 6)), rng.normal(size=4)
    x = np.concatenate([P.ravel(), w])
    out = np.empty(term.n_features)
    v, gP, gw = transport_cost(P, Ap, Au, w)
    assert np.isclose(term.value(x), v, rtol=1e-13)
    assert np.isclose(term.value_and_subgradient(x, out), v, rtol=1e-13)
    np.testing.assert_allclose(out[:36], gP.ravel(), rtol=1e-13)
    np.testing.assert_allclose(out[36:], gw, rtol=1e-12, atol=1e-13)
    assert term.rows_read == 24


def test_finite_differences_in_w(rng):
    gp, gu = _group(rng, 8, 5), _group(rng, 8, 5)
    term = wasserstein_fairness(gp, gu)
    P = _random_plan(rng, 8)
    for _ in range(5):
        w = rng.normal(size=5)
        sp_, su_ = term.scores(w)
        if np.abs(sp_[:, None] - su_[None, :]).min() < 1e-3:
            continue  # too close to a kink of |D_ij|
        x = np.concatenate([P.ravel(), w])
        out = np.empty(term.n_features)
        term.value_and_subgradient(x, out)
        h = 1e-6
        fd_grad = np.array([(term.value(x + h * e) - term.value(x - h * e)) / (2 * h)
                            for e in np.eye(term.n_features)[64:]])
        np.testing.assert_allclose(out[64:], fd_grad, rtol=1e-6, atol=1e-8)


def test_w1_lower_bound_and_sorted_plan(rng):
    gp, gu = _group(rng, 15, 3), _group(rng, 15, 3)
    term = wasserstein_fairness(gp, gu)
    w = rng.normal(size=3)
    sp_, su_ = term.scores(w)
    w1 = term.w1_lower_bound(w)
    assert np.isclose(w1, w1_sorted(sp_, su_))
    for _ in range(20):
        P = _random_plan(rng, 15)
        assert term.value(np.concatenate([P.ravel(), w])) >= w1 - 1e-12
    Ps = term.sorted_plan(w)
    assert TransportPolytope(15).contains(Ps.ravel())
    assert np.isclose(term.value(np.concatenate([Ps.ravel(), w])), w1, rtol=1e-12)


def test_minibatch_block_and_zero_outside(rng):
    gp, gu = _group(rng, 10, 3), _group(rng, 10, 3)
    term = wasserstein_fairness(gp, gu)
    P, w = rng.random((10, 10)), rng.normal(size=3)
    x = np.concatenate([P.ravel(), w])
    I, J = np.array([1, 4, 7]), np.array([0, 2])
    out = np.full(term.n_features, 7.0)
    term.reset_counters()
    val = term.value_and_subgradient_rows(x, np.concatenate([I, J + 10]), out)
    assert term.rows_read == 5
    Ap, Au = _dense(gp)[I], _dense(gu)[J]
    v, gP, gw = transport_cost(P[np.ix_(I, J)], Ap, Au, w)
    assert np.isclose(val, v)
    G = out[:100].reshape(10, 10)
    np.testing.assert_allclose(G[np.ix_(I, J)], gP)
    mask = np.ones((10, 10), bool)
    mask[np.ix_(I, J)] = False
    assert np.all(G[mask] == 0.0)
    np.testing.assert_allclose(out[100:], gw, rtol=1e-12, atol=1e-14)
    scaled = term.value_rows(x, np.concatenate([I, J + 10]), unbiased_scale=True)
    assert np.isclose(scaled, v * (10 / 3) * (10 / 2))


def test_stochastic_oracle_unbiased_with_scale(rng):
    gp, gu = _group(rng, 12, 3), _group(rng, 12, 3)
    term = wasserstein_fairness(gp, gu, unbiased_scale=True, batch_size=4)
    P, w = rng.random((12, 12)), rng.normal(size=3)
    x = np.concatenate([P.ravel(), w])
    full = np.empty(term.n_features)
    v = term.value_and_subgradient(x, full)
    acc, vals, out = np.zeros(term.n_features), [], np.empty(term.n_features)
    gen = np.random.default_rng(0)
    n_mc = 20000
    for _ in range(n_mc):
        vals.append(term.stochastic_subgradient(x, gen, out))
        acc += out
    vals = np.array(vals)
    assert abs(vals.mean() - v) < 4 * vals.std() / np.sqrt(n_mc)
    # Per-coordinate Monte-Carlo tolerance: P-entries are |D_ij| * 9 with probability 1/9.
    se = np.sqrt(8.0) * np.abs(full) / np.sqrt(n_mc)
    assert np.all(np.abs(acc[:144] / n_mc - full[:144]) <= 5 * se[:144] + 1e-12)
    np.testing.assert_allclose(acc[144:] / n_mc, full[144:], rtol=0.05, atol=0.02 * np.abs(full[144:]).max())
    # Without the scale (the default) the estimate is the plain block sum: (B/m)^2 of the mean.
    term.unbiased_scale = False
    vals = [term.stochastic_subgradient(x, gen, out) for _ in range(4000)]
    assert abs(np.mean(vals) - v * (4 / 12) ** 2) < 0.05 * v * (4 / 12) ** 2


def test_helpers(rng):
    gp, gu = _group(rng, 20, 3), _group(rng, 30, 3)
    term = wasserstein_fairness(gp, gu)
    assert term.batch_size == 2
    Ap, Au = _dense(gp), _dense(gu)[term.kept_u]
    fp, fu = np.linalg.norm(Ap), np.linalg.norm(Au)
    assert np.isclose(term.rho_ipp_heuristic(), fp + fu)
    assert np.isclose(term.rho_weak_convexity(), np.sqrt(20) * (fp + fu))
    U = term.uniform_plan()
    assert TransportPolytope(20).contains(U.ravel()) and np.isclose(U.sum(), 1.0)
    x0 = term.initial_point(np.ones(3))
    assert term.domain(5.0).contains(x0)
    other = wasserstein_fairness(gp, gu, downsample_seed=1)
    assert not np.array_equal(other.kept_u, term.kept_u)
    assert np.array_equal(wasserstein_fairness(gp, gu).kept_u, term.kept_u)


def test_validation(rng):
    gp, gu = _group(rng, 5, 3), _group(rng, 5, 3)
    term = wasserstein_fairness(gp, gu)
    x = np.zeros(term.n_features)
    out = np.empty(term.n_features)
    with pytest.raises(ValueError, match="group_u"):
        wasserstein_fairness(gp, _group(rng, 5, 4))
    with pytest.raises(ValueError, match="group_p"):
        wasserstein_fairness(np.zeros((3, 3)), gu)
    with pytest.raises(ValueError, match="batch_size"):
        wasserstein_fairness(gp, gu, batch_size=6)
    with pytest.raises(ValueError, match="x:"):
        term.value(np.zeros(3))
    bad = x.copy()
    bad[-1] = np.nan
    with pytest.raises(ValueError, match="x:"):
        term.value(bad)
    bad = x.copy()
    bad[0] = np.inf
    with pytest.raises(ValueError, match="x:"):
        term.value(bad)
    with pytest.raises(ValueError, match="out:"):
        term.value_and_subgradient(x, np.empty(3))
    with pytest.raises(ValueError, match="rows:"):
        term.value_rows(x, np.array([0, 1]))            # protected rows only
    with pytest.raises(ValueError, match="rows:"):
        term.value_rows(x, np.array([0, 10]))           # out of range
    with pytest.raises(ValueError, match="w:"):
        term.w1_lower_bound(np.zeros(2))


def test_german(data_home, rng):
    ds = fd.load("german", data_home=data_home)
    groups = ds.by_group()
    gp, gu = groups["female"], groups["male"]
    term = wasserstein_fairness(gp, gu, downsample_seed=0)
    assert term.m == min(gp.shape[0], gu.shape[0]) == 310
    Ap, Au = _dense(gp)[term.kept_p], _dense(gu)[term.kept_u]
    w = rng.normal(size=ds.shape[1]) * 0.3
    dom = term.domain(10.0)
    x = term.initial_point(w)
    x[: term.m ** 2] += 1e-4 * rng.normal(size=term.m ** 2)
    dom.project_inplace(x)
    Pm = x[: term.m ** 2].reshape(term.m, term.m)
    out = np.empty(term.n_features)
    val = term.value_and_subgradient(x, out)
    v, gP, gw = transport_cost(Pm, Ap, Au, x[term.m ** 2:])
    assert np.isclose(val, v, rtol=1e-12)
    np.testing.assert_allclose(out[: term.m ** 2], gP.ravel(), rtol=0, atol=1e-12 * gP.max())
    np.testing.assert_allclose(out[term.m ** 2:], gw, rtol=1e-10, atol=1e-12)
    assert val >= term.w1_lower_bound(x[term.m ** 2:]) - 1e-12
