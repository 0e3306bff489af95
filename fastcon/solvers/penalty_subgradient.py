r"""Full-batch subgradient descent on a penalised objective :math:`f_0(x) + \lambda P(x)`.

The regularisation baseline of He, Huang, Yao & Lin [HHYL25] Appendix D.4: the fairness penalty
:math:`P` of (78) (partial demographic parity, with the thresholds :math:`\theta_p` as free
variables) or (83) (weak partial demographic parity), minimised by plain subgradient steps

.. math::

    x_{t+1} = x_t - \eta_t\,(\nabla f_0(x_t) + \lambda\,\zeta_t),\qquad \zeta_t \in \partial P(x_t),

keeping the last iterate, as the paper does (its "SGD" is full batch).
"""
from __future__ import annotations

import math

import numpy as np

from .._progress import Progress
from .._results import Counters, History, SolveResult
from ._common import check_choice
from ._validation import check_callback, check_count, check_optional_count, check_real, check_schedule
from .idca import _start, check_dc_problem

__all__ = ["penalty_subgradient"]

_OUTPUTS = ("last", "best")


def penalty_subgradient(problem, penalty, x0=None, *, max_iter=1000, step_size=1e-3, output="last",
                        record_every=None, callback=None, verbose=False) -> SolveResult:
    r"""Subgradient descent on :math:`f_0 + \lambda P` ([HHYL25] models (78) and (83)).

    Parameters
    ----------
    problem : object
        With ``objective_value_and_gradient(x, out)`` and ``penalty_value_and_subgradient(x, out)``
        (e.g. `fastcon.problems.PartialFairnessProblem`, whose penalty is (78) or (83) according to
        its constraint block), ``dim`` and ``x0``.
    penalty : float
        :math:`\lambda \ge 0`.
    x0 : array-like, optional
        Default ``problem.x0``.
    max_iter : int
        Iterations (paper: as many as IDCA's :math:`K \cdot T`).
    step_size : float or callable of t
        :math:`\eta_t > 0` (paper: constant, chosen in {5e-4, 1e-3, 2e-3, 5e-3} on validation).
    output : {"last", "best"}
        ``"last"`` (the paper's) or the recorded iterate of lowest penalised objective.
    record_every : int, optional
        History period; default :math:`\lceil T/100 \rceil`.
    callback : callable ``(t, x_{t+1}, info) -> bool``, optional
    verbose : bool, int or str

    Returns
    -------
    SolveResult
        Status ``"max_iter"`` (or ``"converged"`` when a zero subgradient is met, ``"callback_stop"``).
        ``objective`` is :math:`f_0(x)`; ``info["penalty"]`` is :math:`P(x)` and
        ``info["penalised_objective"]`` :math:`f_0 + \lambda P`. History: ``objective``, ``penalty``,
        ``penalised_objective``.
    """
    check_dc_problem(problem, ("objective_value_and_gradient", "penalty_value_and_subgradient"), "penalty_subgradient")
    lam = check_real("penalty", penalty)
    check_choice("output", output, _OUTPUTS)
    T = check_count("max_iter", max_iter)
    eta = check_schedule("step_size", step_size, T, positive=True)
    every = check_optional_count("record_every", record_every) or max(1, math.ceil(T / 100))
    check_callback("callback", callback)
    x = _start(problem, x0)
    grad = np.empty(problem.dim)
    sub = np.empty(problem.dim)
    history = History(every)
    best = (math.inf, None)
    status, message = "max_iter", ""
    t = -1
    with Progress(T, verbose, desc="penalty_subgradient") as progress:
        for t in range(T):
            f0 = problem.objective_value_and_gradient(x, grad)
            pen = problem.penalty_value_and_subgradient(x, sub)
            total = f0 + lam * pen
            if history.due(t) or t == T - 1:
                history.record(t, force=True, objective=f0, penalty=pen, penalised_objective=total)
                if output == "best" and total < best[0]:
                    best = (total, x.copy())
            grad += lam * sub
            if not np.any(grad):
                status, message = "converged", f"iteration {t}: zero subgradient of the penalised objective"
                break
            x -= eta[t] * grad
            progress.update(t, objective=total)
            if callback is not None and callback(t, x, {"objective": f0, "penalty": pen}):
                status = "callback_stop"
                break
    if output == "best" and best[1] is not None:
        x = best[1]
    f0 = problem.objective_value_and_gradient(x, grad)
    pen = problem.penalty_value_and_subgradient(x, sub)
    info = {"penalty": pen, "penalised_objective": f0 + lam * pen, "penalty_weight": lam, "output": output}
    return SolveResult(x, status, message, n_iter=t + 1, objective=f0, max_violation=math.nan, history=history,
                       counters=Counters(), info=info, solver="penalty_subgradient")
