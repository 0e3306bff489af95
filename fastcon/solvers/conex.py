r"""ConEx, the constraint-extrapolation primal-dual method (Boob, Deng & Lan [BDL22], Algorithm 1).

For :math:`\min_{x\in\mathcal X} f(x)` s.t. :math:`g_i(x) \le 0`, in the **multiplicative** step
convention (fastcon's reading of the step values of Huang & Lin [HL23] §6; see docs/references.md):

.. math::

    s_t &= (1 + \theta_t)\,\ell_t - \theta_t\,\ell_{t-1}, \qquad
    y_{t+1} = [\,y_t + \tau_t s_t\,]_+, \\
    x_{t+1} &= \operatorname{proj}_{\mathcal X}\bigl(x_t - \eta_t\,(f'(x_t) + \textstyle\sum_i y_{t+1,i}\, g_i'(x_t))\bigr),

with :math:`\ell_{t+1}` the linearized (``linearized``) or exact (``exact``) constraint values.
`prox_weights_to_steps` converts [BDL22]'s prox weights. Design notes: docs/design.md, 'Module notes'.
"""
from __future__ import annotations

import numpy as np

from ..problems._protocol import require_constrained_problem
from .._kernels._vector import conex_primal_step, linearized_values
from .._results import SolveResult
from ._output import WeightedAverage
from ._run import SolverRun
from ._schedules import Schedule, as_schedule
from ._common import (
    average_weight_values, check_choice, constraint_rows, describe_seed, FEASIBILITY_TOLERANCE,
    make_objective_oracle, start_point, stationarity_certificate, seeded_streams,
)
from ._validation import check_optional_count, check_optional_real, check_schedule

__all__ = ["conex", "prox_weights_to_steps"]


def prox_weights_to_steps(eta_prox, tau_prox):
    r"""Convert [BDL22]'s prox weights :math:`(\eta_t, \tau_t)` to multiplicative steps :math:`(1/\eta_t, 1/\tau_t)`.

    E.g. IPP-ConEx's :math:`\eta_k = c_1(k+1)`, :math:`\tau_k = c_2/(k+1)` ([HL23] §6.1) become
    primal steps :math:`1/(c_1(k+1))` and dual steps :math:`(k+1)/c_2`.

    Parameters
    ----------
    eta_prox, tau_prox : float or callable of t
        The prox weights :math:`\eta_t` and :math:`\tau_t`.

    Returns
    -------
    (Schedule, Schedule)
        ``primal_step``, ``dual_step`` for `conex`.
    """
    eta, tau = as_schedule(eta_prox, "eta_prox"), as_schedule(tau_prox, "tau_prox")
    return (Schedule(lambda t: 1.0 / eta(t), f"1/({eta!r})"),
            Schedule(lambda t: 1.0 / tau(t), f"1/({tau!r})"))


def conex(problem, x0=None, *, max_iter=1000, primal_step=1e-2, dual_step=20.0, theta=1.0,
          extrapolation="linearized", output="last", average_weights=1.0, multipliers0=None,
          objective_oracle="deterministic", objective_batch_size=None, feasibility_tolerance=FEASIBILITY_TOLERANCE,
          seed=0, record_every=None, callback=None, verbose=False, record_stationarity_every=None,
          stationarity_rho_hat=None) -> SolveResult:
    r"""ConEx primal-dual method (see the module docstring for the iteration).

    Parameters
    ----------
    problem : ConstrainedProblem
    x0 : array-like, optional
    max_iter : int
        :math:`T \ge 1`, an integer.
    primal_step, dual_step : float or callable of t
        :math:`\eta_t` and :math:`\tau_t`, multiplicative, finite and :math:`\ge 0` ([HL23] §6's
        single-loop grids: :math:`c_1/\sqrt{t+1}`, :math:`c_1 \in \{0.01, 0.02, 0.05\}`;
        :math:`c_2 \in \{20, 50, 100\}`). 0 freezes the primal iterate or the multipliers
        (degenerate but well defined, like a zero step of `switching_subgradient`).
    theta : float or callable of t
        Extrapolation weight :math:`\theta_t \ge 0`, finite (1 in the convex case; :math:`t/(t+1)`
        in the strongly convex schedule of [BDL22] used by IPP-ConEx).
    extrapolation : {"linearized", "exact"}
        :math:`\ell` as the linearization of :math:`g` at the previous point ([BDL22]) or exact values.
    output : {"last", "average"}
        :math:`x_T`, or :math:`\bar x_T = \sum_t \gamma_t x_{t+1} / \sum_t \gamma_t` ([BDL22]); the
        multipliers are the last :math:`y_T` or averaged alike.
    average_weights : {"step_size", "linear"}, float or callable of t
        The weights :math:`\gamma_t \ge 0` of ``output="average"``, as in `switching_subgradient`:
        1 (default) uniform, ``"linear"`` or ``linear(1)`` :math:`t + 1`, ``"step_size"`` the primal
        step :math:`\eta_t`; all 0: the plain average.
    multipliers0 : array-like of shape (m,), optional
        Initial multipliers (default 0).
    objective_oracle, objective_batch_size
        As in `switching_subgradient` (a minibatch subgradient of :math:`f`).
    feasibility_tolerance : float
        :math:`\ge 0`. The run ends with status ``"no_feasible_iterate"`` instead of ``"max_iter"``
        when neither an iterate :math:`x_0..x_T` nor the output has :math:`g \le` this value
        (default 1e-5). It only decides the status.
    seed, record_every, callback, verbose, record_stationarity_every, stationarity_rho_hat
        As in `switching_subgradient` (``record_every=None``: the shared default rule; a record here
        reads no data unless the objective oracle is stochastic, whose exact :math:`f` it then
        needs); ``callback(t, x_{t+1}, info)`` gets ``y`` (live buffer) and ``constraint`` in ``info``.

    Returns
    -------
    SolveResult
        Status ``"max_iter"``, ``"no_feasible_iterate"`` (see ``feasibility_tolerance``; the message
        gives the smallest :math:`g` reached and points to `check_feasibility`) or
        ``"callback_stop"``. ``info["best_constraint"]`` is the smallest :math:`g(x_t)`.
        ``multipliers`` :math:`y`; history columns ``objective``, ``constraint`` (raw :math:`g(x_t)`),
        ``max_violation``, ``multiplier_norm`` :math:`\|y_t\|_2`, ``data_passes_f/g`` (algorithm
        reads only; with a deterministic objective the recorded :math:`f(x_t)` comes free with its
        subgradient).
    """
    require_constrained_problem(problem, "conex")
    # locals() is exactly the parameters here: forward them all to the implementation.
    return _conex(**locals())


def _conex(problem, x0=None, *, max_iter=1000, primal_step=1e-2, dual_step=20.0, theta=1.0,
           extrapolation="linearized", output="last", average_weights=1.0, multipliers0=None,
           objective_oracle="deterministic", objective_batch_size=None, feasibility_tolerance=FEASIBILITY_TOLERANCE,
           seed=0, record_every=None, callback=None, verbose=False, record_stationarity_every=None,
           stationarity_rho_hat=None, record_problem=None) -> SolveResult:
    """`conex` with ``record_problem``: the problem whose exact values the history records
    (default ``problem``). `proximal_point` solves subproblems but records the original problem.
    """
    check_choice("extrapolation", extrapolation, ("linearized", "exact"))
    check_choice("output", output, ("last", "average"))
    check_choice("objective_oracle", objective_oracle, ("deterministic", "stochastic"))
    run = SolverRun("conex", max_iter, record_every=record_every, callback=callback, verbose=verbose,
                    feasibility_tolerance=feasibility_tolerance, seed=seed)
    T = run.max_iter
    check_optional_count("record_stationarity_every", record_stationarity_every)
    check_optional_real("stationarity_rho_hat", stationarity_rho_hat, positive=True)
    check_optional_count("objective_batch_size", objective_batch_size)
    if not problem.constraints:
        raise ValueError("problem: ConEx needs at least one constraint")
    if record_stationarity_every is not None and stationarity_rho_hat is None:
        raise ValueError("stationarity_rho_hat: needed when record_stationarity_every is set")
    eta = check_schedule("primal_step", primal_step, T)
    tau = check_schedule("dual_step", dual_step, T)
    th = check_schedule("theta", theta, T)
    gamma = average_weight_values(average_weights, T, eta)

    cons, m, d = problem.constraints, problem.n_constraints, problem.dim
    rec = problem if record_problem is None else record_problem
    x = start_point(problem, x0)
    y = np.zeros(m) if multipliers0 is None else np.array(multipliers0, dtype=np.float64).reshape(m)
    if not np.all(y >= 0) or not np.all(np.isfinite(y)):
        raise ValueError("multipliers0: multipliers must be finite and non-negative")
    (rng_f,) = seeded_streams(seed, 1)
    eval_f = make_objective_oracle(problem, objective_oracle, objective_batch_size, rng_f)
    reuse_f = objective_oracle == "deterministic" and rec is problem
    # every iteration reads the objective (its batch) and every constraint row; a record reads
    # the exact f unless reused, and g only when it records another problem
    it_rows = (problem.n_samples_f if objective_oracle == "deterministic" else int(objective_batch_size or 1))
    rec_rows = (0 if reuse_f else rec.n_samples_f) + (0 if rec is problem else constraint_rows(rec))
    # Two (values, subgradients) slots: at x_t ("cur") and x_{t+1} ("nxt"), swapped each iteration.
    g_cur, g_nxt = np.empty(m), np.empty(m)
    G_cur, G_nxt = np.empty((m, d)), np.empty((m, d))
    ell, ell_prev, s, scratch = np.empty(m), np.empty(m), np.empty(m), np.empty(m)
    # Row views created once, so the loop hands each constraint its output row without allocating.
    views = {id(G): [G[i] for i in range(m)] for G in (G_cur, G_nxt)}
    f_grad, x_prev = np.empty(d), np.empty(d)

    def constraints_at(x, values, grads):
        for i, (c, row) in enumerate(zip(cons, views[id(grads)])):
            values[i] = c.value_and_subgradient(x, row)

    with run.start(problem, record_rows=rec_rows, iteration_rows=it_rows + constraint_rows(problem)):
        meter = run.meter
        constraints_at(x, g_cur, G_cur)
        ell[:] = g_cur
        ell_prev[:] = g_cur
        avg_x, avg_y = WeightedAverage(d), WeightedAverage(m)
        info_cb = {}
        for t in range(T):
            f_t = eval_f(x, f_grad)
            # s_t = (1 + theta_t) l_t - theta_t l_{t-1};  y_{t+1} = [y_t + tau_t s_t]_+
            np.multiply(ell, 1.0 + th[t], out=s)
            np.multiply(ell_prev, th[t], out=scratch)
            s -= scratch
            s *= tau[t]
            y += s
            np.maximum(y, 0.0, out=y)
            g_t = float(g_cur.max())
            run.offer(t, g_t)  # smallest g(x_t), read from values the loop computes anyway
            stat_due = record_stationarity_every is not None and t % record_stationarity_every == 0
            if run.due(t) or stat_due:
                with meter:
                    f_rec = f_t if reuse_f else rec.f(x)
                    g_rec = g_t if rec is problem else rec.g(x)[0]
                    extra = ({"stationarity": stationarity_certificate(rec, x, stationarity_rho_hat)}
                             if stat_due else {})
                run.record(t, force=True, extra=extra, objective=f_rec, constraint=g_rec,
                           max_violation=max(0.0, g_rec), multiplier_norm=float(np.sqrt(y @ y)))
            # x_{t+1} = proj(x_t - eta_t (f' + sum_i y_{t+1,i} g_i'(x_t)))
            conex_primal_step(x, x_prev, f_grad, G_cur, y, eta[t])  # fused: x_prev = x, then the step
            problem.project_inplace(x)
            constraints_at(x, g_nxt, G_nxt)
            ell_prev, ell = ell, ell_prev  # ell_prev <- l_t; ell is overwritten with l_{t+1}
            if extrapolation == "exact":
                ell[:] = g_nxt
            else:  # l_{t+1} = g(x_t) + g'(x_t)(x_{t+1} - x_t)
                linearized_values(G_cur, x, x_prev, g_cur, ell)
            g_cur, g_nxt, G_cur, G_nxt = g_nxt, g_cur, G_nxt, G_cur
            if output == "average":
                avg_x.offer(t, x, gamma[t])
                avg_y.offer(t, y, gamma[t])
            info_cb.update(constraint=g_t, y=y)
            if run.tick(t, x, info_cb, g=lambda: float(g_cur.max()), y=lambda: float(y.max())):
                break

    if output == "average" and not avg_x.empty:
        x_out, y_out = avg_x.x, avg_y.x
    else:
        x_out, y_out = x.copy(), y.copy()
    n = run.n_iter
    best_g = run.offer(n, float(g_cur.max()))  # x_n, evaluated by the last iteration
    with meter:
        objective = problem.f(x_out)
        # g at x_T is already known from the loop (it fed l_{T}); the average needs a pass.
        g_out = (float(g_cur.max()) if output == "last" or avg_x.empty else float(problem.g(x_out)[0]))
    run.offer(n, g_out)
    run.counters.add("objective_subgradients", n)
    run.counters.add("constraint_evaluations", n + 1)
    info = {"output": output, "extrapolation": extrapolation, "primal_step": repr(as_schedule(primal_step)),
            "dual_step": repr(as_schedule(dual_step)), "theta": repr(as_schedule(theta)),
            "feasibility_tolerance": run.feasibility_tolerance, "best_constraint": best_g,
            "seed": describe_seed(seed)}
    return run.finish(x_out, objective=objective, max_violation=max(0.0, g_out), message=f"ran {n} iterations",
                      multipliers=y_out, info=info, subject="neither an iterate nor the output")
