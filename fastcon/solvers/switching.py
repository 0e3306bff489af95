r"""Switching subgradient (SSG) methods of Huang & Lin [HL23], Algorithms 1 and 2.

Problem ([HL23] eq. (1)): :math:`\min_{x \in \mathcal X} f(x)` s.t. :math:`g(x) = \max_i g_i(x) \le 0`,
:math:`f` :math:`\rho`-weakly convex, :math:`g` convex. One iteration:

.. math::

    x_{t+1} = \operatorname{proj}_{\mathcal X}\bigl(x_t - \eta_t \zeta_t\bigr), \qquad
    \zeta_t \in \begin{cases} \partial f(x_t) & \text{if } g(x_t) \le \epsilon_t
    \quad (t \ge S \Rightarrow t \in I), \\ \partial g(x_t) & \text{otherwise,} \end{cases}

and the output is :math:`x_\tau`, :math:`P(\tau = t) = \eta_t / \sum_{s \in I} \eta_s` (eq. 8).
`switching_theory_parameters` and `check_certificate` implement Theorems 4.2, 4.3, 5.2, B.1 and
conditions (29)–(30). Design notes: docs/design.md, 'Module notes'.
"""
from __future__ import annotations

import math

import numpy as np

from ..problems._protocol import require_constrained_problem
from .._results import SolveResult
from ._output import BestIterate, RandomIterate, WeightedAverage
from ._common import (
    average_weight_values, check_choice, constraint_rows, describe_seed, make_objective_oracle, no_feasible_message,
    RowSampler, start_point, stationarity_certificate, seeded_streams,
)
from ._run import SolverRun
from ._schedules import as_schedule, inverse_sqrt
from ._step_rules import ScheduleStep
from ._switching_core import FusedOracle, switching_loop
from ._validation import check_count, check_optional_count, check_optional_real, check_schedule

__all__ = ["switching_subgradient", "switching_theory_parameters", "check_certificate"]

_ORACLES = ("deterministic", "stochastic")
_OUTPUTS = ("random", "last", "best_feasible", "average")


# ---------------------------------------------------------------------------- loop helpers
def _constraint_oracle(problem, kind, batch, rng):
    """Return ``eval(x, out) -> (g value, active index)`` writing the active subgradient to ``out``."""
    if kind == "deterministic" or not problem.constraints:
        return problem.g_and_subgradient
    if batch is None:
        raise ValueError("constraint_batch_size: a stochastic constraint needs the batch size B of "
                         "Algorithm 2 (switching_theory_parameters gives Theorem 5.2's B)")
    cons = problem.constraints
    sampler = RowSampler([c.n_samples for c in cons], batch, rng)
    if len(cons) == 1:
        c0 = cons[0]

        def evaluate(x, out):
            rows = sampler.draw()[0]
            return c0.value_and_subgradient_rows(x, rows, out), 0
        return evaluate
    values = np.empty(len(cons))

    def evaluate(x, out):
        rows = sampler.draw()
        for i, c in enumerate(cons):
            values[i] = c.value_rows(x, rows[i])
        i = int(np.argmax(values))
        return cons[i].value_and_subgradient_rows(x, rows[i], out), i
    return evaluate


def switching_subgradient(problem, x0=None, *, max_iter=1000, step_size=1e-3, switching_level=None, start_index=0,
                          objective_oracle="deterministic", objective_batch_size=None,
                          constraint_oracle="deterministic", constraint_batch_size=None, output="random",
                          average_weights="step_size", strongly_convex_constraint=False, seed=0,
                          record_every=None, callback=None, verbose=False, record_stationarity_every=None,
                          stationarity_rho_hat=None) -> SolveResult:
    r"""Switching subgradient method ([HL23] Algorithm 1; Algorithm 2 with a stochastic constraint).

    Parameters
    ----------
    problem : ConstrainedProblem
    x0 : array-like, optional
        Start (projected onto the domain); default ``problem.x0``.
    max_iter : int
        :math:`T \ge 1`, number of iterations (one subgradient each); an integer (``2.7`` is an error).
    step_size : float or callable of t
        :math:`\eta_t \ge 0`, finite (paper default grids: 1e-4..1e-2 static or :math:`E_2/\sqrt{t+1}`).
        0 is legal but degenerate: the iterate does not move, and the ``"random"``/``"average"``
        rules, whose weights are then all 0, fall back to the uniform law / plain average over
        :math:`I` (`fastcon.solvers._output`).
    switching_level : float or callable of t, optional
        :math:`\epsilon_t` of the switching test :math:`g(x_t) \le \epsilon_t`; default 1e-5
        (0 when ``strongly_convex_constraint``). Any real except NaN: a negative value is a stricter
        test, ``inf`` always steps on :math:`f`, ``-inf`` always on :math:`g`.
    start_index : int
        :math:`0 \le S < T`: only :math:`t \ge S` enter :math:`I` (Theorem 4.2 Case II uses
        :math:`\lfloor T/2 \rfloor`).
    objective_oracle : {"deterministic", "stochastic"}
        Stochastic: :math:`\xi_f` is the subgradient of the minibatch estimate on
        ``objective_batch_size`` rows (default 1) drawn uniformly with replacement
        (``objective.value_and_subgradient_rows``).
    objective_batch_size : int, optional
        Rows of a stochastic objective's minibatch (default 1).
    constraint_oracle : {"deterministic", "stochastic"}
        Stochastic (Algorithm 2): the switching test uses :math:`\bar\omega_t`, the mean of the
        constraint on ``constraint_batch_size`` (:math:`B`) uniform rows (``value_rows``), and the
        constraint step uses the subgradient of that same batch estimate (one fused read). With
        several constraints each is estimated on the batch mapped to its own rows, the active one is
        the argmax of the estimates.
    constraint_batch_size : int, optional
        :math:`B`, rows of a stochastic constraint's minibatch (required with ``constraint_oracle="stochastic"``).
    output : {"random", "last", "best_feasible", "average"}
        ``"random"`` (the paper's rule): :math:`x_\tau`, :math:`P(\tau=t) \propto \eta_t` over
        :math:`I`, by streaming weighted reservoir sampling. ``"last"``: :math:`x_T`.
        ``"best_feasible"``: the iterate of lowest exact :math:`f(x_t)` among the nearly feasible
        :math:`t \in I` that the history records (``t % record_every == 0`` or ``t = T-1``); if
        :math:`I` is non-empty but none of it was recorded, the random rule's pick is returned
        (``info["output_fallback"] = "random"``). ``"average"``: the weighted average of
        :math:`x_t, t \in I` with weights ``average_weights``.
    average_weights : {"step_size", "linear"}, float or callable of t
        The weights :math:`\gamma_t \ge 0` of ``output="average"`` (the same keyword as `conex`'s):
        ``"step_size"`` :math:`\eta_t` (default), ``"linear"`` :math:`t + 1` (the inner output of
        IPP-SSG in [MLY20] Algorithm 2), or any schedule (all 0: the plain average).
    strongly_convex_constraint : bool
        Theorem B.1: :math:`\epsilon_t = 0` and :math:`\tau` is drawn over **all** :math:`t \ge S`
        (not only :math:`I`) with :math:`P(\tau = t) \propto \eta_t`; the other output rules use the
        same candidate set.
    seed : int >= 0, numpy.random.SeedSequence, numpy.random.Generator or None
        Seeds minibatches and the output draw (same seed, same result; a Generator is drawn from
        once, None takes fresh entropy).
    record_every : int, optional
        History period: rows at the iterations :math:`t` with ``t % record_every == 0`` and at
        :math:`t = T-1` (row :math:`t` describes :math:`x_t`, before step :math:`t`). Default None:
        the rule every solver shares (`fastcon.solvers._common.default_record_every`): about 100
        rows, fewer when the exact :math:`f` a record needs on constraint steps would cost more than a
        tenth of the iterations' data reads.
    callback : callable ``(t, x, info) -> bool``, optional
        Called after iteration ``t`` with the new iterate :math:`x_{t+1}` (a live buffer: copy it to
        keep it) and ``info`` (``constraint`` :math:`g(x_t)`, ``step_kind``, ``step_size``,
        ``switching_level``, ``in_I``). Returning True stops with status ``"callback_stop"``.
    verbose : bool, int or str
        See `fastcon._progress.Progress`.
    record_stationarity_every : int, optional
        Also record ``stationarity`` :math:`\|\hat x_{\hat\rho}(x_t) - x_t\|` (Definition 3.2, via
        `fastcon.solvers.near_stationarity`) every this many iterations; needs
        ``stationarity_rho_hat``.
    stationarity_rho_hat : float, optional
        :math:`\hat\rho > 0` of the recorded near-stationarity measure.

    Returns
    -------
    SolveResult
        Status ``"max_iter"``; ``"no_feasible_iterate"`` when the run ends with
        :math:`I = \emptyset` (no :math:`t \ge S` met :math:`g(x_t) \le \epsilon_t`), whatever the
        output rule: ``x`` is then :math:`x_T` for every rule but the strongly convex one, whose
        candidates are all :math:`t \ge S`, and the message gives the smallest :math:`g(x_t)` seen
        and points to `check_feasibility`; ``"callback_stop"``. History columns:
        ``iteration`` t, ``time`` (algorithm time, history work excluded), ``objective``
        :math:`f(x_t)`, ``constraint`` raw :math:`g(x_t)`, ``max_violation``, ``step_kind``
        ("f"/"g"), ``step_size``, ``switching_level``, ``data_passes_f/g`` (cumulative through iteration
        t, history evaluations excluded) and ``stationarity`` if asked. ``counters`` adds
        ``objective_steps``, ``constraint_steps``, ``nearly_feasible`` (:math:`|I|`); ``info``
        holds ``tau`` (the chosen index, -1 if none), ``best_constraint`` (the smallest
        :math:`g(x_t)` the switching test saw, a batch estimate under a stochastic constraint) and the
        parameters.
    """
    require_constrained_problem(problem, "switching_subgradient")
    # locals() is exactly the parameters here: forward them all to the implementation.
    return _switching_subgradient(**locals())


def _switching_subgradient(problem, x0=None, *, max_iter=1000, step_size=1e-3, switching_level=None, start_index=0,
                           objective_oracle="deterministic", objective_batch_size=None,
                           constraint_oracle="deterministic", constraint_batch_size=None, output="random",
                           average_weights="step_size", strongly_convex_constraint=False, seed=0,
                           record_every=None, callback=None, verbose=False, record_stationarity_every=None,
                           stationarity_rho_hat=None, record_problem=None) -> SolveResult:
    """`switching_subgradient` with ``record_problem``: the problem whose exact values the history records
    (default ``problem``). `proximal_point` solves subproblems but records the original problem.
    """
    check_choice("objective_oracle", objective_oracle, _ORACLES)
    check_choice("constraint_oracle", constraint_oracle, _ORACLES)
    check_choice("output", output, _OUTPUTS)
    run = SolverRun("switching_subgradient", max_iter, record_every=record_every, callback=callback,
                    verbose=verbose, seed=seed)
    T = run.max_iter
    S = check_count("start_index", start_index, 0)
    if S >= T:
        raise ValueError(f"start_index: must be below max_iter = {T} (no t >= S = {S} would enter I), got {S}")
    check_optional_count("record_stationarity_every", record_stationarity_every)
    check_optional_real("stationarity_rho_hat", stationarity_rho_hat, positive=True)
    check_optional_count("objective_batch_size", objective_batch_size)
    check_optional_count("constraint_batch_size", constraint_batch_size)
    if record_stationarity_every is not None and stationarity_rho_hat is None:
        raise ValueError("stationarity_rho_hat: needed when record_stationarity_every is set")
    if strongly_convex_constraint:
        if switching_level is not None and np.any(
                check_schedule("switching_level", switching_level, T, signed=True, allow_inf=True) != 0):
            raise ValueError("switching_level: Theorem B.1 (strongly_convex_constraint=True) uses epsilon_t = 0")
        switching_level = 0.0
    elif switching_level is None:
        switching_level = 1e-5
    eta = check_schedule("step_size", step_size, T)
    eps = check_schedule("switching_level", switching_level, T, signed=True, allow_inf=True)
    weights = average_weight_values(average_weights, T, eta)

    x = start_point(problem, x0)
    rec = problem if record_problem is None else record_problem
    rng_f, rng_g, rng_out = seeded_streams(seed, 3)
    eval_g = _constraint_oracle(problem, constraint_oracle, constraint_batch_size, rng_g)
    eval_f = make_objective_oracle(problem, objective_oracle, objective_batch_size, rng_f)
    # The exact f value of an objective step can be reused for the history only when it is the
    # deterministic value of the recorded problem; likewise for g.
    reuse_f = objective_oracle == "deterministic" and rec is problem
    reuse_g = constraint_oracle == "deterministic" and rec is problem
    f_grad, g_grad = np.empty(problem.dim), np.empty(problem.dim)
    # For record_every=None: a record reads f on constraint steps (always, unless reused) and g unless
    # reused; an iteration reads at least the constraint's rows (or the objective's without a constraint).
    n_cons = len(problem.constraints)
    it_rows = (constraint_rows(problem) if constraint_oracle == "deterministic"
               else n_cons * int(constraint_batch_size or 1))
    if n_cons == 0:
        it_rows = problem.n_samples_f if objective_oracle == "deterministic" else int(objective_batch_size or 1)
    with run.start(problem, record_rows=rec.n_samples_f + (0 if reuse_g else constraint_rows(rec)),
                   iteration_rows=it_rows):
        meter = run.meter

        sampler = RandomIterate(problem.dim, rng_out)
        rule = {"random": sampler, "best_feasible": BestIterate(problem.dim), "average": WeightedAverage(problem.dim),
                "last": None}[output]
        in_I_count = 0
        info_cb = {}

        def before_step(state):
            nonlocal in_I_count
            t, kind, g_t, f_t = state.t, state.kind, state.constraint, state.objective
            in_I = kind == "f" and t >= S
            candidate = in_I or (strongly_convex_constraint and t >= S)
            in_I_count += in_I
            if candidate:
                sampler.offer(t, x, eta[t])
                if output == "average":
                    rule.offer(t, x, weights[t])
            stat_due = record_stationarity_every is not None and t % record_stationarity_every == 0
            if run.due(t) or stat_due:
                with meter:
                    if not (reuse_f and kind == "f"):
                        f_t = rec.f(x)
                    g_rec = g_t if reuse_g else rec.g(x)[0]
                    extra = {"stationarity": stationarity_certificate(rec, x, stationarity_rho_hat)} if stat_due else {}
                run.record(t, force=True, objective=f_t, constraint=g_rec, max_violation=max(0.0, g_rec),
                           step_kind=kind, step_size=eta[t], switching_level=eps[t], extra=extra)
                if output == "best_feasible" and candidate:
                    rule.offer(t, x, f_t)
            if callback is not None:
                info_cb.update(constraint=g_t, step_kind=kind, step_size=eta[t], switching_level=eps[t], in_I=in_I)

        def after_step(state):
            return "callback_stop" if run.tick(state.t, x, info_cb, g=state.constraint) else None

        steps = ScheduleStep(eta)
        loop = switching_loop(x, FusedOracle(eval_g, eval_f, g_grad), eps, T, objective_rule=steps,
                              constraint_rule=steps, project=problem.project_inplace, before_step=before_step,
                              after_step=after_step, objective_buffer=f_grad, constraint_buffer=g_grad)
    stop_t, n_in_I, best_g = loop.n_iter - 1, in_I_count, loop.best_constraint

    info = {"tau": -1, "start_index": S, "nearly_feasible": n_in_I, "output": output,
            "step_size": repr(as_schedule(step_size)), "switching_level": repr(as_schedule(switching_level)),
            "objective_oracle": objective_oracle, "constraint_oracle": constraint_oracle,
            "objective_batch_size": objective_batch_size, "constraint_batch_size": constraint_batch_size,
            "strongly_convex_constraint": bool(strongly_convex_constraint), "seed": describe_seed(seed),
            "best_constraint": best_g}
    message = f"ran {stop_t + 1} iterations; |I| = {n_in_I}"
    # The status counts I itself, never the output rule's state: a rule can hold no candidate while I
    # is non-empty ("best_feasible" when no t in I was recorded), and I can be empty while the strongly convex
    # rule has candidates.
    if n_in_I == 0 and run.status == "max_iter":
        run.status = "no_feasible_iterate"
        message = (f"ran {stop_t + 1} iterations; I is empty (g(x_t) > eps_t for every t >= S = {S}). "
                   + no_feasible_message(best_g, float(np.max(eps[S:]))))
    if output == "last":
        x_out = x
    elif rule.empty and sampler.empty:  # no candidate at all: return the last iterate
        x_out = x
        message += "; returning the last iterate"
    elif rule.empty:  # "best_feasible" with candidates but none recorded: the random rule's pick
        x_out, info["tau"], info["output_fallback"] = sampler.x, sampler.index, "random"
    else:
        x_out, info["tau"] = rule.x.copy(), rule.index
    x_out = np.array(x_out)
    with meter:
        objective, violation = problem.f(x_out), problem.max_violation(x_out)
    run.counters.add("objective_steps", loop.objective_steps)
    run.counters.add("constraint_steps", loop.constraint_steps)
    run.counters.add("nearly_feasible", n_in_I)
    return run.finish(x_out, objective=objective, max_violation=violation, message=message, n_iter=loop.n_iter,
                      info=info)


# ---------------------------------------------------------------------------- theory
def _log_terms(delta):
    l8 = math.log(8.0 / delta)
    return max(math.sqrt(12.0 * l8), 4.0 / 3.0 * l8), l8


def switching_theory_parameters(M, D, rho, rho_hat, epsilon, g_slater=None, Lambda=None, case="static",
                                stochastic_objective=False, stochastic_constraint=False, delta=0.05, sigma=None,
                                mu=None) -> dict:
    r"""Parameters prescribed by [HL23]'s theorems for a target :math:`\epsilon`, for `switching_subgradient`.

    3S-Econ's counterpart is `spider_theory_parameters`.

    With :math:`\Delta = \hat\rho - \rho` and :math:`\Lambda` from Lemma 3.3 eq. (7),
    :math:`\Lambda = (MD + \hat\rho D^2) / (-g(x_{feas}))` when ``g_slater`` :math:`= g(x_{feas}) < 0`
    is given (else pass ``Lambda``), and :math:`\bar T = M^2 D^2 (1+\Lambda)^2 / (\epsilon^4\Delta^2)`:

    - Theorem 4.2 (deterministic oracles). Case I (``"static"``): :math:`S = 0`,
      :math:`\epsilon_t = \epsilon^2\Delta/(1+\Lambda)`,
      :math:`\eta_t = 2\epsilon^2\Delta/(5(1+\Lambda)M^2)`, :math:`T = \lceil 25\bar T/4 \rceil`.
      Case II (``"diminishing"``): :math:`\eta_t = D/(M\sqrt{t+1})`,
      :math:`\epsilon_t = E M D/\sqrt{t+1}` with :math:`E = 5`, :math:`T = \lceil 2E^2 \bar T\rceil`,
      :math:`S = \lfloor T/2 \rfloor`. Guarantee: :math:`\mathbb E_\tau\|\hat x - x_\tau\| \le \epsilon`,
      :math:`\mathbb E_\tau g(x_\tau) \le \epsilon^2\Delta/(1+\Lambda)`.
    - Theorem 4.3 (stochastic :math:`f`, probability :math:`1-\delta`). Case I: as above with
      :math:`T = \lceil\max\{25\bar T/4,\ \max\{12\ell_8, \frac{16}{9}\ell_8^2\},\ 300\ln(4/\delta)\bar T\}\rceil`,
      :math:`\ell_8 = \ln(8/\delta)`. Case II: :math:`E = 4 + \frac{2\pi}{\sqrt 6}
      \max\{\sqrt{12\ell_8}, \frac43\ell_8\} + 8\sqrt{3\ln(4/\delta)}`, :math:`T = \lceil 2E^2\bar T\rceil`.
    - Theorem 5.2 (stochastic :math:`g`, Algorithm 2; needs ``sigma``). As Theorem 4.3 with, in
      Case I, :math:`B = 300\sigma^2\ln(4T/\delta)(1+\Lambda)^2/(\epsilon^4\Delta^2)`; in Case II
      :math:`E` has 8 in place of 4 and :math:`B = 3T\sigma^2\ln(2T/\delta)(1+\Lambda)^2/(2M^2D^2)`.
      The feasibility guarantee doubles: :math:`2\epsilon^2\Delta/(1+\Lambda)`.
    - Theorem B.1 (``mu`` > 0: :math:`g` is :math:`\mu`-strongly convex; deterministic oracles):
      :math:`\epsilon_t = 0`, :math:`m = \min\{\Delta, \mu/2\}`; Case I :math:`S = 0`,
      :math:`\eta = \epsilon^2 m/M^2`, :math:`T = \lceil M^2D^2/(\epsilon^4 m^2)\rceil`; Case II
      :math:`\eta_t = D/(M\sqrt{t+1})`, :math:`T = \lceil 4M^2D^2/(\epsilon^4 m^2)\rceil`,
      :math:`S = \lfloor T/2\rfloor`. :math:`\Lambda` is not needed; feasibility is only
      :math:`O(\epsilon)` (Remark B.4).

    Parameters
    ----------
    M : float
        Bound on the subgradient norms of :math:`f` and :math:`g`.
    D : float
        Diameter of the domain.
    rho : float
        Weak-convexity modulus :math:`\rho`.
    rho_hat : float
        :math:`\hat\rho > \rho`.
    epsilon : float
        Target :math:`\epsilon > 0`.
    g_slater : float, optional
        :math:`g(x_{feas}) < 0` at a strictly feasible point (gives :math:`\Lambda`).
    Lambda : float, optional
        :math:`\Lambda`, when ``g_slater`` is not given.
    case : {"static", "diminishing"}
        Case I or Case II.
    stochastic_objective : bool
        Stochastic :math:`f` (Theorem 4.3).
    stochastic_constraint : bool
        Stochastic :math:`g` (Theorem 5.2; needs ``sigma``).
    delta : float
        :math:`\delta`, the failure probability of the stochastic theorems.
    sigma : float, optional
        Standard deviation of the constraint oracle (Theorem 5.2).
    mu : float, optional
        Strong-convexity modulus of :math:`g` (Theorem B.1).

    Returns
    -------
    dict
        ``theorem``, ``case``, ``step_size``, ``switching_level`` (floats or schedules), ``start_index``,
        ``max_iter``, ``batch_size`` (None unless Theorem 5.2), ``Lambda``, ``E`` (Case II),
        ``constraint_bound`` (the bound on :math:`\mathbb E_\tau g`, None for B.1), and ``kwargs``:
        the matching keyword arguments of `switching_subgradient`.
    """
    check_choice("case", case, ("static", "diminishing"))
    M, D, epsilon = float(M), float(D), float(epsilon)
    Delta = float(rho_hat) - float(rho)
    if not (M > 0 and D > 0 and epsilon > 0 and math.isfinite(D)):
        raise ValueError("M: M, D and epsilon must be positive and finite")
    if not Delta > 0:
        raise ValueError(f"rho_hat: must exceed rho (Delta = rho_hat - rho = {Delta})")
    if not 0 < delta < 1:
        raise ValueError(f"delta: must be in (0, 1), got {delta}")
    if mu is not None:
        return _theory_strongly_convex(M, D, Delta, epsilon, float(mu), case,
                                       stochastic_objective or stochastic_constraint)
    if Lambda is None:
        if g_slater is None or not g_slater < 0:
            raise ValueError("g_slater: give a Slater value g(x_feas) < 0 (Lemma 3.3) or Lambda")
        Lambda = (M * D + float(rho_hat) * D * D) / (-float(g_slater))
    Lambda = float(Lambda)
    L1 = 1.0 + Lambda
    T_bar = (M * D * L1) ** 2 / (epsilon ** 4 * Delta ** 2)
    hp, l8 = _log_terms(delta)
    theorem = "5.2" if stochastic_constraint else ("4.3" if stochastic_objective else "4.2")
    if stochastic_constraint and (sigma is None or not sigma > 0):
        raise ValueError("sigma: Theorem 5.2 needs the sub-Gaussian scale sigma of the constraint values")
    out = {"theorem": theorem, "case": case, "Lambda": Lambda, "batch_size": None, "E": None,
           "constraint_bound": (2.0 if theorem == "5.2" else 1.0) * epsilon ** 2 * Delta / L1}
    if case == "static":
        T = 25.0 * T_bar / 4.0
        if theorem != "4.2":
            T = max(T, max(12.0 * l8, 16.0 / 9.0 * l8 ** 2), 300.0 * math.log(4.0 / delta) * T_bar)
        T = math.ceil(T)
        out.update(step_size=2.0 * epsilon ** 2 * Delta / (5.0 * L1 * M ** 2),
                   switching_level=epsilon ** 2 * Delta / L1, start_index=0, max_iter=T)
        if theorem == "5.2":
            out["batch_size"] = math.ceil(300.0 * sigma ** 2 * math.log(4.0 * T / delta) * L1 ** 2
                                          / (epsilon ** 4 * Delta ** 2))
    else:
        E = 5.0 if theorem == "4.2" else ((4.0 if theorem == "4.3" else 8.0) + 2.0 * math.pi / math.sqrt(6.0) * hp
                                          + 8.0 * math.sqrt(3.0 * math.log(4.0 / delta)))
        T = math.ceil(2.0 * E ** 2 * T_bar)
        out.update(step_size=inverse_sqrt(D / M), switching_level=inverse_sqrt(E * M * D), start_index=T // 2,
                   max_iter=T, E=E)
        if theorem == "5.2":
            out["batch_size"] = math.ceil(3.0 * T * sigma ** 2 * math.log(2.0 * T / delta) * L1 ** 2
                                          / (2.0 * M ** 2 * D ** 2))
    out["kwargs"] = {"step_size": out["step_size"], "switching_level": out["switching_level"],
                     "start_index": out["start_index"], "max_iter": out["max_iter"], "output": "random",
                     "objective_oracle": "stochastic" if stochastic_objective or stochastic_constraint
                     else "deterministic"}
    if theorem == "5.2":
        out["kwargs"].update(constraint_oracle="stochastic", constraint_batch_size=out["batch_size"])
    return out


switching_subgradient.theory_parameters = switching_theory_parameters


def _theory_strongly_convex(M, D, Delta, epsilon, mu, case, stochastic):
    if not mu > 0:
        raise ValueError(f"mu: must be positive, got {mu}")
    if stochastic:
        raise ValueError("mu: Theorem B.1 is proved for deterministic oracles only (Remark B.3 gives no "
                         "constants for the stochastic cases)")
    m = min(Delta, mu / 2.0)
    if case == "static":
        T = math.ceil((M * D) ** 2 / (epsilon ** 4 * m ** 2))
        eta, S = epsilon ** 2 * m / M ** 2, 0
    else:
        T = math.ceil(4.0 * (M * D) ** 2 / (epsilon ** 4 * m ** 2))
        eta, S = inverse_sqrt(D / M), T // 2
    out = {"theorem": "B.1", "case": case, "Lambda": None, "batch_size": None, "E": None,
           "constraint_bound": None, "step_size": eta, "switching_level": 0.0, "start_index": S, "max_iter": T}
    out["kwargs"] = {"step_size": eta, "start_index": S, "max_iter": T, "output": "random",
                     "strongly_convex_constraint": True}
    return out


def check_certificate(step_sizes, switching_levels, start_index, M, D, epsilon, Delta, Lambda, max_iter=None) -> dict:
    r"""Check the sufficient conditions (29) and (30) of [HL23] (deterministic form).

    .. math::

        (29)\quad \epsilon_t (1 + \Lambda) \le \epsilon^2 \Delta \quad (t \ge S), \qquad
        (30)\quad \sum_{t=S}^{T-1} \eta_t\epsilon_t > \frac{D^2}{2} + \frac{M^2}{2}\sum_{t=S}^{T-1}\eta_t^2 .

    Together they give :math:`I \ne \emptyset` and
    :math:`\mathbb E_\tau \|\hat x_{\hat\rho}(x_\tau) - x_\tau\|^2 \le \epsilon^2` (Theorem 4.2's proof).
    (29) is compared with a relative slack of 1e-12 because the static parameters meet it with
    equality.

    Parameters
    ----------
    step_sizes, switching_levels : array of length T, float or callable of t
        :math:`\eta_t`, :math:`\epsilon_t`; floats/callables need ``max_iter``.
    start_index : int
    M, D, epsilon, Delta, Lambda : float
    max_iter : int, optional

    Returns
    -------
    dict
        ``condition_29``, ``condition_30`` (bools), their sides ``lhs_29``, ``rhs_29``, ``lhs_30``,
        ``rhs_30``, and ``certified`` (both hold).
    """
    def as_array(v, name):
        if isinstance(v, np.ndarray) or isinstance(v, (list, tuple)):
            return np.asarray(v, dtype=np.float64)
        if max_iter is None:
            raise ValueError(f"max_iter: needed to evaluate {name} given as a float or callable")
        return as_schedule(v, name).values(int(max_iter))
    eta, eps = as_array(step_sizes, "step_sizes"), as_array(switching_levels, "switching_levels")
    if eta.shape != eps.shape:
        raise ValueError(f"switching_levels: length {eps.size} differs from step_sizes' {eta.size}")
    S = int(start_index)
    if not 0 <= S < eta.size:
        raise ValueError(f"start_index: must be in [0, T), got {S} with T = {eta.size}")
    eta, eps = eta[S:], eps[S:]
    lhs29, rhs29 = float(eps.max()) * (1.0 + Lambda), epsilon ** 2 * Delta
    lhs30 = float(eta @ eps)
    rhs30 = 0.5 * D ** 2 + 0.5 * M ** 2 * float(eta @ eta)
    c29, c30 = bool(lhs29 <= rhs29 * (1.0 + 1e-12)), bool(lhs30 > rhs30)
    return {"condition_29": c29, "lhs_29": lhs29, "rhs_29": rhs29, "condition_30": c30,
            "lhs_30": lhs30, "rhs_30": rhs30, "certified": c29 and c30}
