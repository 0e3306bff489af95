"""Projected gradient with exact QCQP projections (the pairwise baselines of [HHYL25] eqs. 72-74)."""
import importlib

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.optimize import minimize

from fastcon.datasets import Dataset
from fastcon.problems import LinearLoss, LinearScores, QuadraticConstraints, pairwise_fairness_constraints
from fastcon.solvers import gradient_lipschitz_constant, projected_gradient

# the package exports the function under the module's name: reach the module itself
pg_module = importlib.import_module("fastcon.solvers.projected_gradient")


def logistic_problem(seed=0, n=300, p=3, sparse=False, ridge=1e-2, kind="group_auc", kappa=0.5):
    rng = np.random.default_rng(seed)
    xi = rng.normal(size=(n, p))
    g = (rng.random(n) < 0.4).astype(int)
    y = np.where(xi[:, 0] + 1.5 * g + 0.3 * rng.normal(size=n) > 0.5, 1.0, -1.0)
    X = np.hstack([np.ones((n, 1)), xi, g[:, None], g[:, None] * xi])   # cross terms (1, xi, g, g xi)
    Xin = sp.csr_matrix(X) if sparse else X
    ds = Dataset(Xin, y, groups=g)
    loss = LinearLoss(LinearScores(ds, fit_intercept=False), ds.y, np.ones(n), "logistic", ridge=ridge)
    return loss, pairwise_fairness_constraints(Xin, y, g, kind, kappa), X


def value_and_grad(loss):
    def fg(w):
        out = np.empty(w.size)
        return loss.value_and_subgradient(np.ascontiguousarray(w), out), out
    return fg


def slsqp(loss, cons):
    con = [{"type": "ineq", "fun": lambda w, j=j: -cons.values(w)[j], "jac": lambda w, j=j: -cons.gradients(w)[j]}
           for j in range(cons.n_constraints)]
    res = minimize(value_and_grad(loss), np.zeros(cons.n_features), jac=True, method="SLSQP", constraints=con,
                   options=dict(ftol=1e-14, maxiter=2000))
    assert res.status in (0, 8), res.message
    return res


@pytest.mark.parametrize("kind, kappa", [("group_auc", 0.5), ("group_auc", 2.0), ("inter_group", 0.5),
                                         ("intra_group", 2.0)])
def test_limit_matches_slsqp_and_iterates_are_feasible_and_monotone(kind, kappa):
    loss, cons, _ = logistic_problem(kind=kind, kappa=kappa)
    L = gradient_lipschitz_constant(loss)
    res = projected_gradient(loss, cons, step_size=1.0 / L, max_iter=5000, tol=1e-14,
                             record_every=1)
    assert res.status == "converged", res.message
    h = res.history
    assert np.all(h["max_violation"] <= 1e-9)
    assert np.all(np.diff(h["objective"]) <= 1e-13)           # eta = 1/L: f does not increase
    ref = slsqp(loss, cons)
    assert res.objective == pytest.approx(ref.fun, abs=1e-8)
    np.testing.assert_allclose(res.x, ref.x, atol=1e-4)
    assert res.max_violation <= 1e-9
    # the unconstrained optimum is better: the constraint binds
    free = minimize(value_and_grad(loss), np.zeros(cons.n_features), jac=True, method="L-BFGS-B")
    assert free.fun < res.objective - 1e-3
    # multipliers = lambda / eta: KKT of the constrained problem at the limit
    _, grad = value_and_grad(loss)(res.x)
    assert np.all(res.multipliers >= 0) and res.multipliers.max() > 0
    np.testing.assert_allclose(grad + res.multipliers @ cons.gradients(res.x), 0.0, atol=1e-6)
    # row k holds w_k; the returned iterate is recorded last
    assert h["iteration"][-1] == res.n_iter and h["objective"][-1] == pytest.approx(res.objective, abs=1e-15)


def test_auto_step_is_one_over_L_and_csr_gives_the_same_run():
    loss, cons, X = logistic_problem()
    L = gradient_lipschitz_constant(loss)
    n = X.shape[0]
    assert L == pytest.approx(0.25 * np.linalg.eigvalsh(X.T @ X / n)[-1] + 1e-2, rel=1e-12)
    auto = projected_gradient(loss, cons, max_iter=50, record_every=10)
    assert auto.info["lipschitz"] == L and auto.info["step_size"] == "auto"
    np.testing.assert_array_equal(auto.history["step_size"][:-1], 1.0 / L)
    fixed = projected_gradient(loss, cons, step_size=1.0 / L, max_iter=50, record_every=10)
    np.testing.assert_array_equal(auto.x, fixed.x)
    loss_s, cons_s, _ = logistic_problem(sparse=True)
    csr = projected_gradient(loss_s, cons_s, max_iter=50, record_every=10)
    np.testing.assert_allclose(csr.x, auto.x, atol=1e-10)


def test_lipschitz_constant_with_intercept_weights_and_lanczos(monkeypatch):
    rng = np.random.default_rng(3)
    n, d = 120, 6
    X = rng.normal(size=(n, d))
    y = np.where(rng.random(n) < 0.5, 1.0, -1.0)
    c = rng.uniform(0.1, 2.0, n)
    for loss_name, curv in (("logistic", 0.25), ("squared_hinge", 2.0)):
        loss = LinearLoss(LinearScores(Dataset(X, y), fit_intercept=True), y, c, loss_name, ridge=0.3)
        Xb = np.hstack([X, np.ones((n, 1))])
        expected = curv * np.linalg.eigvalsh(Xb.T @ (Xb * (c / c.sum())[:, None]))[-1] + 0.3
        assert gradient_lipschitz_constant(loss) == pytest.approx(expected, rel=1e-12)
        monkeypatch.setattr(pg_module, "_GRAM_MAX_FEATURES", 2)    # the Lanczos path
        lanczos = gradient_lipschitz_constant(loss)
        assert expected <= lanczos <= expected * (1 + 1e-7)
        monkeypatch.undo()
    hinge = LinearLoss(LinearScores(Dataset(X, y)), y, c, "hinge")
    with pytest.raises(ValueError, match="^objective: step_size='auto' needs a loss with a Lipschitz gradient"):
        gradient_lipschitz_constant(hinge)


def test_stopping_rules_and_callback():
    loss, cons, _ = logistic_problem()
    res = projected_gradient(loss, cons, step_size=1e-3, max_iter=7, tol=0.0)
    assert res.status == "max_iter" and res.n_iter == 7
    assert list(res.history["iteration"]) == list(range(8))           # default: every row when K < 100
    loose = projected_gradient(loss, cons, max_iter=1000, tol=1e-3)
    assert loose.status == "converged" and loose.n_iter < 1000
    assert loose.history["relative_change"][-1] <= 1e-3
    seen = []

    def stop_at_3(t, w, info):
        seen.append((t, info["objective"], info["projection"].converged))
        return t == 3
    res = projected_gradient(loss, cons, max_iter=100, callback=stop_at_3)
    assert res.status == "callback_stop" and res.n_iter == 4 and [s[0] for s in seen] == [0, 1, 2, 3]
    assert all(s[2] for s in seen)
    assert res.objective == pytest.approx(seen[-1][1], rel=1e-14)


def test_start_is_projected_and_infeasible_sets_are_a_status():
    loss, cons, X = logistic_problem(kappa=0.2)
    far = np.full(X.shape[1], 5.0)
    res = projected_gradient(loss, cons, far, max_iter=3, tol=0.0, record_every=1)
    assert res.history["max_violation"][0] <= 1e-9
    assert cons.max_violation(far) > 1.0
    _, empty, _ = logistic_problem(kappa=-0.1)                   # kappa < 0: no w qualifies
    res = projected_gradient(loss, empty, max_iter=10)
    assert res.status == "no_feasible_iterate" and res.n_iter == 0 and "infeasible" in res.message
    assert not res.success


def test_bad_arguments_name_the_field():
    loss, cons, X = logistic_problem()
    d = X.shape[1]
    with pytest.raises(TypeError, match="^objective: projected_gradient needs value_and_subgradient, n_features; "
                                         "object lacks value_and_subgradient, n_features"):
        projected_gradient(object(), cons)
    with pytest.raises(TypeError, match="^constraints: expected a fastcon.problems.QuadraticConstraints"):
        projected_gradient(loss, [cons])
    small = QuadraticConstraints(np.eye(3)[None], np.zeros((1, 3)), [-1.0])
    with pytest.raises(ValueError, match="^constraints: act on 3 weights"):
        projected_gradient(loss, small)
    with pytest.raises(ValueError, match=r"^x0: expected shape"):
        projected_gradient(loss, cons, np.zeros(d + 1))
    with pytest.raises(ValueError, match="^max_iter: must be an integer"):
        projected_gradient(loss, cons, max_iter=2.5)
    with pytest.raises(ValueError, match="^step_size: expected 'auto'"):
        projected_gradient(loss, cons, step_size="fast")
    with pytest.raises(ValueError, match="^step_size: .*positive"):
        projected_gradient(loss, cons, step_size=-1.0)
    with pytest.raises(ValueError, match="^tol: must be non-negative"):
        projected_gradient(loss, cons, tol=-1e-5)
    with pytest.raises(ValueError, match="^projection_tolerance: must be positive"):
        projected_gradient(loss, cons, projection_tolerance=0.0)
    with pytest.raises(ValueError, match="^record_every: must be an integer"):
        projected_gradient(loss, cons, record_every=0)
    with pytest.raises(TypeError, match="^callback: must be callable"):
        projected_gradient(loss, cons, callback=3)
