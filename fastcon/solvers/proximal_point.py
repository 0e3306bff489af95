r"""Inexact proximal point (IPP) with a pluggable inner solver: IPP-SSG and IPP-ConEx (the baselines of
Huang & Lin [HL23] §6) and the online stochastic inner solver of Ma, Lin & Yang [MLY20] (Algorithm 3).

Outer loop ([MLY20]; [HL23] §6; see docs/references.md): for :math:`k = 0, 1, \dots, K-1`, approximately solve

.. math::

    \min_{z \in \mathcal X} F_k(z) = f(z) + \frac{\hat\rho}{2}\|z - x_k\|^2
    \quad\text{s.t.}\quad G_k(z) \le 0,

([HL23] eq. (4)) with ``inner_iter`` iterations of the inner solver warm-started at :math:`x_k`, and
set :math:`x_{k+1}` to the inner output. :math:`G_k = g` by default; with ``prox_on_constraint``
:math:`G_k = g + \frac{\hat\rho}{2}\|\cdot - x_k\|^2` as in [MLY20] eq. (9) (for weakly convex
:math:`g`). For :math:`\hat\rho > \rho` the subproblem is strongly convex.
"""
from __future__ import annotations

import numpy as np

from ..problems._protocol import require_constrained_problem
from .._results import Counters, SolveResult
from ..problems import ConstrainedProblem, ProximalTerm
from ._schedules import Schedule, constant, linear
from .conex import _conex
from .online_stochastic import _online_stochastic_subgradient
from ._common import as_seed_sequence, check_choice, describe_seed, FEASIBILITY_TOLERANCE, start_point
from ._run import SolverRun
from ._validation import check_count, check_real, check_schedule_length
from .switching import _switching_subgradient

__all__ = ["proximal_point"]


def proximal_point(problem, x0=None, *, rho_hat, outer_iter=50, inner_solver="switching", inner_iter=100,
                   inner_params=None, inner_output="weighted_average", prox_on_constraint=False,
                   dual_warm_start=True, schedule_index="inner", feasibility_tolerance=FEASIBILITY_TOLERANCE, seed=0,
                   record_every=None, callback=None, verbose=False) -> SolveResult:
    r"""IPP outer loop around `switching_subgradient` (IPP-SSG), `conex` (IPP-ConEx) or
    `online_stochastic_subgradient` ([MLY20] Algorithm 3).

    Parameters
    ----------
    problem : ConstrainedProblem
    x0 : array-like, optional
    rho_hat : float
        :math:`\hat\rho > \rho` (the weak-convexity modulus of :math:`f`), positive and finite.
    outer_iter : int
        :math:`K \ge 1`, an integer.
    inner_solver : {"switching", "conex", "online"}
        ``"online"``: [MLY20] Algorithm 3 (virtual queues, stochastic minibatch oracles),
        see `online_stochastic_subgradient`.
    inner_iter : int
        Inner iterations per subproblem, a positive integer ([HL23] §6.1, §6.2: 100 on ROC, 1000 on Wasserstein).
    inner_params : dict, optional
        Keyword arguments of the inner solver (``step_size``/``switching_level`` for SSG;
        ``primal_step``/``dual_step``/``theta`` for ConEx, e.g. from `prox_weights_to_steps`;
        ``V``/``prox_weight``/``objective_batch_size``/``constraint_batch_size`` for ``"online"``).
        Their schedules run on the inner index, restarting at 0 for every subproblem, unless
        ``schedule_index="outer"``.
    inner_output : {"weighted_average", "last"}
        ``"weighted_average"``: for SSG the :math:`(t+1)`-weighted average of the inner iterates in
        the inner :math:`I` ([MLY20] Algorithm 2), the last inner iterate if :math:`I` is empty;
        for ConEx the :math:`\gamma_t = t + 1` weighted average of :math:`z_{t+1}`; for ``"online"``
        the uniform average :math:`\frac1K\sum_{k<K} z_k`, its only output rule (``"last"`` is
        rejected).
    prox_on_constraint : bool
        Add the proximal term to the constraints too.
    dual_warm_start : bool
        IPP-ConEx: start subproblem k's multipliers at subproblem k-1's output multipliers instead
        of 0 (the primal is warm-started at :math:`x_k` either way). Consecutive subproblems differ
        only by the proximal centre, so their multipliers are close; restarting at 0 makes every
        short inner run begin by ignoring the constraint. On ROC a9a (paper grid point
        :math:`\hat\rho = 2\max(\rho, 1)`, :math:`c_1 = 20`, :math:`c_2 = 0.005`, 50 x 100
        iterations) the final :math:`g` is :math:`1.1\cdot10^{-4}` restarting at 0 and
        :math:`8.8\cdot10^{-7}` warm-started. Ignored for SSG (no multipliers).
    schedule_index : {"inner", "outer"}
        Which index the inner solver's schedules (``step_size``, ``switching_level``,
        ``primal_step``, ``dual_step``, ``theta`` in ``inner_params``) run on. ``"inner"``: :math:`t = 0, 1, \dots` within each subproblem.
        ``"outer"``: subproblem k uses the constant value at :math:`t = k`. The second reading
        exists for schedules written in the outer index, e.g. [HL23] §6.2's Wasserstein IPP-ConEx
        prox weights :math:`\eta_k = c_1/\sqrt{k+1}`, :math:`\tau_k = c_2/(k+1)`: on the inner
        index their primal step :math:`\sqrt{t+1}/c_1` grows and the product of primal and dual
        steps grows like :math:`t^{3/2}`, which breaks ConEx's step coupling and diverges.
    feasibility_tolerance : float
        :math:`\ge 0`. The run ends with status ``"no_feasible_iterate"`` instead of ``"max_iter"``
        when no point it saw has :math:`g \le` this value (default 1e-5): the recorded inner
        iterates (their history rows hold :math:`g` of the original problem) and the outer iterates
        :math:`x_1..x_K` (via the inner results' violation, which bounds :math:`g` from above). It
        only decides the status.
    seed : int >= 0, SeedSequence, Generator or None
        Inner solve k is seeded with the k-th child of the seed's `SeedSequence`.
    record_every : int, optional
        Inner history period (in inner iterations; every inner run also records its last
        iteration). Default None: each inner run applies the rule every solver shares
        (`fastcon.solvers._common.default_record_every`) to ``inner_iter`` iterations; a record
        evaluates :math:`f` and :math:`g` of the original problem.
    callback : callable ``(k, x_{k+1}, info) -> bool``, optional
        Called after each outer step with ``info["inner"]`` the inner `SolveResult`; True stops.
    verbose : bool
        Progress over outer iterations.

    Returns
    -------
    SolveResult
        ``x`` = :math:`x_K`; status ``"max_iter"``, ``"no_feasible_iterate"`` (see
        ``feasibility_tolerance``; the message gives the smallest :math:`g` seen and points to
        `check_feasibility`) or ``"callback_stop"``. The history concatenates the inner histories with the global inner
        iteration count, cumulative time and data passes, the metrics of the *original* problem
        (:math:`f`, :math:`g`, not :math:`F_k`, :math:`G_k`) and an ``outer`` column :math:`k`.
        ``counters`` sums the inner data passes and steps; ``info["outer_iterates"]`` holds
        :math:`x_0..x_K` and ``info["inner_status"]`` the inner statuses.
    """
    require_constrained_problem(problem, "proximal_point")
    check_choice("inner_solver", inner_solver, ("switching", "conex", "online"))
    check_choice("inner_output", inner_output, ("weighted_average", "last"))
    check_choice("schedule_index", schedule_index, ("inner", "outer"))
    run = SolverRun(f"proximal_point[{inner_solver}]", outer_iter, count_name="outer_iter",
                    record_every=record_every, callback=callback, verbose=verbose,
                    feasibility_tolerance=feasibility_tolerance, seed=seed)
    K = run.max_iter
    inner_iter = check_schedule_length("inner_iter", check_count("inner_iter", inner_iter))
    rho_hat = check_real("rho_hat", rho_hat, positive=True)
    params = dict(inner_params or {})
    for key in ("max_iter", "output", "seed", "record_every", "record_problem", "multipliers0"):
        if key in params:
            raise ValueError(f"inner_params: {key!r} is set by proximal_point")
    if inner_solver == "switching":
        solve = _switching_subgradient
        params.update(output="average" if inner_output == "weighted_average" else "last",
                      average_weights="linear")
    elif inner_solver == "online":
        if inner_output != "weighted_average":
            raise ValueError("inner_output: Algorithm 3 (inner_solver='online') outputs the uniform average of "
                             "its iterates; use inner_output='weighted_average'")
        solve = _online_stochastic_subgradient
    else:
        solve = _conex
        params["output"] = "average" if inner_output == "weighted_average" else "last"
        if inner_output == "weighted_average":
            params.setdefault("average_weights", linear(1.0))

    x = start_point(problem, x0)
    children = as_seed_sequence(seed).spawn(K)
    iterates = [x.copy()]
    columns, statuses = {}, []
    totals = {"rows_f": 0, "rows_g": 0}
    offset_t, offset_time, res = 0, 0.0, None
    with run.start(counters=Counters(problem.n_samples_f, problem.n_samples_g)):
        for k in range(K):
            objective = ProximalTerm(problem.objective, rho_hat, x)
            constraints = ([ProximalTerm(c, rho_hat, x) for c in problem.constraints] if prox_on_constraint
                           else problem.constraints)
            sub = ConstrainedProblem(objective, constraints, problem.domain, x0=x, name=f"{problem.name}/prox{k}")
            if inner_solver == "conex" and dual_warm_start and res is not None:
                params["multipliers0"] = res.multipliers
            step_params = params if schedule_index == "inner" else _at_outer_index(params, k)
            res = solve(sub, x, max_iter=inner_iter, seed=children[k], record_every=record_every,
                        record_problem=problem, **step_params)
            x = res.x.copy()
            iterates.append(x.copy())
            statuses.append(res.status)
            # Smallest g seen: recorded inner rows hold g of the original problem; an inner result's
            # max_violation bounds max(0, g(x_{k+1})) from above (G_k >= g with prox_on_constraint).
            recorded = res.history.get("constraint")
            if recorded is not None and len(recorded) and np.isfinite(recorded).any():
                run.offer(k, float(np.nanmin(recorded)))
            run.offer(k, res.max_violation)
            _append_history(columns, res.history, k, offset_t, offset_time, totals, problem)
            offset_t += res.n_iter
            offset_time += float(res.history["time"][-1]) if len(res.history.get("time", ())) else 0.0
            for key, value in res.counters.items():
                if not key.startswith("data_passes"):
                    totals[key] = totals.get(key, 0) + value
            if run.tick(k, x, {"inner": res}, f=res.objective, viol=res.max_violation):
                break

    run.counters.values.update(totals)
    run.counters.add("outer_iterations", len(statuses))
    history = {key: np.asarray(v) for key, v in columns.items()}
    info = {"outer_iterates": np.array(iterates), "inner_status": statuses, "rho_hat": rho_hat,
            "inner_solver": inner_solver, "inner_iter": int(inner_iter), "inner_output": inner_output,
            "prox_on_constraint": bool(prox_on_constraint), "dual_warm_start": bool(dual_warm_start),
            "seed": describe_seed(seed), "feasibility_tolerance": run.feasibility_tolerance}
    g_final = float(problem.g(x)[0])
    info["best_constraint"] = run.offer(K, g_final)
    return run.finish(x, objective=problem.f(x), max_violation=max(0.0, g_final), n_iter=offset_t, info=info,
                      message=f"{len(statuses)} outer iterations of {inner_iter} inner {inner_solver} iterations",
                      multipliers=None if res is None else res.multipliers, history=history,
                      subject="no recorded inner iterate and no outer iterate")


def _at_outer_index(params, k):
    """``params`` with every schedule replaced by its constant value at the outer index ``k``."""
    out = dict(params)
    for key, value in params.items():
        if key in _SCHEDULE_KEYS and (isinstance(value, Schedule) or callable(value)):
            out[key] = constant(float(value(k)))
    return out


#: The inner solvers' step and switching-level schedules (SSG: step, switching level; ConEx: steps, extrapolation).
_SCHEDULE_KEYS = ("step_size", "switching_level", "primal_step", "dual_step", "theta")


def _append_history(columns, inner, k, offset_t, offset_time, totals, problem):
    """Append an inner history with global iteration/time/data-pass offsets and an ``outer`` column."""
    n = len(inner.get("iteration", ()))
    if n == 0:
        return
    shifted = dict(inner)
    shifted["iteration"] = inner["iteration"] + offset_t
    shifted["time"] = inner["time"] + offset_time
    n_f, n_g = problem.n_samples_f, problem.n_samples_g
    shifted["data_passes_f"] = inner["data_passes_f"] + (totals["rows_f"] / n_f if n_f else 0.0)
    shifted["data_passes_g"] = inner["data_passes_g"] + (totals["rows_g"] / n_g if n_g else 0.0)
    shifted["outer"] = np.full(n, k)
    n_before = len(columns.get("iteration", ()))
    # Insertion order (not a set): columns keep the same order in every process and run.
    for key in list(columns) + [key for key in shifted if key not in columns]:
        column = columns.setdefault(key, [np.nan] * n_before)
        column.extend(shifted[key].tolist() if key in shifted else [np.nan] * n)
