"""CBPR (Lin & Deng [LD23] Algorithm 2) with ABPP inside, on the group-loss-gap problem and a linear model."""
import math

import numpy as np
import pytest
import scipy.optimize
import scipy.special

from fastcon.problems import GroupLossGap, LinearScoreModel
from fastcon.problems._score_problems import ProxSubproblem
from fastcon.solvers import abpp_lipschitz_constant, cbpr
from fastcon.solvers.cbpr import cbpr_prox_weight


def fair_data(n=200, G=2, seed=0, n_classes=2):
    """Labels shifted by group, the group id also a feature: the unconstrained model has a loss gap."""
    rng = np.random.default_rng(seed)
    g = rng.integers(0, G, n)
    X = rng.normal(size=(n, 4))
    X[:, 3] = g - (G - 1) / 2
    shift = 1.0 * g
    if n_classes == 2:
        y = (X[:, 0] + shift - 0.5 + 0.7 * rng.normal(size=n) > 0).astype(int)
    else:
        y = np.argmax(X[:, :3] + np.outer(shift, [1, 0, -1]) + 0.7 * rng.normal(size=(n, 3)), axis=1)
    return X, y, g


def setup(G, J, bound=0.02, n=200):
    X, y, g = fair_data(n=n, G=G, n_classes=J)
    model = LinearScoreModel(X, y, J)
    problem = GroupLossGap(y, J, g, bound)
    return X, y, g, model, problem


# ---------------------------------------------------------------------------- §6.5 item 6
@pytest.mark.parametrize("G, J", [(2, 2), (3, 2), (3, 3)])
def test_cbpr_iterates_feasible_descending_with_vanishing_steps(G, J):
    _, y, g, model, problem = setup(G, J)
    Lg = abpp_lipschitz_constant(problem, model)
    res = cbpr(problem, model, outer_iter=25, inner_iter=40, primal_step=1 / Lg, dual_step=10 / Lg)
    assert res.status == "max_iter" and res.n_iter == 25
    violations = res.info["violations"]
    assert violations.shape == (26,) and violations[0] == 0.0
    # Lemma 6: feasible iterates, up to the inner solver's accuracy (gap excess below 5% of the bound)
    assert violations.max() <= 1e-3 * problem.scale
    f = res.history["objective"]
    assert f.shape == (26,)
    assert np.all(np.diff(f) <= 1e-6 * abs(f[0]))          # (F.10)-(F.11): non-increasing objective
    steps = res.info["steps"]
    assert steps[-1] < steps[0] / 4                        # L sqrt(2 D(x^{t+1}, x^t)) -> 0
    np.testing.assert_allclose(res.history["step"][1:], steps)
    # the constraint binds: the unconstrained solution has a larger gap than the bound allows
    free = cbpr(GroupLossGap(y, J, g, 100.0), model, outer_iter=25, inner_iter=5, primal_step=1 / Lg,
                dual_step=10 / Lg)
    assert free.objective < f[-1]
    assert np.max(free.info["constraint_values"] / problem.scale + 100.0) > 0.02


def test_converged_by_the_step_tolerance():
    _, _, _, model, problem = setup(2, 2)
    Lg = abpp_lipschitz_constant(problem, model)
    res = cbpr(problem, model, outer_iter=40, inner_iter=20, primal_step=1 / Lg, dual_step=10 / Lg, tol=5.0)
    assert res.status == "converged"
    assert res.info["steps"][-1] <= 5.0 and np.all(res.info["steps"][:-1] > 5.0)


# ---------------------------------------------------------------------------- §6.5 item 7
@pytest.mark.parametrize("G, J", [(2, 2), (4, 3)])
def test_zero_scores_are_feasible(G, J):
    *_, model, problem = setup(G, J, bound=0.01)
    values = problem.constraint_values(model, model.initial_state())
    np.testing.assert_allclose(values, -problem.scale * 0.01, rtol=1e-12)  # xi_a = log J for every group
    assert problem.n_constraints == G * (G - 1)
    # every group's mean loss is log J (binary: log 2), up to the rounding of the sums
    np.testing.assert_allclose(problem.group_means(model, model.initial_state()), math.log(J), rtol=1e-13)


# ---------------------------------------------------------------------------- prox L and the subproblem
def test_curvature_bound_and_convex_subproblem_constraints():
    X, y, g, model, problem = setup(3, 2)
    At = np.hstack([X, np.ones((len(y), 1))])
    rho = max(problem.scale * 0.25 * np.linalg.eigvalsh(At[g == b].T @ At[g == b])[-1] / np.sum(g == b)
              for b in range(3))
    assert model.curvature_bound(problem) == pytest.approx(rho, rel=1e-12)
    assert cbpr_prox_weight(problem, model) == pytest.approx(max(rho, 1.0), rel=1e-12)   # two eigensolves: round-off apart
    # with L = rho every constraint of (4.2) is convex: second differences along random lines are >= 0
    anchor = model.as_state(np.zeros(5))
    sub = ProxSubproblem(problem, model, anchor, rho)
    rng = np.random.default_rng(0)
    for _ in range(50):
        x, v = rng.normal(size=5), rng.normal(size=5)
        h = 0.3
        vals = [sub.constraint_values(model, model.as_state(x + s * h * v)) for s in (-1, 0, 1)]
        second = vals[0] - 2 * vals[1] + vals[2]
        assert np.all(second >= -1e-9 * np.abs(vals[1]).max())


@pytest.mark.parametrize("J", [2, 3])
def test_subproblem_lagrangian_as_weights(J):
    """§6.5 item 8 for (4.2): one prox step with (W, c, x^t) of ProxSubproblem.lagrangian equals the
    minimiser of f + L D + sum Lambda (g + L D) + (1/2tau)‖x - x_k‖² written out."""
    _, y, g, model, problem = setup(3, J, n=120)
    n = len(y)
    rng = np.random.default_rng(1)
    p = model.parameters(model.initial_state()).size
    anchor_t = model.as_state(rng.normal(scale=0.3, size=p))
    anchor_k = model.as_state(rng.normal(scale=0.3, size=p))
    L, inv_tau = 40.0, 3.0
    lam = rng.uniform(0, 0.5, problem.n_constraints)
    lam[[i for i, (a, b) in enumerate(problem.pairs) if b == 1]] += 3.0  # group 1's weight goes negative
    sub = ProxSubproblem(problem, model, anchor_t, prox_weight=L)
    assert sub.prox_weight == L
    W, c, anchor = sub.lagrangian(lam)
    assert anchor is anchor_t and c == pytest.approx(L * (1 + lam.sum()))
    assert W.min() < 0  # a group weight went negative: the prox must dominate
    got = model.prox_step(anchor_k, inv_tau, W, anchor_t=anchor, c=c, accuracy=1e-16)

    def direct(x):
        state = model.as_state(x)
        return (sub.objective_value(model, state) + lam @ sub.constraint_values(model, state)
                + 0.5 * inv_tau * np.sum((x - model.parameters(anchor_k)) ** 2))

    ref = scipy.optimize.minimize(direct, model.parameters(anchor_k), method="BFGS", options={"gtol": 1e-9})
    np.testing.assert_allclose(model.parameters(got), ref.x, atol=1e-5)
    # and the weights are the documented omega_a = 1 + beta (row sum - column sum)/n_a
    Lam = problem.multiplier_matrix(lam)
    omega = 1 + problem.scale * (Lam.sum(1) - Lam.sum(0)) / np.bincount(g)
    np.testing.assert_allclose(W, omega[g], rtol=1e-14)
    assert n == 120


# ---------------------------------------------------------------------------- heuristics (off by default)
def test_bound_schedule():
    _, _, _, model, problem = setup(2, 2, bound=1e-5)
    Lg = abpp_lipschitz_constant(problem, model)
    res = cbpr(problem, model, outer_iter=5, inner_iter=5, primal_step=1 / Lg, dual_step=10 / Lg,
               bound_schedule=0.01)
    alpha = 1e-5
    for t in range(5):
        alpha += (0.01 - alpha) / ((t + 1) * (t + 2))
    np.testing.assert_allclose(res.problem.bound, alpha, rtol=1e-12)
    assert 0.6 < alpha / 0.01 < 0.7  # tends to about 0.70 alpha_max, not alpha_max
    plain = cbpr(problem, model, outer_iter=5, inner_iter=5, primal_step=1 / Lg, dual_step=10 / Lg)
    assert "problem" not in plain.info


def test_cbpr_early_stop_and_outliers():
    _, _, _, model, problem = setup(2, 2)
    Lg = abpp_lipschitz_constant(problem, model)
    kw = {"inner_iter": 5, "primal_step": 1 / Lg, "dual_step": 10 / Lg}
    res = cbpr(problem, model, outer_iter=10, early_stop=1.0, **kw)  # every error rate is < 1
    assert res.status == "converged" and res.n_iter == 6              # first test after ceil(10/2) steps
    res = cbpr(problem, model, outer_iter=10, early_stop=1e-6, **kw)
    assert res.status == "max_iter"
    res = cbpr(problem, model, outer_iter=4, outlier_threshold=2.0, **kw)
    kept = res.problem.keep
    assert 0 < np.sum(kept == 0) <= math.ceil(len(kept) / 10)
    # the group sizes follow the kept rows
    np.testing.assert_allclose(res.problem.group_sizes,
                               np.bincount(problem.groups, weights=kept))


def test_dual_step_auto_follows_the_kept_rows():
    """sigma_0 = 1/(tau_0 L_g^2) on the rows kept at each outer step; a number passes through unchanged."""
    _, _, _, model, problem = setup(2, 2)
    res = cbpr(problem, model, outer_iter=4, inner_iter=3, primal_step=0.5, dual_step="auto", outlier_threshold=2.0)
    sigmas = res.info["dual_steps"]
    assert sigmas.shape == (4,)
    before = 1 / (0.5 * abpp_lipschitz_constant(problem, model) ** 2)
    after = 1 / (0.5 * abpp_lipschitz_constant(res.problem, model) ** 2)
    np.testing.assert_allclose(sigmas, [before, before, after, after], rtol=1e-12)   # rows dropped at ceil(4/2)
    assert after != before
    fixed = cbpr(problem, model, outer_iter=2, inner_iter=3, dual_step=0.3)
    np.testing.assert_array_equal(fixed.info["dual_steps"], [0.3, 0.3])
    with pytest.raises(ValueError, match="^dual_step"):
        cbpr(problem, model, dual_step="fast")


def test_infeasible_start_is_reported_not_raised():
    *_, model, problem = setup(2, 2)
    x0 = np.array([0.0, 0.0, 0.0, 5.0, 0.0])  # the group feature alone: a large loss gap
    assert np.max(problem.constraint_values(model, model.as_state(x0))) > 0
    res = cbpr(problem, model, x0, outer_iter=2, inner_iter=3)
    assert res.info["start_violation"] > 0 and "infeasible" in res.message


def test_errors_name_the_field():
    _, y, g, model, problem = setup(2, 2)
    with pytest.raises(ValueError, match="^prox_weight: "):
        cbpr(problem, model, prox_weight=0.0)
    with pytest.raises(ValueError, match="^outer_iter"):
        cbpr(problem, model, outer_iter=0)
    with pytest.raises(ValueError, match="^inner_output"):
        cbpr(problem, model, inner_output="best")
    with pytest.raises(ValueError, match="^groups"):
        GroupLossGap(y, 2, np.zeros_like(g), 0.1)
    with pytest.raises(ValueError, match="^bound"):
        GroupLossGap(y, 2, g, -0.1)
    with pytest.raises(ValueError, match="^scale"):
        GroupLossGap(y, 2, g, 0.1, scale=0.0)
    with pytest.raises(ValueError, match="^multipliers0: "):
        cbpr(problem, model, multipliers0=[1.0])


def test_prox_subproblem_is_internal_to_cbpr():
    import fastcon.problems
    assert not hasattr(fastcon.problems, "ProxSubproblem")
    assert "ProxSubproblem" not in fastcon.problems.__all__
