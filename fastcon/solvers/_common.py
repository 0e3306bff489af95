"""Pieces every solver loop shares: seeded random streams, minibatch row sampling, data-pass
metering that excludes history-only evaluations, argument checks and the optional stationarity
certificate."""
from __future__ import annotations

import math
import time

import numpy as np

from .._results import Counters
from ..problems._validation import check_choice  # noqa: F401  (the solvers' argument check)
from ._validation import check_schedule
from .stationarity import near_stationarity


#: Default absolute tolerance on :math:`g = \max_i g_i` below which an iterate counts as feasible for the
#: status of solvers without a switching tolerance of their own (ConEx, IPP, 3S-Econ, the online method):
#: the default :math:`\epsilon_t` of `switching_subgradient` and the level docs/design.md holds ConEx-type
#: methods to. It decides ``"no_feasible_iterate"`` only; it never changes the iterates.
FEASIBILITY_TOLERANCE = 1e-5


#: ``record_every=None`` aims at about this many history rows per run (`default_record_every`).
DEFAULT_RECORDS = 100

#: ``record_every=None`` lets the history read at most this fraction of the rows the iterations read.
RECORD_BUDGET = 0.1


def default_record_every(max_iter, record_rows, iteration_rows) -> int:
    r"""The history period that ``record_every=None`` stands for, the same rule in every solver.

    .. math::

        p = \min\Bigl(K,\ \max\Bigl(\Bigl\lceil \frac{K}{100} \Bigr\rceil,\
        \Bigl\lceil \frac{r_{\mathrm{rec}}}{0.1\, r_{\mathrm{it}}} \Bigr\rceil\Bigr)\Bigr)

    About 100 rows per run of :math:`K` iterations (a row's Python bookkeeping is then about 1% of
    the loop's), and fewer when a row reads data: ``record_rows`` :math:`r_{\mathrm{rec}}` is the
    number of data rows one record reads *beyond* what the iteration computes anyway (exact values
    only the history needs), ``iteration_rows`` :math:`r_{\mathrm{it}}` the rows one iteration reads
    at least. The records then read at most a tenth of what the iterations read; rows stand for
    time because every pass over a row costs about the same (a minibatch row costs more than a
    row of a full pass, so the rule errs on the cheap side for stochastic methods). With
    :math:`p = K` only the first and the last iteration are recorded.

    Parameters
    ----------
    max_iter : int
        :math:`K \ge 1`.
    record_rows, iteration_rows : float
        :math:`r_{\mathrm{rec}} \ge 0`, :math:`r_{\mathrm{it}} \ge 0`.

    Returns
    -------
    int
        The period :math:`p \in [1, K]`.
    """
    K = int(max_iter)
    every = math.ceil(K / DEFAULT_RECORDS)
    if record_rows > 0:
        every = max(every, K if iteration_rows <= 0 else math.ceil(record_rows / (RECORD_BUDGET * iteration_rows)))
    return max(1, min(K, every))


def constraint_rows(problem) -> int:
    """Rows one exact pass over every constraint reads (``ConstrainedProblem.n_samples_g`` is the max)."""
    return int(sum(c.n_samples for c in problem.constraints))


def average_weight_values(weights, n, step_sizes):
    r"""The weights :math:`\gamma_0..\gamma_{n-1}` of an ``output="average"`` rule (``average_weights``).

    ``"step_size"``: the primal step sizes ``step_sizes``; ``"linear"``: :math:`t + 1`; otherwise a
    float or a schedule of ``t``, finite and :math:`\ge 0` (`check_schedule`).
    """
    if isinstance(weights, str):
        check_choice("average_weights", weights, ("step_size", "linear"))
        return np.asarray(step_sizes, dtype=np.float64) if weights == "step_size" else np.arange(1.0, n + 1.0)
    return check_schedule("average_weights", weights, n)


def as_seed_sequence(seed):
    """``seed`` (int >= 0, SeedSequence, Generator or None) as a `SeedSequence`.

    A SeedSequence is returned as is; a Generator is drawn from once (four 64-bit words), so one
    Generator state gives one result and successive solves sharing a Generator differ; None takes
    fresh OS entropy.
    """
    if isinstance(seed, np.random.SeedSequence):
        return seed
    if isinstance(seed, np.random.Generator):
        return np.random.SeedSequence(seed.integers(0, 2 ** 63, size=4, dtype=np.int64).tolist())
    return np.random.SeedSequence(seed)


def seeded_streams(seed, n):
    """``n`` independent generators from ``seed`` (see `as_seed_sequence`), without mutating a SeedSequence."""
    ss = as_seed_sequence(seed)
    return [np.random.Generator(np.random.PCG64(
        np.random.SeedSequence(ss.entropy, spawn_key=tuple(ss.spawn_key) + (i,)))) for i in range(n)]


def describe_seed(seed):
    """``seed`` for ``SolveResult.info`` (JSON-ready): the int, None, or the type's name."""
    if seed is None or isinstance(seed, (int, np.integer)) and not isinstance(seed, bool):
        return None if seed is None else int(seed)
    return type(seed).__name__


def no_feasible_message(best_g, tolerance, subject="no iterate"):
    """The message of status ``"no_feasible_iterate"``: the best violation reached and what to do next."""
    return (f"{subject} met the feasibility tolerance: the smallest constraint value reached is "
            f"g = {best_g:.6g} > {tolerance:.3g}. The constraint may be infeasible: "
            "fastcon.solvers.check_feasibility(problem) minimises g over the domain and, for convex "
            "constraints, certifies infeasibility with a lower bound on min g")


class RowSampler:
    """Uniform rows with replacement for terms of sizes ``sizes``: ``rows_k = floor(u * n_k)``.

    One uniform vector per draw serves every term, so constraints on the same data share a batch.
    """

    def __init__(self, sizes, batch, rng):
        batch = int(batch)
        if batch < 1:
            raise ValueError(f"batch_size: must be a positive integer, got {batch}")
        self.rng = rng
        self.u = np.empty(batch)
        self.scaled = np.empty(batch)
        self.sizes = [int(n) for n in sizes]
        self.rows = [np.empty(batch, dtype=np.int64) for _ in self.sizes]

    def draw(self):
        self.rng.random(out=self.u)
        for n, rows in zip(self.sizes, self.rows):
            np.multiply(self.u, n, out=self.scaled)
            np.copyto(rows, self.scaled, casting="unsafe")  # truncation = floor, u >= 0
            np.minimum(rows, n - 1, out=rows)  # guard the round-up of u*n to n
        return self.rows


class PassMeter:
    """Algorithm data passes and time, excluding what is evaluated inside ``with meter:``."""

    def __init__(self, problem):
        self.problem = problem
        self.n_f, self.n_g = problem.n_samples_f, problem.n_samples_g
        self.f0, self.g0 = problem.rows_read_f, problem.rows_read_g
        self.excluded_f = self.excluded_g = 0
        self.excluded_time = 0.0
        self.t0 = time.perf_counter()

    def __enter__(self):
        self._snap = (self.problem.rows_read_f, self.problem.rows_read_g, time.perf_counter())
        return self

    def __exit__(self, *exc):
        f, g, t = self._snap
        self.excluded_f += self.problem.rows_read_f - f
        self.excluded_g += self.problem.rows_read_g - g
        self.excluded_time += time.perf_counter() - t

    @property
    def rows_f(self):
        return self.problem.rows_read_f - self.f0 - self.excluded_f

    @property
    def rows_g(self):
        return self.problem.rows_read_g - self.g0 - self.excluded_g

    def passes(self):
        return (self.rows_f / self.n_f if self.n_f else 0.0, self.rows_g / self.n_g if self.n_g else 0.0)

    def elapsed(self):
        return time.perf_counter() - self.t0 - self.excluded_time

    def counters(self):
        c = Counters(self.n_f, self.n_g)
        c.values["rows_f"], c.values["rows_g"] = self.rows_f, self.rows_g
        return c


def start_point(problem, x0):
    x = problem.check_x(problem.x0 if x0 is None else x0, "x0").copy()
    problem.project_inplace(x)
    return x


def stationarity_certificate(problem, x, rho_hat):
    return float(near_stationarity(problem, x, rho_hat)[0])


def make_objective_oracle(problem, kind, batch, rng):
    """Return ``eval(x, out) -> value`` (a minibatch estimate when stochastic)."""
    if kind == "deterministic":
        return problem.f_and_subgradient
    term = problem.objective
    if hasattr(term, "sample_rows"):
        # The term knows its own sampling scheme ([HL23] §6.2's Wasserstein oracle draws B rows per
        # group without replacement; uniform draws could miss a group): use it with our stream.
        def evaluate_own(x, out):
            return term.value_and_subgradient_rows(x, term.sample_rows(rng, batch), out)
        return evaluate_own
    sampler = RowSampler([term.n_samples], 1 if batch is None else batch, rng)

    def evaluate(x, out):
        return term.value_and_subgradient_rows(x, sampler.draw()[0], out)
    return evaluate


# ---------------------------------------------------------------------------- the solver
