"""Score-space kernels and constraint blocks against NumPy/SciPy references and finite differences."""
import numpy as np
import pytest
import scipy.sparse as sp
from scipy.stats import wasserstein_distance

from fastcon._kernels._group_rates import (
    cell_sigmoid_sums, cell_sigmoid_vjp, cell_step_sums, transport_gap, weighted_margin_loss,
)
from fastcon._kernels._losses import LOSS_CODES
from fastcon.datasets import Dataset
from fastcon.problems._linear_model import LinearLoss, LinearModelProblem, LinearScores
from fastcon.problems._score_constraints import FAIRNESS_CONSTRAINTS, group_fairness_constraints, rate_bound_constraint
from reference import group_rates as ref


# ----------------------------------------------------------------------------- kernels
@pytest.mark.parametrize("n_thresholds, spread", [(1, 1.0), (7, 1.0), (9, 150.0)])
def test_cell_sigmoid_sums_and_vjp_match_numpy(rng, n_thresholds, spread):
    # spread 150 at tau 0.3: the grid spans ~1000 tau, several anchor blocks of at most 350 tau
    n, n_cells, tau = 500, 5, 0.3
    z = rng.normal(0, 3, n)
    z[:5] = [40.0, -40.0, 0.0, 700.0, -700.0]                 # saturated and exact-zero arguments
    cell = rng.integers(-1, n_cells, n)                       # -1: in no cell
    thresholds = np.sort(rng.normal(0, spread, n_thresholds))
    if spread > 1:
        z[5:50] = rng.choice(thresholds, 45) + rng.normal(0, 0.5, 45)   # rows near every block
    weight = rng.choice([0.0, 0.5, 1.0, 3.0], n)
    sums = np.empty((n_cells, n_thresholds))
    cell_sigmoid_sums(z, cell, weight, 1.0 / tau, thresholds, sums)
    np.testing.assert_allclose(sums, ref.cell_sigmoid_sums(z, cell, weight, tau, thresholds, n_cells), rtol=1e-13,
                               atol=0)
    coef = rng.normal(size=(n_cells, n_thresholds))
    # signed coefficients over several thresholds cancel: absolute error relative to the O(1) terms
    v = np.full(n, 0.5)                                       # the kernel adds to v
    cell_sigmoid_vjp(z, cell, weight, 1.0 / tau, thresholds, coef, v)
    np.testing.assert_allclose(v - 0.5, ref.cell_sigmoid_vjp(z, cell, weight, tau, thresholds, coef), rtol=1e-12,
                               atol=1e-13)
    if n_thresholds > 1:    # callers pass the non-zero columns only: the same as zero columns
        coef[:, ::2] = 0.0
        v = np.zeros(n)
        cell_sigmoid_vjp(z, cell, weight, 1.0 / tau, np.ascontiguousarray(thresholds[1::2]),
                         np.ascontiguousarray(coef[:, 1::2]), v)
        np.testing.assert_allclose(v, ref.cell_sigmoid_vjp(z, cell, weight, tau, thresholds, coef), rtol=1e-12,
                                   atol=1e-13)


@pytest.mark.parametrize("n_thresholds", [1, 6])
def test_cell_step_sums_match_numpy(rng, n_thresholds):
    n, n_cells = 500, 4
    thresholds = np.sort(rng.normal(0, 1, n_thresholds))
    z = rng.normal(0, 2, n)
    z[:n_thresholds] = thresholds                             # exactly at a threshold: counts as below
    cell = rng.integers(-1, n_cells, n)
    weight = rng.choice([0.0, 0.5, 1.0, 3.0], n)
    sums = np.full((n_cells, n_thresholds), np.nan)
    cell_step_sums(z, cell, weight, thresholds, sums)
    np.testing.assert_array_equal(sums, ref.cell_step_sums(z, cell, weight, thresholds, n_cells))


@pytest.mark.parametrize("loss", ["logistic", "hinge"])
def test_weighted_margin_loss_matches_numpy(rng, loss):
    n = 400
    z = rng.normal(0, 4, n)
    y = rng.choice([-1.0, 1.0], n)
    weight = rng.random(n) * (rng.random(n) < 0.8)            # zeros leave rows out
    v = np.full(n, np.nan)
    total = weighted_margin_loss(LOSS_CODES[loss], z, y, weight, v)
    want_total, want_v = ref.weighted_margin_loss(loss, z, y, weight)
    assert total == pytest.approx(want_total, rel=1e-13)
    np.testing.assert_allclose(v, want_v, rtol=1e-13, atol=1e-300)


@pytest.mark.parametrize("huber", [0.0, 0.3])
@pytest.mark.parametrize("na, nb", [(7, 7), (13, 5), (1, 9), (200, 331)])
def test_transport_gap_is_scipy_wasserstein_and_its_subgradient_the_derivative(rng, na, nb, huber):
    n = na + nb + 10
    z = rng.normal(0, 2, n)                                   # continuous: no ties
    rows = rng.permutation(n)
    rows_a, rows_b = rows[:na], rows[na:na + nb]
    # the kernel reads each row set ordered by score (the constraint block keeps that order)
    rows_a, rows_b = rows_a[np.argsort(z[rows_a])], rows_b[np.argsort(z[rows_b])]
    value = transport_gap(z, rows_a, rows_b, huber, 0.0, np.empty(0))
    assert value == pytest.approx(ref.transport_gap(z[rows_a], z[rows_b], huber), rel=1e-12, abs=1e-15)
    if huber == 0.0:
        assert value == pytest.approx(wasserstein_distance(z[rows_a], z[rows_b]), rel=1e-12, abs=1e-15)
    else:       # Huber lowers each matched distance by at most mu/2
        assert 0 <= transport_gap(z, rows_a, rows_b, 0.0, 0.0, np.empty(0)) - value <= huber / 2 + 1e-12
    coef = 0.7
    v = np.zeros(n)
    assert transport_gap(z, rows_a, rows_b, huber, coef, v) == value
    # piecewise linear (or quadratic) in z: central differences with a step far below the gaps
    # between scores stay on one piece
    h = 0.25 * np.min(np.diff(np.sort(z)))
    fd = np.empty(n)
    for i in range(n):
        e = np.zeros(n)
        e[i] = h
        fd[i] = coef * (transport_gap(z + e, rows_a, rows_b, huber, 0.0, np.empty(0))
                        - transport_gap(z - e, rows_a, rows_b, huber, 0.0, np.empty(0))) / (2 * h)
    np.testing.assert_allclose(v, fd, rtol=0, atol=1e-6)
    outside = np.setdiff1d(np.arange(n), np.concatenate([rows_a, rows_b]))
    assert np.all(v[outside] == 0.0)


def test_transport_gap_identical_laws_is_zero(rng):
    z = rng.normal(size=20)
    z = np.concatenate([z, z[::-1]])
    v = np.zeros(40)
    rows_a, rows_b = np.argsort(z[:20]), 20 + np.argsort(z[20:])
    assert transport_gap(z, rows_a, rows_b, 0.0, 1.0, v) == 0.0
    assert np.all(v == 0.0)                                   # d = 0 everywhere: no subgradient mass


# ----------------------------------------------------------------------------- constraint blocks through LinearModelProblem
def _problem(rng, constraint, sparse, fit_intercept, n=240, d=5, straddle=0.0):
    X = rng.normal(size=(n, d)) * (rng.random((n, d)) < 0.7)
    y01 = rng.integers(0, 2, n)
    groups = rng.integers(0, 3, n)
    dataset = Dataset(sp.csr_matrix(X) if sparse else X, 2 * y01 - 1)
    scores = LinearScores(dataset, fit_intercept)
    objective = LinearLoss(scores, dataset.y, np.ones(n), "logistic", 0.1)
    block = group_fairness_constraints(scores, y01, groups, constraint, 0.05, smoothing=0.8,
                                       thresholds=np.linspace(-1.5, 1.5, 4), straddle=straddle)
    return LinearModelProblem(objective, [block]), X, y01, groups


def _hard_free_values(constraint, z, y01, groups, tau, thresholds, bound, straddle=0.0):
    """The block's values from their definition: smoothed rates of every group, every ordered pair,
    the first rate of a pair at theta - straddle tau and the second at theta + straddle tau."""
    from scipy.special import expit
    families = {"demographic_parity": [(0, 1)], "roc": [(0, 1)], "equal_opportunity": [(1,)],
                "false_positive_parity": [(0,)], "equalized_odds": [(1,), (0,)]}[constraint]
    grid = thresholds if constraint == "roc" else np.zeros(1)
    values = []
    for labels in families:
        def rates(shift):
            return [expit((z[(groups == k) & np.isin(y01, labels)][:, None] - grid - shift) / tau).mean(axis=0)
                    for k in range(3)]
        first, second = rates(-straddle * tau), rates(straddle * tau)
        values += [first[a] - second[b] - bound for a in range(3) for b in range(3) if a != b]
    return np.concatenate(values)


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "csr"])
@pytest.mark.parametrize("fit_intercept", [True, False], ids=["intercept", "no-intercept"])
@pytest.mark.parametrize("constraint, straddle", [(c, 0.0) for c in FAIRNESS_CONSTRAINTS]
                         + [(c, 1.5) for c in FAIRNESS_CONSTRAINTS if c != "wasserstein"])
def test_block_values_and_gradients(rng, constraint, straddle, fit_intercept, sparse):
    problem, X, y01, groups = _problem(rng, constraint, sparse, fit_intercept, straddle=straddle)
    dim = problem.dim
    assert dim == X.shape[1] + fit_intercept
    x = rng.normal(0, 0.5, dim)
    z = X @ x[:X.shape[1]] + (x[-1] if fit_intercept else 0.0)
    values = problem.constraint_values(x)
    if constraint == "wasserstein":
        mu = problem.blocks[0].huber
        want = [ref.transport_gap(z[groups == a], z[groups == b], mu) - 0.05 for a in range(3) for b in range(a + 1, 3)]
    else:
        want = _hard_free_values(constraint, z, y01, groups, 0.8, np.linspace(-1.5, 1.5, 4), 0.05, straddle)
    np.testing.assert_allclose(values, want, rtol=1e-12, atol=1e-14)
    # every constraint's gradient against central differences in x (W1: piecewise linear, tiny step)
    h = 1e-9 if constraint == "wasserstein" else 1e-6
    grad = np.empty(dim)
    for j, term in enumerate(problem.constraints):
        assert term.value_and_subgradient(x, grad) == pytest.approx(values[j], abs=1e-15)
        fd = np.array([(term.value(x + h * e) - term.value(x - h * e)) / (2 * h) for e in np.eye(dim)])
        np.testing.assert_allclose(grad, fd, rtol=1e-6, atol=1e-6)


def test_rate_bound_constraint_is_the_smoothed_type_one_error(rng):
    n = 200
    X = rng.normal(size=(n, 3))
    y01 = rng.integers(0, 2, n)
    dataset = Dataset(X, 2 * y01 - 1)
    scores = LinearScores(dataset, True)
    objective = LinearLoss(scores, dataset.y, (y01 == 1).astype(float), "logistic", 0.0)
    rows0 = np.flatnonzero(y01 == 0)
    problem = LinearModelProblem(objective, [rate_bound_constraint(scores, rows0, 0.1, smoothing=0.4)])
    x = rng.normal(size=4)
    from scipy.special import expit
    z = X @ x[:3] + x[3]
    assert problem.constraint_values(x)[0] == pytest.approx(expit(z[rows0] / 0.4).mean() - 0.1, rel=1e-13)
    grad = np.empty(4)
    problem.constraints[0].value_and_subgradient(x, grad)
    s = expit(z[rows0] / 0.4)
    want = np.append(X[rows0].T @ (s * (1 - s)), np.sum(s * (1 - s))) / (0.4 * rows0.size)
    np.testing.assert_allclose(grad, want, rtol=1e-12)
    with pytest.raises(ValueError, match="^rows: a rate needs rows of positive total weight"):
        rate_bound_constraint(scores, [], 0.1)


def test_blocks_reject_bad_input_by_name(rng):
    problem, X, y01, groups = _problem(rng, "demographic_parity", False, True)
    scores = problem.linear_scores
    with pytest.raises(ValueError, match="^constraint: expected one of"):
        group_fairness_constraints(scores, y01, groups, "parity", 0.1)
    with pytest.raises(ValueError, match="^thresholds: the 'roc' constraint needs a threshold grid"):
        group_fairness_constraints(scores, y01, groups, "roc", 0.1)
    with pytest.raises(ValueError, match="^smoothing: must be a positive finite number"):
        group_fairness_constraints(scores, y01, groups, "demographic_parity", 0.1, smoothing=0.0)
    no_pos = np.where(groups == 2, 0, y01)
    with pytest.raises(ValueError, match="^sensitive_features: group 2 has no positive samples"):
        group_fairness_constraints(scores, no_pos, groups, "equal_opportunity", 0.1)
    with pytest.raises(ValueError, match="^bound: must be finite"):
        group_fairness_constraints(scores, y01, groups, "demographic_parity", np.nan)
