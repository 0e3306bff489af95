"""Inexact proximal point (IPP-SSG, IPP-ConEx) on small problems with known solutions."""
import numpy as np
import pytest

from fastcon.problems import Ball, ConstrainedProblem, custom_term
from fastcon.solvers import inverse_linear, linear, prox_weights_to_steps, proximal_point

A = np.array([1.0, 0.5, -0.5])
C, B = np.array([1.0, 1.0, 0.0]), 0.5
X_STAR = A - (C @ A - B) / (C @ C) * C


def problem():
    def fvs(x, out):
        out[:] = 2 * (x - A)
        return float((x - A) @ (x - A))

    def gvs(x, out):
        out[:] = C
        return float(C @ x - B)
    return ConstrainedProblem(custom_term(lambda x: float((x - A) @ (x - A)), fvs, 3),
                              [custom_term(lambda x: float(C @ x - B), gvs, 3)], Ball(10.0))


def test_ipp_ssg_reaches_solution_and_records_globally():
    p = problem()
    inner_xs = []  # x_{t+1} of every inner iteration, in global order
    res = proximal_point(p, rho_hat=1.0, outer_iter=30, inner_iter=100, record_every=1,
                         inner_params=dict(step_size=0.02, switching_level=1e-4,
                                           callback=lambda t, x, info: inner_xs.append(x.copy()) and False))
    np.testing.assert_allclose(res.x, X_STAR, atol=5e-3)
    assert res.status == "max_iter" and res.n_iter == 3000
    h = res.history
    np.testing.assert_array_equal(h["iteration"], np.arange(3000))
    np.testing.assert_array_equal(h["outer"], np.repeat(np.arange(30), 100))
    # the recorded metrics are the original f and g at the inner iterate, not F_k, G_k
    inner = np.array(inner_xs)
    within = np.arange(3000) % 100 != 0   # rows whose x_t is some inner x_{t'+1} of the same outer step
    np.testing.assert_allclose(h["objective"][within], ((inner[:-1] - A) ** 2).sum(1)[within[1:]])
    np.testing.assert_allclose(h["constraint"][within], (inner[:-1] @ C - B)[within[1:]])
    assert np.all(np.diff(h["data_passes_g"]) == 1) and res.counters["data_passes_g"] == 3000
    assert res.counters["data_passes_f"] == res.counters["objective_steps"]
    assert np.all(np.diff(h["time"]) >= 0)
    assert res.info["outer_iterates"].shape == (31, 3)
    np.testing.assert_array_equal(res.info["outer_iterates"][-1], res.x)


def test_ipp_conex_reaches_solution():
    primal, dual = prox_weights_to_steps(linear(2.0), inverse_linear(1.0))
    res = proximal_point(problem(), rho_hat=1.0, outer_iter=40, inner_solver="conex", inner_iter=50,
                         inner_params=dict(primal_step=primal, dual_step=dual, theta=lambda t: t / (t + 1)))
    np.testing.assert_allclose(res.x, X_STAR, atol=5e-3)
    assert res.multipliers.shape == (1,)
    assert res.multipliers[0] == pytest.approx(2 * (C @ A - B) / (C @ C), abs=0.05)


def test_ipp_conex_dual_warm_start():
    """Subproblem k starts from subproblem k-1's output multipliers; with the flag off, from 0."""
    primal, dual = prox_weights_to_steps(linear(2.0), inverse_linear(1.0))
    kw = dict(rho_hat=1.0, outer_iter=6, inner_solver="conex", inner_iter=20,
              inner_params=dict(primal_step=primal, dual_step=dual, theta=lambda t: t / (t + 1)))
    for warm in (True, False):
        starts, outs = [], []  # multipliers after inner iteration 0, and each subproblem's output

        def inner_cb(t, x, info):
            if t == 0:
                starts.append(info["y"].copy())
            return False

        res = proximal_point(problem(), dual_warm_start=warm,
                             callback=lambda k, x, info: outs.append(info["inner"].multipliers.copy()) and False,
                             **{**kw, "inner_params": {**kw["inner_params"], "callback": inner_cb}})
        assert res.info["dual_warm_start"] is warm and len(starts) == 6
        # y_1 = [y_0 + tau_0 s_0]_+ with s_0 = g(x_k) (ell_{-1} = ell_0 = g(x_k)) and tau_0 = 1
        for k in range(1, 6):
            y0 = outs[k - 1] if warm else 0.0
            g = C @ res.info["outer_iterates"][k] - B
            np.testing.assert_allclose(starts[k], np.maximum(y0 + g, 0.0), rtol=1e-12, atol=1e-15)
    with pytest.raises(ValueError, match="multipliers0"):
        proximal_point(problem(), rho_hat=1.0, inner_solver="conex", inner_params=dict(multipliers0=[1.0]))


def test_options_and_reproducibility():
    p = problem()
    kw = dict(rho_hat=2.0, outer_iter=5, inner_iter=40, inner_params=dict(step_size=0.02, switching_level=1e-3),
              seed=3)
    a, b = proximal_point(p, **kw), proximal_point(p, **kw)
    np.testing.assert_array_equal(a.x, b.x)
    last = proximal_point(p, inner_output="last", prox_on_constraint=True, **kw)
    assert last.info["inner_status"] == ["max_iter"] * 5
    stopped = proximal_point(p, callback=lambda k, x, info: k == 1, **kw)
    assert stopped.status == "callback_stop" and stopped.n_iter == 80
    with pytest.raises(ValueError, match="max_iter"):
        proximal_point(p, rho_hat=1.0, inner_params=dict(max_iter=3))


def test_schedule_index_outer_holds_steps_constant_per_subproblem():
    """``schedule_index="outer"``: subproblem k runs with the schedules' values at t = k, constant."""
    calls = []

    def step(t):
        calls.append(t)
        return 0.02 / np.sqrt(t + 1.0)

    res = proximal_point(problem(), rho_hat=1.0, outer_iter=5, inner_iter=40, schedule_index="outer",
                         inner_params=dict(step_size=step, switching_level=1e-4))
    assert calls == [0, 1, 2, 3, 4]          # evaluated once per subproblem, at the outer index
    assert res.n_iter == 200
    calls.clear()
    proximal_point(problem(), rho_hat=1.0, outer_iter=2, inner_iter=40, inner_params=dict(step_size=step, switching_level=1e-4))
    assert max(calls) == 39                   # the default runs them on the inner index
    # same steps, same iterates: an outer-indexed run equals subproblems run one by one with constants
    manual = proximal_point(problem(), rho_hat=1.0, outer_iter=1, inner_iter=40,
                            inner_params=dict(step_size=0.02, switching_level=1e-4)).x
    first = proximal_point(problem(), rho_hat=1.0, outer_iter=1, inner_iter=40, schedule_index="outer",
                           inner_params=dict(step_size=step, switching_level=1e-4)).x
    np.testing.assert_array_equal(first, manual)
    with pytest.raises(ValueError, match="schedule_index"):
        proximal_point(problem(), rho_hat=1.0, schedule_index="middle")
