"""Switching subgradient (Huang & Lin [HL23] Algorithms 1–2): reference loop, invariants, output law, theory."""
import numpy as np
import pytest
from scipy import stats

from fastcon.datasets._synthetic import make_fair_classification
from fastcon.problems import Ball, ConstrainedProblem, custom_term, hinge_risk, less_equal
from fastcon.solvers import (
    check_certificate, inverse_sqrt, switching_subgradient, switching_theory_parameters,
)
from reference.switching import project_ball, switching_reference

RNG = np.random.default_rng(7)
C_MAT, D_VEC = RNG.normal(size=(8, 3)), RNG.normal(size=8)
A_MAT, B_VEC = RNG.normal(size=(2, 3)), np.array([0.3, 0.5])
RADIUS = 2.0


# ---------------------------------------------------------------------------- a small problem
def f_value(x):
    return float(np.abs(C_MAT @ x - D_VEC).mean())


def f_grad(x, rows=None):
    rows = np.arange(len(D_VEC)) if rows is None else rows
    return C_MAT[rows].T @ np.sign(C_MAT[rows] @ x - D_VEC[rows]) / len(rows)


def l1_term():
    """f(x) = mean_i |c_i x - d_i| with minibatch oracles (8 'rows')."""
    def vs(x, out):
        out[:] = f_grad(x)
        return f_value(x)

    def vs_rows(x, rows, out):
        out[:] = f_grad(x, rows)
        return float(np.abs(C_MAT[rows] @ x - D_VEC[rows]).mean())
    return custom_term(f_value, vs, 3, n_samples=8, value_and_subgradient_rows=vs_rows,
                       value_rows=lambda x, rows: float(np.abs(C_MAT[rows] @ x - D_VEC[rows]).mean()))


def linear_term(a, b):
    """g_i(x) = a x - b (one 'row')."""
    def vs(x, out):
        out[:] = a
        return float(a @ x - b)
    return custom_term(lambda x: float(a @ x - b), vs, 3)


def small_problem():
    cons = [linear_term(A_MAT[i], B_VEC[i]) for i in range(2)]
    return ConstrainedProblem(l1_term(), cons, Ball(RADIUS), x0=np.array([1.5, -1.0, 0.5]))


def g_value(x):
    return float(np.max(A_MAT @ x - B_VEC))


def g_grad(x):
    return A_MAT[int(np.argmax(A_MAT @ x - B_VEC))]


def run_collect(problem, **kw):
    """Solve, collecting x_0..x_T and per-iteration callback info."""
    xs, infos = [problem.x0.copy()], []

    def cb(t, x, info):
        xs.append(x.copy())
        infos.append(dict(info))
    res = switching_subgradient(problem, callback=cb, **kw)
    return res, np.array(xs), infos


# ---------------------------------------------------------------------------- step by step
@pytest.mark.parametrize("stochastic", [False, True])
def test_matches_reference_loop(stochastic):
    T = 300
    eta = 0.05 / np.sqrt(np.arange(T) + 1.0)
    eps = np.full(T, 1e-2)
    kw = dict(max_iter=T, step_size=inverse_sqrt(0.05), switching_level=1e-2, start_index=50, seed=3)
    if stochastic:
        kw.update(objective_oracle="stochastic", objective_batch_size=3)
    res, xs, infos = run_collect(small_problem(), **kw)
    ref = switching_reference(f_grad, g_value, g_grad, lambda x: project_ball(x, RADIUS), small_problem().x0,
                              eta, eps, start_index=50, seed=3,
                              f_grad_rows=f_grad if stochastic else None, n_rows_f=8, batch_f=3)
    np.testing.assert_allclose(xs, ref["iterates"], rtol=1e-12, atol=1e-13)
    assert [i["step_kind"] for i in infos] == list(ref["kind"])
    np.testing.assert_allclose([i["constraint"] for i in infos], ref["g"], rtol=1e-12, atol=1e-14)
    assert res.counters["nearly_feasible"] == len(ref["I"]) > 0
    assert res.info["tau"] == ref["tau"]
    np.testing.assert_array_equal(res.x, ref["iterates"][ref["tau"]])


# ---------------------------------------------------------------------------- invariants
def test_invariants_and_history():
    problem = small_problem()
    res, xs, infos = run_collect(problem, max_iter=400, step_size=0.02, switching_level=inverse_sqrt(0.05),
                                 start_index=20, seed=1, record_every=1)
    assert np.all(np.linalg.norm(xs, axis=1) <= RADIUS * (1 + 1e-12))
    h = res.history
    assert len(h["iteration"]) == 400
    np.testing.assert_array_equal(h["constraint"] <= h["switching_level"], h["step_kind"] == "f")
    np.testing.assert_array_equal(h["max_violation"], np.maximum(h["constraint"], 0.0))
    in_I = (h["step_kind"] == "f") & (h["iteration"] >= 20)
    assert res.counters["nearly_feasible"] == in_I.sum()
    tau = res.info["tau"]
    assert tau >= 20 and in_I[tau]
    assert g_value(res.x) <= 0.05 / np.sqrt(tau + 1)
    np.testing.assert_allclose(res.objective, f_value(res.x))
    # history f(x_t) on constraint steps is not charged: one f pass per objective step, one g pass per step
    assert res.counters["data_passes_f"] == res.counters["objective_steps"]
    # two constraints: problem.g_and_subgradient reads both values plus the active one's fused pass
    assert res.counters["data_passes_g"] == 3 * 400
    np.testing.assert_array_equal(h["data_passes_g"], 3 * np.arange(1, 401))
    assert res.counters["objective_steps"] + res.counters["constraint_steps"] == 400


def test_output_law_is_eta_weighted():
    """Always-feasible trajectory, varied eta: P(tau = t) = eta_t / sum_{t >= S} eta_t (chi-square)."""
    T, S = 8, 2
    eta = np.arange(1.0, T + 1.0) * 1e-3
    problem = small_problem()
    counts = np.zeros(T, dtype=int)
    n_runs = 1500
    for seed in range(n_runs):
        res = switching_subgradient(problem, max_iter=T, step_size=lambda t: eta[t], switching_level=np.inf,
                                    start_index=S, seed=seed, record_every=T)
        counts[res.info["tau"]] += 1
    assert counts[:S].sum() == 0
    expected = n_runs * eta[S:] / eta[S:].sum()
    assert stats.chisquare(counts[S:], expected).pvalue > 1e-3


def test_infinite_switching_levels_reduce_to_projected_subgradient():
    problem, T, eta = small_problem(), 50, 0.03
    for tol, grad in ((np.inf, f_grad), (-np.inf, g_grad)):
        res, xs, _ = run_collect(problem, max_iter=T, step_size=eta, switching_level=tol, output="last")
        x = problem.x0.copy()
        for t in range(T):
            x = project_ball(x - eta * grad(x), RADIUS)
            np.testing.assert_allclose(xs[t + 1], x, rtol=1e-12, atol=1e-14)
        np.testing.assert_array_equal(res.x, xs[-1])
        # eps = -inf: no iterate can meet the switching level, whatever g is
        assert res.status == ("max_iter" if tol > 0 else "no_feasible_iterate")


def test_no_feasible_iterate_is_a_status():
    problem = small_problem()
    x0 = 1.9 * A_MAT[0] / np.linalg.norm(A_MAT[0])
    assert g_value(x0) > 0.1
    res = switching_subgradient(problem, x0, max_iter=5, step_size=1e-4, switching_level=1e-12)
    assert res.status == "no_feasible_iterate" and "I is empty" in res.message
    assert res.info["tau"] == -1 and res.counters["nearly_feasible"] == 0
    assert problem.domain.contains(res.x)
    # the message reports the best violation reached and where to go next
    assert f"g = {res.info['best_constraint']:.6g}" in res.message and "check_feasibility" in res.message
    assert res.info["best_constraint"] > 0.1 and not res.success


@pytest.mark.parametrize("output", ["random", "average", "best_feasible", "last"])
def test_zero_step_size_keeps_a_feasible_start(output):
    """step_size = 0 is degenerate but legal: x never moves; a feasible start puts every t in I."""
    problem = small_problem()
    x0 = np.zeros(3)
    assert g_value(x0) < 0
    res = switching_subgradient(problem, x0, max_iter=100, step_size=0.0, output=output, record_every=10)
    assert res.status == "max_iter" and res.counters["nearly_feasible"] == 100
    np.testing.assert_array_equal(res.x, x0)
    assert res.max_violation == 0.0
    if output != "last":
        assert 0 <= res.info["tau"] < 100


def test_zero_weights_fall_back_to_the_uniform_law():
    """All eta_t = 0 on I: tau is uniform over I (the limit of equal weights), not 'I is empty'."""
    problem = small_problem()
    T, S, n_runs = 6, 2, 1200
    counts = np.zeros(T, dtype=int)
    for seed in range(n_runs):
        res = switching_subgradient(problem, np.zeros(3), max_iter=T, step_size=0.0, switching_level=np.inf,
                                    start_index=S, seed=seed, record_every=T)
        counts[res.info["tau"]] += 1
    assert counts[:S].sum() == 0
    assert stats.chisquare(counts[S:]).pvalue > 1e-3
    # a positive weight after zeros wins: zero weights are never drawn once a positive one is offered
    eta = [0.0, 0.0, 0.0, 1e-3]
    for seed in range(20):
        res = switching_subgradient(problem, np.zeros(3), max_iter=4, step_size=lambda t: eta[t], switching_level=np.inf,
                                    seed=seed)
        assert res.info["tau"] == 3


@pytest.mark.parametrize("output", ["random", "average", "best_feasible", "last"])
def test_degenerate_settings_for_every_output_rule(output):
    problem = small_problem()
    # one iteration at a feasible point: I = {0}, every rule returns x_0
    x0 = np.zeros(3)
    one = switching_subgradient(problem, x0, max_iter=1, step_size=0.1, output=output)
    assert one.status == "max_iter" and one.n_iter == 1 and one.counters["nearly_feasible"] == 1
    if output != "last":
        np.testing.assert_array_equal(one.x, x0)
    # zero step from an infeasible start: I is empty for every rule, x_T = x_0 is returned
    far = 1.9 * A_MAT[0] / np.linalg.norm(A_MAT[0])
    stuck = switching_subgradient(problem, far, max_iter=20, step_size=0.0, output=output)
    assert stuck.status == "no_feasible_iterate" and stuck.info["tau"] == -1
    np.testing.assert_array_equal(stuck.x, problem.project(far))
    assert stuck.info["best_constraint"] == pytest.approx(g_value(problem.project(far)))
    # start_index = T - 1: only the last iterate can enter I
    late = switching_subgradient(problem, x0, max_iter=30, step_size=1e-3, start_index=29, output=output)
    assert late.counters["nearly_feasible"] == 1 and late.status == "max_iter"
    if output in ("random", "average", "best_feasible"):
        assert late.info["tau"] == 29
    # "average" with linear weights and a zero step: the plain (linear-weighted) average of identical points
    if output == "average":
        avg = switching_subgradient(problem, x0, max_iter=10, step_size=0.0, output=output, average_weights="linear")
        np.testing.assert_array_equal(avg.x, x0)


def test_strongly_convex_rule_reports_an_empty_I():
    """Theorem B.1 draws over all t >= S; a run whose iterates never reach g <= 0 still says so."""
    problem = small_problem()
    far = 1.9 * A_MAT[0] / np.linalg.norm(A_MAT[0])
    res = switching_subgradient(problem, far, max_iter=5, step_size=1e-4, strongly_convex_constraint=True)
    assert res.status == "no_feasible_iterate" and 0 <= res.info["tau"] < 5


def test_output_rules_and_reproducibility():
    problem = small_problem()
    kw = dict(max_iter=200, step_size=0.02, switching_level=1e-2, seed=11)
    a, b = switching_subgradient(problem, **kw), switching_subgradient(problem, **kw)
    np.testing.assert_array_equal(a.x, b.x)
    assert a.info["tau"] == b.info["tau"]
    taus = {switching_subgradient(problem, **{**kw, "seed": s}).info["tau"] for s in range(10)}
    assert len(taus) > 1
    best = switching_subgradient(problem, output="best_feasible", **kw)
    h = best.history
    mask = h["step_kind"] == "f"
    assert best.info["tau"] == h["iteration"][mask][np.argmin(h["objective"][mask])]
    avg = switching_subgradient(problem, output="average", **kw)
    _, xs, infos = run_collect(problem, output="average", **kw)
    in_I = np.array([i["in_I"] for i in infos])
    np.testing.assert_allclose(avg.x, np.average(xs[:-1][in_I], axis=0, weights=np.full(in_I.sum(), 0.02)))
    # "best_feasible" with I non-empty but unrecorded falls back to the random pick
    sparse = switching_subgradient(problem, output="best_feasible", record_every=1000, **{**kw, "max_iter": 199})
    assert sparse.info.get("output_fallback") in (None, "random")


def test_callback_stop_and_verbose(capsys):
    res = switching_subgradient(small_problem(), max_iter=100, callback=lambda t, x, info: t == 9,
                                verbose="lines")
    assert res.status == "callback_stop" and res.n_iter == 10
    assert "switching" in capsys.readouterr().err


def test_bad_inputs():
    problem = small_problem()
    with pytest.raises(ValueError, match="output"):
        switching_subgradient(problem, output="median")
    with pytest.raises(ValueError, match="constraint_batch_size"):
        switching_subgradient(problem, constraint_oracle="stochastic")
    with pytest.raises(ValueError, match="switching_level"):
        switching_subgradient(problem, strongly_convex_constraint=True, switching_level=1e-3)
    with pytest.raises(ValueError, match="stationarity_rho_hat"):
        switching_subgradient(problem, record_stationarity_every=10)


@pytest.mark.parametrize("kwargs, error, match", [
    (dict(max_iter=2.7), ValueError, "max_iter"), (dict(max_iter=0), ValueError, "max_iter"),
    (dict(max_iter=-1), ValueError, "max_iter"), (dict(max_iter=True), ValueError, "max_iter"),
    (dict(max_iter=float("nan")), ValueError, "max_iter"), (dict(max_iter="10"), TypeError, "max_iter"),
    (dict(step_size=-1e-3), ValueError, "step_size"), (dict(step_size=np.inf), ValueError, "step_size"),
    (dict(step_size=np.nan), ValueError, "step_size"), (dict(step_size=lambda t: -1.0), ValueError, "step_size"),
    (dict(switching_level=np.nan), ValueError, "switching_level"), (dict(record_every=0), ValueError, "record_every"),
    (dict(record_every=2.5), ValueError, "record_every"), (dict(start_index=-1), ValueError, "start_index"),
    (dict(start_index=10, max_iter=10), ValueError, "start_index"), (dict(seed=-1), ValueError, "seed"),
    (dict(seed=1.5), ValueError, "seed"), (dict(seed="a"), TypeError, "seed"),
    (dict(objective_batch_size=0), ValueError, "objective_batch_size"),
    (dict(constraint_oracle="stochastic", constraint_batch_size=2.0), ValueError, "constraint_batch_size"),
    (dict(callback=3), TypeError, "callback"),
])
def test_numeric_arguments_are_checked(kwargs, error, match):
    with pytest.raises(error, match=f"^{match}"):
        switching_subgradient(small_problem(), **kwargs)


def test_seed_accepts_generators_and_none():
    problem = small_problem()
    kw = dict(max_iter=50, step_size=0.02, switching_level=1e-2)
    a = switching_subgradient(problem, seed=np.random.default_rng(3), **kw)
    b = switching_subgradient(problem, seed=np.random.default_rng(3), **kw)
    np.testing.assert_array_equal(a.x, b.x)
    assert a.info["seed"] == "Generator"
    assert switching_subgradient(problem, seed=None, **kw).status == "max_iter"
    assert switching_subgradient(problem, seed=np.int64(4), **kw).info["seed"] == 4


# ---------------------------------------------------------------------------- theory (Theorem 4.2)
RHO, RHO_HAT, B_HALF = 0.5, 1.5, 0.2
C_UNIT = np.array([0.6, 0.8])
Q = -0.5 * C_UNIT


def weakly_convex_problem():
    r"""f(x) = -rho/2 |x|^2 + q x (rho-weakly convex, |grad| <= 1), g(x) = c x - b, X the unit ball."""
    def fvs(x, out):
        out[:] = Q - RHO * x
        return float(-0.5 * RHO * x @ x + Q @ x)

    def gvs(x, out):
        out[:] = C_UNIT
        return float(C_UNIT @ x - B_HALF)
    f = custom_term(lambda x: float(-0.5 * RHO * x @ x + Q @ x), fvs, 2)
    g = custom_term(lambda x: float(C_UNIT @ x - B_HALF), gvs, 2)
    return ConstrainedProblem(f, [g], Ball(1.0), x0=0.9 * C_UNIT)


def prox_point(x):
    r"""\hat x_{\hat\rho}(x) = proj_{ball ∩ {c y <= b}}((rho_hat x - q) / Delta) (closed form)."""
    z = (RHO_HAT * x - Q) / (RHO_HAT - RHO)
    p = z / max(1.0, np.linalg.norm(z))
    if C_UNIT @ p <= B_HALF:
        return p
    h = z - (C_UNIT @ z - B_HALF) * C_UNIT
    if np.linalg.norm(h) <= 1.0:
        return h
    w = z - (C_UNIT @ z) * C_UNIT
    return B_HALF * C_UNIT + np.sqrt(1 - B_HALF ** 2) * w / np.linalg.norm(w)


@pytest.mark.parametrize("case", ["static", "diminishing"])
def test_theorem_4_2_guarantee(case):
    eps_target, M, D = 0.8, 1.0, 2.0
    params = switching_theory_parameters(M, D, RHO, RHO_HAT, eps_target, g_slater=-1.0 - B_HALF, case=case)
    assert params["theorem"] == "4.2" and params["Lambda"] == pytest.approx((M * D + RHO_HAT * D * D) / 1.2)
    T, S = params["max_iter"], params["start_index"]
    cert = check_certificate(params["step_size"], params["switching_level"], S, M, D, eps_target, RHO_HAT - RHO,
                             params["Lambda"], max_iter=T)
    assert cert["certified"], cert
    res, xs, infos = run_collect(weakly_convex_problem(), record_every=T, **params["kwargs"])
    assert res.status == "max_iter"
    in_I = np.array([i["in_I"] for i in infos])
    eta = np.array([i["step_size"] for i in infos])
    w = eta[in_I] / eta[in_I].sum()
    pts = xs[:-1][in_I]
    gap = np.array([np.linalg.norm(prox_point(x) - x) for x in pts])
    g_vals = pts @ C_UNIT - B_HALF
    assert w @ gap <= eps_target                     # E_tau |x_hat - x_tau| <= eps
    assert w @ g_vals <= params["constraint_bound"]  # E_tau g(x_tau) <= eps^2 Delta / (1 + Lambda)
    assert g_value_2(res.x) <= infos[res.info["tau"]]["switching_level"]


def g_value_2(x):
    return float(C_UNIT @ x - B_HALF)


def test_certificate_rejects_misscaled_parameters():
    M, D, eps_t = 1.0, 2.0, 0.5
    p = switching_theory_parameters(M, D, RHO, RHO_HAT, eps_t, Lambda=3.0)
    T = p["max_iter"]
    args = (p["start_index"], M, D, eps_t, RHO_HAT - RHO, 3.0)
    assert check_certificate(np.full(T, p["step_size"]), np.full(T, p["switching_level"]), *args)["certified"]
    bad_eta = check_certificate(np.full(T, 10 * p["step_size"]), np.full(T, p["switching_level"]), *args)
    assert bad_eta["condition_29"] and not bad_eta["condition_30"]
    bad_eps = check_certificate(np.full(T, p["step_size"]), np.full(T, 2 * p["switching_level"]), *args)
    assert not bad_eps["condition_29"]


def test_theory_parameter_formulas():
    M, D, Lam, eps_t, delta = 2.0, 3.0, 4.0, 0.5, 0.05
    T_bar = (M * D * (1 + Lam)) ** 2 / (eps_t ** 4 * 1.0)
    p = switching_theory_parameters(M, D, 0.0, 1.0, eps_t, Lambda=Lam)
    assert p["max_iter"] == np.ceil(25 * T_bar / 4)
    assert p["switching_level"] == pytest.approx(2.5 * M ** 2 * p["step_size"])
    p = switching_theory_parameters(M, D, 0.0, 1.0, eps_t, Lambda=Lam, case="diminishing")
    assert p["max_iter"] == np.ceil(50 * T_bar) and p["start_index"] == p["max_iter"] // 2
    assert p["switching_level"](0) == pytest.approx(5 * M * D) and p["step_size"](3) == pytest.approx(D / M / 2)
    p = switching_theory_parameters(M, D, 0.0, 1.0, eps_t, Lambda=Lam, stochastic_constraint=True, sigma=0.1,
                                    delta=delta)
    assert p["theorem"] == "5.2" and p["kwargs"]["constraint_batch_size"] == p["batch_size"] > 0
    assert p["max_iter"] == np.ceil(300 * np.log(4 / delta) * T_bar)
    p = switching_theory_parameters(M, D, 0.0, 1.0, eps_t, mu=1.0)
    assert p["theorem"] == "B.1" and p["switching_level"] == 0.0
    assert p["max_iter"] == np.ceil((M * D) ** 2 / (eps_t ** 4 * 0.25))
    with pytest.raises(ValueError, match="rho_hat"):
        switching_theory_parameters(M, D, 1.0, 1.0, eps_t, Lambda=Lam)
    with pytest.raises(ValueError, match="g_slater"):
        switching_theory_parameters(M, D, 0.0, 1.0, eps_t)


def test_strongly_convex_constraint_draws_over_all_t():
    """Theorem B.1: eps_t = 0 and tau ranges over all t >= S, constraint steps included."""
    center = np.array([0.3, 0.0, 0.0])

    def gvs(x, out):
        out[:] = 2 * (x - center)
        return float((x - center) @ (x - center) - 0.25)
    g = custom_term(lambda x: float((x - center) @ (x - center) - 0.25), gvs, 3)
    problem = ConstrainedProblem(l1_term(), [g], Ball(RADIUS), x0=np.array([1.5, -1.0, 0.5]))
    kinds = set()
    for seed in range(30):
        res, _, infos = run_collect(problem, max_iter=60, step_size=0.02, start_index=10,
                                    strongly_convex_constraint=True, seed=seed, record_every=60)
        assert res.info["tau"] >= 10 and res.status == "max_iter"
        assert all(i["switching_level"] == 0.0 for i in infos)
        kinds.add(infos[res.info["tau"]]["step_kind"])
    assert kinds == {"f", "g"}


# ---------------------------------------------------------------------------- real terms, stochastic oracles
def test_stochastic_oracles_on_hinge_risk():
    ds = make_fair_classification(n_samples=400, n_features=6, seed=0)
    risk = hinge_risk(ds)
    n = ds.shape[0]
    ref_level = risk.value(np.zeros(6)) - 0.1
    problem = ConstrainedProblem(hinge_risk(ds), [less_equal(risk, ref_level)], Ball(3.0))
    kw = dict(max_iter=300, step_size=0.05, switching_level=1e-3, objective_oracle="stochastic",
              objective_batch_size=16, constraint_oracle="stochastic", constraint_batch_size=64,
              record_every=25, seed=5)
    a, b = switching_subgradient(problem, **kw), switching_subgradient(problem, **kw)
    np.testing.assert_array_equal(a.x, b.x)
    assert a.status == "max_iter"
    assert a.counters["data_passes_g"] == pytest.approx(300 * 64 / n)
    assert a.counters["data_passes_f"] == pytest.approx(a.counters["objective_steps"] * 16 / n)
    # exact g is recorded (not the batch estimate) and the run drives it down
    assert a.history["constraint"][-1] < a.history["constraint"][0]
    assert np.isfinite(a.history["objective"]).all()


def test_stationarity_recording():
    res = switching_subgradient(weakly_convex_problem(), max_iter=40, step_size=0.01, switching_level=1e-3,
                                record_every=1000, record_stationarity_every=20, stationarity_rho_hat=RHO_HAT)
    h = res.history
    assert list(h["iteration"]) == [0, 20, 39]
    assert np.isfinite(h["stationarity"][:2]).all()
    x0 = weakly_convex_problem().x0
    assert h["stationarity"][0] == pytest.approx(np.linalg.norm(prox_point(x0) - x0), abs=1e-2)


def test_stationarity_path_with_stub(monkeypatch):
    """Exercise the recording path with a stand-in metric whose oracle reads must not be charged."""
    import fastcon.solvers._common as common

    calls = []

    def stub(problem, x, rho_hat, *, seed=0, **kw):
        calls.append(rho_hat)
        problem.f(x)  # reads data: excluded from the algorithm's passes
        x_hat = prox_point(x)
        return float(np.linalg.norm(x_hat - x)), x_hat
    monkeypatch.setattr(common, "near_stationarity", stub)
    res = switching_subgradient(weakly_convex_problem(), max_iter=40, step_size=0.01, switching_level=1e-3,
                                record_every=1000, record_stationarity_every=20, stationarity_rho_hat=RHO_HAT)
    h = res.history
    assert list(h["iteration"]) == [0, 20, 39] and calls == [RHO_HAT, RHO_HAT]
    assert np.isfinite(h["stationarity"][:2]).all() and np.isnan(h["stationarity"][2])
    assert res.counters["data_passes_f"] == res.counters["objective_steps"]


def test_stochastic_objective_uses_the_terms_own_sampler():
    """A term with ``sample_rows`` (e.g. B rows per group) gets its own scheme, also when wrapped."""
    from fastcon.problems import ConstrainedProblem, ProximalTerm, custom_term

    seen = []

    def rows_oracle(x, rows, out):
        seen.append(np.array(rows))
        out[:] = x
        return 0.5 * float(x @ x)

    term = custom_term(lambda x: 0.5 * float(x @ x), lambda x, out: rows_oracle(x, [0], out), n_features=2,
                       n_samples=10, value_and_subgradient_rows=rows_oracle)
    term.sample_rows = lambda rng, batch=None: np.array([3, 7])
    for objective in (term, ProximalTerm(term, 1.0, np.zeros(2))):
        seen.clear()
        switching_subgradient(ConstrainedProblem(objective, [], x0=np.ones(2)), max_iter=5,
                              objective_oracle="stochastic", objective_batch_size=4, seed=0)
        assert len(seen) == 5 and all(np.array_equal(r, [3, 7]) for r in seen)
