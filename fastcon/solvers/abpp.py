r"""ABPP: the accelerated Bregman primal–dual proximal point method of Lin & Deng [LD23], Algorithm 1.

For :math:`\min f(x)` s.t. :math:`g(x) \le 0`, with :math:`f` :math:`\mu`-strongly convex relative to
the Bregman distance :math:`D_W` of a score model, each step extrapolates the constraint, updates
the multipliers and takes a Bregman prox step:

.. math::

    y_{k+1} = [y_k + \sigma_k ((1 + \theta_k) g(x_k) - \theta_k g(x_{k-1}))]_+,\quad
    x_{k+1} \approx \arg\min_x f(x) + \langle y_{k+1}, g(x)\rangle + \tau_k^{-1}D_W(x, x_k),

solved by the score model's ``prox_step`` to Corollary 1's accuracy schedule. The ergodic average
has objective gap and violation :math:`O(1/K)` (:math:`O(1/K^2)` for :math:`\mu > 0`) under
:math:`\tau_0\sigma_0 L_g^2 \le 1`. Design notes: docs/design.md, 'Module notes'.
"""
from __future__ import annotations

import math

import numpy as np

from .._memory_limit import check_memory
from .._results import SolveResult
from ..problems._protocol import SCORE_MODEL, SCORE_PROBLEM, require_capabilities
from ..problems._score_models import loss_curvature
from ._common import check_choice
from ._run import SolverRun
from ._validation import check_count, check_optional_real, check_real

__all__ = ["abpp", "abpp_step_sizes", "abpp_lipschitz_constant", "inexactness_schedule", "resolve_dual_step"]

_OUTPUTS = ("last", "average")

#: Window of the dual-stagnation test (the authors' code keeps the last 5 multiplier vectors).
STAGNATION_WINDOW = 5


def check_protocols(problem, model):
    """TypeError naming ``problem``/``model`` when a method of the score protocols is missing."""
    for name, obj, needed in (("problem", problem, SCORE_PROBLEM), ("model", model, SCORE_MODEL)):
        require_capabilities(obj, name, needed, "abpp", hint="the score protocol of GroupLossGap, "
                             "NeymanPearsonScores and LinearScoreModel")
    if hasattr(problem, "check_model"):
        problem.check_model(model)


def abpp_step_sizes(max_iter, primal_step=0.1, dual_step=0.1, mu=0.0):
    r"""The step sizes of Algorithm 1 for :math:`k = 0..K-1`.

    Parameters
    ----------
    max_iter : int
        :math:`K`.
    primal_step, dual_step : float
        :math:`\tau_0 > 0`, :math:`\sigma_0 > 0`.
    mu : float
        :math:`\mu \ge 0`.

    Returns
    -------
    dict of ndarray
        ``tau`` :math:`\tau_k`, ``sigma`` :math:`\sigma_k = \gamma_k\tau_k`, ``theta``
        :math:`\theta_k = \sigma_{k-1}/\sigma_k` (:math:`\sigma_{-1} = \sigma_0`, so
        :math:`\theta_0 = 1`), ``gamma`` :math:`\gamma_k` (length :math:`K + 1`), and the ergodic
        weights ``t`` :math:`t_k = \sigma_k/\sigma_0`.
    """
    K = check_count("max_iter", max_iter)
    tau0 = check_real("primal_step", primal_step, positive=True)
    sigma0 = check_real("dual_step", dual_step, positive=True)
    mu = check_real("mu", mu)
    check_memory("max_iter", f"the step sizes of {K:,} iterations (five float64 arrays)", 40 * K)
    tau = np.empty(K)
    sigma = np.empty(K)
    theta = np.empty(K)
    gamma = np.empty(K + 1)
    gamma[0] = sigma0 / tau0
    t_k, sigma_prev = tau0, sigma0
    for k in range(K):
        tau[k] = t_k
        sigma[k] = gamma[k] * t_k
        theta[k] = sigma_prev / sigma[k]
        gamma[k + 1] = gamma[k] * (1.0 + mu * t_k)
        t_k = t_k * math.sqrt(gamma[k] / gamma[k + 1])
        sigma_prev = sigma[k]
    return {"tau": tau, "sigma": sigma, "theta": theta, "gamma": gamma, "t": sigma / sigma0}


def inexactness_schedule(inexactness, max_iter, primal_step, mu):
    r""":math:`\nu_{k+1}` for :math:`k = 0..K-1`: ``"theory"`` (:math:`\tau_0/(k+2)^4`, or
    :math:`^7` when :math:`\mu > 0`), a float :math:`\ge 0` (constant), or a callable of :math:`k`."""
    K = max_iter
    if isinstance(inexactness, str):
        check_choice("inexactness", inexactness, ("theory",))
        power = 7 if mu > 0 else 4
        return primal_step / (np.arange(K, dtype=np.float64) + 2.0) ** power
    if callable(inexactness):
        values = np.array([float(inexactness(k)) for k in range(K)])
    else:
        values = np.full(K, check_real("inexactness", inexactness))
    if not (np.all(np.isfinite(values)) and np.all(values >= 0)):
        raise ValueError("inexactness: values must be finite and >= 0")
    return values


def start_state(model, x0):
    """The model state to start from: ``model.initial_state()`` (zero scores) or ``x0`` as a state."""
    if x0 is None:
        return model.initial_state()
    return model.as_state(x0) if hasattr(model, "as_state") else x0


def abpp_lipschitz_constant(problem, model=None) -> float:
    r""":math:`L_g` of Definition 2 for a score problem, in the geometry of its score model.

    The gradient of a cross-entropy term in its scores has norm :math:`\le c` with :math:`c = 1`
    (two classes: :math:`|p - y|`) or :math:`c = \sqrt2` (:math:`\|p - e_b\|`).

    **Linear model** (`LinearScoreModel`, :math:`W = I` on :math:`x`): by the mean-value theorem
    :math:`|\ell_i(x) - \ell_i(x')| \le c|\tilde a_i^\top\Delta|`, so

    * `NeymanPearsonScores`, the class sum of class :math:`j`, by the triangle or the
      Cauchy–Schwarz inequality:

      .. math::

          |g_j(x) - g_j(x')| \le c\,\min\Bigl(\sum_{b_i = j}\|\tilde a_i\|,\
          \sqrt{n_j\lambda_{\max}(\tilde A_j^\top\tilde A_j)}\Bigr)\|\Delta\|;

    * `GroupLossGap`, pair :math:`(a, b)`: :math:`\beta c(\bar r_a + \bar r_b)\|\Delta\|` with
      :math:`\bar r_a` the mean of :math:`\|\tilde a_i\|` over group :math:`a`.

    **Boosting model** (function space, :math:`W = I` on the training scores :math:`F`,
    :math:`D_W = \frac12\|F - F'\|^2`): each row's loss depends on its own scores only, so by
    Cauchy–Schwarz over the rows

    * `NeymanPearsonScores`, class :math:`j`: :math:`c\sqrt{n_j}\,\|\Delta F\|`;
    * `GroupLossGap`, pair :math:`(a, b)` (disjoint groups):
      :math:`\beta c\sqrt{1/n_a + 1/n_b}\,\|\Delta F\|`.

    ``model=None`` takes the function-space geometry (the constant depends on the rows only, so a
    boosting fit's step condition can be checked before any booster exists).

    In both, :math:`L_g` is the Euclidean norm of the per-constraint constants (kept rows only),
    and :math:`\tau_0\sigma_0 = 1/L_g^2` makes the step condition :math:`\tau_0\sigma_0L_g^2 \le 1`
    hold (``dual_step="auto"`` of `abpp` and `fastcon.solvers.cbpr`). Inside CBPR the constraints
    also carry :math:`L\,D_W(x, x^t)`, Lipschitz with :math:`L\|x - x^t\|` on bounded steps: not
    included.

    The condition matters: with the default :math:`\beta = \min_a n_a`, :math:`L_g` grows like
    :math:`\sqrt{\min_a n_a}` (about 179 on Adult), so a fixed :math:`\sigma_0 = 0.1` breaks it by
    orders of magnitude, and the fairness multipliers then overshoot into large negative group
    weights (measured in ``docs/design.md``, Bregman proximal methods).

    Parameters
    ----------
    problem : score problem
        `NeymanPearsonScores` or `GroupLossGap`.
    model : score model, optional
        `LinearScoreModel` for the linear geometry; None (default) for the function-space one.
    """
    n_outputs = (1 if problem.n_classes == 2 else problem.n_classes) if model is None else model.n_outputs
    c = math.sqrt(loss_curvature(n_outputs) * 4.0)  # 1 (two classes) or sqrt(2)
    keep = problem.keep > 0
    function_space = model is None or not hasattr(model, "row_norms")
    if hasattr(problem, "pairs"):
        if function_space:
            n = np.asarray(problem.group_sizes, dtype=np.float64)
            per = [problem.scale * c * math.sqrt(1.0 / n[a] + 1.0 / n[b]) for a, b in problem.pairs]
        else:
            norms = model.row_norms()
            mean_norm = np.array([norms[(problem.groups == a) & keep].mean() for a in range(problem.n_groups)])
            per = [problem.scale * c * (mean_norm[a] + mean_norm[b]) for a, b in problem.pairs]
        return float(np.linalg.norm(per))
    per_class = []
    for j in problem.classes:
        rows = np.flatnonzero((problem.labels == j) & keep)
        if function_space:
            per_class.append(c * math.sqrt(rows.size))
            continue
        norms = model.row_norms()
        triangle = float(norms[rows].sum())
        cauchy = math.sqrt(rows.size * model.gram_lambda_max(rows))
        per_class.append(c * min(triangle, cauchy))
    return float(np.linalg.norm(per_class))


def resolve_dual_step(dual_step, primal_step, problem, model) -> float:
    r""":math:`\sigma_0`: ``dual_step`` itself, or for ``"auto"`` the largest value the step condition
    allows, :math:`1/(\tau_0L_g^2)` with `abpp_lipschitz_constant` (on the problem inside a CBPR
    subproblem)."""
    tau0 = check_real("primal_step", primal_step, positive=True)
    if isinstance(dual_step, str):
        check_choice("dual_step", dual_step, ("auto",))
        base = getattr(problem, "problem", problem)    # CBPR's ProxSubproblem wraps the problem
        if not (hasattr(base, "pairs") or hasattr(base, "classes")):
            raise TypeError(f"dual_step: 'auto' needs L_g of the problem, unknown for {type(base).__name__}; "
                            "pass a number")
        Lg = abpp_lipschitz_constant(base, model)
        if not (Lg > 0 and math.isfinite(Lg)):
            raise ValueError(f"dual_step: 'auto' needs 0 < L_g < inf, got L_g = {Lg!r}; pass a number")
        return 1.0 / (tau0 * Lg * Lg)
    return check_real("dual_step", dual_step, positive=True)


def abpp(problem, model, x0=None, *, max_iter=50, primal_step=0.1, dual_step=0.1, mu=0.0, multipliers0=None,
         inexactness="theory", output="last", bound_reset=False, outlier_threshold=None, early_stop=False,
         dual_stagnation=None, record_every=None, callback=None, verbose=False) -> SolveResult:
    r"""Lin & Deng [LD23] Algorithm 1 (ABPP) on a score problem and a score model.

    Parameters
    ----------
    problem : score problem
        `NeymanPearsonScores` or any object with the protocol of `fastcon.problems._score_problems`
        (convex constraints: the difference-of-convex `GroupLossGap` needs `cbpr`).
    model : score model
        `LinearScoreModel` or a boosting model of `fastcon.boosting` (protocol:
        `fastcon.problems._score_models`).
    x0 : state or array, optional
        Start :math:`x_0`: a state of ``model`` or, for models with ``as_state``, its parameters.
        Default ``model.initial_state()`` (all scores zero).
    max_iter : int
        :math:`K`.
    primal_step : float
        :math:`\tau_0 > 0` (default 0.1, the authors' code).
    dual_step : float or "auto"
        :math:`\sigma_0 > 0` (default 0.1, the authors' code). Safe: :math:`\tau_0\sigma_0L_g^2
        \le 1` (module notes); ``"auto"`` takes the largest such value, :math:`1/(\tau_0L_g^2)`
        with `abpp_lipschitz_constant`.
    mu : float
        :math:`\mu \ge 0`, the strong convexity of :math:`f` relative to :math:`D_W` (linear model:
        its ``ridge``; cross-entropy alone: 0). :math:`\mu > 0` takes the accelerated steps.
    multipliers0 : array-like of shape (m,), optional
        :math:`y_0 \ge 0`; default 0.
    inexactness : "theory", float or callable of k
        The accuracy :math:`\nu_{k+1}` passed to ``prox_step`` (module notes).
    output : {"last", "average"}
        ``"last"``: :math:`x_K` (Algorithm 1's output); ``"average"``: the ergodic average
        :math:`\bar x_K` with weights :math:`t_k = \sigma_k/\sigma_0`, which the theory bounds
        (``multipliers`` is then :math:`\bar y_K`).
    bound_reset : bool
        Heuristic of [LD23] Section 6, off by default: at :math:`k = \lceil K/2\rceil` replace the
        bounds by ``problem.reestimate_bounds(model, x_k)`` (`NeymanPearsonScores`: :math:`\alpha_j
        = e_j\times` the current class loss sum).
    outlier_threshold : float, optional
        Heuristic of [LD23] Appendix G, off by default: at :math:`k = \lceil K/2\rceil` drop the rows
        ``problem.without_outliers(model, x_k, outlier_threshold)`` selects (the authors use 10).
    early_stop : bool
        Heuristic of the authors' code, off by default: for :math:`k > 2\lceil K/3\rceil` stop
        (status ``"converged"``) when ``problem.targets_met(model, x_{k+1})`` (every constrained
        class's training error below half its target).
    dual_stagnation : float, optional
        Off by default. Stop (``"converged"``) when over the last 5 multiplier vectors
        :math:`\|y_{\max} - y_{\min}\|_\infty/(1 + \|\bar y\|) <` ``dual_stagnation`` (the
        authors' test as it was meant: theirs, :math:`\|(y_{\max} - y_{\min})/2 - \bar y\|`,
        fires only near :math:`y = 0`).
    record_every : int, optional
        History period (rows hold :math:`x_t`, :math:`t = 0..K`); default
        `fastcon.solvers._common.default_record_every`, here :math:`\lceil K/100\rceil` (a record
        evaluates :math:`f` on the cached scores; :math:`g` is computed every iteration anyway).
    callback : callable ``(k, x_{k+1}, info) -> bool``, optional
        ``x_{k+1}`` is ``model.parameters`` of the iterate; True stops with ``"callback_stop"``.
    verbose : bool, int or str
        See `fastcon._progress.Progress`.

    Returns
    -------
    SolveResult
        ``x`` = ``model.parameters`` of the output state; ``state`` the state itself and ``problem``
        the problem solved (the heuristics may replace bounds or drop rows);
        status ``"max_iter"``, ``"converged"`` (a stopping heuristic fired) or ``"callback_stop"``
        (infeasibility is reported in ``max_violation``, never raised). ``multipliers``:
        :math:`y_K` (or :math:`\bar y_K`). History: ``objective``, ``max_violation``,
        ``multiplier_norm``, ``primal_step`` :math:`\tau_{t-1}`, ``dual_step`` :math:`\sigma_{t-1}`,
        ``theta``. ``info``: ``multipliers_last`` / ``multipliers_average``, the step
        arrays ``primal_steps``, ``dual_steps``, ``thetas``, ``gammas``, ``inexactness``, and
        ``prox_unmet``, the number of prox steps whose model reported the accuracy not met.
    """
    check_protocols(problem, model)
    run = SolverRun("abpp", max_iter, record_every=record_every, callback=callback, verbose=verbose)
    K = run.max_iter
    dual_step = resolve_dual_step(dual_step, primal_step, problem, model)
    steps = abpp_step_sizes(K, primal_step, dual_step, mu)
    tau0, sigma0, mu = float(primal_step), float(dual_step), float(mu)
    nu = inexactness_schedule(inexactness, K, tau0, mu)
    check_choice("output", output, _OUTPUTS)
    check_optional_real("outlier_threshold", outlier_threshold, positive=True)
    check_optional_real("dual_stagnation", dual_stagnation, positive=True)
    for flag, name, method in ((bound_reset, "bound_reset", "reestimate_bounds"),
                               (outlier_threshold is not None, "outlier_threshold", "without_outliers"),
                               (early_stop, "early_stop", "targets_met")):
        if flag:
            require_capabilities(problem, name, (method,), "abpp")
    m = int(problem.n_constraints)
    if multipliers0 is None:
        y = np.zeros(m)
    else:
        y = np.array(multipliers0, dtype=np.float64).reshape(-1)
        if y.shape != (m,):
            raise ValueError(f"multipliers0: expected shape ({m},), got {np.shape(multipliers0)}")
        if not (np.all(np.isfinite(y)) and np.all(y >= 0)):
            raise ValueError("multipliers0: must be finite and >= 0")
    state = start_state(model, x0)

    # a record reads no data (scores are cached per state): the shared rule gives ceil(K/100)
    with run.start():
        counters = run.counters
        gx = np.asarray(problem.constraint_values(model, state), dtype=np.float64)
        gx_prev = gx
        run.record(0, force=True, objective=problem.objective_value(model, state),
                   max_violation=max(0.0, float(gx.max(initial=-math.inf))), multiplier_norm=float(np.linalg.norm(y)),
                   primal_step=math.nan, dual_step=math.nan, theta=math.nan)
        avg_state, avg_y, T = None, np.zeros(m), 0.0
        window = []
        half = math.ceil(K / 2)
        message = f"ran the {K} iterations"
        prox_unmet = 0
        k = -1
        for k in range(K):
            if k == half and k > 0 and (bound_reset or outlier_threshold is not None):
                # [LD23] Section 6 / Appendix G: both heuristics run at the half-way iteration, on x_k.
                if outlier_threshold is not None:
                    problem = problem.without_outliers(model, state, outlier_threshold)
                if bound_reset:
                    problem = problem.reestimate_bounds(model, state)
                gx = np.asarray(problem.constraint_values(model, state), dtype=np.float64)
                gx_prev = gx  # the extrapolation restarts on the new constraints
                counters.add("heuristic_resets")
            tau, sigma, theta = steps["tau"][k], steps["sigma"][k], steps["theta"][k]
            z = (1.0 + theta) * gx - theta * gx_prev
            y = np.maximum(y + sigma * z, 0.0)
            W, c, anchor_t = problem.lagrangian(y)
            new_state = model.prox_step(state, 1.0 / tau, W, anchor_t=anchor_t, c=c, accuracy=float(nu[k]))
            counters.add("prox_steps")
            info_prox = getattr(model, "last_prox_info", None)
            if info_prox and not info_prox.get("met", True):
                prox_unmet += 1
            state = new_state
            gx_prev, gx = gx, np.asarray(problem.constraint_values(model, state), dtype=np.float64)
            t_k = steps["t"][k]
            if output == "average":
                avg_state = state if avg_state is None else model.average([avg_state, state], [T, t_k])
                avg_y = (T * avg_y + t_k * y) / (T + t_k)
            T += t_k
            gmax = float(gx.max(initial=-math.inf))
            if run.due(k + 1, final=k == K - 1):
                run.record(k + 1, force=True, objective=problem.objective_value(model, state),
                           max_violation=max(0.0, gmax), multiplier_norm=float(np.linalg.norm(y)),
                           primal_step=float(tau), dual_step=float(sigma), theta=float(theta))
            if run.tick(k, None if callback is None else model.parameters(state),
                        {"multipliers": y.copy(), "constraint_values": gx.copy()}, max_violation=max(0.0, gmax)):
                message = f"the callback stopped the run after iteration {k}"
                break
            if dual_stagnation is not None:
                window.append(y.copy())
                if len(window) > STAGNATION_WINDOW:
                    window.pop(0)
                if len(window) == STAGNATION_WINDOW:
                    Y = np.array(window)
                    spread = float(np.max(Y.max(axis=0) - Y.min(axis=0), initial=0.0))
                    if spread / (1.0 + float(np.linalg.norm(Y.mean(axis=0)))) < dual_stagnation:
                        run.status = "converged"
                        message = f"the multipliers stagnated (relative spread {spread:.3g}) at iteration {k}"
                        break
            if early_stop and k + 1 > 2 * math.ceil(K / 3) and problem.targets_met(model, state):
                run.status, message = "converged", f"every constrained class met half its target rate at iteration {k}"
                break
    n_iter = k + 1
    # the last iterate x_{n_iter} is a row however the run stopped (recording a row twice is a no-op)
    run.record(n_iter, force=True, objective=problem.objective_value(model, state), max_violation=max(0.0, gmax),
               multiplier_norm=float(np.linalg.norm(y)), primal_step=float(tau), dual_step=float(sigma),
               theta=float(theta))
    out_state, out_y = (avg_state, avg_y) if output == "average" and avg_state is not None else (state, y)
    values = np.asarray(problem.constraint_values(model, out_state), dtype=np.float64)
    f = problem.objective_value(model, out_state)
    counters.add("prox_unmet", prox_unmet)
    info = {"max_iter": K, "output": output, "mu": mu, "primal_step": tau0, "dual_step": sigma0,
            "multipliers_last": y.copy(), "multipliers_average": avg_y.copy() if output == "average" else None,
            "constraint_values": values, "primal_steps": steps["tau"][:n_iter], "dual_steps": steps["sigma"][:n_iter],
            "thetas": steps["theta"][:n_iter], "gammas": steps["gamma"][:n_iter + 1],
            "inexactness": nu[:n_iter], "prox_unmet": prox_unmet}
    result = run.finish(model.parameters(out_state), objective=f, message=message, n_iter=n_iter,
                        max_violation=max(0.0, float(values.max(initial=-math.inf))), multipliers=out_y, info=info,
                        state=out_state)
    # the heuristics (new bounds, dropped rows) may have replaced the problem: the one solved
    result.problem = problem
    return result
