r"""Per-row kernels of linear models in score space: losses, smoothed group rates, 1-D transport.

A linear model's terms depend on the data only through the scores :math:`z = Xw + b`, so one
matrix-vector product serves the loss and every constraint, and one :math:`X^\top v` the gradient
(`fastcon.problems.LinearModelProblem`). The kernels here are the :math:`O(n)` and
:math:`O(n\,m)` row loops between the two products: `weighted_margin_loss`, `cell_sigmoid_sums`,
`cell_step_sums` (hard rates), `cell_sigmoid_vjp` (their transpose) and `transport_gap` (the exact
Wasserstein-1 distance of two empirical score laws and its subgradient).
Design notes: docs/design.md, 'Module notes'.
"""
import numpy as np

from ._jit import njit
from ._losses import LOGISTIC, SIGMOID, logistic, margin_loss, sigmoid

__all__ = ["weighted_margin_loss", "cell_sigmoid_sums", "cell_step_sums", "cell_sigmoid_vjp", "transport_gap"]


@njit(cache=True)
def weighted_margin_loss(loss, z, y, weight, v):
    r""":math:`\sum_i c_i \phi(y_i z_i)`; writes :math:`v_i = c_i y_i \phi'(y_i z_i)`.

    Parameters
    ----------
    loss : int
        A loss code of `fastcon._kernels._losses` (``HINGE``, ``LOGISTIC``, ...).
    z, y, weight : float64[n]
        Scores, labels in {-1, +1}, row weights :math:`c_i \ge 0` (0 leaves the row out).
    v : float64[n]
        Output, overwritten.

    The smooth losses run as two loops: a branch-free one over all rows (``logistic`` of `_losses`
    vectorises) into a buffer, then the weighted sum (a float reduction, which would keep the first
    loop from vectorising if it were inside it; docs/measurements.md).
    """
    n = z.shape[0]
    if loss == LOGISTIC or loss == SIGMOID:
        phi = np.empty(n)
        if loss == LOGISTIC:
            for i in range(n):
                phi[i], v[i] = logistic(y[i] * z[i])
        else:
            for i in range(n):
                phi[i], v[i] = sigmoid(y[i] * z[i])
        total = 0.0
        for i in range(n):
            total += weight[i] * phi[i]
            v[i] *= weight[i] * y[i]
        return total
    total = 0.0
    for i in range(n):
        c = weight[i]
        if c == 0.0:
            v[i] = 0.0
            continue
        value, slope = margin_loss(loss, y[i] * z[i])
        total += c * value
        v[i] = c * y[i] * slope
    return total


#: Largest span of one anchor block, in units of tau: f_j = e^{(theta_j - anchor)/tau} <= e^350.
MAX_BLOCK_SPAN = 350.0


@njit(inline="always")
def _grid_blocks(thresholds, inv_tau):
    """Blocks of consecutive thresholds (ascending) spanning at most `MAX_BLOCK_SPAN` in units of tau.

    Returns ``(starts, anchors, factors)``: block ``b`` holds thresholds ``starts[b]:starts[b + 1]``,
    its anchor is ``thresholds[starts[b]] / tau``, and ``factors[j] = exp(thresholds[j] / tau -
    anchor) >= 1`` for the thresholds of that block.
    """
    m = thresholds.shape[0]
    starts = np.empty(m + 1, dtype=np.int64)
    anchors = np.empty(m)
    factors = np.empty(m)
    n_blocks = 0
    j = 0
    while j < m:
        starts[n_blocks] = j
        anchors[n_blocks] = thresholds[j] * inv_tau
        j0 = j
        while j < m and (thresholds[j] - thresholds[j0]) * inv_tau <= MAX_BLOCK_SPAN:
            factors[j] = np.exp(thresholds[j] * inv_tau - anchors[n_blocks])
            j += 1
        n_blocks += 1
    starts[n_blocks] = m
    return starts[:n_blocks + 1], anchors[:n_blocks], factors


@njit(cache=True, error_model="numpy")
def cell_sigmoid_sums(z, cell, weight, inv_tau, thresholds, sums):
    r""":math:`S_{cj} = \sum_{i:\,c(i) = c} c_i\,\sigma((z_i - \theta_j)/\tau)`, written into ``sums`` (n_cells, m).

    ``weight`` holds the row weights :math:`c_i`; ``thresholds`` ascending. Rows with a negative
    cell id belong to no cell and are skipped. One exponential per row and block of thresholds (the
    factoring of `fastcon._kernels._threshold_sweep`): with the block's anchor :math:`c` (its
    smallest threshold), :math:`\sigma((z - \theta_j)/\tau) = 1/(1 + a f_j)`,
    :math:`a = e^{(c - z)/\tau}`, :math:`f_j = e^{(\theta_j - c)/\tau} \in [1, e^{350}]` (blocks
    span at most :math:`350\tau`: one block for any practical grid). ``a = inf`` gives 0 (true
    value below 1e-152); ``a = 0`` gives 1 (exact in float64 there). The pair loop has no branch and
    one division, so it vectorises.
    """
    sums[:, :] = 0.0
    starts, anchors, f = _grid_blocks(thresholds, inv_tau)
    m = thresholds.shape[0]
    single = anchors.shape[0] == 1
    for i in range(z.shape[0]):
        c = cell[i]
        if c < 0:
            continue
        w = weight[i]
        t = z[i] * inv_tau
        row = sums[c]
        if single:      # a loop over range(m): LLVM vectorises it, not one over array bounds (-25%)
            a = np.exp(anchors[0] - t)
            for j in range(m):
                row[j] += w / (1.0 + a * f[j])
            continue
        for b in range(anchors.shape[0]):
            a = np.exp(anchors[b] - t)
            for j in range(starts[b], starts[b + 1]):
                row[j] += w / (1.0 + a * f[j])


@njit(cache=True)
def cell_step_sums(z, cell, weight, thresholds, sums):
    r""":math:`S_{cj} = \sum_{i:\,c(i) = c} c_i\,[z_i > \theta_j]`, written into ``sums`` (n_cells, m).

    The hard counterpart of `cell_sigmoid_sums` (a row at :math:`z_i = \theta_j` counts as below,
    as ``predict`` labels a score of 0 negative); rows with a negative cell id are skipped. One
    pass over the rows, read once per boosting round (`fastcon.boosting._rate_fit`), instead of
    NumPy's ``bincount`` over a boolean temporary per threshold (docs/measurements.md).
    """
    sums[:, :] = 0.0
    m = thresholds.shape[0]
    for i in range(z.shape[0]):
        c = cell[i]
        if c < 0:
            continue
        w = weight[i]
        t = z[i]
        row = sums[c]
        for j in range(m):
            if t > thresholds[j]:
                row[j] += w


# error_model="numpy": no zero-division test in the pair loops (every denominator is >= 1), which
# would keep LLVM from vectorising them
@njit(cache=True, error_model="numpy")
def cell_sigmoid_vjp(z, cell, weight, inv_tau, thresholds, coef, v):
    r""":math:`v_i \mathrel{+}= c_i\tau^{-1}\sum_j C_{c(i) j}\,\sigma'((z_i - \theta_j)/\tau)`, row weights :math:`c_i`.

    Parameters
    ----------
    coef : float64[n_cells, k]
        The cell coefficients :math:`C` (the vector-Jacobian product of the rates) of the
        thresholds ``thresholds`` (ascending; callers pass only the columns that are not all zero).

    Same blocks as `cell_sigmoid_sums`, with :math:`\sigma' = \sigma(1 - \sigma) = u\,s^2`,
    :math:`s = 1/(1 + u)`, :math:`u = a f_j`: one division per pair and no cancellation. ``u`` is
    capped at 1e300 so that an overflowed :math:`u = \infty` gives :math:`\sigma' \approx 10^{-300}`
    instead of :math:`\infty \cdot 0`; :math:`u = 0` gives 0.
    """
    starts, anchors, f = _grid_blocks(thresholds, inv_tau)
    m = thresholds.shape[0]
    single = anchors.shape[0] == 1
    for i in range(z.shape[0]):
        c = cell[i]
        if c < 0:
            continue
        row = coef[c]
        t = z[i] * inv_tau
        acc = 0.0
        if single:
            a = np.exp(anchors[0] - t)
            for j in range(m):
                u = min(a * f[j], 1e300)
                s = 1.0 / (1.0 + u)
                acc += row[j] * (s * (u * s))
        else:
            for b in range(anchors.shape[0]):
                a = np.exp(anchors[b] - t)
                for j in range(starts[b], starts[b + 1]):
                    u = min(a * f[j], 1e300)
                    s = 1.0 / (1.0 + u)
                    acc += row[j] * (s * (u * s))
        v[i] += acc * (weight[i] * inv_tau)


@njit(cache=True)
def transport_gap(z, sorted_a, sorted_b, huber, coef, v):
    r"""Wasserstein-1 distance between the score laws of two row sets; with ``coef != 0`` adds ``coef``
    times its subgradient to ``v``.

    .. math::

        W_1 = \int_0^1 |Q_a(u) - Q_b(u)|\,du,\qquad
        \frac{\partial W_1}{\partial z_{a,(k)}} = \int_{(k-1)/n_a}^{k/n_a}\mathrm{sign}(Q_a - Q_b)\,du,

    with :math:`Q` the empirical quantile functions and :math:`z_{a,(k)}` the k-th smallest score of
    the rows of a (and symmetrically for b, with the opposite sign). ``sorted_a`` and ``sorted_b``
    are the two row sets **ordered by score** (ascending; the caller sorts, and can start from the
    previous order, which is nearly sorted between iterates). With ``huber`` :math:`= \mu > 0`
    the absolute value is Huber's :math:`\psi_\mu(d) = d^2/(2\mu)` for :math:`|d| \le \mu`, else
    :math:`|d| - \mu/2` (derivative :math:`\mathrm{clip}(d/\mu, -1, 1)`): the value drops by at most
    :math:`\mu/2` and the function becomes once differentiable (at a swap of two scores of a group
    the two matchings have equal gradients), which quasi-Newton methods need. The quantile breakpoints
    :math:`k/n_a` and :math:`l/n_b` are merged in integer units of :math:`1/(n_a n_b)`, so every
    interval length is exact.
    """
    na = sorted_a.shape[0]
    nb = sorted_b.shape[0]
    scale = 1.0 / (float(na) * float(nb))
    total = 0.0
    ka = 0
    kb = 0
    pos = 0
    while ka < na and kb < nb:
        end_a = (ka + 1) * nb
        end_b = (kb + 1) * na
        end = end_a if end_a < end_b else end_b
        width = (end - pos) * scale
        d = z[sorted_a[ka]] - z[sorted_b[kb]]
        ad = abs(d)
        if huber > 0.0 and ad <= huber:
            total += width * (d * d / (2.0 * huber))
            slope = d / huber
        else:
            total += width * (ad - 0.5 * huber)
            slope = 1.0 if d > 0.0 else (-1.0 if d < 0.0 else 0.0)
        if coef != 0.0 and slope != 0.0:
            s = coef * width * slope
            v[sorted_a[ka]] += s
            v[sorted_b[kb]] -= s
        pos = end
        if end_a == end:
            ka += 1
        if end_b == end:
            kb += 1
    return total
