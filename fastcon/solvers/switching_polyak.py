r"""Switching subgradient with Polyak constraint steps, applied directly to a DC-constrained problem.

He, Huang, Yao & Lin [HHYL25] Algorithm 3, the comparator of their Figures 9–10: the iteration of
their Algorithm 2 run on the nonconvex problem (21) itself instead of a convex majorisation. For
:math:`t < T`, with :math:`f = \max_i f_i`:

.. math::

    x_{t+1} = \begin{cases} x_t - \dfrac{\epsilon_t}{\|\zeta_0\|^2}\zeta_0, & f(x_t) \le \epsilon_t,\
    \zeta_0 \in \partial f_0(x_t) \quad (t \in \mathcal T)\\[1ex]
    x_t - \dfrac{f(x_t)}{\|\zeta\|^2}\zeta, & \text{otherwise},\ \zeta \in \partial f_{i^*}^+(x_t) -
    \partial f_{i^*}^-(x_t),\ i^* = \arg\max_i f_i(x_t) \end{cases}

and the output is :math:`x_\tau`, :math:`\tau = \arg\min_{t\in\mathcal T} f_0(x_t)`. There is no
convergence theory for DC constraints (the paper calls it a heuristic); it may stall at an infeasible
stationary point of the constraints, which IDCA avoids.
"""
from __future__ import annotations

import math

import numpy as np

from .._progress import Progress
from .._results import Counters, History, SolveResult
from ._common import check_choice
from ._step_rules import LevelStep, PolyakStep
from ._switching_core import switching_loop
from ._validation import check_callback, check_count, check_optional_count, check_schedule
from .idca import DCOracle, _start, check_dc_problem

__all__ = ["switching_polyak"]

_OUTPUTS = ("best", "last")


def switching_polyak(problem, x0=None, *, max_iter=1000, tolerance=1e-3, output="best", record_every=None,
                     callback=None, verbose=False) -> SolveResult:
    r"""[HHYL25] Algorithm 3: switching subgradient with the Polyak step on the DC problem directly.

    Parameters
    ----------
    problem : DC problem
        With ``objective_value_and_gradient``, ``constraint_values`` and ``constraint_subgradient``
        (e.g. `fastcon.problems.PartialFairnessProblem`).
    x0 : array-like, optional
        Default ``problem.x0``.
    max_iter : int
        :math:`T`.
    tolerance : float or callable of t
        :math:`\epsilon_t > 0`: static (paper: {1e-4, 2e-4, 5e-4, 1e-3}) or diminishing, e.g.
        ``lambda t: c / (t + 1)`` with :math:`c \in \{0.2, 0.5, 1, 2\}`.
    output : {"best", "last"}
        ``"best"``: the paper's :math:`x_\tau`; ``"last"``: :math:`x_T`.
    record_every : int, optional
        History period; default :math:`\lceil T/100 \rceil`.
    callback : callable ``(t, x_{t+1}, info) -> bool``, optional
        True stops with status ``"callback_stop"``.
    verbose : bool, int or str
        See `fastcon._progress.Progress`.

    Returns
    -------
    SolveResult
        ``"max_iter"``; ``"no_feasible_iterate"`` when no :math:`t` met :math:`f(x_t) \le \epsilon_t`
        (``x`` is then :math:`x_T`); ``"stalled_infeasible"`` when the active constraint's subgradient
        is zero at a violated point; ``"callback_stop"``. History: ``iteration``, ``time``,
        ``objective`` :math:`f_0(x_t)`, ``constraint`` :math:`f(x_t)`, ``max_violation``,
        ``step_kind``, ``tolerance``.
    """
    check_dc_problem(problem, ("objective_value", "objective_value_and_gradient", "constraint_values",
                               "constraint_subgradient"), "switching_polyak")
    check_choice("output", output, _OUTPUTS)
    T = check_count("max_iter", max_iter)
    eps = check_schedule("tolerance", tolerance, T, positive=True)
    every = check_optional_count("record_every", record_every) or max(1, math.ceil(T / 100))
    check_callback("callback", callback)
    x = _start(problem, x0)
    history = History(every)
    best = {"f0": math.inf, "x": None, "tau": -1}

    def before_step(state):
        t, fmax = state.t, state.constraint
        if state.kind == "f":
            if state.objective < best["f0"]:
                best.update(f0=state.objective, x=x.copy(), tau=t)
            if history.due(t) or t == T - 1:
                history.record(t, force=True, objective=state.objective, constraint=fmax,
                               max_violation=max(0.0, fmax), step_kind="f", tolerance=float(eps[t]))
        elif history.due(t) or t == T - 1:
            history.record(t, force=True, objective=problem.objective_value(x), constraint=fmax,
                           max_violation=fmax, step_kind="g", tolerance=float(eps[t]))

    with Progress(T, verbose, desc="switching_polyak") as progress:
        def after_step(state):
            progress.update(state.t, constraint=state.constraint)
            if callback is not None and callback(state.t, x, {"constraint": state.constraint,
                                                              "tolerance": float(eps[state.t])}):
                return "callback_stop"

        run = switching_loop(x, DCOracle(problem), eps, T, objective_rule=LevelStep(), constraint_rule=PolyakStep(),
                             before_step=before_step, after_step=after_step)
    status, message = "max_iter", ""
    if run.stop == "callback_stop":
        status = "callback_stop"
    elif run.stop == "zero_constraint_direction":
        status = "stalled_infeasible"
        message = (f"iteration {run.last.t}: constraint {run.last.index} is violated by {run.last.constraint:.3g} "
                   "and its subgradient is zero (an infeasible stationary point)")
    best_x, tau, best_g = best["x"], best["tau"], run.best_constraint
    if best_x is None:
        if status == "max_iter":
            status = "no_feasible_iterate"
            message = f"no iterate met f(x_t) <= tolerance; the smallest f(x_t) seen was {best_g:.3g}"
    elif output == "best":
        x = best_x
    f0 = problem.objective_value(x)
    values = problem.constraint_values(x)
    fmax = float(np.max(values, initial=-math.inf))
    counters = Counters()
    counters.add("objective_steps", run.objective_steps)
    counters.add("constraint_steps", run.constraint_steps)
    info = {"max_iter": T, "output": output, "tau": tau, "best_constraint": best_g}
    return SolveResult(x, status, message, n_iter=run.n_iter, objective=f0, max_violation=max(0.0, fmax),
                       history=history, counters=counters, info=info, solver="switching_polyak")
