r"""IQRC, the inexact quadratically regularized constrained method of Ma, Lin & Yang [MLY20].

For :math:`\min_{x \in \mathcal X} f(x)` s.t. :math:`g(x) = \max_i f_i(x) \le 0` with :math:`\rho`-weakly
convex :math:`f` and :math:`f_i`, Algorithm 1 runs, for :math:`t = 0..T-1`,

.. math::

    x_{t+1} \approx \hat x_t = \operatorname*{argmin}_{y \in \mathcal X}
    \Bigl\{ f(y) + \frac{\hat\rho}{2}\|y - x_t\|^2 \ \text{ s.t. }\ g(y) + \frac{\hat\rho}{2}\|y - x_t\|^2 \le 0 \Bigr\}
    \qquad \text{(9)}

with the quadratic on both the objective and the constraint, so that for :math:`\hat\rho > \rho` the
subproblem is :math:`\mu`-strongly convex, :math:`\mu = \hat\rho - \rho`. This module is a *preset* of
`proximal_point` (``prox_on_constraint=True``) with [MLY20]'s inner solvers and schedules, plus the
Phase-I feasibility step of Remark 1, the outer history and the output rules of Algorithm 1
(see docs/references.md).
"""
from __future__ import annotations

import math
import time

import numpy as np

from ..problems._protocol import require_constrained_problem
from .._results import Counters, SolveResult
from ._common import (
    FEASIBILITY_TOLERANCE, PassMeter, check_choice, describe_seed, no_feasible_message,
    seeded_streams, start_point,
)
from ._validation import (
    check_callback, check_count, check_optional_count, check_real, check_schedule, check_schedule_length, check_seed,
)
from ._schedules import Schedule, as_schedule
from ._step_rules import PolyakStep, ScheduleStep
from ._switching_core import FusedOracle, switching_loop
from ._run import SolverRun
from .proximal_point import proximal_point

__all__ = ["iqrc", "iqrc_step_size"]

_READINGS = ("threshold", "eps_hat")


def iqrc_step_size(mu) -> Schedule:
    r"""Algorithm 2's step size :math:`\gamma_k = 2 / (\mu (k + 2))`, :math:`\mu = \hat\rho - \rho`.

    Anytime (independent of the inner budget :math:`K`); :math:`k` restarts at 0 in every subproblem.

    Parameters
    ----------
    mu : float
        :math:`\mu = \hat\rho - \rho > 0`.
    """
    mu = float(mu)
    if not (mu > 0 and math.isfinite(mu)):
        raise ValueError(f"mu: must be positive and finite, got {mu!r}")
    return Schedule(lambda k: 2.0 / (mu * (k + 2.0)), f"2/({mu:g}*(k+2))", lambda k: 2.0 / (mu * (k + 2.0)))


def _modulus(rho_hat, rho, mu):
    """:math:`\\mu = \\hat\\rho - \\rho` from ``rho`` or ``mu`` (default :math:`\\rho = 0`)."""
    if rho is not None and mu is not None:
        raise ValueError("mu: give rho or mu = rho_hat - rho, not both")
    if mu is None:
        rho = 0.0 if rho is None else float(rho)
        if not (rho >= 0 and math.isfinite(rho)):
            raise ValueError(f"rho: the weak-convexity modulus must be non-negative and finite, got {rho!r}")
        mu = rho_hat - rho
        if not mu > 0:
            raise ValueError(f"rho: rho_hat = {rho_hat:g} must exceed rho = {rho:g} (mu = rho_hat - rho > 0)")
        return mu
    mu = float(mu)
    if not (0 < mu <= rho_hat):
        raise ValueError(f"mu: must be in (0, rho_hat] = (0, {rho_hat:g}] (mu = rho_hat - rho, rho >= 0), got {mu!r}")
    return mu


def _phase_one(problem, x, target, max_iter, step_size):
    r"""Projected subgradient method on :math:`\min_{x\in\mathcal X} g(x)`, stopped at :math:`g(x) \le` ``target``.

    Returns ``(x, report)``: the first iterate with :math:`g \le` target, or on failure the iterate of
    lowest :math:`g` seen (Remark 1's :math:`x_{temp}`).
    """
    polyak = isinstance(step_size, str)
    steps = None if polyak else check_schedule("phase_one_step_size", step_size, max_iter, count="phase_one_iter")
    grad = np.empty(problem.dim)
    best_x, best_g = x.copy(), [math.inf]
    meter = PassMeter(problem)
    values = []

    def before_step(state):
        g_t = state.constraint
        values.append(g_t)
        if g_t < best_g[0]:
            best_x[:], best_g[0] = x, g_t
        if g_t <= target:
            return "feasible"
        if state.t == max_iter:
            return "undecided"
        if float(grad @ grad) == 0.0:
            return "infeasible_stationary"  # a stationary point of g with g > target

    # Every step is on g (levels -inf); the Polyak step goes toward the level 0: the projection onto
    # {y : g(x) + zeta^T (y - x) <= 0}.
    run = switching_loop(x, FusedOracle(problem.g_and_subgradient, None, grad), np.full(max_iter + 1, -math.inf),
                         max_iter + 1, objective_rule=None, constraint_rule=PolyakStep() if polyak else ScheduleStep(steps),
                         project=problem.project_inplace, before_step=before_step, constraint_buffer=grad)
    status = run.stop
    x_out = x if status == "feasible" else best_x
    with meter:  # the report's value is not part of the method's cost
        final = float(problem.g(x_out)[0])
    report = {"status": status, "n_iter": len(values) - 1, "target": target, "start_constraint": values[0],
              "final_constraint": final, "constraint": np.array(values),
              "time": meter.elapsed(), "rows_f": meter.rows_f, "rows_g": meter.rows_g,
              "step_size": "polyak" if polyak else repr(as_schedule(step_size))}
    return x_out.copy(), report


def iqrc(problem, x0=None, *, rho_hat=1.0, rho=None, mu=None, switching_level=FEASIBILITY_TOLERANCE,
         level_reading="threshold", outer_iter=50, inner_iter=20000, inner_solver="switching", inner_params=None,
         output="last", phase_one=True, phase_one_iter=1000, phase_one_step_size="polyak", seed=0, record_every=None,
         callback=None, verbose=False) -> SolveResult:
    r"""IQRC ([MLY20] Algorithm 1) with the switching (Algorithm 2) or online stochastic (Algorithm 3) oracle.

    **Outer loop (Algorithm 1).** :math:`x_{t+1} = \mathcal A(x_t, \hat\rho, \hat\epsilon, \delta/T)`
    approximately solves (9) warm-started at :math:`z_0 = x_t`: one `proximal_point` step with
    ``prox_on_constraint=True``, i.e. :math:`F_t = f + \frac{\hat\rho}{2}\|\cdot - x_t\|^2`,
    :math:`G_t = g + \frac{\hat\rho}{2}\|\cdot - x_t\|^2`. Theorem 1: with
    :math:`T \ge 4(f(x_0) - f_{lb})/(\epsilon^2\mu)` and an oracle of accuracy :math:`\hat\epsilon^2`
    (Definition 2), :math:`\mathbb E_R\|x_R - \hat x_R\|^2 \le \epsilon^2` (nearly
    :math:`\epsilon`-stationary, Definition 1).

    **Algorithm 2** (``inner_solver="switching"``), for :math:`k = 0..K-1`, with threshold :math:`\tau`:

    .. math::

        \gamma_k = \frac{2}{\mu (k + 2)}, \qquad
        z_{k+1} = \operatorname{proj}_{\mathcal X}\bigl(z_k - \gamma_k \zeta_k\bigr), \qquad
        \zeta_k \in \begin{cases} \partial F_t(z_k),\ k \in I & \text{if } G_t(z_k) \le \tau, \\
        \partial G_t(z_k) & \text{otherwise,} \end{cases}

    output :math:`x_{t+1} = \sum_{k\in I}(k+1) z_k / \sum_{k\in I}(k+1)` (the last inner iterate,
    inner status ``"no_feasible_iterate"``, if :math:`I = \emptyset`). Theorem 2: for
    :math:`K \ge 4(M^2 + \hat\rho^2 D^2)/(\mu\hat\epsilon^2)`, :math:`F_t(x_{t+1}) - F_t(\hat x_t)
    \le \hat\epsilon^2` and :math:`G_t(x_{t+1}) \le \hat\epsilon^2`. Whatever :math:`K`, when
    :math:`G_t` is convex (:math:`\hat\rho \ge \rho`) and :math:`g(x_t) \le \tau`, :math:`0 \in I` and
    Jensen gives :math:`g(x_{t+1}) \le G_t(x_{t+1}) \le \tau`: every outer iterate is
    :math:`\tau`-feasible and in :math:`\mathcal X`.

    **Algorithm 3** (``inner_solver="online"``): `online_stochastic_subgradient` on (9) with the individual
    constraints :math:`F_i = f_i + \frac{\hat\rho}{2}\|\cdot - x_t\|^2`, :math:`V = \sqrt K`,
    :math:`\alpha = K`, uniform average output; Theorem 3 gives accuracy
    :math:`O(\log(K/\delta)/\sqrt K)` with probability :math:`1-\delta`, so feasibility holds only up
    to that accuracy.

    **Phase I (Remark 1).** If :math:`g(x_0) > \tau`, a projected subgradient method on
    :math:`\min_{x\in\mathcal X} g(x)` runs until :math:`g(x) \le \tau` (Assumption 1E), then IQRC
    starts there. If it fails within ``phase_one_iter`` iterations, or stops at a point with a zero
    subgradient and :math:`g > \tau` (an infeasible stationary point of :math:`g`), IQRC returns that
    point (the lowest :math:`g` seen) with status ``"no_feasible_iterate"`` (the status every solver
    reports when no iterate met its feasibility tolerance; ``info["phase_one"]["status"]`` says which failure).

    Parameters
    ----------
    problem : ConstrainedProblem
    x0 : array-like, optional
        :math:`x_0`, projected onto :math:`\mathcal X`; default ``problem.x0``.
    rho_hat : float
        :math:`\hat\rho` (paper's experiments: 1).
    rho, mu : float, optional
        The weak-convexity modulus :math:`\rho \ge 0`, or directly :math:`\mu = \hat\rho - \rho \in
        (0, \hat\rho]`; give at most one. Default :math:`\rho = 0`, i.e. :math:`\mu = \hat\rho`
        (:math:`\rho` is rarely known; with :math:`\hat\rho = 1`,
        :math:`\gamma_k = 2/(k+2)`). The guarantees need :math:`\hat\rho > \rho`.
    switching_level : float
        By default the threshold :math:`\tau > 0` on the constraint, the same meaning as
        `switching_subgradient`'s ``switching_level`` (its switching test :math:`g \le \epsilon_t`, and
        the same default 1e-5): Algorithm 2 steps on :math:`F_t` when :math:`G_t(z_k) \le \tau`,
        Phase I stops at :math:`g \le \tau`, and the status calls a point feasible at
        :math:`g \le \tau`.
    level_reading : {"threshold", "eps_hat"}
        The two readings of the paper's "tolerance" (0.001 in its experiments; [MLY20] §5 does not
        say which). ``"threshold"`` (default): ``switching_level`` is :math:`\tau` itself.
        ``"eps_hat"``: ``switching_level`` is the oracle accuracy :math:`\hat\epsilon` of Definition 2
        and :math:`\tau = \hat\epsilon^2`, as Algorithm 2 prints it (1e-6 for the paper's 0.001;
        the iqrc-mnpc reproduction uses this reading).
    outer_iter : int
        :math:`T` (not reported in the paper).
    inner_iter : int
        :math:`K` per subproblem (paper: 20000, fixed rather than Theorem 2's formula).
    inner_solver : {"switching", "online"}
        Algorithm 2 (deterministic oracles) or Algorithm 3 (stochastic minibatch oracles); the
        keyword of `proximal_point`.
    inner_params : dict, optional
        Extra keyword arguments of the inner solver, e.g. ``V``, ``prox_weight``,
        ``objective_batch_size``, ``constraint_batch_size`` for ``"online"``. ``step_size`` and
        ``switching_level`` are Algorithm 2's and are set here.
    output : {"last", "random"}
        ``"last"``: :math:`x_T` (the paper's plotted sequence). ``"random"``: :math:`x_R` with
        :math:`R` uniform on :math:`\{0, \dots, T-1\}`, the range Theorem 1's proof averages over
        (Algorithm 1 prints :math:`\{0..T\}`), drawn from its own stream of ``seed``.
    phase_one : bool
        Run Phase I when :math:`g(x_0) > \tau`. False starts IQRC from :math:`x_0` as given (then the
        first subproblem may have :math:`I = \emptyset` and the invariant above does not hold).
    phase_one_iter : int
        Phase-I budget (subgradient iterations).
    phase_one_step_size : "polyak", float or callable of t
        ``"polyak"``: :math:`x \leftarrow \operatorname{proj}_{\mathcal X}(x - g(x)\zeta/\|\zeta\|^2)`,
        the projection onto the linearised feasible set (scale-free); otherwise the step
        :math:`\gamma_t` of a plain projected subgradient method (Davis & Drusvyatskiy 2018).
    seed : int >= 0, SeedSequence, Generator or None
        Inner solve :math:`t` uses the :math:`t`-th child of ``SeedSequence(seed)`` (see
        `proximal_point`); the draw of :math:`R` has its own stream.
    record_every : int, optional
        Inner history period in inner iterations (each record costs an exact :math:`f`, :math:`g`
        evaluation, excluded from time and data passes). Default None: the rule every solver shares
        (`fastcon.solvers._common.default_record_every`, applied to each inner run of
        ``inner_iter`` iterations). The outer history has every outer iterate.
    callback : callable ``(t, x_{t+1}, info) -> bool``, optional
        ``info["inner"]`` is the inner `SolveResult`, ``info["objective"]`` and
        ``info["max_violation"]`` are :math:`f(x_{t+1})` and :math:`\max(0, g(x_{t+1}))`. True stops.
    verbose : bool

    Returns
    -------
    SolveResult
        ``x`` by ``output``; ``status`` ``"max_iter"``, ``"callback_stop"``,
        ``"infeasible_stationary"`` (Phase I stopped at a stationary point of :math:`g` with
        :math:`g > \tau`) or ``"no_feasible_iterate"``: Phase I ran out of its budget, or (without
        Phase I) no recorded inner iterate and
        no outer iterate has :math:`g \le \tau` (`proximal_point`'s ``feasibility_tolerance`` set to
        :math:`\tau`); the message gives the smallest :math:`g` reached and points to
        `check_feasibility`.
        ``history``: when Phase I fails, its iterates (``iteration``, ``constraint``,
        ``max_violation``); otherwise the inner iterates (the paper's blue curve), concatenated by `proximal_point`,
        metrics of the original problem. ``info["outer_iterates"]``: :math:`x_0..x_T`.
        ``info["outer_history"]`` (the red curve), one row per outer iterate :math:`x_t`: ``outer``
        :math:`t`, ``iteration`` (cumulative inner iterations), ``time`` (cumulative algorithm time,
        the clock of the inner history), ``data_passes_f/g``, ``objective``, ``constraint``,
        ``max_violation`` and ``step_norm`` :math:`\|x_t - x_{t-1}\|` (an estimate of Definition 1's
        :math:`\|x_{t-1} - \hat x_{t-1}\|`; NaN for :math:`t = 0`), ``wall_time`` (including these
        evaluations). ``info["phase_one"]``: Phase-I report (``status`` one of
        `fastcon._results.PHASE_ONE_STATUSES`: ``"not_needed"``, ``"skipped"``, ``"feasible"``,
        ``"undecided"`` (the budget ran out), ``"infeasible_stationary"``; its ``constraint`` trace,
        ``time``, rows). Both histories start after Phase I; ``counters`` include Phase I's rows.
    """
    require_constrained_problem(problem, "iqrc")
    check_choice("inner_solver", inner_solver, ("switching", "online"))
    check_choice("output", output, ("last", "random"))
    check_choice("level_reading", level_reading, _READINGS)
    rho_hat = check_real("rho_hat", rho_hat, positive=True)
    switching_level = check_real("switching_level", switching_level, positive=True)
    mu = _modulus(rho_hat, rho, mu)
    outer_iter = check_count("outer_iter", outer_iter)
    inner_iter = check_schedule_length("inner_iter", check_count("inner_iter", inner_iter))
    phase_one_iter = check_count("phase_one_iter", phase_one_iter, 0)
    check_optional_count("record_every", record_every)
    check_seed("seed", seed)
    check_callback("callback", callback)
    if isinstance(phase_one_step_size, str) and phase_one_step_size != "polyak":
        raise ValueError(f"phase_one_step_size: expected 'polyak', a float or a callable, got {phase_one_step_size!r}")
    threshold = switching_level ** 2 if level_reading == "eps_hat" else switching_level
    params = dict(inner_params or {})
    if inner_solver == "switching":
        for key in ("step_size", "switching_level"):
            if key in params:
                raise ValueError(f"inner_params: {key!r} is Algorithm 2's and is set by iqrc (see mu, switching_level)")
        params.update(step_size=iqrc_step_size(mu), switching_level=threshold)

    x = start_point(problem, x0)
    g0 = problem.g(x)[0]
    phase = {"status": "not_needed", "n_iter": 0, "target": threshold, "start_constraint": g0,
             "time": 0.0, "rows_f": 0, "rows_g": 0}
    if g0 > threshold and phase_one:
        x, phase = _phase_one(problem, x, threshold, phase_one_iter, phase_one_step_size)
    elif g0 > threshold:
        phase["status"] = "skipped"
    settings = {"rho_hat": rho_hat, "mu": mu, "rho": rho_hat - mu, "switching_level": switching_level,
                "level_reading": level_reading, "switching_threshold": threshold, "inner_solver": inner_solver,
                "output": output, "phase_one": phase, "seed": describe_seed(seed)}
    if phase["status"] in ("undecided", "infeasible_stationary"):
        how = ("its budget ran out" if phase["status"] == "undecided"
               else "it reached a stationary point of g")
        run = SolverRun(f"iqrc[{inner_solver}]", max(1, phase["n_iter"]), count_name="phase_one_iter")
        run.status = "no_feasible_iterate" if phase["status"] == "undecided" else "infeasible_stationary"
        run.counters = Counters(problem.n_samples_f, problem.n_samples_g)
        run.counters.values.update(rows_f=phase["rows_f"], rows_g=phase["rows_g"], phase_one_iterations=phase["n_iter"])
        trace = phase["constraint"]
        return run.finish(
            x, objective=problem.f(x), max_violation=problem.max_violation(x),
            message=f"Phase I could not reach g(x) <= {threshold:g}: {how}; returning the point of lowest g (IQRC "
            "needs an approximately feasible start, Assumption 1E). "
            + no_feasible_message(phase["final_constraint"], threshold, "no Phase-I iterate"),
            n_iter=phase["n_iter"], info=settings,
            history={"iteration": np.arange(trace.size), "constraint": trace,
                     "max_violation": np.maximum(trace, 0.0)})

    outer = _OuterHistory(problem, x)

    def on_outer(t, x_next, info):
        objective, constraint = outer.append(t, x_next, info["inner"])
        info.update(objective=objective, max_violation=max(0.0, constraint))
        return bool(callback(t, x_next, info)) if callback is not None else False

    res = proximal_point(problem, x, rho_hat=rho_hat, outer_iter=outer_iter, inner_solver=inner_solver,
                         inner_iter=inner_iter, inner_params=params, inner_output="weighted_average",
                         prox_on_constraint=True, feasibility_tolerance=threshold, seed=seed,
                         record_every=record_every, callback=on_outer, verbose=verbose)
    iterates = res.info["outer_iterates"]
    n_outer = len(iterates) - 1
    R = n_outer
    if output == "random":
        (rng_output,) = seeded_streams(seed, 1)
        R = int(rng_output.integers(n_outer))
    x_out = iterates[R].copy()
    empty = res.info["inner_status"].count("no_feasible_iterate")
    info = {**res.info, **settings, "R": R, "outer_history": outer.arrays()}
    message = (f"{n_outer} outer IQRC iterations of {inner_iter} inner {inner_solver} iterations, threshold "
               f"{threshold:g}; output x_{R}")
    if empty:
        message += (f"; {empty} subproblem(s) had no nearly feasible inner iterate (I empty)"
                    if inner_solver == "switching"
                    else f"; {empty} subproblem(s) ended with an inner output violating G_t by more than "
                         f"{FEASIBILITY_TOLERANCE:g}")
    if res.status == "no_feasible_iterate":
        message += "; " + no_feasible_message(res.info["best_constraint"], threshold,
                                              "no recorded inner iterate and no outer iterate")
    if phase["status"] == "feasible":
        message += f"; Phase I reached g = {phase['final_constraint']:.3g} in {phase['n_iter']} iterations"
    return SolveResult(x_out, res.status, message, n_iter=res.n_iter, objective=problem.f(x_out),
                       max_violation=problem.max_violation(x_out),
                       multipliers=res.multipliers if R == n_outer else None, history=res.history,
                       counters=_with_phase_one(res.counters, phase, problem), info=info,
                       solver=f"iqrc[{inner_solver}]")


def _with_phase_one(counters, phase, problem):
    out = dict(counters)
    out["rows_f"] = out.get("rows_f", 0) + phase["rows_f"]
    out["rows_g"] = out.get("rows_g", 0) + phase["rows_g"]
    n_f, n_g = problem.n_samples_f, problem.n_samples_g
    out["data_passes_f"] = out["rows_f"] / n_f if n_f else 0.0
    out["data_passes_g"] = out["rows_g"] / n_g if n_g else 0.0
    out["phase_one_iterations"] = phase["n_iter"]
    return out


class _OuterHistory:
    """One row per outer iterate :math:`x_t`, with the inner solves' cumulative cost."""

    def __init__(self, problem, x0):
        self.problem = problem
        self.previous = np.array(x0, dtype=np.float64)
        self.n_iter, self.time, self.rows_f, self.rows_g = 0, 0.0, 0, 0
        self.columns = {key: [] for key in ("outer", "iteration", "time", "data_passes_f", "data_passes_g",
                                            "objective", "constraint", "max_violation", "step_norm",
                                            "wall_time")}
        self.t0 = time.perf_counter()
        self._add(0, self.previous, math.nan)

    def _add(self, t, x, step_norm):
        f, g = self.problem.f(x), float(self.problem.g(x)[0])
        n_f, n_g = self.problem.n_samples_f, self.problem.n_samples_g
        row = {"outer": t, "iteration": self.n_iter, "time": self.time,
               "data_passes_f": self.rows_f / n_f if n_f else 0.0,
               "data_passes_g": self.rows_g / n_g if n_g else 0.0, "objective": f, "constraint": g,
               "max_violation": max(0.0, g), "step_norm": step_norm, "wall_time": time.perf_counter() - self.t0}
        for key, value in row.items():
            self.columns[key].append(value)
        return f, g

    def append(self, t, x_next, inner):
        """Record :math:`x_{t+1}` after inner solve ``t`` (``inner`` its `SolveResult`)."""
        self.n_iter += inner.n_iter
        times = inner.history.get("time", ())
        self.time += float(times[-1]) if len(times) else 0.0
        self.rows_f += inner.counters.get("rows_f", 0)
        self.rows_g += inner.counters.get("rows_g", 0)
        step_norm = float(np.linalg.norm(x_next - self.previous))
        self.previous = np.array(x_next, dtype=np.float64)
        return self._add(t + 1, x_next, step_norm)

    def arrays(self):
        return {key: np.asarray(values) for key, values in self.columns.items()}
