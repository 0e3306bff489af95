r"""Online stochastic subgradient method with virtual queues (Yu, Neely & Wei 2017), [MLY20] Algorithm 3.

Problem: :math:`\min_{x \in \mathcal X} f_0(x)` s.t. :math:`f_i(x) \le 0`, :math:`i = 1..m`, with
each constraint kept separately (a stochastic oracle of :math:`\max_i f_i` is not unbiased, as Ma,
Lin & Yang [MLY20] §4.2 note; see docs/references.md). Inside IQRC the terms are the regularised
:math:`F_i = f_i + \frac{\hat\rho}{2}\|\cdot - x_t\|^2` of the subproblem (9); this module only sees
the terms' oracles, so the regularisation comes from `ProximalTerm` and is included in both the
values :math:`\hat\theta_i` and the subgradients :math:`\tilde\zeta_i` (line 6 of the printed
Algorithm 3 has the unregularised :math:`\zeta_i^k`, a typo for the :math:`\tilde\zeta_i^k` of its
line 5).

Cost per iteration: one minibatch subgradient of the objective, one fused minibatch value and
subgradient per constraint (value and subgradient of constraint :math:`i` from the *same* rows, so
that the queue update linearises the sampled function), one projection. The loop is Python over the
terms' row oracles.
"""
from __future__ import annotations

import math

import numpy as np

from ..problems._protocol import require_constrained_problem
from .._results import SolveResult
from ._common import (
    constraint_rows, describe_seed, FEASIBILITY_TOLERANCE, make_objective_oracle, RowSampler, seeded_streams,
    start_point,
)
from ._run import SolverRun
from ._validation import check_optional_count, check_real
from ._output import WeightedAverage

__all__ = ["online_stochastic_subgradient"]


def _constraint_oracle(constraints, batch, rng):
    """Return ``eval(z, values, grads)``: estimates :math:`\\hat\\theta_i`, :math:`\\tilde\\zeta_i` into row ``i``.

    Terms that read no data (``n_samples == 0``) use their exact oracle; terms with their own
    sampling scheme (``sample_rows``) draw from it with this stream; the others share one uniform
    draw mapped to their own rows (`RowSampler`).
    """
    sampled = [i for i, c in enumerate(constraints) if c.n_samples > 0 and not hasattr(c, "sample_rows")]
    sampler = RowSampler([constraints[i].n_samples for i in sampled], batch, rng) if sampled else None
    slot = {i: s for s, i in enumerate(sampled)}

    def evaluate(z, values, grads):
        rows = sampler.draw() if sampler is not None else ()
        for i, c in enumerate(constraints):
            if i in slot:
                values[i] = c.value_and_subgradient_rows(z, rows[slot[i]], grads[i])
            elif c.n_samples > 0:
                values[i] = c.value_and_subgradient_rows(z, c.sample_rows(rng, batch), grads[i])
            else:
                values[i] = c.value_and_subgradient(z, grads[i])
    return evaluate


def online_stochastic_subgradient(problem, x0=None, *, max_iter, V=None, prox_weight=None, objective_batch_size=None,
                                  constraint_batch_size=None, feasibility_tolerance=FEASIBILITY_TOLERANCE, seed=0,
                                  record_every=None, callback=None, verbose=False) -> SolveResult:
    r"""Online stochastic subgradient method with virtual queues ([MLY20] Algorithm 3; Yu, Neely & Wei 2017).

    With :math:`z_0 = x_0`, :math:`Q_0^i = 0` and, at iteration :math:`k = 0..K-1`, stochastic values
    :math:`\hat\theta_i^k` and subgradients :math:`\tilde\zeta_i^k` of :math:`f_i` at :math:`z_k`
    (:math:`i = 0` the objective, :math:`i = 1..m` the constraints):

    .. math::

        z_{k+1} &= \operatorname*{argmin}_{z \in \mathcal X}
            \Bigl(V \tilde\zeta_0^k + \sum_{i=1}^m Q_k^i \tilde\zeta_i^k\Bigr)^\top (z - z_k)
            + \alpha \|z - z_k\|^2
          = \operatorname{proj}_{\mathcal X}\Bigl(z_k - \frac{V \tilde\zeta_0^k
            + \sum_i Q_k^i \tilde\zeta_i^k}{2\alpha}\Bigr), \\
        Q_{k+1}^i &= \max\bigl\{Q_k^i + \hat\theta_i^k + (\tilde\zeta_i^k)^\top (z_{k+1} - z_k),\ 0\bigr\},
        \quad i = 1..m,

    and the output is the uniform average :math:`\bar z = \frac1K \sum_{k=0}^{K-1} z_k` (includes
    :math:`z_0`, excludes :math:`z_K`). Inside IQRC, Theorem 3 gives, with probability
    :math:`1-\delta`, :math:`F(\bar z) - F(\hat x_t) \le B_1` and :math:`F_i(\bar z) \le B_2` with
    :math:`B_1, B_2 = O(\log(K/\delta)/\sqrt K)` ([MLY20] eqs. (24)–(29), Appendix A.4), so
    :math:`K = \tilde O(1/\hat\epsilon^4)` makes it an oracle of Definition 2.

    Parameters
    ----------
    problem : ConstrainedProblem
        Terms with row oracles (``value_and_subgradient_rows``); a term without them (e.g. a
        `custom_term` given only full oracles) is evaluated exactly, which makes the method
        deterministic for that term.
    x0 : array-like, optional
        :math:`z_0` (projected onto the domain); default ``problem.x0``.
    max_iter : int
        :math:`K`, a positive integer.
    V : float, optional
        Objective weight; default :math:`\sqrt K` (Algorithm 3).
    prox_weight : float, optional
        :math:`\alpha > 0`, the weight of the proximal term :math:`\alpha\|z - z_k\|^2` of the update
        (the paper's scaling, without a 1/2); default :math:`K` (Algorithm 3). The step is
        :math:`1/(2\alpha)` along :math:`V\tilde\zeta_0 + \sum_i Q_k^i\tilde\zeta_i`, so the objective
        step is :math:`V/(2\alpha) = 1/(2\sqrt K)` at the defaults.
    objective_batch_size : int, optional
        Rows of :math:`\hat\zeta_0` drawn uniformly with replacement (default 1; the paper leaves
        the size open).
    constraint_batch_size : int, optional
        Rows of each constraint's :math:`(\hat\theta_i, \tilde\zeta_i)` (default 1). One uniform
        draw is mapped to every constraint's rows, independently of the objective's draw.
    feasibility_tolerance : float
        :math:`\ge 0`. The run ends with ``"no_feasible_iterate"`` instead of ``"max_iter"`` when
        neither a recorded :math:`z_k` nor the output has :math:`g \le` this value (default 1e-5).
    seed : int >= 0, SeedSequence, Generator or None
        Objective and constraint batches use two independent streams spawned from it.
    record_every : int, optional
        History period; iteration :math:`K-1` is always recorded. Default None: the rule every
        solver shares (`fastcon.solvers._common.default_record_every`); a record reads the exact
        :math:`f` and :math:`g` (every row) while an iteration reads only its minibatches, so the
        default records few rows (often only the first and the last).
    callback : callable ``(k, z_{k+1}, info) -> bool``, optional
        ``info`` holds ``queues`` (:math:`Q_{k+1}`, a live buffer) and ``constraint_estimates``
        (:math:`\hat\theta^k`); True stops (status ``"callback_stop"``).
    verbose : bool
        Progress display.

    Returns
    -------
    SolveResult
        ``x`` = :math:`\bar z`; ``multipliers`` = :math:`Q_K / V`, the drift-plus-penalty estimate of
        the Lagrange multipliers (Yu et al.); ``info["queues"]`` = :math:`Q_K`. History columns:
        ``objective``, ``constraint`` and ``max_violation`` (exact values of the recorded problem at
        :math:`z_k`, evaluated outside the data-pass and time accounting), ``queue_norm``
        :math:`\|Q_k\|_2`, ``data_passes_f``, ``data_passes_g``. The status is ``"max_iter"``,
        ``"no_feasible_iterate"`` (``feasibility_tolerance``; the uniform average has no feasibility
        selection) or ``"callback_stop"``.
    """
    require_constrained_problem(problem, "online_stochastic_subgradient")
    # locals() is exactly the parameters here: forward them all to the implementation.
    return _online_stochastic_subgradient(**locals())


def _online_stochastic_subgradient(problem, x0=None, *, max_iter, V=None, prox_weight=None, objective_batch_size=None,
                                   constraint_batch_size=None, feasibility_tolerance=FEASIBILITY_TOLERANCE, seed=0,
                                   record_every=None, callback=None, verbose=False, record_problem=None) -> SolveResult:
    """`online_stochastic_subgradient` with ``record_problem``: the problem whose exact values the
    history records (default ``problem``). `proximal_point` solves subproblems but records the original
    problem.
    """
    run = SolverRun("online_stochastic_subgradient", max_iter, record_every=record_every, callback=callback,
                    verbose=verbose, feasibility_tolerance=feasibility_tolerance, seed=seed)
    K = run.max_iter
    V = math.sqrt(K) if V is None else check_real("V", V, positive=True)
    alpha = float(K) if prox_weight is None else check_real("prox_weight", prox_weight, positive=True)
    batch_f = check_optional_count("objective_batch_size", objective_batch_size) or 1
    batch_g = check_optional_count("constraint_batch_size", constraint_batch_size) or 1

    cons, m, d = problem.constraints, problem.n_constraints, problem.dim
    rec = problem if record_problem is None else record_problem
    z = start_point(problem, x0)
    rng_f, rng_g = seeded_streams(seed, 2)
    kind_f = "stochastic" if problem.objective.n_samples > 0 else "deterministic"
    eval_f = make_objective_oracle(problem, kind_f, batch_f, rng_f)
    eval_g = _constraint_oracle(cons, batch_g, rng_g)
    f_grad, direction, z_prev = np.empty(d), np.empty(d), np.empty(d)
    theta, queues, linear = np.empty(m), np.zeros(m), np.empty(m)
    grads = np.empty((m, d))
    grad_rows = [grads[i] for i in range(m)]  # row views made once: no allocation in the loop
    it_rows = (batch_f if problem.objective.n_samples > 0 else 0) + batch_g * sum(c.n_samples > 0 for c in cons)

    average = WeightedAverage(d)
    with run.start(problem, record_rows=rec.n_samples_f + constraint_rows(rec), iteration_rows=it_rows):
        info_cb = {"queues": queues, "constraint_estimates": theta}
        for k in range(K):
            eval_f(z, f_grad)                       # zeta~_0^k
            eval_g(z, theta, grad_rows)             # theta^_i^k, zeta~_i^k from the same rows
            if run.due(k):
                with run.meter:
                    f_rec = rec.f(z)
                    g_rec = rec.g(z)[0]
                run.offer(k, g_rec)  # smallest recorded exact g(z_k)
                run.record(k, force=True, objective=f_rec, constraint=g_rec, max_violation=max(0.0, g_rec),
                           queue_norm=float(np.sqrt(queues @ queues)))
            average.offer(k, z, 1.0)
            # z_{k+1} = proj_X(z_k - (V zeta~_0 + sum_i Q_k^i zeta~_i) / (2 alpha))
            np.dot(queues, grads, out=direction)
            f_grad *= V
            direction += f_grad
            direction *= 0.5 / alpha
            np.copyto(z_prev, z)
            z -= direction
            problem.project_inplace(z)
            # Q_{k+1}^i = max(Q_k^i + theta^_i + zeta~_i^T (z_{k+1} - z_k), 0)
            np.subtract(z, z_prev, out=direction)
            np.dot(grads, direction, out=linear)
            queues += theta
            queues += linear
            np.maximum(queues, 0.0, out=queues)
            if run.tick(k, z, info_cb, queue=lambda: float(queues.max(initial=0.0))):
                break

    x_out = average.x
    n = run.n_iter
    with run.meter:
        objective, g_out = problem.f(x_out), float(problem.g(x_out)[0])
    run.counters.add("objective_subgradients", n)
    run.counters.add("constraint_subgradients", m * n)
    info = {"V": V, "prox_weight": alpha, "queues": queues.copy(), "objective_batch_size": batch_f,
            "constraint_batch_size": batch_g, "output": "uniform_average", "seed": describe_seed(seed),
            "feasibility_tolerance": run.feasibility_tolerance, "best_constraint": run.offer(n, g_out)}
    return run.finish(x_out, objective=objective, max_violation=max(0.0, g_out), multipliers=queues / V, info=info,
                      message=f"ran {n} iterations; output = uniform average of z_0..z_{n - 1}",
                      subject="neither a recorded iterate nor the output")
