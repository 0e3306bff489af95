r"""Feasibility check: minimise :math:`g(x) = \max_i g_i(x)` over the domain and, for convex
constraints, certify infeasibility with a lower bound on :math:`g^* = \min_{x \in \mathcal X} g(x)`.

A solver that ends with ``"no_feasible_iterate"`` cannot tell a hard problem from an impossible one;
`check_feasibility` runs a projected subgradient method on :math:`g` and, when :math:`g` is convex,
keeps lower bounds from the subgradient inequality through the domain's support function
:math:`\sigma_{\mathcal X}`: per iterate, :math:`g^* \ge g(x_k) - \langle s_k, x_k\rangle -
\sigma_{\mathcal X}(-s_k)`, and aggregated over windows of iterates with the steps as weights.
Status: ``"feasible"``, ``"certified_infeasible"`` (``lower_bound > feasibility_tolerance``) or
``"undecided"``; ``lower_bound`` is ``-inf`` when no bound is valid.
Design notes: docs/design.md, 'Module notes'.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np

from ..problems._protocol import require_constrained_problem
from .._results import FEASIBILITY_STATUSES, History
from ..problems import BlockTerm, ProximalTerm, ShiftedTerm
from ..problems import ClassPairwiseRisk, MarginRisk
from ._common import PassMeter, default_record_every, start_point
from ._schedules import Schedule, inverse_sqrt
from ._step_rules import NormalizedStep
from ._switching_core import FusedOracle, switching_loop
from ._validation import check_count, check_real, check_schedule

__all__ = ["check_feasibility", "FeasibilityResult"]

#: Margin losses whose mean is convex in the weights (the sigmoid loss is not).
_CONVEX_LOSSES = ("hinge", "logistic", "squared_hinge")


@dataclass
class FeasibilityResult:
    r"""Outcome of `check_feasibility`.

    Attributes
    ----------
    status : {"feasible", "certified_infeasible", "undecided"}
        One of `fastcon._results.FEASIBILITY_STATUSES`.
    x : ndarray
        The iterate of smallest :math:`g` (the first feasible one when ``status == "feasible"``).
    min_violation : float
        :math:`g(x)` at that iterate: the smallest constraint value found (an upper bound on
        :math:`g^*`; negative when strictly feasible).
    lower_bound : float
        A lower bound on :math:`g^* = \min_{\mathcal X} g` (module docstring); ``-inf`` when none is
        available. ``lower_bound > feasibility_tolerance`` certifies that no point of the domain is feasible.
    feasibility_tolerance : float
        The feasibility tolerance the status refers to.
    convex : bool
        Whether the constraint was treated as convex (bounds are only computed then).
    n_iter : int
        Subgradient iterations performed.
    message : str
    history : dict of ndarray
        ``iteration``, ``time``, ``constraint`` :math:`g(x_k)`, ``min_violation`` and
        ``lower_bound`` (best so far), ``step_length`` :math:`\|x_{k+1} - x_k\|` before projection.
    counters : dict
        ``rows_g`` and ``data_passes_g`` (constraint rows read).
    info : dict
        ``best_iteration``, ``bound_source`` (``"iterate"``, ``"aggregate"`` or None), the step rule
        and the domain.
    """

    status: str
    x: np.ndarray
    min_violation: float
    lower_bound: float
    feasibility_tolerance: float
    convex: bool
    n_iter: int
    message: str = ""
    history: dict = field(default_factory=dict)
    counters: dict = field(default_factory=dict)
    info: dict = field(default_factory=dict)

    def __post_init__(self):
        if self.status not in FEASIBILITY_STATUSES:
            raise ValueError(f"status: {self.status!r} is not one of {FEASIBILITY_STATUSES}")

    @property
    def gap(self) -> float:
        """``min_violation - lower_bound``: how well :math:`g^*` is located (``inf`` without a bound)."""
        return self.min_violation - self.lower_bound

    def __repr__(self):
        return (f"FeasibilityResult(status={self.status!r}, min_violation={self.min_violation:.6g}, "
                f"lower_bound={self.lower_bound:.6g}, n_iter={self.n_iter})")


# ---------------------------------------------------------------------------- convexity
def is_known_convex(term) -> bool:
    """Whether ``term`` is known to be convex: its own boolean ``convex`` attribute if it has one,
    else margin and class-pairwise risks with a convex loss (hinge, logistic, squared hinge), and
    `less_equal` / `BlockTerm` / `ProximalTerm` wrappers of convex terms. Anything else (ROC or
    demographic-parity gaps, sigmoid risks, custom terms without a flag) is not."""
    flag = getattr(term, "convex", None)
    if isinstance(flag, (bool, np.bool_)):
        return bool(flag)
    if isinstance(term, (ShiftedTerm, BlockTerm)):
        return is_known_convex(term.term)
    if isinstance(term, ProximalTerm):
        return term.rho_hat >= 0 and is_known_convex(term.term)
    if isinstance(term, (MarginRisk, ClassPairwiseRisk)):
        return term.loss in _CONVEX_LOSSES
    return False


# ---------------------------------------------------------------------------- the method
def check_feasibility(problem, x0=None, *, max_iter=5000, feasibility_tolerance=0.0, step_size=None, convex=None,
                      record_every=None) -> FeasibilityResult:
    r"""Minimise :math:`g = \max_i g_i` over the domain; certify infeasibility when :math:`g` is convex.

    Projected subgradient method :math:`x_{k+1} = \operatorname{proj}_{\mathcal X}(x_k - a_k s_k)`,
    :math:`s_k \in \partial g(x_k)` from ``problem.g_and_subgradient`` (one fused pass per iteration),
    with the lower bounds of the module docstring updated every iteration (:math:`O(d)` work). Stops
    at the first iterate with :math:`g \le` ``feasibility_tolerance`` (``"feasible"``), as soon as the
    lower bound exceeds ``feasibility_tolerance`` (``"certified_infeasible"``), at a zero subgradient (a global
    minimiser of a convex :math:`g`, whose value is then the bound), or after ``max_iter`` iterations
    (``"undecided"``).

    Parameters
    ----------
    problem : ConstrainedProblem
        Only its constraints and domain are used.
    x0 : array-like, optional
        Start (projected onto the domain); default ``problem.x0``.
    max_iter : int
        Iteration budget (a positive integer).
    feasibility_tolerance : float
        :math:`\ge 0`: feasible means :math:`g \le` ``feasibility_tolerance``, certified infeasible
        means the lower bound exceeds it.
    step_size : None, float, callable of k or "polyak"
        Step *lengths* :math:`\lambda_k = a_k\|s_k\|` (normalised subgradient steps, which suit
        non-smooth :math:`g` of any scale): None for :math:`(D/2)/\sqrt{k+1}` with :math:`D` the
        domain's diameter (:math:`\max(1, \|x_0\|)` in place of :math:`D/2` on an unbounded
        domain), a float :math:`c` for :math:`c/\sqrt{k+1}`, or a schedule of non-negative lengths.
        ``"polyak"``: :math:`a_k = (g(x_k) - \epsilon)/\|s_k\|^2` with :math:`\epsilon` =
        ``feasibility_tolerance``, the projection onto the linearised set :math:`\{g \le \epsilon\}` — fast when the problem is feasible, but it
        does not converge to :math:`g^*` when it is not, so certificates come slowly or not at all.
    convex : bool, optional
        Whether every :math:`g_i` is convex on the domain; lower bounds (certificates) are computed
        only if so. Default: `is_known_convex` on every constraint term (hinge/logistic/squared-hinge
        risks and their `less_equal`, block and proximal wrappers; a term may declare itself with a
        boolean ``convex`` attribute). Passing ``convex=True`` for a non-convex constraint makes
        the bound meaningless.
    record_every : int, optional
        History period (a positive integer); the last iteration is always recorded. Default: the
        shared rule `fastcon.solvers._common.default_record_every` (records read no data here:
        about 100 rows).

    Returns
    -------
    FeasibilityResult

    Examples
    --------
    >>> res = check_feasibility(problem)            # doctest: +SKIP
    >>> res.status, res.min_violation, res.lower_bound   # doctest: +SKIP
    ('certified_infeasible', 0.1000, 0.0003)
    """
    require_constrained_problem(problem, "check_feasibility")
    K = check_count("max_iter", max_iter)
    tol = check_real("feasibility_tolerance", feasibility_tolerance)
    record_every = (default_record_every(K, 0, 1) if record_every is None
                    else check_count("record_every", record_every))
    if convex is not None and not isinstance(convex, (bool, np.bool_)):
        raise TypeError(f"convex: expected None, True or False, got {convex!r}")
    x = start_point(problem, x0)
    dim, domain = problem.dim, problem.domain
    polyak = isinstance(step_size, str)
    if polyak and step_size != "polyak":
        raise ValueError(f"step_size: expected None, a number, a callable of k or 'polyak', got {step_size!r}")
    if step_size is None:
        scale = domain.diameter / 2.0 if math.isfinite(domain.diameter) and domain.diameter > 0 else max(
            1.0, float(np.linalg.norm(x)))
        lengths = check_schedule("step_size", Schedule(lambda k: scale / math.sqrt(k + 1.0), f"{scale:g}/sqrt(k+1)",
                                                       lambda k: scale / np.sqrt(k + 1.0)), K)
        rule = f"{scale:.6g}/sqrt(k+1)"
    elif polyak:
        lengths, rule = None, "polyak"
    elif isinstance(step_size, (int, float, np.integer, np.floating)) and not isinstance(step_size, bool):
        c = check_real("step_size", step_size, positive=True)
        lengths, rule = check_schedule("step_size", inverse_sqrt(c), K), f"{c:.6g}/sqrt(k+1)"
    else:
        lengths, rule = check_schedule("step_size", step_size, K), repr(step_size)

    if not problem.constraints:
        return FeasibilityResult("feasible", x, -math.inf, -math.inf, tol, True, 0,
                                 "the problem has no constraint", info={"step_size": rule, "domain": repr(domain)})
    if convex is None:
        convex = all(is_known_convex(c) for c in problem.constraints)
    convex = bool(convex)
    try:
        domain.support(np.zeros(dim))
        bounded_support = True
    except NotImplementedError:
        bounded_support = False
    use_bounds = convex and bounded_support

    s = np.empty(dim)
    agg_s = np.zeros(dim)
    agg_a = agg_w = 0.0
    best_x, best_g, best_k = x.copy(), math.inf, -1
    lower, bound_source = -math.inf, None
    history = History(record_every)
    meter = PassMeter(problem)
    t0 = time.perf_counter()
    status, stationary = "undecided", False
    steps = NormalizedStep(lengths, target=tol)

    def before_step(state):
        # The lower bounds of the module docstring, then the stop tests; the core takes the step.
        nonlocal agg_s, agg_a, agg_w, best_g, best_k, lower, bound_source, status, stationary
        k, g_k = state.t, state.constraint
        if g_k < best_g:
            best_x[:], best_g, best_k = x, g_k, k
        norm = float(np.linalg.norm(s))
        offset = g_k - float(s @ x)
        if convex and norm == 0.0:
            # 0 is a subgradient: x_k minimises the convex g over all of R^d, so g* = g(x_k).
            stationary = True
            if g_k > lower:
                lower, bound_source = g_k, "stationary"
        elif use_bounds:
            cut = offset - domain.support(-s)  # min over X of the cut at x_k
            if cut > lower:
                lower, bound_source = cut, "iterate"
        step = 0.0
        if g_k <= tol:
            status = "feasible"
        elif norm == 0.0:
            stationary = True  # no direction to follow; certified only for a convex g
        else:
            step = steps.step_length(k, g_k, norm)
            a = step / norm  # x_{k+1} = proj(x_k - a s_k), the step the core takes
            if use_bounds and a > 0.0:
                if k >= 1 and (k + 1) & k == 0:  # k + 1 a power of two: a new window of cuts
                    agg_s[:] = 0.0
                    agg_a = agg_w = 0.0
                agg_s += a * s
                agg_a += a * offset
                agg_w += a
                averaged = (agg_a - domain.support(-agg_s)) / agg_w
                if averaged > lower:
                    lower, bound_source = averaged, "aggregate"
        if status == "undecided" and lower > tol:
            status = "certified_infeasible"
        last = status != "undecided" or stationary or k == K - 1
        if history.due(k) or last:
            history.record(k, force=True, time=time.perf_counter() - t0, constraint=g_k, min_violation=best_g,
                           lower_bound=lower, step_length=step)
        return "stop" if last else None

    # Every step is on g (levels -inf), of length lambda_k along s_k / ||s_k||.
    run = switching_loop(x, FusedOracle(problem.g_and_subgradient, None, s), np.full(K, -math.inf), K,
                         objective_rule=None, constraint_rule=steps, project=problem.project_inplace,
                         before_step=before_step, constraint_buffer=s)
    k = run.n_iter - 1

    counters = meter.counters()
    n_iter = k + 1
    if status == "feasible":
        message = f"iterate {best_k} has g = {best_g:.6g} <= feasibility_tolerance {tol:g}"
    elif status == "certified_infeasible":
        message = (f"infeasible: every point of the domain has g >= {lower:.6g} > feasibility_tolerance {tol:g} (convex "
                   f"constraint; smallest g found {best_g:.6g})")
    else:
        if not convex:
            why = "; no lower bound: the constraint is not known to be convex (pass convex=True if it is)"
        elif not bounded_support:
            why = f"; no lower bound: no support function for {domain!r}"
        else:
            why = ""
        where = f"stopped at a stationary point of g after {n_iter} iterations" if stationary else (
            f"undecided after {n_iter} iterations")
        message = f"{where}: smallest g found {best_g:.6g} > feasibility_tolerance {tol:g}, lower bound {lower:.6g}{why}"
    info = {"best_iteration": best_k, "bound_source": bound_source, "step_size": rule, "domain": repr(domain)}
    return FeasibilityResult(status, best_x, float(best_g), float(lower), tol, convex, n_iter, message,
                             history=history.as_arrays(), counters={"rows_g": counters["rows_g"],
                                                                    "data_passes_g": counters.data_passes_g},
                             info=info)
