"""IQRC (Ma, Lin & Yang [MLY20] Algorithms 1-3, Remark 1) on small problems with known solutions."""
import numpy as np
import pytest
from scipy.optimize import minimize

from fastcon.datasets import make_fair_classification
from fastcon.problems import Ball, Box, ConstrainedProblem, custom_term, less_equal, logistic_risk
from fastcon.solvers.iqrc import iqrc, iqrc_step_size
from fastcon.solvers.online_stochastic import online_stochastic_subgradient
from fastcon.solvers.proximal_point import proximal_point


def quadratic_term(center, scale=1.0):
    """``scale * ||x - center||^2``."""
    center = np.asarray(center, dtype=float)

    def value(x):
        return scale * float((x - center) @ (x - center))

    def vs(x, out):
        out[:] = 2 * scale * (x - center)
        return value(x)
    return custom_term(value, vs, center.size)


# ---------------------------------------------------------------------------- convex: hinge + ball
# min ||x - A||^2  s.t.  max(0, 0.5 - x_1) - 0.1 <= 0 (i.e. x_1 >= 0.4),  ||x|| <= 1.
# Both the ball and the constraint are active: x* = (sqrt(1 - 0.16), 0.4, 0).
A_HINGE = np.array([2.0, 0.0, 0.0])
X_HINGE = np.array([np.sqrt(0.84), 0.4, 0.0])


def hinge_constraint_value(x):
    return max(0.0, 0.5 - x[1]) - 0.1


def hinge_constraint_vs(x, out):
    out[:] = 0.0
    out[1] = -1.0 if x[1] < 0.5 else 0.0
    return hinge_constraint_value(x)


def hinge_problem(x0=(0.0, 1.0, 0.0)):
    return ConstrainedProblem(quadratic_term(A_HINGE), [custom_term(hinge_constraint_value, hinge_constraint_vs, 3)],
                              Ball(1.0), x0=np.array(x0))


# ---------------------------------------------------------------------------- convex: linear, inactive ball
A_LIN, C_LIN, B_LIN = np.array([1.0, 0.5, -0.5]), np.array([1.0, 1.0, 0.0]), 0.5
X_LIN = A_LIN - (C_LIN @ A_LIN - B_LIN) / (C_LIN @ C_LIN) * C_LIN
LAMBDA_LIN = 2 * (C_LIN @ A_LIN - B_LIN) / (C_LIN @ C_LIN)   # KKT multiplier (= 1)


def linear_problem():
    def gvs(x, out):
        out[:] = C_LIN
        return float(C_LIN @ x - B_LIN)
    return ConstrainedProblem(quadratic_term(A_LIN), [custom_term(lambda x: float(C_LIN @ x - B_LIN), gvs, 3)],
                              Ball(10.0))


# ---------------------------------------------------------------------------- weakly convex constraint 1 - ||x||^2
def ring_problem(center, x0, lo=-2.0, hi=2.0):
    """min ||x - c||^2 / 2  s.t.  1 - ||x||^2 <= 0 (rho = 2) over the box [lo, hi]^d."""
    center = np.asarray(center, dtype=float)

    def gvs(x, out):
        out[:] = -2 * x
        return 1 - float(x @ x)
    return ConstrainedProblem(quadratic_term(center, 0.5), [custom_term(lambda x: 1 - float(x @ x), gvs, center.size)],
                              Box(lo, hi), x0=np.asarray(x0, dtype=float))


def assert_outer_iterates_feasible(res, problem, threshold, in_domain):
    xs = res.info["outer_iterates"]
    g = np.array([problem.g(x)[0] for x in xs])
    assert np.all(g <= threshold), g.max()
    assert all(in_domain(x) for x in xs)


# ---------------------------------------------------------------------------- Algorithm 1 + 2
def test_iqrc_reaches_solution_and_every_outer_iterate_is_feasible():
    problem = hinge_problem()
    # switching_level read as eps_hat (threshold eps_hat^2 = 1e-4), the paper's reading
    res = iqrc(problem, rho_hat=1.0, switching_level=1e-2, level_reading="eps_hat", outer_iter=30, inner_iter=1000,
               record_every=50)
    assert res.status == "max_iter" and res.n_iter == 30000 and res.solver == "iqrc[switching]"
    np.testing.assert_allclose(res.x, X_HINGE, atol=3e-3)   # the inner error is O(1/K): 6e-3 at K = 300
    # feasibility invariant: g(x_t) <= G_{t-1}(x_t) <= eps_hat^2 and x_t in X for every outer t
    assert_outer_iterates_feasible(res, problem, 1e-4, lambda x: np.linalg.norm(x) <= 1.0 + 1e-12)
    assert res.info["phase_one"]["status"] == "not_needed" and res.info["switching_threshold"] == 1e-4
    # the outer history: one row per outer iterate, cumulative inner iterations, metrics of (f, g)
    oh, xs = res.info["outer_history"], res.info["outer_iterates"]
    np.testing.assert_array_equal(oh["outer"], np.arange(31))
    np.testing.assert_array_equal(oh["iteration"], 1000 * np.arange(31))
    np.testing.assert_allclose(oh["objective"], [problem.f(x) for x in xs])
    np.testing.assert_allclose(oh["constraint"], [problem.g(x)[0] for x in xs])
    np.testing.assert_allclose(oh["step_norm"][1:], np.linalg.norm(np.diff(xs, axis=0), axis=1))
    assert np.all(np.diff(oh["time"]) >= 0) and np.all(np.diff(oh["wall_time"]) >= 0)
    np.testing.assert_array_equal(oh["data_passes_g"], 1000 * np.arange(31))  # one g pass per inner step
    # the outer time axis is the clock of the concatenated inner history: x_{t+1} is timed at the
    # last (always recorded) iteration of inner solve t
    ends = res.history["iteration"] % 1000 == 999
    np.testing.assert_allclose(res.history["time"][ends], oh["time"][1:], rtol=1e-12)
    assert res.history["iteration"][-1] == 29999 and res.counters["outer_iterations"] == 30


def test_iqrc_is_the_proximal_point_preset_of_algorithm_2():
    """One implementation: IPP with prox on the constraint, gamma_k = 2/(mu(k+2)), threshold eps_hat^2."""
    kw = dict(outer_iter=4, inner_iter=50, seed=5)
    res = iqrc(hinge_problem(), rho_hat=2.0, rho=0.5, switching_level=0.05 ** 2, record_every=1, **kw)
    ref = proximal_point(hinge_problem(), rho_hat=2.0, prox_on_constraint=True,
                         inner_params=dict(step_size=lambda k: 2.0 / (1.5 * (k + 2)), switching_level=0.05 ** 2),
                         record_every=1, **kw)
    np.testing.assert_array_equal(res.x, ref.x)
    np.testing.assert_array_equal(res.history["objective"], ref.history["objective"])
    np.testing.assert_array_equal(res.info["outer_iterates"], ref.info["outer_iterates"])
    assert res.info["mu"] == 1.5 and res.info["rho"] == 0.5
    same = iqrc(hinge_problem(), rho_hat=2.0, mu=1.5, switching_level=0.05, level_reading="eps_hat", record_every=1,
                **kw)
    np.testing.assert_array_equal(same.x, res.x)
    default = iqrc(hinge_problem(), rho_hat=2.0, switching_level=0.05, **kw)   # default rho = 0: mu = rho_hat
    assert default.info["mu"] == 2.0 and not np.array_equal(default.x, res.x)
    np.testing.assert_allclose(iqrc_step_size(0.5).values(3), [2.0, 4.0 / 3.0, 1.0])


def test_weakly_convex_1d_prox_sequence():
    """f = x^2/2, g = 1 - x^2 on [-2, 2], rho_hat = 3: exact x_t = 2, 1.5, 1.125, ... -> 1."""
    problem = ring_problem([0.0], [2.0])
    res = iqrc(problem, rho_hat=3.0, rho=2.0, switching_level=1e-3, outer_iter=8, inner_iter=2000, record_every=500)
    xs = res.info["outer_iterates"][:, 0]
    np.testing.assert_allclose(xs[:3], [2.0, 1.5, 1.125], atol=2e-3)
    assert abs(res.x[0] - 1.0) < 5e-3
    assert_outer_iterates_feasible(res, problem, 1e-6, lambda x: abs(x[0]) <= 2.0)


def test_weakly_convex_ring_reaches_kkt_point_with_near_monotone_objective():
    """c = (0.3, 0.4), from (2, 2) IQRC reaches x* = c / ||c|| = (0.6, 0.8)."""
    problem = ring_problem([0.3, 0.4], [2.0, 2.0])
    res = iqrc(problem, rho_hat=3.0, rho=2.0, switching_level=1e-2, outer_iter=40, inner_iter=400, record_every=400)
    np.testing.assert_allclose(res.x, [0.6, 0.8], atol=1e-2)
    assert_outer_iterates_feasible(res, problem, 1e-4, lambda x: np.all(np.abs(x) <= 2.0))
    # near-monotone descent ([MLY20] eqs. (15)-(17)): f(x_{t+1}) <= f(x_t) + lambda_t g(x_t) + eps_hat^2
    # with g(x_t) <= eps_hat^2
    assert np.all(np.diff(res.info["outer_history"]["objective"]) <= 5e-4)


def test_level_readings():
    """"threshold" (default): switching_level itself is the switching threshold, as in switching_subgradient;
    "eps_hat" (the old default, kept for the paper's reading): threshold = switching_level^2."""
    problem = linear_problem()
    kw = dict(rho_hat=1.0, switching_level=0.1, outer_iter=10, inner_iter=300)
    squared, direct = iqrc(problem, level_reading="eps_hat", **kw), iqrc(problem, **kw)
    assert direct.info["level_reading"] == "threshold"
    assert squared.info["switching_threshold"] == pytest.approx(0.01) and direct.info["switching_threshold"] == 0.1
    g_squared = squared.info["outer_history"]["constraint"]
    g_direct = direct.info["outer_history"]["constraint"]
    assert g_squared.max() <= 0.01 and g_direct.max() <= 0.1
    assert g_direct.max() > 0.01   # the looser threshold is the one used


def test_output_random_draws_uniform_outer_index():
    kw = dict(rho_hat=1.0, switching_level=1e-2, outer_iter=6, inner_iter=20, output="random")
    draws = []
    for seed in range(12):
        res = iqrc(hinge_problem(), seed=seed, **kw)
        R = res.info["R"]
        assert 0 <= R <= 5   # Theorem 1's range {0..T-1}
        np.testing.assert_array_equal(res.x, res.info["outer_iterates"][R])
        assert res.objective == pytest.approx(hinge_problem().f(res.x))
        draws.append(R)
    assert len(set(draws)) >= 3
    assert iqrc(hinge_problem(), seed=3, **kw).info["R"] == draws[3]
    last = iqrc(hinge_problem(), **{**kw, "output": "last"})
    assert last.info["R"] == 6
    np.testing.assert_array_equal(last.x, last.info["outer_iterates"][-1])


def test_callback_stops_and_sees_original_metrics():
    seen = []

    def stop(t, x, info):
        seen.append((info["objective"], info["max_violation"], x.copy()))
        return t == 1
    res = iqrc(hinge_problem(), rho_hat=1.0, outer_iter=10, inner_iter=30, callback=stop)
    assert res.status == "callback_stop" and len(seen) == 2 and res.n_iter == 60
    assert res.info["outer_iterates"].shape == (3, 3)
    f, v, x = seen[-1]
    assert f == pytest.approx(hinge_problem().f(x)) and v == hinge_problem().max_violation(x)


# ---------------------------------------------------------------------------- Phase I (Remark 1)
def test_phase_one_from_infeasible_start():
    # 1-D ring from x0 = 0.5: g = 0.75, zeta = -1; one Polyak step lands at x = 1.25 (g < 0)
    problem = ring_problem([0.0], [0.5])
    res = iqrc(problem, rho_hat=3.0, rho=2.0, switching_level=1e-6, outer_iter=6, inner_iter=1000)
    phase = res.info["phase_one"]
    assert phase["status"] == "feasible" and phase["n_iter"] == 1
    np.testing.assert_allclose(phase["constraint"], [0.75, 1 - 1.25 ** 2])
    assert res.info["outer_iterates"][0, 0] == pytest.approx(1.25)
    assert abs(res.x[0] - 1.0) < 5e-3 and res.status == "max_iter"
    assert res.counters["phase_one_iterations"] == 1
    # Phase I stops at the first iterate with g <= tau: constant step 0.1 gives x_{t+1} = 1.2 x_t,
    # g = 0.75, 0.64, 0.4816, 0.2535, ...; tau = 0.3 (the "threshold" reading) stops at x = 0.864
    res = iqrc(problem, rho_hat=3.0, rho=2.0, switching_level=0.3, level_reading="threshold", outer_iter=1,
               inner_iter=10, phase_one_step_size=0.1)
    assert res.info["phase_one"]["n_iter"] == 3 and res.info["outer_iterates"][0, 0] == pytest.approx(0.864)
    # hinge problem from 0 (g = 0.4) with a plain constant step: Phase I, then feasible outer iterates
    problem = hinge_problem(x0=(0.0, 0.0, 0.0))
    res = iqrc(problem, rho_hat=1.0, switching_level=1e-4, outer_iter=20, inner_iter=200, phase_one_step_size=0.05)
    phase = res.info["phase_one"]
    assert phase["status"] == "feasible" and phase["n_iter"] == 8   # x_1 rises by 0.05 per step to 0.4
    assert hinge_constraint_value(res.info["outer_iterates"][0]) <= 1e-4
    assert_outer_iterates_feasible(res, problem, 1e-4, lambda x: np.linalg.norm(x) <= 1.0 + 1e-12)
    np.testing.assert_allclose(res.x, X_HINGE, atol=1e-2)
    # Phase I reads g at x_0..x_8, then one fused g pass per inner iteration
    assert res.counters["rows_g"] == (8 + 1) + 20 * 200


def test_phase_one_failure_reports_its_status():
    # x0 = 0 is a stationary point of g = 1 - x^2 with g = 1: Remark 1's infeasible stationary point
    res = iqrc(ring_problem([0.0], [0.0]), rho_hat=3.0, rho=2.0, outer_iter=3, inner_iter=10)
    assert res.status == "infeasible_stationary" and res.info["phase_one"]["status"] == "infeasible_stationary"
    assert res.max_violation == 1.0 and res.n_iter == 0 and not res.success
    np.testing.assert_array_equal(res.history["constraint"], [1.0])
    # budget exhausted: tiny constant steps cannot reach g <= tau; the lowest-g point is returned
    res = iqrc(ring_problem([0.0], [0.5]), rho_hat=3.0, rho=2.0, outer_iter=3, inner_iter=10,
               phase_one_iter=5, phase_one_step_size=1e-3)
    phase = res.info["phase_one"]
    assert res.status == "no_feasible_iterate" and phase["status"] == "undecided" and phase["n_iter"] == 5
    assert res.n_iter == 5 and res.counters["phase_one_iterations"] == 5
    np.testing.assert_array_equal(res.history["iteration"], np.arange(6))
    np.testing.assert_array_equal(res.history["constraint"], phase["constraint"])
    assert res.x[0] == pytest.approx(0.5 * 1.002 ** 5) and res.max_violation == pytest.approx(phase["final_constraint"])
    assert "Phase I" in res.message and "check_feasibility" in res.message
    # g = |x - 1| + 0.5 > 0 everywhere; steps of 0.3 from 0 overshoot 1: g = 1.5, 1.2, 0.9, 0.6, 0.7.
    # The returned point is the lowest-g iterate x = 0.9, not the last one (1.2).
    def abs_vs(x, out):
        out[:] = np.sign(x - 1.0)
        return abs(x[0] - 1.0) + 0.5
    never = ConstrainedProblem(quadratic_term([0.0]), [custom_term(lambda x: abs(x[0] - 1.0) + 0.5, abs_vs, 1)],
                               Box(-2.0, 2.0), x0=np.zeros(1))
    res = iqrc(never, phase_one_iter=4, phase_one_step_size=0.3)
    np.testing.assert_allclose(res.info["phase_one"]["constraint"], [1.5, 1.2, 0.9, 0.6, 0.7])
    assert res.status == "no_feasible_iterate" and res.x[0] == pytest.approx(0.9)
    assert res.max_violation == pytest.approx(0.6)
    # phase_one=False runs IQRC from the infeasible start as asked
    res = iqrc(ring_problem([0.0], [0.5]), rho_hat=3.0, rho=2.0, outer_iter=3, inner_iter=200, phase_one=False)
    assert res.info["phase_one"]["status"] == "skipped" and res.status == "max_iter"
    assert res.info["outer_iterates"][0, 0] == 0.5


# ---------------------------------------------------------------------------- Algorithm 3
P_ROWS, Q_ROWS = np.array([[1.0, 0.5, 0.0], [0.0, 1.0, 1.0], [1.0, -1.0, 0.5], [0.5, 0.5, 0.5], [2.0, 0.0, -1.0]]), \
    np.array([0.2, 0.4, -0.1, 0.3, 0.5])
A_ROWS = np.random.default_rng(3).normal(size=(8, 3))


def finite_sum_problem():
    """f = mean_j ||x - a_j||^2 (8 rows); g_1 = mean_j p_j x - q_j (5 rows); g_2 = x_0 + x_2 - 0.3 (full)."""
    def f_rows(x, rows, out=None):
        diff = x - A_ROWS[rows]
        if out is not None:
            out[:] = 2 * diff.mean(0)
        return float((diff ** 2).sum(1).mean())

    def g_rows(x, rows, out=None):
        if out is not None:
            out[:] = P_ROWS[rows].mean(0)
        return float((P_ROWS[rows] @ x - Q_ROWS[rows]).mean())
    all_f, all_g = np.arange(8), np.arange(5)
    objective = custom_term(lambda x: f_rows(x, all_f), lambda x, out: f_rows(x, all_f, out), 3, n_samples=8,
                            value_rows=f_rows, value_and_subgradient_rows=f_rows)
    g1 = custom_term(lambda x: g_rows(x, all_g), lambda x, out: g_rows(x, all_g, out), 3, n_samples=5,
                     value_rows=g_rows, value_and_subgradient_rows=g_rows)
    c2 = np.array([1.0, 0.0, 1.0])

    def g2vs(x, out):
        out[:] = c2
        return float(c2 @ x - 0.3)
    g2 = custom_term(lambda x: float(c2 @ x - 0.3), g2vs, 3)
    return ConstrainedProblem(objective, [g1, g2], Ball(1.5), x0=np.array([1.0, 1.0, 0.0])), f_rows, g_rows, c2


def online_reference(K, V, alpha, seed, batch_f, batch_g):
    """Algorithm 3 straight from the pseudo-code, streams as documented (rows = floor(u * n))."""
    problem, f_rows, g_rows, c2 = finite_sum_problem()
    ss = np.random.SeedSequence(seed)
    rng_f, rng_g = (np.random.default_rng(np.random.SeedSequence(ss.entropy, spawn_key=(i,))) for i in range(2))
    z, Q = problem.x0.copy(), np.zeros(2)
    zs, Qs = [z.copy()], [Q.copy()]
    for _ in range(K):
        zeta0 = np.empty(3)
        f_rows(z, np.floor(rng_f.random(batch_f) * 8).astype(int), zeta0)
        u = rng_g.random(batch_g)
        zeta = np.empty((2, 3))
        theta = np.array([g_rows(z, np.floor(u * 5).astype(int), zeta[0]), c2 @ z - 0.3])
        zeta[1] = c2
        step = z - (V * zeta0 + Q @ zeta) / (2 * alpha)
        z_next = step * min(1.0, 1.5 / np.linalg.norm(step))
        Q = np.maximum(Q + theta + zeta @ (z_next - z), 0.0)
        z = z_next
        zs.append(z.copy())
        Qs.append(Q.copy())
    return np.array(zs), np.array(Qs)


@pytest.mark.parametrize("V, alpha", [(None, None), (3.0, 50.0)])
def test_online_matches_reference_loop(V, alpha):
    K = 60
    zs, Qs = [finite_sum_problem()[0].x0.copy()], [np.zeros(2)]

    def collect(k, z, info):
        zs.append(z.copy())
        Qs.append(info["queues"].copy())
    res = online_stochastic_subgradient(finite_sum_problem()[0], max_iter=K, V=V, prox_weight=alpha, objective_batch_size=3,
                                        constraint_batch_size=2, seed=4, callback=collect, record_every=1)
    V_used, alpha_used = (np.sqrt(K), float(K)) if V is None else (V, alpha)
    assert res.info["V"] == V_used and res.info["prox_weight"] == alpha_used
    ref_z, ref_Q = online_reference(K, V_used, alpha_used, 4, 3, 2)
    np.testing.assert_allclose(zs, ref_z, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(Qs, ref_Q, rtol=1e-12, atol=1e-14)
    assert np.all(ref_Q >= 0) and np.any(ref_Q > 0) and np.all(np.linalg.norm(ref_z, axis=1) <= 1.5 + 1e-12)
    np.testing.assert_allclose(res.x, ref_z[:-1].mean(0), rtol=1e-12)   # uniform average of z_0..z_{K-1}
    np.testing.assert_allclose(res.multipliers, ref_Q[-1] / V_used)
    # history: exact f, g at z_k (not charged), ||Q_k||, data passes of the algorithm's reads only
    h = res.history
    np.testing.assert_allclose(h["queue_norm"], np.linalg.norm(ref_Q[:-1], axis=1))
    problem = finite_sum_problem()[0]
    np.testing.assert_allclose(h["constraint"], [problem.g(z)[0] for z in ref_z[:-1]])
    np.testing.assert_allclose(h["objective"], [problem.f(z) for z in ref_z[:-1]])
    np.testing.assert_allclose(h["data_passes_f"], 3 * np.arange(1, K + 1) / 8)
    assert res.counters["rows_f"] == 3 * K and res.counters["rows_g"] == (2 + 1) * K


def fair_logistic_problem():
    """Logistic risk s.t. group-1 logistic risk <= level over a ball, with an SLSQP reference solution."""
    data = make_fair_classification(n_samples=400, n_features=4, seed=1)
    objective, risk1 = logistic_risk(data), logistic_risk(data.by_group()["group1"])

    def jac(term):
        def grad(w):
            out = np.empty(4)
            term.value_and_subgradient(w, out)
            return out
        return grad
    ball = {"type": "ineq", "fun": lambda w: 4.0 - w @ w, "jac": lambda w: -2 * w}
    at_ball = minimize(objective.value, np.zeros(4), jac=jac(objective), constraints=[ball], method="SLSQP").x
    level = risk1.value(at_ball) - 5e-4   # the risk constraint is active at the solution
    cons = {"type": "ineq", "fun": lambda w: level - risk1.value(w), "jac": lambda w: -jac(risk1)(w)}
    ref = minimize(objective.value, np.zeros(4), jac=jac(objective), constraints=[ball, cons], method="SLSQP",
                   options=dict(ftol=1e-14, maxiter=500))
    assert ref.success
    return ConstrainedProblem(objective, [less_equal(risk1, level)], Ball(2.0)), ref.x


def test_online_converges_towards_deterministic_solution():
    problem, x_ref = fair_logistic_problem()
    f_ref = problem.f(x_ref)
    errors = []
    for K in (300, 3000):
        res = online_stochastic_subgradient(problem, max_iter=K, objective_batch_size=8, constraint_batch_size=8,
                                            seed=0, record_every=K)
        errors.append(np.linalg.norm(res.x - x_ref))
    assert errors[1] < 0.5 * errors[0]
    assert errors[1] < 0.35
    assert abs(res.objective - f_ref) < 0.015 and res.max_violation < 0.015
    # IQRC with the online oracle: each subproblem is strongly convex, warm-started at x_t
    out = iqrc(problem, rho_hat=1.0, inner_solver="online", outer_iter=5, inner_iter=600, record_every=600,
               inner_params=dict(objective_batch_size=8, constraint_batch_size=8))
    assert out.solver == "iqrc[online]" and out.status == "max_iter"
    assert np.linalg.norm(out.x - x_ref) < 0.2 and out.max_violation < 0.01
    assert out.multipliers.shape == (1,) and list(out.info["outer_history"]["iteration"]) == [0, 600, 1200, 1800,
                                                                                                2400, 3000]


def test_online_seeds_reproducible():
    problem = finite_sum_problem()[0]
    kw = dict(max_iter=40, objective_batch_size=2, constraint_batch_size=1)
    a, b = online_stochastic_subgradient(problem, seed=7, **kw), online_stochastic_subgradient(problem, seed=7, **kw)
    np.testing.assert_array_equal(a.x, b.x)
    np.testing.assert_array_equal(a.history["queue_norm"], b.history["queue_norm"])
    c = online_stochastic_subgradient(problem, seed=8, **kw)
    assert not np.array_equal(a.x, c.x)
    ikw = dict(rho_hat=1.0, inner_solver="online", outer_iter=3, inner_iter=30,
               inner_params=dict(objective_batch_size=2))
    x1, x2 = iqrc(problem, seed=1, **ikw).x, iqrc(problem, seed=1, **ikw).x
    np.testing.assert_array_equal(x1, x2)
    assert not np.array_equal(x1, iqrc(problem, seed=2, **ikw).x)


def test_online_inner_solver_through_proximal_point():
    """Deterministic oracles: the IPP fixed point of Algorithm 3 is O(1/sqrt(K)) from x*, multiplier -> 1."""
    errors = []
    for K in (100, 400):
        res = proximal_point(linear_problem(), rho_hat=1.0, outer_iter=10, inner_iter=K, inner_solver="online",
                             record_every=50)
        errors.append(np.linalg.norm(res.x - X_LIN))
        assert errors[-1] < 1.0 / np.sqrt(K)
    assert errors[1] < 0.6 * errors[0]
    assert res.solver == "proximal_point[online]" and res.info["inner_status"] == ["max_iter"] * 10
    assert res.multipliers[0] == pytest.approx(LAMBDA_LIN, abs=0.05)
    assert {"queue_norm", "outer", "data_passes_g"} <= set(res.history)
    np.testing.assert_array_equal(np.unique(res.history["outer"]), np.arange(10))
    with pytest.raises(ValueError, match="inner_output"):
        proximal_point(linear_problem(), rho_hat=1.0, inner_solver="online", inner_output="last")
    with pytest.raises(ValueError, match="output"):
        proximal_point(linear_problem(), rho_hat=1.0, inner_solver="online", inner_params=dict(output="last"))


# ---------------------------------------------------------------------------- bad input
@pytest.mark.parametrize("kwargs, match", [
    (dict(rho=1.0), "rho"),                       # rho_hat = 1 must exceed rho
    (dict(rho=-0.5), "rho"),
    (dict(rho=0.5, mu=0.5), "mu"),
    (dict(mu=2.0), "mu"),                         # mu = rho_hat - rho <= rho_hat
    (dict(mu=0.0), "mu"),
    (dict(rho_hat=0.0), "rho_hat"),
    (dict(switching_level=0.0), "switching_level"),
    (dict(switching_level=float("nan")), "switching_level"),
    (dict(level_reading="squared"), "level_reading"),
    (dict(inner_solver="conex"), "inner_solver"),
    (dict(output="best"), "output"),
    (dict(outer_iter=0), "outer_iter"),
    (dict(inner_iter=2.5), "inner_iter"),
    (dict(phase_one_iter=-1), "phase_one_iter"),
    (dict(phase_one_step_size="armijo"), "phase_one_step_size"),
    (dict(inner_params=dict(step_size=0.1)), "inner_params"),
])
def test_iqrc_bad_input(kwargs, match):
    with pytest.raises(ValueError, match=match):
        iqrc(hinge_problem(), **kwargs)


@pytest.mark.parametrize("kwargs, match", [
    (dict(max_iter=0), "max_iter"),
    (dict(max_iter=10.0), "max_iter"),
    (dict(max_iter=10, V=0.0), "V"),
    (dict(max_iter=10, prox_weight=-1.0), "prox_weight"),
    (dict(max_iter=10, prox_weight=float("inf")), "prox_weight"),
    (dict(max_iter=10, objective_batch_size=0), "objective_batch_size"),
    (dict(max_iter=10, constraint_batch_size=1.5), "constraint_batch_size"),
])
def test_online_bad_input(kwargs, match):
    with pytest.raises(ValueError, match=match):
        online_stochastic_subgradient(finite_sum_problem()[0], **kwargs)
    with pytest.raises(ValueError, match="mu"):
        iqrc_step_size(0.0)


def test_multiclass_layouts_give_the_same_run():
    """Multi-class NP in the "features" layout (x = vec(W^T), ColumnBalls): IQRC takes the same steps."""
    from fastcon.datasets import make_multiclass
    from fastcon.problems import multiclass_neyman_pearson

    data = make_multiclass(n_samples=120, n_features=3, n_classes=3, seed=2)
    runs = [iqrc(problem, problem.x0, rho_hat=1.0, switching_level=1e-3, outer_iter=3, inner_iter=200, seed=0)
            for problem in (multiclass_neyman_pearson(data, layout=layout) for layout in ("classes", "features"))]
    np.testing.assert_allclose(runs[1].x.reshape(3, 3).T, runs[0].x.reshape(3, 3), rtol=1e-12, atol=1e-15)
    assert runs[1].objective == pytest.approx(runs[0].objective, rel=1e-12)
    assert runs[0].objective < 1.0  # below the zero model's loss (C - 1)/2
