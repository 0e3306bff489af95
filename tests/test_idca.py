"""IDCA (Algorithms 1–2 of He, Huang, Yao & Lin), the direct switching-Polyak comparator (Algorithm 3) and
the penalty subgradient method, on small DC problems with known solutions."""
import math

import numpy as np
import pytest

from fastcon.solvers.idca import idca, idca_theory_parameters
from fastcon.solvers.penalty_subgradient import penalty_subgradient
from fastcon.solvers.switching_polyak import switching_polyak


class QuadraticDC:
    r"""min ½‖x − c‖² s.t. f_i = f_i⁺ − f_i⁻ ≤ 0 with f⁺ = aᵀx − b (halfspaces, rows of ``halfspaces``) or
    f⁺ = r (constant), f⁻ = ‖x‖ ("outside the ball of radius r", rows of ``outside``)."""

    def __init__(self, c, x0, halfspaces=(), outside=()):
        self.c = np.asarray(c, float)
        self.dim = self.c.size
        self.x0 = np.asarray(x0, float)
        self.halfspaces = [(np.asarray(a, float), float(b)) for a, b in halfspaces]
        self.outside = [float(r) for r in outside]
        self.n_constraints = len(self.halfspaces) + len(self.outside)
        self.calls = 0

    def objective_value(self, x):
        return 0.5 * float((x - self.c) @ (x - self.c))

    def objective_value_and_gradient(self, x, out):
        out[:] = x - self.c
        return self.objective_value(x)

    def penalty_value_and_subgradient(self, x, out):
        # max(0, max_i f_i) for the halfspaces only (a convex exact penalty)
        vals = [a @ x - b for a, b in self.halfspaces]
        i = int(np.argmax(vals))
        out[:] = self.halfspaces[i][0] if vals[i] > 0 else 0.0
        return max(0.0, vals[i])

    def plus_values(self, x):
        self.calls += 1
        return np.array([a @ x - b for a, b in self.halfspaces] + self.outside)

    def plus_subgradient(self, x, i, out):
        if i < len(self.halfspaces):
            out[:] = self.halfspaces[i][0]
        else:
            out[:] = 0.0
        return float(self.plus_values(x)[i])

    def minus_values(self, x):
        return np.array([0.0] * len(self.halfspaces) + [np.linalg.norm(x)] * len(self.outside))

    def minus_linearization(self, x):
        J = np.zeros((self.n_constraints, self.dim))
        n = np.linalg.norm(x)
        for j in range(len(self.outside)):
            J[len(self.halfspaces) + j] = x / n if n > 0 else 0.0
        return self.minus_values(x), J

    def constraint_values(self, x):
        return self.plus_values(x) - self.minus_values(x)

    def constraint_subgradient(self, x, i, out):
        self.plus_subgradient(x, i, out)
        _, J = self.minus_linearization(x)
        out -= J[i]
        return float(self.constraint_values(x)[i])


def test_one_outer_step_is_algorithm_2_on_a_convex_problem():
    # min ½‖v − (2, 2)‖² s.t. v1 + v2 ≤ 1: solution (½, ½), value 2.25.
    p = QuadraticDC([2, 2], [0, 0], halfspaces=[([1, 1], 1)])
    eps = 1e-3
    res = idca(p, outer_iter=1, inner_iter=20000, switching_level=eps)
    assert res.status == "max_iter"
    assert res.max_violation <= eps
    assert res.objective - 2.25 <= 5 * eps          # ε-optimal up to the step length
    assert res.objective >= 2.25 - 2 * eps          # and not "better" than the optimum by more than the slack
    np.testing.assert_allclose(res.x, [0.5, 0.5], atol=0.02)


def test_idca_keeps_iterates_feasible_on_a_nonconvex_set():
    # min ½‖x − (0.2, 0)‖² s.t. ‖x‖ ≥ 1 (f = 1 − ‖x‖, f⁺ = 1, f⁻ = ‖x‖): solution (1, 0), value 0.32.
    p = QuadraticDC([0.2, 0.0], [0.0, 2.0], outside=[1.0])
    eps = 1e-3
    res = idca(p, outer_iter=200, inner_iter=300, switching_level=eps)
    assert res.status == "max_iter"
    assert np.all(res.history["max_violation"] <= eps + 1e-12)
    # the objective decreases along the outer iterates (majorisation + the best nearly-feasible inner output)
    obj = res.history["objective"]
    assert np.all(np.diff(obj) <= 2 * eps)
    np.testing.assert_allclose(res.x, [1.0, 0.0], atol=0.01)
    assert abs(res.objective - 0.32) < 1e-3
    assert res.counters["inner_iterations"] == 200 * 300
    assert res.history["inner_iterations"][-1] == 200 * 300


def test_majorisation_is_tight_at_the_outer_iterate():
    p = QuadraticDC([0.2, 0.0], [0.3, 2.0], outside=[1.0])
    x = np.array([0.3, 2.0])
    vals, J = p.minus_linearization(x)
    rng = np.random.default_rng(0)
    for _ in range(20):
        v = rng.normal(size=2) * 3
        g = p.plus_values(v) - (vals + J @ (v - x))
        assert np.all(g >= p.constraint_values(v) - 1e-12)
    np.testing.assert_allclose(p.plus_values(x) - vals, p.constraint_values(x))


def test_prox_term_and_best_output():
    p = QuadraticDC([0.2, 0.0], [0.0, 2.0], outside=[1.0])
    res = idca(p, outer_iter=200, inner_iter=300, switching_level=1e-3, prox_weight=0.5, output="best_feasible")
    assert res.status == "max_iter"
    np.testing.assert_allclose(res.x, [1.0, 0.0], atol=0.05)
    k = res.info["output_index"]
    assert res.history["objective"][list(res.history["iteration"]).index(k)] == pytest.approx(res.objective)


def test_idca_infeasible_start_reports_status():
    # ‖x‖ ≥ 1 and x1 + x2 ≤ −10 and x1 + x2 ≥ 10 (as −x1 − x2 ≤ −10): empty feasible set
    p = QuadraticDC([0, 0], [0, 0], halfspaces=[([1, 1], -10), ([-1, -1], -10)])
    res = idca(p, outer_iter=3, inner_iter=50, switching_level=1e-3)
    assert res.status in ("no_feasible_iterate", "infeasible_stationary")
    assert res.message


def test_idca_without_constraints_takes_objective_steps_only():
    # m = 0: min ½‖x − (2, 2)‖² from 0; every inner step is an objective step of length ε/‖∇‖, which
    # lowers the objective by about ε: the 4 it starts at takes about 4,000 of the 6,000 steps
    p = QuadraticDC([2, 2], [0, 0])
    res = idca(p, outer_iter=30, inner_iter=200, switching_level=1e-3)
    assert res.status == "max_iter"
    assert res.max_violation == 0.0
    assert res.counters["constraint_steps"] == 0 and res.counters["objective_steps"] == 6000
    assert res.objective < 1e-3
    np.testing.assert_allclose(res.x, [2.0, 2.0], atol=0.05)


def test_direct_switching_polyak_static_and_diminishing():
    p = QuadraticDC([0.2, 0.0], [0.0, 2.0], outside=[1.0])
    for tol in (5e-3, lambda t: 2.0 / (t + 1)):
        res = switching_polyak(p, max_iter=20000, switching_level=tol)
        assert res.status == "max_iter"
        assert res.max_violation <= 5e-3
        assert 0.32 - 5e-3 <= res.objective <= 0.325
        assert res.info["tau"] >= 0


def test_penalty_subgradient_exact_penalty():
    p = QuadraticDC([2, 2], [0, 0], halfspaces=[([1, 1], 1)])
    res = penalty_subgradient(p, penalty=5.0, max_iter=20000, step_size=lambda t: 0.5 / math.sqrt(t + 1))
    np.testing.assert_allclose(res.x, [0.5, 0.5], atol=0.02)
    assert res.info["penalty"] < 0.03


def test_argument_errors_name_the_field():
    p = QuadraticDC([2, 2], [0, 0], halfspaces=[([1, 1], 1)])
    with pytest.raises(ValueError, match="^switching_level"):
        idca(p, switching_level=0.0)
    with pytest.raises(ValueError, match="^outer_iter"):
        idca(p, outer_iter=0)
    with pytest.raises(ValueError, match=r"^outer_iter: 10,000,000,000,000 values of the switching_level schedule"):
        idca(p, outer_iter=10**13)        # 73 TiB of switching levels: refused before the loop, not a MemoryError
    with pytest.raises(ValueError, match="^x0"):
        idca(p, x0=[np.nan, 0])
    with pytest.raises(ValueError, match="^output"):
        idca(p, output="random")
    with pytest.raises(TypeError, match="^problem"):
        idca(object())
    with pytest.raises(ValueError, match="^step_size"):
        penalty_subgradient(p, penalty=1.0, step_size=-1.0)
    with pytest.raises(ValueError, match="^penalty"):
        penalty_subgradient(p, penalty=-1.0)


def test_theory_parameters_follow_theorem_6_5():
    th = idca_theory_parameters(0.1, lipschitz=1.0, prox_weight=1.0, slater=1.0, objective_gap=1.0)
    eps_k = 1 / 8 * min(1, 1 / 4, 1 / 8) * 0.01
    assert th.switching_level == pytest.approx(eps_k)
    assert th.outer_iter == math.ceil(8 * 1.0 / 0.01)
    assert th.inner_iter == math.ceil(1 / eps_k * math.log(4 / eps_k))
    assert th.lagrange_bound == pytest.approx(2 / math.sqrt(2))


# ------------------------------------------------------------------ IDCA on the partial-fairness models
def _partial_problem(model, kappa, n=1500, seed=0):
    from fastcon.datasets import Dataset, make_fair_classification
    from fastcon.problems import (LinearLoss, LinearScores, PartialFairnessProblem, cross_term_features,
                                  partial_dp_constraints, weak_partial_dp_constraints)

    data = make_fair_classification(n, 5, shift=1.5, seed=seed)
    ds = Dataset(cross_term_features(data.X, data.groups), data.y, groups=data.groups)
    scores = LinearScores(ds, fit_intercept=False)
    loss = LinearLoss(scores, ds.y, np.ones(ds.n_samples))
    if model == "pdp":
        block = partial_dp_constraints(scores, ds.groups, (0.1, 0.4), kappa, n_levels=10)
    else:
        block = weak_partial_dp_constraints(scores, ds.groups, (0.1, 0.4), kappa)
    return PartialFairnessProblem(loss, block), ds


@pytest.mark.parametrize("model", ["pdp", "weak_pdp"])
def test_idca_from_zero_stays_feasible_and_trades_accuracy_for_fairness(model):
    from fastcon.metrics import partial_dp, weak_partial_dp

    metric = {"pdp": lambda s, g: partial_dp(s, sensitive_features=g, interval=(0.1, 0.4)),
              "weak_pdp": lambda s, g: weak_partial_dp(s, sensitive_features=g, interval=(0.1, 0.4))}[model]
    eps = 1e-3
    losses, gaps = [], []
    for kappa in (0.6, 0.2, 0.02):
        problem, ds = _partial_problem(model, kappa)
        res = idca(problem, outer_iter=30, inner_iter=150, switching_level=eps)
        assert res.status == "max_iter"
        # Lemma C.3: started feasible (w = 0), every outer iterate stays eps-feasible
        assert np.all(res.history["max_violation"] <= eps + 1e-12)
        s = np.asarray(ds.X @ res.x[:problem.n_weights]).ravel()
        losses.append(res.objective)
        gaps.append(metric(s, ds.groups))
    # tighter bound: fairer on the training rows and a larger training loss (up to solver slack)
    assert gaps[2] < gaps[0]
    assert all(b <= a + 0.03 for a, b in zip(gaps, gaps[1:]))
    assert all(b >= a - 1e-3 for a, b in zip(losses, losses[1:]))
    assert gaps[2] <= 0.1


def test_direct_switching_polyak_on_partial_dp():
    problem, _ = _partial_problem("pdp", 0.2)
    res = switching_polyak(problem, max_iter=3000, switching_level=1e-3)
    assert res.status == "max_iter" and res.max_violation <= 1e-3
    assert res.objective < problem.objective_value(problem.x0)


def test_penalty_subgradient_on_partial_dp_lowers_the_penalty():
    from fastcon.solvers import penalty_subgradient as ps

    problem, _ = _partial_problem("pdp", 0.2)
    weak = ps(problem, penalty=0.0, max_iter=3000, step_size=0.05)
    strong = ps(problem, penalty=5.0, max_iter=3000, step_size=0.05)
    assert strong.info["penalty"] < weak.info["penalty"]
    assert strong.objective >= weak.objective - 1e-6


def test_switching_polyak_reports_a_zero_objective_subgradient_as_converged():
    # x0 = c minimises f and is feasible (0 + 0 <= 1): the first objective step has zeta_0 = 0.
    p = QuadraticDC([0, 0], [0, 0], halfspaces=[([1, 1], 1)])
    res = switching_polyak(p, max_iter=50, switching_level=1e-3)
    assert res.status == "converged"
    assert "subgradient is zero" in res.message and "iteration 0" in res.message
    np.testing.assert_array_equal(res.x, [0.0, 0.0])
