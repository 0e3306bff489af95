"""Augmented Lagrangian solver: known KKT points, infeasibility, argument checks, fused vs generic Lagrangian."""
import numpy as np
import pytest
import scipy.sparse as sp

from fastcon.datasets import Dataset
from fastcon.problems import Ball, Box, ConstrainedProblem
from fastcon.problems._linear_model import LinearLoss, LinearModelProblem, LinearScores
from fastcon.problems._score_constraints import group_fairness_constraints
from fastcon.solvers.augmented_lagrangian import augmented_lagrangian
from reference.terms import linear, squared_distance


# ----------------------------------------------------------------------------- known solutions
def test_projection_onto_a_halfspace():
    # min ||x - (2, 1)||^2 s.t. x1 + x2 <= 1: x* = (1, 0); grad f = (-2, -2) = -lambda (1, 1): lambda = 2
    problem = ConstrainedProblem(squared_distance([2.0, 1.0]), [linear([1.0, 1.0], -1.0)])
    result = augmented_lagrangian(problem, tol=1e-8, stationarity_tolerance=1e-8)
    assert result.status == "converged"
    np.testing.assert_allclose(result.x, [1.0, 0.0], atol=1e-6)
    np.testing.assert_allclose(result.multipliers, [2.0], atol=1e-5)
    assert result.info["kkt_stationarity"] <= 1e-8 and result.info["complementarity"] <= 1e-8
    assert result.objective == pytest.approx(2.0, abs=1e-6)


def test_box_domain_and_a_constraint():
    # + the box x1 <= 0.5: x* = (0.5, 0.5); d/dx2: 2 (0.5 - 1) + lambda = 0, lambda = 1 (the box takes the rest)
    problem = ConstrainedProblem(squared_distance([2.0, 1.0]), [linear([1.0, 1.0], -1.0)],
                                 Box(np.array([-10.0, -10.0]), np.array([0.5, 10.0])))
    result = augmented_lagrangian(problem, tol=1e-8, stationarity_tolerance=1e-8)
    assert result.status == "converged"
    np.testing.assert_allclose(result.x, [0.5, 0.5], atol=1e-6)
    np.testing.assert_allclose(result.multipliers, [1.0], atol=1e-5)
    assert result.x[0] <= 0.5                                # L-BFGS-B keeps the iterate in the box


def test_inactive_constraint_has_zero_multiplier_and_warm_start_is_used():
    # the center is feasible: x* = center, lambda = 0
    problem = ConstrainedProblem(squared_distance([0.2, 0.1]), [linear([1.0, 1.0], -1.0)])
    result = augmented_lagrangian(problem)
    assert result.status == "converged"
    np.testing.assert_allclose(result.x, [0.2, 0.1], atol=1e-6)
    assert result.multipliers[0] == 0.0
    # started at the solution and its multiplier, one outer iteration certifies it
    active = ConstrainedProblem(squared_distance([2.0, 1.0]), [linear([1.0, 1.0], -1.0)])
    warm = augmented_lagrangian(active, np.array([1.0, 0.0]), multipliers0=[2.0])
    assert warm.status == "converged" and warm.n_iter == 1


def test_infeasible_problem_is_reported_not_raised():
    # x1 <= -1 and x1 >= 1
    problem = ConstrainedProblem(squared_distance([0.0, 0.0]), [linear([1.0, 0.0], 1.0), linear([-1.0, 0.0], 1.0)])
    result = augmented_lagrangian(problem, max_iter=8)
    assert result.status == "no_feasible_iterate"
    assert result.max_violation == pytest.approx(1.0, abs=1e-3)   # the least violation: x1 = 0
    assert "check_feasibility" in result.message


@pytest.mark.parametrize("kwargs, error, field", [
    ({"max_iter": 0}, ValueError, "max_iter"), ({"max_iter": 2.0}, ValueError, "max_iter"),
    ({"inner_max_iter": -1}, ValueError, "inner_max_iter"), ({"tol": 0.0}, ValueError, "tol"),
    ({"stationarity_tolerance": float("nan")}, ValueError, "stationarity_tolerance"),
    ({"penalty": -1.0}, ValueError, "penalty"), ({"penalty_growth": 1.0}, ValueError, "penalty_growth"),
    ({"multipliers0": [1.0, 2.0]}, ValueError, "multipliers0"), ({"multipliers0": [-1.0]}, ValueError, "multipliers0"),
    ({"record_every": 0}, ValueError, "record_every"), ({"callback": 3}, TypeError, "callback"),
    ({"tol": "small"}, TypeError, "tol")])
def test_bad_arguments_are_named(kwargs, error, field):
    problem = ConstrainedProblem(squared_distance([2.0, 1.0]), [linear([1.0, 1.0], -1.0)])
    with pytest.raises(error, match=f"^{field}: "):
        augmented_lagrangian(problem, **kwargs)
    with pytest.raises(ValueError, match="^x0: expected shape"):
        augmented_lagrangian(problem, np.zeros(3))


def test_other_domains_are_refused_by_name():
    problem = ConstrainedProblem(squared_distance([2.0, 1.0]), [linear([1.0, 1.0], -1.0)], Ball(1.0))
    with pytest.raises(TypeError, match=r"^problem: augmented_lagrangian handles the whole space or a domain with "
                                        r"coordinate bounds .*Ball\.bounds: "):
        augmented_lagrangian(problem)


def test_callback_stops_the_run():
    problem = ConstrainedProblem(squared_distance([2.0, 1.0]), [linear([1.0, 1.0], -1.0)])
    seen = []
    result = augmented_lagrangian(problem, callback=lambda k, x, info: seen.append(k) or True)
    assert result.status == "callback_stop" and seen == [0] and result.n_iter == 1


# ----------------------------------------------------------------------------- fused vs generic Lagrangian
@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("fit_intercept", [True, False])
@pytest.mark.parametrize("constraint", ["demographic_parity", "equalized_odds", "roc", "wasserstein"])
def test_fused_lagrangian_equals_the_generic_one(constraint, fit_intercept, sparse):
    rng = np.random.default_rng(3)
    n, d = 300, 6
    X = rng.normal(size=(n, d)) * (rng.random((n, d)) < 0.6)
    y01 = rng.integers(0, 2, n)
    groups = rng.integers(0, 3, n)
    dataset = Dataset(sp.csr_matrix(X) if sparse else X, 2 * y01 - 1)
    scores = LinearScores(dataset, fit_intercept)
    objective = LinearLoss(scores, dataset.y, rng.random(n), "logistic", 0.3)
    block = group_fairness_constraints(scores, y01, groups, constraint, 0.05, smoothing=0.7,
                                       thresholds=np.linspace(-1, 1, 5))
    fused = LinearModelProblem(objective, [block])
    generic = ConstrainedProblem(objective, fused.constraints)
    m = fused.n_constraints
    assert m == generic.n_constraints > 1
    for trial in range(3):
        x = rng.normal(size=scores.n_features)
        lam = rng.random(m) * (rng.random(m) < 0.7)
        out_fused, out_generic = np.empty(scores.n_features), np.empty(scores.n_features)
        seen = []
        f1, g1 = fused.lagrangian(x, lambda g: seen.append(g.copy()) or lam, out_fused)
        f2, g2 = generic.lagrangian(x, lambda g: lam, out_generic)
        assert f1 == pytest.approx(f2, rel=1e-14)
        np.testing.assert_allclose(g1, g2, rtol=0, atol=1e-14)
        np.testing.assert_array_equal(seen[0], g1)           # the multipliers see the values at x
        np.testing.assert_allclose(out_fused, out_generic, rtol=0, atol=1e-12)
        np.testing.assert_allclose(fused.constraint_values(x), g2, rtol=0, atol=1e-14)


# ----------------------------------------------------------------------------- scaling by the curvature diagonal
def _ill_scaled_np_problem(sparse, fit_intercept=True, domain_box=False):
    """A DP-constrained logistic problem whose column scales span four orders of magnitude."""
    rng = np.random.default_rng(11)
    n, d = 400, 8
    X = rng.normal(size=(n, d)) * (rng.random((n, d)) < 0.7) * np.logspace(-2, 2, d)
    y01 = (X[:, 2] / X[:, 2].std() + X[:, 5] / X[:, 5].std() + rng.normal(size=n) > 0).astype(np.int64)
    dataset = Dataset(sp.csr_matrix(X) if sparse else X, 2 * y01 - 1)
    scores = LinearScores(dataset, fit_intercept)
    objective = LinearLoss(scores, dataset.y, np.ones(n), "logistic", 1e-3)
    block = group_fairness_constraints(scores, y01, rng.integers(0, 2, n), "demographic_parity", 0.02,
                                       smoothing=0.5)
    problem = LinearModelProblem(objective, [block])
    if domain_box:
        problem.domain = Box(np.full(problem.dim, -0.05), np.full(problem.dim, 0.05))   # active at the solution
    return problem


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("fit_intercept", [True, False])
def test_curvature_diagonal_is_the_hessian_diagonal_at_zero(sparse, fit_intercept):
    # the logistic loss has phi''(0) = 1/4 = its supremum: at x = 0 the estimate is exact
    problem = _ill_scaled_np_problem(sparse, fit_intercept)
    objective = problem.objective
    h = objective.curvature_diagonal()
    # the problem adds the constraint's rows at weights summing to 1 (here every row, uniformly):
    # the data part twice, the ridge once
    ridge = np.r_[np.full(problem.dim - fit_intercept, 1e-3), np.zeros(int(fit_intercept))]
    np.testing.assert_allclose(problem.curvature_diagonal(), 2 * (h - ridge) + ridge, rtol=1e-12)
    x0 = np.zeros(problem.dim)
    grad_plus, grad_minus = np.empty(problem.dim), np.empty(problem.dim)
    for j in range(problem.dim):
        step = 1e-4 / np.sqrt(h[j])
        e = np.zeros(problem.dim)
        e[j] = step
        objective.value_and_subgradient(x0 + e, grad_plus)
        objective.value_and_subgradient(x0 - e, grad_minus)
        assert (grad_plus[j] - grad_minus[j]) / (2 * step) == pytest.approx(h[j], rel=1e-6)


def test_the_constraint_rows_count_in_the_diagonal_and_weights_equal_repeats():
    # a Neyman-Pearson loss weighs the positives only; a feature seen only in negatives gets its
    # curvature from the constraint's rows, not from the ridge alone
    from fastcon.problems._score_constraints import rate_bound_constraint

    rng = np.random.default_rng(5)
    n = 300
    X = rng.normal(size=(n, 3))
    y01 = (rng.random(n) < 0.5).astype(np.int64)
    X[y01 == 1, 2] = 0.0                                   # column 2: negatives only
    weight = rng.integers(1, 4, n).astype(float)

    def problem_of(X, y01, weight):
        dataset = Dataset(X, 2 * y01 - 1)
        scores = LinearScores(dataset, True)
        objective = LinearLoss(scores, dataset.y, weight * (y01 == 1), "logistic", 1e-6)
        rows = np.flatnonzero(y01 == 0)
        block = rate_bound_constraint(scores, rows, 0.1, sample_weight=weight)
        return LinearModelProblem(objective, [block])

    h = problem_of(X, y01, weight).curvature_diagonal()
    assert problem_of(X, y01, weight).objective.curvature_diagonal()[2] == pytest.approx(1e-6)
    neg = y01 == 0
    assert h[2] == pytest.approx(0.25 * np.sum(weight[neg] * X[neg, 2] ** 2) / weight[neg].sum() + 1e-6, rel=1e-12)
    # a weight of k and k copies of the row: the same diagonal
    repeat = np.repeat(np.arange(n), weight.astype(int))
    np.testing.assert_allclose(problem_of(X[repeat], y01[repeat], np.ones(repeat.size)).curvature_diagonal(), h,
                               rtol=1e-12)


def test_an_objective_without_a_diagonal_is_solved_unscaled():
    problem = ConstrainedProblem(squared_distance([2.0, 1.0]), [linear([1.0, 1.0], -1.0)])
    assert problem.curvature_diagonal() is None
    a = augmented_lagrangian(problem, tol=1e-8, stationarity_tolerance=1e-8)
    b = augmented_lagrangian(problem, tol=1e-8, stationarity_tolerance=1e-8, precondition=False)
    np.testing.assert_array_equal(a.x, b.x)


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("domain_box", [False, True])
def test_scaled_and_unscaled_solves_reach_the_same_kkt_point_the_scaled_one_sooner(sparse, domain_box):
    problem = _ill_scaled_np_problem(sparse, domain_box=domain_box)
    scaled = augmented_lagrangian(problem, stationarity_tolerance=1e-6, tol=1e-6)
    plain = augmented_lagrangian(problem, stationarity_tolerance=1e-6, tol=1e-6, precondition=False)
    assert scaled.status == "converged"
    # the stopping test is in x, whatever the scaling: (projected) stationarity recomputed from scratch
    grad = np.empty(problem.dim)
    problem.lagrangian(scaled.x, lambda g: scaled.multipliers, grad)
    if domain_box:
        assert np.sum(np.abs(scaled.x) == 0.05) >= 2                   # the box binds
        assert np.max(np.abs(np.clip(scaled.x - grad, -0.05, 0.05) - scaled.x)) <= 1e-6
    else:
        assert np.max(np.abs(grad)) <= 1e-6
    assert plain.status == "converged"
    np.testing.assert_allclose(scaled.objective, plain.objective, rtol=1e-6)
    np.testing.assert_allclose(problem.constraint_values(scaled.x), problem.constraint_values(plain.x), atol=1e-5)
    assert scaled.info["evaluations"] < plain.info["evaluations"] / 2
