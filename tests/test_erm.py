"""Hinge ERM ([HL23] eq. 10) and the hinge-constrained problem of [HL23] §6.1."""

import numpy as np
import pytest
import scipy.sparse as sp

from fastcon.datasets import Dataset, load, make_fair_classification
from fastcon.problems import custom_term, hinge_risk, sigmoid_risk
from fastcon.problems._erm import erm_optimum, hinge_constrained_problem


def _tiny(seed=0, n=40, d=3):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    y = np.where(X @ rng.standard_normal(d) + 0.8 * rng.standard_normal(n) >= 0, 1.0, -1.0)
    return Dataset(X, y, task="binary")


def test_known_non_separable_values():
    # One point with labels +1, +1, -1: L(w) = (2(1-w)_+ + (1+w)_+)/3, minimised at w = 1, L* = 2/3.
    ds = Dataset(np.ones((3, 1)), [1.0, 1.0, -1.0])
    r = erm_optimum(ds)
    assert r.status == "optimal" and r.value == pytest.approx(2 / 3, abs=1e-12)
    assert r.w[0] == pytest.approx(1.0, abs=1e-9)
    # Opposite labels on one point: L(w) = ((1-w)_+ + (1+w)_+)/2 >= 1 with equality on [-1, 1].
    ds = Dataset(np.ones((2, 1)), [1.0, -1.0])
    assert erm_optimum(ds, formulation="primal").value == pytest.approx(1.0, abs=1e-12)


@pytest.mark.parametrize("sparse", [False, True])
def test_separable_data_gives_zero(sparse):
    rng = np.random.default_rng(1)
    X = rng.standard_normal((60, 4))
    y = np.where(X @ np.array([1.0, -2.0, 0.5, 0.0]) >= 0, 1.0, -1.0)
    ds = Dataset(sp.csr_matrix(X) if sparse else X, y)
    r = erm_optimum(ds)
    assert r.status == "optimal" and abs(r.value) <= 1e-12
    s = erm_optimum(ds, method="subgradient", max_iter=2000, step_size=10.0)
    assert s.status == "converged" and s.value == 0.0          # zero subgradient: all margins >= 1


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_lp_formulations_agree_and_are_optimal(seed):
    ds = _tiny(seed)
    dual, primal = erm_optimum(ds, formulation="dual"), erm_optimum(ds, formulation="primal")
    assert dual.status == primal.status == "optimal"
    assert dual.value == pytest.approx(primal.value, abs=1e-10)
    risk = hinge_risk(ds)
    assert dual.value == pytest.approx(risk.value(dual.w), abs=1e-15)
    # Convexity: no random perturbation, large or small, decreases the risk.
    rng = np.random.default_rng(seed)
    for scale in (1e-4, 1e-2, 1.0):
        for _ in range(50):
            assert risk.value(dual.w + scale * rng.standard_normal(ds.n_features)) >= dual.value - 1e-12
    # An independent, slow method gets close from above.
    sub = erm_optimum(ds, method="subgradient", max_iter=2000, step_size=0.5)
    assert dual.value - 1e-12 <= sub.value <= dual.value + 5e-4


def test_dense_csr_and_weights_consistent():
    ds = _tiny(3, n=30)
    csr = Dataset(sp.csr_matrix(ds.X), ds.y)
    assert erm_optimum(csr).value == pytest.approx(erm_optimum(ds).value, abs=1e-12)
    # Integer weights equal row duplication.
    wts = np.arange(30) % 3 + 1.0
    weighted = Dataset(ds.X, ds.y, sample_weight=wts)
    rows = np.repeat(np.arange(30), wts.astype(int))
    dup = ds.subset(rows)
    assert erm_optimum(weighted).value == pytest.approx(erm_optimum(dup).value, abs=1e-10)
    assert erm_optimum(weighted, formulation="primal").value == pytest.approx(erm_optimum(dup).value, abs=1e-10)


def test_radius_only_with_subgradient():
    ds = _tiny(4)
    with pytest.raises(ValueError, match="radius"):
        erm_optimum(ds, radius=1.0)
    free = erm_optimum(ds)
    r = 0.2 * free.norm_w
    ball = erm_optimum(ds, method="subgradient", radius=r, max_iter=500)
    assert ball.norm_w <= r * (1 + 1e-12) and ball.value >= free.value
    with pytest.raises(ValueError, match="method"):
        erm_optimum(ds, method="cvx")
    with pytest.raises(ValueError, match="formulation"):
        erm_optimum(ds, formulation="both")


def _report(name, ds, formulations=("dual", "primal")):
    out = {}
    for f in formulations:
        r = erm_optimum(ds, formulation=f)
        assert r.status == "optimal", r.message
        out[f] = r
        print(f"\n{name} {ds.shape} {f}: L*={r.value:.12f} ||w||={r.norm_w:.3f} time={r.time_s:.3f}s")
    return out


@pytest.mark.parametrize("name", ["german", "compas"])
def test_real_data_two_thirds_split(data_home, name):
    train, _ = load(name, data_home=data_home, download=False).split((2 / 3, 1 / 3), seed=0)
    res = _report(name, train)
    assert res["dual"].value == pytest.approx(res["primal"].value, abs=1e-9)


def test_a9a_value(data_home):
    # the solve time is printed, not asserted: speed lives in bench/
    ds = load("a9a", data_home=data_home, download=False)
    r = _report("a9a", ds, ("dual",))["dual"]
    assert r.value == pytest.approx(0.35080604312, abs=1e-9)   # primal LP, dual LP and IPM agree


def _problem_data():
    ds = make_fair_classification(n_samples=300, n_features=6, noise=1.0, seed=2)
    quad = custom_term(lambda w: 0.5 * float(w @ w),
                       lambda w, out: (out.__setitem__(slice(None), w), 0.5 * float(w @ w))[1], 6)
    return ds, quad


def test_hinge_constrained_problem_invariants():
    ds, quad = _problem_data()
    prob = hinge_constrained_problem(quad, ds)
    info = prob.info
    assert info["erm"].status == "optimal"
    assert info["bound"] == pytest.approx(1e-3 * info["L_star"], rel=1e-15)
    assert info["radius"] == pytest.approx(5.0 * np.linalg.norm(info["w_erm"]), rel=1e-15)
    assert prob.domain.radius == info["radius"]
    np.testing.assert_array_equal(prob.x0, info["w_erm"])
    g0, _ = prob.g(prob.x0)
    assert g0 == pytest.approx(-info["bound"], abs=1e-14)
    assert prob.g(np.zeros(6))[0] == pytest.approx(1.0 - info["L_star"] - info["bound"], abs=1e-14)
    # A non-convex objective term, a precomputed ERM and the overrides.
    p2 = hinge_constrained_problem(sigmoid_risk(ds), ds, relative_bound=1e-2, radius_factor=2.0, erm=info["erm"],
                                   x0=None, radius=3.0)
    assert p2.info["radius"] == 3.0 and np.all(p2.x0 == 0)
    assert p2.g(info["w_erm"])[0] == pytest.approx(-1e-2 * info["L_star"], abs=1e-14)


def test_hinge_constrained_problem_errors():
    ds, _ = _problem_data()
    bad = custom_term(lambda w: 0.0, lambda w, out: 0.0, 5)
    with pytest.raises(ValueError, match="BlockTerm"):
        hinge_constrained_problem(bad, ds)
    rng = np.random.default_rng(0)
    X = rng.standard_normal((50, 6))
    sep = Dataset(X, np.where(X[:, 0] >= 0, 1.0, -1.0))
    _, quad = _problem_data()
    with pytest.warns(RuntimeWarning, match="bound = 0"):
        hinge_constrained_problem(quad, sep)
    assert hinge_constrained_problem(quad, sep, bound=0.01).info["bound"] == 0.01
