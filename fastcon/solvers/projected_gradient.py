r"""Projected gradient descent onto convex quadratic constraints: the pairwise-fairness baselines of
He, Huang, Yao & Lin [HHYL25] Appendix D.3.2.

Problem: :math:`\min_w f_0(w)` s.t. :math:`q_j(w) = \frac12 w^\top A_j w + b_j^\top w + c_j \le 0`
(`fastcon.problems.pairwise_fairness_constraints`, models (66), (69), (71)). One iteration,
eqs. (72)–(74):

.. math::

    w_{k+1} = \operatorname*{arg\,min}_{w:\ q_j(w) \le 0\ \forall j}
    \tfrac12\bigl\|w - (w_k - \eta_k \nabla f_0(w_k))\bigr\|^2 ,

the projection solved exactly by `fastcon.problems.qcqp_projection`, warm-started. The run stops
on a small relative change of :math:`f_0`. Design notes: docs/design.md, 'Module notes'.
"""
from __future__ import annotations

import math

import numpy as np

from .._results import Counters, SolveResult
from ..problems._pairwise_fairness import QuadraticConstraints, qcqp_projection
from ..problems._protocol import require_capabilities
from ..problems._validation import check_x
from ._run import SolverRun
from ._schedules import as_schedule
from ._validation import check_count, check_real, check_schedule

__all__ = ["projected_gradient", "gradient_lipschitz_constant"]

#: Upper bounds of :math:`\phi''` of the margin losses :math:`\phi(z)` that have a Lipschitz derivative.
_CURVATURE = {"logistic": 0.25, "squared_hinge": 2.0}

# Up to this many weights the Gram matrix is formed column by column (2 passes per column) and its
# largest eigenvalue is exact; above, Lanczos (scipy eigsh) reads the data a few dozen times.
_GRAM_MAX_FEATURES = 32


def gradient_lipschitz_constant(objective) -> float:
    r"""Lipschitz constant :math:`L` of :math:`\nabla f` for a `fastcon.problems.LinearLoss`.

    For :math:`f(w, b) = \sum_i c_i\phi(y_i z_i) + \frac\alpha2\|w\|^2`, :math:`z = Xw + b`,
    :math:`\sum_i c_i = 1`:

    .. math::

        L = \phi''_{\max}\,\lambda_{\max}\bigl(\bar X^\top \operatorname{diag}(c)\,\bar X\bigr) + \alpha,

    :math:`\bar X = [X, 1]` with an intercept, else :math:`X`; :math:`\phi''_{\max} = \frac14` (logistic)
    or 2 (squared hinge). With uniform weights and the logistic loss this is
    :math:`\frac14\lambda_{\max}(\bar X^\top\bar X)/n`. Up to 32 weights the Gram matrix is formed
    exactly; beyond, :math:`\lambda_{\max}` comes from Lanczos iterations (scipy ``eigsh``, relative
    tolerance 1e-10; a Ritz value never exceeds :math:`\lambda_{\max}`, so the result is scaled up by
    :math:`1 + 10^{-8}`).

    Parameters
    ----------
    objective : LinearLoss
        With loss ``"logistic"`` or ``"squared_hinge"`` (hinge and sigmoid have no such constant).

    Returns
    -------
    float
    """
    from ..problems import LinearLoss

    if not isinstance(objective, LinearLoss):
        raise TypeError(f"objective: step_size='auto' needs a fastcon.problems.LinearLoss to compute L, got "
                        f"{type(objective).__name__}; pass a float step_size")
    if objective.loss not in _CURVATURE:
        raise ValueError(f"objective: step_size='auto' needs a loss with a Lipschitz gradient "
                         f"({sorted(_CURVATURE)}), got {objective.loss!r}; pass a float step_size")
    scores = objective.scores
    design, weight = scores.design, objective.weight
    n, k = scores.n_samples, scores.n_weights
    intercept = scores.fit_intercept
    dim = scores.n_features
    z, back = np.empty(n), np.empty(k)

    def gram_times(x):
        design.matvec(np.ascontiguousarray(x[:k]), z)
        if intercept:
            np.add(z, x[k], out=z)
        v = weight * z
        back[:] = 0.0                       # rmatvec accumulates
        design.rmatvec(v, back)
        return np.concatenate([back, [v.sum()]]) if intercept else back.copy()

    if dim <= _GRAM_MAX_FEATURES:
        eye = np.eye(dim)
        gram = np.column_stack([gram_times(eye[j]) for j in range(dim)])
        top = float(np.linalg.eigvalsh(0.5 * (gram + gram.T))[-1])
    else:
        from scipy.sparse.linalg import LinearOperator, eigsh

        op = LinearOperator((dim, dim), matvec=lambda x: gram_times(np.asarray(x, dtype=np.float64).ravel()),
                            dtype=np.float64)
        top = float(eigsh(op, k=1, which="LA", tol=1e-10, return_eigenvectors=False,
                          v0=np.ones(dim))[0]) * (1.0 + 1e-8)
    return _CURVATURE[objective.loss] * max(top, 0.0) + objective.ridge


def _check_objective(objective):
    require_capabilities(objective, "objective", ("value_and_subgradient", "n_features"), "projected_gradient",
                         hint="e.g. fastcon.problems.LinearLoss")
    return int(objective.n_features)


def projected_gradient(objective, constraints, x0=None, *, step_size="auto", max_iter=1000,
                       tol=1e-5, projection_tolerance=1e-10, projection_max_iter=100,
                       record_every=None, callback=None, verbose=False) -> SolveResult:
    r"""Projected gradient method of [HHYL25] eqs. (72)–(74) for the pairwise quadratic baselines.

    .. math::

        w_{k+1} = \operatorname{Proj}_C\bigl(w_k - \eta_k\nabla f_0(w_k)\bigr),\qquad
        C = \{w : \tfrac12 w^\top A_j w + b_j^\top w + c_j \le 0,\ j < m\},

    with the projection computed by `fastcon.problems.qcqp_projection` (exact dual method,
    warm-started from the previous multipliers).

    Parameters
    ----------
    objective : term
        Smooth convex :math:`f_0` with ``value_and_subgradient(x, out) -> float`` and ``n_features``,
        e.g. `fastcon.problems.LinearLoss` on `LinearScores` built with ``fit_intercept=False`` on the
        cross-term features (which carry the constant column).
    constraints : QuadraticConstraints
        :math:`C`, e.g. from `fastcon.problems.pairwise_fairness_constraints`; ``n_features`` must
        equal the objective's.
    x0 : array-like, optional
        Start before projection; default :math:`w_0 = 0` (the paper's), which is feasible for every
        :math:`\kappa \ge 0`.
    step_size : "auto", float or callable of t
        :math:`\eta_k > 0`. ``"auto"`` (default): :math:`1/L` from `gradient_lipschitz_constant`
        (needs a `LinearLoss` with the logistic or squared hinge loss); the objective is then
        non-increasing. [HHYL25] does not state its step.
    max_iter : int
        :math:`K \ge 1`, iterations at most (the paper: 1000 on a9a and bank, 500 on law school).
    tol : float
        Stop with ``"converged"`` when :math:`|f_0(w_{k+1}) - f_0(w_k)| \le` this
        :math:`\cdot\,|f_0(w_k)|` (the paper's level is 1e-5, the default); 0 runs all ``max_iter``
        iterations unless the objective stops changing exactly.
    projection_tolerance, projection_max_iter :
        ``tol`` and ``max_iter`` of every `qcqp_projection`.
    record_every : int, optional
        History rows at the iterations :math:`k` with ``k % record_every == 0`` and at ``n_iter``
        for the returned iterate (row :math:`k` describes :math:`w_k`). Default None: the shared rule
        (`fastcon.solvers._common.default_record_every`), about 100 rows; a record reads no data
        (the objective value comes with the gradient, the constraints are :math:`d \times d`).
    callback : callable ``(k, w, info) -> bool``, optional
        Called after iteration ``k`` with :math:`w_{k+1}` (a live buffer) and ``info``
        (``objective`` :math:`f_0(w_{k+1})`, ``relative_change``, ``step_size``, ``projection``: the
        `QCQPProjection`). True stops with status ``"callback_stop"``.
    verbose : bool, int or str
        See `fastcon._progress.Progress`.

    Returns
    -------
    SolveResult
        ``x`` the last iterate :math:`w_{K'}`; status ``"converged"``, ``"max_iter"``,
        ``"callback_stop"``, or ``"no_feasible_iterate"`` when a projection certifies that :math:`C`
        is empty (the run stops there; ``x`` is that projection's least-violating point).
        ``multipliers``: the last projection's :math:`\lambda` divided by its step :math:`\eta`, the
        KKT multipliers of the constrained problem at a fixed point
        (:math:`\nabla f_0(w) + \sum_j (\lambda_j/\eta)\nabla q_j(w) = 0`). History columns:
        ``iteration``, ``time``, ``objective`` :math:`f_0(w_k)`, ``max_violation``, ``step_size``,
        ``projection_iterations`` (of the projection that produced :math:`w_k`; 0 for a feasible
        point), ``relative_change`` (:math:`|f_0(w_k) - f_0(w_{k-1})|/|f_0(w_{k-1})|`, NaN at 0).
        ``counters`` adds ``projection_iterations`` (total) and ``projection_failures`` (projections
        that ended ``"max_iter"`` or ``"stalled"``: their point is used, and ``info`` keeps the
        first such message); ``info`` holds ``lipschitz`` (when ``"auto"``) and the parameters.
    """
    d = _check_objective(objective)
    if not isinstance(constraints, QuadraticConstraints):
        raise TypeError(f"constraints: expected a fastcon.problems.QuadraticConstraints, got "
                        f"{type(constraints).__name__}")
    if constraints.n_features != d:
        raise ValueError(f"constraints: act on {constraints.n_features} weights but the objective has "
                         f"n_features = {d}")
    run = SolverRun("projected_gradient", max_iter, record_every=record_every, callback=callback, verbose=verbose)
    T = run.max_iter
    tol_f = check_real("tol", tol)
    tol_p = check_real("projection_tolerance", projection_tolerance, positive=True)
    max_p = check_count("projection_max_iter", projection_max_iter)
    lipschitz = None
    if isinstance(step_size, str):
        if step_size != "auto":
            raise ValueError(f"step_size: expected 'auto', a float or a callable of t, got {step_size!r}")
        lipschitz = gradient_lipschitz_constant(objective)
        if not lipschitz > 0:
            raise ValueError("step_size: 'auto' found L = 0 (the objective is linear); pass a float step_size")
        eta = np.full(T, 1.0 / lipschitz)
    else:
        eta = check_schedule("step_size", step_size, T, positive=True)
    w = np.zeros(d) if x0 is None else check_x(x0, d, "x0").copy()

    info = {"step_size": "auto" if lipschitz is not None else repr(as_schedule(step_size)),
            "lipschitz": lipschitz, "tol": tol_f, "projection_tolerance": tol_p,
            "projection_max_iter": max_p, "n_constraints": constraints.n_constraints}
    rows0 = getattr(objective, "rows_read", 0)
    # a record reads no data: the shared rule gives about 100 rows
    with run.start(counters=Counters(getattr(objective, "n_samples", 0), 0)):
        counters = run.counters
        grad = np.empty(d)

        def finish(x, message, multipliers=None):
            counters.values["rows_f"] = getattr(objective, "rows_read", 0) - rows0
            f = float(objective.value(x)) if hasattr(objective, "value") else float(objective.value_and_subgradient(
                x, np.empty(d)))
            return run.finish(x, objective=f, max_violation=constraints.max_violation(x), message=message,
                              multipliers=multipliers, info=info)

        n_proj = n_fail = 0
        proj = qcqp_projection(w, constraints, tol=tol_p, max_iter=max_p)
        n_proj += proj.iterations
        counters.values["projection_iterations"], counters.values["projection_failures"] = n_proj, n_fail
        if proj.status == "infeasible":
            run.status = "no_feasible_iterate"
            return finish(proj.w, "the start's projection found the constraint set empty: " + proj.message)
        if not proj.converged:
            n_fail += 1
            info["projection_failure"] = proj.message
        w = proj.w
        lam = proj.multipliers
        f = objective.value_and_subgradient(w, grad)
        proj_its, change = proj.iterations, math.nan
        message = f"ran {T} iterations"
        last_eta = eta[0]
        for t in range(T):
            if run.due(t, final=False):  # the last row is w_{n_iter}, recorded after the loop
                run.record(t, force=True, objective=f, max_violation=constraints.max_violation(w),
                           step_size=eta[t], projection_iterations=proj_its, relative_change=change)
            proj = qcqp_projection(w - eta[t] * grad, constraints, tol=tol_p, max_iter=max_p, multipliers0=lam)
            n_proj += proj.iterations
            last_eta = eta[t]
            if proj.status == "infeasible":
                run.status, run.n_iter, message = "no_feasible_iterate", t + 1, f"iteration {t}: {proj.message}"
                w, lam = proj.w, None
                break
            if not proj.converged:
                n_fail += 1
                info.setdefault("projection_failure", f"iteration {t}: {proj.message}")
            w, lam, proj_its = proj.w, proj.multipliers, proj.iterations
            f_new = objective.value_and_subgradient(w, grad)
            change = abs(f_new - f) / abs(f) if f != 0.0 else (0.0 if f_new == f else math.inf)
            f = f_new
            if change <= tol_f:
                run.status = "converged"
                message = f"relative objective change {change:.3g} <= {tol_f:g} at iteration {t}"
            if run.tick(t, w, {"objective": f, "relative_change": change, "step_size": eta[t], "projection": proj},
                        f=f):
                if run.status == "callback_stop":
                    message = f"callback asked to stop after iteration {t}"
                break
            if run.status == "converged":
                break
    if run.status != "no_feasible_iterate":
        # one more row for the returned iterate w_{n_iter} (as 3S-Econ records x_K)
        run.record(run.n_iter, force=True, objective=f, max_violation=constraints.max_violation(w),
                   step_size=math.nan, projection_iterations=proj_its, relative_change=change)
    counters.values["projection_iterations"], counters.values["projection_failures"] = n_proj, n_fail
    return finish(w, message, None if lam is None else lam / last_eta)
