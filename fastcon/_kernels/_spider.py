r"""The compiled 3S-Econ iteration loop (Liu & Xu [LX25] Algorithm 1) and its seeded row samplers.

One call runs iterations ``k0 .. k1-1`` of

.. math::

    u_k = \begin{cases} t(x_k; \text{all } N_g \text{ rows}) & k \bmod q = 0 \\
          u_{k-1} + t(x_k; B_k) - t(x_{k-1}; B_k), \ |B_k| = S_2 & \text{otherwise}\end{cases}
    \qquad
    x_{k+1} = x_k - \alpha_k\big(\zeta_f + \beta\,\mathrm{clip}(\hat g_k/\nu, 0, 1)\,\zeta_g\big),

with :math:`t` the constraint datafit's statistic (`_datafit`). Batches come from a splitmix64 stream
and a partial Fisher-Yates shuffle; state, parameters and batches pass as ``NamedTuple`` records.
Design notes: docs/design.md, 'Module notes'.
"""
from typing import NamedTuple

import numpy as np

from ._datafit import (
    DatafitBuffers, DatafitBundle, datafit_value_grad, penalty_value_grad, statistic, statistic_grad,
    statistic_two_point,
)
from ._jit import njit
from ._linalg import JIT
from ._projections import project_ball

__all__ = ["spider_loop", "SpiderState", "SpiderParameters", "SpiderBatches", "rng_state", "next_uniform",
           "draw_rows", "COUNTERS"]

#: Layout of the float64 counter array updated by :func:`spider_loop`.
COUNTERS = ("data_passes_f", "data_passes_g", "rows_f_subgradient", "rows_g_subgradient", "rows_g_value",
            "rows_g_read", "refreshes", "penalty_active")
DPF, DPG, OGC, CGC, CFC, READ_G, REFRESH, ACTIVE = range(8)

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)


def rng_state(seed):
    """A splitmix64 state (``uint64[1]``) from an integer or a `numpy.random.SeedSequence`."""
    ss = seed if isinstance(seed, np.random.SeedSequence) else np.random.SeedSequence(seed)
    return ss.generate_state(1, dtype=np.uint64)


@njit(**JIT)
def next_uniform(state):
    """A uniform float in [0, 1) (53 bits) from the splitmix64 stream ``state``."""
    state[0] += _GOLDEN
    z = state[0]
    z = (z ^ (z >> np.uint64(30))) * _M1
    z = (z ^ (z >> np.uint64(27))) * _M2
    z = z ^ (z >> np.uint64(31))
    return (z >> np.uint64(11)) * (1.0 / 9007199254740992.0)


@njit(**JIT)
def draw_rows(state, perm, k, out, pos):
    """``out[pos:pos+k]`` = k distinct entries of ``perm``, uniformly (partial Fisher-Yates in place)."""
    n = perm.shape[0]
    for i in range(k):
        j = i + int(next_uniform(state) * (n - i))
        if j >= n:  # guard against a 1.0 from rounding
            j = n - 1
        t = perm[i]
        perm[i] = perm[j]
        perm[j] = t
        out[pos + i] = perm[i]


@njit(**JIT)
def _draw_batch(state, perm_a, k_a, perm_b, k_b, full, out):
    """A batch in ``out``: ``k_a`` rows of ``perm_a`` then ``k_b`` of ``perm_b`` (all rows if ``full``)."""
    if full:
        return out.shape[0]
    draw_rows(state, perm_a, k_a, out, 0)
    if k_b > 0:
        draw_rows(state, perm_b, k_b, out, k_a)
    return k_a + k_b


class SpiderState(NamedTuple):
    r"""What `spider_loop` updates in place: the iterate and everything carried between calls."""

    x: np.ndarray         #: float64 (d,) :math:`x_k`
    x_prev: np.ndarray    #: float64 (d,) :math:`x_{k-1}` (unused on entry when ``k0 % q == 0``)
    #: float64 (3,) ``[u_{k-1}, g_hat_{k-1}, w_{k-1}]``: the SPIDER estimate of the statistic, the
    #: constraint estimate :math:`\hat g` and the penalty weight of the last iteration
    est: np.ndarray
    grad: np.ndarray      #: float64 (d,) scratch for the search direction
    rng: np.ndarray       #: uint64 (1,) splitmix64 state (:func:`rng_state`)
    #: float64 (8,) incremented as named in :data:`COUNTERS` (see `spider_loop`)
    counters: np.ndarray


class SpiderParameters(NamedTuple):
    r"""The scalars of one 3S-Econ run."""

    q: int              #: refresh period
    step_size: float    #: :math:`\alpha_0`
    decay: bool         #: :math:`\alpha_k = \alpha_0/\sqrt{\max(1, k/q)}` instead of :math:`\alpha_0`
    beta: float         #: penalty :math:`\beta`
    nu: float           #: smoothing :math:`\nu`
    radius: float       #: radius of the ball centred at 0 the step is projected onto (0: none)
    penalty: int        #: penalty code of the objective (`_datafit.NO_PENALTY` or `_datafit.SCAD`)
    lam: float          #: :math:`\lambda` of the penalty
    g_abs: bool         #: :math:`\hat g = |u| - c` (GROUP_GAP) instead of :math:`u - c` (MARGIN)
    level: float        #: the constraint level :math:`c`


class SpiderBatches(NamedTuple):
    """One datafit of `spider_loop` with its row sampler and scratch."""

    datafit: DatafitBundle  #: the rows and the kind (`_datafit.datafit_bundle`)
    #: int64 (4,) ``[k_a, k_b, full, N]``: rows drawn from ``perm_a`` and ``perm_b`` per batch (group
    #: p and u for two-group datafits; ``k_b = 0`` otherwise), or (``full``) all rows; the row count
    sizes: np.ndarray
    perm_a: np.ndarray      #: int64 permutation the sampler shuffles in place
    perm_b: np.ndarray      #: int64, as ``perm_a`` (empty for one-group datafits)
    rows: np.ndarray        #: int64 batch buffer (all rows, in order, when full)
    all_rows: np.ndarray    #: int64 (N,) all rows in order: the refreshes of the constraint (objective: unused)
    bufs: DatafitBuffers    #: `_datafit.datafit_buffers` scratch for ``rows`` (constraint: for all N rows)


@njit(**JIT)
def spider_loop(state, k0, k1, params, objective, constraint):
    r"""Iterations ``k0 .. k1-1`` of 3S-Econ; updates the arrays of ``state`` in place.

    Parameters
    ----------
    state : SpiderState
        :math:`x_k`, :math:`x_{k-1}`, the estimates, scratch, the random stream and the counters.
    k0, k1 : int
        First and past-the-last iteration.
    params : SpiderParameters
        Step :math:`\alpha_k = \alpha_0` or (``decay``) :math:`\alpha_0/\sqrt{\max(1, k/q)}`;
        penalty :math:`\beta`, smoothing :math:`\nu`; ball radius; objective penalty; constraint level.
    objective, constraint : SpiderBatches
        The objective datafit and the constraint's; :math:`\hat g = |u| - c` if ``params.g_abs``
        else :math:`u - c`.

    Notes
    -----
    ``state.counters`` is incremented as named in :data:`COUNTERS`: paper-convention data passes (a
    full value or subgradient pass counts 1; a small batch counts :math:`|B|/N` once for the
    two-point values and the subgradient on it; :math:`\zeta_g` counted every iteration as
    Algorithm 1 computes it), per-sample oracle counts (two-point values count twice), constraint
    rows actually read (:math:`\zeta_g` is skipped when the penalty weight is 0: the iterate is the
    same), refreshes and iterations with a positive weight.
    """
    x, x_prev, est, grad, rng, counters = state.x, state.x_prev, state.est, state.grad, state.rng, state.counters
    q, alpha0, decay, beta, nu, radius = params.q, params.step_size, params.decay, params.beta, params.nu, params.radius
    pen, lam, g_abs, level = params.penalty, params.lam, params.g_abs, params.level
    fb, f_sizes, perm_fa, perm_fb, rows_f, bufs_f = (objective.datafit, objective.sizes, objective.perm_a,
                                                     objective.perm_b, objective.rows, objective.bufs)
    gb, g_sizes, perm_ga, perm_gb, rows_g, all_g, bufs_g = (constraint.datafit, constraint.sizes, constraint.perm_a,
                                                            constraint.perm_b, constraint.rows, constraint.all_rows,
                                                            constraint.bufs)
    n_f = f_sizes[3]
    n_g = all_g.shape[0]
    small_g = g_sizes[0] + g_sizes[1]
    g_full = g_sizes[2] != 0
    f_full = f_sizes[2] != 0
    d = x.shape[0]
    for k in range(k0, k1):
        alpha = alpha0 / np.sqrt(max(1.0, k / q)) if decay else alpha0
        refresh = k % q == 0
        # ---- SPIDER estimate of the constraint statistic
        if refresh:
            est[0] = statistic(gb, x, all_g, n_g, bufs_g)
            counters[DPG] += 1.0
            counters[CFC] += n_g
            counters[READ_G] += n_g
            counters[REFRESH] += 1.0
        else:
            nb = _draw_batch(rng, perm_ga, g_sizes[0], perm_gb, g_sizes[1], g_full, rows_g)
            t, t0 = statistic_two_point(gb, x, x_prev, rows_g, nb, bufs_g)
            est[0] += t - t0
            counters[DPG] += nb / n_g
            counters[CFC] += 2.0 * nb
            counters[READ_G] += nb
        u = est[0]
        g_hat = (abs(u) if g_abs else u) - level
        w = min(1.0, max(0.0, g_hat / nu))
        est[1] = g_hat
        est[2] = w
        sign = 1.0 if u > 0.0 else (-1.0 if u < 0.0 else 0.0)
        for i in range(d):
            grad[i] = 0.0
        # ---- constraint subgradient on the iteration's batch (refresh: a fresh batch, or all rows)
        if refresh:
            if g_full:
                counters[DPG] += 1.0
                counters[CGC] += n_g
                if w > 0.0:
                    counters[READ_G] += n_g
                    statistic_grad(gb, all_g, n_g, sign, beta * w, grad, bufs_g)
            else:
                nb = _draw_batch(rng, perm_ga, g_sizes[0], perm_gb, g_sizes[1], False, rows_g)
                counters[DPG] += nb / n_g
                counters[CGC] += nb
                if w > 0.0:
                    counters[READ_G] += nb
                    statistic(gb, x, rows_g, nb, bufs_g)
                    statistic_grad(gb, rows_g, nb, sign, beta * w, grad, bufs_g)
        else:
            counters[CGC] += small_g if not g_full else n_g
            if w > 0.0:
                statistic_grad(gb, rows_g, small_g if not g_full else n_g, sign, beta * w, grad, bufs_g)
        if w > 0.0:
            counters[ACTIVE] += 1.0
        # ---- objective subgradient (minibatch datafit + full penalty)
        nf = _draw_batch(rng, perm_fa, f_sizes[0], perm_fb, f_sizes[1], f_full, rows_f)
        datafit_value_grad(fb, x, rows_f, nf, True, 1.0, grad, bufs_f)
        penalty_value_grad(pen, lam, x, True, grad)
        counters[DPF] += nf / n_f
        counters[OGC] += nf
        # ---- step (and the optional ball)
        norm2 = 0.0
        for i in range(d):
            x_prev[i] = x[i]
            x[i] -= alpha * grad[i]
            norm2 += x[i] * x[i]
        if radius > 0.0 and (norm2 > radius * radius or norm2 == np.inf):
            if norm2 < np.inf:
                s = radius / np.sqrt(norm2)
                for i in range(d):
                    x[i] *= s
            else:
                project_ball(x, radius, None)  # ||x||^2 overflowed (s would be 0): scale before squaring
    return 0
