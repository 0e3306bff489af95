"""Memory of constraint blocks: O(rows + constraints + features), and refused up front when it cannot fit.

Measured with `tracemalloc`, which sees NumPy's allocations: the peak above what the test's data
already holds. Before index pairs and on-demand constraint views, every constraint view held a
row-length and a constraint-length array (160 groups: +2.9 GB for 4,000 rows).
"""
import tracemalloc

import numpy as np
import pytest

from fastcon import _memory_limit
from fastcon.datasets import Dataset
from fastcon.problems import LinearLoss, LinearModelProblem, LinearScores, group_fairness_constraints
from fastcon.problems._score_constraints import fairness_constraint_bytes

sklearn = pytest.importorskip("sklearn")
from fastcon import FairClassifier  # noqa: E402

MB = 1 << 20


def _data(n, d, n_groups, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y01 = (X[:, 0] + 0.3 * rng.normal(size=n) > 0).astype(np.int64)
    return X, y01, np.arange(n) % n_groups


def _peak(fn):
    """Peak bytes NumPy and Python allocate while ``fn`` runs, and its result."""
    tracemalloc.start()
    try:
        out = fn()
        return tracemalloc.get_traced_memory()[1], out
    finally:
        tracemalloc.stop()


def test_demographic_parity_with_160_groups_fits_under_200_mb_above_the_data():
    X, y01, groups = _data(4000, 5, 160)
    peak, clf = _peak(lambda: FairClassifier("demographic_parity", bound=0.1).fit(X, y01,
                                                                                       sensitive_features=groups))
    assert peak < 200 * MB, f"peak {peak / MB:.0f} MB"
    assert clf.coef_.shape == (1, 5)


@pytest.mark.parametrize("constraint, n_groups, n_thresholds", [("demographic_parity", 160, None),
                                                                 ("equalized_odds", 60, None),
                                                                 ("roc", 2, 2000)])
def test_a_problem_holds_no_array_per_constraint(constraint, n_groups, n_thresholds):
    """Building the problem and reading every constraint's subgradient stays O(n + m) in memory."""
    X, y01, groups = _data(600, 4, n_groups)
    dataset = Dataset(X, 2 * y01 - 1)
    scores = LinearScores(dataset)
    objective = LinearLoss(scores, dataset.y, np.ones(600))
    thresholds = None if n_thresholds is None else np.linspace(-2, 2, n_thresholds)

    def build_and_use():
        block = group_fairness_constraints(scores, y01, groups, constraint, 0.05, thresholds=thresholds)
        problem = LinearModelProblem(objective, [block])
        out = np.empty(problem.dim)
        m = problem.n_constraints
        for j in (0, m // 2, m - 1):
            problem.constraints[j].value_and_subgradient(np.full(problem.dim, 0.1), out)
        return problem

    peak, problem = _peak(build_and_use)
    m = problem.n_constraints
    assert m == (2 if constraint == "equalized_odds" else 1) * n_groups * (n_groups - 1) * (n_thresholds or 1)
    # the block's own estimate bounds what it took; both are a few hundred bytes per constraint
    assert peak <= fairness_constraint_bytes(600, n_groups, constraint, n_thresholds or 1)
    assert peak < 400 * m + 2 * MB, f"peak {peak / MB:.1f} MB for {m} constraints"


def test_every_constraint_view_matches_the_fused_lagrangian():
    """A view's subgradient is the fused Lagrangian's with a unit multiplier on that constraint only."""
    X, y01, groups = _data(300, 3, 4, seed=2)
    dataset = Dataset(X, 2 * y01 - 1)
    scores = LinearScores(dataset)
    block = group_fairness_constraints(scores, y01, groups, "equalized_odds", 0.02, smoothing=0.6)
    problem = LinearModelProblem(LinearLoss(scores, dataset.y, np.ones(300), ridge=0.0), [block])
    x = np.random.default_rng(3).normal(0, 0.4, problem.dim)
    f_grad, view_grad, fused = np.empty(problem.dim), np.empty(problem.dim), np.empty(problem.dim)
    problem.objective.value_and_subgradient(x, f_grad)
    values = problem.constraint_values(x)
    for j in range(problem.n_constraints):
        assert problem.constraints[j].value_and_subgradient(x, view_grad) == values[j]
        unit = np.zeros(problem.n_constraints)
        unit[j] = 1.0
        problem.lagrangian(x, lambda g: unit, fused)
        np.testing.assert_allclose(view_grad, fused - f_grad, rtol=1e-12, atol=1e-15)
    assert problem.constraints[-1].index == problem.n_constraints - 1
    with pytest.raises(IndexError):
        problem.constraints[problem.n_constraints]


def test_counters_count_the_shared_scores_once():
    X, y01, groups = _data(200, 3, 5)
    dataset = Dataset(X, 2 * y01 - 1)
    scores = LinearScores(dataset)
    problem = LinearModelProblem(LinearLoss(scores, dataset.y, np.ones(200)),
                                 [group_fairness_constraints(scores, y01, groups, "demographic_parity", 0.1)])
    problem.reset_counters()
    problem.constraint_values(np.full(problem.dim, 0.3))
    assert problem.rows_read_g == 200 and problem.n_samples_g == 200   # one product for all 20 constraints


def test_roc_grid_too_large_for_memory_is_refused_before_anything_is_built(monkeypatch):
    """The requested grid's full footprint (sums, rates, values, multipliers), named by its field."""
    X, y01, groups = _data(200, 5, 2)
    need = fairness_constraint_bytes(200, 2, "roc", 10**7)
    assert need > 1_500_000_000                     # about 160 bytes per threshold, not the grid's 8
    monkeypatch.setattr(_memory_limit, "physical_memory", lambda: 2 * need - 2)
    clf = FairClassifier("roc", bound=0.1, n_thresholds=10**7)
    with pytest.raises(ValueError, match=r"^n_thresholds: the 'roc' constraints of 2 groups at 10,000,000 "
                                         r"thresholds on 200 rows would need 1\.\d GiB"):
        clf.fit(X, y01, sensitive_features=groups)


def test_too_many_groups_for_memory_are_refused_naming_the_sensitive_features(monkeypatch):
    X, y01, groups = _data(4000, 3, 160)
    monkeypatch.setattr(_memory_limit, "physical_memory", lambda: 8 * MB)
    with pytest.raises(ValueError, match=r"^sensitive_features: the 'demographic_parity' constraints of 160 groups"):
        FairClassifier("demographic_parity", bound=0.1).fit(X, y01, sensitive_features=groups)
    dataset = Dataset(X, 2 * y01 - 1)
    with pytest.raises(ValueError, match=r"^groups: the 'equalized_odds' constraints of 160 groups"):
        group_fairness_constraints(LinearScores(dataset), y01, groups, "equalized_odds", 0.1)
