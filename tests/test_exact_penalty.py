"""Exact-penalty trust-region baseline of [MLY20] §5 (fastcon's reconstruction) on tiny hand-computed problems."""
import itertools

import numpy as np
import pytest

from fastcon.datasets import make_multiclass
from fastcon.problems import (
    Ball, Box, ConstrainedProblem, Product, ProductOfBalls, TransportPolytope, custom_term, multiclass_neyman_pearson,
)
from fastcon.solvers import exact_penalty as exact_penalty_module
from fastcon.solvers.exact_penalty import exact_penalty_trust_region
from reference.terms import linear, squared_distance

MODES = ("steering", "classic")


def record_steps(log):
    """A callback appending (x_{k+1}, s_k, pred_k) copies to ``log``."""
    def callback(k, x, info):
        step = None if info["step"] is None else info["step"].copy()
        log.append((x.copy(), step, info["predicted_reduction"]))
        return False
    return callback


# min -x1 - x2  s.t.  x1 + 2 x2 <= 4,  3 x1 + x2 <= 6: vertex (1.6, 1.2), multipliers (0.4, 0.2).
def vertex_lp():
    return ConstrainedProblem(linear([-1.0, -1.0]), [linear([1.0, 2.0], -4.0), linear([3.0, 1.0], -6.0)])


# min x  s.t.  1 - x <= 0  on the box [-2, 3]: solution x = 1, multiplier 1.
def box_problem():
    return ConstrainedProblem(linear([1.0]), [linear([-1.0], 1.0)], Box(-2.0, 3.0))


# ----------------------------------------------------------------------------- convergence
@pytest.mark.parametrize("mode", MODES)
def test_linear_program_reaches_the_vertex(mode):
    # From 0 the constraints cannot activate inside the unit box (max x1 + 2 x2 = 3 < 4), so the
    # step is (1, 1); from (1, 1) the LP step is the vertex itself (see the hand-LP test).
    res = exact_penalty_trust_region(vertex_lp(), np.zeros(2), penalty_update=mode, record_every=1)
    assert res.status == "converged" and res.info["stop_reason"] == "critical"
    np.testing.assert_allclose(res.x, [1.6, 1.2], atol=1e-9)
    assert res.n_iter == 3 and res.max_violation <= 1e-9 and res.objective == pytest.approx(-2.8)
    np.testing.assert_allclose(res.history["objective"], [0.0, -2.0, -2.8], atol=1e-9)
    np.testing.assert_array_equal(res.history["penalty"], 10.0)  # 1 / xi, never increased here
    np.testing.assert_allclose(res.history["rho"][:2], 1.0)  # a linear problem: model = function
    # at radius 1 the criticality measure is the predicted reduction itself: 2 and 0.8, then 0
    np.testing.assert_allclose(res.history["criticality"], [2.0, 0.8, 0.0], atol=1e-12)
    assert res.counters["penalty_increases"] == 0


A = np.array([1.0, 0.5, -0.5])
C_ROW, B = np.array([1.0, 1.0, 0.0]), 0.5
X_STAR = A - (C_ROW @ A - B) / (C_ROW @ C_ROW) * C_ROW  # (0.5, 0, -0.5), multiplier 1 < penalty 10


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("x0", [[2.0, -1.0, 1.0], [-3.0, 2.0, 0.3]])
def test_convex_quadratic_converges_with_descent_on_the_merit(mode, x0):
    problem = ConstrainedProblem(squared_distance(A), [linear(C_ROW, -B)], Ball(10.0))
    res = exact_penalty_trust_region(problem, np.array(x0), penalty_update=mode, criticality_tolerance=1e-9,
                                     record_every=1)
    assert res.status == "converged" and res.info["stop_reason"] == "critical"
    np.testing.assert_allclose(res.x, X_STAR, atol=1e-6)
    assert res.max_violation <= 1e-9 and res.objective == pytest.approx(float((X_STAR - A) @ (X_STAR - A)), abs=1e-6)
    h = res.history
    assert np.all(h["penalty"] == 10.0)
    acc = h["accepted"][:-1].astype(bool)
    drop = h["merit"][:-1] - h["merit"][1:]
    # accepted: phi decreases by at least eta1 * pred; rejected: x (hence phi) unchanged, radius halved
    assert np.all(drop[acc] >= 0.3 * h["predicted_reduction"][:-1][acc] - 1e-12) and np.all(drop[acc] > 0)
    np.testing.assert_array_equal(drop[~acc], 0.0)
    np.testing.assert_array_equal(h["radius"][1:][~acc], 0.5 * h["radius"][:-1][~acc])
    assert np.all(np.diff(h["radius"]) <= 0)  # the paper's rule never enlarges the radius


# ----------------------------------------------------------------------------- the LP subproblem
@pytest.mark.parametrize("penalty, step, pred", [
    # sigma = 10 > multipliers: maximise s1 + s2 on {s1 + 2 s2 <= 1, 3 s1 + s2 <= 2, |s| <= 1}:
    # the vertex (3/5, 1/5), which lands exactly on the solution (1.6, 1.2); pred = 0.8.
    (10.0, [0.6, 0.2], 0.8),
    # sigma = 0.2: the corner (1, 1) costs 0.2 * (2 + 2) = 0.8 in penalty for a gain of 2; pred = 1.2.
    (0.2, [1.0, 1.0], 1.2),
])
def test_first_lp_step_matches_the_hand_solution(penalty, step, pred):
    log = []
    res = exact_penalty_trust_region(vertex_lp(), np.array([1.0, 1.0]), penalty=penalty, penalty_update="classic",
                                     max_iter=1, callback=record_steps(log))
    (x1, s0, pred0), = log
    np.testing.assert_allclose(s0, step, atol=1e-12)
    assert pred0 == pytest.approx(pred, abs=1e-12)
    np.testing.assert_allclose(x1, np.array([1.0, 1.0]) + step, atol=1e-12)  # rho = 1: accepted
    assert res.status == "max_iter" and res.history["rho"][0] == pytest.approx(1.0)


def vertex_enumeration_minimum(grad, values, jac, penalty, radius):
    """Exact minimum of the convex piecewise-linear model over the 2-D box: at a vertex of the
    arrangement of the kink lines values_i + jac_i s = 0 and the box edges s_j = +-radius."""
    lines = [(row, -v) for row, v in zip(jac, values)]
    lines += [(np.eye(2)[j], sign * radius) for j in range(2) for sign in (-1.0, 1.0)]
    best = np.inf
    for (a1, b1), (a2, b2) in itertools.combinations(lines, 2):
        M = np.array([a1, a2])
        if abs(np.linalg.det(M)) < 1e-12:
            continue
        s = np.linalg.solve(M, [b1, b2])
        if np.max(np.abs(s)) <= radius * (1 + 1e-12):
            best = min(best, grad @ s + penalty * np.maximum(values + jac @ s, 0.0).sum())
    return best


@pytest.mark.parametrize("seed", range(6))
def test_lp_step_minimises_the_model_like_vertex_enumeration(seed):
    rng = np.random.default_rng(seed)
    grad, jac, values = rng.normal(size=2), rng.normal(size=(3, 2)), rng.normal(size=3)
    penalty, radius = rng.uniform(0.5, 3.0), rng.uniform(0.3, 2.0)
    problem = ConstrainedProblem(linear(grad), [linear(row, v) for row, v in zip(jac, values)])
    log = []
    exact_penalty_trust_region(problem, np.zeros(2), penalty=penalty, penalty_update="classic", radius=radius,
                               max_iter=1, criticality_tolerance=1e-12, callback=record_steps(log))
    (_, s, pred), = log

    def model(step):  # l(0; s) - f(0)
        return grad @ step + penalty * np.maximum(values + jac @ step, 0.0).sum()
    assert np.max(np.abs(s)) <= radius * (1 + 1e-12)
    assert model(s) == pytest.approx(vertex_enumeration_minimum(grad, values, jac, penalty, radius), abs=1e-9)
    assert pred == pytest.approx(model(np.zeros(2)) - model(s), abs=1e-12) and pred >= 0.0


# ----------------------------------------------------------------------------- ratio test and radius
def one_dimensional_quadratic():
    # min x^2 s.t. x - 10 <= 0 (inactive); from x0 = 0.3 the unit step overshoots.
    return ConstrainedProblem(squared_distance([0.0]), [linear([1.0], -10.0)])


def test_rejected_steps_keep_x_and_shrink_the_radius():
    # k = 0: s = -1,    x + s = -0.7, rho = (0.09 - 0.49) / 0.6   = -2/3  -> reject, radius 0.5
    # k = 1: s = -0.5,  x + s = -0.2, rho = (0.09 - 0.04) / 0.3   =  1/6  -> reject, radius 0.25
    # k = 2: s = -0.25, x + s = 0.05, rho = (0.09 - 0.0025) / 0.15 = 7/12 -> accept, radius kept (gamma_2 = 1)
    log = []
    res = exact_penalty_trust_region(one_dimensional_quadratic(), np.array([0.3]), max_iter=3,
                                     callback=record_steps(log))
    h = res.history
    np.testing.assert_allclose(h["rho"], [-2 / 3, 1 / 6, 7 / 12], rtol=1e-12)
    np.testing.assert_array_equal(h["radius"], [1.0, 0.5, 0.25])
    np.testing.assert_array_equal(h["accepted"], [False, False, True])
    np.testing.assert_allclose([x[0] for x, _, _ in log], [0.3, 0.3, 0.05], rtol=1e-15)
    np.testing.assert_allclose(h["objective"], [0.09, 0.09, 0.09])  # f(x_k) before the step
    assert res.info["radius"] == 0.25 and res.counters["rejected_steps"] == 2
    np.testing.assert_array_equal(h["data_passes_f"], [2.0, 3.0, 4.0])  # start + one trial per iteration
    # gamma_2 = 0.5 also shrinks after the accepted rho = 7/12 in [eta1, eta2)
    res = exact_penalty_trust_region(one_dimensional_quadratic(), np.array([0.3]), max_iter=3, gamma_accept=0.5)
    assert res.info["radius"] == 0.125


def test_criticality_uses_the_unit_lp_only_when_the_bounds_do_not_decide():
    # pred(D) / max(1, D) <= psi <= pred(D) / min(1, D); tolerance 0.2 on the problem above:
    # k = 0, D = 1:    psi = pred = 0.6 (no extra LP)
    # k = 1, D = 0.5:  pred = 0.3 > 0.2 -> not critical, psi not computed
    # k = 2, D = 0.25: pred = 0.15 <= 0.2 < 0.6 = pred / D -> unit LP: psi = 0.6 at x = 0.3
    # k = 3, D = 0.25 at x = 0.05: pred / D = 0.1 <= 0.2 -> critical without the unit LP; feasible
    res = exact_penalty_trust_region(one_dimensional_quadratic(), np.array([0.3]), criticality_tolerance=0.2,
                                     record_every=1)
    assert res.status == "converged" and res.n_iter == 4 and res.x[0] == pytest.approx(0.05)
    np.testing.assert_allclose(res.history["criticality"], [0.6, np.nan, 0.6, np.nan], rtol=1e-12)
    assert res.counters["lp_solves"] == 5  # 4 step LPs + 1 unit-radius LP
    assert res.info["criticality_bound"] == pytest.approx(0.1)


def test_very_successful_steps_enlarge_the_radius_only_with_expansion():
    problem = ConstrainedProblem(linear([-1.0]), [linear([1.0], -10.0)])  # rho = 1 on a linear problem
    res = exact_penalty_trust_region(problem, np.zeros(1), max_iter=3)
    np.testing.assert_array_equal(res.history["radius"], [1.0, 1.0, 1.0])
    res = exact_penalty_trust_region(problem, np.zeros(1), max_iter=3, expansion=2.0)
    np.testing.assert_array_equal(res.history["radius"], [1.0, 2.0, 4.0])
    assert res.x[0] == pytest.approx(7.0)


def absolute_value(shift=0.0):
    """The non-smooth term |x| + shift (subgradient sign(x)) in 1-D."""
    def value_and_subgradient(x, out):
        out[:] = np.sign(x)
        return float(abs(x[0]) + shift)
    return custom_term(lambda x: float(abs(x[0]) + shift), value_and_subgradient, 1)


@pytest.mark.parametrize("objective, constraint, status", [
    (absolute_value(), linear([1.0], -10.0), "converged"),              # min |x|: feasible kink at 0
    (linear([0.0]), absolute_value(1.0), "no_feasible_iterate"),        # |x| + 1 <= 0: never feasible
])
def test_kink_collapses_the_radius(objective, constraint, status):
    # At a kink the subgradient model keeps promising a unit decrease (psi = 1) while every step
    # overshoots, so the radius shrinks until min_radius.
    res = exact_penalty_trust_region(ConstrainedProblem(objective, [constraint]), np.array([0.3]), min_radius=1e-6)
    assert res.status == status and res.info["stop_reason"] == "small_radius" and "min_radius" in res.message
    assert abs(res.x[0]) <= 1e-5 and res.info["radius"] < 1e-6 <= res.history["radius"][-1]


def test_callback_stop_and_record_every():
    res = exact_penalty_trust_region(one_dimensional_quadratic(), np.array([0.3]), max_iter=50, record_every=2,
                                     callback=lambda k, x, info: k == 3)
    assert res.status == "callback_stop" and res.n_iter == 4
    np.testing.assert_array_equal(res.history["iteration"], [0, 2, 3])  # the stopping row is always kept


# ----------------------------------------------------------------------------- penalty updates
def test_classic_mode_raises_the_penalty_only_at_a_critical_infeasible_point():
    # sigma = 0.5 < multiplier 1: phi decreases to the box bound -2, where psi = 0 but chi = 3 - 2 = 1,
    # so sigma <- 10 * 0.5 and the run walks back to x = 1.
    res = exact_penalty_trust_region(box_problem(), np.zeros(1), penalty=0.5, penalty_increase=10.0,
                                     penalty_update="classic", record_every=1)
    assert res.status == "converged" and res.x[0] == pytest.approx(1.0, abs=1e-12) and res.n_iter == 6
    np.testing.assert_allclose(res.history["objective"], [0.0, -1.0, -2.0, -1.0, 0.0, 1.0], atol=1e-12)
    np.testing.assert_array_equal(res.history["penalty"], [0.5, 0.5, 5.0, 5.0, 5.0, 5.0])
    assert res.counters["penalty_increases"] == 1
    assert res.history["objective"].min() >= -2.0  # box bounds are LP bounds: never left


def test_steering_mode_raises_the_penalty_before_the_bad_step():
    # At x = 0 with sigma = 0.5 the LP step s = -1 raises the linearized violation (1 -> 2) while the
    # best in the region is 0: 1 - 2 < 0.1 * (1 - 0), so sigma <- 5 and s = +1 reaches x = 1 at once.
    res = exact_penalty_trust_region(box_problem(), np.zeros(1), penalty=0.5, penalty_increase=10.0,
                                     penalty_update="steering")
    assert res.status == "converged" and res.x[0] == pytest.approx(1.0, abs=1e-12) and res.n_iter == 2
    np.testing.assert_allclose(res.history["objective"], [0.0, 1.0], atol=1e-12)
    np.testing.assert_array_equal(res.history["penalty"], [5.0, 5.0])
    assert res.counters["penalty_increases"] == 1


@pytest.mark.parametrize("mode, first_penalties", [("classic", [4.0, 4.0, 12.0]), ("steering", [12.0, 12.0])])
def test_penalty_starts_at_one_over_xi_and_moves_by_factors_of_tau(mode, first_penalties):
    # min 10 x s.t. x >= 1 on [-2, 3] (multiplier 10): sigma_{-1} = 1 / 0.25 = 4 is too small, one
    # increase by tau = 3 suffices; classic raises it at the bound -2, steering at once.
    problem = ConstrainedProblem(linear([10.0]), [linear([-1.0], 1.0)], Box(-2.0, 3.0))
    res = exact_penalty_trust_region(problem, np.zeros(1), steering=0.25, penalty_increase=3.0, penalty_update=mode,
                                     record_every=1)
    assert res.status == "converged" and res.x[0] == pytest.approx(1.0, abs=1e-12)
    penalties = res.history["penalty"]
    np.testing.assert_array_equal(penalties[:len(first_penalties)], first_penalties)
    assert set(penalties) <= {4.0, 12.0} and res.counters["penalty_increases"] == 1


# ----------------------------------------------------------------------------- infeasibility
@pytest.mark.parametrize("mode", MODES)
def test_infeasible_problem_stops_at_an_infeasible_critical_point(mode):
    # x >= 1 and x <= 0: the violation (1 - x)_+ + x_+ is 1 on all of [0, 1], so chi = 0 there.
    problem = ConstrainedProblem(squared_distance([0.0]), [linear([-1.0], 1.0), linear([1.0])])
    res = exact_penalty_trust_region(problem, np.array([0.5]), penalty_update=mode)
    # never feasible: the common status; how it stopped stays in stop_reason
    assert res.status == "no_feasible_iterate" and res.info["stop_reason"] == "infeasible_critical"
    assert res.max_violation == pytest.approx(1.0) and res.x[0] == pytest.approx(0.0, abs=1e-12)
    assert res.n_iter == 2 and not res.success
    assert res.info["best_violation"] == pytest.approx(0.5) and "check_feasibility" in res.message  # at x_0 = 0.5


def test_penalty_cap_stops_without_a_feasible_iterate():
    res = exact_penalty_trust_region(box_problem(), np.zeros(1), penalty=0.5, max_penalty=1.0,
                                     penalty_update="classic")
    assert res.status == "no_feasible_iterate" and res.info["stop_reason"] == "max_penalty"
    assert res.x[0] == -2.0 and res.max_violation == pytest.approx(3.0)
    np.testing.assert_array_equal(res.history["penalty"], 0.5)


# ----------------------------------------------------------------------------- domains
@pytest.mark.parametrize("form", ["squared", "norm"])
def test_ball_is_penalised_not_projected(form):
    a = np.array([3.0, 1.0])
    problem = ConstrainedProblem(squared_distance(a), [], Ball(1.0))
    # One step with a small penalty leaves the ball: at x = 0 both forms have a zero (sub)gradient,
    # so s = (1, 1) and the reported violation is ||x|| - 1 in either form.
    res = exact_penalty_trust_region(problem, np.zeros(2), penalty=0.5, max_iter=1, ball_constraint=form)
    np.testing.assert_array_equal(res.x, [1.0, 1.0])
    assert res.max_violation == pytest.approx(np.sqrt(2.0) - 1.0)
    res = exact_penalty_trust_region(problem, np.zeros(2), ball_constraint=form, criticality_tolerance=1e-9)
    assert res.status == "converged" and res.info["penalized_balls"] == 1
    np.testing.assert_allclose(res.x, a / np.linalg.norm(a), atol=1e-6)
    assert res.counters["penalty_increases"] == 0  # round-off violations do not trigger steering


@pytest.mark.parametrize("form, step", [
    # at x = (0.5, 0) in the unit ball: norm form -0.5 + s1 <= 0; squared form 0.25 - 1 + 2 * 0.5 * s1 <= 0
    ("norm", [0.5, 1.0]), ("squared", [0.75, 1.0]),
])
def test_ball_linearization_in_the_lp_step(form, step):
    problem = ConstrainedProblem(linear([-2.0, -0.1]), [], Ball(1.0))
    log = []
    exact_penalty_trust_region(problem, np.array([0.5, 0.0]), ball_constraint=form, max_iter=1,
                               callback=record_steps(log))
    np.testing.assert_allclose(log[0][1], step, atol=1e-12)


def test_trial_points_are_clipped_into_the_box(monkeypatch):
    real_linprog = exact_penalty_module.linprog

    def outward_linprog(*args, **kwargs):  # an LP solution violating its bounds by 1e-9
        result = real_linprog(*args, **kwargs)
        result.x = result.x - 1e-9
        return result

    monkeypatch.setattr(exact_penalty_module, "linprog", outward_linprog)
    res = exact_penalty_trust_region(box_problem(), np.zeros(1), penalty=0.5, penalty_update="classic", max_iter=2)
    assert res.x[0] == -2.0  # x_1 = -1 - 1e-9, trial -2 - 1e-9 clipped to the bound
    # the model decrease is that of the clipped step, so rho stays exactly 1 on this linear problem
    np.testing.assert_allclose(res.history["rho"][:2], 1.0, rtol=1e-13)


def test_product_domain_keeps_the_box_and_penalises_the_balls():
    a = np.array([1.0, -1.0, 3.0, 1.0, 0.0, 0.5])
    domain = Product([(2, Box(0.0, 0.5)), (4, ProductOfBalls([0, 2, 4], [1.0, 1.0]))])
    problem = ConstrainedProblem(squared_distance(a), [], domain)
    log = []
    res = exact_penalty_trust_region(problem, np.zeros(6), criticality_tolerance=1e-9, callback=record_steps(log))
    x_star = np.concatenate([[0.5, 0.0], a[2:4] / np.linalg.norm(a[2:4]), a[4:]])
    assert res.status == "converged" and res.info["penalized_balls"] == 2
    np.testing.assert_allclose(res.x, x_star, atol=1e-6)
    xs = np.array([x for x, _, _ in log])
    assert xs[:, :2].min() >= 0.0 and xs[:, :2].max() <= 0.5


# ----------------------------------------------------------------------------- real problem, reproducibility
def small_multiclass_problem():
    return multiclass_neyman_pearson(make_multiclass(n_samples=120, n_features=3, n_classes=3, seed=2))


def test_reproducible_and_independent_of_the_seed():
    runs = [exact_penalty_trust_region(small_multiclass_problem(), max_iter=15, seed=seed) for seed in (0, 0, 7)]
    for other in runs[1:]:
        np.testing.assert_array_equal(other.x, runs[0].x)
        assert other.status == runs[0].status and other.n_iter == runs[0].n_iter
        for key, column in runs[0].history.items():
            if key != "time":
                np.testing.assert_array_equal(other.history[key], column, err_msg=key)
    h = runs[0].history
    assert h["objective"][-1] < h["objective"][0]  # the zero model's loss (C - 1) / 2 = 1 is improved
    # every iteration reads the objective once (plus once at the start)
    np.testing.assert_array_equal(h["data_passes_f"], h["iteration"] + 2)
    with pytest.raises(TypeError, match="seed"):
        exact_penalty_trust_region(small_multiclass_problem(), max_iter=1, seed="abc")


def test_features_layout_runs_like_classes_layout():
    """x = vec(W^T) with ColumnBalls: the balls are penalised per class as with ProductOfBalls, and the run
    follows the same path (the LP sees the variables permuted, so x agrees to LP round-off)."""
    data = make_multiclass(n_samples=120, n_features=3, n_classes=3, seed=2)
    runs = [exact_penalty_trust_region(multiclass_neyman_pearson(data, layout=layout), max_iter=15, seed=0)
            for layout in ("classes", "features")]
    by_classes, by_features = runs
    assert by_features.info["penalized_balls"] == by_classes.info["penalized_balls"] == 3
    assert by_features.n_iter == by_classes.n_iter and by_features.status == by_classes.status
    np.testing.assert_allclose(by_features.x.reshape(3, 3).T, by_classes.x.reshape(3, 3), rtol=1e-12, atol=1e-14)
    for key in ("objective", "max_violation"):
        np.testing.assert_allclose(by_features.history[key], by_classes.history[key], rtol=1e-12, atol=1e-14)


def test_lp_failures_are_rejected_steps_not_errors(monkeypatch):
    class Failed:
        status, x = 4, None

    monkeypatch.setattr(exact_penalty_module, "linprog", lambda *args, **kwargs: Failed())
    res = exact_penalty_trust_region(one_dimensional_quadratic(), np.array([0.3]), max_iter=3)
    assert res.status == "max_iter" and res.x[0] == 0.3
    assert res.counters["lp_failures"] == 3 and res.counters["rejected_steps"] == 3
    np.testing.assert_array_equal(res.history["radius"], [1.0, 0.5, 0.25])
    assert np.isnan(res.history["rho"]).all()


# ----------------------------------------------------------------------------- bad input
@pytest.mark.parametrize("kwargs, field", [
    (dict(penalty=0.0), "penalty"),
    (dict(penalty_update="fast"), "penalty_update"), (dict(steering=0.0), "steering"),
    (dict(steering=1.5), "steering"), (dict(penalty_increase=1.0), "penalty_increase"),
    (dict(max_penalty=1.0), "max_penalty"), (dict(max_steering_repeats=-1), "max_steering_repeats"),
    (dict(radius=0.0), "radius"), (dict(radius=np.inf), "radius"), (dict(max_iter=0), "max_iter"),
    (dict(max_iter=2.5), "max_iter"), (dict(eta1=0.0), "eta1"), (dict(eta1=0.8, eta2=0.7), "eta2"),
    (dict(eta2=1.0), "eta2"), (dict(gamma=1.0), "gamma"), (dict(gamma_accept=0.4), "gamma_accept"),
    (dict(gamma_accept=1.5), "gamma_accept"), (dict(expansion=0.5), "expansion"), (dict(min_radius=0.0), "min_radius"),
    (dict(min_radius=2.0), "min_radius"), (dict(criticality_tolerance=0.0), "criticality_tolerance"),
    (dict(criticality_tolerance=np.nan), "criticality_tolerance"),
    (dict(feasibility_tolerance=-1.0), "feasibility_tolerance"), (dict(ball_constraint="cubed"), "ball_constraint"),
    (dict(record_every=0), "record_every"), (dict(max_iter=True), "max_iter"), (dict(max_iter=np.nan), "max_iter"),
    (dict(record_every=1.5), "record_every"), (dict(seed=-1), "seed"),
])
def test_bad_parameters_raise(kwargs, field):
    with pytest.raises(ValueError, match=field):
        exact_penalty_trust_region(box_problem(), np.zeros(1), **kwargs)


@pytest.mark.parametrize("kwargs, field", [(dict(penalty="big"), "penalty"), (dict(callback=3), "callback"),
                                           (dict(max_iter="5"), "max_iter")])
def test_wrong_types_raise_type_errors(kwargs, field):
    with pytest.raises(TypeError, match=f"^{field}"):
        exact_penalty_trust_region(box_problem(), np.zeros(1), **kwargs)


def test_bad_problem_and_start_raise():
    with pytest.raises(ValueError, match="x0"):
        exact_penalty_trust_region(box_problem(), np.zeros(2))
    transport = ConstrainedProblem(linear(np.ones(4)), [], TransportPolytope(2))
    with pytest.raises(ValueError, match="problem: .*TransportPolytope|problem: .*Whole, Box"):
        exact_penalty_trust_region(transport)
    blow_up = custom_term(lambda x: np.inf, lambda x, out: out.fill(0.0) or np.inf, 1)
    with pytest.raises(ValueError, match="x0: .*non-finite"):
        exact_penalty_trust_region(ConstrainedProblem(blow_up, [linear([1.0])]), np.zeros(1))
