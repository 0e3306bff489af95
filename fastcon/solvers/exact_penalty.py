r"""The :math:`\ell_1` exact-penalty trust-region method with LP steps (Cartis, Gould & Toint 2011), the
baseline of the experiments of Ma, Lin & Yang [MLY20] §5 (see docs/references.md).

With :math:`c(x)` the constraints :math:`g_i` and the penalised ball constraints of the domain,
iteration :math:`k` minimises the linear model of the merit function
:math:`\phi_\sigma(x) = f(x) + \sigma \sum_j [c_j(x)]_+` over the :math:`\ell_\infty` trust region
(an LP, [MLY20] eq. (12), solved by HiGHS), accepts the step when the actual-to-predicted decrease
ratio :math:`\rho_k \ge \eta_1` and updates the radius by the paper's rule. The penalty update
(``"classic"`` or ``"steering"``), the criticality measures and the ball penalties are fastcon's
reconstruction, *not* a transcription of the original method.
Design notes: docs/design.md, 'Module notes'.
"""
from __future__ import annotations

import math

import numpy as np

from ..problems._protocol import require_constrained_problem
from .._results import SolveResult
from ._common import check_choice, describe_seed, start_point
from ._run import SolverRun
from ._validation import check_count, check_real

__all__ = ["exact_penalty_trust_region"]

_PENALTY_UPDATES = ("steering", "classic")
_BALL_FORMS = ("squared", "norm")
#: HiGHS's default primal feasibility tolerance: LP values closer than this are not told apart.
_LP_TOLERANCE = 1e-7


def linprog(*args, **kwargs):
    """`scipy.optimize.linprog`, imported on the first LP: scipy.optimize is not loaded by ``import fastcon``."""
    from scipy.optimize import linprog as scipy_linprog

    return scipy_linprog(*args, **kwargs)


# ---------------------------------------------------------------------------- domain and model
class _DomainModel:
    """The domain split into LP bounds ``lower <= x <= upper`` and penalised balls."""

    def __init__(self, domain, dim, ball_form):
        try:
            self.lower, self.upper, self.balls = domain.box_and_balls(dim)  # balls: (index slice, centre or None, r)
        except NotImplementedError as exc:
            raise ValueError(f"problem: exact_penalty_trust_region needs a domain that is a box intersected with "
                             f"balls (Whole, Box, Ball, ProductOfBalls, ColumnBalls, Product of these); got "
                             f"{domain!r} ({exc})") from exc
        self.ball_form = ball_form
        self.has_bounds = bool(np.isfinite(self.lower).any() or np.isfinite(self.upper).any())

    def ball_values(self, x, values, rows):
        """Write the penalised ball constraints at ``x`` into ``values`` and their gradients into ``rows``."""
        for j, (block, centre, r) in enumerate(self.balls):
            diff = x[block] if centre is None else x[block] - centre
            row = rows[j]
            row[:] = 0.0
            if self.ball_form == "squared":
                values[j] = float(diff @ diff) - r * r
                np.multiply(diff, 2.0, out=row[block])
            else:
                norm = math.sqrt(float(diff @ diff))
                values[j] = norm - r
                if norm > 0.0:
                    np.divide(diff, norm, out=row[block])

    def ball_violation(self, x) -> float:
        """:math:`\\max(0, \\max_B \\|x_B - x_c\\| - r)` (the norm form, whatever ``ball_form``)."""
        worst = 0.0
        for block, centre, r in self.balls:
            diff = x[block] if centre is None else x[block] - centre
            worst = max(worst, math.sqrt(float(diff @ diff)) - r)
        return worst

    def step_bounds(self, x, radius):
        """Bounds on the step: the trust region intersected with the box shifted to ``x``."""
        return np.maximum(self.lower - x, -radius), np.minimum(self.upper - x, radius)


class _PointModel:
    """:math:`f`, :math:`\\nabla f`, :math:`c` and :math:`J` at one point, with its LP values cached by radius."""

    def __init__(self, dim, n_rows):
        self.f = math.nan
        self.grad = np.empty(dim)
        self.values = np.empty(n_rows)
        self.jac = np.empty((n_rows, dim))
        self.rows = [self.jac[j] for j in range(n_rows)]  # views, so oracles write in place
        self.best_violation = {}  # radius -> min over the region of v_lin, or None if the LP failed

    def finite(self) -> bool:
        return bool(math.isfinite(self.f) and np.isfinite(self.grad).all() and np.isfinite(self.values).all()
                    and np.isfinite(self.jac).all())

    def violation_sum(self) -> float:
        """:math:`v(x) = \\sum_j [c_j(x)]_+`."""
        return float(np.maximum(self.values, 0.0).sum())

    def linearized_violation(self, step) -> float:
        """:math:`v_{\\mathrm{lin}}(x; s) = \\sum_j [c_j + \\nabla c_j^\\top s]_+`."""
        return float(np.maximum(self.values + self.jac @ step, 0.0).sum())

    def model_decrease(self, penalty, step) -> float:
        """:math:`l_\\sigma(x; 0) - l_\\sigma(x; s)`, evaluated from the model."""
        return float(-(self.grad @ step) + penalty * (self.violation_sum() - self.linearized_violation(step)))


class _LinearPrograms:
    """The LP of the module docstring, with solve and failure counts."""

    def __init__(self, dim, n_rows):
        self.dim, self.n_rows = dim, n_rows
        self.bounds = np.empty((dim + n_rows, 2))
        self.bounds[dim:, 0], self.bounds[dim:, 1] = 0.0, np.inf
        self.slack_block = -np.eye(n_rows)
        self.zero_gradient = np.zeros(dim)
        self.solves = self.failures = 0

    def solve(self, gradient, point, weight, lower, upper):
        r"""Minimise :math:`\text{gradient}^\top s + \text{weight}\sum_j [c_j + \nabla c_j^\top s]_+` over
        ``lower <= s <= upper``; return ``s`` or None when HiGHS does not report an
        optimum.
        """
        n, m = self.dim, self.n_rows
        self.bounds[:n, 0], self.bounds[:n, 1] = lower, upper
        cost = np.concatenate([gradient, np.full(m, weight)])
        rows = dict(A_ub=np.hstack([point.jac, self.slack_block]), b_ub=-point.values) if m else {}
        self.solves += 1
        result = linprog(cost, bounds=self.bounds, method="highs", **rows)
        if result.status != 0 or result.x is None or not np.isfinite(result.x).all():
            self.failures += 1
            return None
        return np.array(result.x[:n])

    def best_violation(self, point, x, radius, domain):
        """:math:`\\min_{\\|s\\|_\\infty \\le r} v_{\\mathrm{lin}}(x; s)`, cached on ``point``; None on LP failure."""
        if radius not in point.best_violation:
            solution = self.solve(self.zero_gradient, point, 1.0, *domain.step_bounds(x, radius))
            point.best_violation[radius] = None if solution is None else point.linearized_violation(solution)
        return point.best_violation[radius]


def _criticality(decrease, radius, tolerance, unit_decrease):
    r"""Decide :math:`\psi \le \epsilon` from :math:`\mathrm{pred}(\Delta)`, solving the unit LP only if needed.

    Returns ``(critical, psi, psi_upper)``: ``psi`` is exact or NaN when the bounds
    :math:`\mathrm{pred}/\max(1,\Delta) \le \psi \le \mathrm{pred}/\min(1,\Delta)` decided alone;
    ``psi_upper`` is ``psi`` or the upper bound.
    """
    if radius == 1.0:
        return decrease <= tolerance, decrease, decrease
    upper = decrease / min(1.0, radius)
    if decrease / max(1.0, radius) > tolerance:
        return False, math.nan, upper
    if upper <= tolerance:
        return True, math.nan, upper
    psi = unit_decrease()
    if psi is None:  # LP failure: criticality not certified
        return False, math.nan, upper
    return psi <= tolerance, psi, psi


# ---------------------------------------------------------------------------- the solver
def exact_penalty_trust_region(problem, x0=None, *, penalty=None, penalty_update="steering", steering=0.1,
                               penalty_increase=100.0, max_penalty=1e12, max_steering_repeats=5, radius=1.0,
                               max_iter=1000, eta1=0.3, eta2=0.7, gamma=0.5, gamma_accept=1.0, expansion=1.0,
                               min_radius=1e-10, criticality_tolerance=1e-3, feasibility_tolerance=None,
                               ball_constraint="squared", seed=0, record_every=None, callback=None,
                               verbose=False) -> SolveResult:
    r"""Exact-penalty trust-region method with LP steps (reconstruction; see the module docstring).

    Defaults are [MLY20]'s values for pendigits and segment (§5): :math:`\xi = 0.1`,
    :math:`\tau = 100`, :math:`\sigma_{-1} = 1/\xi`, :math:`\epsilon = 10^{-3}`, :math:`\Delta_0 = 1`,
    :math:`\eta_1 = 0.3`, :math:`\eta_2 = 0.7`, :math:`\gamma_1 = 0.5`, :math:`\gamma_2 = 1` (usps:
    ``steering=0.02``).

    Parameters
    ----------
    problem : ConstrainedProblem
        Domain ``Whole``, ``Box``, ``Ball``, ``ProductOfBalls``, ``ColumnBalls``, a ``Product`` of these
        or any other whose ``box_and_balls`` answers.
    x0 : array-like, optional
        Start (projected onto the domain); default ``problem.x0``.
    penalty : float, optional
        Initial penalty :math:`\sigma_{-1} > 0`; default :math:`1/\xi` (``1 / steering``).
    penalty_update : {"steering", "classic"}
        The two reconstructed rules of the module docstring.
    steering : float
        :math:`\xi \in (0, 1]`, the fraction of the best linearised violation decrease a step must
        achieve (``"steering"``); also sets the default ``penalty``.
    penalty_increase : float
        :math:`\tau > 1`.
    max_penalty : float
        Largest allowed :math:`\sigma`; an increase beyond it ends an infeasible run with
        ``"penalty_limit"`` (the steering rule simply stops increasing).
    max_steering_repeats : int
        Cap on steering increases per iteration.
    radius : float
        :math:`\Delta_0 > 0` (:math:`\ell_\infty` trust region).
    max_iter : int
        Iterations (a positive integer); each solves at least one step LP.
    eta1, eta2 : float
        :math:`0 < \eta_1 \le \eta_2 < 1`: acceptance and "very successful" thresholds of :math:`\rho_k`.
    gamma : float
        :math:`\gamma_1 \in (0, 1)`, the radius factor after a rejected step.
    gamma_accept : float
        :math:`\gamma_2 \in [\gamma_1, 1]`, the factor after an accepted step with :math:`\rho_k < \eta_2`.
    expansion : float
        :math:`\gamma_3 \ge 1`, the factor after :math:`\rho_k \ge \eta_2` (paper: 1).
    min_radius : float
        Stop when :math:`\Delta_k` falls below it (> 0; steps no longer change :math:`x` meaningfully).
    criticality_tolerance : float
        :math:`\epsilon > 0` for the criticality measures :math:`\psi_\sigma` and :math:`\chi` (a
        stopping test, not a level of :math:`g`; that is ``feasibility_tolerance``).
    feasibility_tolerance : float, optional
        :math:`\epsilon_{\mathrm{feas}}` on the maximum violation for ``"converged"``; default
        ``criticality_tolerance``.
    ball_constraint : {"squared", "norm"}
        Form of the penalised ball constraints (module docstring, *Domain*).
    seed : int or numpy.random.SeedSequence
        Accepted for the common solver signature; the method (HiGHS included) is deterministic, so
        the result does not depend on it.
    record_every : int, optional
        History period; the iteration that ends the run is always recorded. Default None: the rule
        every solver shares (`fastcon.solvers._common.default_record_every`); a record here reads no
        data (its values are the step's model), so about 100 rows.
    callback : callable ``(k, x, info) -> bool``, optional
        Called after every iteration that reached the ratio test (all but one ending the run at its
        criticality test), with the current iterate (a live buffer: copy it to keep it) and ``info``
        with ``penalty``, ``radius`` (:math:`\Delta_k` of the step), ``next_radius``, ``step``
        (:math:`s_k`, live, None after an LP failure), ``predicted_reduction``, ``rho`` and
        ``accepted``. Returning True stops with ``"callback_stop"``.
    verbose : bool, int or str
        See `fastcon._progress.Progress`.

    Returns
    -------
    SolveResult
        ``x`` the last iterate. Status ``"converged"`` (:math:`\psi_\sigma \le \epsilon` at a point with
        violation :math:`\le \epsilon_{\mathrm{feas}}`, ``info["stop_reason"] = "critical"``; or the
        radius fell below ``min_radius`` at such a point, ``"small_radius"``),
        ``"infeasible_stationary"`` (``"infeasible_critical"``: :math:`\chi \le \epsilon` at an
        infeasible point), ``"penalty_limit"`` (``"max_penalty"``), ``"radius_limit"``
        (``"small_radius"`` at an infeasible point), ``"max_iter"`` or ``"callback_stop"``; a
        ``"max_iter"``, ``"infeasible_stationary"``, ``"penalty_limit"`` or ``"radius_limit"`` run none
        of whose iterates had max violation :math:`\le
        \epsilon_{\mathrm{feas}}` ends with ``"no_feasible_iterate"`` instead (``stop_reason`` still
        says how it stopped; the message gives the smallest violation reached,
        ``info["best_violation"]``, and points to `check_feasibility`). An LP that HiGHS does not solve
        counts as a rejected step (``counters["lp_failures"]``); nothing numerical raises.
        ``max_violation`` includes the balls' violation (module docstring). No ``multipliers``: the
        LP duals are not reliable estimates (the :math:`\ell_\infty` trust region is active at almost
        every solution of a linear model, and then the duals are not unique). History, one row per iteration
        :math:`k` at :math:`x_k`: ``objective``, ``constraint`` (raw :math:`\max_i g_i`),
        ``max_violation``, ``merit`` :math:`\phi_\sigma(x_k)`, ``penalty`` :math:`\sigma` of the step,
        ``radius`` :math:`\Delta_k`, ``predicted_reduction``, ``criticality`` (:math:`\psi_\sigma`
        when solved or :math:`\Delta_k = 1`, else NaN), ``rho`` (NaN when no step was tried),
        ``accepted``, ``time``, ``data_passes_f/g``. ``counters`` add ``lp_solves``, ``lp_failures``,
        ``accepted_steps``, ``rejected_steps``, ``penalty_increases``.
    """
    require_constrained_problem(problem, "exact_penalty_trust_region")
    check_choice("penalty_update", penalty_update, _PENALTY_UPDATES)
    check_choice("ball_constraint", ball_constraint, _BALL_FORMS)
    xi = check_real("steering", steering, positive=True)
    if xi > 1.0:
        raise ValueError(f"steering: must be in (0, 1], got {steering!r}")
    sigma = 1.0 / xi if penalty is None else check_real("penalty", penalty, positive=True)
    tau = check_real("penalty_increase", penalty_increase, positive=True)
    if tau <= 1.0:
        raise ValueError(f"penalty_increase: must exceed 1, got {penalty_increase!r}")
    sigma_max = check_real("max_penalty", max_penalty, positive=True)
    if sigma_max < sigma:
        raise ValueError(f"max_penalty: must be at least the initial penalty {sigma:g}, got {max_penalty!r}")
    repeats_cap = check_count("max_steering_repeats", max_steering_repeats, 0)
    delta = check_real("radius", radius, positive=True)
    run = SolverRun("exact_penalty_trust_region", max_iter, record_every=record_every, callback=callback,
                    verbose=verbose, feasibility_tolerance=feasibility_tolerance, seed=seed)
    T = run.max_iter
    eta1, eta2 = check_real("eta1", eta1, positive=True), check_real("eta2", eta2, positive=True)
    if not eta1 <= eta2 < 1.0:
        raise ValueError(f"eta2: need 0 < eta1 <= eta2 < 1, got eta1 = {eta1}, eta2 = {eta2}")
    gamma = check_real("gamma", gamma, positive=True)
    if gamma >= 1.0:
        raise ValueError(f"gamma: must be in (0, 1), got {gamma!r}")
    gamma_accept = check_real("gamma_accept", gamma_accept, positive=True)
    if not gamma <= gamma_accept <= 1.0:
        raise ValueError(f"gamma_accept: must be in [gamma, 1] = [{gamma}, 1], got {gamma_accept!r}")
    expansion = check_real("expansion", expansion, positive=True)
    if expansion < 1.0:
        raise ValueError(f"expansion: must be at least 1, got {expansion!r}")
    min_radius = check_real("min_radius", min_radius, positive=True)
    if min_radius >= delta:
        raise ValueError(f"min_radius: must be below the initial radius {delta:g}, got {min_radius!r}")
    tol = check_real("criticality_tolerance", criticality_tolerance, positive=True)
    if run.feasibility_tolerance is None:
        run.feasibility_tolerance = tol
    feas_tol = run.feasibility_tolerance

    domain = _DomainModel(problem.domain, problem.dim, ball_constraint)
    terms, n_g, dim = problem.constraints, problem.n_constraints, problem.dim
    n_rows = n_g + len(domain.balls)
    x = start_point(problem, x0)
    x_trial = np.empty(dim)
    current, trial = _PointModel(dim, n_rows), _PointModel(dim, n_rows)
    lps = _LinearPrograms(dim, n_rows)

    def evaluate(point, at):
        """One fused oracle call per term at ``at``."""
        point.f = problem.f_and_subgradient(at, point.grad)
        for i, term in enumerate(terms):
            point.values[i] = term.value_and_subgradient(at, point.rows[i])
        domain.ball_values(at, point.values[n_g:], point.rows[n_g:])
        point.best_violation.clear()

    def max_violation(point, at):
        g_max = float(point.values[:n_g].max()) if n_g else -math.inf
        return max(0.0, g_max, domain.ball_violation(at)), g_max

    with run.start(problem):  # records reuse the step's values: no data read
        evaluate(current, x)
        if not current.finite():
            raise ValueError("x0: the objective or a constraint oracle returned a non-finite value or "
                             "subgradient at the start point")
        status, stop_reason, stop_k = "max_iter", "max_iter", T - 1
        message = f"ran {T} iterations without meeting the criticality test"
        psi_upper = math.nan
        accepted_steps = rejected_steps = penalty_increases = 0
        info_cb = {}
        for k in range(T):
            lower, upper = domain.step_bounds(x, delta)
            violation_sum = current.violation_sum()
            violation, g_max = max_violation(current, x)
            run.offer(k, violation)  # smallest max violation over the iterates x_k (balls included)
            steering_repeats = 0
            step = pred = None
            psi = math.nan

            def unit_decrease():  # psi_sigma(x_k): the step LP at unit radius
                unit = lps.solve(current.grad, current, sigma, *domain.step_bounds(x, 1.0))
                return None if unit is None else max(0.0, current.model_decrease(sigma, unit))

            # --- step (re)computation and penalty update at x_k; `stop` ends the run here.
            stop = None
            while True:
                solution = lps.solve(current.grad, current, sigma, lower, upper)
                if solution is None:
                    step = pred = None  # numerical LP failure: a rejected step below
                    break
                step = solution
                pred = max(0.0, current.model_decrease(sigma, step))
                if (penalty_update == "steering" and violation_sum > 0.0 and steering_repeats < repeats_cap
                        and sigma * tau <= sigma_max):
                    best = lps.best_violation(current, x, delta, domain)
                    slack = _LP_TOLERANCE * n_rows * max(1.0, violation_sum)  # below what HiGHS resolves
                    if best is not None and (violation_sum - current.linearized_violation(step)
                                             < xi * (violation_sum - best) - slack):
                        sigma *= tau
                        steering_repeats += 1
                        penalty_increases += 1
                        continue
                critical, psi, psi_upper = _criticality(pred, delta, tol, unit_decrease)
                if not critical:
                    break
                # psi_sigma(x_k) <= tolerance: the trust-region loop for this sigma has converged.
                if violation <= feas_tol:
                    stop = ("converged", "critical",
                            f"criticality measure psi <= {psi_upper:.3g} (criticality_tolerance {tol:g}) at max "
                            f"violation {violation:.3g} (penalty {sigma:.6g}) after {k + 1} iterations")
                    break
                best_unit = lps.best_violation(current, x, 1.0, domain)
                chi = math.nan if best_unit is None else violation_sum - best_unit
                if chi <= tol:
                    stop = ("infeasible_stationary", "infeasible_critical",
                            f"infeasible critical point: max violation {violation:.3g} but the linearized "
                            f"violation cannot decrease (chi = {chi:.3g} <= criticality_tolerance)")
                    break
                if sigma * tau > sigma_max:
                    stop = ("penalty_limit", "max_penalty",
                            f"penalty {sigma:.6g} cannot grow beyond max_penalty {sigma_max:.6g} while the max "
                            f"violation is {violation:.3g} at a critical point of the penalty function")
                    break
                sigma *= tau
                penalty_increases += 1
            merit = current.f + sigma * violation_sum
            # History row of x_k (values already known: recording reads no data).
            row = dict(objective=current.f, constraint=g_max, max_violation=violation, merit=merit, penalty=sigma,
                       radius=delta, predicted_reduction=math.nan if pred is None else pred, criticality=psi,
                       rho=math.nan, accepted=False)
            if stop is not None:
                status, stop_reason, message = stop
                stop_k = k
                run.record(k, force=True, **row)
                break

            # --- trial point and ratio test
            rho = -math.inf
            if step is not None:
                np.add(x, step, out=x_trial)
                if domain.has_bounds:
                    np.clip(x_trial, domain.lower, domain.upper, out=x_trial)
                np.subtract(x_trial, x, out=step)  # the step taken (clipping removes LP round-off)
                pred = max(0.0, current.model_decrease(sigma, step))
                evaluate(trial, x_trial)
                if pred > 0.0 and trial.finite():
                    rho = (merit - (trial.f + sigma * trial.violation_sum())) / pred
            accepted = rho >= eta1
            if step is None:
                rho = math.nan  # no step was tried
            old_delta = delta
            delta *= expansion if rho >= eta2 else (gamma_accept if accepted else gamma)
            row.update(predicted_reduction=math.nan if pred is None else pred, rho=rho, accepted=accepted)
            passes = run.passes()  # before the callback runs
            if accepted:
                x, x_trial = x_trial, x
                current, trial = trial, current
                accepted_steps += 1
            else:
                rejected_steps += 1
            info_cb.update(penalty=sigma, radius=old_delta, next_radius=delta, step=step,
                           predicted_reduction=pred, rho=rho, accepted=accepted)
            if run.tick(k, x, info_cb, merit=merit, penalty=sigma, radius=delta):
                status, stop_reason, stop_k, message = "callback_stop", "callback", k, "the callback asked to stop"
            if status == "max_iter" and delta < min_radius:
                final_violation = max_violation(current, x)[0]
                status = "converged" if final_violation <= feas_tol else "radius_limit"
                stop_reason, stop_k = "small_radius", k
                message = (f"trust-region radius {delta:.3g} fell below min_radius {min_radius:.3g} at max violation "
                           f"{final_violation:.3g}; criticality not certified (psi <= {psi_upper:.3g} at the last check"
                           f"; {lps.failures} LP failures)")
            stopping = status != "max_iter" or k == T - 1
            run.record(k, force=stopping, passes=passes, **row)
            if stopping:
                break

    final_violation = max_violation(current, x)[0]
    best_violation = run.offer(stop_k + 1, final_violation)
    run.status = status
    for name, value in (("lp_solves", lps.solves), ("lp_failures", lps.failures), ("accepted_steps", accepted_steps),
                        ("rejected_steps", rejected_steps), ("penalty_increases", penalty_increases)):
        run.counters.add(name, value)
    info = {"stop_reason": stop_reason, "penalty": sigma, "radius": delta, "criticality_bound": psi_upper,
            "penalty_update": penalty_update, "steering": xi, "penalty_increase": tau, "max_penalty": sigma_max,
            "ball_constraint": ball_constraint, "penalized_balls": len(domain.balls), "criticality_tolerance": tol,
            "feasibility_tolerance": feas_tol, "best_violation": best_violation, "seed": describe_seed(seed),
            "reconstruction": "see the fastcon.solvers.exact_penalty module docstring"}
    # Never feasible: one status for every solver; the stop reason stays in info["stop_reason"].
    return run.finish(x.copy(), objective=current.f, max_violation=final_violation, message=message,
                      n_iter=stop_k + 1, info=info, no_feasible_from=("max_iter", "infeasible_stationary",
                                                                          "penalty_limit", "radius_limit"))
