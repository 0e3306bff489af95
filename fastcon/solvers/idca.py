r"""Inexact difference-of-convex algorithm (IDCA) of He, Huang, Yao & Lin [HHYL25], Algorithms 1 and 2.

Problem ([HHYL25] eq. (21), there written with :math:`f_0, f_i`): :math:`\min_x f(x)` s.t.
:math:`g_i = g_i^+ - g_i^- \le 0` (:math:`g = \max_i g_i`), every part convex; the problem object
follows the DC problem protocol (`fastcon.problems.PartialFairnessProblem`).
The outer step (Algorithm 1) linearises every concave part at :math:`x_k` (eq. (26)) and solves the
convex majorant (25)

.. math::

    \min_v\ F_k(v) = f(v) + \tfrac{\mu}{2}\|v - x_k\|^2 \quad\text{s.t.}\quad
    G_{k,i}(v) = g_i^+(v) - \hat g_i^-(v) + \tfrac{\mu}{2}\|v - x_k\|^2 \le 0

(:math:`G_k = \max_i G_{k,i}`) inexactly by Nesterov's switching subgradient (Algorithm 2),
keeping the iterates :math:`\epsilon`-feasible (Lemma C.3). Design notes: docs/design.md, 'Module notes'.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .._results import Counters, SolveResult
from ..problems._protocol import DC_PROBLEM, require_capabilities
from ._common import check_choice
from ._run import SolverRun
from ._step_rules import LevelStep, PolyakStep
from ._switching_core import switching_loop
from ._validation import check_count, check_real, check_schedule

__all__ = ["idca", "idca_theory_parameters", "IDCATheory", "check_dc_problem"]

_OUTPUTS = ("last", "best_feasible")


def check_dc_problem(problem, needed=DC_PROBLEM[3:], solver="idca"):
    """Raise TypeError naming ``problem`` and ``solver`` unless the problem has ``dim``,
    ``n_constraints``, ``x0`` and the methods ``needed`` of the DC problem protocol."""
    require_capabilities(problem, "problem", (*DC_PROBLEM[:3], *needed), solver,
                         hint="a DC-constrained problem, e.g. fastcon.problems.PartialFairnessProblem")


def _start(problem, x0):
    x = np.array(problem.x0 if x0 is None else x0, dtype=np.float64)
    if x.shape != (problem.dim,):
        raise ValueError(f"x0: expected shape ({problem.dim},), got {x.shape}")
    if not np.all(np.isfinite(x)):
        raise ValueError("x0: contains NaN or inf")
    return x


@dataclass
class _InnerOutcome:
    x: np.ndarray            # best nearly-feasible iterate, or None when there was none
    objective: float          # F_k there
    iterations: int
    objective_steps: int
    constraint_steps: int
    best_constraint: float    # smallest G_k(v_t) seen
    stalled: bool             # a zero subgradient of a violated constraint


def _most_violated(values):
    """``(max_i g_i, argmax)``; ``(-inf, -1)`` without constraints (every step is then an objective step)."""
    if not values.size:
        return -math.inf, -1
    i = int(np.argmax(values))
    return float(values[i]), i


class DCOracle:
    """The switching core's oracle (`fastcon.solvers._switching_core`) on a DC problem itself:
    :math:`g = \\max_i g_i`, :math:`\\zeta \\in \\partial g_{i^*}^+ - \\partial g_{i^*}^-` ([HHYL25] Algorithm 3)."""

    def __init__(self, problem):
        self.problem = problem

    def constraint(self, x):
        return _most_violated(self.problem.constraint_values(x))

    def constraint_subgradient(self, x, i, out):
        self.problem.constraint_subgradient(x, i, out)

    def objective(self, x, out):
        return self.problem.objective_value_and_gradient(x, out)


class DCSubproblemOracle:
    r"""The switching core's oracle on IDCA's convex subproblem (25) around :math:`x_k`.

    :math:`G_{k,i}(v) = g_i^+(v) - (g_i^-(x_k) + J_i (v - x_k)) + \frac{\mu}{2}\|v - x_k\|^2` and
    :math:`F_k(v) = f(v) + \frac{\mu}{2}\|v - x_k\|^2`; ``constraint`` keeps :math:`v - x_k` for the
    subgradients of the same :math:`v`.
    """

    def __init__(self, problem, xk, lin_values, lin_jacobian, mu):
        self.problem, self.xk, self.lin_values, self.lin_jacobian, self.mu = problem, xk, lin_values, lin_jacobian, mu
        self.d = np.zeros_like(xk)
        self.prox = 0.0

    def constraint(self, v):
        np.subtract(v, self.xk, out=self.d)
        self.prox = 0.5 * self.mu * float(self.d @ self.d) if self.mu else 0.0
        return _most_violated(self.problem.plus_values(v) - (self.lin_values + self.lin_jacobian @ self.d) + self.prox)

    def constraint_subgradient(self, v, i, out):
        self.problem.plus_subgradient(v, i, out)
        out -= self.lin_jacobian[i]
        if self.mu:
            out += self.mu * self.d

    def objective(self, v, out):
        g0 = self.problem.objective_value_and_gradient(v, out) + self.prox
        if self.mu:
            out += self.mu * self.d
        return g0


def _switching_polyak_inner(problem, xk, lin_values, lin_jacobian, epsilon, T, mu, grad, sub):
    """Algorithm 2 on the subproblem (25) around ``xk``; returns `_InnerOutcome`."""
    v = xk.copy()
    best = {"x": None, "g0": math.inf}

    def keep_best(state):
        if state.kind == "f" and state.objective < best["g0"]:
            best.update(g0=state.objective, x=v.copy())

    # A zero objective subgradient: v minimises F_k, nothing left to gain. A zero subgradient of a
    # violated convex G_{k,i}: its minimum is > 0 (stalled).
    run = switching_loop(v, DCSubproblemOracle(problem, xk, lin_values, lin_jacobian, mu), np.full(T, epsilon), T,
                         objective_rule=LevelStep(), constraint_rule=PolyakStep(), before_step=keep_best,
                         objective_buffer=grad, constraint_buffer=sub)
    return _InnerOutcome(best["x"], best["g0"], run.n_iter, run.objective_steps, run.constraint_steps,
                         run.best_constraint, run.stop == "zero_constraint_direction")


def idca(problem, x0=None, *, outer_iter=100, inner_iter=200, switching_level=1e-3, prox_weight=0.0, output="last",
         feasibility_tolerance=None, record_every=None, callback=None, verbose=False) -> SolveResult:
    r"""Inexact DCA ([HHYL25] Algorithm 1) with the switching-subgradient inner solver (Algorithm 2).

    Parameters
    ----------
    problem : DC problem
        ``dim``, ``n_constraints``, ``x0`` and the methods of the DC problem protocol (see the module
        docstring), e.g. `fastcon.problems.PartialFairnessProblem`.
    x0 : array-like, optional
        :math:`x_0`; default ``problem.x0`` (a feasible start, Assumption 6.3E: :math:`h \equiv 0`).
    outer_iter : int
        :math:`K`, outer iterations (paper: tuned in {100, ..., 400}).
    inner_iter : int or callable of k
        :math:`T_k`, switching-subgradient iterations of outer step :math:`k` (paper: 150 or 200 for
        every k; `idca_theory_parameters` gives Proposition 6.4's).
    switching_level : float or callable of k
        :math:`\epsilon_k > 0`: the inexactness (27) of subproblem k, i.e. the objective step length and
        the level of the inner switching test :math:`G_k(v_t) \le \epsilon_k` (paper: constant, in
        {5e-4, 1e-3, 2e-3, 5e-3}; Theorem 6.5: :math:`\Theta(\epsilon^2)`).
    prox_weight : float
        :math:`\mu \ge 0` of Assumption 6.3A, added as :math:`\frac\mu2\|v - x_k\|^2` to the objective
        and every constraint of the subproblem.
    output : {"last", "best_feasible"}
        ``"last"``: :math:`x_K` (the paper's experiments). ``"best_feasible"``: the outer iterate of
        lowest :math:`f` among those with :math:`g \le` ``feasibility_tolerance``.
    feasibility_tolerance : float, optional
        Threshold on :math:`g(x_k)` for ``output="best_feasible"`` and for the status; default
        :math:`\max_k \epsilon_k` (the algorithm's own guarantee: every iterate is
        :math:`\epsilon`-feasible).
    record_every : int, optional
        History rows at the outer iterations that are multiples of it, and at the last; default 1 (an
        outer step reads the data :math:`2T_k` times, a row reads it once).
    callback : callable ``(k, x_{k+1}, info) -> bool``, optional
        Called after outer step k; ``info`` has ``objective``, ``max_violation``,
        ``inner_iterations`` (cumulative). True stops with status ``"callback_stop"``.
    verbose : bool, int or str
        See `fastcon._progress.Progress`.

    Returns
    -------
    SolveResult
        ``"max_iter"`` when the output meets ``feasibility_tolerance``; ``"no_feasible_iterate"``
        when an inner solve found no nearly feasible point (the start was not
        :math:`\epsilon_k`-feasible: the run stops there and returns the last outer iterate);
        ``"infeasible_stationary"`` when a violated constraint of a subproblem has a zero subgradient;
        ``"callback_stop"``. History (one row per recorded outer iterate :math:`x_k`, row 0 = the
        start): ``iteration`` k, ``inner_iterations`` (cumulative), ``time``, ``objective``
        :math:`f(x_k)`, ``max_violation`` :math:`\max(0, g(x_k))`, ``constraint`` :math:`g(x_k)`,
        ``switching_level`` :math:`\epsilon_k`. ``counters``:
        ``inner_iterations``, ``objective_steps``, ``constraint_steps``, ``rows_f``/``rows_g`` when
        the problem counts rows. ``info``: the parameters and the index of the returned iterate.
    """
    check_dc_problem(problem)
    check_choice("output", output, _OUTPUTS)
    run = SolverRun("idca", outer_iter, record_every=record_every, callback=callback, verbose=verbose,
                    count_name="outer_iter")
    K = run.max_iter
    eps = check_schedule("switching_level", switching_level, K, positive=True, count="outer_iter")
    if callable(inner_iter):
        T = [check_count(f"inner_iter({k})", inner_iter(k)) for k in range(K)]
    else:
        T = [check_count("inner_iter", inner_iter)] * K
    mu = check_real("prox_weight", prox_weight)
    feas_tol = float(eps.max()) if feasibility_tolerance is None else check_real("feasibility_tolerance",
                                                                                 feasibility_tolerance)
    x = _start(problem, x0)

    grad = np.empty(problem.dim)
    sub = np.empty(problem.dim)
    n_samples = getattr(problem, "n_samples", 0)
    with run.start(default_every=1, counters=Counters(n_samples, n_samples)):
        history = run.history
        inner_total = n_obj = n_con = 0
        message = ""
        best = (math.inf, None, -1)

        def evaluate(point):
            return problem.objective_value(point), float(np.max(problem.constraint_values(point), initial=-math.inf))

        f0, fmax = evaluate(x)
        history.record(0, force=True, inner_iterations=0, objective=f0, max_violation=max(0.0, fmax), constraint=fmax,
                       switching_level=float(eps[0]))
        if fmax <= feas_tol:
            best = (f0, x.copy(), 0)
        k_done = 0
        for k in range(K):
            lin_values, lin_jacobian = problem.minus_linearization(x)
            out = _switching_polyak_inner(problem, x, np.asarray(lin_values, dtype=np.float64),
                                          np.asarray(lin_jacobian, dtype=np.float64), float(eps[k]), T[k], mu,
                                          grad, sub)
            inner_total += out.iterations
            n_obj += out.objective_steps
            n_con += out.constraint_steps
            if out.x is None:
                run.status = "infeasible_stationary" if out.stalled else "no_feasible_iterate"
                message = (f"outer step {k}: no inner iterate met G_k(v) <= switching_level = {eps[k]:.3g} "
                           f"(smallest G_k seen {out.best_constraint:.3g}); the start of the step had "
                           f"g(x_k) > switching_level")
                break
            x = out.x
            k_done = k + 1
            f0, fmax = evaluate(x)
            if fmax <= feas_tol and f0 < best[0]:
                best = (f0, x.copy(), k_done)
            history.record(k_done, force=(k_done == K), inner_iterations=inner_total, objective=f0,
                           max_violation=max(0.0, fmax), constraint=fmax, switching_level=float(eps[k]))
            if out.stalled:
                run.status = "infeasible_stationary"
                message = (f"outer step {k}: a violated constraint G_k,i of the subproblem has a zero subgradient "
                           f"(an infeasible stationary point of the linearised constraints)")
                break
            if run.tick(k, x, {"objective": f0, "max_violation": max(0.0, fmax), "inner_iterations": inner_total},
                        objective=f0, violation=max(0.0, fmax)):
                break
    history.record(k_done, force=True, inner_iterations=inner_total, objective=f0, max_violation=max(0.0, fmax),
                   constraint=fmax, switching_level=float(eps[min(k_done, K - 1)]))
    index = k_done
    if output == "best_feasible" and best[1] is not None:
        x = best[1]
        index = best[2]
        f0, fmax = evaluate(x)
    if run.status == "max_iter" and fmax > feas_tol:
        run.status = "no_feasible_iterate"
        message = (f"the output violates the constraints by {fmax:.3g} > feasibility_tolerance = {feas_tol:.3g}")
    run.counters.add("inner_iterations", inner_total)
    run.counters.add("objective_steps", n_obj)
    run.counters.add("constraint_steps", n_con)
    for name in ("rows_f", "rows_g"):
        if hasattr(problem, name):
            run.counters.values[name] = int(getattr(problem, name))
    info = {"outer_iter": K, "inner_iter": T[0] if len(set(T)) == 1 else list(T), "switching_level": eps.tolist(),
            "prox_weight": mu, "output": output, "output_index": index, "feasibility_tolerance": feas_tol}
    return run.finish(x, objective=f0, max_violation=max(0.0, fmax), message=message, n_iter=k_done, info=info)


@dataclass(frozen=True)
class IDCATheory:
    """Parameters of Theorem 6.5 and Proposition 6.4 ([HHYL25]); fields feed `idca` directly."""

    outer_iter: int
    switching_level: float
    inner_iter: int
    lagrange_bound: float


def idca_theory_parameters(epsilon, *, lipschitz, prox_weight, slater, objective_gap) -> IDCATheory:
    r"""The schedule under which one IDCA iterate is nearly :math:`\epsilon`-KKT ([HHYL25] Theorem 6.5).

    .. math::

        K = \Bigl\lceil \max\{1, 4M^2, \tfrac{8M^4}{\mu\nu}\}\,
        \frac{f(x_0) - f_{lb}}{\mu\epsilon^2} \Bigr\rceil,\qquad
        \epsilon_k = \frac\mu8 \min\{1, \tfrac1{4M^2}, \tfrac{\mu\nu}{8M^4}\}\,\epsilon^2,\qquad
        T_k = \Bigl\lceil \frac{M^2}{\epsilon_k\mu} \ln\frac{\mu D^2}{\epsilon_k} \Bigr\rceil

    with :math:`D = 2M/\mu` the bound of Lemma C.2 on :math:`\|x_k - \hat x_{k+1}\|` (Proposition
    6.4 needs :math:`T_k` above the displayed value with the true distance; :math:`D` bounds it).
    ``lagrange_bound`` is Lemma C.2's :math:`\Lambda = 2M/\sqrt{2\mu\nu}` on :math:`\sum_i\lambda_i`.

    Parameters
    ----------
    epsilon : float
        Target :math:`\epsilon > 0`.
    lipschitz : float
        :math:`M`: :math:`f` and every :math:`g_i^\pm` are M-Lipschitz (Assumption 6.3D).
    prox_weight : float
        :math:`\mu > 0` of Assumption 6.3A (pass the same value to `idca`).
    slater : float
        :math:`\nu > 0` of the uniform Slater condition 6.3B.
    objective_gap : float
        :math:`f(x_0) - f_{lb} \ge 0`.
    """
    eps = check_real("epsilon", epsilon, positive=True)
    M = check_real("lipschitz", lipschitz, positive=True)
    mu = check_real("prox_weight", prox_weight, positive=True)
    nu = check_real("slater", slater, positive=True)
    gap = check_real("objective_gap", objective_gap)
    K = max(1, math.ceil(max(1.0, 4 * M * M, 8 * M ** 4 / (mu * nu)) * gap / (mu * eps * eps)))
    eps_k = mu / 8 * min(1.0, 1 / (4 * M * M), mu * nu / (8 * M ** 4)) * eps * eps
    D = 2 * M / mu
    T = max(1, math.ceil(M * M / (eps_k * mu) * max(math.log(mu * D * D / eps_k), 1.0)))
    return IDCATheory(outer_iter=K, switching_level=eps_k, inner_iter=T, lagrange_bound=2 * M / math.sqrt(2 * mu * nu))
