r"""Switching subgradient with Polyak constraint steps, applied directly to a DC-constrained problem.

He, Huang, Yao & Lin [HHYL25] Algorithm 3, the comparator of their Figures 9–10: the iteration of
their Algorithm 2 run on the nonconvex problem (21) itself instead of a convex majorisation:
:math:`\min f` s.t. :math:`g_i = g_i^+ - g_i^- \le 0` (the paper's :math:`f_0, f_i`). For :math:`t < T`,
with :math:`g = \max_i g_i`:

.. math::

    x_{t+1} = \begin{cases} x_t - \dfrac{\epsilon_t}{\|\zeta_0\|^2}\zeta_0, & g(x_t) \le \epsilon_t,\
    \zeta_0 \in \partial f(x_t) \quad (t \in \mathcal T)\\[1ex]
    x_t - \dfrac{g(x_t)}{\|\zeta\|^2}\zeta, & \text{otherwise},\ \zeta \in \partial g_{i^*}^+(x_t) -
    \partial g_{i^*}^-(x_t),\ i^* = \arg\max_i g_i(x_t) \end{cases}

and the output is :math:`x_\tau`, :math:`\tau = \arg\min_{t\in\mathcal T} f(x_t)`. There is no
convergence theory for DC constraints (the paper calls it a heuristic); it may stall at an infeasible
stationary point of the constraints, which IDCA avoids.
"""
from __future__ import annotations

import math

import numpy as np

from .._results import SolveResult
from ._common import check_choice
from ._step_rules import LevelStep, PolyakStep
from ._switching_core import switching_loop
from ._run import SolverRun
from ._validation import check_schedule
from .idca import DCOracle, _start, check_dc_problem

__all__ = ["switching_polyak"]

_OUTPUTS = ("best_feasible", "last")


def switching_polyak(problem, x0=None, *, max_iter=1000, switching_level=1e-3, output="best_feasible",
                     record_every=None,
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
    switching_level : float or callable of t
        :math:`\epsilon_t > 0`: static (paper: {1e-4, 2e-4, 5e-4, 1e-3}) or diminishing, e.g.
        ``lambda t: c / (t + 1)`` with :math:`c \in \{0.2, 0.5, 1, 2\}`.
    output : {"best_feasible", "last"}
        ``"best_feasible"``: the paper's :math:`x_\tau`, the nearly feasible iterate of lowest :math:`f`; ``"last"``: :math:`x_T`.
    record_every : int, optional
        History period; default :math:`\lceil T/100 \rceil`.
    callback : callable ``(t, x_{t+1}, info) -> bool``, optional
        True stops with status ``"callback_stop"``.
    verbose : bool, int or str
        See `fastcon._progress.Progress`.

    Returns
    -------
    SolveResult
        ``"max_iter"``; ``"converged"`` when the objective's subgradient is zero at an iterate with
        :math:`g(x_t) \le \epsilon_t` (a stationary point); ``"no_feasible_iterate"`` when no :math:`t` met :math:`g(x_t) \le \epsilon_t`
        (``x`` is then :math:`x_T`); ``"infeasible_stationary"`` when the active constraint's subgradient
        is zero at a violated point; ``"callback_stop"``. History: ``iteration``, ``time``,
        ``objective`` :math:`f(x_t)`, ``constraint`` :math:`g(x_t)`, ``max_violation``,
        ``step_kind``, ``switching_level``.
    """
    check_dc_problem(problem, ("objective_value", "objective_value_and_gradient", "constraint_values",
                               "constraint_subgradient"), "switching_polyak")
    check_choice("output", output, _OUTPUTS)
    run = SolverRun("switching_polyak", max_iter, record_every=record_every, callback=callback, verbose=verbose)
    T = run.max_iter
    eps = check_schedule("switching_level", switching_level, T, positive=True)
    x = _start(problem, x0)
    with run.start(default_every=max(1, math.ceil(T / 100))):
        best_f0, best_x, tau = math.inf, None, -1

        def before_step(state):
            nonlocal best_f0, best_x, tau
            t, fmax = state.t, state.constraint
            if state.kind == "f":
                if state.objective < best_f0:
                    best_f0, best_x, tau = state.objective, x.copy(), t
                if run.due(t):
                    run.record(t, force=True, objective=state.objective, constraint=fmax, max_violation=max(0.0, fmax),
                               step_kind="f", switching_level=float(eps[t]))
            elif run.due(t):
                run.record(t, force=True, objective=problem.objective_value(x), constraint=fmax, max_violation=fmax,
                           step_kind="g", switching_level=float(eps[t]))

        def after_step(state):
            info = {"constraint": state.constraint, "switching_level": float(eps[state.t])}
            return "callback_stop" if run.tick(state.t, x, info, constraint=state.constraint) else None

        loop = switching_loop(x, DCOracle(problem), eps, T, objective_rule=LevelStep(), constraint_rule=PolyakStep(),
                              before_step=before_step, after_step=after_step)
    message = ""
    if loop.stop == "zero_constraint_direction":
        run.status = "infeasible_stationary"
        message = (f"iteration {loop.last.t}: constraint {loop.last.index} is violated by {loop.last.constraint:.3g} "
                   "and its subgradient is zero (an infeasible stationary point)")
    elif loop.stop == "zero_objective_direction":
        run.status = "converged"
        message = (f"iteration {loop.last.t}: the objective's subgradient is zero at a nearly feasible iterate "
                   f"(g = {loop.last.constraint:.3g} <= switching_level = {eps[loop.last.t]:.3g}): a stationary point")
    best_g = loop.best_constraint
    if best_x is None:
        if run.status == "max_iter":
            run.status = "no_feasible_iterate"
            message = f"no iterate met g(x_t) <= switching_level; the smallest g(x_t) seen was {best_g:.3g}"
    elif output == "best_feasible":
        x = best_x
    f0 = problem.objective_value(x)
    values = problem.constraint_values(x)
    fmax = float(np.max(values, initial=-math.inf))
    run.counters.add("objective_steps", loop.objective_steps)
    run.counters.add("constraint_steps", loop.constraint_steps)
    info = {"max_iter": T, "output": output, "tau": tau, "best_constraint": best_g}
    return run.finish(x, objective=f0, max_violation=max(0.0, fmax), message=message, n_iter=loop.n_iter, info=info)
