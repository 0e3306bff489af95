"""3S-Econ (Liu & Xu [LX25]): compiled loop vs NumPy reference, SPIDER estimator, counters, KKT, errors."""
import math

import numpy as np
import pytest
import scipy.sparse as sp

from fastcon._kernels._datafit import datafit_buffers, statistic, statistic_two_point
from fastcon._kernels._spider import draw_rows, rng_state
from fastcon.datasets import make_fair_classification
from fastcon.problems import (
    Ball, ConstrainedProblem, Whole, custom_term, smoothed_demographic_parity, hinge_risk, less_equal, logistic_risk,
    penalized, roc_fairness, scad_penalty,
)
from fastcon.solvers import spider, spider_theory_parameters
from reference import spider as ref

KAPPA, LAM = 0.02, 0.02


def _problem2(sparse=False, n=600, d=6, seed=0):
    D = make_fair_classification(n, d, sparse=sparse, density=0.5, shift=1.5, seed=seed)
    G = make_fair_classification(n // 2, d, sparse=sparse, density=0.5, shift=1.5, seed=seed + 1)
    p, u = G.subset(G.groups == 1), G.subset(G.groups == 0)
    obj = penalized(hinge_risk(D), scad_penalty(d, LAM))
    prob = ConstrainedProblem(obj, [less_equal(smoothed_demographic_parity(p, u), KAPPA)], Whole(), x0=np.zeros(d))
    dense = (lambda X: X.toarray()) if sparse else np.asarray
    r = ref.Problem2Reference(dense(D.X), D.y, dense(p.X), dense(u.X), LAM, KAPPA)
    return prob, r


@pytest.mark.parametrize("variant,sparse", [("stochastic", False), ("stochastic", True), ("deterministic", False)])
def test_compiled_loop_matches_numpy_reference(variant, sparse):
    prob, r = _problem2(sparse)
    K = 60 if variant == "stochastic" else 15
    kw = dict(variant=variant, q=7, batch_size=12, objective_batch_size=20, step_size=0.5) if variant == "stochastic" \
        else dict(variant=variant, step_size=0.5)
    res = spider(prob, max_iter=K, seed=11, record_every=1, **kw)
    assert res.n_iter == K and res.status == "max_iter"
    # replay: the same seed -> the same splitmix64 stream (the loop's is the first spawned child)
    state = rng_state(np.random.SeedSequence(11).spawn(2)[0])
    n_f, n_g, n_p = r.A.shape[0], r.G.shape[0], r.n_p
    if variant == "stochastic":
        from fastcon.problems._groups import stratified_sizes
        f_sizes = [20, 0, 0, n_f]
        g_sizes = [*stratified_sizes(12, n_p, n_g - n_p), 0, n_g]
        q, decay = 7, True
    else:
        f_sizes, g_sizes, q, decay = [n_f, 0, 1, n_f], [n_g, 0, 1, n_g], 1, False
    xs, us = ref.spider_reference(r, np.zeros(r.A.shape[1]), K, q, 0.5, decay, 10.0, 1e-5, f_sizes, g_sizes, state)
    np.testing.assert_allclose(res.x, xs[-1], rtol=1e-9, atol=1e-12)
    # the history holds x_k's exact values; compare the objective trajectory too
    f_ref = [float(prob.f(x)) for x in xs]
    np.testing.assert_allclose(res.history["objective"][1:], f_ref, rtol=1e-9)
    np.testing.assert_allclose(res.history["constraint_estimate"][1:], np.abs(us) - KAPPA, rtol=1e-9, atol=1e-13)


def test_spider_with_full_small_batches_telescopes_to_exact_g():
    """S2 = N_g: u_k = u_{k-1} + g(x_k) - g(x_{k-1}) is g(x_k) up to round-off for every k."""
    prob, _ = _problem2()
    n_g = prob.constraints[0].n_samples
    res = spider(prob, variant="stochastic", q=50, batch_size=n_g, objective_batch_size=30, max_iter=120,
                 step_size=0.3, record_every=1, seed=2)
    h = res.history
    # row k holds the estimate used in iteration k-1, i.e. of g(x_{k-1}) = row k-1's exact constraint
    np.testing.assert_allclose(h["constraint_estimate"][1:], h["constraint"][:-1], atol=1e-12, rtol=0)


def test_spider_error_is_zero_at_refresh_points():
    prob, _ = _problem2()
    q = 9
    res = spider(prob, variant="stochastic", q=q, batch_size=10, objective_batch_size=30, max_iter=100,
                 step_size=0.3, record_every=1, seed=5)
    h = res.history
    k = np.arange(1, h["iteration"].size)
    refresh = (k - 1) % q == 0
    np.testing.assert_allclose(h["constraint_estimate"][1:][refresh], h["constraint"][:-1][refresh], atol=1e-14, rtol=0)
    off = np.abs(h["constraint_estimate"][1:][~refresh] - h["constraint"][:-1][~refresh])
    assert off.max() > 1e-9  # the small batches do estimate (this test could otherwise pass vacuously)


def test_spider_estimator_unbiased_and_lemma_3_1_variance():
    """Monte Carlo over batches on a fixed path x_0..x_q: E[u_k] = g(x_k), E|u_k - g|^2 <= Lemma 3.1's bound."""
    D = make_fair_classification(400, 5, seed=8)
    h = hinge_risk(D)
    b = h.compiled_datafit()
    rng = np.random.default_rng(0)
    path = np.cumsum(0.3 * rng.standard_normal((6, 5)), axis=0)
    n, S2, reps = 400, 20, 4000
    bufs = datafit_buffers(b, n)
    all_rows = np.arange(n, dtype=np.int64)
    exact = np.array([statistic(b, x, all_rows, n, bufs) for x in path])
    state, perm, batch = rng_state(3), np.arange(n, dtype=np.int64), np.empty(S2, dtype=np.int64)
    est = np.empty((reps, path.shape[0]))
    for r_ in range(reps):
        u = exact[0]  # refresh with S1 = N at k = 0
        est[r_, 0] = u
        for k in range(1, path.shape[0]):
            draw_rows(state, perm, S2, batch, 0)
            a, a0 = statistic_two_point(b, path[k], path[k - 1], batch, S2, bufs)
            u += a - a0
            est[r_, k] = u
    err = est - exact
    se = err.std(axis=0) / math.sqrt(reps)
    assert np.all(np.abs(err.mean(axis=0)) <= 4 * se + 1e-15)
    # Lemma 3.1 (with sigma^2/S1 = 0): r_k <= sum_i L_g^2 ||x_i - x_{i-1}||^2 / S2, L_g^2 = mean ||a_i||^2
    L2 = float(np.mean(np.asarray(D.X.multiply(D.X).sum(axis=1)).ravel())) if sp.issparse(D.X) else \
        float(np.mean(np.sum(np.asarray(D.X) ** 2, axis=1)))
    steps = np.sum(np.diff(path, axis=0) ** 2, axis=1)
    bound = np.concatenate([[0.0], np.cumsum(L2 * steps / S2)])
    mse = np.mean(err ** 2, axis=0)
    assert mse[0] == 0.0 and np.all(mse[1:] > 0) and np.all(mse <= bound * 1.1)


def test_counters_follow_the_paper_convention():
    prob, _ = _problem2()
    n_f, n_g = prob.objective.n_samples, prob.constraints[0].n_samples
    det = spider(prob, variant="deterministic", max_iter=40, seed=0)
    assert det.counters["data_passes_g"] == pytest.approx(2 * 40)
    assert det.counters["data_passes_f"] == pytest.approx(40)
    assert det.counters["rows_g_value"] == 40 * n_g and det.counters["rows_g_subgradient"] == 40 * n_g
    K, q = 500, 25
    sto = spider(prob, variant="stochastic", q=q, max_iter=K, seed=0)
    s2 = math.ceil(n_g / q)
    assert sto.info["batch_size"] == s2 and sto.info["objective_batch_size"] == math.ceil(n_f / q)
    R = math.ceil(K / q)
    # refresh passes + one small batch per iteration (value pair and subgradient on it count once)
    assert sto.counters["data_passes_g"] == pytest.approx(R + K * s2 / n_g)
    assert sto.counters["data_passes_g"] == pytest.approx(2 * K / q, rel=0.05)
    assert sto.counters["rows_g_value"] == R * n_g + 2 * (K - R) * s2
    assert sto.counters["refreshes"] == R and sto.counters["iterations"] == K
    assert sto.counters["rows_g_read"] <= R * n_g + K * s2 + R * s2
    h = sto.history
    assert np.all(np.diff(h["data_passes_g"]) > 0) and h["data_passes_g"][-1] == sto.counters["data_passes_g"]


def test_deterministic_variant_ends_feasible_and_lowers_objective():
    prob, _ = _problem2(n=800)
    x0 = np.zeros(6)
    res = spider(prob, variant="deterministic", max_iter=3000, seed=0)
    assert res.objective < prob.f(x0) - 0.05
    assert res.max_violation <= 1e-4
    stoch = spider(prob, variant="stochastic", max_iter=20000, seed=0)
    assert stoch.objective < prob.f(x0) - 0.05 and stoch.max_violation <= 1e-3
    assert stoch.counters["data_passes_g"] < res.counters["data_passes_g"]
    a, b = spider(prob, max_iter=300, seed=4), spider(prob, max_iter=300, seed=4)
    np.testing.assert_array_equal(a.x, b.x)
    assert not np.array_equal(a.x, spider(prob, max_iter=300, seed=5).x)


def test_multiplier_estimate_approaches_kkt_multiplier():
    """Smooth convex problem with an active constraint: beta*clip(g/nu) -> the true multiplier."""
    from scipy.optimize import minimize
    D1 = make_fair_classification(300, 4, shift=0.0, seed=21)
    D2 = make_fair_classification(300, 4, shift=0.0, seed=22)
    f, g = logistic_risk(D1), logistic_risk(D2)
    w_f = minimize(f.value, np.zeros(4), jac=lambda w: _grad(f, w), method="BFGS", options={"gtol": 1e-12}).x
    level = g.value(w_f) - 0.05  # make the constraint active at the solution
    sol = minimize(f.value, np.zeros(4), jac=lambda w: _grad(f, w), method="SLSQP",
                   constraints=[{"type": "ineq", "fun": lambda w: level - g.value(w), "jac": lambda w: -_grad(g, w)}],
                   options={"ftol": 1e-15, "maxiter": 1000})
    gf, gg = _grad(f, sol.x), _grad(g, sol.x)
    lam_star = -float(gf @ gg) / float(gg @ gg)
    assert lam_star > 0.1 and np.linalg.norm(gf + lam_star * gg) < 1e-6
    prob = ConstrainedProblem(f, [less_equal(g, level)], Whole(), x0=np.zeros(4))
    # step below 2/L of F^nu (L ~ beta |grad g|^2 / nu), so the deterministic iteration converges to
    # its fixed point grad f + beta clip(g/nu) grad g = 0, a KKT point of g <= nu lambda/beta
    nu = 1e-2
    res = spider(prob, variant="deterministic", beta=10.0, nu=nu, step_size=0.05, max_iter=20000, seed=0)
    assert res.multipliers[0] == pytest.approx(lam_star, rel=0.02)
    np.testing.assert_allclose(res.x, sol.x, atol=1e-2)
    assert res.max_violation <= nu * lam_star / 10.0 * 1.05  # the fixed point sits at g = nu lambda / beta
    # below the exactness threshold (beta < lambda*) the penalty cannot hold the constraint
    weak = spider(prob, variant="deterministic", beta=0.5 * lam_star, nu=nu, step_size=0.05, max_iter=20000, seed=0)
    assert weak.max_violation > max(nu, 100 * res.max_violation) and weak.multipliers[0] == pytest.approx(0.5 * lam_star)


def _grad(term, w):
    out = np.empty(w.shape[0])
    term.value_and_subgradient(np.ascontiguousarray(w, dtype=np.float64), out)
    return out


def test_outputs_ball_and_caps():
    prob, _ = _problem2()
    rnd = spider(prob, output="random", max_iter=200, seed=1)
    assert 0 <= rnd.info["tau"] < 200
    best = spider(prob, output="best_feasible", max_iter=200, record_every=10, seed=1)
    assert best.max_violation == 0.0 and best.objective <= best.history["objective"][best.history["constraint"] <= 0].min() + 1e-15
    capped = spider(prob, variant="deterministic", max_iter=1000, max_data_passes_g=20, seed=0)
    assert capped.status == "data_pass_limit" and 20 <= capped.counters["data_passes_g"] <= 22
    # callback(t, x_{t+1}, info) as in every solver: stopping at t = 49 leaves 50 iterations run
    stopped = spider(prob, max_iter=1000, record_every=10, callback=lambda t, x, info: t + 1 >= 50, seed=0)
    assert stopped.status == "callback_stop" and stopped.n_iter == 50
    ball = ConstrainedProblem(prob.objective, prob.constraints, Ball(0.05), x0=np.zeros(6))
    res = spider(ball, max_iter=300, step_size=1.0, seed=0)
    assert np.linalg.norm(res.x) <= 0.05 + 1e-12
    unprojected = spider(ball, max_iter=300, step_size=1.0, seed=0, project=False)
    assert np.linalg.norm(unprojected.x) > 0.05
    # a start far outside the constraint: best_feasible may find nothing and says so
    far = spider(prob, x0=np.full(6, 30.0), output="best_feasible", max_iter=3, record_every=1, step_size=1e-6)
    assert far.status == "no_feasible_iterate"


def test_bad_input_is_rejected():
    prob, _ = _problem2()
    two = ConstrainedProblem(prob.objective, prob.constraints * 2, Whole(), x0=np.zeros(6))
    with pytest.raises(ValueError, match="one constraint"):
        spider(two)
    custom = custom_term(lambda x: float(x @ x), lambda x, out: (out.__setitem__(slice(None), 2 * x), float(x @ x))[1], 6)
    with pytest.raises(TypeError, match="compiled datafit"):
        spider(ConstrainedProblem(custom, prob.constraints, Whole(), x0=np.zeros(6)))
    D = make_fair_classification(100, 6, seed=0)
    p, u = D.subset(D.groups == 1), D.subset(D.groups == 0)
    roc = roc_fairness(p, u, np.linspace(-1, 1, 5))
    with pytest.raises(TypeError, match="max over thresholds"):
        spider(ConstrainedProblem(hinge_risk(D), [less_equal(roc, 0.1)], Whole(), x0=np.zeros(6)))
    for kw, match in ((dict(variant="sgd"), "variant"), (dict(output="average"), "output"), (dict(beta=0), "beta"),
                      (dict(batch_size=10 ** 6), "batch_size"), (dict(max_iter=0), "max_iter"), (dict(q=0), "q"),
                      (dict(record_stationarity_every=5), "stationarity_rho_hat")):
        with pytest.raises(ValueError, match=match):
            spider(prob, **kw)


def test_problem1_roc_objective_runs_compiled():
    D = make_fair_classification(500, 5, seed=3)
    G = make_fair_classification(300, 5, seed=4)
    p, u = G.subset(G.groups == 1), G.subset(G.groups == 0)
    roc = roc_fairness(p, u, np.linspace(-3, 3, 25))
    h = hinge_risk(D)
    w0 = np.ones(5) * 0.3
    prob = ConstrainedProblem(roc, [less_equal(h, h.value(w0) + 1e-3)], Ball(10.0), x0=w0)
    res = spider(prob, variant="deterministic", max_iter=300, step_size=0.05, seed=0, record_every=1)
    assert res.objective < roc.value(w0) and res.max_violation <= 1e-3
    # the deterministic first step is the exact ROC subgradient (f-step: start is feasible)
    g = np.empty(5)
    roc.value_and_subgradient(w0, g)
    x1 = w0 - 0.05 * g
    assert res.history["objective"][1] == pytest.approx(roc.value(x1), rel=1e-12)
    sto = spider(prob, variant="stochastic", max_iter=2000, seed=0)
    assert sto.objective < roc.value(w0)


def test_theory_parameters_formulas():
    t = spider_theory_parameters(0.1, nu=0.01, beta=10.0, l_f=1.0, l_g=2.0, rho=3.0, Delta=1.0, L_g=2.0,
                                 n_samples=10000)
    LF = math.sqrt(2 * (1 + 100 * 4))
    assert t["L_F"] == pytest.approx(LF) and t["S1"] == 10000 and t["q"] == 100 == t["S2"]
    alpha = min(0.01 / (16 * 3 * LF ** 2), 0.1 * 0.01 / (4 * 10 * 2 * 2 * LF))
    assert t["step_size"] == pytest.approx(alpha)
    assert t["K"] == math.ceil(16 / 0.01 / 100 / alpha) and t["max_iter"] == t["K"] * 100
    g = spider_theory_parameters(0.1, nu=0.01, beta=10.0, l_f=1.0, l_g=2.0, rho=3.0, Delta=1.0, L_g=2.0,
                                 sigma=0.5, sigma2=0.1)
    assert g["S1"] == math.ceil(16 / 0.01 / 1e-4 * (4 + 0.01) * 100 * 0.25)
    assert spider.theory_parameters is not None
    with pytest.raises(ValueError, match="nu"):
        spider_theory_parameters(0.1, nu=0, beta=1, l_f=1, l_g=1, rho=1, Delta=1, L_g=1)
