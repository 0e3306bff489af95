"""One fitting mechanism for the linear estimators: build the score-space problem, pick the solver, calibrate the bound.

`solve_linear` runs one solver on a `LinearModelProblem`; `calibrate_bound` wraps it in the loop
that tightens (or loosens) the smoothed surrogate's bound until the *hard* metric a user measures
is within the requested tolerance.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..solvers import switching_subgradient
from ..solvers.augmented_lagrangian import augmented_lagrangian

__all__ = ["SOLVERS", "choose_solver", "solve_linear", "calibrate_bound", "Calibration"]

#: Solvers an estimator accepts by name.
SOLVERS = ("auto", "augmented_lagrangian", "switching_subgradient")


def choose_solver(solver, loss, constraint):
    """The solver ``"auto"`` stands for (the rule is documented in the estimators' ``solver`` parameter)."""
    if solver not in SOLVERS:
        raise ValueError(f"solver: expected one of {SOLVERS}, got {solver!r}")
    if solver != "auto":
        return solver
    if loss == "hinge":
        return "switching_subgradient"
    return "augmented_lagrangian"


def solve_linear(problem, solver, x0, multipliers, max_iter, verbose, tol=1e-4):
    """One solve from ``x0`` (and multipliers, where the solver keeps them); returns the `SolveResult`.

    ``tol`` is the stationarity tolerance of the augmented Lagrangian (L-BFGS's ``gtol``, as
    scikit-learn's ``LogisticRegression(tol=1e-4)``); the smoothed constraints are held to 1e-4.
    """
    if solver == "augmented_lagrangian":
        kwargs = {} if max_iter is None else {"max_iter": max_iter}
        return augmented_lagrangian(problem, x0, multipliers=multipliers, verbose=verbose,
                                    stationarity_tolerance=tol, **kwargs)
    # switching subgradient ([HL23] Algorithm 1): a step of 1/sqrt(t+1) scaled to the start's
    # subgradient, the best nearly-feasible iterate (an estimator needs one model, not a random draw)
    n_iter = 2000 if max_iter is None else max_iter
    grad = np.empty(problem.dim)
    problem.f_and_subgradient(x0, grad)
    scale = 1.0 / max(float(np.linalg.norm(grad)), 1.0)
    return switching_subgradient(problem, x0, max_iter=n_iter, step_size=lambda t: scale / np.sqrt(t + 1.0),
                                 tolerance=1e-4, output="best", record_every=max(n_iter // 50, 1),
                                 verbose=verbose)


@dataclass
class Calibration:
    """Record of the bound calibration: one entry per solve."""
    bounds: list = field(default_factory=list)
    hard_values: list = field(default_factory=list)
    statuses: list = field(default_factory=list)
    chosen: int = -1
    met: bool = False


def calibrate_bound(solve_at, hard_metric, tolerance, *, max_rounds=8, lower=0.8):
    r"""Find a surrogate bound whose solution meets ``hard_metric <= tolerance``, as loose as possible.

    Round 0 solves at ``bound = tolerance``. After a solve whose hard value is :math:`h` the
    bound is rescaled by :math:`0.95\,\text{tolerance}/h` (clipped to a factor of 4), aiming just
    inside the tolerance; the loop ends as soon as :math:`h \in [\text{lower}\cdot\text{tolerance},
    \text{tolerance}]` or after ``max_rounds`` solves. Among the solves that met the tolerance the
    one at the largest bound is kept (the loosest constraint, so the best objective); if none met
    it, the one with the smallest hard value.

    Parameters
    ----------
    solve_at : callable
        ``bound -> (x, SolveResult)``, warm-started by the caller.
    hard_metric : callable
        ``x -> float``, the hard quantity bounded by ``tolerance``.

    Returns
    -------
    (x, SolveResult, Calibration)
    """
    record = Calibration()
    solutions = []
    bound = tolerance
    for _ in range(max_rounds):
        x, result = solve_at(bound)
        h = float(hard_metric(x))
        record.bounds.append(float(bound))
        record.hard_values.append(h)
        record.statuses.append(result.status)
        solutions.append((x, result))
        if lower * tolerance <= h <= tolerance or (h <= tolerance and bound >= 16 * tolerance):
            break
        ratio = 0.95 * tolerance / h if h > 0 else 4.0
        bound = bound * min(max(ratio, 0.25), 4.0)
    met = [k for k, h in enumerate(record.hard_values) if h <= tolerance]
    if met:
        k = max(met, key=lambda j: record.bounds[j])
    else:
        k = int(np.argmin(record.hard_values))
    record.chosen, record.met = k, bool(met)
    x, result = solutions[k]
    return x, result, record
