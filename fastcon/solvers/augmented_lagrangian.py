r"""Augmented Lagrangian method with a quasi-Newton inner solver, for smooth constrained problems.

For :math:`\min f(x)` s.t. :math:`g_j(x) \le 0`, the method of multipliers (Rockafellar 1973;
Nocedal & Wright §17.4) minimises

.. math::

    \Phi_\rho(x; \lambda) = f(x) + \frac1{2\rho}\sum_j \Big(\max(0, \lambda_j + \rho g_j(x))^2 - \lambda_j^2\Big)

with L-BFGS-B (diagonally scaled when the problem estimates its Hessian diagonal), then sets
:math:`\lambda \leftarrow \max(0, \lambda + \rho g(x))` and grows :math:`\rho` when the violation did
not fall by a factor of 4. It stops (``"converged"``) when the KKT residuals, free from
:math:`\nabla\Phi_\rho`, are within their tolerances. Design notes: docs/design.md, 'Module notes'.
"""
from __future__ import annotations

import numpy as np

from ..problems._protocol import require_constrained_problem
from .._results import Counters, SolveResult
from ._run import SolverRun
from ._validation import check_count, check_real

__all__ = ["augmented_lagrangian"]


def _bounds(problem):
    try:
        box = problem.domain.bounds(problem.dim)
    except NotImplementedError as exc:
        raise TypeError(f"problem: augmented_lagrangian handles the whole space or a domain with coordinate bounds "
                        f"(Box), not {problem.domain!r} ({exc}); use a projected method (switching_subgradient, "
                        "conex) for other domains") from exc
    if box is None:
        return None
    from scipy.optimize import Bounds  # scipy.optimize is imported when a solve needs it

    return Bounds(*box)


def _stationarity(x, grad, bounds):
    r""":math:`\|\nabla\|_\infty`, or on a box the projected gradient's :math:`\|P(x - \nabla) - x\|_\infty`."""
    if not grad.size:
        return 0.0
    if bounds is None:
        return float(np.max(np.abs(grad)))
    return float(np.max(np.abs(np.clip(x - grad, bounds.lb, bounds.ub) - x)))


def _scaling(problem):
    """:math:`s = h^{-1/2}` from the problem's curvature diagonal :math:`h` (1 where :math:`h` is not
    positive and finite), or None when the problem gives none."""
    h = problem.curvature_diagonal()
    if h is None:
        return None
    h = np.asarray(h, dtype=np.float64)
    if h.shape != (problem.dim,):
        raise ValueError(f"problem: curvature_diagonal() has shape {h.shape}, expected ({problem.dim},)")
    jacobi = np.ones(problem.dim)
    usable = np.isfinite(h) & (h > 0)
    jacobi[usable] = 1.0 / np.sqrt(h[usable])
    return jacobi


def _scaled_bounds(bounds, jacobi):
    """The box in the scaled variables :math:`u = x / s`."""
    from scipy.optimize import Bounds

    return Bounds(bounds.lb / jacobi, bounds.ub / jacobi)


def augmented_lagrangian(problem, x0=None, *, max_iter=30, inner_max_iter=500, lbfgs_memory=20, tol=1e-4,
                         stationarity_tolerance=1e-5, penalty=10.0, penalty_growth=10.0, max_penalty=1e8,
                         multipliers0=None, precondition=True,
                         record_every=None, callback=None, verbose=False) -> SolveResult:
    r"""Solve a smooth constrained problem by the augmented Lagrangian method (module docstring).

    Parameters
    ----------
    problem : ConstrainedProblem
        Differentiable objective and constraints (``value_and_subgradient`` must return gradients;
        a kink, as in the hinge loss, slows L-BFGS and may stop it early: use a subgradient method
        there). Domain: the whole space or one with coordinate bounds (`Domain.bounds`: a `Box`, a
        `Product` of boxes).
    x0 : array-like, optional
        Start; default ``problem.x0``.
    max_iter : int
        Outer iterations (multiplier updates), at least 1.
    inner_max_iter : int
        L-BFGS iterations per outer iteration.
    lbfgs_memory : int
        L-BFGS's memory (``maxcor``): the pairs of steps and gradient differences it keeps, each
        two vectors of the problem's dimension. Its workspace is about ``2 * lbfgs_memory + 5`` such
        vectors, 4 more with ``precondition`` (the scale, the last point and gradient, a start): on a
        wide problem (a million features) the default 20 is 360 MB, so a caller that must stay
        within a memory budget lowers it (`fastcon.estimators` size it from the data).
    tol : float
        The stopping tolerance on the feasibility and complementarity residuals:
        :math:`\max_j g_j \le` ``tol`` and :math:`\max_j \lambda_j|g_j| \le` ``tol``; also the
        feasibility threshold of the status (``"no_feasible_iterate"`` when the last iterate has
        :math:`\max_j g_j >` ``tol``).
    stationarity_tolerance : float
        :math:`\|\nabla f + \sum_j \lambda_j \nabla g_j\|_\infty \le` this, in :math:`x`; L-BFGS's
        ``gtol`` (scaled when ``precondition``, module docstring).
    penalty, penalty_growth : float
        Initial :math:`\rho > 0` and its growth factor (> 1) when the violation stalls.
    max_penalty : float
        Cap on :math:`\rho`. When the violation still stalls at the cap the run stops (status
        ``"no_feasible_iterate"``): a larger penalty only makes the subproblem ill-conditioned
        (on non-convex constraints the iterate sits at an infeasible stationary point of the
        violation, e.g. sigmoid rates saturated by huge scores).
    multipliers0 : array-like of shape (m,), optional
        Starting :math:`\lambda \ge 0` (a warm start from an earlier solve of a nearby problem);
        default 0.
    precondition : bool
        Scale the variables by :math:`h^{-1/2}` when ``problem.curvature_diagonal()`` gives a
        diagonal :math:`h` (module docstring); entries of :math:`h` that are not positive and
        finite leave their variable unscaled. False: L-BFGS on :math:`x` itself.
    record_every : int, optional
        One history row every ``record_every`` outer iterations; default 1 (rows cost nothing here:
        they hold values the method computed anyway, and outer iterations are few).
    callback : callable, optional
        ``callback(k, x, info) -> bool``; True stops the run (status ``"callback_stop"``).
    verbose : bool or int
        Progress display over the outer iterations (`fastcon._progress.Progress`).

    Returns
    -------
    SolveResult
        ``multipliers``: :math:`\lambda`; ``info``: ``kkt_stationarity``, ``complementarity``,
        ``penalty``, ``evaluations``, ``constraint_values``.
    """
    require_constrained_problem(problem, "augmented_lagrangian")
    run = SolverRun("augmented_lagrangian", max_iter, record_every=record_every, callback=callback, verbose=verbose)
    max_iter = run.max_iter
    inner_max_iter = check_count("inner_max_iter", inner_max_iter)
    lbfgs_memory = check_count("lbfgs_memory", lbfgs_memory)
    tol = check_real("tol", tol, positive=True)
    stationarity_tolerance = check_real("stationarity_tolerance", stationarity_tolerance, positive=True)
    rho = check_real("penalty", penalty, positive=True)
    growth = check_real("penalty_growth", penalty_growth, positive=True)
    max_penalty = check_real("max_penalty", max_penalty, positive=True)
    if growth <= 1.0:
        raise ValueError(f"penalty_growth: must exceed 1, got {growth}")
    run.feasibility_tolerance = tol
    bounds = _bounds(problem)
    x = problem.project(problem.x0 if x0 is None else problem.check_x(x0, "x0")).copy()
    jacobi = _scaling(problem) if precondition else None
    m = problem.n_constraints
    if multipliers0 is None:
        lam = np.zeros(m)
    else:
        lam = np.array(multipliers0, dtype=np.float64)
        if lam.shape != (m,) or not np.all(np.isfinite(lam)) or np.any(lam < 0):
            raise ValueError(f"multipliers0: expected {m} finite non-negative numbers, got {multipliers0!r}")

    # rows cost nothing here (values the method computed anyway, few outer iterations): one per iteration
    with run.start(default_every=1, counters=Counters(problem.n_samples_f, problem.n_samples_g)):
        problem.reset_counters()
        grad = np.empty(problem.dim)
        state = {"evaluations": 0}

        def phi(x_flat):
            state["evaluations"] += 1
            f, g = problem.lagrangian(x_flat, lambda values: np.maximum(0.0, lam + rho * values), grad)
            shifted = np.maximum(0.0, lam + rho * g)
            return f + (shifted @ shifted - lam @ lam) / (2.0 * rho), grad.copy()

        # imported here, not at `import fastcon` (scipy.optimize ~60 ms, threadpoolctl ~50 ms)
        import scipy.optimize
        from threadpoolctl import threadpool_limits

        if jacobi is None:
            objective, start_of, x_of, inner_bounds, inner_gtol, inner_callback = (
                phi, lambda v: v, lambda v: v, bounds, stationarity_tolerance, None)
        else:
            last = {}

            def objective(u):
                value, gradient = phi(jacobi * u)
                gradient *= jacobi
                last["u"], last["gradient"] = u, gradient
                return value, gradient

            def inner_callback(intermediate_result):
                # L-BFGS's own test, in u, is |s_i g_i| <= gtol: met only where every scaled entry is
                # small. Stop as soon as the test that matters, in x, holds at the accepted iterate.
                u = intermediate_result.x
                if "u" in last and np.array_equal(u, last["u"]):
                    if _stationarity(jacobi * u, last["gradient"] / jacobi, bounds) <= stationarity_tolerance:
                        raise StopIteration

            def start_of(v):
                return v / jacobi

            def x_of(u):
                return jacobi * u
            inner_bounds = None if bounds is None else _scaled_bounds(bounds, jacobi)
            # L-BFGS's own test, made sufficient for the one in x: |g_i| <= gtol / s_i without bounds;
            # at a bound the projected step in u is gtol, s_i gtol in x. The callback stops sooner.
            inner_gtol = stationarity_tolerance
            if jacobi.size:
                inner_gtol *= (float(jacobi.min()) if bounds is None
                               else min(float(jacobi.min()), 1.0 / float(jacobi.max())))

        message = ""
        previous_violation = np.inf
        k = -1
        stationarity = complementarity = np.inf
        f_value, g = np.nan, np.zeros(m)
        for k in range(max_iter):
            # L-BFGS works on vectors of n_features entries: OpenBLAS threads for its dot products cost
            # more than they give (docs/measurements.md)
            with threadpool_limits(1, user_api="blas"):
                res = scipy.optimize.minimize(objective, start_of(x), jac=True, method="L-BFGS-B",
                                              bounds=inner_bounds, callback=inner_callback,
                                              options={"maxiter": inner_max_iter, "gtol": inner_gtol,
                                                       "ftol": 1e-15, "maxcor": lbfgs_memory})
            x = x_of(res.x)
            if bounds is not None:   # u's bounds times s may round just outside x's
                np.clip(x, bounds.lb, bounds.ub, out=x)
            # the result holds a copy of L-BFGS's history (hess_inv): let it go before the next minimize
            # allocates its own workspace, or two histories are alive at once
            del res
            # the last evaluation may not be at res.x (line-search trials): evaluate there once
            f_value, g = problem.lagrangian(x, lambda values: np.maximum(0.0, lam + rho * values), grad)
            state["evaluations"] += 1
            lam = np.maximum(0.0, lam + rho * g)
            stationarity = _stationarity(x, grad, bounds)
            violation = max(0.0, float(g.max())) if m else 0.0
            complementarity = float(np.max(lam * np.abs(g))) if m else 0.0
            run.record(k, objective=f_value, max_violation=violation, stationarity=stationarity,
                       complementarity=complementarity, penalty=rho, evaluations=state["evaluations"],
                       force=k == max_iter - 1)
            if run.tick(k, x, {"multipliers": lam, "constraint_values": g}, f=f_value, g=violation):
                break
            if violation <= tol and complementarity <= tol and stationarity <= stationarity_tolerance:
                run.status = "converged"
                message = (f"KKT residuals within tolerance after {k + 1} outer iterations: stationarity "
                           f"{stationarity:.2e}, violation {violation:.2e}, complementarity {complementarity:.2e}")
                break
            if violation > 0.25 * previous_violation:
                if rho >= max_penalty and violation > tol:
                    message = f"the violation stalled with the penalty at its cap max_penalty={max_penalty:g}"
                    break
                rho = min(rho * growth, max_penalty)
            previous_violation = violation
    violation = max(0.0, float(g.max())) if m else 0.0
    run.offer(k, violation)  # the status judges the last iterate
    if run.status == "max_iter" and violation <= tol:
        message = (f"max_iter={max_iter} outer iterations without meeting every KKT tolerance: stationarity "
                   f"{stationarity:.2e}, complementarity {complementarity:.2e}")
    run.record(k, force=True, objective=f_value, max_violation=violation)
    run.counters.add("evaluations", state["evaluations"])
    run.counters.add("rows_f", problem.rows_read_f)
    return run.finish(x, objective=f_value, max_violation=violation, message=message, multipliers=lam,
                      subject="the last iterate",
                      info={"kkt_stationarity": stationarity, "complementarity": complementarity, "penalty": rho,
                            "evaluations": state["evaluations"], "constraint_values": g.tolist()})
