"""One fitting mechanism for the linear estimators: build the score-space problem, pick the solver, calibrate the bound.

`solve_linear` runs one solver on a `LinearModelProblem`; `calibrate_bound` wraps it in the loop
that tightens (or loosens) the smoothed surrogate's bound until the *hard* metric a user measures
is within the requested bound.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..solvers import switching_subgradient
from ..solvers.augmented_lagrangian import augmented_lagrangian

__all__ = ["PARTIAL_CONSTRAINTS", "SOLVERS", "Calibration", "best_solve", "calibrate_bound", "choose_solver",
           "lbfgs_memory", "solve_linear"]

#: Solvers an estimator accepts by name.
SOLVERS = ("auto", "augmented_lagrangian", "switching_subgradient", "idca")
#: Constraints with difference-of-convex surrogates (He, Huang, Yao & Lin [HHYL25]), solved by IDCA only.
PARTIAL_CONSTRAINTS = ("partial_dp", "weak_partial_dp")


def choose_solver(solver, loss, constraint):
    """The solver ``"auto"`` stands for (the rule is documented in the estimators' ``solver`` parameter).

    ``"idca"`` (`fastcon.solvers.idca`) for the partial constraints, whose ramp surrogates are
    differences of convex functions that neither the augmented Lagrangian nor the switching
    subgradient method handle; for every other constraint the switching subgradient method with
    ``loss="hinge"`` and the augmented Lagrangian otherwise. An explicit solver that does not fit
    the constraint is a ValueError naming ``solver``.
    """
    if solver not in SOLVERS:
        raise ValueError(f"solver: expected one of {SOLVERS}, got {solver!r}")
    if constraint in PARTIAL_CONSTRAINTS:
        if solver not in ("auto", "idca"):
            raise ValueError(f"solver: constraint={constraint!r} is solved by 'idca' (its surrogate is a "
                             f"difference of convex functions), got {solver!r}; use 'auto' or 'idca'")
        return "idca"
    if solver == "idca":
        raise ValueError(f"solver: 'idca' solves the partial constraints {PARTIAL_CONSTRAINTS} only, not "
                         f"{constraint!r}; use 'auto', 'augmented_lagrangian' or 'switching_subgradient'")
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
        return augmented_lagrangian(problem, x0, multipliers0=multipliers, verbose=verbose,
                                    stationarity_tolerance=tol, lbfgs_memory=lbfgs_memory(problem), **kwargs)
    # switching subgradient ([HL23] Algorithm 1): a step of 1/sqrt(t+1) scaled to the start's
    # subgradient, the best nearly-feasible iterate (an estimator needs one model, not a random draw)
    n_iter = 2000 if max_iter is None else max_iter
    grad = np.empty(problem.dim)
    problem.f_and_subgradient(x0, grad)
    scale = 1.0 / max(float(np.linalg.norm(grad)), 1.0)
    return switching_subgradient(problem, x0, max_iter=n_iter, step_size=lambda t: scale / np.sqrt(t + 1.0),
                                 switching_level=1e-4, output="best_feasible", record_every=max(n_iter // 50, 1),
                                 verbose=verbose)


def lbfgs_memory(problem, most=20, least=5, budget=64 << 20) -> int:
    r"""L-BFGS's memory for an estimator's solve: ``most`` pairs, fewer where they would exceed ``budget`` bytes.

    The history holds :math:`2h` vectors of the problem's dimension :math:`d`. On a narrow problem
    (a9a: :math:`d = 124`) that is nothing and :math:`h = 20` saves iterations; on a wide one
    (:math:`d = 10^6`) 20 pairs are 320 MB, thirty times a :math:`10^5 \times 10^6` CSR of 12 MB.
    So :math:`h` is the largest count whose :math:`16 h d` bytes fit in ``budget`` (64 MiB: every
    :math:`d \le 200{,}000` keeps 20 pairs), clipped to ``[least, most]``. It depends on
    :math:`d` only, not on the rows, so that a weight of 2 and a repeated row give the same solve.
    """
    return int(min(most, max(least, budget // (16 * max(int(problem.dim), 1)))))


@dataclass
class Calibration:
    """Record of the bound calibration: one entry per solve."""
    bounds: list = field(default_factory=list)
    smoothings: list = field(default_factory=list)
    straddles: list = field(default_factory=list)
    hard_values: list = field(default_factory=list)
    objectives: list = field(default_factory=list)
    statuses: list = field(default_factory=list)
    chosen: int = -1
    met: bool = False
    converged: bool = True

    def as_dict(self, measured_on):
        return {"bounds": self.bounds, "smoothings": self.smoothings, "straddles": self.straddles,
                "hard_values": self.hard_values,
                "objectives": self.objectives, "statuses": self.statuses, "chosen": self.chosen, "met": self.met,
                "converged": self.converged, "measured_on": measured_on}


def best_solve(hard_values, objectives, hard_bound, converged):
    """Index of the solve to keep among all those seen: ``(index, met)``.

    Every solve is a candidate, whatever its bound or smoothing. Among those whose hard value
    meets ``hard_bound``, the lowest objective, counting the solves that did not converge
    (``converged[k]`` False) only when no converged solve meets it; if none meets it, the
    smallest hard value (converged first among equal values). So the kept solve is never worse
    than one already seen.
    """
    met = [k for k, h in enumerate(hard_values) if h <= hard_bound]
    if met:
        return min(met, key=lambda k: (not converged[k], objectives[k], k)), True
    return min(range(len(hard_values)), key=lambda k: (hard_values[k], not converged[k], k)), False


def _next_bound(points, hard_bound, target):
    """The next bound from ``(bound, hard value, active)`` points at one smoothing (`calibrate_bound`); None: stop."""
    feasible = [(b, h) for b, h, _ in points if h <= hard_bound]
    infeasible = [(b, h) for b, h, _ in points if h > hard_bound]
    if feasible:
        lo, h_lo = max(feasible)
        above = [b for b, _ in infeasible if b > lo]
        if above:                                   # bracketed: interpolate in log(bound)
            hi = min(above)
            if hi <= 1.05 * lo:   # within 5% the hard gap jumps across the band (a few rows change side)
                return None
            h_hi = min(h for b, h in infeasible if b == hi)
            # regula falsi on h against log(bound), kept inside the middle 80% of the bracket so
            # that a step function of the bound cannot stall it at one end
            frac = float(np.clip((target - h_lo) / (h_hi - h_lo), 0.1, 0.9))
            return float(lo * (hi / lo) ** frac)
        return lo * float(np.clip(target / max(h_lo, 1e-12), 1.25, 4.0))
    hi, h_hi = min(infeasible)
    return hi * float(np.clip(target / h_hi, 0.25, 0.8))


def calibrate_bound(solve_at, hard_metric, hard_bound, smoothing, *, max_rounds=8, lower=0.8, adapt_smoothing=True,
                    max_bound=None, converged=None, straddles=None):
    r"""Find a surrogate bound whose solution meets ``hard_metric <= hard_bound``, as loose as the rounds allow.

    The hard gap :math:`h(\kappa)` of the solution at surrogate bound :math:`\kappa` is a step
    function of :math:`\kappa`, increasing on the whole but not everywhere. Round 0 solves at
    :math:`\kappa = \text{hard bound}`; then, aiming at :math:`h = 0.9\,\text{hard bound}`:

    * while every solve violates the hard bound, :math:`\kappa` shrinks by
      :math:`\text{clip}(0.9\,\text{hard bound}/h, 1/4, 0.8)`;
    * while every solve meets it, :math:`\kappa` grows by :math:`\text{clip}(\cdot, 1.25, 4)`,
      unless the constraint was inactive (zero multipliers: a looser bound changes nothing);
    * once a met and a violated bound bracket the target, regula falsi between them (linear in
      :math:`h` against :math:`\log\kappa`, kept within the middle 80% of the bracket), until
      they are within 5% of each other.

    The loop ends when :math:`h \in [\text{lower}\cdot\text{hard bound}, \text{hard bound}]` or after
    ``max_rounds`` solves. When the smoothed rates track the hard ones too loosely (an active
    constraint whose hard gap exceeds :math:`\kappa` by more than 3/4 of the hard bound although a
    tighter :math:`\kappa` lowered it by less than a fifth, a violated hard bound although
    :math:`\kappa` fell below hard bound/16, or two shrinking steps that did not lower :math:`h`),
    the smoothing :math:`\tau` is halved (at most four times) and the search goes on from the
    current point at :math:`\kappa = \min(\text{hard bound}, \kappa_{\text{last}})`, the last
    bound tried: restarting at the hard bound spent the rounds re-solving bounds that had already
    failed, so that a hard bound of 0.05 could end with no solve meeting it where the search for
    0.03, which shrank the bound faster, met both (`best_solve` would then have kept that solve).
    Every solve, at any bound and smoothing, is a candidate (`best_solve`): among those that met
    the hard bound the one with the smallest objective (converged solves first), else the one
    with the smallest hard value; ``Calibration.chosen`` is its round.

    With ``straddles`` the same signals first move to the next straddle
    (`fastcon.problems.RateGapConstraints`: the two rates of a pair read on either side of the
    threshold) and start again at the hard bound, and halve :math:`\tau` only once the straddles
    are used up: a tighter bound or a sharper sigmoid only moved the scores gathered just above
    the threshold closer to it (1M x 1M DP: hard gaps 0.030 -> 0.052 while the bound fell to
    :math:`1.7\cdot10^{-4}` and :math:`\tau` to 1/32), where a straddle counts them on the side
    the step counts them.

    Parameters
    ----------
    solve_at : callable
        ``(bound, smoothing) -> (x, SolveResult)``, warm-started by the caller; with ``straddles``,
        ``(bound, smoothing, straddle) -> (x, SolveResult)``.
    hard_metric : callable
        ``x -> float``, the hard quantity bounded by ``hard_bound``.
    smoothing : float
        The starting :math:`\tau`.
    adapt_smoothing : bool
        Whether :math:`\tau` may be halved. Not for the ROC constraint: there the hard gap is a
        supremum over all thresholds and the surrogate sees a grid, an offset that a tighter bound
        fixes and a sharper sigmoid does not (Adult, bound 0.02: met at :math:`\tau = 0.5`,
        missed after halving).
    max_bound : float, optional
        Largest bound tried (the partial DP block of [HHYL25] model (13) needs :math:`\kappa < 1`):
        a larger next bound is clipped to it, and the loop stops when the clipped bound was already
        tried.
    converged : callable, optional
        ``SolveResult -> bool``, whether a solve ended as its solver ends when all went well
        (default: status ``"converged"``); `best_solve` prefers those.
    straddles : sequence of float, optional
        Straddles to solve with, in order (``Calibration.straddles`` records each solve's); None: the
        caller has none (``solve_at`` takes two arguments).

    Returns
    -------
    (x, SolveResult, Calibration)
    """
    record = Calibration()
    solutions = []
    tau, bound, halvings, points = smoothing, hard_bound, 0, []
    straddle_at = 0
    target = 0.9 * hard_bound
    for _ in range(max_rounds):
        if straddles is None:
            x, result = solve_at(bound, tau)
        else:
            x, result = solve_at(bound, tau, straddles[straddle_at])
            record.straddles.append(float(straddles[straddle_at]))
        h = float(hard_metric(x))
        active = result.multipliers is None or bool(np.any(result.multipliers > 0))
        record.bounds.append(float(bound))
        record.smoothings.append(float(tau))
        record.hard_values.append(h)
        record.objectives.append(float(result.objective))
        record.statuses.append(result.status)
        solutions.append((x, result))
        points.append((bound, h, active))
        if lower * hard_bound <= h <= hard_bound or (h <= hard_bound and not active):
            break
        violated = [p for p in points if p[1] > hard_bound]
        # the hard gap exceeds the smoothed one by h - bound: more than 3/4 of the hard bound leaves
        # less than a quarter for the bound, and when a tighter bound did not lower h by a fifth
        # the smoothed rates track the hard ones too loosely (they can be equal while the hard ones
        # are not): sharpen the rates instead.
        looser = [p for p in points[:-1] if p[0] > bound]
        loose = active and h - bound > 0.75 * hard_bound and bool(looser) and h > 0.8 * min(looser)[1]
        stuck = len(violated) == len(points) and (
            bound < hard_bound / 16 or (len(points) >= 3 and points[-1][1] >= 0.95 * points[-3][1]))
        if (loose or stuck) and straddles is not None and straddle_at + 1 < len(straddles):
            # another surrogate, whose gap counts rows piled at the threshold: start again at the hard bound
            straddle_at, bound, points = straddle_at + 1, hard_bound, []
            continue
        if adapt_smoothing and (loose or stuck) and halvings < 4:
            tau, bound, halvings, points = tau / 2, min(hard_bound, bound), halvings + 1, []
            continue
        bound = _next_bound(points, hard_bound, target)
        if bound is not None and max_bound is not None:
            bound = min(bound, max_bound)
            if any(b == bound for b, _, _ in points):
                break
        if bound is None:
            break
    if converged is None:
        def converged(result):
            return result.status == "converged"
    ok = [bool(converged(result)) for _, result in solutions]
    k, met = best_solve(record.hard_values, record.objectives, hard_bound, ok)
    record.chosen, record.met, record.converged = k, met, ok[k]
    x, result = solutions[k]
    return x, result, record
