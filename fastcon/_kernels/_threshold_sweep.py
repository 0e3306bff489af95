r"""Threshold sweeps: group means of :math:`\sigma(s_i - \theta_j)` over a grid, and hard ROC gaps.

The smoothed ROC-fairness objective of Huang & Lin [HL23] (eq. 11) needs the logistic sigmoid
:math:`\sigma(s_i - \theta_j)` for every threshold of a grid and every score. Splitting the exponent
at an anchor :math:`c` of the grid, :math:`\sigma(s - \theta_j) = 1/(1 + a f_j)` with
:math:`a = e^{c - s}` and :math:`f_j = e^{\theta_j - c}`, costs one ``exp`` per sample (grid blocks of
span at most :data:`MAX_BLOCK_SPAN` avoid overflow), and four samples share one division. Results
agree with the exp-per-pair formula to a few ulps and do not depend on the number of threads. The
hard gaps use the indicator :math:`\mathbb I(s \ge \theta)` and sorted groups.
Design notes: docs/design.md, 'Module notes'; measurements: docs/measurements.md.
"""
import numpy as np
from numba import prange

from ._jit import njit
from ._linalg import JIT, JIT_PARALLEL, _chunk_span, n_chunks_for

__all__ = [
    "MAX_BLOCK_SPAN", "QUAD_SAFE", "grid_blocks", "sweep_workspace",
    "sigmoid_sweep", "sigmoid_prime_weights",
    "hard_roc_gap_exact", "hard_roc_gap_grid",
]

#: Largest :math:`\theta_j - c_b` within one block; keeps :math:`f_j` finite and the underflow
#: argument of the module docstring valid (that needs a span below 671).
MAX_BLOCK_SPAN = 350.0
#: Four samples share one division when every :math:`a f_j` of the block is at most this: the
#: product of four denominators then stays below :math:`(1 + 10^{70})^4 \ll 1.8\cdot10^{308}`.
QUAD_SAFE = 1e70

_ONE, _TWO, _THREE, _FOUR = np.uint64(1), np.uint64(2), np.uint64(3), np.uint64(4)


# --------------------------------------------------------------------------- set-up (Python, once per grid)
def grid_blocks(thresholds):
    r"""Blocks, anchors and factors of a threshold grid (see the module docstring).

    Consecutive thresholds are grouped greedily while the block's span stays within
    :data:`MAX_BLOCK_SPAN`; an increasing grid of span :math:`S` gets :math:`\lceil S/350 \rceil`
    blocks (one for any practical grid), an unordered one possibly more.

    Parameters
    ----------
    thresholds : ndarray of float64, shape (m,)
        Finite, any order.

    Returns
    -------
    starts : ndarray of uint64, shape (n_blocks + 1,)
        Block ``b`` holds thresholds ``starts[b]:starts[b + 1]``.
    anchors : ndarray of float64, shape (n_blocks,)
        :math:`c_b`, the smallest threshold of block ``b``.
    tops : ndarray of float64, shape (n_blocks,)
        :math:`\max_{j \in b} f_j = e^{\max_b \theta - c_b}`.
    factors : ndarray of float64, shape (m,)
        :math:`f_j = e^{\theta_j - c_{b(j)}} \in [1, e^{350}]`.
    """
    t = np.asarray(thresholds, dtype=np.float64)
    starts, anchors, tops = [0], [], []
    lo = hi = t[0]
    for j in range(1, t.shape[0]):
        nlo, nhi = min(lo, t[j]), max(hi, t[j])
        if nhi - nlo > MAX_BLOCK_SPAN:
            starts.append(j)
            anchors.append(lo)
            tops.append(hi)
            nlo = nhi = t[j]
        lo, hi = nlo, nhi
    starts.append(t.shape[0])
    anchors.append(lo)
    tops.append(hi)
    starts = np.asarray(starts, dtype=np.uint64)
    anchors = np.asarray(anchors)
    block_of = np.repeat(np.arange(anchors.size), np.diff(starts).astype(np.int64))
    factors = np.exp(t - anchors[block_of])
    return starts, anchors, np.exp(np.asarray(tops) - anchors), factors


def sweep_workspace(n_samples, n_thresholds):
    """Zeroed per-chunk accumulators ``(n_chunks, n_thresholds)``; the chunk count depends on sizes only."""
    n_chunks = n_chunks_for(int(n_samples), int(n_samples) * int(n_thresholds), int(n_thresholds))
    return np.zeros((n_chunks, int(n_thresholds)))


# --------------------------------------------------------------------------- the sweep (numba)
@njit(inline="always")
def _block_single(a, factors, jb, je, acc):
    """One sample's block, one division per pair (``a = inf`` means sigma = 0: skip)."""
    if a == np.inf:
        return
    for j in range(jb, je):
        acc[j] += 1.0 / (1.0 + a * factors[j])


@njit(inline="always")
def _sample(si, starts, anchors, factors, acc):
    for b in range(anchors.shape[0]):
        _block_single(np.exp(anchors[b] - si), factors, starts[b], starts[b + _ONE], acc)


@njit(inline="always")
def _quad(s, i, starts, anchors, tops, factors, acc):
    """Samples ``i..i+3``: one division per four sigmoids where the block allows it."""
    for b in range(anchors.shape[0]):
        c = anchors[b]
        jb, je = starts[b], starts[b + _ONE]
        a1 = np.exp(c - s[i])
        a2 = np.exp(c - s[i + _ONE])
        a3 = np.exp(c - s[i + _TWO])
        a4 = np.exp(c - s[i + _THREE])
        if max(max(a1, a2), max(a3, a4)) * tops[b] <= QUAD_SAFE:
            for j in range(jb, je):
                f = factors[j]
                d1 = 1.0 + a1 * f
                d2 = 1.0 + a2 * f
                d3 = 1.0 + a3 * f
                d4 = 1.0 + a4 * f
                d12 = d1 * d2
                d34 = d3 * d4
                acc[j] += (d12 * (d3 + d4) + d34 * (d1 + d2)) / (d12 * d34)
        else:
            _block_single(a1, factors, jb, je, acc)
            _block_single(a2, factors, jb, je, acc)
            _block_single(a3, factors, jb, je, acc)
            _block_single(a4, factors, jb, je, acc)


@njit(inline="always")
def _sweep_span(s, starts, anchors, tops, factors, acc, lo, hi):
    acc[:] = 0.0
    i = lo
    while i + _FOUR <= hi:
        _quad(s, i, starts, anchors, tops, factors, acc)
        i += _FOUR
    while i < hi:
        _sample(s[i], starts, anchors, factors, acc)
        i += _ONE


@njit(**JIT_PARALLEL)
def sigmoid_sweep(s, starts, anchors, tops, factors, out, scratch):
    r"""Means :math:`\mathrm{out}_j = \frac1n \sum_i \sigma(s_i - \theta_j)` with one exp per sample.

    Parameters
    ----------
    s : ndarray of float64, shape (n,)
        Scores, finite, n >= 1.
    starts, anchors, tops, factors
        The grid, from :func:`grid_blocks`.
    out : ndarray of float64, shape (m,)
        Overwritten with the means.
    scratch : ndarray of float64, shape (n_chunks, m)
        Per-chunk accumulators (:func:`sweep_workspace`); its row count fixes the chunking.
    """
    n = s.shape[0]
    n_chunks = scratch.shape[0]
    # Always the prange loop, even for one chunk: the same loop in a serial branch ran slower
    # (docs/measurements.md); the parallel compilation of the chunk body vectorizes the threshold loop, the serial one did not.
    for c in prange(n_chunks):
        lo, hi = _chunk_span(c, n_chunks, n)
        _sweep_span(s, starts, anchors, tops, factors, scratch[c], lo, hi)
    # Reduce in chunk order (thread-count independent), then scale to means.
    out[:] = 0.0
    for c in range(n_chunks):
        for j in range(out.shape[0]):
            out[j] += scratch[c, j]
    inv = 1.0 / n
    for j in range(out.shape[0]):
        out[j] *= inv


@njit(**JIT)
def sigmoid_prime_weights(s, theta, scale, out):
    r"""``out[i] = scale * sigma'(s_i - theta)``, :math:`\sigma' = \sigma(1-\sigma) = e^{-|z|}/(1+e^{-|z|})^2`.

    The form with :math:`e^{-|z|}` keeps full relative precision in both tails, where
    :math:`\sigma(1-\sigma)` would cancel. One exp per sample: a serial loop is enough.
    """
    for i in range(s.shape[0]):
        e = np.exp(-abs(s[i] - theta))
        q = 1.0 + e
        out[i] = scale * (e / (q * q))


# --------------------------------------------------------------------------- hard indicator (NumPy)
def _rates_at_least(sorted_s, thresholds):
    """:math:`P(s \\ge \\theta)` for each threshold, from sorted scores (binary search)."""
    n = sorted_s.shape[0]
    return (n - np.searchsorted(sorted_s, thresholds, side="left")) / n


def hard_roc_gap_grid(s_p, s_u, thresholds):
    r"""Hard ROC gap on a grid: :math:`\max_j |P_p(s \ge \theta_j) - P_u(s \ge \theta_j)|`.

    Sorts each group once and binary-searches the thresholds: :math:`O(n \log n + m \log n)`.

    Returns
    -------
    gap : float
    index : int
        First maximising index into ``thresholds``.
    """
    sp_, su_ = np.sort(s_p), np.sort(s_u)
    diff = np.abs(_rates_at_least(sp_, thresholds) - _rates_at_least(su_, thresholds))
    j = int(np.argmax(diff))
    return float(diff[j]), j


def hard_roc_gap_exact(s_p, s_u):
    r"""Hard ROC gap over all thresholds :math:`\theta \in \mathbb R` (Vogel et al.; [HL23] §6.1).

    :math:`\theta \mapsto P_g(s \ge \theta)` is a left-continuous step function that only changes at
    the scores, so the supremum is attained at one of the scores (below all scores, and above them,
    both rates are equal). This is a two-sample Kolmogorov–Smirnov statistic; :math:`O(n \log n)`.

    Returns
    -------
    gap : float
    theta : float
        The smallest maximising score.
    """
    candidates = np.unique(np.concatenate([s_p, s_u]))
    gap, j = hard_roc_gap_grid(s_p, s_u, candidates)
    return gap, float(candidates[j])
