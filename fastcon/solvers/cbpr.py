r"""CBPR: the constrained Bregman proximal regularised method of Lin & Deng [LD23], Algorithm 2.

For difference-of-convex constraints, :math:`\min f(x)` s.t. :math:`g_i(x) - h_i(x) - \eta_i \le 0`
with :math:`h_i` :math:`L_{h_i}`-smooth relative to :math:`D_W` (Definition 3), :math:`\rho =
\max_i L_{h_i}`. From a feasible :math:`x^0`, each outer step solves the convex subproblem (4.2)

.. math::

    x^{t+1} \approx \arg\min_x\ f(x) + L\,D_W(x, x^t)\quad\text{s.t.}\quad
    g_i(x) - h_i(x) - \eta_i + L\,D_W(x, x^t) \le 0\ \ \forall i,

with ABPP (`fastcon.solvers.abpp`) in its accelerated branch :math:`\mu = L` (the objective is
:math:`L`-strongly convex relative to :math:`D_W`; every constraint is convex once :math:`L \ge \rho`).
The Bregman term majorises the constraints at :math:`x^t` with equality there, so a feasible
:math:`x^t` stays feasible for the subproblem and the iterates stay feasible (Lemma 6) while the
objective decreases (F.10–F.11). Lemma 5: :math:`x^t` is an :math:`(\epsilon, \epsilon)` Fritz–John
point once :math:`\|\hat x^{t+1} - x^t\| \le \epsilon/(L\sigma_{\max}(W^\top W))`; the stopping test
here is its proxy :math:`L\sqrt{2D_W(x^{t+1}, x^t)} \le` ``tol`` (for boosting: :math:`L`
times the change of the training scores).
"""
from __future__ import annotations

import math

import numpy as np

from .._results import SolveResult
from ..problems._protocol import require_capabilities
from ..problems._score_problems import ProxSubproblem
from ._common import check_choice
from ._run import SolverRun
from ._validation import check_count, check_optional_real, check_real
from .abpp import abpp, check_protocols, inexactness_schedule, resolve_dual_step, start_state

__all__ = ["cbpr", "cbpr_prox_weight"]


def cbpr_prox_weight(problem, model) -> float:
    r"""The default :math:`L` of CBPR: :math:`\max(\rho, 1/\sigma_{\max}(W^\top W)) = \max(\rho, 1)`.

    :math:`\rho` is ``model.curvature_bound(problem)`` (linear model and `GroupLossGap`:
    :math:`\rho = \beta\max_a c_\ell\lambda_{\max}(\tilde A_a^\top\tilde A_a)/n_a`, see
    `LinearScoreModel.curvature_bound`; boosting in function space: :math:`\beta c_\ell/\min_a n_a`,
    :math:`1/4` with the default :math:`\beta`). :math:`\sigma_{\max}(W^\top W) = 1` for both
    geometries (:math:`W = I` on :math:`x`, or on the training scores). Algorithm 2 asks for
    :math:`L > \max(\rho, 1/\sigma_{\max})`; the strict inequality only sizes the constants of
    Theorem 2, and :math:`L = \rho` already makes every subproblem convex, so the maximum itself is
    taken.
    """
    require_capabilities(model, "prox_weight", ("curvature_bound",), "cbpr", hint="pass prox_weight=L explicitly")
    return max(float(model.curvature_bound(problem)), 1.0)


def cbpr(problem, model, x0=None, *, outer_iter=20, prox_weight=None, inner_iter=50, primal_step=0.1, dual_step=0.1,
         multipliers0=None, dual_warm_start=True, inexactness="theory", inner_output="last", tol=1e-6,
         bound_schedule=None, outlier_threshold=None, early_stop=None, record_every=None, callback=None,
         verbose=False) -> SolveResult:
    r"""Lin & Deng [LD23] Algorithm 2 (CBPR) with ABPP inside.

    Parameters
    ----------
    problem : score problem with DC constraints
        `GroupLossGap`, or any score problem whose Lagrangian has :math:`c = 0` (a convex problem is
        also accepted: CBPR is then a proximal point method on it).
    model : score model
        `LinearScoreModel` or a boosting model of `fastcon.boosting`.
    x0 : state or array, optional
        A feasible start; default ``model.initial_state()`` (zero scores: strictly feasible for
        `GroupLossGap` with positive bounds). An infeasible start is run anyway (the theory does
        not cover it; ``info["start_violation"]`` says so).
    outer_iter : int
        :math:`T`, outer iterations (the authors' default 20).
    prox_weight : float, optional
        :math:`L > 0`, the weight of the proximal term :math:`L\,D_W(x, x^t)`; default
        `cbpr_prox_weight`.
    inner_iter : int
        ABPP iterations per outer step (default 50).
    primal_step : float
        ABPP's :math:`\tau_0` (default 0.1).
    dual_step : float or "auto"
        ABPP's :math:`\sigma_0` (default 0.1, the authors' code). ``"auto"``: :math:`1/(\tau_0L_g^2)`,
        the largest value of ABPP's step condition (`fastcon.solvers.abpp.abpp_lipschitz_constant`,
        on the rows kept at each outer step), which keeps the multipliers from overshooting when
        :math:`\beta` is large.
    multipliers0 : array-like, optional
        Initial multipliers of the first subproblem (default 0).
    dual_warm_start : bool
        Start each subproblem's ABPP from the previous one's last multipliers (default) rather than
        from ``multipliers0``.
    inexactness : "theory", float or callable
        ABPP's prox accuracies (`fastcon.solvers.abpp`).
    inner_output : {"last", "average"}
        Which ABPP output becomes :math:`x^{t+1}`.
    tol : float
        Stop (``"converged"``) when :math:`L\sqrt{2D_W(x^{t+1}, x^t)} \le` ``tol``.
    bound_schedule : float, optional
        The authors' bound schedule, off by default: before outer step :math:`l` the bounds become
        :math:`\alpha \leftarrow \alpha + (\alpha_{\max} - \alpha)/((l+1)(l+2))` with
        :math:`\alpha_{\max}` = ``bound_schedule`` (start from a small bound, e.g. 1e-5, so that
        zero scores are feasible; the schedule tends to about :math:`0.70\,\alpha_{\max}`, not
        :math:`\alpha_{\max}`). Needs ``problem.bound`` and ``problem.with_bound``.
    outlier_threshold : float, optional
        Off by default: before outer step :math:`\lceil T/2\rceil` drop the rows
        ``problem.without_outliers(model, x^t, outlier_threshold)`` selects ([LD23] Appendix G).
    early_stop : float, optional
        Off by default: after :math:`\lceil T/2\rceil` outer steps stop (``"converged"``) when
        ``problem.targets_met(model, x^t, early_stop)`` (every group's training error below it; the
        authors use 0.01).
    record_every : int, optional
        History period over outer iterations (rows hold :math:`x^t`); default
        `fastcon.solvers._common.default_record_every` (:math:`\lceil T/100\rceil`: records read no data).
    callback : callable ``(t, x^{t+1}, info) -> bool``, optional
        True stops with ``"callback_stop"``.
    verbose : bool, int or str

    Returns
    -------
    SolveResult
        ``x`` = ``model.parameters`` of :math:`x^T` (``state``: the state itself; ``problem``: the problem solved); status
        ``"converged"``, ``"max_iter"`` or ``"callback_stop"``. History per outer iterate:
        ``objective``, ``max_violation`` (of the original constraints), ``step``
        :math:`L\sqrt{2D_W(x^t, x^{t-1})}`, ``inner_max_violation`` (subproblem),
        ``multiplier_norm``. ``info``: ``prox_weight`` :math:`L`, ``violations`` (max violation of every
        outer iterate, :math:`x^0` first), ``steps``, ``start_violation``, ``inner_iterations``,
        ``dual_steps`` (:math:`\sigma_0` of every outer step).
    """
    check_protocols(problem, model)
    run = SolverRun("cbpr", outer_iter, count_name="outer_iter", record_every=record_every, callback=callback,
                    verbose=verbose)
    T = run.max_iter
    K = check_count("inner_iter", inner_iter)
    L = cbpr_prox_weight(problem, model) if prox_weight is None else check_real("prox_weight", prox_weight,
                                                                                        positive=True)
    check_real("primal_step", primal_step, positive=True)
    resolve_dual_step(dual_step, primal_step, problem, model)   # validate once, before any work
    inexactness_schedule(inexactness, 1, float(primal_step), L)  # validate once, before any work
    check_choice("inner_output", inner_output, ("last", "average"))
    tol = check_real("tol", tol)
    alpha_max = check_optional_real("bound_schedule", bound_schedule)
    check_optional_real("outlier_threshold", outlier_threshold, positive=True)
    early = check_optional_real("early_stop", early_stop, positive=True)
    for flag, name, methods in ((alpha_max is not None, "bound_schedule", ("bound", "with_bound")),
                                (outlier_threshold is not None, "outlier_threshold", ("without_outliers",)),
                                (early is not None, "early_stop", ("targets_met",))):
        if flag:
            require_capabilities(problem, name, methods, "cbpr")
    m = int(problem.n_constraints)
    y = np.zeros(m) if multipliers0 is None else np.array(multipliers0, dtype=np.float64).reshape(-1)
    if y.shape != (m,) or not (np.all(np.isfinite(y)) and np.all(y >= 0)):
        raise ValueError(f"multipliers0: expected {m} finite values >= 0, got {np.shape(multipliers0)}")
    y0 = y.copy()
    state = start_state(model, x0)

    def violation(p, s):
        return max(0.0, float(np.max(p.constraint_values(model, s), initial=-math.inf)))

    with run.start():  # records read no data: the shared rule gives ceil(T/100)
        counters = run.counters
        start_violation = violation(problem, state)
        violations, steps, dual_steps = [start_violation], [], []
        run.record(0, force=True, objective=problem.objective_value(model, state), max_violation=start_violation,
                   step=math.nan, inner_max_violation=math.nan, multiplier_norm=float(np.linalg.norm(y)))
        message = f"ran the {T} outer iterations"
        if start_violation > 0:
            message += f"; the start is infeasible (max violation {start_violation:.3g}), which CBPR's theory excludes"
        half = math.ceil(T / 2)
        inner_total = 0
        t = -1
        for t in range(T):
            if alpha_max is not None:
                # the authors' schedule: alpha <- alpha + (alpha_max - alpha)/((l+1)(l+2)), per pair
                bound = problem.bound + (alpha_max - problem.bound) / ((t + 1) * (t + 2))
                problem = problem.with_bound(problem.multiplier_matrix(bound)
                                             if hasattr(problem, "multiplier_matrix") else bound)
            if outlier_threshold is not None and t == half and t > 0:
                problem = problem.without_outliers(model, state, outlier_threshold)
            sub = ProxSubproblem(problem, model, state, L)
            sigma0 = resolve_dual_step(dual_step, primal_step, problem, model)
            dual_steps.append(sigma0)
            inner = abpp(sub, model, state, max_iter=K, primal_step=primal_step, dual_step=sigma0, mu=L,
                         multipliers0=y if dual_warm_start else y0, inexactness=inexactness, output=inner_output,
                         record_every=K)
            inner_total += inner.n_iter
            counters.add("prox_steps", inner.counters.get("prox_steps", 0))
            counters.add("prox_unmet", inner.counters.get("prox_unmet", 0))
            new_state = inner.state
            step = L * math.sqrt(2.0 * model.divergence(new_state, state))
            y = inner.info["multipliers_last"]
            state = new_state
            g = violation(problem, state)
            violations.append(g)
            steps.append(step)
            if run.due(t + 1, final=t == T - 1):
                run.record(t + 1, force=True, objective=problem.objective_value(model, state), max_violation=g,
                           step=step, inner_max_violation=inner.max_violation, multiplier_norm=float(np.linalg.norm(y)))
            if run.tick(t, None if callback is None else model.parameters(state),
                        {"step": step, "max_violation": g, "multipliers": y.copy()}, max_violation=g, step=step):
                message = f"the callback stopped the run after outer iteration {t}"
                break
            if step <= tol:
                run.status = "converged"
                message = f"L*sqrt(2 D(x^(t+1), x^t)) = {step:.3g} <= tol {tol:.3g} at outer iteration {t}"
                break
            if early is not None and t + 1 > half and problem.targets_met(model, state, early):
                run.status = "converged"
                message = f"every group's training error is below {early:g} at outer iteration {t}"
                break
    # the returned x^{t+1} is a row however the run stopped (recording a row twice is a no-op)
    run.record(t + 1, force=True, objective=problem.objective_value(model, state), max_violation=g, step=step,
               inner_max_violation=inner.max_violation, multiplier_norm=float(np.linalg.norm(y)))
    counters.add("inner_iterations", inner_total)
    values = np.asarray(problem.constraint_values(model, state), dtype=np.float64)
    info = {"prox_weight": L, "outer_iter": T, "inner_iter": K, "violations": np.array(violations),
            "steps": np.array(steps), "start_violation": start_violation, "inner_iterations": inner_total,
            "constraint_values": values, "dual_steps": np.array(dual_steps)}
    result = run.finish(model.parameters(state), objective=problem.objective_value(model, state), message=message,
                        n_iter=t + 1, max_violation=max(0.0, float(values.max(initial=-math.inf))), multipliers=y,
                        info=info, state=state)
    # the heuristics (bounds, dropped rows) may have replaced the problem: the one solved
    result.problem = problem
    return result
