"""Near stationarity ([HL23] eqs. 4-5), KKT residual and constraint violation.

Known solution: f(y) = ½||y - a||², g(y) = <c, y> - b, X = ball(R). The subproblem objective is
((1 + rho_hat)/2)||y - u||² + const with u = (a + rho_hat x)/(1 + rho_hat), so x̂ is the projection
of u onto {<c, y> <= b} ∩ ball(R), which has a closed form (`_proj_half_ball`).
"""
import numpy as np
import pytest

from fastcon.datasets import make_fair_classification
from fastcon.metrics._stationarity import constraint_violation, kkt_residual
from fastcon.solvers import near_stationarity
from fastcon.problems import Ball, ConstrainedProblem, custom_term, hinge_risk, less_equal

D = 5


def _quad(a):
    def vs(y, out):
        out[:] = y - a
        return 0.5 * float((y - a) @ (y - a))
    return custom_term(lambda y: 0.5 * float((y - a) @ (y - a)), vs, a.size)


def _affine(c, b):
    def vs(y, out):
        out[:] = c
        return float(c @ y) - b
    return custom_term(lambda y: float(c @ y) - b, vs, c.size)


def _proj_half_ball(u, c, b, R):
    """Projection onto {<c, y> <= b} ∩ {||y|| <= R} (assumed non-empty, |b|/||c|| < R)."""
    half = u - max(0.0, float(c @ u) - b) / float(c @ c) * c
    if np.linalg.norm(half) <= R:
        return half
    ball = u * min(1.0, R / np.linalg.norm(u))
    if c @ ball <= b:
        return ball
    p0 = b / float(c @ c) * c                       # both active: the circle {<c,y> = b, ||y|| = R}
    v = u - float(c @ u) / float(c @ c) * c
    return p0 + np.sqrt(R * R - p0 @ p0) * v / np.linalg.norm(v)


def _setup(a_scale, b, R=2.0, seed=0):
    rng = np.random.default_rng(seed)
    a, c = a_scale * rng.standard_normal(D), rng.standard_normal(D)
    return ConstrainedProblem(_quad(a), [_affine(c, b)], domain=Ball(R)), a, c, b, R


# (a_scale, b, R): interior, ball only, half-space only, both (twice); see test_cases_cover_every_active_set.
CASES = [(0.3, 5.0, 2.0), (6.0, 20.0, 2.0), (3.0, 0.3, 100.0), (6.0, -1.0, 2.0), (8.0, 0.5, 1.5)]


@pytest.mark.parametrize("a_scale,b,R", CASES)
@pytest.mark.parametrize("rho_hat", [0.5, 2.0])
def test_closed_form_prox(a_scale, b, R, rho_hat):
    prob, a, c, _, R = _setup(a_scale, b, R)
    x = prob.project(np.random.default_rng(1).standard_normal(D))
    truth = _proj_half_ball((a + rho_hat * x) / (1 + rho_hat), c, b, R)
    res = near_stationarity(prob, x, rho_hat, return_details=True)
    err = np.linalg.norm(res["x_hat"] - truth)
    # The stated tolerance: 'change' estimates the error from above, 'error_bound' bounds it when
    # x̂ is feasible (g <= 0); both are checked against the truth.
    both_active = abs(c @ truth - b) < 1e-9 and abs(np.linalg.norm(truth) - R) < 1e-9
    # Ball and half-space both active: the ball projection and the Polyak step alternate, so the
    # iterates converge like 1/J instead of fast (documented); the estimate still covers the error.
    assert err <= res["change"] + 1e-14 and err <= (1e-2 if both_active else 1e-4)
    if res["g"] <= 0:
        assert err <= res["error_bound"] + 1e-14
    assert abs(res["distance"] - np.linalg.norm(truth - x)) <= err + 1e-15
    assert res["g"] <= 1e-10 and res["status"] in ("converged", "max_iter")
    last = near_stationarity(prob, x, rho_hat, return_details=True, output="last")
    assert np.linalg.norm(last["x_hat"] - truth) <= (1e-2 if both_active else 1e-6)


def test_cases_cover_every_active_set():
    kinds = set()
    for a_scale, b, R in CASES:
        prob, a, c, _, R = _setup(a_scale, b, R)
        x = prob.project(np.random.default_rng(1).standard_normal(D))
        for rho_hat in (0.5, 2.0):
            xh = _proj_half_ball((a + rho_hat * x) / (1 + rho_hat), c, b, R)
            kinds.add((bool(abs(c @ xh - b) < 1e-9), bool(abs(np.linalg.norm(xh) - R) < 1e-9)))
    assert kinds == {(False, False), (True, False), (False, True), (True, True)}


def test_tolerance_stops_early():
    prob, *_ = _setup(3.0, 0.3)
    x = prob.project(np.ones(D))
    res = near_stationarity(prob, x, 1.0, tol=1e-3, max_iter=100000, return_details=True, window=20)
    assert res["status"] == "converged" and res["change"] <= 1e-3 and res["n_iter"] < 5000


@pytest.mark.parametrize("a_scale,b,R", CASES)
def test_stationary_point_has_zero_distance(a_scale, b, R):
    prob, a, c, _, R = _setup(a_scale, b, R)
    x_star = _proj_half_ball(a, c, b, R)              # the minimiser of f over the feasible set
    res = near_stationarity(prob, x_star, 1.0, return_details=True)
    # Interior / one active piece: exact to round-off. Ball and half-space both active: the
    # alternating projections make the average converge like 1/J; the estimate still covers it.
    assert res["distance"] <= res["change"] + 1e-14 and res["distance"] <= 1e-2
    assert np.linalg.norm(res["x_hat"] - x_star) == res["distance"]
    last, _ = near_stationarity(prob, x_star, 1.0, output="last")
    assert last <= 1e-2


def test_counters_untouched_and_deterministic():
    ds = make_fair_classification(n_samples=200, n_features=4, noise=1.0, seed=3)
    f, h = hinge_risk(ds), hinge_risk(ds)
    prob = ConstrainedProblem(f, [less_equal(h, 0.7)], domain=Ball(5.0))
    w = np.array([0.5, -0.2, 0.1, 0.3])
    f.value(w)
    h.value(w)
    h.value(w)
    before = (prob.rows_read_f, prob.rows_read_g)
    r1 = near_stationarity(prob, w, 1.0, max_iter=300, return_details=True)
    r2 = near_stationarity(prob, w, 1.0, max_iter=300, return_details=True)
    assert (prob.rows_read_f, prob.rows_read_g) == before == (200, 400)
    np.testing.assert_array_equal(r1["x_hat"], r2["x_hat"])
    assert r1["g"] <= 1e-10 and np.isfinite(r1["distance"])
    kkt_residual(prob, w, 0.5)
    constraint_violation(prob, w)
    assert (prob.rows_read_f, prob.rows_read_g) == before


def test_kkt_residual_and_violation():
    prob, a, c, b, R = _setup(3.0, 0.3, R=100.0)      # ball inactive: x* = a - lam c
    lam = (c @ a - b) / (c @ c)
    assert lam > 0
    x_star = a - lam * c
    res = kkt_residual(prob, x_star, lam)
    assert res["max"] <= 1e-12
    off = kkt_residual(prob, x_star, 2 * lam)
    assert off["stationarity"] == pytest.approx(lam * np.linalg.norm(c), rel=1e-12)
    assert kkt_residual(prob, a, 0.0)["feasibility"] == pytest.approx(c @ a - b)
    assert kkt_residual(prob, x_star, -1.0)["dual_feasibility"] == 1.0
    assert constraint_violation(prob, a) == pytest.approx(c @ a - b)
    assert constraint_violation(prob, x_star - c) == 0.0
    np.testing.assert_allclose(constraint_violation(prob, a, per_constraint=True), [c @ a - b])
    # On the ball's boundary the outward normal absorbs a gradient pointing out of the ball.
    prob2 = ConstrainedProblem(_quad(np.full(D, 10.0)), [], domain=Ball(1.0))
    y = np.full(D, 1 / np.sqrt(D))
    assert kkt_residual(prob2, y, np.zeros(0))["stationarity"] <= 1e-12
    with pytest.raises(ValueError, match="multipliers"):
        kkt_residual(prob, x_star, [1.0, 2.0])


def test_infeasible_and_bad_input():
    one = custom_term(lambda y: 1.0, lambda y, out: (out.fill(0.0), 1.0)[1], D)
    prob = ConstrainedProblem(_quad(np.zeros(D)), [one], domain=Ball(1.0))
    with pytest.warns(RuntimeWarning, match="no iterate"):
        res = near_stationarity(prob, np.zeros(D), 1.0, return_details=True)
    assert res["status"] == "no_feasible_iterate"
    with pytest.raises(ValueError, match="rho_hat"):
        near_stationarity(prob, np.zeros(D), 0.0)
    with pytest.raises(ValueError, match="x:"):
        near_stationarity(prob, np.zeros(D + 1), 1.0)


def test_a_zero_constraint_subgradient_after_objective_steps_is_infeasible_stationary():
    # g = -1 inside the ball of radius 0.5, +1 outside, subgradient 0: the first objective step from 0
    # towards a = (10, ..., 10) leaves the ball, where g is violated and its subgradient is zero.
    def step(y, out):
        out.fill(0.0)
        return 1.0 if np.linalg.norm(y) > 0.5 else -1.0
    jump = custom_term(lambda y: 1.0 if np.linalg.norm(y) > 0.5 else -1.0, step, D)
    prob = ConstrainedProblem(_quad(np.full(D, 10.0)), [jump])
    res = near_stationarity(prob, np.zeros(D), 1.0, return_details=True)
    assert res["n_objective_steps"] == 1
    assert res["status"] == "infeasible_stationary"


@pytest.mark.parametrize("field, value, error", [
    ("feasibility_tolerance", float("nan"), ValueError), ("feasibility_tolerance", -1.0, ValueError),
    ("tol", float("nan"), ValueError), ("tol", "small", TypeError),
    ("window", 0, ValueError), ("window", 2.5, ValueError), ("max_iter", 2.5, ValueError), ("max_iter", 0, ValueError),
])
def test_the_numeric_arguments_are_checked_under_their_own_name(field, value, error):
    prob = ConstrainedProblem(_quad(np.zeros(D)), [_affine(np.ones(D), 1.0)])
    with pytest.raises(error, match=f"^{field}:"):
        near_stationarity(prob, np.zeros(D), 1.0, **{field: value})
