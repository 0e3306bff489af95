"""ConEx (Boob–Deng–Lan, multiplicative convention): reference loop, known solutions, options."""
import numpy as np
import pytest
from scipy.optimize import minimize

from fastcon.datasets._synthetic import make_fair_classification
from fastcon.problems import Ball, ConstrainedProblem, custom_term, hinge_risk, less_equal
from fastcon.solvers import conex, inverse_sqrt, linear, prox_weights_to_steps

A = np.array([1.0, 0.5, -0.5])


def quad_term(a):
    def vs(x, out):
        out[:] = 2 * (x - a)
        return float((x - a) @ (x - a))
    return custom_term(lambda x: float((x - a) @ (x - a)), vs, a.size)


def linear_term(c, b):
    def vs(x, out):
        out[:] = c
        return float(c @ x - b)
    return custom_term(lambda x: float(c @ x - b), vs, c.size)


def norm_term(r):
    """g(x) = |x|^2 - r^2 (convex, non-linear: linearized and exact extrapolation differ)."""
    def vs(x, out):
        out[:] = 2 * x
        return float(x @ x - r * r)
    return custom_term(lambda x: float(x @ x - r * r), vs, 3)


def halfspace_problem():
    c, b = np.array([1.0, 1.0, 0.0]), 0.5
    return ConstrainedProblem(quad_term(A), [linear_term(c, b)], Ball(10.0)), c, b


def test_reaches_halfspace_projection_and_multiplier():
    problem, c, b = halfspace_problem()
    x_star = A - (c @ A - b) / (c @ c) * c             # projection of a onto the halfspace
    lam_star = 2 * (c @ A - b) / (c @ c)                # 2 (x* - a) + lam c = 0
    res = conex(problem, max_iter=4000, primal_step=0.05, dual_step=0.5, record_every=100)
    assert res.status == "max_iter"
    np.testing.assert_allclose(res.x, x_star, atol=1e-3)
    np.testing.assert_allclose(res.multipliers, [lam_star], atol=1e-3)
    assert res.max_violation <= 1e-3
    avg = conex(problem, max_iter=4000, primal_step=0.05, dual_step=0.5, output="average", record_every=100)
    np.testing.assert_allclose(avg.x, x_star, atol=2e-2)
    # linear g: the linearization is exact, so both extrapolations coincide
    ex = conex(problem, max_iter=300, primal_step=0.05, dual_step=0.5, extrapolation="exact")
    li = conex(problem, max_iter=300, primal_step=0.05, dual_step=0.5)
    np.testing.assert_allclose(ex.x, li.x, rtol=1e-12, atol=1e-14)


def test_multiple_constraints_against_slsqp():
    c1, c2 = np.array([1.0, 1.0, 0.0]), np.array([0.0, 1.0, -1.0])
    problem = ConstrainedProblem(quad_term(A), [linear_term(c1, 0.5), linear_term(c2, -0.2), norm_term(1.5)],
                                 Ball(10.0))
    ref = minimize(lambda x: (x - A) @ (x - A), np.zeros(3), method="SLSQP", tol=1e-12,
                   constraints=[{"type": "ineq", "fun": lambda x: 0.5 - c1 @ x},
                                {"type": "ineq", "fun": lambda x: -0.2 - c2 @ x},
                                {"type": "ineq", "fun": lambda x: 2.25 - x @ x}])
    res = conex(problem, max_iter=6000, primal_step=0.03, dual_step=0.5, record_every=500)
    assert res.multipliers.shape == (3,)
    np.testing.assert_allclose(res.x, ref.x, atol=2e-3)
    assert res.multipliers[2] < 1e-6 < res.multipliers[0]   # the ball constraint is inactive


def conex_reference(x0, f_grad, g_val, g_grad, eta, tau, theta, T):
    """Plain ConEx loop ([BDL22]; one constraint, linearized extrapolation, multiplicative steps)."""
    x, y = x0.copy(), 0.0
    ell_prev = ell = g_val(x)
    xs, ys = [], []
    for t in range(T):
        s = (1 + theta) * ell - theta * ell_prev
        y = max(0.0, y + tau(t) * s)
        x_new = x - eta(t) * (f_grad(x) + y * g_grad(x))
        x_new = x_new / max(1.0, np.linalg.norm(x_new) / 10.0)
        ell_prev, ell = ell, g_val(x) + g_grad(x) @ (x_new - x)
        x = x_new
        xs.append(x.copy())
        ys.append(y)
    return np.array(xs), np.array(ys)


def test_matches_reference_loop():
    problem = ConstrainedProblem(quad_term(A), [norm_term(0.8)], Ball(10.0), x0=np.array([2.0, 0.0, 1.0]))
    xs, ys = [], []
    conex(problem, max_iter=200, primal_step=inverse_sqrt(0.1), dual_step=2.0, theta=0.7,
          callback=lambda t, x, info: xs.append(x.copy()) or ys.append(info["y"][0]) and False)
    ref_x, ref_y = conex_reference(problem.x0, lambda x: 2 * (x - A), lambda x: x @ x - 0.64, lambda x: 2 * x,
                                   lambda t: 0.1 / np.sqrt(t + 1), lambda t: 2.0, 0.7, 200)
    np.testing.assert_allclose(xs, ref_x, rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(ys, ref_y, rtol=1e-12, atol=1e-13)


def test_prox_weight_conversion():
    primal, dual = prox_weights_to_steps(linear(20.0), lambda k: 0.01 / (k + 1))
    assert primal(0) == pytest.approx(1 / 20) and primal(3) == pytest.approx(1 / 80)
    assert dual(0) == pytest.approx(100) and dual(4) == pytest.approx(500)
    np.testing.assert_allclose(primal.values(3), [1 / 20, 1 / 40, 1 / 60])


def test_stochastic_objective_on_hinge_risk_is_reproducible():
    ds = make_fair_classification(n_samples=300, n_features=5, seed=1)
    risk = hinge_risk(ds)
    problem = ConstrainedProblem(hinge_risk(ds), [less_equal(norm_term_5(), 2.0)], Ball(3.0))
    kw = dict(max_iter=200, primal_step=0.05, dual_step=1.0, objective_oracle="stochastic",
              objective_batch_size=10, seed=4, record_every=50)
    a, b = conex(problem, **kw), conex(problem, **kw)
    np.testing.assert_array_equal(a.x, b.x)
    assert a.counters["data_passes_f"] == pytest.approx(200 * 10 / risk.n_samples)
    assert a.history["objective"][-1] < a.history["objective"][0]
    with pytest.raises(ValueError, match="extrapolation"):
        conex(problem, extrapolation="none")


def norm_term_5():
    def vs(x, out):
        out[:] = 2 * x
        return float(x @ x)
    return custom_term(lambda x: float(x @ x), vs, 5)
