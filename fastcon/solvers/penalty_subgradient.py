r"""Full-batch subgradient descent on a penalised objective :math:`f(x) + \lambda P(x)`.

The regularisation baseline of He, Huang, Yao & Lin [HHYL25] Appendix D.4: the fairness penalty
:math:`P` of (78) (partial demographic parity, with the thresholds :math:`\theta_p` as free
variables) or (83) (weak partial demographic parity), minimised by plain subgradient steps

.. math::

    x_{t+1} = x_t - \eta_t\,(\nabla f(x_t) + \lambda\,\zeta_t),\qquad \zeta_t \in \partial P(x_t),

keeping the last iterate, as the paper does (its "SGD" is full batch).
"""
from __future__ import annotations

import math

import numpy as np

from .._results import SolveResult
from ._common import check_choice
from ._run import SolverRun
from ._validation import check_real, check_schedule
from .idca import _start, check_dc_problem

__all__ = ["penalty_subgradient"]

_OUTPUTS = ("last", "best_penalised")


def penalty_subgradient(problem, x0=None, *, penalty, max_iter=1000, step_size=1e-3, output="last",
                        record_every=None, callback=None, verbose=False) -> SolveResult:
    r"""Subgradient descent on :math:`f + \lambda P` ([HHYL25] models (78) and (83)).

    Parameters
    ----------
    problem : object
        With ``objective_value_and_gradient(x, out)`` and ``penalty_value_and_subgradient(x, out)``
        (e.g. `fastcon.problems.PartialFairnessProblem`, whose penalty is (78) or (83) according to
        its constraint block), ``dim`` and ``x0``.
    x0 : array-like, optional
        Default ``problem.x0``.
    penalty : float
        :math:`\lambda \ge 0` (required).
    max_iter : int
        Iterations (paper: as many as IDCA's :math:`K \cdot T`).
    step_size : float or callable of t
        :math:`\eta_t > 0` (paper: constant, chosen in {5e-4, 1e-3, 2e-3, 5e-3} on validation).
    output : {"last", "best_penalised"}
        ``"last"`` (the paper's) or ``"best_penalised"``, the recorded iterate of lowest penalised
        objective (feasible or not).
    record_every : int, optional
        History period; default :math:`\lceil T/100 \rceil`.
    callback : callable ``(t, x_{t+1}, info) -> bool``, optional
    verbose : bool, int or str

    Returns
    -------
    SolveResult
        Status ``"max_iter"`` (or ``"converged"`` when a zero subgradient is met, ``"callback_stop"``).
        ``objective`` is :math:`f(x)`; ``info["penalty"]`` is :math:`P(x)` and
        ``info["penalised_objective"]`` :math:`f + \lambda P`. History: ``objective``, ``penalty``,
        ``penalised_objective``.
    """
    check_dc_problem(problem, ("objective_value_and_gradient", "penalty_value_and_subgradient"), "penalty_subgradient")
    run = SolverRun("penalty_subgradient", max_iter, record_every=record_every, callback=callback, verbose=verbose)
    lam = check_real("penalty", penalty)
    check_choice("output", output, _OUTPUTS)
    T = run.max_iter
    eta = check_schedule("step_size", step_size, T, positive=True)
    x = _start(problem, x0)
    grad = np.empty(problem.dim)
    sub = np.empty(problem.dim)
    best = (math.inf, None)
    message = ""
    t = -1
    with run.start():
        for t in range(T):
            f0 = problem.objective_value_and_gradient(x, grad)
            pen = problem.penalty_value_and_subgradient(x, sub)
            total = f0 + lam * pen
            if run.due(t):
                run.record(t, force=True, objective=f0, penalty=pen, penalised_objective=total)
                if output == "best_penalised" and total < best[0]:
                    best = (total, x.copy())
            grad += lam * sub
            if not np.any(grad):
                run.status, message = "converged", f"iteration {t}: zero subgradient of the penalised objective"
                break
            x -= eta[t] * grad
            if run.tick(t, x, {"objective": f0, "penalty": pen}, objective=total):
                break
    if output == "best_penalised" and best[1] is not None:
        x = best[1]
    f0 = problem.objective_value_and_gradient(x, grad)
    pen = problem.penalty_value_and_subgradient(x, sub)
    info = {"penalty": pen, "penalised_objective": f0 + lam * pen, "penalty_weight": lam, "output": output}
    return run.finish(x, message=message, n_iter=t + 1, objective=f0, info=info)
