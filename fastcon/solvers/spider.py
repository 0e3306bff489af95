r"""3S-Econ: single-loop SPIDER-type stochastic subgradient method (Liu & Xu [LX25], Algorithm 1).

Minimizes the smoothed exact penalty :math:`F^\nu(x) = f(x) + \beta h^\nu(g(x))`
(`fastcon.solvers._smoothed_penalty`) by

.. math::

    x_{k+1} = x_k - \alpha_k\big(\zeta_f^{(k)} + \beta\,\mathrm{clip}(u_k/\nu, 0, 1)\,\zeta_g^{(k)}\big)
    \quad\text{(eq. 1)},

with :math:`u_k` the SPIDER estimate of :math:`g(x_k)` (eq. 25). ``variant="deterministic"`` and
``"stochastic"`` are the paper's 3S-Econ-D and 3S-Econ-S (§4.2); `spider_theory_parameters` gives
its theorems' parameters. The loop is compiled (`fastcon._kernels._spider`) for problems built from
terms with a compiled datafit. Design notes: docs/design.md, 'Module notes'.
"""
from __future__ import annotations

import math
import time

import numpy as np

from .._kernels._datafit import GROUP_GAP, MARGIN, NO_PENALTY, datafit_buffers
from .._kernels._spider import COUNTERS, SpiderBatches, SpiderParameters, SpiderState, rng_state, spider_loop
from .._results import Counters, SolveResult
from ..problems import PenalizedTerm, ShiftedTerm
from ..problems._protocol import require_capabilities, require_constrained_problem
from ._common import (
    as_seed_sequence, check_choice, describe_seed, FEASIBILITY_TOLERANCE, start_point, stationarity_certificate,
)
from ._run import SolverRun
from ._validation import check_optional_count, check_optional_real, check_real
from ._smoothed_penalty import kkt_multiplier

__all__ = ["spider", "spider_theory_parameters"]

_VARIANTS = ("deterministic", "stochastic")
_OUTPUTS = ("last", "random", "best_feasible")


def _datafit_of(term, role):
    require_capabilities(term, role, ("compiled_datafit",), "spider", hint="spider runs a compiled loop and needs "
                         "a term with a compiled datafit: hinge_risk/margin_risk, roc_fairness, "
                         "smoothed_demographic_parity")
    return term.compiled_datafit()


def _objective_parts(term):
    if isinstance(term, PenalizedTerm):
        pen = term.penalty
        require_capabilities(pen, "objective", ("code",), "spider", hint="the penalty has no compiled form: use "
                             "scad_penalty")
        return _datafit_of(term.term, "objective"), int(pen.code), float(pen.lam), term.term
    return _datafit_of(term, "objective"), NO_PENALTY, 0.0, term


def _constraint_parts(term):
    level = 0.0
    if isinstance(term, ShiftedTerm):
        level, term = term.bound, term.term
    bundle = _datafit_of(term, "constraint")
    if int(bundle.kind) not in (MARGIN, GROUP_GAP):
        raise TypeError("constraint: SPIDER tracks a mean of per-row terms; the constraint must be a margin "
                        "risk or a demographic-parity gap (the ROC gap is a max over thresholds)")
    return bundle, int(bundle.kind) == GROUP_GAP, float(level), term


def _sizes(bundle, batch, full):
    """``[k_a, k_b, full, N]`` and the two permutations the sampler shuffles."""
    n = int(bundle.indptr.shape[0]) - 1
    if int(bundle.kind) == MARGIN:
        perm_a, perm_b = np.arange(n, dtype=np.int64), np.zeros(0, dtype=np.int64)
        k_a, k_b = min(int(batch), n), 0
    else:
        n_p = int(bundle.n_split)
        perm_a, perm_b = np.arange(n_p, dtype=np.int64), np.arange(n_p, n, dtype=np.int64)
        from ..problems._groups import stratified_sizes
        k_a, k_b = stratified_sizes(min(int(batch), n), n_p, n - n_p)
    if full:
        k_a, k_b = n, 0
    return np.array([k_a, k_b, int(full), n], dtype=np.int64), perm_a, perm_b


def spider(problem, x0=None, *, variant="stochastic", beta=10.0, nu=1e-5, step_size=0.01, step_schedule=None,
           q=None, batch_size=None, objective_batch_size=None, project=True, output="last", max_iter=10000,
           max_data_passes_g=None, feasibility_tolerance=FEASIBILITY_TOLERANCE, seed=0, record_every=None,
           callback=None, verbose=False, record_stationarity_every=None, stationarity_rho_hat=None) -> SolveResult:
    r"""3S-Econ of Liu & Xu [LX25] (Algorithm 1; module docstring) on a problem with one constraint.

    The name says how it estimates the constraint (SPIDER); the method is the papers' 3S-Econ.
    Parameters prescribed by its Theorems 3.6 and 3.8: `spider_theory_parameters`.

    Parameters
    ----------
    problem : ConstrainedProblem
        One constraint; terms with compiled datafits (module docstring); domain `Whole` or `Ball`.
    x0 : array-like, optional
        Start (default ``problem.x0``; the paper starts at :math:`x^*` (Problem 1) or 0 (Problem 2)).
    variant : {"deterministic", "stochastic"}
        Sets the defaults of ``q``, ``batch_size``, ``objective_batch_size`` and ``step_schedule``.
    beta, nu : float
        Penalty :math:`\beta` and smoothing :math:`\nu`, positive and finite (paper: 10 and 1e-5).
    step_size : float
        :math:`\alpha_0`, positive and finite (paper: 0.01; unlike `switching_subgradient`, 0 is
        rejected: the method has no output rule that a frozen iterate would exercise).
    step_schedule : {"constant", "inverse_sqrt_period"}, optional
        :math:`\alpha_k = \alpha_0` or :math:`\alpha_0/\sqrt{\max(1, k/q)}`; default constant for
        the deterministic variant, the decaying one for the stochastic variant.
    q : int, optional
        Refresh period, a positive integer; default 1 (deterministic) or :math:`\lceil\sqrt{\max(N_f, N_g)}\rceil`, i.e.
        :math:`\lceil\sqrt n\rceil` with :math:`n = |\mathcal D|` the hinge data (a9a: 181).
    batch_size : int, optional
        :math:`S_2`, constraint rows per non-refresh iteration; default :math:`N_g`
        (deterministic) or :math:`\lceil N_g/q\rceil`, the size the DP(g) counts of [LX25] Table 2 imply
        (the paper's :math:`S_2 = q` is that size only when the constraint data is :math:`\mathcal D`).
    objective_batch_size : int, optional
        Objective rows per iteration; default :math:`N_f` (deterministic) or :math:`\lceil N_f/q\rceil`.
        Two-group terms draw stratified batches (both groups, proportional sizes).
    project : bool
        Project onto the ball after each step when the domain is a `Ball` (the paper does not say how
        Problem 1's ball is enforced); with False the ball is ignored (eq. 1 as printed).
    output : {"last", "random", "best_feasible"}
        The final iterate (the paper's experiments), :math:`x_\tau` with :math:`\tau` uniform on
        :math:`\{0..K-1\}` (Corollary 3.9), or the recorded iterate with the smallest :math:`f`
        among those with :math:`g \le` ``feasibility_tolerance`` (the last iterate if none).
    max_iter : int
        Iterations :math:`K` (the paper's :math:`Kq`), a positive integer.
    max_data_passes_g : float, optional
        Stop (status ``"data_pass_limit"``) once the paper-convention DP(g) reaches this cap (> 0).
    feasibility_tolerance : float
        :math:`\ge 0` (default 1e-5 = the default :math:`\nu`, the width of the band where the
        smoothed penalty is not yet saturated). A run that would end with ``"max_iter"`` ends with
        ``"no_feasible_iterate"`` when no recorded iterate (nor the output) has :math:`g \le` this
        value; also the feasibility test of ``output="best_feasible"``.
    seed : int >= 0, SeedSequence, Generator or None
        Seeds the batch sampler and the ``random`` output.
    record_every : int, optional
        History period: rows at :math:`k = 0` (the start) and at every multiple of ``record_every``
        up to :math:`K`, where row :math:`k` describes :math:`x_k`, the iterate after :math:`k`
        updates (so the last row is :math:`x_K`, the output of ``output="last"``). Every record
        evaluates the exact :math:`f` and :math:`g` (not counted as data passes). Default None: the
        rule every solver shares (`fastcon.solvers._common.default_record_every`): about 100 rows,
        fewer when the records' two full passes would read more than a tenth of the rows the
        iterations read.
    callback : callable ``(t, x, info) -> bool``, optional
        Called at every record after the first, like the other solvers' callbacks after iteration
        :math:`t` with the new iterate :math:`x_{t+1}` (:math:`t + 1` the record's row, a live
        buffer), and ``info`` = ``{"constraint_estimate", "penalty_weight", "data_passes_f",
        "data_passes_g", "history"}``; True stops with status ``"callback_stop"`` after
        :math:`t + 1` iterations ([LX25] §4.3's SVio stopping rule is such a callback). Only at
        records: the compiled loop runs without Python in between.
    verbose : bool
        Progress bar / lines.
    record_stationarity_every, stationarity_rho_hat
        As in `switching_subgradient` (``near_stationarity`` at those iterations, not counted).

    Returns
    -------
    SolveResult
        Status ``"max_iter"``, ``"no_feasible_iterate"`` (see ``feasibility_tolerance``; the message
        gives the smallest recorded :math:`g` and points to `check_feasibility`),
        ``"data_pass_limit"`` or ``"callback_stop"``; ``info["best_constraint"]`` is the smallest
        recorded :math:`g`.
        ``multipliers`` = :math:`\beta\,\mathrm{clip}(g(x)/\nu, 0, 1)` at the output (`kkt_multiplier`).
        History: ``objective``, ``constraint`` (exact), ``constraint_estimate`` (:math:`u_k - c`),
        ``penalty_weight``, ``step_size``, ``data_passes_f/g`` (paper convention, see
        `fastcon._kernels._spider.spider_loop`). Counters: ``rows_f``/``rows_g`` in that
        convention plus the raw per-sample counts ``rows_f_subgradient``, ``rows_g_subgradient``,
        ``rows_g_value`` (two-point values twice) and ``rows_g_read`` (rows this implementation
        actually read).
    """
    require_constrained_problem(problem, "spider")
    check_choice("variant", variant, _VARIANTS)
    check_choice("output", output, _OUTPUTS)
    if problem.n_constraints != 1:
        raise ValueError(f"problem: spider handles one constraint (g = max_i g_i is not a mean), got "
                         f"{problem.n_constraints}")
    run = SolverRun(f"spider[{variant}]", max_iter, record_every=record_every, callback=callback, verbose=verbose,
                    feasibility_tolerance=feasibility_tolerance, seed=seed)
    K, feas_tol = run.max_iter, run.feasibility_tolerance
    beta, nu = check_real("beta", beta, positive=True), check_real("nu", nu, positive=True)
    step_size = check_real("step_size", step_size, positive=True)
    check_optional_count("q", q)
    check_optional_count("batch_size", batch_size)
    check_optional_count("objective_batch_size", objective_batch_size)
    check_optional_real("max_data_passes_g", max_data_passes_g, positive=True)
    check_optional_count("record_stationarity_every", record_stationarity_every)
    check_optional_real("stationarity_rho_hat", stationarity_rho_hat, positive=True)
    if record_stationarity_every is not None and stationarity_rho_hat is None:
        raise ValueError("stationarity_rho_hat: needed when record_stationarity_every is set")
    dom = problem.domain
    try:  # the compiled loop knows the whole space and one ball around 0 on every coordinate
        lower, upper, balls = dom.box_and_balls(problem.dim)
    except NotImplementedError:
        lower = upper = balls = None
    if (balls is None or np.isfinite(lower).any() or np.isfinite(upper).any() or len(balls) > 1
            or (balls and balls[0][0] != slice(0, problem.dim))):
        raise TypeError(f"problem: spider supports the domains Whole and Ball, got {dom!r}")
    if balls and balls[0][1] is not None and np.any(balls[0][1] != 0):
        raise TypeError("problem: spider's compiled loop projects onto balls centred at 0")
    radius = float(balls[0][2]) if balls and project else 0.0

    fb, pen, lam, f_term = _objective_parts(problem.objective)
    gb, g_abs, level, g_term = _constraint_parts(problem.constraints[0])
    n_f, n_g = int(fb.indptr.shape[0]) - 1, int(gb.indptr.shape[0]) - 1
    deterministic = variant == "deterministic"
    if q is None:
        q = 1 if deterministic else math.ceil(math.sqrt(max(n_f, n_g)))
    q = int(q)  # checked above (check_optional_count)
    s2 = n_g if (batch_size is None and deterministic) else (math.ceil(n_g / q) if batch_size is None else int(batch_size))
    bf = n_f if (objective_batch_size is None and deterministic) else (
        math.ceil(n_f / q) if objective_batch_size is None else int(objective_batch_size))
    for name, v, n in (("batch_size", s2, n_g), ("objective_batch_size", bf, n_f)):
        if not 1 <= v <= n:
            raise ValueError(f"{name}: expected an integer in [1, {n}], got {v}")
    schedule = step_schedule or ("constant" if deterministic else "inverse_sqrt_period")
    check_choice("step_schedule", schedule, ("constant", "inverse_sqrt_period"))

    f_sizes, perm_fa, perm_fb = _sizes(fb, bf, bf == n_f)
    g_sizes, perm_ga, perm_gb = _sizes(gb, s2, s2 == n_g)
    rows_f = np.arange(n_f, dtype=np.int64) if bf == n_f else np.empty(bf, dtype=np.int64)
    all_g = np.arange(n_g, dtype=np.int64)
    rows_g = all_g if s2 == n_g else np.empty(int(g_sizes[0] + g_sizes[1]), dtype=np.int64)
    bufs_f, bufs_g = datafit_buffers(fb, rows_f.shape[0]), datafit_buffers(gb, n_g)

    x = start_point(problem, x0)
    if radius > 0:
        problem.project_inplace(x)
    x_prev, grad = x.copy(), np.empty_like(x)
    est = np.zeros(3)
    counters_arr = np.zeros(len(COUNTERS))
    ss = as_seed_sequence(seed)
    ss_loop, ss_out = ss.spawn(2)
    rng = rng_state(ss_loop)
    state = SpiderState(x, x_prev, est, grad, rng, counters_arr)
    params = SpiderParameters(q, float(step_size), schedule == "inverse_sqrt_period", float(beta), float(nu), radius,
                              pen, lam, g_abs, level)
    objective = SpiderBatches(fb, f_sizes, perm_fa, perm_fb, rows_f, np.zeros(0, dtype=np.int64), bufs_f)
    constraint = SpiderBatches(gb, g_sizes, perm_ga, perm_gb, rows_g, all_g, bufs_g)
    tau = int(np.random.default_rng(ss_out).integers(K)) if output == "random" else -1
    # a record reads f and g on every row; an iteration reads its objective batch and its
    # constraint batch, except every q-th, which reads the whole constraint instead
    it_rows = bf + (n_g if s2 == n_g else ((q - 1) * s2 + n_g) / q)
    with run.start(record_rows=n_f + n_g, iteration_rows=it_rows, counters=Counters(n_f, n_g)):
        every = run.record_every
        k, x_tau = 0, None
        start = time.perf_counter()
        alpha_decay = schedule == "inverse_sqrt_period"
        f0, g0 = problem.f(x), float(problem.g(x)[0])
        run.record(0, force=True, time=0.0, objective=f0, constraint=g0, max_violation=max(0.0, g0),
                   constraint_estimate=math.nan, penalty_weight=math.nan, step_size=float(step_size),
                   data_passes_f=0.0, data_passes_g=0.0,
                   **({"stationarity": stationarity_certificate(problem, x, stationarity_rho_hat)}
                      if record_stationarity_every is not None else {}))
        run.offer(0, g0, x, f0)  # the smallest recorded g, and the best feasible recorded iterate
        meter_time = time.perf_counter() - start
        while k < K:
            # records happen at multiples of `every` and at tau; the compiled loop runs in between
            nxt = min(K, (k // every + 1) * every)
            if k < tau < nxt:
                nxt = tau
            if k == tau:
                x_tau = x.copy()
            spider_loop(state, k, nxt, params, objective, constraint)
            k = nxt
            last = k == K
            dpg = counters_arr[1]
            capped = max_data_passes_g is not None and dpg >= float(max_data_passes_g)
            if k % every == 0 or last or capped:
                t0 = time.perf_counter()
                f_val, g_val = problem.f(x), float(problem.g(x)[0])
                stat_due = record_stationarity_every is not None and (k % int(record_stationarity_every) == 0 or last)
                extra = ({"stationarity": stationarity_certificate(problem, x, stationarity_rho_hat)}
                         if stat_due else {})
                meter_time += time.perf_counter() - t0
                alpha = float(step_size) / math.sqrt(max(1.0, (k - 1) / q)) if alpha_decay else float(step_size)
                run.record(k, force=True, extra=extra, time=time.perf_counter() - start - meter_time, objective=f_val,
                           constraint=g_val, max_violation=max(0.0, g_val), constraint_estimate=float(est[1]),
                           penalty_weight=float(est[2]), step_size=alpha, data_passes_f=float(counters_arr[0]),
                           data_passes_g=float(dpg))
                run.offer(k, g_val, x, f_val)
                if run.tick(k - 1, x, {"constraint_estimate": float(est[1]), "penalty_weight": float(est[2]),
                                       "data_passes_f": float(counters_arr[0]), "data_passes_g": float(dpg),
                                       "history": run.history}, f=f_val, g=g_val):
                    break
                if capped:
                    run.status = "data_pass_limit"
                    break
    # history row k is the iterate x_k after k updates (row 0: the start)
    info = {"variant": variant, "beta": float(beta), "nu": float(nu), "q": q, "batch_size": s2,
            "objective_batch_size": bf, "step_size": float(step_size), "step_schedule": schedule,
            "radius": radius, "output": output, "tau": tau, "seed": describe_seed(seed),
            "constraint_estimate": float(est[1]), "feasibility_tolerance": feas_tol}
    message = f"ran {k} iterations of 3S-Econ ({variant}); DP(g) = {counters_arr[1]:.4g}"
    if output == "last":
        x_out = x
    elif output == "random":
        x_out = x_tau if x_tau is not None else x
        if x_tau is None:
            message += f"; stopped before tau = {tau}, returning the last iterate"
            info["output_fallback"] = "last"
    else:
        if run.best_x is None:
            x_out = x
            message += f"; no recorded iterate has g <= {feas_tol:g}: returning the last iterate"
        else:
            x_out, info["best_iteration"] = run.best_x, run.best_iteration
    x_out = np.array(x_out)
    objective, violation = problem.f(x_out), problem.max_violation(x_out)
    g_out = float(problem.g(x_out)[0])
    info["best_constraint"] = run.offer(k, g_out)
    counters = run.counters
    counters.values["rows_f"] = float(counters_arr[0]) * n_f
    counters.values["rows_g"] = float(counters_arr[1]) * n_g
    for name, value in zip(COUNTERS[2:], counters_arr[2:]):
        counters.values[name] = float(value)
    counters.values["iterations"] = k
    return run.finish(x_out, objective=objective, max_violation=violation, message=message, n_iter=k,
                      multipliers=np.array([kkt_multiplier(g_out, beta, nu)]), info=info, subject="no recorded iterate")


def spider_theory_parameters(epsilon_bar, *, nu, beta, l_f, l_g, rho, Delta, L_g, sigma=0.0, sigma1=0.0,
                             sigma2=0.0, n_samples=None) -> dict:
    r"""Parameters of 3S-Econ ([LX25] Theorem 3.6, general :math:`P_g`, or 3.8, finite sum with ``n_samples``).

    For `spider`; `switching_theory_parameters` is the switching subgradient method's counterpart.

    .. math::

        L_F^2 = 2(\sigma_1^2 + l_f^2 + \beta^2\sigma_2^2 + \beta^2 l_g^2),\quad
        S_1 = \lceil 16\bar\epsilon^{-2}\nu^{-2}(l_g^2 + \sigma_2^2)\beta^2\sigma^2\rceil
        \ (\text{or } N),\quad q = S_2 = \lceil\sqrt{S_1}\rceil,

        \alpha = \min\Big\{\frac{\bar\epsilon^2}{16\rho L_F^2},
        \frac{\bar\epsilon\nu}{4\beta\sqrt{l_g^2+\sigma_2^2}L_gL_F}\Big\},\quad
        K = \lceil 16\bar\epsilon^{-2}q^{-1}\alpha^{-1}\Delta\rceil,

    run for :math:`Kq` iterations with output :math:`x_\tau`, :math:`\tau` uniform, to get
    :math:`\frac1{Kq}\sum_k E\|\nabla F^\nu_{1/(2\rho)}(x_k)\|^2 \le \bar\epsilon^2` (eq. 38).

    Parameters
    ----------
    epsilon_bar : float
        Target near-stationarity :math:`\bar\epsilon` of (PP).
    nu, beta : float
    l_f, l_g : float
        Subgradient bounds.
    L_g : float
        Mean-square Lipschitz constant of :math:`g(\cdot, \xi)`.
    rho : float
        Weak-convexity modulus of :math:`F^\nu` (:math:`\rho_f + \beta\rho_g`).
    Delta : float
        :math:`F^\nu_{1/(2\rho)}(x_0) - \min F^\nu_{1/(2\rho)}` (an upper bound).
    sigma, sigma1, sigma2 : float
        Standard deviations of the constraint value and of the two subgradient oracles.
    n_samples : int, optional
        Finite-sum case (Theorem 3.8): :math:`S_1 = N`.

    Returns
    -------
    dict
        ``S1``, ``S2``, ``q``, ``step_size``, ``K`` (outer count), ``max_iter`` (:math:`Kq`), ``L_F``.
    """
    vals = dict(epsilon_bar=epsilon_bar, nu=nu, beta=beta, l_f=l_f, l_g=l_g, rho=rho, Delta=Delta, L_g=L_g)
    for name, v in vals.items():
        if not (np.isfinite(float(v)) and float(v) > 0):
            raise ValueError(f"{name}: expected a positive finite number, got {v}")
    e, nu, beta = float(epsilon_bar), float(nu), float(beta)
    L_F = math.sqrt(2.0 * (sigma1 ** 2 + l_f ** 2 + beta ** 2 * sigma2 ** 2 + beta ** 2 * l_g ** 2))
    if n_samples is not None:
        S1 = int(n_samples)
    else:
        S1 = max(1, math.ceil(16.0 / e ** 2 / nu ** 2 * (l_g ** 2 + sigma2 ** 2) * beta ** 2 * sigma ** 2))
    q = max(1, math.ceil(math.sqrt(S1)))
    alpha = min(e ** 2 / (16.0 * rho * L_F ** 2),
                e * nu / (4.0 * beta * math.sqrt(l_g ** 2 + sigma2 ** 2) * L_g * L_F))
    K = math.ceil(16.0 / e ** 2 / q / alpha * Delta)
    return {"S1": S1, "S2": q, "q": q, "step_size": alpha, "step_schedule": "constant", "K": K, "max_iter": K * q,
            "L_F": L_F, "output": "random"}


spider.theory_parameters = spider_theory_parameters
